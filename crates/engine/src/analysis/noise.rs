//! What the rounds' noise decides and tells: the estimator chosen from the shape of the
//! paired log ratios as the looks go on, what a `--budget` can promise after its first
//! look, and what a comparison a limit left undecided learned anyway — the largest
//! change still possible, the noise, and how long a decision would take
//! (docs/statistics.md, "Verdicts as fast as the noise allows").

use super::{deciding_metrics, verdict};
use crate::plan::schedule::LookSchedule;
use crate::plan::Plan;
use perflab_model::{Comparison, Estimation, Estimator, Experiment, Learned, Promise, Settings, Verdict};
use perflab_stats::{estimator, normal_quantile_two_sided, signed_rank, summary};

/// The first look at or after this many rounds chooses the estimator. Earlier looks use
/// Hodges–Lehmann (a quiet machine decides there, where the choice would buy little).
pub const PILOT_ROUNDS: u32 = 20;

/// Below this many rounds every look chooses again: a choice on ~20 rounds tells a 2×
/// difference in efficiency from a tie only roughly, and each look's rounds show the
/// shape better. From here ([`estimator::SHAPE_ROUNDS`], the most a choice looks at) the
/// choice is made again only when the rounds have doubled, where its cost would
/// otherwise grow with the rounds while its information no longer does.
pub const CHOOSE_AT_EVERY_LOOK_BELOW: u32 = estimator::SHAPE_ROUNDS as u32;

/// Another estimator replaces Hodges–Lehmann only when it needs at most this share of
/// its rounds on the rounds' shape: a switch restarts the sequential boundaries (a little
/// α is lost with the earlier looks), so near-ties keep the default.
pub const SWITCH_BELOW: f64 = 0.8;

/// The estimators the choice considers.
pub const CANDIDATES: [Estimator; 3] = Estimator::ALL;

/// z for 80 % power.
const POWER_Z: f64 = 0.8416;

/// How the deciding comparisons are estimated before any choice: as asked, else
/// Hodges–Lehmann (what the looks before the pilot use, and the choice's default).
pub fn initial(settings: &Settings) -> Estimation {
    match settings.estimator {
        Some(estimator) => Estimation {
            estimator,
            how: "asked".into(),
            from_round: 0,
            metric: String::new(),
            relative_variance: Vec::new(),
        },
        None => Estimation {
            estimator: Estimator::HodgesLehmann,
            how: "default".into(),
            from_round: 0,
            metric: String::new(),
            relative_variance: Vec::new(),
        },
    }
}

/// The estimator of `metric`'s comparisons: the experiment's choice for the deciding
/// metrics, Hodges–Lehmann for the others.
pub fn estimator_of(plan: &Plan, experiment: &Experiment, metric: &str) -> Estimator {
    match &experiment.estimation {
        Some(e) if deciding_metrics(plan, experiment).iter().any(|m| m == metric) => e.estimator,
        _ => Estimator::HodgesLehmann,
    }
}

/// Every candidate's per-round log ratios of the deciding metrics, each centered on its
/// own Hodges–Lehmann estimate and pooled: the shape of the noise, with every change
/// taken out.
fn centered_ratios(plan: &Plan, experiment: &Experiment) -> Vec<f64> {
    let Some((base, candidates)) = experiment.commands.split_first() else { return Vec::new() };
    let mut pooled = Vec::new();
    for cand in candidates {
        for metric in deciding_metrics(plan, experiment) {
            let (b, c) = verdict::pairs(base, cand, &metric);
            let d = verdict::log_ratios(&b, &c);
            let center = signed_rank::hodges_lehmann(&d);
            if center.is_finite() {
                pooled.extend(d.iter().map(|x| x - center));
            }
        }
    }
    pooled
}

/// Unless an estimator was asked for (`estimator_by_shape`, the default), at a look after
/// `rounds` rounds (the one before was at `previous_look`): the estimator chosen from the
/// rounds' shape when one is due — at the pilot look (the first with [`PILOT_ROUNDS`]),
/// then at every look below [`CHOOSE_AT_EVERY_LOOK_BELOW`], then at the looks that
/// double it (800, 1,600, …), and whenever the deciding metric changed at this look
/// (its looks restart anyway); None otherwise. A choice that keeps the estimator keeps
/// the round it was first chosen at. The caller restarts the sequential boundaries when
/// the estimator changes.
pub fn choose_at_look(
    plan: &Plan,
    experiment: &Experiment,
    rounds: u32,
    previous_look: u32,
    metric_switched: bool,
) -> Option<Estimation> {
    let current = experiment.estimation.as_ref()?;
    let due = match current.how.as_str() {
        _ if !experiment.settings.estimator_by_shape => false,
        "asked" => false,
        "shape" => metric_switched || chosen_again(rounds, previous_look),
        _ => rounds >= PILOT_ROUNDS,
    };
    if !due {
        return None;
    }
    let choice = estimator::choose(&centered_ratios(plan, experiment), &CANDIDATES, SWITCH_BELOW)?;
    let kept = current.how == "shape" && current.estimator == choice.estimator && !metric_switched;
    Some(Estimation {
        estimator: choice.estimator,
        how: "shape".into(),
        from_round: if kept { current.from_round } else { rounds },
        metric: experiment.primary_metric.clone(),
        relative_variance: choice.relative_variance,
    })
}

/// Whether a look at `rounds` after one at `previous_look` makes the choice again: below
/// [`CHOOSE_AT_EVERY_LOOK_BELOW`] always, beyond it at the first look past each doubling.
fn chosen_again(rounds: u32, previous_look: u32) -> bool {
    let doublings = |n: u32| (n / CHOOSE_AT_EVERY_LOOK_BELOW).checked_ilog2();
    rounds < CHOOSE_AT_EVERY_LOOK_BELOW || doublings(rounds) > doublings(previous_look)
}

/// z of the last look of the default design at `rounds` rounds with that horizon and
/// `candidates` comparisons (what a decision at that many rounds would use).
fn design_z(settings: &Settings, candidates: usize, rounds: u32) -> Option<f64> {
    let mut looks = LookSchedule::sequential(settings.looks, settings.confidence, candidates, settings.min_rounds);
    let mut last = None;
    let mut n = settings.min_rounds.max(2);
    // Only the looks' rounds matter: jump from look to look instead of round by round.
    while n <= rounds {
        if looks.is_look(n) {
            if let Some(level) = looks.take_look(n, rounds) {
                last = Some(level);
            }
        }
        n = if n == rounds { rounds + 1 } else { next_look(&looks, n).min(rounds) };
    }
    // The family level, split over the candidates as each comparison's interval is.
    last.map(|level| normal_quantile_two_sided(1.0 - (1.0 - level) / candidates.max(1) as f64))
}

/// The next round at which `looks` looks, after `n`.
fn next_look(looks: &LookSchedule, n: u32) -> u32 {
    (n + 1..).find(|&k| looks.is_look(k)).unwrap_or(n + 1)
}

/// Rounds after which the default design decides a change of `effect` (log scale) in
/// 80 % of experiments when the estimator's spread per round is `sigma`; None beyond
/// 10⁷ rounds.
fn rounds_to_detect(settings: &Settings, candidates: usize, sigma: f64, effect: f64) -> Option<u32> {
    if !(sigma > 0.0 && effect > 0.0) {
        return None;
    }
    let mut z = 2.8;
    let mut n = 0.0;
    // n depends on the boundary, the boundary a little on n: a few rounds of fixed point.
    for _ in 0..4 {
        n = ((z + POWER_Z) * sigma / effect).powi(2).ceil().max(settings.min_rounds as f64);
        if n > 1e7 {
            return None;
        }
        z = design_z(settings, candidates, n as u32).unwrap_or(z);
    }
    Some(n as u32)
}

/// Robust σ of the paired log ratios of `metric` between the first command and `candidate`.
fn paired_sigma(experiment: &Experiment, candidate: &str, metric: &str) -> Option<f64> {
    let base = experiment.commands.first()?;
    let cand = experiment.commands.iter().find(|c| c.name == candidate)?;
    let (b, c) = verdict::pairs(base, cand, metric);
    let d = verdict::log_ratios(&b, &c);
    (d.len() >= 2).then(|| summary::mad_scaled(&d))
}

/// Seconds per measured round so far (the warm-up's included in the clock, not counted).
fn round_seconds(experiment: &Experiment) -> f64 {
    experiment.duration_s / (experiment.rounds + experiment.settings.warmup_rounds).max(1) as f64
}

/// For every deciding comparison without a verdict but with an interval: the change
/// still possible either way, the noise, and the rounds (and seconds at this pace) a
/// change at the threshold would take to decide.
pub fn learned(plan: &Plan, experiment: &Experiment) -> Vec<Learned> {
    let deciding = deciding_metrics(plan, experiment);
    let candidates = experiment.commands.len().saturating_sub(1).max(1) * deciding.len().max(1);
    let effect = (1.0 + experiment.settings.threshold).ln();
    let round_s = round_seconds(experiment);
    experiment
        .comparisons
        .iter()
        .filter(|c| deciding.contains(&c.metric) && c.verdict == Verdict::Inconclusive)
        .filter(|c| c.ci_high.is_finite() && c.ci_low > 0.0 && c.n >= 2)
        .map(|c| {
            let z = normal_quantile_two_sided(c.look_confidence);
            let estimator_sigma = (c.ci_high.ln() - c.ci_low.ln()) / 2.0 * (c.n as f64).sqrt() / z;
            // Across layouts, more rounds narrow only the runs' share of the interval:
            // no number of rounds is promised (the layouts' note says what would help).
            let rounds = match plan.layouts {
                Some(_) => None,
                None => rounds_to_detect(&experiment.settings, candidates, estimator_sigma, effect),
            };
            Learned {
                candidate: c.candidate.clone(),
                metric: c.metric.clone(),
                down: 1.0 - c.ci_low,
                up: c.ci_high - 1.0,
                confidence: c.confidence,
                paired_sigma: paired_sigma(experiment, &c.candidate, &c.metric).unwrap_or(f64::NAN),
                estimator_sigma,
                rounds_to_decide: rounds,
                seconds_to_decide: rounds.map(|n| n as f64 * round_s),
            }
        })
        .collect()
}

/// What `--budget` can promise at a look after `rounds` rounds that took `round_s` each:
/// the rounds that fit in what is left of it, and the interval's half-width and the
/// change found in 80 % of experiments by the deadline at the noise seen so far (the
/// noisiest candidate's). The spread per round is read off the look's own intervals
/// (`at_look`, as [`learned`] does) where they have one: they carry the estimator, the
/// noise's tails and the rounds' correlation, which a normal model of the robust σ
/// missed (its promises were 1.3–1.6× too narrow, scripts/eval-budget); the σ model
/// stands in where no interval is bounded. None without a budget or before two rounds.
pub fn promise(
    plan: &Plan,
    experiment: &Experiment,
    rounds: u32,
    round_s: f64,
    elapsed_s: f64,
    at_look: &[Comparison],
) -> Option<Promise> {
    let budget_s = experiment.settings.budget_s?;
    if rounds < 2 || round_s <= 0.0 {
        return None;
    }
    let deciding = deciding_metrics(plan, experiment);
    let candidates = experiment.commands.len().saturating_sub(1).max(1) * deciding.len().max(1);
    let sigma = experiment
        .commands
        .iter()
        .skip(1)
        .flat_map(|c| deciding.iter().filter_map(|m| paired_sigma(experiment, &c.name, m)))
        .fold(f64::NAN, f64::max);
    if !sigma.is_finite() {
        return None;
    }
    let total = rounds + ((budget_s - elapsed_s).max(0.0) / round_s).floor() as u32;
    let total = total.min(plan.settings.max_rounds).max(rounds);
    // The look's intervals: half-width × √n ÷ z is the estimator's spread per round.
    let from_intervals = at_look
        .iter()
        .filter(|c| deciding.contains(&c.metric) && c.ci_high.is_finite() && c.ci_low > 0.0 && c.n >= 2)
        .map(|c| {
            (c.ci_high.ln() - c.ci_low.ln()) / 2.0 * (c.n as f64).sqrt() / normal_quantile_two_sided(c.look_confidence)
        })
        .fold(f64::NAN, f64::max);
    // Else Hodges–Lehmann's spread per round on normal noise of robust σ: σ·√(π/3).
    let per_round =
        if from_intervals.is_finite() { from_intervals } else { sigma * (std::f64::consts::PI / 3.0).sqrt() };
    let spread = per_round / (total as f64).sqrt();
    let z = design_z(&experiment.settings, candidates, total)?;
    Some(Promise {
        budget_s,
        after_rounds: rounds,
        round_s,
        rounds: total,
        paired_sigma: sigma,
        resolution: (z * spread).exp() - 1.0,
        detectable: ((z + POWER_Z) * spread).exp() - 1.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_made_at_every_look_below_400_rounds_then_past_each_doubling() {
        assert!(chosen_again(22, 18) && chosen_again(393, 327));
        // Looks at 472, 566, 680, 816: only the one past 800 chooses; then past 1,600, 3,200.
        assert!(chosen_again(472, 393));
        assert!(!chosen_again(566, 472) && !chosen_again(680, 566) && !chosen_again(1500, 1250));
        assert!(chosen_again(816, 680) && chosen_again(1700, 1500) && chosen_again(3300, 3000));
    }

    #[test]
    fn the_design_boundary_is_that_of_the_schedule_and_widens_with_candidates() {
        let s = Settings::default();
        let one = design_z(&s, 1, 400).unwrap();
        // The logarithmic design's looks sit near z = 2.7–2.9 (docs/statistics.md).
        assert!((2.5..3.1).contains(&one), "{one}");
        assert!(design_z(&s, 3, 400).unwrap() > one);
        assert_eq!(design_z(&s, 1, 5), None, "fewer rounds than the first look");
        // A single look at 6 rounds spends all of α: the fixed-size 95 % interval.
        assert!((design_z(&s, 1, 6).unwrap() - 1.96).abs() < 0.01);
    }

    #[test]
    fn rounds_to_detect_follow_the_square_of_noise_over_effect() {
        let s = Settings::default();
        let n1 = rounds_to_detect(&s, 1, 0.02, 0.01).unwrap();
        let n2 = rounds_to_detect(&s, 1, 0.04, 0.01).unwrap();
        // (z + 0.84)² σ²/δ² with z ≈ 2.8: ~53 rounds at σ = 2 %, 4 × at 4 %.
        assert!((45..70).contains(&n1), "{n1}");
        assert!((n2 as f64 / n1 as f64 - 4.0).abs() < 0.5, "{n1} {n2}");
        assert_eq!(rounds_to_detect(&s, 1, 0.0, 0.01), None);
        assert_eq!(rounds_to_detect(&s, 1, 10.0, 1e-5), None, "beyond 10⁷ rounds");
    }
}
