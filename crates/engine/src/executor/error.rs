//! What can go wrong setting up the commands of a plan to run, as typed errors for the
//! executor area; `error::Failure` maps them to exit codes once. Kept apart from the
//! modules that return `Failure` so `error.rs` can name them without an import cycle.
//! (A run's own failures — `RunError`, `SpawnError` — are outcomes the engine records,
//! not failures of the command line.)

use perflab_model::Run;
pub use perflab_sys::spawn::error::{CgroupError, LaunchError, NoCpuTime, PrepareError};
use thiserror::Error;

/// Why a run produced no measurement, or not all of it.
#[derive(Debug, Error)]
pub enum RunError {
    /// The user asked to stop; the running command was killed.
    #[error("interrupted")]
    Interrupted,
    /// The command could not be started or measured.
    #[error("{0}")]
    Failed(String),
    /// Something around the command failed — a hook, or reading what it printed. `run`
    /// holds the measured run when the command itself ran.
    #[error("{why}")]
    Incomplete {
        /// The measured run, when the command itself ran.
        run: Option<Box<Run>>,
        /// What failed, one line.
        why: String,
    },
}

/// A plan's commands could not be made ready to run.
#[derive(Debug, Error)]
pub enum ExecutorError {
    /// A `--prepare`/`--conclude`/`--setup` hook (bad input).
    #[error("hook `{hook}`: {source}")]
    Hook {
        /// The hook's command line.
        hook: String,
        /// Why it cannot be prepared.
        #[source]
        source: PrepareError,
    },
    /// A command (bad input: its arguments, `--input`, `--output`).
    #[error("{command}: {source}")]
    Command {
        /// The command's name.
        command: String,
        /// Why it cannot be prepared.
        #[source]
        source: PrepareError,
    },
    /// The measurement asked for cannot be set up (an event, valgrind, a combination).
    #[error(transparent)]
    Probes(#[from] crate::measure::error::ProbeError),
    /// A command's program (not found, not executable).
    #[error(transparent)]
    Program(#[from] crate::plan::error::CommandError),
    /// A probe could not wrap a command's argv (bad input: a missing program).
    #[error("{command}: {cause:#}")]
    Probe {
        /// The command's name.
        command: String,
        /// The probe's error with its context.
        cause: anyhow::Error,
    },
    /// The rest are the machine's, not the input's.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The pipes carrying the commands' output cannot be read.
    #[error("cannot read the commands' output: {0}")]
    Streams(#[source] std::io::Error),
    /// The thread reading the commands' output cannot be started.
    #[error("cannot start the output reader: {0}")]
    OutputReader(#[source] std::io::Error),
    /// A command that could not even start in the first round (bad input).
    #[error("{command}: {source}")]
    CannotStart {
        /// The command's name.
        command: String,
        /// Why it did not start.
        #[source]
        source: RunError,
    },
}

impl ExecutorError {
    /// True when the machine refused something (a helper process, a pipe, a thread),
    /// false for bad input (a hook, a command, its program, a probe).
    pub fn is_machine(&self) -> bool {
        match self {
            ExecutorError::Probes(probes) => probes.is_machine(),
            ExecutorError::Hook { .. }
            | ExecutorError::Command { .. }
            | ExecutorError::Program(_)
            | ExecutorError::Probe { .. }
            | ExecutorError::CannotStart { .. } => false,
            ExecutorError::Launch(_) | ExecutorError::Streams(_) | ExecutorError::OutputReader(_) => true,
        }
    }
}

/// `--cleanup` commands that failed (each subject's name and why); the experiment
/// records them as its failure.
#[derive(Debug, Error)]
#[error("{}", .0.iter().map(|(name, why)| format!("--cleanup of `{name}` failed: {why}")).collect::<Vec<_>>().join("; "))]
pub struct CleanupError(pub Vec<(String, crate::plan::error::ScriptError)>);
