//! Two independent samples: Mann–Whitney U test (Mann & Whitney 1947) and the
//! Hodges–Lehmann shift estimate (Hodges & Lehmann 1963) with its distribution-free
//! interval from order statistics of all pairwise differences (Bauer 1972). Used by
//! change-point detection and history, where runs of different labels are not paired.
//!
//! Order statistics of the m·n differences are found by counting (see `order`).

use super::order::{kth_difference, median_by_rank, small_sorted_differences};
use super::ranks::midranks;
use super::{normal_upper_quantile, standard_normal_cdf, valid_confidence, Interval};

/// Largest sample size (both samples) for which the exact null distribution of U is used,
/// as SciPy's reference values do; beyond it the normal approximation.
pub(crate) const EXACT_MAX_N: usize = 20;

/// How a p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Exact null distribution (no ties, both samples ≤ `EXACT_MAX_N`).
    Exact,
    /// Normal approximation with tie-corrected variance and continuity correction.
    Normal,
}

impl Method {
    /// The description used by the SciPy reference vectors.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Normal => "normal approx. with tie and continuity correction",
        }
    }
}

/// The Mann–Whitney U test of the second sample against the first ([`mann_whitney`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the second sample: #(b_j > a_i) + ½·#(b_j = a_i), as SciPy's
    /// `mannwhitneyu(b, a).statistic`.
    pub u: f64,
    /// Two-sided p-value; 1 when a sample is empty.
    pub p_value: f64,
    /// How the p-value was computed.
    pub method: Method,
}

fn finite_sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Mann–Whitney U test of H₀: `a` and `b` come from the same distribution (two-sided).
/// Non-finite values are ignored.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> MannWhitney {
    let (a, b) = (finite_sorted(a), finite_sorted(b));
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return MannWhitney { u: 0.0, p_value: 1.0, method: Method::Exact };
    }
    let pooled: Vec<f64> = a.iter().chain(&b).copied().collect();
    let (ranks, tie_term) = midranks(&pooled);
    let rank_sum_b: f64 = ranks[m..].iter().sum();
    let u = rank_sum_b - (n * (n + 1)) as f64 / 2.0;
    let product = (m * n) as f64;
    let larger_u = u.max(product - u);
    if m.max(n) <= EXACT_MAX_N && tie_term == 0.0 {
        let cdf = exact_u_cdf(m, n);
        // P(U ≥ larger_u) = P(U ≤ mn − larger_u) by symmetry.
        let lower = cdf[(product - larger_u) as usize];
        return MannWhitney { u, p_value: (2.0 * lower).min(1.0), method: Method::Exact };
    }
    let total = (m + n) as f64;
    let variance = product / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    let p_value = if variance > 0.0 {
        let z = (larger_u - product / 2.0 - 0.5) / variance.sqrt();
        (2.0 * standard_normal_cdf(-z)).min(1.0)
    } else {
        1.0
    };
    MannWhitney { u, p_value, method: Method::Normal }
}

/// [`compute_exact_u_cdf`], computed once per pair of sizes: histories ask for the same
/// few sizes 100,000 times.
fn exact_u_cdf(m: usize, n: usize) -> std::sync::Arc<Vec<f64>> {
    type Cache = std::sync::Mutex<std::collections::HashMap<(usize, usize), std::sync::Arc<Vec<f64>>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(cdf) = cache.lock().map(|c| c.get(&(m, n)).cloned()).ok().flatten() {
        return cdf;
    }
    let cdf = std::sync::Arc::new(compute_exact_u_cdf(m, n));
    if let Ok(mut c) = cache.lock() {
        c.insert((m, n), cdf.clone());
    }
    cdf
}

/// P(U ≤ u), u = 0..=m·n, under H₀ without ties: counts of the C(m+n, m) equally likely
/// arrangements by dynamic programming over the largest element (it belongs to one sample
/// or the other), normalized. Counts stay exact in f64 for m, n ≤ 20 (C(40, 20) < 2⁵³).
fn compute_exact_u_cdf(m: usize, n: usize) -> Vec<f64> {
    // previous[j]: counts for sizes (i − 1, j); current[j]: for sizes (i, j).
    let mut previous: Vec<Vec<f64>> = vec![vec![1.0]; n + 1];
    for i in 1..=m {
        let mut current: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        current.push(vec![1.0]);
        for j in 1..=n {
            let mut counts = vec![0.0; i * j + 1];
            // Largest element from the first sample: it exceeds all j of the second.
            for (u, c) in previous[j].iter().enumerate() {
                counts[u + j] += c;
            }
            for (u, c) in current[j - 1].iter().enumerate() {
                counts[u] += c;
            }
            current.push(counts);
        }
        previous = current;
    }
    let counts = &previous[n];
    let total: f64 = counts.iter().sum();
    let mut cumulative = 0.0;
    counts
        .iter()
        .map(|c| {
            cumulative += c;
            cumulative / total
        })
        .collect()
}

/// Hodges–Lehmann shift of `b` relative to `a`: the median of all b_j − a_i (mean of the
/// two middle ones when m·n is even). Non-finite values are ignored; NaN when a sample is
/// empty.
pub fn hodges_lehmann_shift(a: &[f64], b: &[f64]) -> f64 {
    let (a, b) = (finite_sorted(a), finite_sorted(b));
    if a.is_empty() || b.is_empty() {
        return f64::NAN;
    }
    median_by_rank(a.len() * b.len(), |k| kth_difference(&a, &b, k))
}

/// The rank k of the lower bound among the m·n sorted differences: the largest k with
/// P(U ≤ k − 1) ≤ (1 − confidence)/2, with the achieved coverage.
fn critical_rank(m: usize, n: usize, confidence: f64) -> Option<(usize, f64)> {
    let tail = (1.0 - confidence) / 2.0;
    let product = m * n;
    let (k, lower_tail) = if m.max(n) <= EXACT_MAX_N {
        let cdf = exact_u_cdf(m, n);
        let k = cdf.partition_point(|&p| p <= tail);
        if k == 0 {
            return None;
        }
        (k, cdf[k - 1])
    } else {
        let mean = product as f64 / 2.0;
        let sd = (product as f64 * (m + n + 1) as f64 / 12.0).sqrt();
        // Continuity-corrected: P(U ≤ c) ≈ Φ((c + ½ − mean)/sd).
        let k = (mean + 0.5 - normal_upper_quantile(tail) * sd).floor();
        if k < 1.0 {
            return None;
        }
        (k as usize, standard_normal_cdf((k - 0.5 - mean) / sd))
    };
    Some((k.min(product.div_ceil(2)), 1.0 - 2.0 * lower_tail))
}

/// Distribution-free confidence interval for the shift of `b` relative to `a`:
/// [D₍k₎, D₍mn+1−k₎] of the sorted differences b_j − a_i with k from the exact
/// Mann–Whitney null (both samples ≤ [`EXACT_MAX_N`]) or its continuity-corrected normal
/// approximation. None when `confidence` is not in (0, 1), a sample is empty, or no interval
/// of that confidence exists for these sizes (e.g. 3 and 3 at 95 %).
pub(crate) fn shift_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<Interval> {
    let (a, b, k, achieved_confidence) = interval_ranks(a, b, confidence)?;
    let total = a.len() * b.len();
    Some(Interval { low: kth_difference(&a, &b, k), high: kth_difference(&a, &b, total + 1 - k), achieved_confidence })
}

/// [`hodges_lehmann_shift`] and `shift_interval` at once, sorting the differences of small
/// samples once (histories compare 100,000 pairs of labels); None without an interval.
pub fn shift_with_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<(f64, Interval)> {
    let (a, b, k, achieved_confidence) = interval_ranks(a, b, confidence)?;
    let total = a.len() * b.len();
    let sorted = small_sorted_differences(&a, &b);
    let kth = |i: usize| match &sorted {
        Some(d) => d[i - 1],
        None => kth_difference(&a, &b, i),
    };
    let interval = Interval { low: kth(k), high: kth(total + 1 - k), achieved_confidence };
    Some((median_by_rank(total, kth), interval))
}

/// The finite values of `a` and `b` sorted, with the rank of the interval's lower end and
/// its achieved confidence; None as [`shift_interval`] says.
fn interval_ranks(a: &[f64], b: &[f64], confidence: f64) -> Option<(Vec<f64>, Vec<f64>, usize, f64)> {
    if !valid_confidence(confidence) {
        return None;
    }
    let (a, b) = (finite_sorted(a), finite_sorted(b));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (k, achieved_confidence) = critical_rank(a.len(), b.len(), confidence)?;
    Some((a, b, k, achieved_confidence))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn binomial(n: u64, k: u64) -> f64 {
        (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
    }

    #[test]
    fn exact_distribution_is_a_symmetric_distribution() {
        for (m, n) in [(1, 1), (3, 5), (8, 8), (20, 20), (2, 17)] {
            let cdf = exact_u_cdf(m, n);
            assert!((cdf[m * n] - 1.0).abs() < 1e-15);
            // P(U = 0) = 1 / C(m+n, m): only one arrangement puts all of b below a.
            assert!((cdf[0] - 1.0 / binomial((m + n) as u64, m as u64)).abs() < 1e-15);
            for u in 0..m * n {
                let below = cdf[u];
                let above = 1.0 - cdf[m * n - u - 1];
                assert!((below - above).abs() < 1e-12, "({m},{n}) u={u}");
            }
        }
    }

    #[test]
    fn shift_with_interval_agrees_with_the_separate_functions() {
        for (m, n) in [(4, 4), (10, 10), (8, 13), (40, 30), (200, 150)] {
            let a: Vec<f64> = (0..m).map(|i| ((i * 7919) % 97) as f64 / 97.0).collect();
            let b: Vec<f64> = (0..n).map(|i| 0.1 + ((i * 104729) % 89) as f64 / 89.0).collect();
            let (shift, interval) = shift_with_interval(&a, &b, 0.95).unwrap();
            assert_eq!(shift, hodges_lehmann_shift(&a, &b), "{m}×{n}");
            assert_eq!(Some(interval), shift_interval(&a, &b, 0.95), "{m}×{n}");
        }
        assert!(shift_with_interval(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.95).is_none());
    }

    #[test]
    fn smallest_samples_with_an_interval() {
        assert!(shift_interval(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.95).is_none());
        let i = shift_interval(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], 0.95).unwrap();
        assert_eq!((i.low, i.high), (1.0, 7.0));
        assert!((i.achieved_confidence - (1.0 - 2.0 / 70.0)).abs() < 1e-15);
    }

    #[test]
    fn empty_samples() {
        assert_eq!(mann_whitney(&[], &[1.0]).p_value, 1.0);
        assert!(hodges_lehmann_shift(&[1.0], &[]).is_nan());
        assert!(shift_interval(&[], &[1.0], 0.9).is_none());
    }

    proptest! {
        #[test]
        fn interval_matches_brute_force_and_contains_estimate(
            a in prop::collection::vec(-1.0f64..1.0, 1..60),
            b in prop::collection::vec(-1.0f64..1.0, 1..60),
            confidence in 0.5f64..0.999,
        ) {
            let mut d: Vec<f64> = b.iter().flat_map(|y| a.iter().map(move |x| y - x)).collect();
            d.sort_by(f64::total_cmp);
            let t = d.len();
            let median = if t % 2 == 1 { d[t / 2] } else { (d[t / 2 - 1] + d[t / 2]) / 2.0 };
            let hl = hodges_lehmann_shift(&a, &b);
            prop_assert_eq!(hl, median);
            if let Some(i) = shift_interval(&a, &b, confidence) {
                let (k, achieved) = critical_rank(a.len(), b.len(), confidence).unwrap();
                prop_assert_eq!((i.low, i.high), (d[k - 1], d[t - k]));
                prop_assert!(i.low <= hl && hl <= i.high);
                prop_assert!(achieved >= confidence - 1e-12);
            }
        }

        #[test]
        fn swapping_samples_mirrors_everything(
            a in prop::collection::vec(-1.0f64..1.0, 1..40),
            b in prop::collection::vec(-1.0f64..1.0, 1..40),
        ) {
            let (ab, ba) = (mann_whitney(&a, &b), mann_whitney(&b, &a));
            prop_assert_eq!(ab.u + ba.u, (a.len() * b.len()) as f64);
            prop_assert!((ab.p_value - ba.p_value).abs() < 1e-12);
            prop_assert!((0.0..=1.0).contains(&ab.p_value));
            prop_assert_eq!(hodges_lehmann_shift(&a, &b), -hodges_lehmann_shift(&b, &a));
        }
    }
}
