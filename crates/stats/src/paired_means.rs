//! Paired means: the mean difference of values paired by round with Student's t
//! interval, and the ratio of two paired means with Fieller's interval (Fieller 1954).
//!
//! `compare --explain` splits every run's time over functions. A function's time per run
//! is a sum of samples: zero in some runs, a few in others, Poisson noise on top of the
//! run-to-run noise. Log ratios per round break at zero counts, so these statistics work
//! on the values themselves: the **mean** per run (contributions of functions add up to
//! the total exactly, which medians and Hodges–Lehmann estimates do not) and the **ratio
//! of the means** (a function absent in some runs is no problem). Both intervals use the
//! round-to-round variance of the paired values, which holds the sampling noise and the
//! run noise and their correlation together, so neither needs a model of either.
//!
//! Fieller's interval for ρ = E\[num\]/E\[den\] is the set of ρ for which the paired t-test
//! of num − ρ·den does not reject: at ρ = 1 that is the paired t-test of the difference,
//! so the ratio's interval excludes 1 exactly when the difference's interval excludes 0.

use super::summary::mean;
use super::valid_confidence;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The mean of b − a over pairs, with its Student t interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanDifference {
    /// Pairs used (both values finite).
    pub n: usize,
    /// Mean of the `a` values of those pairs.
    pub mean_a: f64,
    /// Mean of the `b` values of those pairs.
    pub mean_b: f64,
    /// mean(b − a) = mean_b − mean_a.
    pub difference: f64,
    /// Standard error of the mean difference.
    pub se: f64,
    /// The interval at the requested confidence; None with fewer than 2 pairs.
    pub interval: Option<(f64, f64)>,
    /// Two-sided p-value of the paired t-test of "no difference"; 1 without a variance
    /// and no difference, 0 without a variance and a difference.
    pub p_value: f64,
}

/// The upper `(1 + confidence)/2` quantile of Student's t with `df` degrees of freedom,
/// to 1e-10 relative. By bisection on the upper tail, which statrs computes accurately
/// far out (its `inverse_cdf` is slow and loses the far tails that Bonferroni-corrected
/// levels reach); the normal quantile beyond 10⁷ degrees of freedom.
pub fn t_quantile(confidence: f64, df: f64) -> Option<f64> {
    if !valid_confidence(confidence) || df.is_nan() || df < 1.0 {
        return None;
    }
    let tail = (1.0 - confidence) / 2.0;
    let z = super::normal_upper_quantile(tail);
    if df > 1e7 {
        return Some(z);
    }
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    // t's quantile lies above the normal one; double until the tail is small enough.
    let (mut lo, mut hi) = (z.max(0.0) * 0.999, z.max(1.0));
    while t.sf(hi) > tail {
        lo = hi;
        hi *= 2.0;
        if hi > 1e12 {
            return None;
        }
    }
    while hi - lo > 1e-10 * hi {
        let mid = (lo + hi) / 2.0;
        if t.sf(mid) > tail {
            lo = mid
        } else {
            hi = mid
        }
    }
    Some((lo + hi) / 2.0)
}

fn finite_pairs(a: &[f64], b: &[f64]) -> (Vec<f64>, Vec<f64>) {
    a.iter().zip(b).filter(|(x, y)| x.is_finite() && y.is_finite()).map(|(x, y)| (*x, *y)).unzip()
}

/// Sample covariance (ddof = 1) of x and y.
fn covariance(x: &[f64], y: &[f64]) -> f64 {
    let (mx, my) = (mean(x), mean(y));
    x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum::<f64>() / (x.len() as f64 - 1.0)
}

/// The paired mean difference of `b` against `a` (pairs by index; non-finite pairs
/// skipped) at `confidence`. None without pairs.
pub fn mean_difference(a: &[f64], b: &[f64], confidence: f64) -> Option<MeanDifference> {
    let (a, b) = finite_pairs(a, b);
    let n = a.len();
    if n == 0 {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(&b).map(|(x, y)| y - x).collect();
    let difference = mean(&d);
    let se = if n >= 2 { (covariance(&d, &d) / n as f64).sqrt() } else { f64::NAN };
    let df = n as f64 - 1.0;
    let interval =
        t_quantile(confidence, df).filter(|_| se.is_finite()).map(|t| (difference - t * se, difference + t * se));
    let p_value = if n < 2 {
        1.0
    } else if se > 0.0 {
        let dist = StudentsT::new(0.0, 1.0, df).ok()?;
        (2.0 * dist.sf((difference / se).abs())).min(1.0)
    } else if difference == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(MeanDifference { n, mean_a: mean(&a), mean_b: mean(&b), difference, se, interval, p_value })
}

/// Fieller's interval of a ratio of means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RatioInterval {
    /// [low, high]: the denominator's mean is clearly away from 0.
    Bounded(f64, f64),
    /// The denominator's mean cannot be told from 0 at this confidence: the set of
    /// compatible ratios is unbounded (the whole line or the outside of an interval).
    Unbounded,
}

/// mean(num) / mean(den) of paired values, with Fieller's interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanRatio {
    /// Pairs used (both values finite).
    pub n: usize,
    /// mean(num) / mean(den); ±∞ or NaN when mean(den) = 0.
    pub ratio: f64,
    /// None with fewer than 2 pairs.
    pub interval: Option<RatioInterval>,
}

/// Fieller's interval (Fieller 1954) for E\[num\]/E\[den\] from pairs (num_i, den_i) at
/// `confidence`, with the sample variances and covariance of the means and Student's t
/// with n − 1 degrees of freedom: {ρ : (x̄ − ρȳ)² ≤ t²(v₁₁ − 2ρv₁₂ + ρ²v₂₂)}.
pub fn fieller(num: &[f64], den: &[f64], confidence: f64) -> Option<MeanRatio> {
    let (x, y) = finite_pairs(num, den);
    let n = x.len();
    if n == 0 {
        return None;
    }
    let (mx, my) = (mean(&x), mean(&y));
    let ratio = mx / my;
    let Some(t) = t_quantile(confidence, n as f64 - 1.0) else { return Some(MeanRatio { n, ratio, interval: None }) };
    let nf = n as f64;
    let (v11, v22, v12) = (covariance(&x, &x) / nf, covariance(&y, &y) / nf, covariance(&x, &y) / nf);
    let t2 = t * t;
    // a ρ² + b ρ + c ≤ 0
    let a = my * my - t2 * v22;
    let b = -2.0 * (mx * my - t2 * v12);
    let c = mx * mx - t2 * v11;
    if a <= 0.0 {
        return Some(MeanRatio { n, ratio, interval: Some(RatioInterval::Unbounded) });
    }
    // At ρ = x̄/ȳ the form is −t²·var(num − ρ den) ≤ 0, so real roots exist; rounding
    // may push a zero discriminant below 0.
    let discriminant = (b * b - 4.0 * a * c).max(0.0);
    let root = discriminant.sqrt();
    // The numerically stable pair of roots.
    let q = -0.5 * (b + b.signum() * root);
    let (r1, r2) = if q == 0.0 { (0.0, 0.0) } else { (q / a, c / q) };
    let (low, high) = if r1 <= r2 { (r1, r2) } else { (r2, r1) };
    Some(MeanRatio { n, ratio, interval: Some(RatioInterval::Bounded(low, high)) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn the_difference_interval_is_the_paired_t_interval() {
        let a = [10.0, 11.0, 9.5, 10.2, 10.8];
        let b = [11.0, 12.5, 10.0, 11.0, 11.9];
        let d = mean_difference(&a, &b, 0.95).unwrap();
        assert!((d.difference - 0.98).abs() < 1e-12);
        let (lo, hi) = d.interval.unwrap();
        assert!(((lo + hi) / 2.0 - d.difference).abs() < 1e-12 && lo > 0.0);
        assert!(d.p_value < 0.05);
        assert_eq!(mean_difference(&[1.0], &[2.0], 0.95).unwrap().interval, None);
        assert_eq!(mean_difference(&[], &[], 0.95), None);
    }

    #[test]
    fn fieller_excludes_one_exactly_when_the_difference_excludes_zero() {
        let mut rng = StdRng::seed_from_u64(5);
        for trial in 0..300 {
            let n = rng.gen_range(3..40);
            let shift = [0.0, 0.01, 0.03, 0.1][trial % 4];
            let a: Vec<f64> = (0..n).map(|_| 50.0 + rng.gen_range(-3.0..3.0)).collect();
            let b: Vec<f64> = a.iter().map(|x| x * (1.0 + shift) + rng.gen_range(-2.0..2.0)).collect();
            let level = [0.9, 0.95, 0.999, 0.99999][trial % 4];
            let diff = mean_difference(&a, &b, level).unwrap().interval.unwrap();
            let Some(RatioInterval::Bounded(lo, hi)) = fieller(&b, &a, level).unwrap().interval else {
                // Two rounds at 99.999 %: t ≈ 700, the denominator is not clearly positive.
                assert!(n < 6, "n = {n}");
                continue;
            };
            let r = fieller(&b, &a, level).unwrap().ratio;
            assert!(lo <= r && r <= hi, "{lo} {r} {hi}");
            // Unless the bound sits at 1 to rounding, both tests agree.
            if (lo - 1.0).abs() > 1e-9 && (hi - 1.0).abs() > 1e-9 {
                assert_eq!(lo > 1.0 || hi < 1.0, diff.0 > 0.0 || diff.1 < 0.0, "trial {trial}");
            }
        }
    }

    #[test]
    fn a_denominator_indistinguishable_from_zero_gives_an_unbounded_interval() {
        let num = [5.0, 6.0, 4.0, 5.5];
        let den = [1.0, -1.0, 0.5, -0.4];
        assert_eq!(fieller(&num, &den, 0.95).unwrap().interval, Some(RatioInterval::Unbounded));
        // A new function: zero in every baseline run.
        let r = fieller(&num, &[0.0; 4], 0.95).unwrap();
        assert_eq!(r.interval, Some(RatioInterval::Unbounded));
        assert!(r.ratio.is_infinite());
    }

    #[test]
    fn a_constant_denominator_scales_the_numerator_interval() {
        let num = [2.0, 2.2, 1.8, 2.1, 1.9];
        let den = [4.0; 5];
        let Some(RatioInterval::Bounded(lo, hi)) = fieller(&num, &den, 0.95).unwrap().interval else { panic!() };
        let t = t_quantile(0.95, 4.0).unwrap();
        let se = (covariance(&num, &num) / 5.0).sqrt();
        assert!((lo - (2.0 - t * se) / 4.0).abs() < 1e-12 && (hi - (2.0 + t * se) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn t_quantiles_reach_far_tails() {
        assert!((t_quantile(0.95, 1e9).unwrap() - 1.959964).abs() < 1e-5);
        assert!((t_quantile(0.95, 9.0).unwrap() - 2.262157).abs() < 1e-5);
        // 1 − 10⁻⁶ two-sided at 20 df: SciPy t.ppf(1 − 5e-7, 20) = 7.1258…
        let far = t_quantile(1.0 - 1e-6, 20.0).unwrap();
        assert!(far > 6.5 && far < 7.5, "{far}");
        assert_eq!(t_quantile(0.95, 0.0), None);
        assert_eq!(t_quantile(1.0, 5.0), None);
    }
}
