//! perflab's statistics: descriptive summaries, paired and independent rank tests with
//! Hodges–Lehmann estimates and distribution-free intervals, Welch's t-test and change-point
//! detection. Pure functions without I/O, checked against SciPy reference values
//! (`tests/stats_vectors.rs`); methods and references in `docs/statistics.md`.

#![deny(missing_docs)]

pub mod changepoint;
pub mod estimator;
pub mod layouts;
pub mod paired_means;
pub mod rank_sum;
pub mod sequential;
pub mod sessions;
pub mod sign;
pub mod signed_rank;
pub mod student;
pub mod summary;
pub mod synthetic;
pub mod trimmed;
pub mod welch;

mod order;
mod ranks;

/// A confidence interval with the coverage its order statistics actually achieve
/// (≥ the requested confidence; order statistics move in discrete steps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower bound, in the unit of the estimate it brackets.
    pub low: f64,
    /// Upper bound, in the unit of the estimate it brackets.
    pub high: f64,
    /// Coverage actually achieved (a fraction in (0, 1), ≥ the requested confidence).
    pub achieved_confidence: f64,
}

/// Φ(z), accurate in the lower tail.
fn standard_normal_cdf(z: f64) -> f64 {
    statrs::function::erf::erfc(-z / std::f64::consts::SQRT_2) / 2.0
}

/// Two-sided standard normal tail probability 2·P(Z > |z|).
fn normal_two_sided_p(z: f64) -> f64 {
    statrs::function::erf::erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
}

/// The standard normal quantile z with P(Z > z) = `tail`, accurate far into the tail
/// (confidence levels of 0.999999 and beyond are used by sequential looks).
fn normal_upper_quantile(tail: f64) -> f64 {
    std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * tail)
}

/// The z of a two-sided interval at `confidence`: Φ⁻¹(1 − (1 − confidence)/2).
pub fn normal_quantile_two_sided(confidence: f64) -> f64 {
    normal_upper_quantile((1.0 - confidence) / 2.0)
}

/// True when `confidence` is a usable level for an interval.
fn valid_confidence(confidence: f64) -> bool {
    confidence > 0.0 && confidence < 1.0
}
