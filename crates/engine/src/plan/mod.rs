//! What an experiment is asked to do: the commands, the settings layered from the
//! command line, a suite benchmark, the suite's defaults and `Settings::default()`, and
//! the metrics it compares.

use perflab_sys::command;
pub mod error;
pub mod request;
pub(crate) mod schedule;

use crate::measure::output::Parser;
use crate::measure::{MeasureOptions, Mode};
use perflab_model::{metric, CommandSpec, Iterations, Settings};
use std::collections::BTreeMap;

pub use error::PlanError;
pub use request::PlanRequest;

/// Everything an experiment needs to run; built from the command line or a suite.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The commands, in the order given (the first is the baseline).
    pub commands: Vec<CommandSpec>,
    /// The settings, resolved.
    pub settings: Settings,
    /// Metrics to compare, in display order; the first is the primary one.
    pub metrics: Vec<String>,
    /// The metric whose verdicts decide when to stop.
    pub primary_metric: String,
    /// Decide on `uncontended_s` instead of `wall_s` when the first look finds the
    /// machine busy (the user named no metric).
    pub auto_primary: bool,
    /// Show the commands' output instead of discarding it (`--show-output`).
    pub show_output: bool,
    /// Where each command's output goes (hyperfine's `--output`); empty: per `show_output`.
    pub output_sinks: Vec<OutputSink>,
    /// Keep going past failing runs (`--ignore-failure`): they are recorded, not fatal.
    pub ignore_failure: bool,
    /// What is measured per run besides the harness's own metrics.
    pub measure: MeasureOptions,
    /// The commands as builds of a factorial design (parameters as factors), analysed
    /// as such at the end (`analysis::design`).
    /// Leave what a measured run left running in its process group (`--keep-children`);
    /// by default the group is ended after every run.
    pub keep_children: bool,
    /// The commands as builds of a factorial design (`analysis::design`), when they are.
    pub design: Option<perflab_model::Design>,
    /// The commands as layouts of versions (`--layouts N`): versions are compared, with
    /// intervals that count the layouts' spread (`analysis::layouts`).
    pub layouts: Option<perflab_model::Layouts>,
}

/// Where a command's output goes (hyperfine's `--output`; stderr is kept to explain a
/// failure except with `Inherit`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OutputSink {
    /// /dev/null (the default).
    #[default]
    Null,
    /// A pipe perflab reads and throws away: for programs that notice /dev/null.
    Pipe,
    /// perflab's own stdout and stderr (`--show-output`).
    Inherit,
    /// Appended to this file, created or emptied when the experiment starts.
    File(std::path::PathBuf),
}

impl OutputSink {
    /// `null`, `pipe`, `inherit`, or a file name.
    pub fn parse(text: &str) -> OutputSink {
        match text {
            "null" => OutputSink::Null,
            "pipe" => OutputSink::Pipe,
            "inherit" => OutputSink::Inherit,
            file => OutputSink::File(file.into()),
        }
    }
}

/// Measurement options a suite can set in `[defaults]` or per benchmark; `None` means
/// "not set here" (the benchmark inherits from the defaults, then the command line).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingsLayer {
    /// `--rounds`: exactly this many rounds.
    pub rounds: Option<u32>,
    /// `--warmup`: rounds run first and discarded.
    pub warmup: Option<u32>,
    /// `--min-rounds`.
    pub min_rounds: Option<u32>,
    /// `--max-rounds`.
    pub max_rounds: Option<u32>,
    /// Seconds.
    pub max_time: Option<f64>,
    /// Seconds.
    pub timeout: Option<f64>,
    /// Equivalence margin as a fraction (the file says percent).
    pub threshold: Option<f64>,
    /// `-e`: perf events to count per run.
    pub events: Option<Vec<String>>,
    /// `--mode`.
    pub mode: Option<Mode>,
    /// Run commands through this shell (`shell = true` means `/bin/sh`).
    pub shell: Option<String>,
    /// How to read the metrics the commands print about themselves.
    pub output: Option<Vec<Parser>>,
    /// Metrics whose direction is set (`higher_is_better`, `lower_is_better`).
    pub better: Option<BTreeMap<String, metric::Better>>,
    /// `--iterations`: which per-iteration values make a run's value.
    pub iterations: Option<Iterations>,
    /// Shell commands before and after every run (not timed).
    pub prepare: Option<String>,
    /// Shell command after every run (not timed).
    pub conclude: Option<String>,
    /// A file every run reads as its standard input.
    pub input: Option<String>,
}

/// Runs of a command measured alone (`stat`, `compare` with one command, a suite
/// benchmark without a baseline) when no stopping option is given: with nothing to
/// compare there is no verdict to stop on.
pub const SOLO_RUNS: u32 = 10;

impl SettingsLayer {
    /// For an experiment of `commands` commands: a command measured alone gets
    /// [`SOLO_RUNS`] fixed rounds unless a round count or a limit is set (instruction mode
    /// has its own single round).
    pub(crate) fn for_commands(mut self, commands: usize) -> SettingsLayer {
        let instructions = self.mode == Some(Mode::Instructions);
        let limited = self.rounds.is_some() || self.max_time.is_some() || self.max_rounds.is_some();
        if commands == 1 && !instructions && !limited {
            self.rounds = Some(SOLO_RUNS);
        }
        self
    }

    /// `self`, with anything unset taken from `fallback`.
    pub fn or(&self, fallback: &SettingsLayer) -> SettingsLayer {
        SettingsLayer {
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
            output: self.output.clone().or_else(|| fallback.output.clone()),
            better: self.better.clone().or_else(|| fallback.better.clone()),
            iterations: self.iterations.or(fallback.iterations),
            prepare: self.prepare.clone().or_else(|| fallback.prepare.clone()),
            conclude: self.conclude.clone().or_else(|| fallback.conclude.clone()),
            input: self.input.clone().or_else(|| fallback.input.clone()),
        }
    }
}

/// The settings for layered options: whatever no layer sets comes from
/// `Settings::default()`, except that instruction mode's deterministic counts need one
/// round, no warm-up and a fixed environment (counts move with the environment's size).
pub fn settings(options: &SettingsLayer, seed: Option<u64>) -> Settings {
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
        max_time_bounds_fixed_rounds: fixed_rounds.is_some() && options.max_time.is_some(),
        threshold: options.threshold.unwrap_or(d.threshold),
        env_padding: d.env_padding && !instructions,
        mode,
        timeout_s: options.timeout,
        better: options.better.clone().unwrap_or_default(),
        iterations: options.iterations.unwrap_or_default(),
        output_parsers: options.output.iter().flatten().map(Parser::describe).collect(),
        input: options.input.clone(),
        ..d
    }
}

/// Values no experiment can run with, as one-line usage errors.
pub fn check(options: &SettingsLayer) -> Result<(), PlanError> {
    if options.rounds == Some(0) {
        return Err(PlanError::NoRounds);
    }
    if options.min_rounds.is_some_and(|n| n < 2) {
        return Err(PlanError::TooFewMinRounds);
    }
    if let (Some(min), Some(max)) = (options.min_rounds, options.max_rounds) {
        if min > max {
            return Err(PlanError::MinAboveMaxRounds { min, max });
        }
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
    /// The primary metric: the one whose verdicts decide when to stop.
    pub primary: String,
    /// True when no metric was asked for: the primary one is `wall_s`, or
    /// `uncontended_s` when the machine turns out to be busy.
    pub auto_primary: bool,
}

impl Compared {
    /// Exactly `metrics`, the first deciding (never switched to `uncontended_s`).
    pub fn fixed(metrics: Vec<String>) -> Compared {
        let primary = metrics.first().cloned().unwrap_or_else(|| metric::WALL.to_string());
        Compared { metrics, primary, auto_primary: false }
    }
}

/// The metrics to compare and the primary one (whose verdict decides when to stop):
/// in instruction mode the cachegrind counts; otherwise `requested` (by default the
/// metrics the commands print, then wall time, CPU time and peak RSS) plus any counters.
pub(crate) fn compared_metrics(requested: &[String], measure: &MeasureOptions) -> Result<Compared, PlanError> {
    if measure.mode == Mode::Instructions {
        let metrics: Vec<String> = INSTRUCTION_METRICS.iter().map(|s| s.to_string()).collect();
        let primary = metrics[0].clone();
        return Ok(Compared { metrics, primary, auto_primary: false });
    }
    let printed = crate::measure::output_names(measure);
    for m in requested {
        // A format that names its metrics in the output can report any other name.
        let known = metric::kind(m).is_harness()
            || printed.contains(m)
            || (crate::measure::output_names_discovered(measure) && !m.is_empty());
        if !known {
            let mut choices: Vec<&str> = printed.iter().map(String::as_str).collect();
            choices.extend(metric::ALL);
            choices.extend(metric::CONTENTION);
            return Err(PlanError::UnknownMetric { metric: m.clone(), choices: choices.join(", ") });
        }
    }
    // Wall time may give way to uncontended time only when nobody chose a metric and the
    // commands print none of their own (or may print some: those decide once known).
    let auto_primary = requested.is_empty() && printed.is_empty() && !crate::measure::output_names_discovered(measure);
    let mut metrics: Vec<String> = if requested.is_empty() {
        printed.into_iter().chain(metric::COMPARED.map(String::from)).collect()
    } else {
        requested.to_vec()
    };
    let counters = crate::measure::metric_names(measure)?;
    metrics.extend(counters.into_iter().filter(|e| !metrics.contains(e)).collect::<Vec<_>>());
    let primary = metrics.first().cloned().unwrap_or_else(|| metric::WALL.to_string());
    Ok(Compared { metrics, primary, auto_primary })
}

/// The metrics `stat` reports for these options: what the command prints, harness
/// metrics, then counters.
pub fn stat_metrics(measure: &MeasureOptions) -> Result<Vec<String>, PlanError> {
    let mut names = crate::measure::output_names(measure);
    names.extend(match measure.mode {
        // Under valgrind, time and memory describe the simulator, not the program.
        Mode::Instructions => vec![metric::WALL.to_string()],
        Mode::Wall => [
            metric::WALL,
            metric::USER,
            metric::SYS,
            metric::MAX_RSS,
            metric::RUNQ_WAIT,
            metric::NEIGHBOUR_WAIT,
            metric::UNCONTENDED,
        ]
        .map(String::from)
        .to_vec(),
    });
    names.extend(crate::measure::metric_names(measure)?);
    Ok(names)
}

impl Plan {
    /// The one way to make a plan: the commands, their settings, what each run measures
    /// and what is compared. Output is discarded and a failing command stops the
    /// experiment unless `Plan::showing_output` and `Plan::ignoring_failure` say otherwise.
    pub fn new(commands: Vec<CommandSpec>, settings: Settings, measure: MeasureOptions, compared: Compared) -> Plan {
        Plan {
            commands,
            settings,
            metrics: compared.metrics,
            primary_metric: compared.primary,
            auto_primary: compared.auto_primary,
            show_output: false,
            output_sinks: Vec::new(),
            ignore_failure: false,
            measure,
            design: None,
            keep_children: false,
            layouts: None,
        }
    }

    /// Compare the commands as layouts of versions (`--layouts N`).
    ///
    /// With layouts the looks spend α by the union bound (α/(k(k+1)) at look k), whatever
    /// design was asked: the group-sequential boundaries assume the looks' statistics move
    /// like a sum of rounds, and a statistic on a few layouts' locations does not: with a
    /// t on them, those boundaries let an A/A comparison of 2 + 2 layouts be called
    /// different in 9.5 % of simulated experiments (σ 5 %, no layout effect,
    /// examples/layouts_sim.rs); the union bound holds for any dependence.
    pub fn with_layouts(self, layouts: Option<perflab_model::Layouts>) -> Plan {
        let mut settings = self.settings.clone();
        if layouts.is_some() {
            settings.looks = perflab_model::LookDesign::UnionBound;
        }
        Plan { layouts, settings, ..self }
    }

    /// How many comparisons share the error rate: every command but the baseline, or
    /// with layouts every version but the baseline version.
    pub fn candidates(&self) -> usize {
        match &self.layouts {
            Some(layouts) => layouts.versions.len().saturating_sub(1),
            None => self.commands.len().saturating_sub(1),
        }
    }

    /// Leave what runs leave behind in their process group (`--keep-children`).
    pub(crate) fn keeping_children(self, keep_children: bool) -> Plan {
        Plan { keep_children, ..self }
    }

    /// Analyse the commands as the builds of a factorial design (`-L`/`-P` factors).
    pub fn with_design(self, design: Option<perflab_model::Design>) -> Plan {
        Plan { design, ..self }
    }

    /// Send each command's output where `sinks` says (one per command).
    pub(crate) fn sending_output(self, output_sinks: Vec<OutputSink>) -> Plan {
        Plan { output_sinks, ..self }
    }

    /// Let the commands' output through (`--show-output`).
    pub(crate) fn showing_output(self, show_output: bool) -> Plan {
        Plan { show_output, ..self }
    }

    /// Keep going when a command fails (`--ignore-failure`).
    pub(crate) fn ignoring_failure(self, ignore_failure: bool) -> Plan {
        Plan { ignore_failure, ..self }
    }

    /// The same plan with other settings (a calibration's probe round, its A/A rounds).
    pub(crate) fn with_settings(&self, settings: Settings) -> Plan {
        Plan { settings, ..self.clone() }
    }

    /// The compared metrics the commands print about themselves: a successful run
    /// whose output lacks one of them fails the experiment.
    pub(crate) fn printed_metrics(&self) -> Vec<String> {
        if self.measure.output.is_empty() {
            return Vec::new();
        }
        let counters = crate::measure::metric_names(&self.measure).unwrap_or_default();
        self.metrics
            .iter()
            .filter(|m| metric::kind(m) != metric::Kind::Field && !counters.contains(m))
            .cloned()
            .collect()
    }

    /// True when the metrics to compare are only known once the baseline printed them
    /// (`--parse jsonl` or `google-benchmark` without `--metric`).
    pub fn learns_metrics_from_output(&self) -> bool {
        crate::measure::output_names_discovered(&self.measure) && self.printed_metrics().is_empty()
    }

    /// The plan once the baseline printed `names` (in its output's order): they are
    /// compared first, and the first is the primary metric.
    pub(crate) fn with_printed_metrics(&self, names: &[String]) -> Plan {
        let mut metrics = names.to_vec();
        metrics.extend(self.metrics.iter().filter(|m| !names.contains(m)).cloned());
        Plan {
            primary_metric: names.first().cloned().unwrap_or_else(|| self.primary_metric.clone()),
            metrics,
            ..self.clone()
        }
    }
}

/// The builds as a factorial design when one command template is expanded over two or
/// more parameters with at least two values each (`-L cc gcc,clang -L disp
/// switch,threaded`): each parameter a factor, its first value the reference level.
pub fn factorial_design(
    templates: usize,
    parameters: &[(String, Vec<String>)],
    expanded: &[(usize, command::Combination)],
    pairwise: bool,
) -> Option<perflab_model::Design> {
    let factors: Vec<&(String, Vec<String>)> = parameters.iter().filter(|(_, values)| values.len() >= 2).collect();
    if templates != 1 || factors.len() < 2 {
        return None;
    }
    let cells = expanded
        .iter()
        .map(|(_, combination)| {
            factors
                .iter()
                .map(|(name, values)| {
                    let value = &combination.iter().find(|(n, _)| n == name)?.1;
                    values.iter().position(|v| v == value)
                })
                .collect::<Option<Vec<usize>>>()
        })
        .collect::<Option<Vec<_>>>()?;
    let factors = factors
        .iter()
        .map(|(name, values)| perflab_model::Factor { name: name.clone(), levels: values.clone() })
        .collect();
    Some(perflab_model::Design { factors, cells, pairwise })
}
