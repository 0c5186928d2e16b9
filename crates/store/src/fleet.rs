//! The fleet's job queue in the store: jobs (a suite, a label, which machines) and claims
//! (one per job and machine, leased). A claim is taken by one conditional upsert on its
//! (job, machine) key — inserted when new, taken over only when its lease has expired —
//! so two agents can never both hold it and a finished job is never run again on that
//! machine; the database serializes the competing statements (PostgreSQL's unique index,
//! SQLite's single writer), which is what `FOR UPDATE SKIP LOCKED` would buy, without a
//! lock held while the job runs.

use super::backend::{int, opt_text, real, text, Value};
pub use super::fence::{Claim, ClaimLost};
use super::write::{machine_id, now};
use super::Store;
use crate::error::StoreError;
use anyhow::Context;
use perflab_model::Machine;
use serde::{Deserialize, Serialize};

/// What `perflab queue` adds: run `suite` under `label` on every machine matching `machines`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The suite file's path as queued; each agent resolves it (and the builds' relative
    /// paths) against its own working directory.
    pub suite_path: String,
    /// The suite file's text at queue time, so every machine runs the same suite.
    pub suite: String,
    /// The label the results are stored under.
    pub label: String,
    /// Handed to the builds' `prepare` commands as `PERFLAB_COMMIT`.
    pub git_commit: Option<String>,
    /// The build to measure (`--build`), if the suite has builds.
    pub build: Option<String>,
    /// The build to compare with (`--baseline`).
    pub baseline: Option<String>,
    /// Only benchmarks matching this regular expression.
    pub filter: Option<String>,
    /// Glob patterns over a machine's id, hostname and fingerprint; empty = every machine.
    pub machines: Vec<String>,
    /// Sample every run and store why a benchmark is slower than the baseline
    /// (`run --profile-changes`).
    pub profile_changes: bool,
}

/// A queued job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    /// The job's id (its queue order).
    pub id: i64,
    /// What to run.
    #[serde(flatten)]
    pub spec: JobSpec,
    pub(crate) created_at: String,
    /// True once `perflab queue --cancel` cancelled it: no agent claims it.
    pub cancelled: bool,
}

/// One machine's state of one job, for `perflab queue --list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimStatus {
    /// The job's id.
    pub job: i64,
    /// The machine's fingerprint.
    pub fingerprint: String,
    /// The machine.
    pub machine: Machine,
    /// `running`, `done` or `failed`; `expired` for a running claim whose lease ran out
    /// (its agent died: the job is claimable again).
    pub state: String,
    /// 1 for the first claim; counts up when a claim is taken over.
    pub attempt: i64,
    /// The agent that claimed it.
    pub agent: String,
    /// Database clock, seconds since the epoch.
    pub claimed_at: f64,
    /// When the lease runs out unless renewed, database clock, seconds since the epoch.
    pub lease_until: f64,
    /// The failure's message, for a failed job.
    pub message: Option<String>,
}

/// How a job ended on one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEnd {
    /// Every benchmark ran and was stored.
    Done,
    /// The job stopped on an error.
    Failed,
}

const JOB_COLUMNS: &str =
    "j.id, j.suite_path, j.suite, j.label, j.git_commit, j.build, j.baseline, j.filter, j.machines, j.created_at, j.cancelled, j.profile_changes";

fn job_from_row(r: &[Value]) -> anyhow::Result<Job> {
    let s = |i: usize| r[i].as_str().map(str::to_string);
    Ok(Job {
        id: r[0].as_i64().unwrap_or(-1),
        spec: JobSpec {
            suite_path: s(1).unwrap_or_default(),
            suite: s(2).unwrap_or_default(),
            label: s(3).unwrap_or_default(),
            git_commit: s(4),
            build: s(5),
            baseline: s(6),
            filter: s(7),
            machines: serde_json::from_str(r[8].as_str().unwrap_or("[]")).context("job machines")?,
            profile_changes: r[11].as_i64().unwrap_or(0) != 0,
        },
        created_at: s(9).unwrap_or_default(),
        cancelled: r[10].as_i64().unwrap_or(0) != 0,
    })
}

impl Store {
    /// Add a job; returns its id.
    pub fn enqueue(&mut self, spec: &JobSpec) -> Result<i64, StoreError> {
        let machines = serde_json::to_string(&spec.machines).map_err(anyhow::Error::from)?;
        let id = self.write(|db| {
            db.query(
                "INSERT INTO fleet_jobs (suite_path, suite, label, git_commit, build, baseline, filter, machines, created_at, cancelled, profile_changes) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, $10) RETURNING id",
                &[
                    text(&spec.suite_path),
                    text(&spec.suite),
                    text(&spec.label),
                    opt_text(spec.git_commit.as_deref()),
                    opt_text(spec.build.as_deref()),
                    opt_text(spec.baseline.as_deref()),
                    opt_text(spec.filter.as_deref()),
                    text(machines),
                    text(now()),
                    int(spec.profile_changes as i64),
                ],
            )?
            .first()
            .and_then(|r| r[0].as_i64())
            .context("INSERT … RETURNING id gave no id")
        })?;
        Ok(id)
    }

    /// Cancel a job: agents claim it no more (a running claim finishes).
    pub fn cancel_job(&mut self, id: i64) -> Result<bool, StoreError> {
        Ok(self.write(|db| db.execute("UPDATE fleet_jobs SET cancelled = 1 WHERE id = $1", &[int(id)]))? == 1)
    }

    /// Every job, oldest first.
    pub fn jobs(&mut self) -> Result<Vec<Job>, StoreError> {
        let rows = self.db.query(&format!("SELECT {JOB_COLUMNS} FROM fleet_jobs j ORDER BY j.id"), &[])?;
        Ok(rows.iter().map(|r| job_from_row(r)).collect::<anyhow::Result<_>>()?)
    }

    /// Every claim with its machine, by job then first claim.
    pub fn claims(&mut self) -> Result<Vec<ClaimStatus>, StoreError> {
        let sql = self.db.dialect(
            "SELECT c.job_id, m.fingerprint, m.json, c.state, c.attempt, c.agent, c.claimed_at, c.lease_until, c.message, \
             CASE WHEN c.state = 'running' AND c.lease_until <= {now} THEN 1 ELSE 0 END \
             FROM fleet_claims c JOIN machines m ON m.id = c.machine_id ORDER BY c.job_id, c.claimed_at",
        );
        let rows = self.db.query(&sql, &[])?;
        rows.iter()
            .map(|r| {
                let expired = r[9].as_i64() == Some(1);
                Ok(ClaimStatus {
                    job: r[0].as_i64().unwrap_or(-1),
                    fingerprint: r[1].as_str().unwrap_or_default().to_string(),
                    machine: serde_json::from_str(r[2].as_str().unwrap_or_default()).context("machine record")?,
                    state: if expired { "expired".into() } else { r[3].as_str().unwrap_or_default().to_string() },
                    attempt: r[4].as_i64().unwrap_or(0),
                    agent: r[5].as_str().unwrap_or_default().to_string(),
                    claimed_at: r[6].as_f64().unwrap_or(f64::NAN),
                    lease_until: r[7].as_f64().unwrap_or(f64::NAN),
                    message: r[8].as_str().map(str::to_string),
                })
            })
            .collect::<anyhow::Result<_>>()
            .map_err(StoreError::from)
    }

    /// The machine's row id (inserted on first use), for claims.
    pub fn register_machine(&mut self, machine: &Machine) -> Result<i64, StoreError> {
        Ok(self.write(|db| machine_id(db, machine))?)
    }

    /// Jobs not cancelled that machine `machine_id` has neither finished nor holds a live
    /// lease on, oldest first (whether the machine matches a job's patterns is for the
    /// caller to decide).
    pub fn open_jobs(&mut self, machine_id: i64) -> Result<Vec<Job>, StoreError> {
        let sql = self.db.dialect(&format!(
            "SELECT {JOB_COLUMNS} FROM fleet_jobs j WHERE j.cancelled = 0 AND NOT EXISTS (\
             SELECT 1 FROM fleet_claims c WHERE c.job_id = j.id AND c.machine_id = $1 \
             AND (c.state <> 'running' OR c.lease_until > {{now}})) ORDER BY j.id"
        ));
        let rows = self.db.query(&sql, &[int(machine_id)])?;
        Ok(rows.iter().map(|r| job_from_row(r)).collect::<anyhow::Result<_>>()?)
    }

    /// Claim job `job` for machine `machine_id` for `lease_s` seconds: a first claim, or a
    /// takeover of a running claim whose lease expired (its agent died). None when
    /// another agent holds it or the machine already finished it.
    pub fn claim(&mut self, job: i64, machine_id: i64, agent: &str, lease_s: f64) -> Result<Option<Claim>, StoreError> {
        let sql = self.db.dialect(
            "INSERT INTO fleet_claims (job_id, machine_id, state, attempt, agent, claimed_at, lease_until) \
             VALUES ($1, $2, 'running', 1, $3, {now}, {now} + $4) \
             ON CONFLICT (job_id, machine_id) DO UPDATE SET attempt = fleet_claims.attempt + 1, agent = excluded.agent, \
             claimed_at = excluded.claimed_at, lease_until = excluded.lease_until, message = NULL \
             WHERE fleet_claims.state = 'running' AND fleet_claims.lease_until <= {now} \
             RETURNING attempt",
        );
        let rows = self.write(|db| db.query(&sql, &[int(job), int(machine_id), text(agent), real(lease_s)]))?;
        Ok(rows.first().and_then(|r| r[0].as_i64()).map(|attempt| Claim { job, machine_id, attempt }))
    }

    /// Extend a claim's lease to `lease_s` seconds from now; false when it is no longer
    /// this attempt's (it expired and another agent took it over).
    pub fn renew(&mut self, claim: &Claim, lease_s: f64) -> Result<bool, StoreError> {
        let sql = self.db.dialect(
            "UPDATE fleet_claims SET lease_until = {now} + $4 \
             WHERE job_id = $1 AND machine_id = $2 AND attempt = $3 AND state = 'running'",
        );
        let params = [int(claim.job), int(claim.machine_id), int(claim.attempt), real(lease_s)];
        Ok(self.write(|db| db.execute(&sql, &params))? == 1)
    }

    /// Record how the job ended on this machine; false when the claim was lost meanwhile.
    pub fn finish_claim(&mut self, claim: &Claim, end: JobEnd, message: Option<&str>) -> Result<bool, StoreError> {
        let sql = self.db.dialect(
            "UPDATE fleet_claims SET state = $4, finished_at = {now}, message = $5 \
             WHERE job_id = $1 AND machine_id = $2 AND attempt = $3 AND state = 'running'",
        );
        let state = match end {
            JobEnd::Done => "done",
            JobEnd::Failed => "failed",
        };
        let params = [int(claim.job), int(claim.machine_id), int(claim.attempt), text(state), opt_text(message)];
        Ok(self.write(|db| db.execute(&sql, &params))? == 1)
    }

    /// Whether `claim`'s attempt is recorded as having ended with `end` (a finish whose
    /// answer was lost in an outage, retried).
    pub fn claim_ended(&mut self, claim: &Claim, end: JobEnd) -> Result<bool, StoreError> {
        let state = match end {
            JobEnd::Done => "done",
            JobEnd::Failed => "failed",
        };
        let rows = self.db.query(
            "SELECT 1 FROM fleet_claims WHERE job_id = $1 AND machine_id = $2 AND attempt = $3 AND state = $4",
            &[int(claim.job), int(claim.machine_id), int(claim.attempt), text(state)],
        )?;
        Ok(!rows.is_empty())
    }

    /// Give a claim back at once (an interrupted agent): the job is claimable again.
    pub fn release(&mut self, claim: &Claim, why: &str) -> Result<bool, StoreError> {
        let params = [int(claim.job), int(claim.machine_id), int(claim.attempt), text(why)];
        Ok(self.write(|db| {
            db.execute(
                "UPDATE fleet_claims SET lease_until = 0, message = $4 \
                 WHERE job_id = $1 AND machine_id = $2 AND attempt = $3 AND state = 'running'",
                &params,
            )
        })? == 1)
    }

    /// Benchmarks with a complete experiment stored under `label` by `source` on the
    /// machine `fingerprint`: what an earlier attempt of a job already measured.
    pub fn completed_benchmarks(
        &mut self,
        source: &str,
        label: &str,
        fingerprint: &str,
    ) -> Result<Vec<String>, StoreError> {
        let rows = self.db.query(
            "SELECT DISTINCT b.name FROM experiments e JOIN benchmarks b ON b.id = e.benchmark_id \
             JOIN labels l ON l.id = e.label_id JOIN machines m ON m.id = e.machine_id \
             WHERE e.source = $1 AND l.name = $2 AND m.fingerprint = $3 AND e.complete = 1 ORDER BY b.name",
            &[text(source), text(label), text(fingerprint)],
        )?;
        Ok(rows.iter().filter_map(|r| r[0].as_str().map(str::to_string)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JobSpec {
        JobSpec {
            suite_path: "perflab.toml".into(),
            suite: "[[benchmark]]\nname = \"b\"\ncommand = \"true\"\n".into(),
            label: "v1".into(),
            git_commit: None,
            build: None,
            baseline: None,
            filter: None,
            machines: vec!["bench-*".into()],
            profile_changes: true,
        }
    }

    #[test]
    fn a_claim_is_held_once_taken_over_only_after_its_lease_and_never_after_it_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(Some(dir.path().join("q.db").to_str().unwrap())).unwrap();
        let job = store.enqueue(&spec()).unwrap();
        assert_eq!(store.jobs().unwrap()[0].spec, spec());
        let a = store.register_machine(&Machine { hostname: "a".into(), ..Machine::default() }).unwrap();
        let b = store.register_machine(&Machine { hostname: "b".into(), ..Machine::default() }).unwrap();

        let first = store.claim(job, a, "agent-1", 60.0).unwrap().expect("first claim");
        assert_eq!(first.attempt, 1);
        assert_eq!(store.claim(job, a, "agent-2", 60.0).unwrap(), None, "held by agent-1");
        assert!(store.open_jobs(a).unwrap().is_empty());
        // Another machine claims the same job independently.
        assert!(store.claim(job, b, "agent-3", 60.0).unwrap().is_some());

        // agent-1 dies: its lease runs out, agent-2 takes over and agent-1 cannot finish.
        assert!(store.renew(&first, -1.0).unwrap());
        assert_eq!(store.open_jobs(a).unwrap().len(), 1);
        assert_eq!(store.claims().unwrap().iter().find(|c| c.agent == "agent-1").unwrap().state, "expired");
        let second = store.claim(job, a, "agent-2", 60.0).unwrap().expect("takeover after the lease");
        assert_eq!(second.attempt, 2);
        assert!(!store.renew(&first, 60.0).unwrap());
        assert!(!store.finish_claim(&first, JobEnd::Done, None).unwrap());
        assert!(store.finish_claim(&second, JobEnd::Done, None).unwrap());
        assert_eq!(store.claim(job, a, "agent-4", 60.0).unwrap(), None, "done is done");
        assert!(store.open_jobs(a).unwrap().is_empty());

        // A released claim and a cancelled job.
        let job2 = store.enqueue(&spec()).unwrap();
        let c = store.claim(job2, a, "agent-5", 60.0).unwrap().unwrap();
        assert!(store.release(&c, "interrupted").unwrap());
        assert_eq!(store.claim(job2, a, "agent-6", 60.0).unwrap().map(|c| c.attempt), Some(2));
        assert!(store.cancel_job(job2).unwrap());
        assert!(store.open_jobs(b).unwrap().iter().all(|j| j.id != job2));
    }
}
