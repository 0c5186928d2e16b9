//! Student's two-sample t-test with pooled variance (Student 1908): the label-level check
//! of history change points, where each label contributes one value (its median) and label
//! effects — the machine state a label was measured in — are the noise that matters.

use super::summary::mean;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A pooled two-sample t-test of `b` against `a`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PooledT {
    /// mean(b) − mean(a).
    pub difference: f64,
    /// Standard error of the difference (0 when both samples are constant).
    pub se: f64,
    /// Degrees of freedom (n_a + n_b − 2).
    pub df: f64,
    /// Two-sided p-value, as SciPy's `ttest_ind(b, a, equal_var=True)`.
    pub p_value: f64,
}

impl PooledT {
    /// The two-sided interval of the difference at `confidence`.
    pub fn interval(&self, confidence: f64) -> Option<(f64, f64)> {
        if !super::valid_confidence(confidence) {
            return None;
        }
        let t = StudentsT::new(0.0, 1.0, self.df).ok()?.inverse_cdf(0.5 + confidence / 2.0);
        Some((self.difference - t * self.se, self.difference + t * self.se))
    }
}

/// The pooled t-test of `b` against `a`; None with fewer than three values in all (no
/// degree of freedom) or a non-finite value. Two constant samples give p = 0 when their
/// values differ and p = 1 when they are equal (SciPy returns NaN for both).
pub fn pooled_t(a: &[f64], b: &[f64]) -> Option<PooledT> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 || m + n < 3 || a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let df = (m + n - 2) as f64;
    let squares = |x: &[f64]| {
        let c = mean(x);
        x.iter().map(|v| (v - c) * (v - c)).sum::<f64>()
    };
    let pooled_variance = (squares(a) + squares(b)) / df;
    let difference = mean(b) - mean(a);
    let se = (pooled_variance * (1.0 / m as f64 + 1.0 / n as f64)).sqrt();
    let p_value = if se > 0.0 {
        let distribution = StudentsT::new(0.0, 1.0, df).ok()?;
        (2.0 * distribution.sf((difference / se).abs())).min(1.0)
    } else if difference == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(PooledT { difference, se, df, p_value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_values_or_non_finite_give_none() {
        assert_eq!(pooled_t(&[1.0], &[2.0]), None);
        assert_eq!(pooled_t(&[], &[2.0, 3.0, 4.0]), None);
        assert_eq!(pooled_t(&[1.0, f64::NAN], &[2.0, 3.0]), None);
    }

    #[test]
    fn constant_samples_are_decided_without_a_variance() {
        assert_eq!(pooled_t(&[1.0, 1.0], &[2.0, 2.0]).unwrap().p_value, 0.0);
        assert_eq!(pooled_t(&[1.0, 1.0], &[1.0, 1.0]).unwrap().p_value, 1.0);
    }

    #[test]
    fn interval_is_symmetric_around_the_difference_and_excludes_zero_when_p_is_small() {
        let t = pooled_t(&[1.0, 1.1, 0.9], &[2.0, 2.1, 1.9, 2.05]).unwrap();
        let (lo, hi) = t.interval(0.95).unwrap();
        assert!(((lo + hi) / 2.0 - t.difference).abs() < 1e-12);
        assert!(t.p_value < 0.05 && lo > 0.0);
        assert_eq!(t.interval(1.0), None);
    }
}
