//! The 20 % trimmed mean of paired log ratios with its Tukey–McLaughlin t interval
//! (Tukey & McLaughlin 1963; Yuen's standard error, Yuen 1974; Wilcox, *Introduction to
//! Robust Estimation and Hypothesis Testing*, ch. 4.4): the mean of the middle 60 % of
//! the rounds, with the winsorized variance for its spread. Between the mean (all
//! rounds, no protection from tails) and the median (one order statistic); perflab's
//! adaptive choice considers it beside Hodges–Lehmann and the median
//! (`estimator::choose`).

use super::Interval;
use super::{normal_two_sided_p, valid_confidence};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The share trimmed from each end (20 %: Wilcox's recommendation, and what RESEARCH.md
/// measured here as ≈ Hodges–Lehmann).
pub const TRIM: f64 = 0.2;

/// A trimmed mean with its standard error and degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrimmedMean {
    /// The mean of the values left after trimming [`TRIM`] from each end.
    pub estimate: f64,
    /// √((n − 1) s_w² / (h (h − 1))), s_w² the winsorized variance, h = n − 2g.
    pub se: f64,
    /// h − 1.
    pub df: f64,
    /// How many values, before trimming.
    pub n: usize,
}

impl TrimmedMean {
    /// The two-sided t interval at `confidence` (with its nominal coverage); None for a
    /// confidence outside (0, 1) or no degree of freedom.
    pub fn interval(&self, confidence: f64) -> Option<Interval> {
        if !valid_confidence(confidence) || self.df < 1.0 {
            return None;
        }
        let t = StudentsT::new(0.0, 1.0, self.df).ok()?.inverse_cdf(0.5 + confidence / 2.0);
        Some(Interval {
            low: self.estimate - t * self.se,
            high: self.estimate + t * self.se,
            achieved_confidence: confidence,
        })
    }

    /// Two-sided p-value of H₀: the trimmed mean is 0 (1 when the spread is 0 and the
    /// estimate 0, 0 when only the spread is).
    pub fn p_value(&self) -> f64 {
        if self.se > 0.0 {
            match StudentsT::new(0.0, 1.0, self.df.max(1.0)) {
                Ok(t) => (2.0 * t.sf((self.estimate / self.se).abs())).min(1.0),
                Err(_) => normal_two_sided_p(self.estimate / self.se),
            }
        } else if self.estimate == 0.0 {
            1.0
        } else {
            0.0
        }
    }
}

/// The [`TRIM`]-trimmed mean of the finite d; None with fewer than 3 values (no
/// degree of freedom after trimming).
pub fn trimmed_mean(d: &[f64]) -> Option<TrimmedMean> {
    let mut s: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let g = (TRIM * n as f64).floor() as usize;
    let h = n.saturating_sub(2 * g);
    if n < 3 || h < 2 {
        return None;
    }
    let kept = &s[g..n - g];
    let estimate = kept.iter().sum::<f64>() / h as f64;
    let (low, high) = (s[g], s[n - g - 1]);
    let winsorized: Vec<f64> = s.iter().map(|x| x.clamp(low, high)).collect();
    let mean = winsorized.iter().sum::<f64>() / n as f64;
    let variance = winsorized.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    let se = ((n - 1) as f64 * variance / (h as f64 * (h - 1) as f64)).sqrt();
    Some(TrimmedMean { estimate, se, df: (h - 1) as f64, n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_textbook_computation() {
        // 10 values, g = 2: trimmed mean of 3..8 = 5.5; winsorized 3,3,3,4,5,6,7,8,8,8 has
        // variance 4.7222 (numpy var, ddof = 1); se = √(9·4.7222/(6·5)) = 1.1902.
        let d = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        let t = trimmed_mean(&d).unwrap();
        assert_eq!((t.estimate, t.df, t.n), (5.5, 5.0, 10));
        assert!((t.se - (9.0f64 * 4.722222222222222 / 30.0).sqrt()).abs() < 1e-12, "{}", t.se);
        // scipy.stats.t.ppf(0.975, 5) = 2.5706.
        let i = t.interval(0.95).unwrap();
        assert!((i.high - (5.5 + 2.570582 * t.se)).abs() < 1e-5, "{i:?}");
    }

    #[test]
    fn an_outlier_moves_it_little_and_too_few_values_give_none() {
        let clean = trimmed_mean(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        let wild = trimmed_mean(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1e6]).unwrap();
        assert_eq!((clean.estimate, clean.se), (wild.estimate, wild.se));
        assert_eq!(trimmed_mean(&[1.0, 2.0]), None);
        let constant = trimmed_mean(&[2.0; 8]).unwrap();
        assert_eq!((constant.se, constant.p_value()), (0.0, 0.0));
    }
}
