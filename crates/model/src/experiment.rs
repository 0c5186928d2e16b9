//! An experiment as a whole: the machine, settings, warnings, why it stopped, factorial
//! designs and a machine's calibration.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::{metric, null_as_nan, CommandResult, Comparison, Iterations, ParseError, SCHEMA_VERSION};

/// Where and on what the measurement ran; compared before results are mixed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Machine {
    /// The host's name (/proc/sys/kernel/hostname).
    pub hostname: String,
    /// The CPU's model name, as /proc/cpuinfo gives it.
    pub cpu_model: String,
    /// CPUs this process may run on (its affinity mask).
    pub cores: usize,
    /// Kernel release (/proc/sys/kernel/osrelease).
    pub kernel: String,
    /// CPU 0's cpufreq scaling governor; None when the system has no cpufreq (most VMs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    /// True when the kernel exposes a core PMU (hardware performance counters).
    pub pmu: bool,
    /// The hypervisor's vendor (DMI `sys_vendor`) in a virtual machine; None on bare metal.
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

impl Machine {
    /// Short stable fingerprint: every field counts, since any of them (even the
    /// hostname, on identical cloud types) can shift results.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        // serde_json of a plain struct cannot fail.
        let json = serde_json::to_string(self).unwrap_or_default();
        let digest = Sha256::digest(json.as_bytes());
        digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
    }

    /// One line naming the machine for people: `[id on] host (CPU, N cores, kernel) [fingerprint]`.
    pub fn describe(&self, fingerprint: &str) -> String {
        let id = self.id.as_deref().map(|id| format!("{id} on ")).unwrap_or_default();
        format!(
            "{id}{} ({}, {} cores, Linux {}) [{}]",
            self.hostname, self.cpu_model, self.cores, self.kernel, fingerprint
        )
    }
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
    /// The compared commands run byte-identical executables from two different files,
    /// whose speed can differ by where their pages came from.
    SeparateCopies,
    /// A warning of an older file, read back as text.
    Other,
}

/// Something about the measurement the reader should know; the message says it whole.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Warning {
    /// What the warning is about.
    pub kind: WarningKind,
    /// The whole warning, one line for people.
    pub message: String,
}

impl Warning {
    /// A warning of `kind` saying `message`.
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
    /// `--max-rounds` was reached before every comparison was decided.
    MaxRounds,
    /// `--max-time` ran out before every comparison was decided.
    MaxTime,
    /// The rounds the sequential design planned for the limits were run (rounds went
    /// faster than the first ones): α is spent.
    PlannedRounds,
    /// Versions in several layouts (`--layouts N`): every undecided comparison's interval
    /// is set by how much the layouts differ, which more rounds cannot narrow.
    LayoutLimited,
    /// `--layouts auto`: `--max-layouts` pairs of layouts were measured without a verdict.
    MaxLayouts,
    /// The user interrupted it (Ctrl-C); the rounds measured so far are kept.
    Interrupted,
    /// A benchmarked command failed (`failure` says which and how).
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
    /// to the horizon (the default until issue #41).
    Logarithmic,
    /// The logarithmic spending's share raised to the power 0.7: more of α in the first
    /// doublings, where most comparisons decide, less in the last ones (the default since
    /// issue #41; docs/statistics.md, *What the looks cost*).
    LogarithmicFront,
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
    /// Native runs, timed by the clock (and the kernel's resource usage).
    #[default]
    Wall,
    /// Each run under valgrind cachegrind: instruction counts, deterministic.
    Instructions,
}

impl Mode {
    /// Every mode's name, as the command line and suite files spell it.
    pub const NAMES: [&'static str; 2] = ["wall", "instructions"];

    /// The mode as the command line and suite files spell it.
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
    /// Seed of the round order's randomization.
    pub seed: u64,
    /// Rounds run first and discarded.
    pub warmup_rounds: u32,
    /// Measured rounds before the first look at the verdicts.
    pub min_rounds: u32,
    /// `--rounds N`: exactly N rounds, no sequential stopping; None: stop when decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_rounds: Option<u32>,
    /// Most measured rounds.
    pub max_rounds: u32,
    /// Time limit of the measurement, seconds.
    pub max_time_s: f64,
    /// Equivalence margin as a fraction (0.01 = 1 %).
    pub threshold: f64,
    /// Nominal confidence of the intervals (0.95 = 95 %), family-wise over the looks.
    pub confidence: f64,
    /// How sequential looks spend α (not used with `fixed_rounds`).
    #[serde(default = "LookDesign::before_group_sequential")]
    pub looks: LookDesign,
    /// True when each round adds an environment variable of random length (the same for its
    /// commands), so stack-alignment effects average out instead of favouring one build.
    pub env_padding: bool,
    /// How runs are measured.
    pub mode: Mode,
    /// Seconds after which a run is killed (and counts as failed); None: no limit.
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
    /// The estimator asked for (`--estimator NAME`); None: Hodges–Lehmann, or the choice
    /// by the rounds' shape with `estimator_by_shape`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimator: Option<crate::Estimator>,
    /// The looks choose the estimator from the rounds' shape (`--estimator auto`, the
    /// default since it was validated on the noise library: docs/statistics.md). False in
    /// experiments stored before it was, which used Hodges–Lehmann throughout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimator_by_shape: bool,
    /// A deadline (`--budget`): `max_time_s` is it, and the first look says what it can resolve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
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
    /// True when no hook is set.
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
            looks: LookDesign::LogarithmicFront,
            env_padding: true,
            mode: Mode::Wall,
            timeout_s: None,
            better: BTreeMap::new(),
            iterations: Iterations::All,
            output_parsers: Vec::new(),
            hooks: Vec::new(),
            input: None,
            max_time_bounds_fixed_rounds: false,
            estimator: None,
            estimator_by_shape: true,
            budget_s: None,
        }
    }
}

/// What a machine resolves for one command: its round-to-round noise measured by an A/A
/// experiment (`perflab doctor CMD`), stored with the machine fingerprint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// When the calibration ran (RFC 3339).
    pub measured_at: String,
    /// The command calibrated, as typed.
    pub command_line: String,
    /// The metric compare would decide on (`uncontended_s` on a busy machine).
    pub metric: String,
    /// A/A rounds measured.
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
    /// The time budget, seconds.
    pub budget_s: f64,
    /// Rounds that fit in it.
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
    /// [`SCHEMA_VERSION`] of the perflab that wrote it.
    pub schema_version: u32,
    /// Version of the perflab that measured it.
    pub perflab_version: String,
    /// When the experiment started (RFC 3339).
    pub started_at: String,
    /// Where it ran.
    pub machine: Machine,
    /// What it ran with.
    pub settings: Settings,
    /// Measured rounds completed (warm-up excluded).
    pub rounds: u32,
    /// Wall-clock seconds the whole experiment took, warm-up included.
    #[serde(default)]
    pub duration_s: f64,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// The metric whose verdicts decided when to stop (`wall_s` unless another was
    /// asked for, the commands print their own, or `uncontended_s` when the machine was busy).
    #[serde(default = "default_primary_metric")]
    pub primary_metric: String,
    /// Each command's runs and summaries, in the order given.
    pub commands: Vec<CommandResult>,
    /// Every candidate against the baseline on every metric compared.
    pub comparisons: Vec<Comparison>,
    /// What the reader should know about the measurement.
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
    /// How the deciding comparisons were estimated (sequential experiments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimation: Option<crate::Estimation>,
    /// What `--budget` promised after the first look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promise: Option<crate::Promise>,
    /// What the comparisons a limit or an interrupt left undecided learned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learned: Vec<crate::Learned>,
    /// Builds measured in several code layouts each (`--layouts N`): how much layout
    /// alone moves each version; the comparisons are then between versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layouts: Option<crate::LayoutAnalysis>,
}

/// A factor of a design: a parameter and its levels, the first being the reference.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Factor {
    /// The parameter's name (`cc`).
    pub name: String,
    /// Its values (`gcc`, `clang`); the first is the reference.
    pub levels: Vec<String>,
}

/// Which commands form a factorial design, and how: `cells[i]` holds command i's level
/// (an index into each factor's levels).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Design {
    /// The factors, in the order given.
    pub factors: Vec<Factor>,
    /// Per command, its level index in each factor.
    pub cells: Vec<Vec<usize>>,
    /// Also compare every pair of builds (not only main effects).
    pub pairwise: bool,
}

/// One build of a design: its levels and its median on the design's metric.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DesignCell {
    /// The command's name.
    pub command: String,
    /// Its level of each factor, in the design's factor order.
    pub levels: Vec<String>,
    /// Median of the metric over its runs (NaN, written as null, when missing).
    #[serde(deserialize_with = "null_as_nan")]
    pub median: f64,
}

/// What a design's runs say on one metric (docs/statistics.md, "Builds as a design").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DesignAnalysis {
    /// The metric analysed.
    pub metric: String,
    /// The design's factors.
    pub factors: Vec<Factor>,
    /// Every build with its median.
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
            estimation: None,
            promise: None,
            learned: Vec::new(),
            layouts: None,
        }
    }
}
