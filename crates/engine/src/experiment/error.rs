//! Why an experiment could not run at all (what did run is never lost: an experiment that
//! stops early is a result with its stop reason, not an error).

use crate::executor::error::ExecutorError;
use thiserror::Error;

/// An experiment that could not start, or whose runs could not be recorded.
#[derive(Debug, Error)]
pub enum ExperimentError {
    /// The commands could not be made ready, or one could not start in the first round.
    #[error(transparent)]
    Executor(#[from] ExecutorError),
    /// An observer (the store, the CSV) could not record a run.
    #[error("{0:#}")]
    Record(anyhow::Error),
}
