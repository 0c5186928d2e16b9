//! Fencing a fleet job's writes by its claim: a write checks, in its own transaction,
//! that the claim it works under is still the running attempt, and an attempt's
//! experiment supersedes what earlier attempts left incomplete (docs/fleet.md).

use super::backend::{int, Backend};

/// A claim this agent holds: renew it while working, then finish or release it.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The job's id.
    pub job: i64,
    /// The store's id of this agent's machine.
    pub machine_id: i64,
    /// 1 for the first claim; a claim taken over after an expired lease counts up.
    pub attempt: i64,
}

/// A write for a fleet job found its claim taken over by another agent (the lease ran
/// out while this agent could not renew it): the job is no longer this agent's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("job {job} is no longer this agent's: attempt {attempt}'s claim was taken over (its lease ran out)")]
pub struct ClaimLost {
    /// The job's id.
    pub job: i64,
    /// The attempt whose claim was lost.
    pub attempt: i64,
}

/// Inside a write transaction: fail with [`ClaimLost`] unless `claim` is still the
/// running attempt. On PostgreSQL the claim's row stays share-locked until the
/// transaction ends, so a takeover waits for this write to commit (and a write after
/// a takeover sees it): no run of a lost attempt lands after the new one began.
pub(super) fn check_fence(db: &mut dyn Backend, claim: &Claim) -> anyhow::Result<()> {
    let sql = db.dialect(
        "SELECT 1 FROM fleet_claims WHERE job_id = $1 AND machine_id = $2 AND attempt = $3 AND state = 'running'{for_share}",
    );
    if db.query(&sql, &[int(claim.job), int(claim.machine_id), int(claim.attempt)])?.is_empty() {
        return Err(ClaimLost { job: claim.job, attempt: claim.attempt }.into());
    }
    Ok(())
}

/// Mark the incomplete experiments that earlier attempts of the same fleet job left for
/// the benchmark of experiment `id` (same source, label, benchmark and machine) as
/// superseded by it.
pub(super) fn supersede_incomplete(db: &mut dyn Backend, id: i64) -> anyhow::Result<u64> {
    db.execute(
        "UPDATE experiments SET superseded_by = $1 WHERE id IN (\
         SELECT o.id FROM experiments o JOIN experiments n ON n.id = $1 \
         WHERE o.source = n.source AND o.label_id = n.label_id AND o.benchmark_id = n.benchmark_id \
         AND o.machine_id = n.machine_id AND o.complete = 0 AND o.id <> n.id AND o.superseded_by IS NULL)",
        &[int(id)],
    )
}
