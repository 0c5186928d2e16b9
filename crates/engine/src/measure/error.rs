//! What can go wrong with the metrics a command prints about itself, as typed errors
//! for the measure area: a `--parse`/`--output-metric` that cannot be used (bad input,
//! mapped to exit code 2 in `error.rs`), and output a parser cannot read (the run's
//! failure, recorded by the engine). Kept apart from the modules that return
//! `Failure` so `error.rs` can name them without an import cycle.

use thiserror::Error;

/// A `--parse` format or `--output-metric` expression that cannot be used.
#[derive(Debug, Error)]
pub enum ParserError {
    /// `expected`: the format names, comma-separated.
    #[error("unknown output format `{name}`; expected one of {expected}")]
    UnknownFormat {
        /// The format given.
        name: String,
        /// The format names, comma-separated.
        expected: String,
    },
    /// `why`: the regex crate's one-line reason.
    #[error("--output-metric `{}` is not a regular expression: {why}", text.escape_debug())]
    BadRegex {
        /// The expression given.
        text: String,
        /// The regex crate's one-line reason.
        why: String,
    },
    /// The expression captures nothing by name, so no metric could be named.
    #[error("--output-metric `{0}` has no named capture: name the value, e.g. `tps = (?<tps>[0-9.]+)`")]
    NoNamedCapture(String),
    /// Every capture is named like an iteration's number (`iter`, `i`, …).
    #[error("--output-metric `{text}` captures only the iteration's number (`{names}`), which is not a measurement: name the value measured, e.g. `iter (?<iter>[0-9]+): (?<ms>[0-9.]+) ms`")]
    OnlyIndex {
        /// The expression given.
        text: String,
        /// The capture names, comma-separated.
        names: String,
    },
    /// A capture's name cannot be a metric's.
    #[error(transparent)]
    Name(#[from] NameError),
}

/// A metric name a command may not give (in an expression or its output).
#[derive(Debug, Error)]
pub enum NameError {
    /// A name perflab measures itself (`wall_s`, …).
    #[error("`{0}` is measured by perflab itself; give the printed metric another name")]
    Reserved(String),
    /// A name with a comma or a control character.
    #[error("`{}` is not a metric name (no commas or control characters)", .0.escape_debug())]
    Invalid(String),
}

/// Output a parser cannot read: the run that printed it failed.
#[derive(Debug, Error)]
pub enum ParseError {
    /// A captured value that is not a number.
    #[error("`{}` is not a number", .0.escape_debug())]
    NotANumber(String),
    /// A regex capture whose text is not a number.
    #[error("`{name}`: {source}")]
    Capture {
        /// The capture's name.
        name: String,
        /// Why its text is not a number.
        #[source]
        source: Box<ParseError>,
    },
    /// A JSON line naming a metric, but not as perflab reads them (`line` truncated).
    #[error("malformed metric line ({why}): {line}")]
    MalformedLine {
        /// What is wrong with it.
        why: Malformed,
        /// The line, truncated.
        line: String,
    },
    /// The output is not JSON (`--parse google-benchmark`).
    #[error("Google Benchmark's JSON does not parse: {0}")]
    GoogleJson(#[source] serde_json::Error),
    /// The JSON has no `benchmarks` list.
    #[error("Google Benchmark's JSON has no `benchmarks` list")]
    GoogleNoBenchmarks,
    /// A benchmark entry has no `name`.
    #[error("a benchmark without a `name`")]
    GoogleNoName,
    /// A benchmark reported an error instead of timings.
    #[error("benchmark `{name}` reported an error: {message}")]
    GoogleReported {
        /// The benchmark.
        name: String,
        /// Its error message.
        message: String,
    },
    /// A benchmark's `time_unit` is not ns, us, ms or s.
    #[error("benchmark `{name}`: unknown time_unit `{unit}`")]
    GoogleTimeUnit {
        /// The benchmark.
        name: String,
        /// The unit given.
        unit: String,
    },
    /// The thread reading the commands' output ended before the run's.
    #[error("perflab's output reader stopped")]
    ReaderStopped,
    /// A run printed more metric names than perflab keeps per run.
    #[error("the run printed more than {0} different metric names")]
    TooManyNames(usize),
}

/// What is wrong with a JSON metric line.
#[derive(Debug, Error)]
pub enum Malformed {
    /// `metric` is there but not a string.
    #[error("`metric` must be a string")]
    MetricNotAString,
    /// `value` is not a number.
    #[error("`value` must be a number")]
    ValueNotANumber,
    /// The metric's name cannot be used.
    #[error(transparent)]
    Name(#[from] NameError),
}

/// Probes that cannot be set up for these options.
#[derive(Debug, Error)]
pub enum ProbeError {
    #[error(
        "--output-metric and --parse cannot be combined with --mode instructions: under valgrind a program's own \
         timings describe the simulator"
    )]
    /// `--output-metric`/`--parse` with `--mode instructions`.
    OutputUnderValgrind,
    #[error(
        "-e cannot be combined with --mode instructions: perf counters would count valgrind itself; \
         instruction mode already reports instructions, cache misses and branch mispredicts"
    )]
    /// `-e` with `--mode instructions`.
    EventsUnderValgrind,
    /// `hint`: how to install it.
    #[error("--mode instructions needs valgrind, which is not on PATH; {hint}")]
    NoValgrind {
        /// How to install valgrind here.
        hint: &'static str,
        /// Why the PATH lookup failed.
        #[source]
        source: which::Error,
    },
    /// `--explain-alloc` with `--mode instructions`.
    #[error(
        "--explain-alloc cannot be combined with --mode instructions: uprobes would trap in valgrind's translation \
         of the program, not in the program"
    )]
    AllocationsUnderValgrind,
    /// An allocation probe that cannot be placed (`--explain-alloc`), in its own words.
    #[error(transparent)]
    Allocations(#[from] perflab_profile::alloc::AllocError),
    /// An `-e` or `--explain-event` event perflab cannot count.
    #[error(transparent)]
    Event(#[from] perflab_sys::perf::event::EventError),
    /// `--count-in` that cannot count: no events, or no such process running.
    #[error("--count-in {0}")]
    CountIn(String),
    /// The machine's, not the input's: a temporary directory for cachegrind's files.
    #[error("{0:#}")]
    OutputDir(anyhow::Error),
}

impl ProbeError {
    /// True when the machine failed (a temporary directory), false for bad input.
    pub fn is_machine(&self) -> bool {
        matches!(self, ProbeError::OutputDir(_))
    }
}
