//! What stops a fleet step — a `--machine` pattern, the agent's directory, the store, a
//! job's suite, an interrupt — as a typed error; the `perflab` binary maps it to an exit
//! code.

use std::path::PathBuf;
use thiserror::Error;

/// What stops a fleet step.
#[derive(Debug, Error)]
pub enum FleetError {
    /// `--machine` is not a glob pattern.
    #[error("--machine `{pattern}` is not a glob pattern: {source}")]
    BadPattern {
        /// The pattern, as given.
        pattern: String,
        /// globset's reason.
        #[source]
        source: globset::Error,
    },
    /// The agent's `--dir`.
    #[error("cannot work in {}: {source}", path.display())]
    WorkDir {
        /// The directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The shared store.
    #[error(transparent)]
    Store(#[from] perflab_store::error::StoreError),
    /// A suite: the file queued, or a job's benchmarks.
    #[error(transparent)]
    Suite(#[from] crate::error::SuiteError),
    /// The agent was asked to stop (what it left, and how).
    #[error("{0}")]
    Interrupted(String),
}

impl FleetError {
    /// The database's own error, when the store failed a request (directly or under a
    /// job's suite).
    pub fn database(&self) -> Option<&anyhow::Error> {
        match self {
            FleetError::Store(perflab_store::error::StoreError::Database(e)) => Some(e),
            FleetError::Suite(suite) => suite.database(),
            _ => None,
        }
    }

    /// True when the database could not be reached or stopped answering: wait and retry.
    pub fn is_unavailable(&self) -> bool {
        self.database().is_some_and(perflab_store::error::unavailable)
    }

    /// True when a fenced write found the job's claim taken over by another agent.
    pub(crate) fn is_claim_lost(&self) -> bool {
        self.database().is_some_and(perflab_store::error::claim_lost)
    }

    /// True when the store or the machine failed, not the job: the job is given back.
    pub(crate) fn is_system(&self) -> bool {
        use perflab_engine::experiment::ExperimentError;
        self.database().is_some()
            || matches!(self, FleetError::Suite(crate::error::SuiteError::Experiment(ExperimentError::Executor(e))) if e.is_machine())
    }
}
