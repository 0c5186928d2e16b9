//! The median of paired log ratios with the sign test's distribution-free interval
//! (Thompson 1936; Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*,
//! ch. 3.6): the estimator that needs only that the median of d is the shift, and the
//! most efficient of perflab's on noise whose center is much sharper than its tails —
//! rounds where the machine alternates between two speeds (docs/statistics.md).

use super::valid_confidence;
use super::Interval;
use statrs::distribution::{Binomial, DiscreteCDF};

/// P(B ≤ k) for B ~ Binomial(n, ½), by statrs' regularized incomplete beta function
/// (accurate far into the tails, where sequential looks need it).
pub fn binomial_half_cdf(n: usize, k: usize) -> f64 {
    if k >= n {
        return 1.0;
    }
    Binomial::new(0.5, n as u64).map_or(f64::NAN, |b| b.cdf(k as u64))
}

/// The rank k (1-based) of the lower bound [d₍ₖ₎, d₍ₙ₊₁₋ₖ₎]: the largest k with
/// P(B ≤ k − 1) ≤ (1 − confidence)/2, and the achieved coverage 1 − 2·P(B ≤ k − 1).
/// None when even k = 1 is too wide a tail (2⁻ⁿ > (1 − confidence)/2: n < 6 at 95 %).
pub fn critical_rank(n: usize, confidence: f64) -> Option<(usize, f64)> {
    if !valid_confidence(confidence) || n == 0 {
        return None;
    }
    let tail = (1.0 - confidence) / 2.0;
    // P(B ≤ k − 1) ≤ tail for k = 1..=K, increasing in k: bisect for K.
    let within = |k: usize| binomial_half_cdf(n, k - 1) <= tail;
    if !within(1) {
        return None;
    }
    let (mut lo, mut hi) = (1, n.div_ceil(2) + 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if within(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((lo, 1.0 - 2.0 * binomial_half_cdf(n, lo - 1)))
}

/// Two-sided exact sign-test p-value of H₀: median 0; zeros are dropped (the usual
/// convention); p = 1 without a non-zero value.
pub fn sign_test_p(d: &[f64]) -> f64 {
    let positive = d.iter().filter(|x| x.is_finite() && **x > 0.0).count();
    let negative = d.iter().filter(|x| x.is_finite() && **x < 0.0).count();
    let n = positive + negative;
    if n == 0 {
        return 1.0;
    }
    (2.0 * binomial_half_cdf(n, positive.min(negative))).min(1.0)
}

/// The median of the finite d (mean of the two middle ones for even n) and its sign-test
/// interval [d₍ₖ₎, d₍ₙ₊₁₋ₖ₎] at `confidence`; None for the interval when n is too small
/// for one. Distribution-free for any continuous d whose median is the shift.
pub fn median_interval(d: &[f64], confidence: f64) -> (f64, Option<Interval>) {
    let mut s: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return (f64::NAN, None);
    }
    let median = if n % 2 == 1 { s[n / 2] } else { 0.5 * (s[n / 2 - 1] + s[n / 2]) };
    let interval = critical_rank(n, confidence).map(|(k, achieved_confidence)| Interval {
        low: s[k - 1],
        high: s[n - k],
        achieved_confidence,
    });
    (median, interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_ranks_match_the_binomial_table() {
        // n = 20 at 95 %: P(B ≤ 5) = 0.0207 ≤ 0.025 < P(B ≤ 6) = 0.0577, so k = 6
        // and the achieved coverage is 1 − 2 × 0.020695 = 0.958611.
        let (k, achieved) = critical_rank(20, 0.95).unwrap();
        assert_eq!(k, 6);
        assert!((achieved - 0.958611).abs() < 1e-6, "{achieved}");
        assert_eq!(critical_rank(5, 0.95), None, "2/32 > 0.05");
        assert_eq!(critical_rank(6, 0.95).map(|r| r.0), Some(1));
    }

    #[test]
    fn the_interval_is_the_order_statistics_and_covers_the_median() {
        let d: Vec<f64> = (1..=20).map(|i| i as f64).collect();
        let (median, interval) = median_interval(&d, 0.95);
        let interval = interval.unwrap();
        assert_eq!((median, interval.low, interval.high), (10.5, 6.0, 15.0));
    }

    #[test]
    fn p_values_are_the_exact_binomial_ones() {
        // 15 positive of 20: p = 2 P(B ≤ 5) = 0.041389 (scipy.stats.binomtest(15, 20)).
        let d: Vec<f64> = (0..20).map(|i| if i < 15 { 1.0 } else { -1.0 }).collect();
        assert!((sign_test_p(&d) - 0.041389).abs() < 1e-6);
        assert_eq!(sign_test_p(&[0.0, 0.0]), 1.0);
    }

    #[test]
    fn large_n_tails_are_exact_enough_for_sequential_looks() {
        // P(B ≤ 4,700) for n = 10,000 is 1.038 × 10⁻⁹ (scipy.stats.binom.cdf: 1.03802e-09).
        let p = binomial_half_cdf(10_000, 4_700);
        assert!((p / 1.03802e-9 - 1.0).abs() < 1e-3, "{p}");
    }

    #[test]
    fn coverage_of_the_interval_is_at_least_the_level_on_heavy_tails() {
        use rand::{rngs::StdRng, SeedableRng};
        use rand_distr::{Distribution, StudentT};
        // 2,000 samples of 25 Student-t₂ values: coverage ≥ 95 % in expectation (the
        // achieved level is 95.7 %); the binomial σ of the count is 9, so 1,870 is
        // 6 σ below 1,914: a failure would be a bug, not luck.
        let mut rng = StdRng::seed_from_u64(3);
        let t = StudentT::new(2.0).unwrap();
        let covered = (0..2000)
            .filter(|_| {
                let d: Vec<f64> = (0..25).map(|_| 0.3 + t.sample(&mut rng)).collect();
                let i = median_interval(&d, 0.95).1.unwrap();
                i.low <= 0.3 && 0.3 <= i.high
            })
            .count();
        assert!(covered >= 1870, "{covered}");
    }
}
