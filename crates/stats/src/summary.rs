//! Descriptive statistics of one metric over one command's runs.
//!
//! Functions of a sample return NaN when the statistic is undefined for its size (empty
//! input, or a single value for `stddev`); [`summarize`] instead returns finite numbers for
//! every size so a [`Summary`] always serializes to JSON (see its doc).

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};

/// Descriptive statistics of one metric over one command's runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Runs counted (finite values).
    pub n: usize,
    /// Median, in the metric's unit.
    pub median: f64,
    /// Arithmetic mean, in the metric's unit.
    pub mean: f64,
    /// Sample standard deviation (n − 1 denominator), in the metric's unit.
    pub stddev: f64,
    /// Median absolute deviation, scaled by 1.4826 to estimate σ under normality.
    pub mad: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Runs further than 3.5 scaled MADs from the median.
    pub outliers: usize,
    /// 95 % order-statistic interval of the median (None when n is too small).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_ci: Option<(f64, f64)>,
}

/// Scale making the MAD a consistent estimator of σ for normal data: 1 / Φ⁻¹(3/4) ≈ 1.4826,
/// at full precision as SciPy's `median_abs_deviation(scale="normal")` uses it.
pub(crate) const MAD_SCALE: f64 = 1.482_602_218_505_602;

/// Modified z-score (|x − median| / scaled MAD) beyond which a run counts as an outlier
/// (Iglewicz & Hoaglin 1993).
pub(crate) const OUTLIER_Z: f64 = 3.5;

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The median (mean of the two middle values for even n); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    median_of_sorted(&sorted(values))
}

/// The arithmetic mean; NaN when empty.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The sample standard deviation (ddof = 1); NaN for fewer than two values.
pub fn stddev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// `MAD_SCALE` · median |x − median| (≈ 1.4826 · MAD); NaN when empty.
pub fn mad_scaled(values: &[f64]) -> f64 {
    let m = median(values);
    let deviations: Vec<f64> = values.iter().map(|x| (x - m).abs()).collect();
    MAD_SCALE * median(&deviations)
}

/// The `q`-quantile (q clamped to [0, 1]) by linear interpolation between order statistics
/// (Hyndman & Fan type 7, numpy's default); NaN when empty.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let s = sorted(values);
    if s.is_empty() {
        return f64::NAN;
    }
    let h = (s.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let below = h.floor() as usize;
    let above = (below + 1).min(s.len() - 1);
    s[below] + (h - below as f64) * (s[above] - s[below])
}

/// Distribution-free interval for the median: the order statistics x₍k₎ and x₍n+1−k₎ with
/// k = binom.ppf((1 − confidence)/2, n, ½) (1-based; the smallest k with
/// P(B ≤ k) ≥ (1 − confidence)/2 for B ~ Binomial(n, ½)). Its coverage is at least
/// `confidence`. None when k = 0 (n too small: n < 6 at 95 %), when `values` is empty, or
/// when `confidence` is not in (0, 1).
pub fn median_ci(values: &[f64], confidence: f64) -> Option<(f64, f64)> {
    median_ci_of_sorted(&sorted(values), confidence)
}

/// The confidence of every [`Summary::median_ci`].
pub const MEDIAN_CI_CONFIDENCE: f64 = 0.95;

/// The fewest values for which [`median_ci`] at `confidence` exists (6 at 95 %).
pub fn min_values_for_median_ci(confidence: f64) -> Option<usize> {
    (1..=64usize).find(|&n| median_ci_of_sorted(&(0..n).map(|i| i as f64).collect::<Vec<_>>(), confidence).is_some())
}

/// [`median_ci`] of values sorted ascending.
fn median_ci_of_sorted(s: &[f64], confidence: f64) -> Option<(f64, f64)> {
    if !super::valid_confidence(confidence) || s.is_empty() {
        return None;
    }
    let n = s.len();
    let k = binomial_half_ppf((1.0 - confidence) / 2.0, n as u64)? as usize;
    if k == 0 {
        return None;
    }
    let (low, high) = (k.min(n + 1 - k), k.max(n + 1 - k));
    Some((s[low - 1], s[high - 1]))
}

/// The median and [`median_ci`] of finite `values`, sorting them once (what a history
/// point shows).
pub fn median_and_ci(values: &[f64], confidence: f64) -> (f64, Option<(f64, f64)>) {
    let s = sorted(values);
    (median_of_sorted(&s), median_ci_of_sorted(&s, confidence))
}

/// Smallest k with P(B ≤ k) ≥ q for B ~ Binomial(n, ½); computed once per (q, n): a
/// history summarizes 100,000 labels of a few sizes.
fn binomial_half_ppf(q: f64, n: u64) -> Option<u64> {
    type Cache = std::sync::Mutex<std::collections::HashMap<(u64, u64), Option<u64>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(k) = cache.lock().ok().and_then(|c| c.get(&(q.to_bits(), n)).copied()) {
        return k;
    }
    let k = compute_binomial_half_ppf(q, n);
    if let Ok(mut c) = cache.lock() {
        c.insert((q.to_bits(), n), k);
    }
    k
}

fn compute_binomial_half_ppf(q: f64, n: u64) -> Option<u64> {
    let binomial = Binomial::new(0.5, n).ok()?;
    let (mut lo, mut hi) = (0u64, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if binomial.cdf(mid) >= q {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(hi)
}

/// Count of values whose modified z-score exceeds [`OUTLIER_Z`]. When the MAD is zero (more
/// than half the runs identical, common for counts such as peak RSS) the score is
/// undefined and nothing is counted.
fn count_outliers(values: &[f64], median: f64, mad: f64) -> usize {
    if mad <= 0.0 {
        return 0;
    }
    values.iter().filter(|x| (*x - median).abs() > OUTLIER_Z * mad).count()
}

/// Summary of one metric over one command's runs (median CI at 95 %).
///
/// Non-finite values are ignored (n counts the others). Always finite: with no values every
/// field is 0 (n = 0 tells it apart); with one value
/// median, mean, min and max are that value and stddev and MAD are 0. `median_ci` is None
/// for n < 6.
pub fn summarize(values: &[f64]) -> Summary {
    let finite: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let s = sorted(&finite);
    let n = s.len();
    if n == 0 {
        return Summary {
            n: 0,
            median: 0.0,
            mean: 0.0,
            stddev: 0.0,
            mad: 0.0,
            min: 0.0,
            max: 0.0,
            outliers: 0,
            median_ci: None,
        };
    }
    let median = median_of_sorted(&s);
    let mad = mad_scaled(&s);
    Summary {
        n,
        median,
        mean: mean(&s),
        stddev: if n < 2 { 0.0 } else { stddev(&s) },
        mad,
        min: s[0],
        max: s[n - 1],
        outliers: count_outliers(&s, median, mad),
        median_ci: median_ci_of_sorted(&s, MEDIAN_CI_CONFIDENCE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_interpolates_like_numpy() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert!((quantile(&v, 0.25) - 1.75).abs() < 1e-15);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn median_ci_needs_six_values_at_95_percent() {
        assert_eq!(min_values_for_median_ci(0.95), Some(6));
        assert_eq!(median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95), None);
        assert_eq!(median_ci(&[6.0, 1.0, 2.0, 3.0, 4.0, 5.0], 0.95), Some((1.0, 6.0)));
        assert_eq!(median_ci(&[1.0; 10], 1.0), None);
    }

    #[test]
    fn median_ci_narrows_for_large_samples() {
        let v: Vec<f64> = (1..=10_000).map(f64::from).collect();
        let (low, high) = median_ci(&v, 0.95).unwrap();
        // The normal approximation puts k near n/2 − 0.98·√n = 4902.
        assert!((4895.0..=4905.0).contains(&low), "{low}");
        assert_eq!(high, 10_001.0 - low);
    }

    #[test]
    fn tiny_inputs_give_documented_values() {
        let empty = summarize(&[]);
        assert_eq!((empty.n, empty.median, empty.stddev, empty.median_ci), (0, 0.0, 0.0, None));
        let one = summarize(&[2.5]);
        assert_eq!((one.n, one.median, one.mean, one.stddev, one.mad), (1, 2.5, 2.5, 0.0, 0.0));
        assert_eq!((one.min, one.max, one.outliers), (2.5, 2.5, 0));
        assert!(stddev(&[1.0]).is_nan());
        assert!(median(&[]).is_nan());
        let with_nan = summarize(&[1.0, f64::NAN, 3.0]);
        assert_eq!((with_nan.n, with_nan.median), (2, 2.0));
    }

    #[test]
    fn outliers_use_the_modified_z_score() {
        let mut v: Vec<f64> = (0..20).map(|i| 1.0 + 0.01 * f64::from(i % 5)).collect();
        v.push(5.0);
        assert_eq!(summarize(&v).outliers, 1);
        let constant_with_spike = [7.0, 7.0, 7.0, 7.0, 9.0];
        assert_eq!(summarize(&constant_with_spike).outliers, 0);
    }
}
