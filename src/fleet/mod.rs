//! A fleet of benchmark machines sharing one store (PostgreSQL, or one SQLite file for
//! agents on one host): `perflab queue` adds jobs — a suite, a label, which machines —
//! and `perflab agent` on each machine claims the jobs meant for it, builds via the
//! suite's `prepare`, runs the suite and stores the results under its own fingerprint.
//! The queue's storage and its claim protocol are in [`crate::store::fleet`].

pub mod agent;
pub mod error;

pub use crate::store::fleet::{ClaimStatus, Job, JobSpec};

use crate::error::Failure;
use crate::model::Machine;
use crate::store::{self, Store};
use crate::suite;
use error::FleetError;
use globset::{Glob, GlobSetBuilder};
use std::path::Path;

/// What to queue besides the suite file.
#[derive(Debug, Clone, Default)]
pub struct QueueRequest {
    pub label: String,
    pub git_commit: Option<String>,
    pub build: Option<String>,
    pub baseline: Option<String>,
    pub filter: Option<String>,
    /// Glob patterns over machine id, hostname and fingerprint; empty = every machine.
    pub machines: Vec<String>,
    /// Explain regressions against the baseline (`run --profile-changes`).
    pub profile_changes: bool,
}

/// Check the suite and the request as `perflab run` would, then queue a job; returns its id.
pub fn queue(store: &mut Store, suite_path: &Path, request: &QueueRequest) -> Result<i64, Failure> {
    let text = crate::files::read_regular_to_string(suite_path)
        .map_err(|source| suite::error::SuiteError::Read { path: suite_path.to_path_buf(), source })?;
    let suite = suite::parse(&text, suite_path)?;
    suite.select(request.filter.as_deref())?;
    suite.builds(request.build.as_deref(), request.baseline.as_deref(), Some(&request.label))?;
    check_patterns(&request.machines)?;
    store.enqueue(&JobSpec {
        suite_path: suite_path.to_string_lossy().into_owned(),
        suite: text,
        label: request.label.clone(),
        git_commit: request.git_commit.clone(),
        build: request.build.clone(),
        baseline: request.baseline.clone(),
        filter: request.filter.clone(),
        machines: request.machines.clone(),
        profile_changes: request.profile_changes,
    })
}

fn check_patterns(patterns: &[String]) -> Result<(), FleetError> {
    for p in patterns {
        Glob::new(p).map_err(|source| FleetError::BadPattern { pattern: p.clone(), source })?;
    }
    Ok(())
}

/// True when `patterns` is empty or one of them matches the machine's id, hostname or
/// fingerprint.
pub fn selects(patterns: &[String], fingerprint: &str, machine: &Machine) -> bool {
    if patterns.is_empty() {
        return true;
    }
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        // Checked when queued; a pattern that no longer parses selects nothing.
        if let Ok(glob) = Glob::new(p) {
            builder.add(glob);
        }
    }
    let Ok(set) = builder.build() else { return false };
    machine.id.iter().chain([&machine.hostname, &fingerprint.to_string()]).any(|name| set.is_match(name))
}

/// The queue for `perflab queue --list`: every job with each machine's state of it.
#[derive(Debug, serde::Serialize)]
pub struct QueueStatus {
    pub jobs: Vec<Job>,
    pub claims: Vec<ClaimStatus>,
}

pub fn status(store: &mut Store) -> Result<QueueStatus, Failure> {
    Ok(QueueStatus { jobs: store.jobs()?, claims: store.claims()? })
}

/// The terminal listing of [`status`].
pub fn render_status(status: &QueueStatus) -> String {
    use crate::render::terminal::escape;
    use std::fmt::Write;
    let mut out = String::new();
    if status.jobs.is_empty() {
        return "the queue is empty\n".into();
    }
    for job in &status.jobs {
        let machines = if job.spec.machines.is_empty() { "every machine".into() } else { job.spec.machines.join(", ") };
        let _ = writeln!(
            out,
            "job {}: label `{}`, suite {}, on {}{}{}",
            job.id,
            escape(&job.spec.label),
            escape(&job.spec.suite_path),
            escape(&machines),
            job.spec.git_commit.as_deref().map(|c| format!(", commit {}", escape(c))).unwrap_or_default(),
            if job.cancelled { " (cancelled)" } else { "" }
        );
        let claims: Vec<&ClaimStatus> = status.claims.iter().filter(|c| c.job == job.id).collect();
        if claims.is_empty() {
            let _ = writeln!(out, "  no machine has claimed it yet");
        }
        for c in claims {
            let _ = writeln!(
                out,
                "  {:<8} attempt {} by {} on {}{}",
                c.state,
                c.attempt,
                escape(&c.agent),
                escape(&store::describe_machine(&c.fingerprint, &c.machine)),
                c.message.as_deref().map(|m| format!(": {}", escape(m))).unwrap_or_default()
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_id_hostname_or_fingerprint() {
        let m = Machine { hostname: "bench-03".into(), id: Some("skylake".into()), ..Machine::default() };
        assert!(selects(&[], "abc123", &m));
        assert!(selects(&["bench-*".into()], "abc123", &m));
        assert!(selects(&["sky*".into()], "abc123", &m));
        assert!(selects(&["abc*".into()], "abc123", &m));
        assert!(!selects(&["haswell".into(), "bench-1?".into()], "abc123", &m));
        assert!(check_patterns(&["[".into()]).is_err());
    }
}
