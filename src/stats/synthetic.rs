//! Seeded synthetic timing series with known shifts, for the statistics' tests and the
//! evaluation scripts (the ground truth real measurements never have).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Multiplicative noise around 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noise {
    /// Log-normal: exp(σ·Z).
    Normal,
    /// Timing-like: exp(σ·T) with T Student-t with 2 degrees of freedom (infinite variance),
    /// times a spike of 1–2× in 5 % of the points.
    HeavyTailed,
}

/// Standard normal by Box–Muller (rand 0.8 has no normal distribution without rand_distr).
fn standard_normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn noise(rng: &mut StdRng, kind: Noise, sigma: f64) -> f64 {
    match kind {
        Noise::Normal => (sigma * standard_normal(rng)).exp(),
        Noise::HeavyTailed => {
            let chi2 = standard_normal(rng).powi(2) + standard_normal(rng).powi(2);
            let t2 = standard_normal(rng) / (chi2 / 2.0).sqrt();
            let spike = if rng.gen_bool(0.05) { 1.0 + rng.gen::<f64>() } else { 1.0 };
            (sigma * t2).exp() * spike
        }
    }
}

/// `n` values 0.1 · noise (σ = 2 %), multiplied by `factor` from each `(position, factor)`
/// shift on. Deterministic for a seed.
pub fn series(seed: u64, n: usize, shifts: &[(usize, f64)], kind: Noise) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let level: f64 = shifts.iter().filter(|(at, _)| i >= *at).map(|(_, f)| f).product();
            0.1 * level * noise(&mut rng, kind, 0.02)
        })
        .collect()
}

/// A history: `labels` groups of `runs` values each, 0.1 · noise (σ = 2 %) per run times a
/// label effect exp(`label_sigma` · Z) per label (the machine state a label was measured
/// in), multiplied by `factor` from each `(label, factor)` shift on. Deterministic for a seed.
pub fn history(
    seed: u64,
    labels: usize,
    runs: usize,
    shifts: &[(usize, f64)],
    kind: Noise,
    label_sigma: f64,
) -> Vec<Vec<f64>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..labels)
        .map(|l| {
            let level: f64 = shifts.iter().filter(|(at, _)| l >= *at).map(|(_, f)| f).product();
            let label_effect = (label_sigma * standard_normal(&mut rng)).exp();
            (0..runs).map(|_| 0.1 * level * label_effect * noise(&mut rng, kind, 0.02)).collect()
        })
        .collect()
}
