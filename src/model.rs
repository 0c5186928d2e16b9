//! The one data model shared by `compare`, `stat`, suites and the store: what was run,
//! every run's measurements and counters, per-command summaries and the comparisons.
//!
//! Serialized as the documented JSON schema (`docs/json-schema.md`); bump
//! [`SCHEMA_VERSION`] on any incompatible change.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A name in the model's vocabulary (a suite file's or the command line's) that is not
/// one; the message quotes it and lists the choices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("expected `iterations` \"all\", \"first\", \"steady\" or \"each\", found \"{0}\"")]
    Iterations(String),
    #[error("at most {max} warm-up iterations (the values kept per run), got {0}", max = SAMPLES_KEPT)]
    TooManyWarmupIterations(u32),
    #[error("expected `mode` \"wall\" or \"instructions\", found \"{0}\"")]
    Mode(String),
}

/// Why a metric printed once per iteration has no value for a run (recorded as the
/// reading's reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoValue {
    #[error("the steady state leaves out the first {skip} iteration(s), and the run printed only {printed}")]
    SteadyStateMissing { skip: u32, printed: usize },
    #[error("no value was printed")]
    NothingPrinted,
}

pub const SCHEMA_VERSION: u32 = 2;

/// Metric names measured by the harness for every run, and the one registry of what
/// every metric is: its unit, which way is better, and what it measures. Counter metrics
/// use perf's event names (`instructions`, `task-clock`, ...) or the instruction-mode
/// names; metrics a command reports itself are known by the conventions of [`info`].
pub mod metric {
    use serde::{Deserialize, Serialize};

    pub const WALL: &str = "wall_s";
    pub const CPU: &str = "cpu_s";
    pub const USER: &str = "user_s";
    pub const SYS: &str = "sys_s";
    pub const MAX_RSS: &str = "max_rss_kib";
    pub const MINOR_FAULTS: &str = "minor_faults";
    pub const MAJOR_FAULTS: &str = "major_faults";
    pub const VOLUNTARY_CS: &str = "voluntary_cs";
    pub const INVOLUNTARY_CS: &str = "involuntary_cs";
    /// Time the run was ready to run but waited for a CPU (see `contention`): behind
    /// other programs, or behind its own tasks.
    pub const RUNQ_WAIT: &str = "runq_wait_s";
    /// The part of that wait a task outside the benchmark caused: a neighbour held the CPU.
    pub const NEIGHBOUR_WAIT: &str = "neighbour_wait_s";
    /// Wall time minus the neighbours' wait: the run with the neighbours' share removed.
    pub const UNCONTENDED: &str = "uncontended_s";

    /// Metrics compared by default, in display order.
    pub const COMPARED: [&str; 3] = [WALL, CPU, MAX_RSS];
    /// Every harness metric kept in a field of `Run`, in display order.
    pub const ALL: [&str; 9] =
        [WALL, CPU, USER, SYS, MAX_RSS, MINOR_FAULTS, MAJOR_FAULTS, VOLUNTARY_CS, INVOLUNTARY_CS];
    /// Harness metrics kept in `Run::counters` (a reading may be unsupported, with the
    /// reason): how much a busy machine delayed each run.
    pub const CONTENTION: [&str; 3] = [RUNQ_WAIT, NEIGHBOUR_WAIT, UNCONTENDED];

    /// Where a metric's values come from: the one answer to "is this a harness metric?".
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Kind {
        /// Measured by the harness for every run and kept in a field of `Run` ([`ALL`]).
        Field,
        /// The harness's reading of how a busy machine delayed a run, kept in
        /// `Run::counters` ([`CONTENTION`]).
        Contention,
        /// Not the harness's own: a counter, a probe's count, a number the command printed.
        Measured,
    }

    impl Kind {
        /// Measured by perflab itself for every run, whatever the plan asks.
        pub fn is_harness(self) -> bool {
            self != Kind::Measured
        }
    }

    /// Which [`Kind`] of metric `name` is.
    pub fn kind(name: &str) -> Kind {
        if ALL.contains(&name) {
            Kind::Field
        } else if CONTENTION.contains(&name) {
            Kind::Contention
        } else {
            Kind::Measured
        }
    }

    /// Which way a metric improves. Ratios are always candidate / baseline; this says
    /// whether a ratio above 1 is worse (`lower`: times, counts) or better (`higher`:
    /// throughput).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Better {
        #[default]
        Lower,
        Higher,
    }

    impl Better {
        pub fn is_lower(&self) -> bool {
            *self == Better::Lower
        }
    }

    /// What a metric is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Info {
        /// Unit shown next to its values (`s`, `ns`, `ms`, `KiB`, `%`, `tps`, `/s`, or none).
        pub unit: &'static str,
        pub better: Better,
        /// One line saying what it measures.
        pub description: &'static str,
    }

    impl Info {
        /// True for a duration (its values are formatted as times, its changes as
        /// "faster"/"slower").
        pub fn is_time(&self) -> bool {
            to_seconds(self.unit).is_some()
        }
    }

    /// Seconds per unit for the time units.
    pub fn to_seconds(unit: &str) -> Option<f64> {
        match unit {
            "s" => Some(1.0),
            "ms" => Some(1e-3),
            "µs" => Some(1e-6),
            "ns" => Some(1e-9),
            _ => None,
        }
    }

    /// What `name` is. Harness metrics, counters and instruction-mode counts are listed;
    /// any other name is a metric a command reported itself, known by its name's ending:
    /// `_s`, `_ms`, `_us`, `_ns` are times, `_per_s`, `tps` and `qps` rates (higher is
    /// better); everything else is a lower-is-better number. An experiment can turn the
    /// direction around (`Settings::metric_info`).
    pub fn info(name: &str) -> Info {
        let lower = |unit, description| Info { unit, better: Better::Lower, description };
        let higher = |unit, description| Info { unit, better: Better::Higher, description };
        match name {
            WALL => lower("s", "wall-clock time of the run, from exec to exit"),
            CPU => lower("s", "user + system CPU time of the run"),
            USER => lower("s", "user CPU time of the run"),
            SYS => lower("s", "system CPU time of the run"),
            MAX_RSS => lower("KiB", "peak resident set size of the run's largest process (as GNU time reports it)"),
            MINOR_FAULTS => lower("", "minor page faults"),
            MAJOR_FAULTS => lower("", "major page faults"),
            VOLUNTARY_CS => lower("", "voluntary context switches (waits)"),
            INVOLUNTARY_CS => lower("", "involuntary context switches (preemptions)"),
            RUNQ_WAIT => lower("s", "time the run was ready to run but waited for a CPU (behind anything)"),
            NEIGHBOUR_WAIT => lower("s", "the part of the run-queue wait a task outside the benchmark caused"),
            UNCONTENDED => lower("s", "wall time minus the neighbours' wait: what the run took without them"),
            "task-clock" | "cpu-clock" => lower("ns", "CPU time counted by the kernel"),
            "estimated_cycles" => lower(
                "",
                "L1 hits + 5·LL hits + 35·RAM accesses + 15·mispredicted branches in cachegrind's simulation: a model, not a measurement",
            ),
            "branch-miss-rate" => lower("%", "branch misses per branch"),
            "cache-miss-rate" => lower("%", "cache misses per cache reference"),
            "L1-dcache-miss-rate" => lower("%", "L1 data cache load misses per load"),
            "LLC-miss-rate" => lower("%", "last-level cache load misses per load"),
            "ipc" => higher("", "instructions per cycle"),
            // A group of iterations (`iter_ns[first]`) reads like its metric.
            _ if super::ITERATION_GROUPS.iter().any(|g| name.ends_with(&format!("[{g}]"))) => {
                info(&name[..name.rfind('[').expect("a group suffix")])
            }
            // perf's modifiers (`cycles:u`, `ipc:u`) keep the event's unit and direction.
            _ => match name.rsplit_once(':') {
                Some((base, mods))
                    if !base.contains(':') && !mods.is_empty() && mods.chars().all(|c| "ukhp".contains(c)) =>
                {
                    info(base)
                }
                _ => self_reported(name),
            },
        }
    }

    fn self_reported(name: &str) -> Info {
        const DESCRIPTION: &str = "reported by the command itself";
        let rate = Info { unit: "/s", better: Better::Higher, description: DESCRIPTION };
        let time = |unit| Info { unit, better: Better::Lower, description: DESCRIPTION };
        let lower = name.to_ascii_lowercase();
        if lower.ends_with("_per_s") {
            rate
        } else if lower == "tps" || lower == "qps" || lower.ends_with("_tps") || lower.ends_with("_qps") {
            Info { unit: if lower.ends_with("qps") { "qps" } else { "tps" }, ..rate }
        } else if lower.ends_with("_ns") {
            time("ns")
        } else if lower.ends_with("_us") {
            time("µs")
        } else if lower.ends_with("_ms") {
            time("ms")
        } else if lower.ends_with("_s") {
            time("s")
        } else {
            Info { unit: "", better: Better::Lower, description: "a count: a counter, or a number the command printed" }
        }
    }

    /// Unit shown next to a metric's values.
    pub fn unit(name: &str) -> &'static str {
        info(name).unit
    }
}

/// A command as the user gave it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CommandSpec {
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
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

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

pub fn signal_name(sig: i32) -> &'static str {
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
    pub fn value(value: f64, scaled: bool) -> Self {
        CounterReading { supported: true, value: Some(value), scaled, reason: None, samples: Vec::new() }
    }
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
    pub kept: Vec<f64>,
    pub count: u64,
    sum: f64,
    /// Neumaier's compensation term of `sum`.
    compensation: f64,
}

impl Printed {
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
}

/// The suffixes of the per-group metrics `--iterations each` adds.
pub const ITERATION_GROUPS: [&str; 2] = ["first", "steady"];

impl Iterations {
    /// The choices as the command line and suite files spell them.
    pub const NAMES: [&'static str; 4] = ["all", "first", "steady", "each"];

    /// `all`, `first` (the first `warmup` iterations), `steady` (leaving them out) or
    /// `each` (all, with a verdict per group).
    pub fn named(name: &str, warmup: u32) -> Result<Iterations, ParseError> {
        // The first and steady means need the first `warmup` values, which are kept.
        if warmup as usize > SAMPLES_KEPT {
            return Err(ParseError::TooManyWarmupIterations(warmup));
        }
        match name {
            "all" => Ok(Iterations::All),
            "steady" => Ok(Iterations::Steady(warmup)),
            "first" => Ok(Iterations::First(warmup)),
            "each" => Ok(Iterations::Each(warmup)),
            other => Err(ParseError::Iterations(other.to_string())),
        }
    }

    pub fn is_all(&self) -> bool {
        *self == Iterations::All
    }

    /// The iterations (0-based, end exclusive; None: to the last) that make the value.
    fn kept(&self) -> (usize, Option<usize>) {
        match *self {
            Iterations::All | Iterations::Each(_) => (0, None),
            Iterations::Steady(skip) => (skip as usize, None),
            Iterations::First(n) => (0, Some(n as usize)),
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
                _ => NoValue::NothingPrinted,
            });
        }
        Ok(kept.iter().sum::<f64>() / kept.len() as f64)
    }

    /// [`Iterations::aggregate`] of every value printed, of which the first
    /// [`SAMPLES_KEPT`] are kept (warm-up counts are at most that, see [`Iterations::named`]).
    pub fn aggregate_printed(&self, printed: &Printed) -> Result<f64, NoValue> {
        if !printed.capped() {
            return self.aggregate(&printed.kept);
        }
        let first = |n: usize| printed.kept[..n.min(printed.kept.len())].iter().sum::<f64>();
        Ok(match *self {
            Iterations::All | Iterations::Each(_) => printed.sum() / printed.count as f64,
            Iterations::Steady(skip) => (printed.sum() - first(skip as usize)) / (printed.count - skip as u64) as f64,
            Iterations::First(n) => first(n as usize) / n as f64,
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
        }
    }
}

/// `NAME[group]`: a per-iteration-group metric of `--iterations each`.
pub fn group_metric(name: &str, group: &str) -> String {
    format!("{name}[{group}]")
}

/// One execution of one command: the unit of replication.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Run {
    /// Round number, 0-based, counting measured rounds only.
    pub round: u32,
    /// Position of this command within its round's random order.
    pub position: u32,
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub max_rss_kib: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub voluntary_cs: u64,
    pub involuntary_cs: u64,
    #[serde(flatten)]
    pub exit: ExitInfo,
    /// Bytes of random environment padding used in this round.
    pub env_pad_bytes: u32,
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
        use metric::*;
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

/// Descriptive statistics of one metric over one command's runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    pub stddev: f64,
    /// Median absolute deviation, scaled by 1.4826 to estimate σ under normality.
    pub mad: f64,
    pub min: f64,
    pub max: f64,
    /// Runs further than 3.5 scaled MADs from the median.
    pub outliers: usize,
    /// 95 % order-statistic interval of the median (None when n is too small).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_ci: Option<(f64, f64)>,
}

/// All runs of one command, with summaries per metric.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CommandResult {
    pub name: String,
    pub argv: Vec<String>,
    pub command_line: String,
    /// The `-L`/`-P` parameter values this command was made with, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    pub runs: Vec<Run>,
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

/// The verdict of a comparison, in the metric's direction: `slower` means worse (a
/// larger time, fewer transactions per second), `faster` better.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Faster,
    Slower,
    Equivalent,
    Inconclusive,
    /// No ratio exists: the metric is missing in one command, or ≤ 0 in every paired
    /// round (the comparison's first flag says which).
    #[serde(rename = "not_comparable")]
    NotComparable,
}

impl Verdict {
    pub fn is_decided(self) -> bool {
        !matches!(self, Verdict::Inconclusive | Verdict::NotComparable)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotComparable => "not_comparable",
        }
    }
}

/// Candidate versus baseline on one metric.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    pub metric: String,
    /// Which way the metric improves: `lower` (times, counts; a ratio above 1 is worse)
    /// or `higher` (throughput; a ratio above 1 is better). The verdict follows it.
    #[serde(default, skip_serializing_if = "metric::Better::is_lower")]
    pub better: metric::Better,
    /// candidate / baseline; > 1 means the candidate's value is larger.
    #[serde(deserialize_with = "null_as_nan")]
    pub ratio: f64,
    pub ci_low: f64,
    /// Infinite (written as null) when no interval exists yet.
    #[serde(deserialize_with = "null_as_infinity")]
    pub ci_high: f64,
    /// Nominal (family-wise, sequentially valid) confidence of the interval.
    pub confidence: f64,
    /// The per-look level actually used for this interval (see docs/statistics.md).
    pub look_confidence: f64,
    /// Two-sided Wilcoxon signed-rank p-value of the paired log ratios; NaN (written as
    /// null) when there is no test (one run each).
    #[serde(deserialize_with = "null_as_nan")]
    pub p_value: f64,
    pub verdict: Verdict,
    /// True for a `slower`/`faster` verdict whose whole CI lies within ±threshold.
    pub below_threshold: bool,
    /// Number of paired rounds used.
    pub n: usize,
    /// Notes such as the count-vs-time cross-check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Function by function, why (`compare --explain`; the primary metric's comparisons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Box<Explanation>>,
}

impl Comparison {
    /// A decided wall-time regression, ×1.025 [1.021, 1.029] over 40 rounds, for tests
    /// of what shows a comparison.
    #[cfg(test)]
    pub fn example_slower(baseline: &str, candidate: &str) -> Comparison {
        Comparison {
            baseline: baseline.into(),
            candidate: candidate.into(),
            metric: metric::WALL.into(),
            better: metric::Better::Lower,
            ratio: 1.025,
            ci_low: 1.021,
            ci_high: 1.029,
            confidence: 0.95,
            look_confidence: 0.95,
            p_value: 0.001,
            verdict: Verdict::Slower,
            below_threshold: false,
            n: 40,
            flags: vec![],
            explanation: None,
        }
    }

    /// The bounds a gate checks: the interval, or for one run each of a deterministic
    /// count (decided, no interval) the exact ratio itself.
    pub fn bounds(&self) -> (f64, f64) {
        if self.n == 1 && !self.ci_high.is_finite() && self.verdict.is_decided() {
            (self.ratio, self.ratio)
        } else {
            (self.ci_low, self.ci_high)
        }
    }

    /// The interval as `[lo – hi]` with `decimals`, or what stands instead of it.
    pub fn interval_text(&self, decimals: usize) -> String {
        if self.ci_high.is_finite() {
            format!("[{:.decimals$} – {:.decimals$}]", self.ci_low, self.ci_high)
        } else if self.n == 1 {
            "(one run each: no interval)".to_string()
        } else {
            "(too few rounds for an interval)".to_string()
        }
    }
}

/// JSON has no NaN or infinity: serde_json writes them as null; read null back.
fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

fn null_as_infinity<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

/// Where and on what the measurement ran; compared before results are mixed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Machine {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    pub pmu: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtualization: Option<String>,
    // Added with the fleet; absent (None) in older records, and left out of the JSON when
    // unknown so an older record's fingerprint does not change.
    /// The name an operator gave this machine (`PERFLAB_MACHINE_ID`, `perflab agent
    /// --machine-id`): look-alike machines stay apart, and one host can pose as several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// CPU microcode revision: an update (e.g. a speculation fix) can change performance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microcode: Option<String>,
    /// Turbo/boost enabled; None when the system does not say (most VMs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<bool>,
    /// Simultaneous multithreading (hyper-threading) active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt: Option<bool>,
    /// Installed memory the kernel manages (MemTotal), MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
}

/// What a warning is about, for programs reading the JSON.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// Runs so short that process creation is a sizeable part of them.
    ShortRun,
    /// A command's times shifted during the measurement (change points).
    Unstable,
    /// High round-to-round spread of the paired ratio.
    Noisy,
    /// The machine was busy: runs waited for a CPU (and which metric decided).
    Busy,
    /// A metric gave no ratio (missing on a side, ≤ 0), or some of its rounds were
    /// skipped for that reason.
    NotComparable,
    /// Runs that failed were kept (`--ignore-failure`): how many, and how they ended.
    Failures,
    /// What a metric covers and what it leaves out (the client's CPU, not the server's).
    Scope,
    /// Something about importing (missing fields in the source, ...).
    Import,
    /// A requested counter (or printed metric) no run could read, and why.
    Unsupported,
    /// A warning of an older file, read back as text.
    Other,
}

/// Something about the measurement the reader should know; the message says it whole.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Warning {
    pub kind: WarningKind,
    pub message: String,
}

impl Warning {
    pub fn new(kind: WarningKind, message: impl Into<String>) -> Warning {
        Warning { kind, message: message.into() }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Schema 1 wrote warnings as plain strings; both forms are read.
impl<'de> Deserialize<'de> for Warning {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Warning, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Typed { kind: WarningKind, message: String },
            Text(String),
        }
        Ok(match Either::deserialize(d)? {
            Either::Typed { kind, message } => Warning { kind, message },
            Either::Text(message) => Warning { kind: WarningKind::Other, message },
        })
    }
}

/// Why the experiment stopped.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every comparison reached a verdict.
    Decided,
    /// `--rounds N` were run.
    FixedRounds,
    MaxRounds,
    MaxTime,
    /// The rounds the sequential design planned for the limits were run (rounds went
    /// faster than the first ones): α is spent.
    PlannedRounds,
    Interrupted,
    CommandFailed,
}

/// How the looks of a sequential experiment spend the error rate α (docs/statistics.md).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LookDesign {
    /// α/(k(k+1)) at the k-th look, over any number of looks (the union bound); what
    /// perflab used before group-sequential boundaries, and what files without the
    /// field were measured with.
    UnionBound,
    /// Lan–DeMets group-sequential boundaries with Pocock-type spending over the rounds
    /// that fit in the limits.
    Pocock,
    /// The same spending α evenly over the doublings of the rounds, from `--min-rounds`
    /// to the horizon.
    Logarithmic,
}

impl LookDesign {
    fn before_group_sequential() -> LookDesign {
        LookDesign::UnionBound
    }
}

/// How runs are measured: natively timed, or under valgrind cachegrind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Wall,
    Instructions,
}

impl Mode {
    /// Every mode's name, as the command line and suite files spell it.
    pub const NAMES: [&'static str; 2] = ["wall", "instructions"];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Wall => "wall",
            Mode::Instructions => "instructions",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Mode, ParseError> {
        match s {
            "wall" => Ok(Mode::Wall),
            "instructions" => Ok(Mode::Instructions),
            other => Err(ParseError::Mode(other.to_string())),
        }
    }
}

/// The settings an experiment ran with (recorded so results can be reproduced).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Settings {
    pub seed: u64,
    pub warmup_rounds: u32,
    pub min_rounds: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_rounds: Option<u32>,
    pub max_rounds: u32,
    pub max_time_s: f64,
    /// Equivalence margin as a fraction (0.01 = 1 %).
    pub threshold: f64,
    pub confidence: f64,
    /// How sequential looks spend α (not used with `fixed_rounds`).
    #[serde(default = "LookDesign::before_group_sequential")]
    pub looks: LookDesign,
    pub env_padding: bool,
    pub mode: Mode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// Metrics whose direction the user set (`--higher-is-better`, `--lower-is-better`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub better: BTreeMap<String, metric::Better>,
    /// Which per-iteration samples of a self-reported metric make a run's value.
    #[serde(default, skip_serializing_if = "Iterations::is_all")]
    pub iterations: Iterations,
    /// How the metrics the commands print were read (`pgbench`, `regex:…`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_parsers: Vec<String>,
    /// Commands run around each measured command, one entry per command (empty: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Hooks>,
    /// The file every run read as its standard input (`--input`; default /dev/null).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// `--max-time` was given with `--rounds`: the time limit holds too (`--rounds
    /// 2147483648 --max-time 2s` ran until killed). Without it, exactly N rounds run
    /// however long they take. Not recorded: the stop reason says which limit ended it.
    #[serde(skip)]
    pub max_time_bounds_fixed_rounds: bool,
}

/// Shell commands run around one measured command, never timed: to restart a server,
/// drop caches or reset state (hyperfine's `--prepare`, `--conclude`, `--setup`,
/// `--cleanup`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Hooks {
    /// Before every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare: Option<String>,
    /// After every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conclude: Option<String>,
    /// Once, before the first round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// Once, after the last round (also after a failure or an interrupt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<String>,
}

impl Hooks {
    pub fn is_empty(&self) -> bool {
        *self == Hooks::default()
    }

    /// Every hook rewritten by `f` (placeholders substituted).
    pub fn map(&self, f: impl Fn(&str) -> String) -> Hooks {
        let each = |hook: &Option<String>| hook.as_deref().map(&f);
        Hooks {
            prepare: each(&self.prepare),
            conclude: each(&self.conclude),
            setup: each(&self.setup),
            cleanup: each(&self.cleanup),
        }
    }
}

impl Settings {
    /// What `name` is in this experiment: the registry's [`metric::info`], with the
    /// direction the user set.
    pub fn metric_info(&self, name: &str) -> metric::Info {
        let info = metric::info(name);
        metric::Info { better: self.better.get(name).copied().unwrap_or(info.better), ..info }
    }
}

impl Default for Settings {
    /// The documented defaults of `perflab compare` and `perflab run` (shown by their `--help`).
    fn default() -> Self {
        Settings {
            seed: 0,
            warmup_rounds: 1,
            min_rounds: 6,
            fixed_rounds: None,
            max_rounds: 10_000,
            max_time_s: 60.0,
            threshold: 0.01,
            confidence: 0.95,
            looks: LookDesign::Logarithmic,
            env_padding: true,
            mode: Mode::Wall,
            timeout_s: None,
            better: BTreeMap::new(),
            iterations: Iterations::All,
            output_parsers: Vec::new(),
            hooks: Vec::new(),
            input: None,
            max_time_bounds_fixed_rounds: false,
        }
    }
}

/// Why a candidate differs from its baseline, function by function (`compare --explain`):
/// each function's time per run in both commands from the samples of the very runs that
/// were compared, the ratio with an interval, a verdict and its contribution to the total
/// change (docs/statistics.md, "Explanations").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Explanation {
    pub baseline: String,
    pub candidate: String,
    /// What was sampled (`cpu-clock`, …) or, in instruction mode, counted (`instructions`).
    pub event: String,
    /// `sampled` (per-run samples across the rounds, intervals) or `exact` (one
    /// cachegrind run per build: exact counts, no interval needed).
    pub method: String,
    /// Unit of the per-run values and contributions: `ms` for clock events, else the
    /// event's counts.
    pub unit: String,
    /// Rounds in which both commands' runs were sampled.
    pub rounds: usize,
    /// Mean samples per run, baseline and candidate.
    pub samples_per_run: (f64, f64),
    /// The family-wise confidence of the function intervals together.
    pub confidence: f64,
    /// The level of each function's interval (Bonferroni over the functions tested and
    /// the candidates, at the final look's level).
    #[serde(deserialize_with = "null_as_nan")]
    pub function_level: f64,
    /// Functions tested (each its own row; the rest are summed into `[other functions]`).
    pub tested: usize,
    /// The equivalence margin of the verdicts, a fraction of the baseline's total per run.
    #[serde(deserialize_with = "null_as_nan")]
    pub threshold: f64,
    /// Every sample: the total the contributions add up to.
    pub total: FunctionChange,
    /// Tested functions by |contribution|, then `[other functions]` when there are others.
    pub functions: Vec<FunctionChange>,
    /// No function that was not flagged changed by more than this share of its own time
    /// (the widest interval bound among unflagged functions holding ≥ 5 % of the time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unflagged_within: Option<f64>,
    /// …nor by more than this much per run (the widest contribution bound of the
    /// unflagged rows, `[other functions]` included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unflagged_contribution_within: Option<f64>,
    /// The primary metric's change per run (mean paired difference, in `unit` when it is
    /// a time) with its interval, to check that the samples account for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_change: Option<Change>,
    /// A differential flame graph coloured by the verdicts (SVG), when stacks were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flame_graph: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// An estimate with its interval (None: unbounded, or no interval with so few rounds).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Change {
    #[serde(deserialize_with = "null_as_nan")]
    pub estimate: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

impl Change {
    /// True when the interval excludes 0.
    pub fn excludes_zero(&self) -> bool {
        self.low.is_some_and(|l| l > 0.0) || self.high.is_some_and(|h| h < 0.0)
    }
}

/// One function's change between baseline and candidate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionChange {
    pub name: String,
    /// Object basename (`[command]` for the compared programs' own code).
    pub object: String,
    /// Mean time (or events) per run in it: baseline, candidate.
    #[serde(deserialize_with = "null_as_nan")]
    pub baseline_per_run: f64,
    #[serde(deserialize_with = "null_as_nan")]
    pub candidate_per_run: f64,
    /// Mean samples per run in it: baseline, candidate.
    #[serde(deserialize_with = "null_as_nan")]
    pub baseline_samples: f64,
    #[serde(deserialize_with = "null_as_nan")]
    pub candidate_samples: f64,
    /// candidate / baseline of the means; None when the baseline never ran it.
    pub ratio: Option<f64>,
    /// Fieller's interval of the ratio; None when unbounded (or too few rounds).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Verdict,
    /// A `slower`/`faster` function whose whole contribution interval lies within
    /// ±threshold of the baseline's total: real, but too small to matter.
    pub below_threshold: bool,
    /// candidate − baseline per run (in `unit`), with its interval: what this function
    /// adds to the total change. The rows' estimates add up to the total's.
    pub contribution: Change,
    /// contribution / total change, with Fieller's interval; None when the total change
    /// cannot be told from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<Change>,
    /// The change (a fraction of its time) flagged in 80 % of experiments like this one:
    /// how small a change these rounds resolve for this function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
    /// Paired t-test p-value of no change.
    #[serde(deserialize_with = "null_as_nan")]
    pub p_value: f64,
    /// Per-function counts beside the samples (instruction mode: instructions, branch
    /// mispredictions, cache misses): metric → (baseline, candidate) per run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, (f64, f64)>,
}

/// What a machine resolves for one command: its round-to-round noise measured by an A/A
/// experiment (`perflab doctor CMD`), stored with the machine fingerprint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    pub measured_at: String,
    pub command_line: String,
    /// The metric compare would decide on (`uncontended_s` on a busy machine).
    pub metric: String,
    pub rounds: u32,
    /// Seconds per round (both runs and the harness).
    pub round_s: f64,
    /// Robust σ (scaled MAD) of the paired log ratio.
    pub paired_sigma: f64,
    /// Share of wall time the runs waited for a CPU (None when not measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_share: Option<f64>,
    /// What a comparison resolves in 10, 30 and 60 s.
    pub resolution: Vec<Resolution>,
}

/// What a comparison of a calibrated noise resolves within a time budget.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Resolution {
    pub budget_s: f64,
    pub rounds: u32,
    /// Half-width of the interval at the last look (as a fraction): a `--threshold`
    /// below it can hardly be confirmed as `equivalent`. None when no look is possible.
    pub equivalence_margin: Option<f64>,
    /// The effect (a fraction) detected in 80 % of comparisons by then.
    pub detectable_effect: Option<f64>,
}

/// Everything one `compare` (or `stat`, or one suite benchmark) produced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Experiment {
    pub schema_version: u32,
    pub perflab_version: String,
    pub started_at: String,
    pub machine: Machine,
    pub settings: Settings,
    /// Measured rounds completed (warm-up excluded).
    pub rounds: u32,
    /// Wall-clock seconds the whole experiment took, warm-up included.
    #[serde(default)]
    pub duration_s: f64,
    pub stop_reason: StopReason,
    /// The metric whose verdicts decided when to stop (`wall_s` unless another was
    /// asked for, the commands print their own, or `uncontended_s` when the machine was busy).
    #[serde(default = "default_primary_metric")]
    pub primary_metric: String,
    pub commands: Vec<CommandResult>,
    pub comparisons: Vec<Comparison>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// Why a benchmarked command stopped the experiment (stop_reason `command_failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Extra facts about the environment that can shift results (valgrind version, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment: BTreeMap<String, String>,
    /// Builds as a factorial design (`-L cc gcc,clang -L disp switch,threaded`): each
    /// build's value, the main effect of every factor and, on request, every pairwise ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<DesignAnalysis>,
}

/// A factor of a design: a parameter and its levels, the first being the reference.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Factor {
    pub name: String,
    pub levels: Vec<String>,
}

/// Which commands form a factorial design, and how: `cells[i]` holds command i's level
/// (an index into each factor's levels).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Design {
    pub factors: Vec<Factor>,
    pub cells: Vec<Vec<usize>>,
    /// Also compare every pair of builds (not only main effects).
    pub pairwise: bool,
}

/// One build of a design: its levels and its median on the design's metric.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DesignCell {
    pub command: String,
    pub levels: Vec<String>,
    #[serde(deserialize_with = "null_as_nan")]
    pub median: f64,
}

/// What a design's runs say on one metric (docs/statistics.md, "Builds as a design").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DesignAnalysis {
    pub metric: String,
    pub factors: Vec<Factor>,
    pub cells: Vec<DesignCell>,
    /// Main effects: for each factor, each level against the first (`cc=gcc` → `cc=clang`),
    /// averaged over the other factors' levels, paired by round. Bonferroni-corrected over
    /// every main-effect contrast (`look_confidence` is the level used).
    pub effects: Vec<Comparison>,
    /// Every pair of builds (on request), Bonferroni-corrected over the pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairwise: Vec<Comparison>,
}

fn default_primary_metric() -> String {
    metric::WALL.to_string()
}

impl Default for Experiment {
    /// An experiment of this perflab version that has not run a round yet (its
    /// `stop_reason` is set when it ends).
    fn default() -> Self {
        Experiment {
            schema_version: SCHEMA_VERSION,
            perflab_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: String::new(),
            machine: Machine::default(),
            settings: Settings::default(),
            rounds: 0,
            duration_s: 0.0,
            stop_reason: StopReason::Decided,
            primary_metric: default_primary_metric(),
            commands: Vec::new(),
            comparisons: Vec::new(),
            warnings: Vec::new(),
            failure: None,
            environment: BTreeMap::new(),
            design: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_is_the_harness_field_or_contention_reading_or_measured() {
        use metric::{kind, Kind};
        assert_eq!(kind(metric::WALL), Kind::Field);
        assert_eq!(kind(metric::MAX_RSS), Kind::Field);
        assert_eq!(kind(metric::UNCONTENDED), Kind::Contention);
        for measured in ["instructions", "cycles:u", "tps", "iter_ns[first]"] {
            assert_eq!(kind(measured), Kind::Measured, "{measured}");
        }
        assert!(Kind::Contention.is_harness() && !Kind::Measured.is_harness());
    }

    #[test]
    fn a_comparison_without_interval_round_trips_through_json() {
        let c = Comparison {
            baseline: "A".into(),
            candidate: "B".into(),
            metric: metric::WALL.into(),
            better: metric::Better::Lower,
            ratio: f64::NAN,
            ci_low: 0.0,
            ci_high: f64::INFINITY,
            confidence: 0.95,
            look_confidence: 0.975,
            p_value: 1.0,
            verdict: Verdict::Inconclusive,
            below_threshold: false,
            n: 0,
            flags: vec![],
            explanation: None,
        };
        let text = serde_json::to_string(&c).unwrap();
        assert!(text.contains("\"ci_high\":null") && text.contains("\"ratio\":null"), "{text}");
        let back: Comparison = serde_json::from_str(&text).unwrap();
        assert!(back.ratio.is_nan() && back.ci_high == f64::INFINITY);
    }

    #[test]
    fn warnings_are_typed_and_old_plain_ones_still_read() {
        let w = Warning::new(WarningKind::Noisy, "noisy: b vs a");
        let text = serde_json::to_string(&w).unwrap();
        assert_eq!(text, r#"{"kind":"noisy","message":"noisy: b vs a"}"#);
        assert_eq!(serde_json::from_str::<Warning>(&text).unwrap(), w);
        let old: Warning = serde_json::from_str(r#""an old warning""#).unwrap();
        assert_eq!((old.kind, old.message.as_str()), (WarningKind::Other, "an old warning"));
    }

    #[test]
    fn the_registry_knows_units_and_directions_and_settings_can_turn_them() {
        use metric::{info, Better};
        assert_eq!((info(metric::WALL).unit, info(metric::WALL).better), ("s", Better::Lower));
        assert_eq!(info("ipc").better, Better::Higher);
        // Self-reported metrics are known by their names' endings.
        assert_eq!((info("tps").unit, info("tps").better), ("tps", Better::Higher));
        assert_eq!((info("rows_per_s").unit, info("rows_per_s").better), ("/s", Better::Higher));
        assert_eq!((info("exec_ms").unit, info("exec_ms").better), ("ms", Better::Lower));
        assert!(info("iter_ns").is_time() && !info("instructions").is_time());
        assert_eq!((info("score").unit, info("score").better), ("", Better::Lower));
        let mut settings = Settings::default();
        settings.better.insert("score".into(), Better::Higher);
        assert_eq!(settings.metric_info("score").better, Better::Higher);
        assert_eq!(settings.metric_info("tps").better, Better::Higher);
    }

    #[test]
    fn iterations_aggregate_all_or_the_steady_state() {
        let samples = [4.0, 1.0, 1.0, 2.0];
        assert_eq!(Iterations::All.aggregate(&samples), Ok(2.0));
        assert_eq!(Iterations::Steady(1).aggregate(&samples), Ok(4.0 / 3.0));
        let err = Iterations::Steady(4).aggregate(&samples).unwrap_err().to_string();
        assert!(err.contains("leaves out the first 4") && err.contains("only 4"), "{err}");
        assert!(Iterations::All.aggregate(&[]).is_err());
        let reading = CounterReading::sampled(samples.to_vec(), Iterations::All).unwrap();
        assert_eq!((reading.value, reading.samples.len()), (Some(2.0), 4));
        assert_eq!(serde_json::to_string(&Iterations::Steady(2)).unwrap(), r#"{"steady":2}"#);
        assert_eq!(serde_json::to_string(&Iterations::All).unwrap(), r#""all""#);
    }

    #[test]
    fn the_metric_registry_knows_the_contention_metrics() {
        use metric::{info, Better};
        for name in metric::CONTENTION {
            assert_eq!((info(name).unit, info(name).better), ("s", Better::Lower), "{name}");
            assert!(!info(name).description.contains("reported by the command"), "{name} is the harness's");
        }
    }

    #[test]
    fn run_metrics_cover_harness_fields_and_counters() {
        let mut run = Run { wall_s: 2.0, user_s: 0.5, sys_s: 0.25, max_rss_kib: 10, ..Default::default() };
        run.counters.insert("instructions".into(), CounterReading::value(1e9, false));
        run.counters.insert("cycles".into(), CounterReading::unsupported("no PMU"));
        assert_eq!(run.metric(metric::CPU), Some(0.75));
        assert_eq!(run.metric(metric::MAX_RSS), Some(10.0));
        assert_eq!(run.metric("instructions"), Some(1e9));
        assert_eq!(run.metric("cycles"), None, "an unsupported counter has no value, never a zero");
        assert_eq!(run.metric("unknown"), None);
    }
}
