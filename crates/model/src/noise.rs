//! What an experiment says about its noise: which estimator the rounds' shape chose,
//! what a `--budget` promised before the rounds, and what an experiment that ended
//! without a verdict learned anyway (docs/statistics.md, "Verdicts as fast as the noise
//! allows").

pub use perflab_stats::estimator::Estimator;
use serde::{Deserialize, Serialize};

use crate::null_as_nan;

/// The start of the flag of a comparison estimated otherwise than by Hodges–Lehmann.
pub const ESTIMATED_BY: &str = "estimated by ";

/// How the deciding comparisons were estimated.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Estimation {
    /// The estimator that made the deciding comparisons.
    pub estimator: Estimator,
    /// `asked` (--estimator NAME), `default` (no choice was made: it decided before the
    /// pilot look, or it was stored before the choice was the default) or `shape` (chosen
    /// from the rounds, again at later looks).
    pub how: String,
    /// The round of the look that chose this estimator (0: from the start); a later
    /// choice that keeps it keeps the round.
    pub from_round: u32,
    /// The metric whose rounds' shape was measured.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub metric: String,
    /// Each estimator's variance on those rounds relative to Hodges–Lehmann's (the
    /// rounds it would need for the same width, ×).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relative_variance: Vec<(Estimator, f64)>,
}

/// What a deadline (`--budget`) could promise after the first look: the rounds that fit
/// and the interval they would give at the noise seen so far.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Promise {
    /// The deadline asked for, seconds.
    pub budget_s: f64,
    /// The rounds measured when the promise was made.
    pub after_rounds: u32,
    /// Seconds per round so far.
    pub round_s: f64,
    /// Rounds that fit in the budget at that pace.
    pub rounds: u32,
    /// Robust σ of the paired per-round log ratio so far (the noisiest candidate's).
    pub paired_sigma: f64,
    /// The half-width (a fraction) the interval would have at the deadline: changes
    /// larger than this are called, `equivalent` needs the threshold to exceed it.
    #[serde(deserialize_with = "null_as_nan")]
    pub resolution: f64,
    /// The change detected in 80 % of experiments by the deadline.
    #[serde(deserialize_with = "null_as_nan")]
    pub detectable: f64,
}

/// What a comparison left without a verdict (a limit or an interrupt ended it) learned.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Learned {
    /// The candidate command's name.
    pub candidate: String,
    /// The metric compared.
    pub metric: String,
    /// The largest change still possible either way, as fractions: the ratio
    /// candidate/baseline is at least 1 − `down` and at most 1 + `up` (its interval).
    #[serde(deserialize_with = "null_as_nan")]
    pub down: f64,
    /// The largest increase still possible: the ratio is at most 1 + `up`.
    #[serde(deserialize_with = "null_as_nan")]
    pub up: f64,
    /// Family-wise confidence of that statement.
    pub confidence: f64,
    /// Robust σ of the paired per-round log ratio.
    #[serde(deserialize_with = "null_as_nan")]
    pub paired_sigma: f64,
    /// The estimator's own spread per round (its interval's half-width × √n / z).
    #[serde(deserialize_with = "null_as_nan")]
    pub estimator_sigma: f64,
    /// Rounds after which a change at the threshold would be decided in 80 % of
    /// experiments at this noise (None: no estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_to_decide: Option<u32>,
    /// The same at this experiment's pace, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_to_decide: Option<f64>,
}
