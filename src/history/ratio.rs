//! The ratio of a metric between two labels of one benchmark on one machine, with its
//! interval: from the paired comparison of an experiment that ran both interleaved, else
//! from the two labels' runs as independent samples. `perflab history` (vs previous, the
//! builds × machines view) and `perflab report` both ask here, so they always agree.

use crate::model::metric::{self, Better};
use crate::model::{Comparison, Verdict};
use crate::store::StoredExperiment;
use serde::Serialize;

/// The confidence of every interval computed here from runs.
pub const CONFIDENCE: f64 = 0.95;
/// Equivalence margin for independent comparisons when the experiments record none.
pub const DEFAULT_THRESHOLD: f64 = 0.01;

/// How a ratio's confidence interval was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CiMethod {
    /// Both labels ran interleaved in one experiment: the paired comparison's interval
    /// (Hodges–Lehmann with the Wilcoxon signed-rank interval on per-round log ratios).
    Paired,
    /// The labels were measured separately: the independent-samples Hodges–Lehmann
    /// interval on log values (Mann–Whitney), i.e. a CI of the ratio of locations.
    Independent,
}

impl CiMethod {
    pub fn describe(self) -> &'static str {
        match self {
            CiMethod::Paired => "paired, interleaved runs",
            CiMethod::Independent => "independent runs",
        }
    }
}

/// label ÷ reference of a metric (> 1: more than under the reference).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Confidence of [`ci_low`, `ci_high`] (0.95 for 95 %).
    pub confidence: f64,
    pub p_value: Option<f64>,
    pub verdict: Verdict,
    pub method: CiMethod,
    /// Runs (or paired rounds) behind the ratio: the smaller side.
    pub n: usize,
}

impl Ratio {
    /// True when the interval excludes 1 (a difference at its confidence).
    pub fn significant(&self) -> bool {
        self.ci_low > 1.0 || self.ci_high < 1.0
    }
}

/// The label a command of a stored experiment measured: the measured (last) command is
/// the experiment's label, as in `perflab history`; another command named like a stored
/// label (an interleaved baseline) measured that label.
fn label_of<'a>(e: &'a StoredExperiment, command_name: &'a str, labels: &[String]) -> Option<&'a str> {
    if e.experiment.commands.last().is_some_and(|c| c.name == command_name) {
        Some(&e.label)
    } else {
        labels.iter().any(|l| l == command_name).then_some(command_name)
    }
}

/// `label` ÷ `reference` for one benchmark on one machine, from its `experiments`: the
/// paired comparison of the latest experiment that ran both interleaved, else the
/// independent-samples ratio of the pooled runs `values(label)` and `values(reference)`.
/// `labels` are the stored labels (to recognise an interleaved baseline command).
pub fn between_labels(
    experiments: &[&StoredExperiment],
    labels: &[String],
    reference: &str,
    label: &str,
    metric: &str,
    values: impl Fn(&str) -> Option<Vec<f64>>,
) -> Option<Ratio> {
    for e in experiments.iter().rev() {
        // A comparison without a ratio says nothing of the labels: fall through to the
        // pooled runs (which say so in turn when they cannot give one either).
        for c in e.experiment.comparisons.iter().filter(|c| c.metric == metric && c.verdict != Verdict::NotComparable) {
            match (label_of(e, &c.baseline, labels), label_of(e, &c.candidate, labels)) {
                (Some(b), Some(k)) if b == reference && k == label => return Some(paired(c, false)),
                (Some(b), Some(k)) if b == label && k == reference => return Some(paired(c, true)),
                _ => {}
            }
        }
    }
    let settings = experiments.iter().rev().find(|e| e.label == label).map(|e| &e.experiment.settings);
    let threshold = settings.map_or(DEFAULT_THRESHOLD, |s| s.threshold);
    let better = settings.map_or(metric::info(metric).better, |s| s.metric_info(metric).better);
    independent(&values(reference)?, &values(label)?, threshold, better)
}

/// A stored paired comparison as a ratio, `inverted` when it ran the other way round.
pub fn paired(c: &Comparison, inverted: bool) -> Ratio {
    let (ratio, ci_low, ci_high, verdict) = if inverted {
        let flipped = match c.verdict {
            Verdict::Faster => Verdict::Slower,
            Verdict::Slower => Verdict::Faster,
            v => v,
        };
        (1.0 / c.ratio, 1.0 / c.ci_high, 1.0 / c.ci_low, flipped)
    } else {
        (c.ratio, c.ci_low, c.ci_high, c.verdict)
    };
    Ratio {
        ratio,
        ci_low,
        ci_high,
        confidence: c.confidence,
        p_value: Some(c.p_value),
        verdict,
        method: CiMethod::Paired,
        n: c.n,
    }
}

/// Ratio of locations from separately measured runs: the Hodges–Lehmann shift of the log
/// values and its Mann–Whitney interval, exponentiated; None for values ≤ 0 or samples
/// too small for an interval (about 4 each at 95 %). The verdict is for a metric that
/// improves in the direction `better`.
pub fn independent(base: &[f64], cand: &[f64], threshold: f64, better: Better) -> Option<Ratio> {
    if base.iter().chain(cand).any(|&v| v <= 0.0) {
        return None;
    }
    let ln_base: Vec<f64> = base.iter().map(|v| v.ln()).collect();
    let ln_cand: Vec<f64> = cand.iter().map(|v| v.ln()).collect();
    let (shift, interval) = crate::stats::rank_sum::shift_with_interval(&ln_base, &ln_cand, CONFIDENCE)?;
    let (lo, hi) = (interval.low.exp(), interval.high.exp());
    Some(Ratio {
        ratio: shift.exp(),
        ci_low: lo,
        ci_high: hi,
        confidence: interval.achieved_confidence,
        p_value: Some(crate::stats::rank_sum::mann_whitney(&ln_base, &ln_cand).p_value),
        verdict: crate::analysis::verdict::classify(lo, hi, threshold, better).0,
        method: CiMethod::Independent,
        n: base.len().min(cand.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independent_ratio_covers_the_true_ratio_and_classifies_it() {
        let base: Vec<f64> = (0..8).map(|i| 1.0 + 0.002 * i as f64).collect();
        let cand: Vec<f64> = base.iter().map(|v| v * 1.5).collect();
        let r = independent(&base, &cand, 0.01, Better::Lower).unwrap();
        assert_eq!(independent(&base, &cand, 0.01, Better::Higher).unwrap().verdict, Verdict::Faster);
        assert!(r.ci_low <= 1.5 && 1.5 <= r.ci_high && r.significant(), "{r:?}");
        assert_eq!((r.verdict, r.method, r.n), (Verdict::Slower, CiMethod::Independent, 8));
        assert!(independent(&base[..3], &cand[..3], 0.01, Better::Lower).is_none(), "no 95 % interval for 3 and 3");
        assert!(independent(&[0.0; 8], &cand, 0.01, Better::Lower).is_none());
    }
}
