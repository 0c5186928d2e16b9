//! How a paired comparison is estimated, and the choice of that estimator from the
//! data's own shape.
//!
//! Three location estimators of the per-round log ratios d, each with its own interval
//! and test: Hodges–Lehmann with the Wilcoxon signed-rank interval (`signed_rank`, the
//! default), the median with the sign-test interval (`sign`), and the 20 % trimmed mean
//! with the Tukey–McLaughlin t interval (`trimmed`). Which is the most efficient
//! depends on the noise: Hodges–Lehmann for near-normal or moderately heavy tails, the
//! median when the center is much sharper than the tails (a machine alternating between
//! speeds: most rounds agree closely, rounds at a change of phase disagree by the
//! phase's size).
//!
//! [`choose`] measures each estimator's variance on the data itself, by the bootstrap
//! (Efron 1979): the rounds are resampled with replacement and every estimator is
//! computed on the same resamples. Every estimator here moves with a shift of the data
//! and turns with its sign, so their bootstrap variances depend only on the rounds'
//! configuration — the same for d, −d and d + any shift: the choice cannot favour the
//! direction or the size of a change. docs/statistics.md has the argument, why not a
//! sign-flip randomization (centering on an estimate makes the center look sharper
//! than it is, which favours the median), and the validation on recorded noise.

use super::{sign, signed_rank, trimmed, Interval};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// A location estimator of paired log ratios, with its interval and test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Estimator {
    /// Median of the Walsh averages; Wilcoxon signed-rank interval and test.
    HodgesLehmann,
    /// Median; sign-test interval and test.
    Median,
    /// 20 % trimmed mean; Tukey–McLaughlin t interval and test.
    TrimmedMean,
}

impl Estimator {
    /// Every estimator, Hodges–Lehmann (the default) first.
    pub const ALL: [Estimator; 3] = [Estimator::HodgesLehmann, Estimator::Median, Estimator::TrimmedMean];

    /// The name `--estimator` and the JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            Estimator::HodgesLehmann => "hodges_lehmann",
            Estimator::Median => "median",
            Estimator::TrimmedMean => "trimmed_mean",
        }
    }

    /// For people: the estimate and the interval it comes with.
    pub fn describe(self) -> &'static str {
        match self {
            Estimator::HodgesLehmann => "Hodges–Lehmann with the signed-rank interval",
            Estimator::Median => "the median with the sign-test interval",
            Estimator::TrimmedMean => "the 20 % trimmed mean with its t interval",
        }
    }

    /// The estimator named `text` (an [`Estimator::as_str`] name, or `hl`); None for any other.
    pub fn parse(text: &str) -> Option<Estimator> {
        Estimator::ALL.into_iter().find(|e| e.as_str() == text || (text == "hl" && *e == Estimator::HodgesLehmann))
    }
}

/// One estimator's estimate of the d's location with its interval and p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Location {
    /// NaN without a finite value.
    pub estimate: f64,
    /// None when no interval of that confidence exists for this many values.
    pub interval: Option<Interval>,
    /// Two-sided p-value of the estimator's own test of location 0.
    pub p_value: f64,
    /// How many values it was estimated from.
    pub n: usize,
}

/// `estimator`'s estimate of the location of the finite `d`, with its interval at
/// `confidence`.
pub fn locate(d: &[f64], estimator: Estimator, confidence: f64) -> Location {
    let finite: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
    let n = finite.len();
    match estimator {
        Estimator::HodgesLehmann => Location {
            estimate: signed_rank::hodges_lehmann(&finite),
            interval: signed_rank::hl_interval(&finite, confidence),
            p_value: signed_rank::wilcoxon_p(&finite).0,
            n,
        },
        Estimator::Median => {
            let (estimate, interval) = sign::median_interval(&finite, confidence);
            Location { estimate, interval, p_value: sign::sign_test_p(&finite), n }
        }
        Estimator::TrimmedMean => match trimmed::trimmed_mean(&finite) {
            Some(t) => Location { estimate: t.estimate, interval: t.interval(confidence), p_value: t.p_value(), n },
            None => Location { estimate: f64::NAN, interval: None, p_value: 1.0, n },
        },
    }
}

/// The estimate alone (for the randomization in [`choose`]).
fn point(d: &[f64], estimator: Estimator) -> f64 {
    match estimator {
        Estimator::HodgesLehmann => signed_rank::hodges_lehmann(d),
        Estimator::Median => sign::median_interval(d, 0.5).0,
        Estimator::TrimmedMean => trimmed::trimmed_mean(d).map_or(f64::NAN, |t| t.estimate),
    }
}

/// Bootstrap resamples per choice: the variance ratios' Monte Carlo error is then a few
/// per cent (the same resamples for every estimator), well below the differences that
/// matter.
pub const RESAMPLES: usize = 500;

/// The most rounds a choice looks at: beyond them, evenly spaced rounds stand for all
/// (every phase of the recording keeps its share). Relative efficiency is a property of
/// the noise's shape, which 400 rounds show as well as thousands; the bootstrap's cost
/// grows with the rounds (about 0.1 ms per round for Hodges–Lehmann's 500 resamples),
/// and the choice is made between rounds, where the user waits for it.
pub const SHAPE_ROUNDS: usize = 400;

/// What [`choose`] saw: each candidate's variance relative to Hodges–Lehmann's on the
/// same rounds (1 for Hodges–Lehmann itself), and the estimator chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The estimator chosen.
    pub estimator: Estimator,
    /// (estimator, its variance ÷ Hodges–Lehmann's): how many times the rounds it
    /// would need for the same interval width.
    pub relative_variance: Vec<(Estimator, f64)>,
    /// Rounds the choice was made on (at most [`SHAPE_ROUNDS`]).
    pub rounds: usize,
}

/// The estimator among `candidates` with the smallest bootstrap variance on these
/// rounds, Hodges–Lehmann unless another needs at most `switch_below` of its rounds (a
/// margin that keeps the default where the estimators tie and a switch would buy
/// nothing). None with fewer than 8 finite values (too few to see a shape). More than
/// [`SHAPE_ROUNDS`] values are thinned to that many, evenly spaced. Deterministic: the
/// resamples come from a fixed seed.
pub fn choose(d: &[f64], candidates: &[Estimator], switch_below: f64) -> Option<Choice> {
    let mut finite: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
    if finite.len() > SHAPE_ROUNDS {
        let all = finite.len();
        finite = (0..SHAPE_ROUNDS).map(|i| finite[i * all / SHAPE_ROUNDS]).collect();
    }
    let n = finite.len();
    if n < 8 {
        return None;
    }
    let mut estimators = vec![Estimator::HodgesLehmann];
    estimators.extend(candidates.iter().copied().filter(|e| *e != Estimator::HodgesLehmann));
    let mut rng = StdRng::seed_from_u64(0x5eed_b007);
    let mut estimates = vec![Vec::with_capacity(RESAMPLES); estimators.len()];
    let mut resample = vec![0.0; n];
    for _ in 0..RESAMPLES {
        for x in resample.iter_mut() {
            *x = finite[rng.gen_range(0..n)];
        }
        for (values, e) in estimates.iter_mut().zip(&estimators) {
            values.push(point(&resample, *e));
        }
    }
    let variance = |values: &[f64]| {
        let finite: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        let mean = finite.iter().sum::<f64>() / finite.len().max(1) as f64;
        finite.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (finite.len().max(2) - 1) as f64
    };
    let baseline = variance(&estimates[0]);
    let relative_variance: Vec<(Estimator, f64)> = estimators
        .iter()
        .zip(&estimates)
        .map(|(e, values)| (*e, if baseline > 0.0 { variance(values) / baseline } else { 1.0 }))
        .collect();
    let (best, ratio) =
        relative_variance.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap_or((Estimator::HodgesLehmann, 1.0));
    let estimator = if ratio <= switch_below { best } else { Estimator::HodgesLehmann };
    Some(Choice { estimator, relative_variance, rounds: n })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, Normal};

    fn sample(seed: u64, n: usize, draw: impl Fn(&mut StdRng) -> f64) -> Vec<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n).map(|_| draw(&mut rng)).collect()
    }

    /// `n` values of a machine with two speeds: a share `quiet` of normal noise of σ
    /// `quiet_sigma`, the rest of `phase_sigma` (a change of phase inside a round).
    fn mixture(seed: u64, n: usize, quiet: f64, quiet_sigma: f64, phase_sigma: f64) -> Vec<f64> {
        sample(seed, n, |r| {
            let z = Normal::new(0.0, 1.0).unwrap().sample(r);
            z * if r.gen_bool(quiet) { quiet_sigma } else { phase_sigma }
        })
    }

    #[test]
    fn every_estimator_locates_a_shift_with_an_interval() {
        let d = sample(1, 60, |r| 0.02 + Normal::new(0.0, 0.01).unwrap().sample(r));
        for e in Estimator::ALL {
            let l = locate(&d, e, 0.95);
            let i = l.interval.unwrap();
            assert!(i.low < 0.02 && 0.02 < i.high && i.low < l.estimate && l.estimate < i.high, "{e:?} {l:?}");
            assert!(l.p_value < 1e-6, "{e:?} {l:?}");
            assert_eq!(l.n, 60);
        }
    }

    #[test]
    fn normal_noise_keeps_hodges_lehmann_and_a_sharp_center_chooses_the_median() {
        // Asymptotically the median needs 1.5 × and the mean of the middle 60 % about
        // 1.06 × Hodges–Lehmann's rounds on normal noise; one sample of 40 rounds tells
        // that only roughly, so 20 samples: the median is rarely chosen, and on average
        // its variance is clearly the larger.
        let choices: Vec<Choice> = (0..20)
            .map(|seed| {
                let normal = sample(100 + seed, 40, |r| Normal::new(0.0, 0.01).unwrap().sample(r));
                choose(&normal, &Estimator::ALL, 0.8).unwrap()
            })
            .collect();
        let kept = choices.iter().filter(|c| c.estimator == Estimator::HodgesLehmann).count();
        assert!(kept >= 16, "{choices:?}");
        let median: f64 = choices.iter().map(|c| c.relative_variance[1].1).sum::<f64>() / 20.0;
        assert!(median > 1.2, "{median}");

        // Two speeds: 70 % of the rounds agree to 0.2 %, the others are off by ±10 % —
        // a change of phase inside a round.
        let phases = mixture(3, 40, 0.7, 0.002, 0.1);
        let c = choose(&phases, &Estimator::ALL, 0.8).unwrap();
        assert_eq!(c.estimator, Estimator::Median, "{c:?}");
    }

    #[test]
    fn many_rounds_are_thinned_to_evenly_spaced_ones() {
        let d = mixture(5, 4000, 0.7, 0.002, 0.1);
        let thinned: Vec<f64> = (0..SHAPE_ROUNDS).map(|i| d[i * 10]).collect();
        let (all, every_tenth) =
            (choose(&d, &Estimator::ALL, 0.8).unwrap(), choose(&thinned, &Estimator::ALL, 0.8).unwrap());
        assert_eq!(all, every_tenth);
        assert_eq!((all.rounds, all.estimator), (SHAPE_ROUNDS, Estimator::Median));
    }

    #[test]
    fn the_choice_ignores_the_direction_and_the_size_of_the_change() {
        let d = mixture(4, 30, 0.8, 0.003, 0.05);
        let shifted: Vec<f64> = d.iter().map(|x| x + 0.3).collect();
        let negated: Vec<f64> = d.iter().map(|x| -x).collect();
        let c = choose(&d, &Estimator::ALL, 0.8).unwrap();
        for other in [&shifted, &negated] {
            let o = choose(other, &Estimator::ALL, 0.8).unwrap();
            assert_eq!(o.estimator, c.estimator);
            for (a, b) in o.relative_variance.iter().zip(&c.relative_variance) {
                assert!((a.1 - b.1).abs() < 1e-9, "{o:?} {c:?}");
            }
        }
    }

    #[test]
    fn too_few_rounds_give_no_choice_and_names_round_trip() {
        assert_eq!(choose(&[0.1, 0.2, 0.3], &Estimator::ALL, 0.8), None);
        for e in Estimator::ALL {
            assert_eq!(Estimator::parse(e.as_str()), Some(e));
        }
        assert_eq!(Estimator::parse("hl"), Some(Estimator::HodgesLehmann));
    }
}
