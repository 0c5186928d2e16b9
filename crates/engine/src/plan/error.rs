//! What can go wrong turning the user's commands, parameters and options into a plan,
//! and running a helper script, as typed errors for the plan area; `error::Failure`
//! maps them to exit codes once. Kept apart from the modules that return `Failure` so
//! `error.rs` can name them without an import cycle.

use thiserror::Error;

pub use perflab_sys::command::error::{CommandError, ScriptError};

/// Bad input: commands, names, programs, parameters, options (exit code 2).
#[derive(Debug, Error)]
pub enum PlanError {
    /// A command, its name, program or parameters.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// `--rounds 0`.
    #[error("--rounds must be at least 1")]
    NoRounds,
    /// `--min-rounds` below 2: no interval exists from fewer rounds.
    #[error("--min-rounds must be at least 2")]
    TooFewMinRounds,
    /// hyperfine's `-m 20 -M 5`: the first look would come after the last round.
    #[error("--min-rounds ({min}) is above --max-rounds ({max}): no look at the statistics could happen before the last round; lower -m or raise -M")]
    MinAboveMaxRounds {
        /// `--min-rounds`.
        min: u32,
        /// `--max-rounds`.
        max: u32,
    },
    /// A metric to compare (`--metric`) that no probe measures.
    #[error("unknown metric `{metric}`; choose from {choices}")]
    UnknownMetric {
        /// The metric given.
        metric: String,
        /// The metrics measured, comma-separated.
        choices: String,
    },
    /// An `-e` event list the counters cannot count.
    #[error(transparent)]
    Event(#[from] perflab_sys::perf::event::EventError),
}
