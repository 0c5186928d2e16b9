//! Option groups several commands share, defined once so they parse, check and default
//! alike, and their conversion into the library's plain settings.

use crate::experiment::plan::Options;
use crate::measure::counters::Scope;
use crate::measure::{MeasureOptions, Mode};
use crate::model::Settings;
use crate::units;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;

/// clap value parsers over the library's unit parsers.
pub fn duration(text: &str) -> Result<f64, String> {
    units::parse_duration(text)
}
pub fn percent(text: &str) -> Result<f64, String> {
    units::parse_percent(text)
}
pub fn confidence(text: &str) -> Result<f64, String> {
    units::parse_confidence(text)
}

/// Help text ending in the default as clap shows it; the options are `Option`s (so a
/// suite can tell "not set" from "set to the default"), which clap cannot show a default for.
fn with_default(help: &str, default: impl std::fmt::Display) -> String {
    format!("{help} [default: {default}]")
}

/// The experiment-design options of `compare` and `run`. `None` means "not set here":
/// the defaults are layered in by `experiment::plan::settings`, never by clap.
#[derive(Debug, Args, Clone, Default)]
pub struct ExperimentArgs {
    /// Run exactly N measured rounds (no adaptive stopping).
    #[arg(short = 'r', long, visible_alias = "runs", value_name = "N")]
    pub rounds: Option<u32>,
    #[arg(long, value_name = "N",
          help = with_default("Rounds before the first look at the statistics", Settings::default().min_rounds))]
    pub min_rounds: Option<u32>,
    #[arg(long, value_name = "N",
          help = with_default("Stop after this many measured rounds even without a verdict",
                              Settings::default().max_rounds))]
    pub max_rounds: Option<u32>,
    #[arg(long, value_name = "DURATION", value_parser = duration,
          help = with_default("Stop after this much time even without a verdict (e.g. 60, 90s, 5m)",
                              format!("{}s", Settings::default().max_time_s)))]
    pub max_time: Option<f64>,
    #[arg(long, value_name = "PCT", value_parser = percent,
          help = with_default("Equivalence margin in percent: a CI inside ±PCT is `equivalent`",
                              Settings::default().threshold * 100.0))]
    pub threshold: Option<f64>,
    /// Seed of the random round order and padding (default: random, recorded in the output).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep going when a command exits non-zero (its runs still count).
    #[arg(long, short = 'i')]
    pub ignore_failure: bool,
    #[command(flatten)]
    pub runner: RunnerArgs,
}

impl ExperimentArgs {
    /// What the command line sets, to lay over a suite's options.
    pub fn options(&self) -> Options {
        Options {
            rounds: self.rounds,
            warmup: self.runner.warmup,
            min_rounds: self.min_rounds,
            max_rounds: self.max_rounds,
            max_time: self.max_time,
            timeout: self.runner.timeout,
            threshold: self.threshold,
            ..Options::default()
        }
    }
}

/// How each run is executed and reported; shared by `compare`, `run` and `stat`.
#[derive(Debug, Args, Clone, Default)]
pub struct RunnerArgs {
    #[arg(short = 'w', long, value_name = "N",
          help = with_default("Warm-up runs of each command, not counted",
                              format!("{}; 0 in instruction mode", Settings::default().warmup_rounds)))]
    pub warmup: Option<u32>,
    /// Kill a run (its whole process group) after this long.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub timeout: Option<f64>,
    /// Let the commands' stdout and stderr through instead of discarding them.
    #[arg(long)]
    pub show_output: bool,
    /// Write the result as JSON (`-` for stdout).
    #[arg(long, visible_alias = "export-json", value_name = "FILE")]
    pub json: Option<String>,
    /// Do not show the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

impl RunnerArgs {
    /// The progress bar is drawn only on a terminal, unless turned off.
    pub fn progress_hidden(&self) -> bool {
        self.no_progress || !std::io::IsTerminal::is_terminal(&std::io::stderr())
    }
}

/// What a run measures besides time: counters or instruction mode.
#[derive(Debug, Clone, Args, Default)]
pub struct MeasureArgs {
    /// Counters to read per run via perf_event_open (comma-separated perf names,
    /// e.g. cycles,instructions,branch-misses,task-clock,page-faults).
    #[arg(short = 'e', long = "events", value_delimiter = ',', value_name = "EVENTS")]
    pub events: Vec<String>,
    /// wall: time each run natively; instructions: run under valgrind cachegrind.
    #[arg(long, default_value = "wall",
          value_parser = PossibleValuesParser::new(Mode::NAMES).map(|s| s.parse::<Mode>().expect("a listed mode")))]
    pub mode: Mode,
    /// Count user mode only, or user+kernel (auto: user+kernel when perf_event_paranoid
    /// or CAP_PERFMON allows it).
    #[arg(long, default_value = "auto", value_name = "SCOPE",
          value_parser = PossibleValuesParser::new(Scope::NAMES).map(|s| s.parse::<Scope>().expect("a listed scope")))]
    pub counter_scope: Scope,
}

impl MeasureArgs {
    pub fn options(&self) -> MeasureOptions {
        MeasureOptions { events: self.events.clone(), mode: self.mode, counter_scope: self.counter_scope }
    }
}

/// Which history database to use (every store command takes it).
#[derive(Debug, Clone, Args, Default)]
pub struct DbArgs {
    /// The history database: a SQLite file or a postgres:// URL
    /// [env: PERFLAB_DB; default: .perflab/perflab.db].
    #[arg(long = "db", value_name = "URL")]
    pub db: Option<String>,
}

impl DbArgs {
    /// Open (and create, when missing) the database, for commands that write to it.
    pub fn open(&self) -> Result<crate::store::Store, crate::error::Failure> {
        crate::store::Store::open(self.db.as_deref())
    }

    /// Open an existing database for reading; never creates one.
    pub fn open_existing(&self) -> Result<crate::store::Store, crate::error::Failure> {
        crate::store::Store::open_existing(self.db.as_deref())
    }
}

/// `compare --save`: store the comparison in the history too.
#[derive(Debug, Clone, Args, Default)]
pub struct SaveArgs {
    /// Store the result in the history database.
    #[arg(long)]
    pub save: bool,
    /// Label to store it under (default: the git commit, else the time).
    #[arg(long, value_name = "LABEL", requires = "save")]
    pub label: Option<String>,
    /// Benchmark name to store it under (default: the command names joined by ` vs `).
    #[arg(long = "bench", value_name = "NAME", requires = "save")]
    pub bench: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}
