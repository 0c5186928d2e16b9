//! Seeded noise models with known parameters — the ground truth real measurements never
//! have: [`Noise`] (heavy-tailed run noise, drift, stalls, busy neighbours) drives the
//! simulated machine of `executor::simulated` and the synthetic timing series and
//! histories with known shifts used by the statistics' tests and evaluation examples.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, StudentT};

/// The noise of a (simulated) machine, all in log space (0.01 ≈ 1 %).
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    /// Robust (MAD-based) σ of each run's own noise.
    pub run_sigma: f64,
    /// Degrees of freedom of the run noise's Student t distribution (heavy tails:
    /// 2–3 is heavy, large is Gaussian).
    pub tail_df: f64,
    /// Per-run step of the random walk of the machine's speed, shared by runs close in time.
    pub drift_sigma: f64,
    /// Chance that a run is stalled (a neighbour took the CPU) ...
    pub stall_probability: f64,
    /// ... and how much longer a stalled run takes (×(1 + U(0, stall_factor))).
    pub stall_factor: f64,
    /// Share of wall time runs spend waiting for a CPU behind busy neighbours, on
    /// average (the simulated machine only): each run waits its own time ×
    /// busy/(1 − busy) × U(0, 2), measured exactly (`neighbour_wait_s`, and in
    /// `runq_wait_s`), as the kernel does for a single-threaded program.
    pub busy: f64,
    /// The neighbours arrive once the simulated clock passes this many seconds (0: from
    /// the start): a first look that falls in a quiet spell.
    pub busy_after_s: f64,
    /// Share of each run's own time its tasks spend waiting for *each other* (a pinned
    /// ping-pong): in `runq_wait_s`, part of the run's true time, never a neighbour's.
    pub own_wait: f64,
}

/// Above this many degrees of freedom Student's t is the normal distribution to four digits.
const GAUSSIAN_DF: f64 = 1e4;

impl Noise {
    /// No noise at all: every run takes its true time.
    pub fn none() -> Noise {
        Noise {
            run_sigma: 0.0,
            tail_df: 1e9,
            drift_sigma: 0.0,
            stall_probability: 0.0,
            stall_factor: 0.0,
            busy: 0.0,
            busy_after_s: 0.0,
            own_wait: 0.0,
        }
    }

    /// Gaussian run noise of σ `sigma` and nothing else (log-normal factors).
    pub fn gaussian(sigma: f64) -> Noise {
        Noise { run_sigma: sigma, ..Noise::none() }
    }

    /// A machine's timing noise as the simulations model it: run noise of robust σ
    /// `run_sigma` with Student t₃ tails, a slow random walk of the machine's speed
    /// (0.2 % a run) and 2 % of runs stalled by up to 50 %.
    pub fn machine_like(run_sigma: f64) -> Noise {
        Noise {
            run_sigma,
            tail_df: 3.0,
            drift_sigma: 0.002,
            stall_probability: 0.02,
            stall_factor: 0.5,
            ..Noise::none()
        }
    }

    /// Timing-like noise: Student t with 2 degrees of freedom (infinite variance) of
    /// robust σ `sigma`, and a stall of 1–2× in 5 % of the runs.
    pub fn heavy_tailed(sigma: f64) -> Noise {
        Noise { run_sigma: sigma, tail_df: 2.0, stall_probability: 0.05, stall_factor: 1.0, ..Noise::none() }
    }

    /// A source of this noise's per-run factors.
    pub fn sampler(&self) -> NoiseSampler {
        NoiseSampler { noise: self.clone(), t_quartile: student_t_quartile(self.tail_df), log_speed: 0.0 }
    }
}

/// Draws per-run noise factors; keeps the machine's drifting speed between draws.
#[derive(Debug, Clone)]
pub struct NoiseSampler {
    noise: Noise,
    /// Upper quartile of the run noise's t distribution, to scale it to a robust σ.
    t_quartile: f64,
    log_speed: f64,
}

impl NoiseSampler {
    /// The next run's multiplicative factor around 1 (drift, run noise and stall).
    pub fn factor(&mut self, rng: &mut StdRng) -> f64 {
        let n = &self.noise;
        if n.drift_sigma > 0.0 {
            self.log_speed += Normal::new(0.0, n.drift_sigma).expect("finite σ").sample(rng);
        }
        let run_noise = if n.run_sigma > 0.0 {
            let t: f64 = if n.tail_df > GAUSSIAN_DF {
                Normal::new(0.0, 1.0).expect("unit normal").sample(rng)
            } else {
                StudentT::new(n.tail_df).expect("positive df").sample(rng)
            };
            // Student t's scale is not its robust σ; 0.6745/q(0.75) keeps run_sigma the MAD-based σ.
            t * n.run_sigma * 0.6745 / self.t_quartile
        } else {
            0.0
        };
        let stall = if n.stall_probability > 0.0 && rng.gen_bool(n.stall_probability.min(1.0)) {
            (1.0 + rng.gen_range(0.0..=n.stall_factor.max(0.0))).ln()
        } else {
            0.0
        };
        (self.log_speed + run_noise + stall).exp()
    }
}

/// The upper quartile of Student's t with `df` degrees of freedom (0.6745 for the normal).
fn student_t_quartile(df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if df > GAUSSIAN_DF {
        return 0.6745;
    }
    StudentsT::new(0.0, 1.0, df).map(|t| t.inverse_cdf(0.75)).unwrap_or(0.6745)
}

/// `n` values 0.1 · noise, multiplied by `factor` from each `(position, factor)` shift
/// on. Deterministic for a seed.
pub fn series(seed: u64, n: usize, shifts: &[(usize, f64)], noise: &Noise) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut sampler = noise.sampler();
    (0..n)
        .map(|i| {
            let level: f64 = shifts.iter().filter(|(at, _)| i >= *at).map(|(_, f)| f).product();
            0.1 * level * sampler.factor(&mut rng)
        })
        .collect()
}

/// A history: `labels` groups of `runs` values each, 0.1 · noise per run times a label
/// effect exp(`label_sigma` · Z) per label (the machine state a label was measured in),
/// multiplied by `factor` from each `(label, factor)` shift on. Deterministic for a seed.
pub fn history(
    seed: u64,
    labels: usize,
    runs: usize,
    shifts: &[(usize, f64)],
    noise: &Noise,
    label_sigma: f64,
) -> Vec<Vec<f64>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut sampler = noise.sampler();
    let unit = Normal::new(0.0, 1.0).expect("unit normal");
    (0..labels)
        .map(|l| {
            let level: f64 = shifts.iter().filter(|(at, _)| l >= *at).map(|(_, f)| f).product();
            let label_effect = (label_sigma * unit.sample(&mut rng)).exp();
            (0..runs).map(|_| 0.1 * level * label_effect * sampler.factor(&mut rng)).collect()
        })
        .collect()
}
