//! Failures and the exit codes they map to — the one place the CLI contract lives.
//! Every command returns `Result<(), Failure>`; `main` prints the failure as one line
//! and exits with its code. Results measured before a failure are written first.
//!
//! | code | meaning                                              |
//! |------|------------------------------------------------------|
//! | 0    | done                                                 |
//! | 1    | a gate tripped (`--fail-if-slower`)                  |
//! | 2    | usage error or bad input (files, programs, options)  |
//! | 2    | an output could not be written (a file, a full stdout) |
//! | 3    | a benchmarked command failed or timed out            |
//! | 130  | interrupted (Ctrl-C / SIGTERM); partial results kept |
//! | 141  | stdout's reader left (`| head`): like cat or grep, after every file output and stored run was written, without a message |

use thiserror::Error;

pub const EXIT_OK: i32 = 0;
pub const EXIT_GATE: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_COMMAND_FAILED: i32 = 3;
pub const EXIT_INTERRUPTED: i32 = 130;
/// 128 + SIGPIPE, what a shell reports for `cat` whose reader left.
pub const EXIT_CLOSED_PIPE: i32 = 141;

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
    /// An output file could not be written (the others were).
    #[error(transparent)]
    Output(#[from] crate::render::OutputError),
    /// Standard output failed — a full disk, a closed pipe — after the file outputs and
    /// stored runs were written.
    #[error("cannot write to standard output: {0}")]
    Stdout(#[source] std::io::Error),
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
            Failure::Output(_) => EXIT_USAGE,
            Failure::Stdout(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_CLOSED_PIPE,
            Failure::Stdout(_) => EXIT_USAGE,
            // Unexpected environment errors are still "could not do what was asked
            // with this input"; 2 keeps the documented set of codes small.
            Failure::Other(_) => EXIT_USAGE,
        }
    }

    /// True when nothing should be said: the reader of stdout left on purpose
    /// (`perflab history | head -1`), as cat and grep stay silent then.
    pub fn is_silent(&self) -> bool {
        matches!(self, Failure::Stdout(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
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
