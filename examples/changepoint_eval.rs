//! Accuracy of change-point detection on synthetic series with known truth, for
//! scripts/changepoint-eval.
//!
//! 1. One value per point (drift within a command's runs): false-positive rate on pure
//!    noise, detection and location rate and interval coverage for single shifts.
//! 2. Histories (labels of several runs each), side by side: the medians-based detection
//!    `perflab history` used before (`detect` on one median per label, ≥ 5 labels per
//!    segment) and the runs-based one it uses now (`detect_groups`, ≥ 2 labels per
//!    segment): false alarms on noise — with and without label effects, the extra noise of
//!    the machine state each label was measured in — and detection of one step.
//!
//! `cargo run --release --example changepoint_eval [TRIALS]` (default 1000 and 500).

use perflab::stats::changepoint::{ChangePointConfig, Detector};
use perflab::stats::summary::median;
use perflab::stats::synthetic::{history, series, Noise};

/// Robust σ of the heavy-tailed noise (σ·T₂ at σ = 2 %).
const HEAVY_SIGMA: f64 = 0.0165;

fn main() {
    let trials: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    points(trials);
    histories(trials);
}

fn points(trials: u64) {
    let config = ChangePointConfig::default();
    let mut detector = Detector::new(config);
    println!("## One value per point\n");
    println!("{trials} series per line; noise σ = 2 %, heavy = t₂ tails + 5 % spikes; default config\n");
    for kind in [Noise::gaussian(0.02), Noise::heavy_tailed(HEAVY_SIGMA)] {
        let with_change = (0..trials)
            .filter(|&seed| {
                let n = 20 + (seed as usize * 37) % 481;
                !detector.detect(&series(seed, n, &[], &kind)).is_empty()
            })
            .count();
        println!(
            "- {kind:?} pure noise, n = 20..500: a change point reported in {:.1} % of series",
            100.0 * with_change as f64 / trials as f64
        );
    }
    for kind in [Noise::gaussian(0.02), Noise::heavy_tailed(HEAVY_SIGMA)] {
        for factor in [1.02, 1.05, 1.1, 1.5, 2.0] {
            let (mut located, mut covered, mut extra) = (0, 0, 0);
            for seed in 0..trials {
                let at = 10 + (seed as usize * 13) % 80;
                let found = detector.detect(&series(seed, 100, &[(at, factor)], &kind));
                let hit = found.iter().find(|cp| cp.index.abs_diff(at) <= 2);
                if let Some(cp) = hit {
                    located += 1;
                    covered += usize::from(cp.ci.0 <= factor && factor <= cp.ci.1);
                }
                extra += found.len() - usize::from(hit.is_some());
            }
            println!(
                "- {kind:?} n = 100, one shift ×{factor} at 10..90: found within ±2 in {:.1} %, \
                 its CI covers the shift in {:.1} % of those; {:.3} spurious change points per series",
                100.0 * located as f64 / trials as f64,
                100.0 * covered as f64 / located.max(1) as f64,
                extra as f64 / trials as f64
            );
        }
    }
}

/// The two history detectors, run on the same series.
struct Methods {
    medians: Detector,
    runs: Detector,
}

impl Methods {
    /// Change points (label index, interval) by the medians-based and the runs-based method.
    fn detect(&mut self, groups: &[Vec<f64>]) -> [Vec<(usize, (f64, f64))>; 2] {
        let medians: Vec<f64> = groups.iter().map(|g| median(g)).collect();
        let found =
            |cps: Vec<perflab::stats::changepoint::ChangePoint>| cps.into_iter().map(|c| (c.index, c.ci)).collect();
        [found(self.medians.detect(&medians)), found(self.runs.detect_groups(groups))]
    }
}

fn histories(trials: u64) {
    let trials = (trials / 2).max(1);
    let mut methods = Methods {
        medians: Detector::new(ChangePointConfig::default()),
        runs: Detector::new(ChangePointConfig::for_groups()),
    };
    println!("\n## Histories: medians (before) vs runs (now)\n");
    println!(
        "{trials} histories per line; runs: σ = 2 % (normal, or heavy: t₂ tails + 5 % spikes); label effect: \
         an extra factor exp(σ_label·Z) per label\n"
    );
    println!("| noise | label effect | labels × runs | false alarms, medians | false alarms, runs |");
    println!("|---|---|---|---|---|");
    for kind in [Noise::gaussian(0.02), Noise::heavy_tailed(HEAVY_SIGMA)] {
        for label_sigma in [0.0, 0.005, 0.02] {
            let mut alarms = [0usize; 2];
            for seed in 0..trials {
                let labels = 4 + (seed as usize * 7) % 97;
                let runs = 6 + (seed as usize * 5) % 7;
                let found = methods.detect(&history(seed, labels, runs, &[], &kind, label_sigma));
                for (count, f) in alarms.iter_mut().zip(&found) {
                    *count += usize::from(!f.is_empty());
                }
            }
            println!(
                "| {kind:?} | {:.1} % | 4..100 × 6..12 | {:.1} % | {:.1} % |",
                label_sigma * 100.0,
                100.0 * alarms[0] as f64 / trials as f64,
                100.0 * alarms[1] as f64 / trials as f64
            );
        }
    }
    println!("\nOne step at a random label boundary (at least 2 labels on each side), 8 runs per label:\n");
    println!("| noise | label effect | labels | step | found at its label, medians | runs | CI covers, runs | spurious per series, runs |");
    println!("|---|---|---|---|---|---|---|---|");
    for kind in [Noise::gaussian(0.02), Noise::heavy_tailed(HEAVY_SIGMA)] {
        for label_sigma in [0.0, 0.005] {
            for labels in [4, 6, 10, 20] {
                for factor in [1.05, 1.1, 1.3, 2.0, 0.0761] {
                    let (mut found_at, mut covered, mut spurious) = ([0usize; 2], 0usize, 0usize);
                    for seed in 0..trials {
                        let at = 2 + seed as usize % (labels - 3);
                        let groups = history(seed + 1_000_000, labels, 8, &[(at, factor)], &kind, label_sigma);
                        let found = methods.detect(&groups);
                        for (count, f) in found_at.iter_mut().zip(&found) {
                            *count += usize::from(f.iter().any(|c| c.0 == at));
                        }
                        if let Some((_, ci)) = found[1].iter().find(|c| c.0 == at) {
                            covered += usize::from(ci.0 <= factor && factor <= ci.1);
                        }
                        spurious += found[1].iter().filter(|c| c.0 != at).count();
                    }
                    println!(
                        "| {kind:?} | {:.1} % | {labels} | ×{factor} | {:.1} % | {:.1} % | {:.1} % | {:.3} |",
                        label_sigma * 100.0,
                        100.0 * found_at[0] as f64 / trials as f64,
                        100.0 * found_at[1] as f64 / trials as f64,
                        100.0 * covered as f64 / found_at[1].max(1) as f64,
                        spurious as f64 / trials as f64
                    );
                }
            }
        }
    }
}
