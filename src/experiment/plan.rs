//! What an experiment is asked to do: the commands, the settings layered from the
//! command line, a suite benchmark, the suite's defaults and `Settings::default()`, and
//! the metrics it compares.

use crate::error::Failure;
use crate::measure::{MeasureOptions, Mode};
use crate::model::{metric, CommandSpec, Settings};
use crate::usage;

/// Everything an experiment needs to run; built from the command line or a suite.
#[derive(Debug, Clone)]
pub struct Plan {
    pub commands: Vec<CommandSpec>,
    pub settings: Settings,
    /// Metrics to compare, in display order; the first is the primary one.
    pub metrics: Vec<String>,
    /// The metric whose verdicts decide when to stop.
    pub primary_metric: String,
    /// Decide on `uncontended_s` instead of `wall_s` when the first look finds the
    /// machine busy (the user named no metric).
    pub auto_primary: bool,
    pub show_output: bool,
    pub ignore_failure: bool,
    pub measure: MeasureOptions,
}

/// Measurement options a suite can set in `[defaults]` or per benchmark; `None` means
/// "not set here" (the benchmark inherits from the defaults, then the command line).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    pub rounds: Option<u32>,
    pub warmup: Option<u32>,
    pub min_rounds: Option<u32>,
    pub max_rounds: Option<u32>,
    /// Seconds.
    pub max_time: Option<f64>,
    /// Seconds.
    pub timeout: Option<f64>,
    /// Equivalence margin as a fraction (the file says percent).
    pub threshold: Option<f64>,
    pub events: Option<Vec<String>>,
    pub mode: Option<Mode>,
    /// Run commands through this shell (`shell = true` means `/bin/sh`).
    pub shell: Option<String>,
}

impl Options {
    /// `self`, with anything unset taken from `fallback`.
    pub fn or(&self, fallback: &Options) -> Options {
        Options {
            rounds: self.rounds.or(fallback.rounds),
            warmup: self.warmup.or(fallback.warmup),
            min_rounds: self.min_rounds.or(fallback.min_rounds),
            max_rounds: self.max_rounds.or(fallback.max_rounds),
            max_time: self.max_time.or(fallback.max_time),
            timeout: self.timeout.or(fallback.timeout),
            threshold: self.threshold.or(fallback.threshold),
            events: self.events.clone().or_else(|| fallback.events.clone()),
            mode: self.mode.or(fallback.mode),
            shell: self.shell.clone().or_else(|| fallback.shell.clone()),
        }
    }
}

/// The settings for layered options: whatever no layer sets comes from
/// `Settings::default()`, except that instruction mode's deterministic counts need one
/// round, no warm-up and a fixed environment (counts move with the environment's size).
pub fn settings(options: &Options, seed: Option<u64>) -> Settings {
    let d = Settings::default();
    let mode = options.mode.unwrap_or_default();
    let instructions = mode == Mode::Instructions;
    let fixed_rounds = options.rounds.or(instructions.then_some(1));
    Settings {
        seed: seed.unwrap_or_else(rand::random),
        warmup_rounds: options.warmup.unwrap_or(if instructions { 0 } else { d.warmup_rounds }),
        min_rounds: options.min_rounds.unwrap_or(d.min_rounds),
        fixed_rounds,
        // Exactly N rounds means N, whatever the round limit.
        max_rounds: options.max_rounds.unwrap_or(d.max_rounds).max(fixed_rounds.unwrap_or(0)),
        max_time_s: options.max_time.unwrap_or(d.max_time_s),
        threshold: options.threshold.unwrap_or(d.threshold),
        env_padding: d.env_padding && !instructions,
        mode: mode.as_str().to_string(),
        timeout_s: options.timeout,
        ..d
    }
}

/// Values no experiment can run with, as one-line usage errors.
pub fn check(options: &Options) -> Result<(), Failure> {
    if options.rounds == Some(0) {
        return Err(usage!("--rounds must be at least 1"));
    }
    if options.min_rounds.is_some_and(|n| n < 2) {
        return Err(usage!("--min-rounds must be at least 2"));
    }
    Ok(())
}

/// Instruction-mode metrics, in display order (named by the cachegrind probe).
pub use crate::measure::cachegrind::COMPARED as INSTRUCTION_METRICS;

/// What an experiment compares.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// In display order; the first is the primary one.
    pub metrics: Vec<String>,
    pub primary: String,
    /// True when no metric was asked for: the primary one is `wall_s`, or
    /// `uncontended_s` when the machine turns out to be busy.
    pub auto_primary: bool,
}

/// The metrics to compare and the primary one (whose verdict decides when to stop):
/// in instruction mode the cachegrind counts; otherwise `requested` (the default set
/// when empty) plus any counters.
pub fn compared_metrics(requested: &[String], measure: &MeasureOptions) -> Result<Compared, Failure> {
    if measure.mode == Mode::Instructions {
        let metrics: Vec<String> = INSTRUCTION_METRICS.iter().map(|s| s.to_string()).collect();
        let primary = metrics[0].clone();
        return Ok(Compared { metrics, primary, auto_primary: false });
    }
    let known = || metric::ALL.iter().chain(&metric::CONTENTION);
    for m in requested {
        if !known().any(|k| k == m) {
            return Err(usage!(
                "unknown metric `{m}`; choose from {}",
                known().copied().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let auto_primary = requested.is_empty();
    let mut metrics: Vec<String> =
        if auto_primary { metric::COMPARED.map(String::from).to_vec() } else { requested.to_vec() };
    let counters = crate::measure::metric_names(measure)?;
    metrics.extend(counters.into_iter().filter(|e| !metrics.contains(e)).collect::<Vec<_>>());
    let primary = metrics.first().cloned().unwrap_or_else(|| metric::WALL.to_string());
    Ok(Compared { metrics, primary, auto_primary })
}

/// The metrics `stat` reports for these options: harness metrics, then counters.
pub fn stat_metrics(measure: &MeasureOptions) -> Result<Vec<String>, Failure> {
    let mut names: Vec<String> = match measure.mode {
        // Under valgrind, time and memory describe the simulator, not the program.
        Mode::Instructions => vec![metric::WALL.to_string()],
        Mode::Wall => {
            [metric::WALL, metric::USER, metric::SYS, metric::MAX_RSS, metric::RUNQ_WAIT, metric::UNCONTENDED]
                .map(String::from)
                .to_vec()
        }
    };
    names.extend(crate::measure::metric_names(measure)?);
    Ok(names)
}
