//! A fleet of benchmark machines sharing one store (PostgreSQL, or one SQLite file for
//! agents on one host): `perflab queue` adds jobs — a suite, a label, which machines —
//! and `perflab agent` on each machine claims the jobs meant for it, builds via the
//! suite's `prepare`, runs the suite and stores the results under its own fingerprint.
//! The queue's storage and its claim protocol are in [`perflab_store::fleet`].

pub mod agent;
pub mod error;

pub use perflab_store::fleet::{ClaimStatus, Job, JobSpec};

use error::FleetError;
use globset::{Glob, GlobSetBuilder};
use perflab_model::Machine;
use perflab_store::Store;
use std::path::Path;

/// The suite file at `suite_path`, read to be queued with a job (every machine then runs
/// the same suite, whatever its copy of the file says).
pub fn read_suite(suite_path: &Path) -> Result<String, FleetError> {
    perflab_sys::files::read_regular_to_string(suite_path)
        .map_err(|source| crate::error::SuiteError::Read { path: suite_path.to_path_buf(), source }.into())
}

/// Check the job's suite and choices as `perflab run` would, then queue it; returns its id.
pub fn queue(store: &mut Store, spec: &JobSpec) -> Result<i64, FleetError> {
    let suite = crate::parse(&spec.suite, Path::new(&spec.suite_path))?;
    suite.select(spec.filter.as_deref())?;
    suite.builds(spec.build.as_deref(), spec.baseline.as_deref(), Some(&spec.label))?;
    check_patterns(&spec.machines)?;
    Ok(store.enqueue(spec)?)
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
    /// Every job queued, oldest first.
    pub jobs: Vec<Job>,
    /// Each machine's claim on each job it took.
    pub claims: Vec<ClaimStatus>,
}

/// The queue as the store holds it now.
pub fn status(store: &mut Store) -> Result<QueueStatus, FleetError> {
    Ok(QueueStatus { jobs: store.jobs()?, claims: store.claims()? })
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
