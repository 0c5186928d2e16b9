//! Failures and the exit codes they map to — the one place the CLI contract lives.
//! Every command returns `Result<(), Failure>`; `main` prints the failure as one line
//! and exits with its code. Results measured before a failure are written first.
//!
//! | code | meaning                                              |
//! |------|------------------------------------------------------|
//! | 0    | done                                                 |
//! | 1    | a gate tripped (`--fail-if-slower`)                  |
//! | 2    | usage error or bad input (files, programs, options)  |
//! | 3    | a benchmarked command failed or timed out            |
//! | 130  | interrupted (Ctrl-C / SIGTERM); partial results kept |

use thiserror::Error;

pub const EXIT_OK: i32 = 0;
pub const EXIT_GATE: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_COMMAND_FAILED: i32 = 3;
pub const EXIT_INTERRUPTED: i32 = 130;

/// A failure the user must see as one line, with a documented exit code.
#[derive(Debug, Error)]
pub enum Failure {
    /// Bad options, a missing program, an unreadable or malformed file.
    #[error("{0}")]
    Usage(String),
    /// A benchmarked command exited non-zero, was killed or timed out.
    #[error("{0}")]
    CommandFailed(String),
    /// The user interrupted the measurement; the message says what was kept.
    #[error("{0}")]
    Interrupted(String),
    /// A `--fail-if-slower` gate tripped.
    #[error("{0}")]
    GateTripped(String),
    /// Anything else (I/O while writing results, the database, ...).
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Usage(_) => EXIT_USAGE,
            Failure::CommandFailed(_) => EXIT_COMMAND_FAILED,
            Failure::Interrupted(_) => EXIT_INTERRUPTED,
            Failure::GateTripped(_) => EXIT_GATE,
            // Unexpected environment errors are still "could not do what was asked
            // with this input"; 2 keeps the documented set of codes small.
            Failure::Other(_) => EXIT_USAGE,
        }
    }

    /// The one line `main` prints on stderr.
    pub fn line(&self) -> String {
        match self {
            Failure::Interrupted(what) => format!("perflab: {what}"),
            Failure::GateTripped(what) => format!("perflab: gate: {what}"),
            Failure::Other(err) => format!("perflab: error: {err:#}"),
            other => format!("perflab: error: {other}"),
        }
    }
}

/// Shorthand for a usage failure with a formatted message.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => { $crate::error::Failure::Usage(format!($($arg)*)) };
}

pub type Result<T, E = Failure> = std::result::Result<T, E>;

/// What is wrong with a regular expression, on one line: the regex crate quotes the
/// pattern over several lines with a caret under the fault, and its last line says what.
pub fn regex_error(err: &regex::Error) -> String {
    let text = err.to_string();
    text.lines().last().unwrap_or_default().trim_start_matches("error: ").to_string()
}
