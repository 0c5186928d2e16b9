//! Welch's unequal-variances t-test (Welch 1947): what "hyperfine + Welch" concludes, for
//! the evaluation script's side-by-side comparison. perflab's own verdicts do not use it.

use super::summary::{mean, stddev};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Two-sided p-value of H₀: equal means, with Welch–Satterthwaite degrees of freedom, as
/// SciPy's `ttest_ind(a, b, equal_var=False)`. None when a sample has fewer than two
/// values or both have zero variance (the statistic is undefined).
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let va = stddev(a).powi(2) / a.len() as f64;
    let vb = stddev(b).powi(2) / b.len() as f64;
    let se2 = va + vb;
    if se2 <= 0.0 || se2.is_nan() {
        return None;
    }
    let t = (mean(b) - mean(a)) / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    let distribution = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * distribution.sf(t.abs())).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_cases_give_none() {
        assert_eq!(welch_p(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(welch_p(&[1.0, 1.0], &[2.0, 2.0]), None);
    }

    #[test]
    fn identical_samples_give_p_one() {
        let p = welch_p(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap();
        assert!((p - 1.0).abs() < 1e-12);
    }
}
