//! The multiple-comparison rule for secondary metrics: every metric other than the
//! primary one (counters, CPU time, RSS, ...) gets a Bonferroni-corrected interval, so
//! that all of a run's secondary intervals hold together at the nominal confidence.
//!
//! Bonferroni rather than Holm because perflab reports intervals and derives verdicts
//! from them: Bonferroni intervals are simultaneous, and a verdict read from an interval
//! at level 1 − α/(k·m) is exactly the Bonferroni test; Holm's step-down gains power for
//! the tests but has no equally simple matching intervals.

/// Confidence of each secondary metric's interval: 1 − α / (candidates · secondary
/// metrics per candidate), where α = 1 − `confidence`. The primary metric keeps its own
/// (sequential) level; a deterministic metric is unaffected (its interval is a point).
pub fn secondary_confidence(confidence: f64, candidates: usize, secondary_metrics: usize) -> f64 {
    let family = (candidates.max(1) * secondary_metrics.max(1)) as f64;
    1.0 - (1.0 - confidence) / family
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
