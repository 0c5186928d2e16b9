//! Checks `layouts::fit_means` + `layouts::contrast` — the across-layouts interval of one
//! function's sampled time in `compare --layouts N --explain` — by simulation before any
//! real build. Per trial: versions a and b of L layouts each, R rounds; a function's true
//! time per run is μ_v · exp(u_k) · exp(e), u_k ~ N(0, τ²) per layout, e ~ N(0, 2 %²) per
//! run, and what is measured is whole samples: Poisson(time ÷ period) × period, with a
//! mean of S samples per run (the coarse values that made per-round locations tie).
//!
//! Per cell it reports how often the 95 % interval covered the true ratio, how often it
//! called a difference when there was none (false verdicts, A/A), how often it found a
//! +20 % change, and the median estimated spread against τ.
//!
//! Run: cargo run --release -p perflab-stats --example layout_means_sim -- [TRIALS]
//! (default 2000).

use perflab_stats::layouts::{contrast, fit_means};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal, Poisson};

/// values[v][k][r] for versions of true log ratio `change`.
fn trial(rng: &mut StdRng, layouts: usize, rounds: usize, tau: f64, samples: f64, change: f64) -> Vec<Vec<Vec<f64>>> {
    let unit = Normal::new(0.0, 1.0).unwrap();
    [0.0, change]
        .iter()
        .map(|mu| {
            (0..layouts)
                .map(|_| {
                    let u = tau * unit.sample(rng);
                    (0..rounds)
                        .map(|_| {
                            let expected = samples * (mu + u + 0.02 * unit.sample(rng)).exp();
                            Poisson::new(expected).map_or(0.0, |p| p.sample(rng))
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let trials: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let mut rng = StdRng::seed_from_u64(20261126);
    println!("{trials} trials per cell, 95 % intervals; change +20 % for power");
    println!(
        "{:>4} {:>3} {:>7} {:>7} | {:>9} {:>9} {:>8} | {:>9} {:>7} | {:>9}",
        "L", "R", "τ", "samples", "A/A cover", "A/A false", "no intvl", "+20% cover", "found", "spread"
    );
    for &layouts in &[4usize, 8] {
        for &rounds in &[12usize, 30] {
            for &tau in &[0.0, 0.03, 0.1] {
                for &samples in &[6.0, 50.0] {
                    let (mut covered, mut false_calls, mut none) = (0usize, 0usize, 0usize);
                    let (mut covered_change, mut found) = (0usize, 0usize);
                    let mut spreads = Vec::new();
                    for _ in 0..trials {
                        for (change, aa) in [(0.0, true), (0.2f64.ln_1p(), false)] {
                            let values = trial(&mut rng, layouts, rounds, tau, samples, change);
                            let Some(fit) = fit_means(&values) else {
                                none += usize::from(aa);
                                continue;
                            };
                            let Some(c) = contrast(&fit, 0, 1, 0.95) else { continue };
                            let Some((lo, hi)) = c.interval else {
                                none += usize::from(aa);
                                continue;
                            };
                            let covers = lo <= change && change <= hi;
                            if aa {
                                covered += usize::from(covers);
                                false_calls += usize::from(lo > 0.0 || hi < 0.0);
                                spreads.push(fit.pooled_spread());
                            } else {
                                covered_change += usize::from(covers);
                                found += usize::from(lo > 0.0);
                            }
                        }
                    }
                    let pct = |n: usize| format!("{:.1} %", 100.0 * n as f64 / trials as f64);
                    println!(
                        "{:>4} {:>3} {:>7} {:>7} | {:>9} {:>9} {:>8} | {:>9} {:>7} | {:>9}",
                        layouts,
                        rounds,
                        format!("{:.0} %", tau * 100.0),
                        samples,
                        pct(covered),
                        pct(false_calls),
                        pct(none),
                        pct(covered_change),
                        pct(found),
                        format!("{:.1} %", 100.0 * median(spreads))
                    );
                }
            }
        }
    }
}
