//! The suite is the family: how one `run --baseline` shares its confidence among the
//! benchmarks it compares, so that the chance of *any* false verdict in the whole run —
//! not in each benchmark — stays below 1 − confidence.
//!
//! Bonferroni over the compared benchmarks: each benchmark's experiment runs its own
//! group-sequential design (looks, α spending, restarts) at α/k, so the k designs' errors
//! add up to at most α whatever their dependence (they run one after the other on one
//! machine, so they are not independent). Holm's step-down would give more power to the
//! tests, but it orders p-values that only exist once every benchmark has stopped, while
//! each benchmark here must stop on its own interval as soon as it is decided; and it has
//! no matching simultaneous intervals. With Bonferroni every printed interval is the one
//! that decided, and all k hold together with probability ≥ 1 − α — so an `equivalent`
//! ("no change beyond ±T %") is as trustworthy as a `slower`. docs/statistics.md ("The
//! suite is the family") argues the choice against the false discovery rate.

/// What the family rule did to one run: how many benchmarks share the confidence, and
/// the level each one's intervals use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Family {
    /// Benchmarks that compare two builds (a benchmark without `{build}` is measured once
    /// and compares nothing: it is not in the family).
    pub size: usize,
    /// The promise over the whole run (the plans' confidence, 0.95 by default).
    pub confidence: f64,
    /// Each benchmark's level: 1 − (1 − confidence) / size.
    pub per_benchmark: f64,
}

impl Family {
    /// The family of `size` comparisons sharing `confidence`.
    pub fn new(size: usize, confidence: f64) -> Family {
        Family { size, confidence, per_benchmark: benchmark_confidence(confidence, size) }
    }

    /// What the family means, said once before the run: "20 compared benchmarks share
    /// 95 % confidence: each interval is at 99.75 %, so all 20 verdicts hold together".
    pub fn note(&self) -> String {
        use perflab_model::units::format_level;
        if self.size <= 1 {
            return format!(
                "1 compared benchmark: its interval is at {} % (the suite is its own family)",
                format_level(self.confidence)
            );
        }
        if self.per_benchmark <= self.confidence {
            return format!(
                "each of the {} compared benchmarks is at {} % on its own (--per-benchmark): the chance \
                 of a false alarm somewhere in the run is larger than {} %",
                self.size,
                format_level(self.confidence),
                format_level(1.0 - self.confidence),
            );
        }
        format!(
            "the suite is the family: {} compared benchmarks share {} % confidence, so each interval \
             is at {} % and all {} verdicts hold together at {} % (a false alarm in ≤ {} % of runs)",
            self.size,
            format_level(self.confidence),
            format_level(self.per_benchmark),
            self.size,
            format_level(self.confidence),
            format_level(1.0 - self.confidence),
        )
    }
}

/// Each of `size` benchmarks' confidence so that all hold together at `confidence`:
/// 1 − (1 − confidence) / size (Bonferroni); `size` 0 or 1 keeps the level.
pub fn benchmark_confidence(confidence: f64, size: usize) -> f64 {
    1.0 - (1.0 - confidence) / size.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_is_split_evenly_over_the_compared_benchmarks() {
        assert!((benchmark_confidence(0.95, 20) - 0.9975).abs() < 1e-12);
        assert!((benchmark_confidence(0.95, 100) - 0.9995).abs() < 1e-12);
        assert_eq!(benchmark_confidence(0.95, 1), 0.95);
        assert_eq!(benchmark_confidence(0.95, 0), 0.95, "an empty family widens nothing");
        // The k levels' errors add up to the run's α exactly.
        let k = 37;
        let total: f64 = (0..k).map(|_| 1.0 - benchmark_confidence(0.95, k)).sum();
        assert!((total - 0.05).abs() < 1e-12);
    }

    #[test]
    fn the_note_names_both_levels() {
        let note = Family::new(20, 0.95).note();
        assert!(note.contains("20 compared benchmarks share 95 % confidence"), "{note}");
        assert!(note.contains("each interval is at 99.75 %"), "{note}");
        assert!(note.contains("≤ 5 % of runs"), "{note}");
        let alone = Family { per_benchmark: 0.95, ..Family::new(20, 0.95) }.note();
        assert!(alone.contains("larger than 5 %"), "{alone}");
    }
}
