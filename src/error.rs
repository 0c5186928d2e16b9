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

pub use perflab_sys::exit::{
    EXIT_CLOSED_PIPE, EXIT_COMMAND_FAILED, EXIT_GATE, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNDECIDED, EXIT_USAGE,
};

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
    /// A `--fail-if-slower` gate tripped, or `run --gate` found a regression.
    #[error("{0}")]
    GateTripped(String),
    /// `run --gate`: no regression, but some benchmark ended undecided.
    #[error("{0}")]
    Undecided(String),
    /// An output file could not be written (the others were).
    #[error(transparent)]
    Output(#[from] perflab_render::OutputError),
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
            Failure::Undecided(_) => EXIT_UNDECIDED,
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

    /// The one line `main` prints on stderr: database secrets hidden (`store::url`), line
    /// breaks made clauses (a command's last stderr lines),
    /// control characters a message quotes (a
    /// program named `tru\x1b]e`) are shown escaped, never sent to the terminal, and a
    /// quoted value too long to read is shortened with its length.
    pub fn line(&self) -> String {
        let line = match self {
            Failure::Interrupted(what) => format!("perflab: {what}"),
            Failure::GateTripped(what) => format!("perflab: gate: {what}"),
            Failure::Undecided(what) => format!("perflab: gate: {what}"),
            Failure::Other(err) => format!("perflab: error: {}", chain_line(err.chain())),
            other => format!("perflab: error: {other}"),
        };
        printable_line(&line)
    }
}

/// A line of perflab's own as it may be printed on stderr: database secrets hidden,
/// control characters escaped, long quoted values shortened (see [`Failure::line`]).
pub fn printable_line(line: &str) -> String {
    bounded_line(&perflab_sys::text::escape(&perflab_sys::text::one_line(&perflab_store::url::mask(line))))
}

/// The longest value an error line quotes whole; longer ones are shortened.
const QUOTED_MAX: usize = 200;
/// The longest error line; beyond it the middle is cut (a value quoted without backticks).
const LINE_MAX: usize = 2000;

/// `value` as an error line quotes it: whole up to 200 characters, else its start, an
/// ellipsis and its length (`aaaa…` (412345 characters)).
pub fn shorten(value: &str) -> String {
    let count = value.chars().count();
    if count <= QUOTED_MAX {
        return value.to_string();
    }
    let start: String = value.chars().take(QUOTED_MAX / 2).collect();
    format!("{start}… ({count} characters)")
}

/// Every backtick-quoted span of `line` shortened (see [`shorten`]); a line still longer
/// than [`LINE_MAX`] keeps its start and end around a count of what was cut.
fn bounded_line(line: &str) -> String {
    let parts: Vec<&str> = line.split('`').collect();
    let mut out = String::with_capacity(line.len().min(LINE_MAX + 100));
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('`');
        }
        // Odd parts lie between backticks (an unclosed last one too).
        if i % 2 == 1 {
            out.push_str(&shorten(part));
        } else {
            out.push_str(part);
        }
    }
    let count = out.chars().count();
    if count <= LINE_MAX {
        return out;
    }
    let head: String = out.chars().take(LINE_MAX / 2).collect();
    let tail: String = out.chars().skip(count - LINE_MAX / 4).collect();
    format!("{head}… ({} characters cut) …{tail}", count - LINE_MAX / 2 - LINE_MAX / 4)
}

/// A failure's text with its causes (without the `perflab: error:` prefix of its line).
pub fn chain_of(failure: &Failure) -> String {
    match failure {
        Failure::Other(err) => chain_line(err.chain()),
        other => other.to_string(),
    }
}

pub use perflab_sys::text::chain_line;

// Each area's typed error maps to one exit code here, the one place codes are decided.

impl From<perflab_store::error::StoreError> for Failure {
    /// A database that cannot be opened or read as this perflab's: bad input; one that
    /// failed a request keeps its chain.
    fn from(e: perflab_store::error::StoreError) -> Failure {
        match e {
            perflab_store::error::StoreError::Database(cause) => Failure::Other(cause),
            bad_input => Failure::Usage(bad_input.to_string()),
        }
    }
}

impl From<perflab_store::error::ImportError> for Failure {
    fn from(e: perflab_store::error::ImportError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_render::report::error::ReportError> for Failure {
    /// Bad input, or an `--out` that cannot be written (2 as every output).
    fn from(e: perflab_render::report::error::ReportError) -> Failure {
        match e {
            perflab_render::report::error::ReportError::Store(e) => Failure::from(e),
            other => Failure::Usage(other.to_string()),
        }
    }
}

impl From<perflab_model::ParseError> for Failure {
    fn from(e: perflab_model::ParseError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_model::units::ParseError> for Failure {
    fn from(e: perflab_model::units::ParseError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_sys::perf::event::EventError> for Failure {
    fn from(e: perflab_sys::perf::event::EventError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_engine::plan::error::PlanError> for Failure {
    /// Commands, programs, parameters and options: bad input.
    fn from(e: perflab_engine::plan::error::PlanError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_profile::alloc::AllocError> for Failure {
    /// A probe that cannot be placed, a bad option: bad input; a command that could not
    /// be started or probed keeps its cause.
    fn from(e: perflab_profile::alloc::AllocError) -> Failure {
        use perflab_profile::alloc::AllocError;
        match e {
            AllocError::Interrupted => Failure::Interrupted(e.to_string()),
            e @ AllocError::Start(_) => Failure::Other(anyhow::Error::new(e)),
            e @ AllocError::Open(_) => Failure::Usage(e.to_string()),
            e @ AllocError::Command(_) => Failure::Usage(e.to_string()),
            bad_input => Failure::Usage(bad_input.to_string()),
        }
    }
}

impl From<perflab_profile::error::ProfileError> for Failure {
    fn from(e: perflab_profile::error::ProfileError) -> Failure {
        use perflab_profile::error::ProfileError;
        match e {
            ProfileError::Interrupted(what) => Failure::Interrupted(what.to_string()),
            ProfileError::System(cause) => Failure::Other(cause),
            // Output that could not be written keeps its cause chain.
            e @ (ProfileError::Write { .. } | ProfileError::Export { .. }) => Failure::Other(anyhow::Error::new(e)),
            bad_input => Failure::Usage(bad_input.to_string()),
        }
    }
}

impl From<perflab_profile::error::RecordError> for Failure {
    fn from(e: perflab_profile::error::RecordError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_profile::error::OpenError> for Failure {
    fn from(e: perflab_profile::error::OpenError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_engine::plan::error::CommandError> for Failure {
    /// A command, its program or parameters: bad input.
    fn from(e: perflab_engine::plan::error::CommandError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_suite::error::SuiteError> for Failure {
    fn from(e: perflab_suite::error::SuiteError) -> Failure {
        use perflab_suite::error::SuiteError;
        match e {
            // A build's prepare command failed, as a benchmarked command would.
            SuiteError::PrepareBuild { .. } => Failure::CommandFailed(e.to_string()),
            SuiteError::Store(e) => Failure::from(e),
            // Exit 2 as the store's own failure (its chain in the line), with what was
            // not stored said.
            SuiteError::NotStored { .. } => Failure::Usage(e.to_string()),
            SuiteError::Experiment(e) => Failure::from(e),
            // The suite file, `--filter`, `--build`, `--baseline`: bad input.
            bad_input => Failure::Usage(bad_input.to_string()),
        }
    }
}

impl From<perflab_suite::error::BisectError> for Failure {
    fn from(e: perflab_suite::error::BisectError) -> Failure {
        use perflab_suite::error::BisectError;
        match e {
            // The user's build command or a compared command failed.
            BisectError::BuildFailed { .. } | BisectError::NoVerdict => Failure::CommandFailed(e.to_string()),
            BisectError::Interrupted => Failure::Interrupted(e.to_string()),
            BisectError::Suite(e) => Failure::from(e),
            BisectError::Store(e) => Failure::from(e),
            BisectError::Experiment(e) => Failure::from(e),
            bad_input => Failure::Usage(bad_input.to_string()),
        }
    }
}

impl From<perflab_engine::executor::error::PrepareError> for Failure {
    /// A command's arguments, `--input`, `--output`: bad input.
    fn from(e: perflab_engine::executor::error::PrepareError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_engine::executor::error::ExecutorError> for Failure {
    fn from(e: perflab_engine::executor::error::ExecutorError) -> Failure {
        use perflab_engine::executor::error::ExecutorError;
        match e {
            ExecutorError::Probes(probes) => Failure::from(probes),
            // The machine refused a helper process, a pipe, a thread.
            machine if machine.is_machine() => Failure::Other(anyhow::Error::new(machine)),
            // A hook, a command's arguments or files, a missing program: bad input.
            bad_input => Failure::Usage(bad_input.to_string()),
        }
    }
}

impl From<perflab_engine::experiment::ExperimentError> for Failure {
    fn from(e: perflab_engine::experiment::ExperimentError) -> Failure {
        use perflab_engine::experiment::ExperimentError;
        match e {
            ExperimentError::Executor(e) => Failure::from(e),
            // The store or an output could not take a run.
            ExperimentError::Record(cause) => Failure::Other(cause),
        }
    }
}

impl From<perflab_engine::measure::live::LiveError> for Failure {
    fn from(e: perflab_engine::measure::live::LiveError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_engine::measure::error::ParserError> for Failure {
    fn from(e: perflab_engine::measure::error::ParserError) -> Failure {
        Failure::Usage(e.to_string())
    }
}

impl From<perflab_engine::measure::error::ProbeError> for Failure {
    fn from(e: perflab_engine::measure::error::ProbeError) -> Failure {
        use perflab_engine::measure::error::ProbeError;
        match e {
            ProbeError::OutputDir(cause) => Failure::Other(cause),
            bad_input => Failure::Usage(bad_input.to_string()),
        }
    }
}

impl From<perflab_suite::fleet::error::FleetError> for Failure {
    fn from(e: perflab_suite::fleet::error::FleetError) -> Failure {
        use perflab_suite::fleet::error::FleetError;
        match e {
            FleetError::Store(e) => Failure::from(e),
            FleetError::Suite(e) => Failure::from(e),
            FleetError::Interrupted(what) => Failure::Interrupted(what),
            bad_input => Failure::Usage(bad_input.to_string()),
        }
    }
}

/// Shorthand for a usage failure with a formatted message.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => { $crate::error::Failure::Usage(format!($($arg)*)) };
}

pub type Result<T, E = Failure> = std::result::Result<T, E>;

pub use perflab_sys::text::regex_error;

#[cfg(test)]
mod tests {
    #[test]
    fn error_lines_escape_control_characters_and_shorten_long_values() {
        let line = Failure::Usage("program `tru\u{1b}]0;x\u{7}e` not found".into()).line();
        assert_eq!(line, "perflab: error: program `tru\\u{1b}]0;x\\u{7}e` not found");
        let long = "a".repeat(400_000);
        let line = Failure::Usage(format!("bad value `{long}` for --x")).line();
        assert!(line.len() < 400, "{} bytes", line.len());
        assert!(line.contains("… (400000 characters)` for --x"), "{line}");
        let line = Failure::Usage(format!("unquoted {long} end")).line();
        assert!(line.len() < 2100 && line.contains("characters cut") && line.ends_with(" end"), "{}", line.len());
        assert_eq!(shorten("short"), "short");
    }

    use super::*;
    use std::io;

    #[test]
    fn typed_errors_print_one_line_with_their_cause_once() {
        // A missing suite file: the io::Error is both quoted and the `#[source]`.
        let missing = perflab_suite::error::SuiteError::Read {
            path: "nowhere/perflab.toml".into(),
            source: io::Error::from(io::ErrorKind::NotFound),
        };
        let failure = Failure::from(missing);
        assert_eq!(failure.exit_code(), EXIT_USAGE);
        assert_eq!(failure.line(), "perflab: error: cannot read nowhere/perflab.toml: entity not found");

        // A bad duration and a bad --shell: bad input, one line.
        let duration = Failure::from(perflab_model::units::parse_duration("5 parsecs").unwrap_err());
        assert_eq!(duration.line(), "perflab: error: `5 parsecs` is not a duration (e.g. 30, 90s, 5m, 250ms)");
        let shell = Failure::from(perflab_sys::command::Shell::named(Some("sh 'x")).unwrap_err());
        assert_eq!(shell.exit_code(), EXIT_USAGE);
        assert_eq!(shell.line(), "perflab: error: --shell `sh 'x` is empty or cannot be split into words");
        // Shell syntax under -N and an unknown event: bad input too.
        let shell = perflab_sys::command::Shell::Never;
        let texts = ["/bin/true".to_string(), "echo hi > out.txt".to_string()];
        let refused = perflab_sys::command::parse_commands(&texts, &[], &shell).unwrap_err();
        assert_eq!(Failure::from(refused).exit_code(), EXIT_USAGE);
        let event = perflab_sys::perf::counters::parse_events(&["cycle".to_string()]).unwrap_err();
        assert_eq!(Failure::from(event).exit_code(), EXIT_USAGE);

        // The machine's failures go to Other, whose chain is not repeated.
        use perflab_engine::executor::error::{ExecutorError, LaunchError};
        let launch = Failure::from(ExecutorError::Launch(LaunchError::Start(io::Error::other("no fork"))));
        assert!(matches!(launch, Failure::Other(_)));
        assert_eq!(launch.line(), "perflab: error: cannot start perflab's spawner process: no fork");
        assert!(!launch.line().contains('\n'));
    }

    #[test]
    fn failing_builds_and_comparisons_keep_their_exit_codes() {
        use perflab_suite::error::BisectError;
        let script = perflab_sys::command::run_shell("exit 3", None, false).unwrap_err();
        let build = Failure::from(BisectError::BuildFailed { commit: "abc".into(), source: script });
        assert_eq!(build.exit_code(), EXIT_COMMAND_FAILED);
        assert!(
            build.line().starts_with("perflab: error: building abc failed: `exit 3` exit status: 3"),
            "{}",
            build.line()
        );
        assert_eq!(Failure::from(BisectError::Interrupted).exit_code(), EXIT_INTERRUPTED);
        assert_eq!(Failure::from(BisectError::SameCommit).exit_code(), EXIT_USAGE);
    }

    #[test]
    fn a_cause_already_quoted_is_not_repeated() {
        let inner = io::Error::other("disk full");
        let err = anyhow::Error::new(inner).context("cannot write x: disk full").context("saving");
        assert_eq!(chain_line(err.chain()), "saving: cannot write x: disk full");
    }
}
