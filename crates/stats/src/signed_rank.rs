//! Paired comparison on per-round log ratios: Wilcoxon signed-rank test (Wilcoxon 1945),
//! Hodges–Lehmann estimate (Hodges & Lehmann 1963) and its distribution-free interval from
//! order statistics of the Walsh averages (Bauer 1972).
//!
//! Order statistics of the n(n+1)/2 Walsh averages are found by counting (see `order`), so
//! n = 10,000 rounds costs milliseconds and no n² memory.

use super::order::{kth_walsh, median_by_rank};
use super::ranks::midranks;
pub use super::Interval;
use super::{normal_two_sided_p, normal_upper_quantile, standard_normal_cdf, valid_confidence};

/// Largest n for which the signed-rank null distribution is computed exactly; beyond it the
/// saddlepoint approximation is accurate to < 10⁻⁴ relative even at α = 10⁻¹², and the
/// O(n³) exact computation would cost more than a look of the sequential engine should.
pub(crate) const EXACT_INTERVAL_MAX_N: usize = 300;

/// Largest n for which p-values use the exact null distribution, as SciPy's reference
/// values do (normal approximation without continuity correction beyond).
pub(crate) const EXACT_P_MAX_N: usize = 25;

/// How a p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Exact null distribution (no ties, no zeros, small n).
    Exact,
    /// Normal approximation without continuity correction.
    Normal,
    /// Normal approximation with the tie correction of the variance (ties or zeros present).
    NormalTieCorrected,
}

impl Method {
    /// The description used by the SciPy reference vectors.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Normal => "normal approx., no continuity correction",
            Method::NormalTieCorrected => "normal approx. with tie correction, no continuity correction",
        }
    }
}

/// Result of [`paired`]: candidate relative to baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedEstimate {
    /// Pairs used.
    pub n: usize,
    /// Pairs skipped because a value was ≤ 0 or not finite.
    pub skipped: usize,
    /// exp(Hodges–Lehmann estimate of ln(cand/base)); > 1 means the candidate is larger.
    /// NaN when n = 0.
    pub ratio: f64,
    /// The interval of the ratio; None when no interval of this confidence exists for n
    /// (n < 6 at 95 %).
    pub ci: Option<(f64, f64)>,
    /// Coverage the interval achieves (≥ the requested confidence); 0 when `ci` is None.
    pub achieved_confidence: f64,
    /// Two-sided Wilcoxon signed-rank p-value; 1 when there is no non-zero difference.
    pub p_value: f64,
}

/// The engine's entry point: compares `cand` against `base` paired by index (one pair per
/// round) on d_i = ln(cand_i) − ln(base_i). Pairs beyond the shorter slice are ignored.
pub fn paired(base: &[f64], cand: &[f64], confidence: f64) -> PairedEstimate {
    let usable = |x: f64| x.is_finite() && x > 0.0;
    let pairs = base.len().min(cand.len());
    let d: Vec<f64> =
        base.iter().zip(cand).filter(|(&b, &c)| usable(b) && usable(c)).map(|(&b, &c)| c.ln() - b.ln()).collect();
    let interval = hl_interval(&d, confidence);
    PairedEstimate {
        n: d.len(),
        skipped: pairs - d.len(),
        ratio: hodges_lehmann(&d).exp(),
        ci: interval.map(|i| (i.low.exp(), i.high.exp())),
        achieved_confidence: interval.map_or(0.0, |i| i.achieved_confidence),
        p_value: wilcoxon_p(&d).0,
    }
}

fn sorted_finite(d: &[f64]) -> Vec<f64> {
    let mut s: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    s
}

/// Median of the Walsh averages (d_i + d_j)/2, i ≤ j (mean of the two middle ones when
/// their count is even). Non-finite values are ignored; NaN when none is left.
pub fn hodges_lehmann(d: &[f64]) -> f64 {
    let s = sorted_finite(d);
    if s.is_empty() {
        return f64::NAN;
    }
    let total = s.len() * (s.len() + 1) / 2;
    median_by_rank(total, |k| kth_walsh(&s, k))
}

/// Two-sided Wilcoxon signed-rank p-value of H₀: the d_i are symmetric about 0, as SciPy's
/// `wilcoxon(d)` with zero_method 'wilcox' (zeros dropped): exact for n ≤ 25 without ties,
/// otherwise the normal approximation with tie correction and no continuity correction.
/// Returns p = 1 (exact) when no non-zero finite difference is left.
pub fn wilcoxon_p(d: &[f64]) -> (f64, Method) {
    let nonzero: Vec<f64> = d.iter().copied().filter(|x| x.is_finite() && *x != 0.0).collect();
    let n = nonzero.len();
    if n == 0 {
        return (1.0, Method::Exact);
    }
    let magnitudes: Vec<f64> = nonzero.iter().map(|x| x.abs()).collect();
    let (ranks, tie_term) = midranks(&magnitudes);
    let r_plus: f64 = nonzero.iter().zip(&ranks).filter(|(x, _)| **x > 0.0).map(|(_, r)| r).sum();
    let total = (n * (n + 1) / 2) as f64;
    let zeros_dropped = n < d.len();
    if n <= EXACT_P_MAX_N && tie_term == 0.0 && !zeros_dropped {
        let t = r_plus.min(total - r_plus) as usize;
        let cdf = null_lower_cdf(n, t);
        return ((2.0 * cdf[t]).min(1.0), Method::Exact);
    }
    let variance = (n * (n + 1) * (2 * n + 1)) as f64 / 24.0 - tie_term / 48.0;
    if variance <= 0.0 {
        return (1.0, Method::NormalTieCorrected);
    }
    let z = (r_plus - total / 2.0) / variance.sqrt();
    let method = if tie_term > 0.0 || zeros_dropped { Method::NormalTieCorrected } else { Method::Normal };
    (normal_two_sided_p(z), method)
}

/// P(W⁺ ≤ w) for w = 0..=up_to under H₀ without ties: W⁺ = Σ k·B_k, B_k ~ Bernoulli(½)
/// independent, by dynamic programming over k = 1..n in probabilities (counts overflow
/// u64 beyond n ≈ 60). Only values ≤ `up_to` are tracked since lower values never depend on
/// higher ones.
fn null_lower_cdf(n: usize, up_to: usize) -> Vec<f64> {
    let mut pmf = vec![0.0; up_to + 1];
    pmf[0] = 1.0;
    for k in 1..=n {
        for w in (0..=up_to).rev() {
            let shifted = if w >= k { pmf[w - k] } else { 0.0 };
            pmf[w] = 0.5 * (pmf[w] + shifted);
        }
    }
    let mut cumulative = 0.0;
    pmf.iter()
        .map(|p| {
            cumulative += p;
            cumulative
        })
        .collect()
}

/// P(W⁺ ≤ w) under H₀ for large n. Near the center: continuity-corrected normal with the
/// Edgeworth term for the (negative) excess kurtosis. In the tails, where sequential looks
/// with α of 10⁻⁶ and below need relative accuracy the normal lacks (the plain normal is
/// off by ~10 % of α at α = 10⁻⁴), the Lugannani–Rice saddlepoint approximation for the sum
/// of independent k·Bernoulli(½), evaluated at the continuity-corrected point.
fn approx_lower_cdf(n: usize, w: usize) -> f64 {
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let k2 = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0;
    let x = w as f64 + 0.5;
    let z = (x - mean) / k2.sqrt();
    if z.abs() < 1.5 {
        let k4 = -nf * (nf + 1.0) * (2.0 * nf + 1.0) * (3.0 * nf * nf + 3.0 * nf - 1.0) / 240.0;
        let excess_kurtosis = k4 / (k2 * k2);
        let correction = standard_normal_pdf(z) * excess_kurtosis / 24.0 * (z * z * z - 3.0 * z);
        return (standard_normal_cdf(z) - correction).clamp(0.0, 1.0);
    }
    saddlepoint_lower_cdf(n, x)
}

fn standard_normal_pdf(z: f64) -> f64 {
    (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Lugannani–Rice P(W⁺ ≤ x) with cumulant generating function K(s) = Σₖ ln((1 + eˢᵏ)/2).
fn saddlepoint_lower_cdf(n: usize, x: f64) -> f64 {
    let softplus = |t: f64| {
        if t > 0.0 {
            t + (-t).exp().ln_1p()
        } else {
            t.exp().ln_1p()
        }
    };
    let logistic = |t: f64| 1.0 / (1.0 + (-t).exp());
    let cumulants = |s: f64| {
        let (mut k, mut k1, mut k2) = (0.0, 0.0, 0.0);
        for i in 1..=n {
            let i = i as f64;
            let p = logistic(s * i);
            k += softplus(s * i) - std::f64::consts::LN_2;
            k1 += i * p;
            k2 += i * i * p * (1.0 - p);
        }
        (k, k1, k2)
    };
    // K' is increasing; Newton from the normal guess, kept inside a bisection bracket.
    let (mut lo, mut hi) = (-50.0, 50.0);
    let nf = n as f64;
    let mut s = (x - nf * (nf + 1.0) / 4.0) / (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0);
    for _ in 0..200 {
        let (_, k1, k2) = cumulants(s);
        if k1 > x {
            hi = s
        } else {
            lo = s
        }
        let next = s - (k1 - x) / k2;
        let next = if next > lo && next < hi && next.is_finite() { next } else { (lo + hi) / 2.0 };
        if (next - s).abs() <= 1e-15 * s.abs().max(1e-300) {
            break;
        }
        s = next;
    }
    let (k, _, k2) = cumulants(s);
    let r = s.signum() * (2.0 * (s * x - k)).max(0.0).sqrt();
    let u = s * k2.sqrt();
    (standard_normal_cdf(r) + standard_normal_pdf(r) * (1.0 / r - 1.0 / u)).clamp(0.0, 1.0)
}

/// The rank k of the lower interval bound among the M = n(n+1)/2 sorted Walsh averages:
/// the largest k with P(W⁺ ≤ k − 1) ≤ (1 − confidence)/2, and the achieved coverage
/// 1 − 2·P(W⁺ ≤ k − 1). None when even k = 1 is too wide a tail (2⁻ⁿ > (1 − confidence)/2).
fn critical_rank(n: usize, confidence: f64) -> Option<(usize, f64)> {
    let tail = (1.0 - confidence) / 2.0;
    if n <= EXACT_INTERVAL_MAX_N {
        let cdf = null_lower_cdf(n, n * (n + 1) / 4);
        // cdf is increasing: count the w with P(W⁺ ≤ w) ≤ tail; k − 1 is the last of them.
        let k = cdf.partition_point(|&p| p <= tail);
        (k > 0).then(|| finish_rank(n, k, cdf[k - 1]))
    } else {
        let k = approx_critical_count(n, tail, |w| approx_lower_cdf(n, w));
        (k > 0).then(|| finish_rank(n, k, approx_lower_cdf(n, k - 1)))
    }
}

/// (k capped at the middle rank, achieved coverage 1 − 2·P(W⁺ ≤ k − 1)).
fn finish_rank(n: usize, k: usize, lower_tail: f64) -> (usize, f64) {
    (k.min((n * (n + 1) / 2).div_ceil(2)), 1.0 - 2.0 * lower_tail)
}

/// The number of w with `lower_cdf(w)` ≤ `tail` (the first w beyond it), for an increasing
/// `lower_cdf` approximating P(W⁺ ≤ w). The plain normal guess is off by a few ranks in
/// the far tail (hundreds at n = 10⁴ and α = 10⁻⁶), so bracket from it by doubling steps,
/// then bisect: O(log n) evaluations.
fn approx_critical_count(n: usize, tail: f64, lower_cdf: impl Fn(usize) -> f64) -> usize {
    let total = n * (n + 1) / 2;
    let mean = total as f64 / 2.0;
    let sd = ((n * (n + 1) * (2 * n + 1)) as f64 / 24.0).sqrt();
    let start = (mean + 0.5 - normal_upper_quantile(tail) * sd).floor().max(0.0) as usize;
    let within = |w: usize| lower_cdf(w) <= tail;
    let mut hi = start;
    let mut step = 1;
    while within(hi) {
        hi += step;
        step *= 2;
    }
    let mut lo = hi.min(start);
    step = 1;
    while lo > 0 && !within(lo - 1) {
        lo = lo.saturating_sub(step);
        step *= 2;
    }
    // Now every w < lo is within and hi is not.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if within(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Distribution-free confidence interval for the center of symmetry of the d_i:
/// \[W₍k₎, W₍M+1−k₎\] of the sorted Walsh averages with k from `critical_rank` (exact
/// signed-rank null for n ≤ `EXACT_INTERVAL_MAX_N`, saddlepoint approximation beyond).
/// Non-finite values are ignored; zeros are kept (they are observations of no change).
/// With ties the interval is that of the continuous-data procedure, which is slightly
/// conservative. None when `confidence` is not in (0, 1) or no interval of that
/// confidence exists for n.
pub fn hl_interval(d: &[f64], confidence: f64) -> Option<Interval> {
    if !valid_confidence(confidence) {
        return None;
    }
    let s = sorted_finite(d);
    let n = s.len();
    if n == 0 {
        return None;
    }
    let (k, achieved_confidence) = critical_rank(n, confidence)?;
    let total = n * (n + 1) / 2;
    Some(Interval { low: kth_walsh(&s, k), high: kth_walsh(&s, total + 1 - k), achieved_confidence })
}

/// The fewest pairs for which an interval of `confidence` exists (6 at 95 %, 8 at 99 %):
/// below it every sign pattern is too likely for any interval to hold. None for a
/// confidence outside (0, 1).
pub fn min_pairs_for_interval(confidence: f64) -> Option<usize> {
    if !valid_confidence(confidence) {
        return None;
    }
    (1..=64).find(|&n| critical_rank(n, confidence).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    fn brute_walsh(d: &[f64]) -> Vec<f64> {
        let mut w = Vec::new();
        for i in 0..d.len() {
            for j in i..d.len() {
                w.push(super::super::order::walsh(d[i], d[j]));
            }
        }
        w.sort_by(f64::total_cmp);
        w
    }

    /// Exact null by enumerating all 2ⁿ sign patterns.
    fn brute_null_cdf(n: usize) -> Vec<f64> {
        let total = n * (n + 1) / 2;
        let mut counts = vec![0u64; total + 1];
        for mask in 0u32..(1 << n) {
            let w: usize = (0..n).filter(|k| mask >> k & 1 == 1).map(|k| k + 1).sum();
            counts[w] += 1;
        }
        let mut c = 0u64;
        counts
            .iter()
            .map(|x| {
                c += x;
                c as f64 / (1u64 << n) as f64
            })
            .collect()
    }

    #[test]
    fn an_interval_needs_six_pairs_at_95_and_eight_at_99() {
        assert_eq!(min_pairs_for_interval(0.95), Some(6));
        assert_eq!(min_pairs_for_interval(0.99), Some(8));
        assert!(hl_interval(&[0.1; 5], 0.95).is_none() && hl_interval(&[0.1; 6], 0.95).is_some());
    }

    #[test]
    fn null_distribution_matches_enumeration() {
        for n in 1..=12 {
            let brute = brute_null_cdf(n);
            let total = n * (n + 1) / 2;
            let dp = null_lower_cdf(n, total);
            for w in 0..=total {
                assert!((dp[w] - brute[w]).abs() < 1e-15, "n={n} w={w}");
            }
        }
    }

    #[test]
    fn interval_matches_brute_force_on_random_data() {
        let mut rng = StdRng::seed_from_u64(7);
        for trial in 0..40 {
            let n = rng.gen_range(1..360);
            let d: Vec<f64> =
                (0..n).map(|_| rng.gen_range(-0.05..0.05) + if trial % 3 == 0 { 0.02 } else { 0.0 }).collect();
            let w = brute_walsh(&d);
            let m = w.len();
            let hl = if m % 2 == 1 { w[m / 2] } else { (w[m / 2 - 1] + w[m / 2]) / 2.0 };
            assert_eq!(hodges_lehmann(&d), hl);
            // Independent of critical_rank for the exact range: the definition itself.
            let exact_cdf = (n <= EXACT_INTERVAL_MAX_N).then(|| null_lower_cdf(n, m / 2));
            for confidence in [0.8, 0.95, 0.999, 0.99999] {
                let tail = (1.0 - confidence) / 2.0;
                let expected = match &exact_cdf {
                    Some(cdf) => {
                        let k = cdf.partition_point(|&p| p <= tail);
                        (k > 0).then(|| (k, 1.0 - 2.0 * cdf[k - 1]))
                    }
                    None => critical_rank(n, confidence),
                };
                match (hl_interval(&d, confidence), expected) {
                    (Some(i), Some((k, achieved))) => {
                        assert_eq!((i.low, i.high), (w[k - 1], w[m - k]), "n={n}");
                        assert_eq!(i.achieved_confidence, achieved);
                        assert!(achieved >= confidence - 1e-12, "n={n} achieved {achieved}");
                    }
                    (None, None) => assert!(0.5f64.powi(n as i32) > tail, "n={n}"),
                    other => panic!("n={n}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn smallest_n_with_an_interval() {
        let d = [0.01, -0.02, 0.03, 0.015, 0.0, 0.02];
        assert!(hl_interval(&d[..5], 0.95).is_none());
        let i = hl_interval(&d, 0.95).unwrap();
        assert_eq!((i.low, i.high), (-0.02, 0.03));
        assert!((i.achieved_confidence - (1.0 - 2.0 / 64.0)).abs() < 1e-15);
        assert!(hl_interval(&d, 1.0).is_none());
        assert!(hl_interval(&d, f64::NAN).is_none());
    }

    #[test]
    fn large_n_approximation_is_accurate_at_the_switch() {
        // At the largest exactly computed n, the approximation must reproduce the exact
        // tail probabilities far out (sequential looks use α down to 10⁻⁶ and below).
        let n = EXACT_INTERVAL_MAX_N;
        let total = n * (n + 1) / 2;
        let cdf = null_lower_cdf(n, total / 2);
        let mean = total as f64 / 2.0;
        let sd = ((n * (n + 1) * (2 * n + 1)) as f64 / 24.0).sqrt();
        for z in [0.5, 1.0, 1.49, 1.51, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0] {
            let w = (mean - z * sd) as usize;
            let relative_error = approx_lower_cdf(n, w) / cdf[w] - 1.0;
            assert!(relative_error.abs() < 1e-3, "z={z}: {relative_error}");
        }
    }

    #[test]
    fn approximate_critical_rank_matches_exact_at_the_switch() {
        let n = EXACT_INTERVAL_MAX_N;
        let cdf = null_lower_cdf(n, n * (n + 1) / 4);
        for confidence in [0.8, 0.95, 0.99, 0.9999, 0.999_999, 0.999_999_99] {
            let tail = (1.0 - confidence) / 2.0;
            let exact = cdf.partition_point(|&p| p <= tail);
            let approx = approx_critical_count(n, tail, |w| approx_lower_cdf(n, w));
            assert!(exact.abs_diff(approx) <= 1, "{confidence}: exact {exact}, approx {approx}");
            // The search itself is exact for the function it is given.
            assert_eq!(approx_critical_count(n, tail, |w| cdf[w.min(cdf.len() - 1)]), exact);
        }
    }

    #[test]
    fn paired_skips_unusable_pairs_and_handles_empty_input() {
        let e = paired(&[1.0, 0.0, f64::NAN, 2.0], &[1.1, 1.0, 1.0, -1.0], 0.95);
        assert_eq!((e.n, e.skipped), (1, 3));
        assert!((e.ratio - 1.1).abs() < 1e-12);
        assert_eq!(e.ci, None);
        let none = paired(&[], &[], 0.95);
        assert_eq!((none.n, none.ci, none.p_value), (0, None, 1.0));
        assert!(none.ratio.is_nan());
    }

    #[test]
    fn ten_thousand_rounds_are_handled() {
        let mut rng = StdRng::seed_from_u64(3);
        let base: Vec<f64> = (0..10_000).map(|_| rng.gen_range(0.09..0.11)).collect();
        let cand: Vec<f64> = base.iter().map(|b| b * 1.02 * rng.gen_range(0.99..1.01)).collect();
        let e = paired(&base, &cand, 0.95);
        let (low, high) = e.ci.unwrap();
        assert!(low < 1.02 && 1.02 < high && high - low < 0.001, "{low} {high}");
        assert!(e.p_value < 1e-100);
    }

    #[test]
    fn zeros_and_ties_use_the_tie_corrected_normal_approximation() {
        let (p, method) = wilcoxon_p(&[0.0, 1.0, 2.0, 3.0, -1.0, 4.0]);
        assert_eq!(method, Method::NormalTieCorrected);
        assert!((0.0..=1.0).contains(&p));
        assert_eq!(wilcoxon_p(&[0.0, 0.0]), (1.0, Method::Exact));
    }

    fn positive() -> impl Strategy<Value = f64> {
        0.5f64..2.0
    }

    proptest! {
        #[test]
        fn swapping_inverts_ratio_and_interval(
            pairs in prop::collection::vec((positive(), positive()), 1..60),
            confidence in 0.5f64..0.9999,
        ) {
            let (a, b): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
            let ab = paired(&a, &b, confidence);
            let ba = paired(&b, &a, confidence);
            prop_assert!((ab.ratio * ba.ratio - 1.0).abs() < 1e-12);
            prop_assert_eq!(ab.p_value, ba.p_value);
            prop_assert_eq!(ab.achieved_confidence, ba.achieved_confidence);
            match (ab.ci, ba.ci) {
                (Some((l1, h1)), Some((l2, h2))) => {
                    prop_assert!((l1 * h2 - 1.0).abs() < 1e-12 && (h1 * l2 - 1.0).abs() < 1e-12);
                }
                (None, None) => {}
                other => prop_assert!(false, "{other:?}"),
            }
            // In log space the symmetry is exact.
            let d: Vec<f64> = a.iter().zip(&b).map(|(x, y)| y.ln() - x.ln()).collect();
            let neg: Vec<f64> = d.iter().map(|x| -x).collect();
            prop_assert_eq!(hodges_lehmann(&d), -hodges_lehmann(&neg));
            if let (Some(i), Some(j)) = (hl_interval(&d, confidence), hl_interval(&neg, confidence)) {
                prop_assert_eq!((i.low, i.high), (-j.high, -j.low));
            }
        }

        #[test]
        fn interval_contains_estimate_and_widens_with_confidence(
            d in prop::collection::vec(-0.1f64..0.1, 1..120),
            c1 in 0.5f64..0.99999,
            c2 in 0.5f64..0.99999,
        ) {
            let hl = hodges_lehmann(&d);
            let (lo_c, hi_c) = if c1 <= c2 { (c1, c2) } else { (c2, c1) };
            let narrow = hl_interval(&d, lo_c);
            let wide = hl_interval(&d, hi_c);
            if let Some(i) = narrow {
                prop_assert!(i.low <= hl && hl <= i.high);
                prop_assert!(i.achieved_confidence >= lo_c - 1e-12);
            }
            if let Some(w) = wide {
                let i = narrow.expect("a wider interval exists, so the narrower one does");
                prop_assert!(w.low <= i.low && i.high <= w.high);
            }
        }

        #[test]
        fn p_value_is_a_probability(d in prop::collection::vec(-3i8..3, 0..80)) {
            let d: Vec<f64> = d.into_iter().map(f64::from).collect();
            let (p, _) = wilcoxon_p(&d);
            prop_assert!((0.0..=1.0).contains(&p));
        }
    }
}
