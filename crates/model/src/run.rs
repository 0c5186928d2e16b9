//! What was run and what one run measured: commands, exits, counters, iterations, runs and
//! each command's runs with their summaries.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::{NoValue, ParseError, Summary};

/// A command as the user gave it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CommandSpec {
    /// The name results are shown under (`-n`, or the command line).
    pub name: String,
    /// The argument vector executed (for `--shell`: the shell and `-c`).
    pub argv: Vec<String>,
    /// The text the user typed.
    pub command_line: String,
    /// The `-L`/`-P` parameter values this command was made with, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
}

impl CommandSpec {
    /// A program run without arguments, named after itself (the simulations' commands).
    pub fn bare(program: &str) -> CommandSpec {
        CommandSpec {
            name: program.into(),
            argv: vec![program.into()],
            command_line: program.into(),
            ..CommandSpec::default()
        }
    }
}

/// How one run ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct ExitInfo {
    /// Exit code when the process exited normally.
    pub exit_code: Option<i32>,
    /// Signal number when it was killed by a signal.
    pub signal: Option<i32>,
    /// True when perflab killed it for exceeding `--timeout`.
    #[serde(default)]
    pub timed_out: bool,
}

impl ExitInfo {
    /// True when the run exited with code 0 and was not timed out.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// How the run ended, for a sentence: `exited with code 2`, `was killed by signal 9 (SIGKILL)`, `timed out`.
    pub fn describe(&self) -> String {
        if self.timed_out {
            "timed out".to_string()
        } else if let Some(sig) = self.signal {
            format!("was killed by signal {sig} ({})", signal_name(sig))
        } else {
            format!("exited with code {}", self.exit_code.unwrap_or(-1))
        }
    }
}

pub(crate) fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// One hardware/software counter (or simulated count) for one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CounterReading {
    /// False when the counter could not be read in this run (`reason` says why).
    pub supported: bool,
    /// The count, scaled to the full run when the kernel multiplexed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// True when the value was extrapolated from time_running < time_enabled.
    #[serde(default)]
    pub scaled: bool,
    /// Why the counter could not be read (when `supported` is false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every value a self-reporting command printed for this metric in this run, in
    /// order (per-iteration samples); `value` is their aggregate (see [`Iterations`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<f64>,
}

impl CounterReading {
    /// A reading of `value`; `scaled` when the kernel multiplexed the counter.
    pub fn value(value: f64, scaled: bool) -> Self {
        CounterReading { supported: true, value: Some(value), scaled, reason: None, samples: Vec::new() }
    }
    /// A counter this run could not read, and why.
    pub fn unsupported(reason: impl Into<String>) -> Self {
        CounterReading {
            supported: false,
            value: None,
            scaled: false,
            reason: Some(reason.into()),
            samples: Vec::new(),
        }
    }
    /// A metric printed `samples.len()` times in one run, aggregated as `iterations` says.
    pub fn sampled(samples: Vec<f64>, iterations: Iterations) -> Result<Self, NoValue> {
        let mut printed = Printed::default();
        for v in samples {
            printed.push(v);
        }
        CounterReading::printed(printed, iterations)
    }

    /// A metric as a run printed it (every value aggregated, the first [`SAMPLES_KEPT`]
    /// kept as its samples), aggregated as `iterations` says.
    pub fn printed(printed: Printed, iterations: Iterations) -> Result<Self, NoValue> {
        let value = iterations.aggregate_printed(&printed)?;
        Ok(CounterReading { supported: true, value: Some(value), scaled: false, reason: None, samples: printed.kept })
    }
}

/// How many values of a printed metric one run keeps as its per-iteration samples. A
/// command printing a gigabyte of matching lines kept every value (16.8 GB of memory,
/// ~94 B per line); now each value still counts in the run's value (the sums are
/// streamed) but only the first 10,000 are kept, and a warning says so
/// (`analysis::warnings`). Documented in docs/inputs.md.
pub const SAMPLES_KEPT: usize = 10_000;

/// The values a run printed for one metric, in bounded memory: how many, their sum
/// (compensated: a hundred million values keep their mean exact to the last digits) and
/// the first [`SAMPLES_KEPT`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Printed {
    /// The first [`SAMPLES_KEPT`] values, in the order printed.
    pub kept: Vec<f64>,
    /// Every value printed, kept or not.
    pub count: u64,
    sum: f64,
    /// Neumaier's compensation term of `sum`.
    compensation: f64,
}

impl Printed {
    /// Counts `v` (and keeps it while fewer than [`SAMPLES_KEPT`] are kept).
    pub fn push(&mut self, v: f64) {
        if self.kept.len() < SAMPLES_KEPT {
            self.kept.push(v);
        }
        self.count += 1;
        let t = self.sum + v;
        self.compensation += if self.sum.abs() >= v.abs() { (self.sum - t) + v } else { (v - t) + self.sum };
        self.sum = t;
    }

    /// Every value of `other` after this one's (a second stream of the same run).
    pub fn append(&mut self, other: &Printed) {
        let room = SAMPLES_KEPT.saturating_sub(self.kept.len());
        self.kept.extend(other.kept.iter().take(room));
        self.count += other.count;
        for part in [other.sum, other.compensation] {
            let t = self.sum + part;
            self.compensation +=
                if self.sum.abs() >= part.abs() { (self.sum - t) + part } else { (part - t) + self.sum };
            self.sum = t;
        }
    }

    /// The sum of every value printed.
    pub fn sum(&self) -> f64 {
        self.sum + self.compensation
    }

    /// Whether values were printed beyond those kept.
    pub fn capped(&self) -> bool {
        self.count > self.kept.len() as u64
    }
}

/// Which of a run's per-iteration samples make its value. The run — one process — stays
/// the unit of replication: iterations inside one process share its layout, heap and
/// caches and are not independent, so they are aggregated into one value per run before
/// the paired statistics (docs/statistics.md).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Iterations {
    /// The mean of every iteration: what the whole run cost per iteration, first
    /// (cold) iterations included.
    #[default]
    All,
    /// The mean of the iterations after the first N: the steady state.
    Steady(u32),
    /// The mean of the first N iterations: the cold start.
    First(u32),
    /// The mean of every iteration decides, and each group — the first N (`NAME[first]`)
    /// and the rest (`NAME[steady]`) — gets its own verdict.
    Each(u32),
    /// The N-th value each run printed alone (1-based): one of several different things
    /// a run prints the same way (psql's `Time:` of a `SET`, then of the query).
    Only(u32),
}

/// The suffixes of the per-group metrics `--iterations each` adds.
pub(crate) const ITERATION_GROUPS: [&str; 2] = ["first", "steady"];

impl Iterations {
    /// The choices as the command line and suite files spell them.
    pub const NAMES: [&'static str; 4] = ["all", "first", "steady", "each"];

    /// `all`, `first` (the first `warmup` iterations), `steady` (leaving them out) or
    /// `each` (all, with a verdict per group).
    pub fn named(name: &str, warmup: u32) -> Result<Iterations, ParseError> {
        // The first and steady means need the first `warmup` values, which are kept.
        if warmup as usize > SAMPLES_KEPT {
            return Err(ParseError::TooManyIterationsSetApart(warmup));
        }
        match name {
            "all" => Ok(Iterations::All),
            "steady" => Ok(Iterations::Steady(warmup)),
            "first" => Ok(Iterations::First(warmup)),
            "each" => Ok(Iterations::Each(warmup)),
            other => match other.parse::<u32>() {
                Ok(n) if n as usize > SAMPLES_KEPT => Err(ParseError::TooManyIterationsSetApart(n)),
                Ok(n) if n >= 1 => Ok(Iterations::Only(n)),
                _ => Err(ParseError::Iterations(other.to_string())),
            },
        }
    }

    pub(crate) fn is_all(&self) -> bool {
        *self == Iterations::All
    }

    /// The iterations (0-based, end exclusive; None: to the last) that make the value.
    fn kept(&self) -> (usize, Option<usize>) {
        match *self {
            Iterations::All | Iterations::Each(_) => (0, None),
            Iterations::Steady(skip) => (skip as usize, None),
            Iterations::First(n) => (0, Some(n as usize)),
            Iterations::Only(n) => (n.saturating_sub(1) as usize, Some(n as usize)),
        }
    }

    /// The value of a run that printed `samples`; an error says why there is none.
    pub fn aggregate(&self, samples: &[f64]) -> Result<f64, NoValue> {
        let (from, to) = self.kept();
        let kept = samples.get(from..to.unwrap_or(samples.len()).min(samples.len())).unwrap_or_default();
        if kept.is_empty() {
            return Err(match *self {
                Iterations::Steady(skip) if !samples.is_empty() => {
                    NoValue::SteadyStateMissing { skip, printed: samples.len() }
                }
                Iterations::Only(wanted) if !samples.is_empty() => {
                    NoValue::NthMissing { wanted, printed: samples.len() }
                }
                _ => NoValue::NothingPrinted,
            });
        }
        Ok(kept.iter().sum::<f64>() / kept.len() as f64)
    }

    /// [`Iterations::aggregate`] of every value printed, of which the first
    /// [`SAMPLES_KEPT`] are kept (warm-up counts are at most that, see [`Iterations::named`]).
    pub(crate) fn aggregate_printed(&self, printed: &Printed) -> Result<f64, NoValue> {
        if !printed.capped() {
            return self.aggregate(&printed.kept);
        }
        let first = |n: usize| printed.kept[..n.min(printed.kept.len())].iter().sum::<f64>();
        Ok(match *self {
            Iterations::All | Iterations::Each(_) => printed.sum() / printed.count as f64,
            Iterations::Steady(skip) => (printed.sum() - first(skip as usize)) / (printed.count - skip as u64) as f64,
            Iterations::First(n) => first(n as usize) / n as f64,
            // The N-th value is among those kept (N ≤ SAMPLES_KEPT, see `named`).
            Iterations::Only(_) => return self.aggregate(&printed.kept),
        })
    }

    /// With `each`: the group metrics of a metric printed as `printed` — (`NAME[first]`,
    /// mean of the first N), (`NAME[steady]`, mean of the rest) — when there is a rest.
    pub fn groups_printed(&self, name: &str, printed: &Printed) -> Vec<(String, f64)> {
        let Iterations::Each(n) = *self else { return Vec::new() };
        if printed.count <= n as u64 {
            return Vec::new();
        }
        if !printed.capped() {
            let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
            let (first, rest) = printed.kept.split_at(n as usize);
            return vec![(group_metric(name, "first"), mean(first)), (group_metric(name, "steady"), mean(rest))];
        }
        let first: f64 = printed.kept[..(n as usize).min(printed.kept.len())].iter().sum();
        let steady = (printed.sum() - first) / (printed.count - n as u64) as f64;
        vec![(group_metric(name, "first"), first / n as f64), (group_metric(name, "steady"), steady)]
    }

    /// The metric names `each` adds for `name` (none for the other choices).
    pub fn group_names(&self, name: &str) -> Vec<String> {
        match self {
            Iterations::Each(_) => ITERATION_GROUPS.iter().map(|g| group_metric(name, g)).collect(),
            _ => Vec::new(),
        }
    }

    /// How a run's value is made, for the terminal.
    pub fn describe(&self) -> String {
        let range = |n: u32| if n == 1 { "iteration 1".to_string() } else { format!("iterations 1–{n}") };
        match *self {
            Iterations::All => "the mean of all iterations".to_string(),
            Iterations::Steady(skip) => format!("the steady state, the mean of iterations {}…", skip + 1),
            Iterations::First(n) => {
                format!("the cold start, {}", if n == 1 { range(1) } else { format!("the mean of {}", range(n)) })
            }
            Iterations::Each(n) => format!(
                "the mean of all iterations; NAME[first] is {}, NAME[steady] iterations {}…, each with its own verdict",
                range(n),
                n + 1
            ),
            Iterations::Only(n) => format!("value #{n} of those it printed, alone (--iterations {n})"),
        }
    }
}

/// `NAME[group]`: a per-iteration-group metric of `--iterations each`.
pub(crate) fn group_metric(name: &str, group: &str) -> String {
    format!("{name}[{group}]")
}

/// One execution of one command: the unit of replication.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Run {
    /// Round number, 0-based, counting measured rounds only.
    pub round: u32,
    /// Position of this command within its round's random order.
    pub position: u32,
    /// Wall-clock time from spawn to exit, seconds.
    pub wall_s: f64,
    /// CPU time in user mode of the process and its waited-for children, seconds.
    pub user_s: f64,
    /// CPU time in the kernel of the process and its waited-for children, seconds.
    pub sys_s: f64,
    /// Peak resident set size of the largest process, KiB (getrusage's `ru_maxrss`).
    pub max_rss_kib: u64,
    /// Page faults served without I/O.
    pub minor_faults: u64,
    /// Page faults that needed I/O.
    pub major_faults: u64,
    /// Context switches because the process waited (I/O, locks, sleep).
    pub voluntary_cs: u64,
    /// Context switches because the scheduler preempted the process.
    pub involuntary_cs: u64,
    /// How the run ended.
    #[serde(flatten)]
    pub exit: ExitInfo,
    /// Bytes of random environment padding used in this round.
    pub env_pad_bytes: u32,
    /// Counters, probes' readings and printed metrics, by metric name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, CounterReading>,
    /// Where the run's samples fell (`compare --explain`): kept in memory until the
    /// explanation is computed, not written with the run (the explanation is).
    #[serde(skip)]
    pub profile: Option<Box<RunProfile>>,
}

/// One run's samples per function, from the sampling probe of `compare --explain` (or one
/// cachegrind run's counts per function in instruction mode).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunProfile {
    /// What was sampled (`cpu-clock`, …) or counted (`instructions`).
    pub event: String,
    /// True when `period` is in nanoseconds (clock events).
    pub period_is_time: bool,
    /// Exact counts (cachegrind), not samples: the same run gives the same numbers.
    pub exact: bool,
    /// Samples taken (or, when `exact`, counted events).
    pub samples: u64,
    /// The sum of the samples' periods: nanoseconds for clock events, events otherwise.
    pub period: u64,
    /// Records the kernel dropped.
    pub lost: u64,
    /// (function, object basename) → (samples, summed period) of the samples whose leaf
    /// it is (self time).
    pub functions: BTreeMap<(String, String), (u64, u64)>,
    /// Folded call stacks (`root;…;leaf`) → (samples, summed period); empty without
    /// call stacks.
    pub stacks: BTreeMap<String, (u64, u64)>,
    /// Further counts per function (instruction mode: branch mispredictions, cache
    /// misses), by metric name.
    pub counts: BTreeMap<String, BTreeMap<(String, String), u64>>,
}

impl Run {
    /// The value of a metric for this run, `None` when it was not measured.
    pub fn metric(&self, name: &str) -> Option<f64> {
        use crate::metric::*;
        Some(match name {
            WALL => self.wall_s,
            CPU => self.user_s + self.sys_s,
            USER => self.user_s,
            SYS => self.sys_s,
            MAX_RSS => self.max_rss_kib as f64,
            MINOR_FAULTS => self.minor_faults as f64,
            MAJOR_FAULTS => self.major_faults as f64,
            VOLUNTARY_CS => self.voluntary_cs as f64,
            INVOLUNTARY_CS => self.involuntary_cs as f64,
            other => return self.counters.get(other).and_then(|c| c.value),
        })
    }
}

/// All runs of one command, with summaries per metric.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CommandResult {
    /// The name results are shown under.
    pub name: String,
    /// The argument vector executed.
    pub argv: Vec<String>,
    /// The text the user typed.
    pub command_line: String,
    /// The `-L`/`-P` parameter values this command was made with, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// Every measured run (warm-up excluded), in round order.
    pub runs: Vec<Run>,
    /// Per metric name, the summary of its values over the runs.
    pub summary: BTreeMap<String, Summary>,
}

impl CommandResult {
    /// The command as it was given, to run or record it again.
    pub fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: self.name.clone(),
            argv: self.argv.clone(),
            command_line: self.command_line.clone(),
            parameters: self.parameters.clone(),
        }
    }

    /// A metric's finite values over the successful runs, in run order: the sample history
    /// and the report pool per label (a failed run's time is not the benchmark's; it may
    /// have stopped half-way).
    pub fn values(&self, metric: &str) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| r.exit.success())
            .filter_map(|r| r.metric(metric))
            .filter(|v| v.is_finite())
            .collect()
    }
}
