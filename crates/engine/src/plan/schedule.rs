//! The design of the experiment: which command runs when, with what environment
//! padding, and at which rounds the statistics are looked at.
//!
//! * Rounds are randomized and interleaved (Abedi & Brecht, ICPE 2017): every round
//!   runs each command once in a fresh random order, so drift of the machine hits all
//!   commands alike and pairs within a round share their conditions.
//! * Each round pads the environment with a random 0–4095-byte variable, the same for
//!   every command of the round (Mytkowicz et al., ASPLOS 2009): layouts vary across
//!   rounds, which averages out the layout bias, but stay paired within a round.
//! * Looks follow a geometric schedule and spend the error rate α over them with
//!   Lan–DeMets group-sequential boundaries over the rounds the limits allow (the
//!   intervals of all looks hold together with probability 1 − α, so stopping at the
//!   first decisive look keeps its 95 % promise), or, as before, by the union bound
//!   `α_k = α / (k (k + 1))` (see docs/statistics.md).

use perflab_model::LookDesign;
use perflab_stats::sequential::{nominal_alpha, Boundaries, Spending};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const MAX_PAD_BYTES: usize = 4095;

/// One round: the order in which commands run and the padding they share.
#[derive(Debug, Clone)]
pub struct Round {
    pub order: Vec<usize>,
    /// Bytes of the padding variable's value; `None` adds no variable at all.
    pub pad_bytes: Option<usize>,
}

/// Draws rounds from a seeded generator, so an experiment can be replayed.
pub(crate) struct RoundPlanner {
    rng: StdRng,
    commands: usize,
    padding: bool,
}

impl RoundPlanner {
    pub fn new(seed: u64, commands: usize, padding: bool) -> Self {
        RoundPlanner { rng: StdRng::seed_from_u64(seed), commands, padding }
    }

    pub(crate) fn next_round(&mut self) -> Round {
        let mut order: Vec<usize> = (0..self.commands).collect();
        order.shuffle(&mut self.rng);
        // Without padding no variable is added at all (instruction counts move with
        // the environment's size, so that mode keeps it fixed).
        let pad_bytes = self.padding.then(|| self.rng.gen_range(0..=MAX_PAD_BYTES));
        Round { order, pad_bytes }
    }
}

/// When to look at the statistics, and at what level.
#[derive(Debug, Clone)]
pub(crate) struct LookSchedule {
    /// Error rate per comparison over all looks: α / candidates (Bonferroni).
    alpha: f64,
    candidates: f64,
    next_look_at: u32,
    rule: Rule,
}

#[derive(Debug, Clone)]
enum Rule {
    /// One look after exactly `--rounds` rounds at the nominal level.
    Fixed,
    /// α_k = α / (k (k + 1)) at the k-th look that can decide something.
    UnionBound { looks_spent: u32 },
    /// Lan–DeMets boundaries over `horizon` rounds, both set at the first look (the
    /// logarithmic spending's start depends on the horizon).
    GroupSequential { spending: Spending, boundaries: Option<Boundaries>, horizon: Option<u32> },
}

/// Rounds grow by this factor between looks. With the union bound every look costs
/// level, so looks were few (×1.5); group-sequential boundaries account for the strong
/// correlation between close looks, so denser looks cost little and stop sooner.
const UNION_BOUND_GROWTH: f64 = 1.5;
const GROUP_SEQUENTIAL_GROWTH: f64 = 1.2;
/// The power of the front-loaded logarithmic spending: (share of the doublings)^0.7.
/// Chosen by `crates/stats/examples/seq_design_sim.rs` among 0.5, 0.7 and 1: 0.7 stops
/// clear changes 17–20 % sooner and never later at the median, while 0.5 took more rounds
/// at the 90th percentile where comparisons decide late (σ 2.3 %; docs/statistics.md).
const FRONT_POWER: f64 = 0.7;
/// Logarithmic spending starts at the first look's rounds divided by this (one look
/// step below it), so the first look spends one look's share.
const LOGARITHMIC_START_BELOW: f64 = GROUP_SEQUENTIAL_GROWTH;

impl LookSchedule {
    /// Sequential looks from `min_rounds` on, spending `1 − confidence` per the design,
    /// split evenly over `candidates` comparisons.
    pub fn sequential(design: LookDesign, confidence: f64, candidates: usize, min_rounds: u32) -> Self {
        let candidates = candidates.max(1) as f64;
        let alpha = (1.0 - confidence) / candidates;
        let spending = match design {
            LookDesign::UnionBound => None,
            LookDesign::Pocock => Some(Spending::Pocock),
            // Its start depends on the horizon: set at the first look.
            LookDesign::Logarithmic => Some(Spending::Logarithmic { start: 0.0 }),
            LookDesign::LogarithmicFront => Some(Spending::LogPower { start: 0.0, power: FRONT_POWER }),
        };
        let rule = match spending {
            None => Rule::UnionBound { looks_spent: 0 },
            Some(spending) => Rule::GroupSequential { spending, boundaries: None, horizon: None },
        };
        LookSchedule { alpha, candidates, next_look_at: min_rounds.max(2), rule }
    }

    /// A single look after exactly `rounds` rounds, at the nominal level.
    pub fn fixed(confidence: f64, candidates: usize, rounds: u32) -> Self {
        let candidates = candidates.max(1) as f64;
        LookSchedule { alpha: (1.0 - confidence) / candidates, candidates, next_look_at: rounds, rule: Rule::Fixed }
    }

    /// True when the statistics should be looked at after `rounds` rounds.
    pub(crate) fn is_look(&self, rounds: u32) -> bool {
        rounds >= self.next_look_at
    }

    /// The level for a look now at `rounds` rounds (family-wise over the candidates:
    /// each comparison's interval is at 1 − (1 − level)/candidates), then schedules the
    /// next look. `affordable` is how many rounds the limits allow at the pace so far;
    /// the first look plans the group-sequential horizon with it.
    ///
    /// Returns None (and spends nothing) when no distribution-free interval at that level
    /// can exist with this few rounds — that depends only on `rounds`, not on the data,
    /// so skipping such looks keeps the guarantee.
    pub(crate) fn take_look(&mut self, rounds: u32, affordable: u32) -> Option<f64> {
        let growth = match self.rule {
            Rule::GroupSequential { .. } => GROUP_SEQUENTIAL_GROWTH,
            _ => UNION_BOUND_GROWTH,
        };
        self.next_look_at = ((rounds as f64 * growth).ceil() as u32).max(rounds + 1);
        let alpha = match &mut self.rule {
            Rule::Fixed => self.alpha,
            Rule::UnionBound { looks_spent } => {
                let k = (*looks_spent + 1) as f64;
                let alpha = self.alpha / (k * (k + 1.0));
                if interval_attainable(rounds, alpha) {
                    *looks_spent += 1;
                }
                alpha
            }
            Rule::GroupSequential { spending, boundaries, horizon } => {
                let horizon = *horizon.get_or_insert(affordable.max(rounds));
                let boundaries = boundaries.get_or_insert_with(|| {
                    let spending = match *spending {
                        // Spending starts below the first look, so that look can spend.
                        Spending::Logarithmic { .. } => Spending::Logarithmic {
                            start: (rounds as f64 / LOGARITHMIC_START_BELOW / horizon as f64).min(0.5),
                        },
                        Spending::LogPower { power, .. } => Spending::LogPower {
                            start: (rounds as f64 / LOGARITHMIC_START_BELOW / horizon as f64).min(0.5),
                            power,
                        },
                        other => other,
                    };
                    Boundaries::new(self.alpha, spending)
                });
                if rounds < horizon {
                    self.next_look_at = self.next_look_at.min(horizon);
                }
                let t = (rounds as f64 / horizon as f64).min(1.0);
                let c = boundaries.boundary(t, rounds >= horizon);
                let alpha = nominal_alpha(c);
                if interval_attainable(rounds, alpha) {
                    boundaries.take(t, c);
                }
                alpha
            }
        };
        interval_attainable(rounds, alpha).then(|| self.family_level(alpha))
    }

    /// The level of a final look at `rounds` forced by a limit (or an interrupt): it
    /// spends whatever the design has left.
    pub fn final_look(&mut self, rounds: u32) -> f64 {
        let alpha = match &mut self.rule {
            Rule::Fixed => self.alpha,
            Rule::UnionBound { looks_spent } => {
                *looks_spent += 1;
                let k = *looks_spent as f64;
                self.alpha / (k * (k + 1.0))
            }
            Rule::GroupSequential { spending, boundaries, horizon } => {
                // Without an earlier look the final one spends all of α, whatever the spending.
                let boundaries = boundaries.get_or_insert_with(|| Boundaries::new(self.alpha, *spending));
                let t = horizon.map_or(1.0, |h| (rounds as f64 / h as f64).min(1.0));
                let c = boundaries.boundary(t, true);
                boundaries.take(t, c);
                nominal_alpha(c)
            }
        };
        self.family_level(alpha)
    }

    /// The metric that decides changed (the machine became busy): the looks from now on
    /// test a new statistic with what is left of α (see [`Boundaries::restart`]). The
    /// union bound and a single fixed look need nothing: their levels never depended
    /// on earlier looks.
    pub(crate) fn restart_statistic(&mut self) {
        if let Rule::GroupSequential { boundaries: Some(boundaries), .. } = &mut self.rule {
            boundaries.restart();
        }
    }

    /// True once the group-sequential horizon is reached: its α is spent.
    pub(crate) fn planned_rounds_done(&self, rounds: u32) -> bool {
        matches!(self.rule, Rule::GroupSequential { horizon: Some(h), .. } if rounds >= h)
    }

    fn family_level(&self, alpha_per_comparison: f64) -> f64 {
        1.0 - alpha_per_comparison * self.candidates
    }
}

/// The smallest two-sided level the Wilcoxon signed-rank interval reaches with `n`
/// untied pairs is 2 / 2ⁿ; a smaller α cannot be met.
pub(crate) fn interval_attainable(n: u32, alpha: f64) -> bool {
    n >= 63 || 2.0 / (1u64 << n) as f64 <= alpha
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_runs_every_command_once_in_varying_orders() {
        let mut planner = RoundPlanner::new(7, 3, true);
        let mut orders = std::collections::HashSet::new();
        for _ in 0..50 {
            let round = planner.next_round();
            let mut sorted = round.order.clone();
            sorted.sort();
            assert_eq!(sorted, vec![0, 1, 2]);
            assert!(round.pad_bytes.is_some_and(|b| b <= MAX_PAD_BYTES));
            orders.insert(round.order);
        }
        assert_eq!(orders.len(), 6, "all 3! orders appear in 50 rounds");
    }

    #[test]
    fn same_seed_same_plan_and_no_padding_adds_no_variable() {
        let a: Vec<_> = (0..10)
            .map({
                let mut p = RoundPlanner::new(42, 2, true);
                move |_| p.next_round().order
            })
            .collect();
        let b: Vec<_> = (0..10)
            .map({
                let mut p = RoundPlanner::new(42, 2, true);
                move |_| p.next_round().order
            })
            .collect();
        assert_eq!(a, b);
        assert_eq!(RoundPlanner::new(1, 2, false).next_round().pad_bytes, None);
    }

    /// (rounds, level) of every look a schedule takes up to `last` rounds.
    fn looks(mut s: LookSchedule, last: u32, affordable: u32) -> Vec<(u32, f64)> {
        let mut taken = Vec::new();
        for rounds in 1..=last {
            if s.is_look(rounds) {
                taken.extend(s.take_look(rounds, affordable).map(|level| (rounds, level)));
            }
        }
        taken
    }

    #[test]
    fn union_bound_spending_sums_to_alpha_and_looks_grow_geometrically() {
        let taken = looks(LookSchedule::sequential(LookDesign::UnionBound, 0.95, 1, 6), 2000, 10_000);
        let spent: f64 = taken.iter().map(|(_, level)| 1.0 - level).sum();
        assert!(spent < 0.05 && spent > 0.045, "spent {spent}");
        // 6 rounds cannot give a 97.5 % interval (2/64 > 0.025): the first real look is at 9.
        assert_eq!(taken[..4].iter().map(|l| l.0).collect::<Vec<_>>(), [9, 14, 21, 32]);
    }

    #[test]
    fn group_sequential_looks_are_denser_and_narrower_than_the_union_bound() {
        let gs = looks(LookSchedule::sequential(LookDesign::Logarithmic, 0.95, 1, 6), 400, 400);
        let ub = looks(LookSchedule::sequential(LookDesign::UnionBound, 0.95, 1, 6), 400, 400);
        assert!(gs.len() > ub.len(), "{gs:?}");
        // From the third union-bound look on, the group-sequential look just before it
        // already allows a narrower interval (a lower level).
        for &(rounds, level) in &ub[2..] {
            let (_, gs_level) = gs.iter().rev().find(|(r, _)| *r <= rounds).unwrap();
            assert!(*gs_level < level, "at {rounds} rounds: group-sequential {gs_level}, union bound {level}");
        }
        // The last look is at the horizon and the design is spent there.
        assert_eq!(gs.last().unwrap().0, 400);
        let mut s = LookSchedule::sequential(LookDesign::Logarithmic, 0.95, 1, 6);
        for rounds in 1..=399 {
            if s.is_look(rounds) {
                s.take_look(rounds, 400);
            }
        }
        assert!(!s.planned_rounds_done(399) && s.planned_rounds_done(400));
    }

    #[test]
    fn a_limit_before_the_horizon_spends_what_is_left() {
        let mut s = LookSchedule::sequential(LookDesign::Pocock, 0.95, 1, 6);
        let level = s.take_look(20, 400).unwrap();
        let last = s.final_look(30);
        assert!(last < level, "the final look gets all that is left: {last} vs {level}");
        assert!(last > 0.95, "but never more than α in total: {last}");
    }

    #[test]
    fn candidates_share_alpha() {
        let one = LookSchedule::sequential(LookDesign::Pocock, 0.95, 1, 6).take_look(50, 400).unwrap();
        let three = LookSchedule::sequential(LookDesign::Pocock, 0.95, 3, 6).take_look(50, 400).unwrap();
        // The family level is about the same; each comparison gets a third of its α.
        assert!(((1.0 - three) - (1.0 - one)).abs() < 0.2 * (1.0 - one), "{one} {three}");
    }

    #[test]
    fn fixed_schedule_looks_once_at_the_nominal_level() {
        let mut s = LookSchedule::fixed(0.95, 1, 20);
        assert!(!s.is_look(19));
        assert!(s.is_look(20));
        assert_eq!(s.take_look(20, 20), Some(0.95));
    }

    #[test]
    fn attainability_matches_the_exact_distribution() {
        assert!(!interval_attainable(5, 0.05)); // 2/32 = 0.0625
        assert!(interval_attainable(6, 0.05)); // 2/64 = 0.031
        assert!(!interval_attainable(6, 0.025));
        assert!(interval_attainable(100, 1e-9));
    }
}
