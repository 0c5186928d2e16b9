//! The multiple-comparison rule for counters and printed metrics: every one other than the
//! primary metric gets a Bonferroni-corrected interval, so that all their intervals of an
//! experiment hold together at the nominal confidence however many were asked for.
//!
//! Bonferroni rather than Holm because perflab reports intervals and derives verdicts
//! from them: Bonferroni intervals are simultaneous, and a verdict read from an interval
//! at level 1 − α/(k·m) is exactly the Bonferroni test; Holm's step-down gains power for
//! the tests but has no equally simple matching intervals.

use crate::plan::Plan;
use perflab_model::{metric, Experiment};

/// Confidence of each counter's interval: 1 − α / (candidates · counters per candidate),
/// where α = 1 − `confidence` (the level of the final look). The primary metric keeps its
/// own level; a deterministic metric is unaffected (its interval is a point).
pub(crate) fn secondary_confidence(confidence: f64, candidates: usize, secondary_metrics: usize) -> f64 {
    let family = (candidates.max(1) * secondary_metrics.max(1)) as f64;
    1.0 - (1.0 - confidence) / family
}

/// The counter and printed metrics of `plan` the correction applies to: every compared
/// metric but the harness's own, those the baseline's runs could measure (an
/// unsupported counter is not compared, so it costs nothing), minus the primary metric.
pub(crate) fn corrected_metrics(plan: &Plan, experiment: &Experiment) -> Vec<String> {
    let Some(baseline) = experiment.commands.first() else { return Vec::new() };
    plan.metrics
        .iter()
        .filter(|name| **name != experiment.primary_metric && !metric::kind(name).is_harness())
        .filter(|name| baseline.runs.iter().any(|run| run.metric(name).is_some()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_alpha_over_candidates_and_metrics() {
        assert!((secondary_confidence(0.95, 1, 1) - 0.95).abs() < 1e-12);
        assert!((secondary_confidence(0.95, 2, 5) - 0.995).abs() < 1e-12);
        // Degenerate counts never widen past the nominal level.
        assert!((secondary_confidence(0.95, 0, 0) - 0.95).abs() < 1e-12);
    }
}
