//! Candidate versus baseline: verdicts, comparisons and their per-function explanations.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::{metric, null_as_infinity, null_as_nan};

/// The verdict of a comparison, in the metric's direction: `slower` means worse (a
/// larger time, fewer transactions per second), `faster` better.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The candidate is better by more than the threshold with the interval's confidence.
    Faster,
    /// The candidate is worse by more than the threshold with the interval's confidence.
    Slower,
    /// The whole interval lies within ±threshold of 1: no change that matters.
    Equivalent,
    /// The interval is too wide to decide (more rounds would be needed).
    Inconclusive,
    /// No ratio exists: the metric is missing in one command, or ≤ 0 in every paired
    /// round (the comparison's first flag says which).
    #[serde(rename = "not_comparable")]
    NotComparable,
}

impl Verdict {
    /// True for `faster`, `slower` and `equivalent`: the data settled the question.
    pub fn is_decided(self) -> bool {
        !matches!(self, Verdict::Inconclusive | Verdict::NotComparable)
    }
    /// The verdict as written in JSON and printed.
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
    /// Name of the baseline command.
    pub baseline: String,
    /// Name of the candidate command.
    pub candidate: String,
    /// The metric compared (`wall_s`, a counter's name, …; see [`metric`]).
    pub metric: String,
    /// Which way the metric improves: `lower` (times, counts; a ratio above 1 is worse)
    /// or `higher` (throughput; a ratio above 1 is better). The verdict follows it.
    #[serde(default, skip_serializing_if = "metric::Better::is_lower")]
    pub better: metric::Better,
    /// candidate / baseline; > 1 means the candidate's value is larger.
    #[serde(deserialize_with = "null_as_nan")]
    pub ratio: f64,
    /// Lower bound of the ratio's interval (0 when no interval exists yet).
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
    /// What the interval says, in the metric's direction.
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
    #[cfg(any(test, feature = "fixtures"))]
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

/// Why a candidate differs from its baseline, function by function (`compare --explain`):
/// each function's time per run in both commands from the samples of the very runs that
/// were compared, the ratio with an interval, a verdict and its contribution to the total
/// change (docs/statistics.md, "Explanations").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Explanation {
    /// Name of the baseline command.
    pub baseline: String,
    /// Name of the candidate command.
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
    /// Both commands' call stacks (folded, `caller;…;leaf`) with their mean time (or
    /// events) per run in `unit`, when stacks were sampled: what the differential flame
    /// graph is drawn from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks: Option<MeanStacks>,
    /// A flame graph drawn when the explanation was stored, by perflab versions that kept
    /// the picture instead of the stacks: read from old stores, never written.
    #[serde(default, rename = "flame_graph", skip_serializing)]
    pub stored_flame_graph: Option<String>,
    /// What `[other functions]` is made of: its largest members by |change| (samples
    /// per run in each command), so a change whose mass sits in that row is named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_members: Vec<OtherMember>,
    /// Doubts about the explanation (too few samples, unsymbolized code, …), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A function summed into `[other functions]` (too few samples for a row of its own).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OtherMember {
    /// Function name, demangled.
    pub name: String,
    /// Samples over all rounds: baseline, candidate.
    pub baseline_samples: f64,
    /// Samples over all rounds of the candidate.
    pub candidate_samples: f64,
}

/// Mean time (or events) per run of each folded call stack, for both commands.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MeanStacks {
    /// Baseline: folded stack → mean per run.
    pub baseline: BTreeMap<String, f64>,
    /// Candidate: folded stack → mean per run.
    pub candidate: BTreeMap<String, f64>,
}

/// An estimate with its interval (None: unbounded, or no interval with so few rounds).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Change {
    /// The point estimate (NaN, written as null, when there is none).
    #[serde(deserialize_with = "null_as_nan")]
    pub estimate: f64,
    /// Lower bound; None when unbounded or not computed.
    pub low: Option<f64>,
    /// Upper bound; None when unbounded or not computed.
    pub high: Option<f64>,
}

impl Change {
    /// True when the interval excludes 0.
    pub fn excludes_zero(&self) -> bool {
        self.low.is_some_and(|l| l > 0.0) || self.high.is_some_and(|h| h < 0.0)
    }
}

/// The row of an explanation that sums the functions not tested one by one.
pub const OTHER_FUNCTIONS: &str = "[other functions]";

/// One function's change between baseline and candidate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionChange {
    /// Function name, demangled.
    pub name: String,
    /// Object basename (`[command]` for the compared programs' own code).
    pub object: String,
    /// Mean time (or events) per run in it: baseline, candidate.
    #[serde(deserialize_with = "null_as_nan")]
    pub baseline_per_run: f64,
    /// Candidate's mean time (or events) per run in the function, in the explanation's `unit`.
    #[serde(deserialize_with = "null_as_nan")]
    pub candidate_per_run: f64,
    /// Mean samples per run in it: baseline, candidate.
    #[serde(deserialize_with = "null_as_nan")]
    pub baseline_samples: f64,
    /// Candidate's mean samples per run in the function.
    #[serde(deserialize_with = "null_as_nan")]
    pub candidate_samples: f64,
    /// candidate / baseline of the means; None when the baseline never ran it.
    pub ratio: Option<f64>,
    /// Fieller's interval of the ratio; None when unbounded (or too few rounds).
    pub ci_low: Option<f64>,
    /// Upper bound of Fieller's interval; None when unbounded (or too few rounds).
    pub ci_high: Option<f64>,
    /// Why the row has no interval (of its ratio or its contribution), when it has none:
    /// a sampled row's values that did not vary over the rounds, a baseline that never
    /// ran it, too few rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_interval: Option<String>,
    /// This function's verdict on its ratio.
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
    /// Versions built in several code layouts (`--layouts N`): the same function's
    /// change with an interval that counts how much its time differs between layouts of
    /// one version. The row's own interval is paired by round over the same binaries,
    /// so it says what these layouts did, not what a relink would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across_layouts: Option<AcrossLayouts>,
}

/// A function's change between two versions across their layouts: the method of the
/// versions' own comparison (Mann–Whitney on the layouts' locations, `stats::layouts`),
/// applied to the function's time per run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AcrossLayouts {
    /// Candidate ÷ baseline: exp of the Hodges–Lehmann shift between the layouts' log
    /// locations.
    #[serde(deserialize_with = "null_as_nan")]
    pub ratio: f64,
    /// Its interval at the row's level; None when so few layouts cannot reach it.
    pub ci_low: Option<f64>,
    /// Upper end of the interval.
    pub ci_high: Option<f64>,
    /// σ of this function's layout effect within a version (log scale ≈ a fraction),
    /// the runs' own noise taken out: how much relinking alone moves it.
    #[serde(deserialize_with = "null_as_nan")]
    pub spread: f64,
    /// Layouts of the baseline and the candidate version.
    pub layouts: (usize, usize),
    /// `slower`/`faster` when the interval excludes 1, else `inconclusive` (the
    /// threshold's band is the row's own verdict's business).
    pub verdict: Verdict,
}

impl FunctionChange {
    /// True when the row's paired change is real for these binaries but not across
    /// layouts: a function that moves with layout, not with the change.
    pub fn moves_with_layout(&self) -> bool {
        let paired = matches!(self.verdict, Verdict::Slower | Verdict::Faster);
        paired && self.across_layouts.as_ref().is_some_and(|a| a.verdict != self.verdict)
    }
}
