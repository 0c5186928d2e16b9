//! The design of the experiment: which command runs when, with what environment
//! padding, and at which rounds the statistics are looked at.
//!
//! * Rounds are randomized and interleaved (Abedi & Brecht, ICPE 2017): every round
//!   runs each command once in a fresh random order, so drift of the machine hits all
//!   commands alike and pairs within a round share their conditions.
//! * Each round pads the environment with a random 0–4095-byte variable, the same for
//!   every command of the round (Mytkowicz et al., ASPLOS 2009): layouts vary across
//!   rounds, which averages out the layout bias, but stay paired within a round.
//! * Looks follow a geometric schedule and spend the error rate α over them
//!   (`α_k = α / (k (k + 1))`, which sums to α over any number of looks): by the union
//!   bound the chance that *any* look's interval misses the truth is at most α, so
//!   stopping at the first decisive look keeps its 95 % promise (see docs/statistics.md).

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
pub struct RoundPlanner {
    rng: StdRng,
    commands: usize,
    padding: bool,
}

impl RoundPlanner {
    pub fn new(seed: u64, commands: usize, padding: bool) -> Self {
        RoundPlanner { rng: StdRng::seed_from_u64(seed), commands, padding }
    }

    pub fn next_round(&mut self) -> Round {
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
pub struct LookSchedule {
    /// Family-wise error rate over all looks (1 − confidence).
    alpha: f64,
    next_look_at: u32,
    /// Looks that could decide something so far (k in `α_k`).
    looks_spent: u32,
    fixed: bool,
}

/// Rounds grow by this factor between looks: fewer looks keep each look's level close
/// to the nominal one, more looks stop sooner; 1.5 balances the two.
const LOOK_GROWTH: f64 = 1.5;

impl LookSchedule {
    /// Sequential looks from `min_rounds` on.
    pub fn sequential(confidence: f64, min_rounds: u32) -> Self {
        LookSchedule { alpha: 1.0 - confidence, next_look_at: min_rounds.max(2), looks_spent: 0, fixed: false }
    }

    /// A single look after exactly `rounds` rounds, at the nominal level.
    pub fn fixed(confidence: f64, rounds: u32) -> Self {
        LookSchedule { alpha: 1.0 - confidence, next_look_at: rounds, looks_spent: 0, fixed: true }
    }

    /// True when the statistics should be looked at after `rounds` rounds.
    pub fn is_look(&self, rounds: u32) -> bool {
        rounds >= self.next_look_at
    }

    /// The level for a look now at `rounds` rounds, then schedules the next look.
    /// Returns None (and spends nothing) when no distribution-free interval at that level
    /// can exist with this few rounds — that depends only on `rounds`, not on the data,
    /// so skipping such looks keeps the guarantee.
    pub fn take_look(&mut self, rounds: u32) -> Option<f64> {
        self.next_look_at = ((rounds as f64 * LOOK_GROWTH).ceil() as u32).max(rounds + 1);
        let alpha = self.alpha_at(self.looks_spent + 1);
        if !interval_attainable(rounds, alpha) {
            return None;
        }
        self.looks_spent += 1;
        Some(1.0 - alpha)
    }

    /// The level of a final look forced by a time or round limit (or an interrupt).
    pub fn final_look(&mut self) -> f64 {
        let alpha = self.alpha_at(self.looks_spent + 1);
        self.looks_spent += 1;
        1.0 - alpha
    }

    fn alpha_at(&self, k: u32) -> f64 {
        if self.fixed {
            self.alpha
        } else {
            let k = k as f64;
            self.alpha / (k * (k + 1.0))
        }
    }
}

/// The smallest two-sided level the Wilcoxon signed-rank interval reaches with `n`
/// untied pairs is 2 / 2ⁿ; a smaller α cannot be met.
pub fn interval_attainable(n: u32, alpha: f64) -> bool {
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

    #[test]
    fn spending_sums_to_alpha_and_looks_grow_geometrically() {
        let mut s = LookSchedule::sequential(0.95, 6);
        let mut spent = 0.0;
        let mut looks = Vec::new();
        for rounds in 1..=2000 {
            if s.is_look(rounds) {
                if let Some(level) = s.take_look(rounds) {
                    spent += 1.0 - level;
                    looks.push(rounds);
                }
            }
        }
        assert!(spent < 0.05 && spent > 0.045, "spent {spent}");
        // 6 rounds cannot give a 97.5 % interval (2/64 > 0.025): the first real look is at 9.
        assert_eq!(&looks[..4], &[9, 14, 21, 32]);
    }

    #[test]
    fn fixed_schedule_looks_once_at_the_nominal_level() {
        let mut s = LookSchedule::fixed(0.95, 20);
        assert!(!s.is_look(19));
        assert!(s.is_look(20));
        assert_eq!(s.take_look(20), Some(0.95));
    }

    #[test]
    fn attainability_matches_the_exact_distribution() {
        assert!(!interval_attainable(5, 0.05)); // 2/32 = 0.0625
        assert!(interval_attainable(6, 0.05)); // 2/64 = 0.031
        assert!(!interval_attainable(6, 0.025));
        assert!(interval_attainable(100, 1e-9));
    }
}
