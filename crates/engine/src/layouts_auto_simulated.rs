//! Pairs of code layouts on the simulated machine, for `layouts_auto`'s tests and
//! `examples/layouts_auto_sim.rs`: every layout's true time is its version's × exp(u),
//! u drawn per layout from a layout-effect model, and a pair costs what its builds, its
//! overhead and its simulated runs cost.

use crate::executor::simulated::{Noise, Simulated};
use crate::experiment::{run_experiment, Quiet};
use crate::layouts_auto::{PairRun, PairRunner};
use crate::measure::MeasureOptions;
use crate::plan::{Compared, Plan};
use perflab_model::{metric, CommandSpec, Settings};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};

/// How layouts move a program: the log factor u of one layout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LayoutEffect {
    /// u ~ N(0, τ²).
    Normal(f64),
    /// Two speeds: u = `gap` with probability `share`, else 0 (a hot loop that straddles
    /// a cache line or not); its σ is gap·√(share·(1 − share)).
    TwoSpeeds {
        /// ln of the slow speed over the fast one.
        gap: f64,
        /// The share of layouts at the slow speed.
        share: f64,
    },
}

impl LayoutEffect {
    fn draw(&self, rng: &mut StdRng) -> f64 {
        match *self {
            LayoutEffect::Normal(tau) => tau * Normal::new(0.0, 1.0).unwrap().sample(rng),
            LayoutEffect::TwoSpeeds { gap, share } => {
                if rng.gen_bool(share.clamp(0.0, 1.0)) {
                    gap
                } else {
                    0.0
                }
            }
        }
    }

    /// σ of u.
    pub fn sigma(&self) -> f64 {
        match *self {
            LayoutEffect::Normal(tau) => tau,
            LayoutEffect::TwoSpeeds { gap, share } => gap * (share * (1.0 - share)).sqrt(),
        }
    }
}

/// What a simulated pair costs, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairCost {
    /// Building one layout (a link).
    pub build_s: f64,
    /// A pair's overhead outside its builds and rounds.
    pub overhead_s: f64,
    /// The baseline's true run time (the candidate's is × the ratio).
    pub run_s: f64,
}

/// A [`PairRunner`] on the simulated machine.
pub struct SimulatedPairs {
    rng: StdRng,
    /// How layouts move the program.
    pub effect: LayoutEffect,
    /// The candidate's true time ÷ the baseline's.
    pub ratio: f64,
    /// The runs' own noise.
    pub noise: Noise,
    /// What a pair costs.
    pub cost: PairCost,
    /// The threshold of the settings (`equivalent` within ±it).
    pub threshold: f64,
    /// The rounds and warm-up asked of each pair, in order.
    pub asked: Vec<(u32, bool)>,
    /// What the engine said while the pairs went on.
    pub notes: Vec<String>,
}

impl SimulatedPairs {
    /// Pairs drawn from `seed`; runs of 50 ms with Gaussian noise `sigma`, half a second
    /// of build per pair and no overhead.
    pub fn new(seed: u64, effect: LayoutEffect, ratio: f64, sigma: f64) -> SimulatedPairs {
        SimulatedPairs {
            rng: StdRng::seed_from_u64(seed),
            effect,
            ratio,
            noise: Noise::gaussian(sigma),
            cost: PairCost { build_s: 0.25, overhead_s: 0.0, run_s: 0.05 },
            threshold: Settings::default().threshold,
            asked: vec![],
            notes: vec![],
        }
    }
}

impl PairRunner for SimulatedPairs {
    type Error = String;

    fn run_pair(&mut self, index: usize, rounds: u32, warm_up: bool) -> Result<PairRun, String> {
        self.asked.push((rounds, warm_up));
        let (ua, ub) = (self.effect.draw(&mut self.rng), self.effect.draw(&mut self.rng));
        let commands = ["a", "b"]
            .iter()
            .enumerate()
            .map(|(v, name)| CommandSpec {
                parameters: perflab_model::Layouts::parameters(name, (100 * v + index + 1) as u64),
                ..CommandSpec::bare(&format!("{name}@L{}", index + 1))
            })
            .collect();
        let settings = Settings {
            seed: self.rng.gen(),
            fixed_rounds: Some(rounds),
            warmup_rounds: if warm_up { Settings::default().warmup_rounds } else { 0 },
            threshold: self.threshold,
            ..Settings::default()
        };
        let plan = Plan::new(commands, settings, MeasureOptions::default(), Compared::fixed(vec![metric::WALL.into()]));
        let times = vec![self.cost.run_s * ua.exp(), self.cost.run_s * self.ratio * ub.exp()];
        let mut sim = Simulated::new(self.rng.gen(), times, self.noise.clone());
        let experiment = run_experiment(&plan, &mut sim, &mut Quiet).map_err(|e| e.to_string())?;
        let build_s = 2.0 * self.cost.build_s;
        let elapsed_s = build_s + self.cost.overhead_s + experiment.duration_s;
        Ok(PairRun { experiment, build_s, cached: 0, elapsed_s })
    }

    fn note(&mut self, text: &str) {
        self.notes.push(text.to_string());
    }
}
