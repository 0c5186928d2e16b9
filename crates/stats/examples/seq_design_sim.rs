//! What the sequential looks cost against a fixed-size test, and what a design planned
//! from the pilot's noise saves: simulated series of paired log ratios (one per round),
//! judged look by look as the engine does (geometric looks ×1.2 from 6 rounds, the
//! Hodges–Lehmann/Wilcoxon interval at each look's level, the ±threshold verdicts), by
//! the old design (logarithmic spending over the rounds the time limit allows) and the
//! planned one (`Spending::Planned`, the first decisive look at the rounds a fixed-n
//! test at the pilot's noise needs). Against them: the fixed-n paired t-test and the
//! fixed-n Hodges–Lehmann interval at the nominal level — the smallest n at which 50 /
//! 80 / 90 % of series reach the right verdict.
//!
//! Run: cargo run --release -p perflab-stats --example seq_design_sim -- [SERIES] [SIGMA_PCT] [HORIZON] [ALPHA] [NOISE] [DESIGNS] [nofixed]
//! (defaults 2000, 0.7, 660, 0.05, all: NOISE is normal, t3 (t₃ tails, drift, 2 % stalls),
//! drift (normal rounds, a random walk of the machine's speed between the two runs) or all;
//! DESIGNS `old` and `planned:EARLY:AT_PLAN:Z_POWER`, comma-separated; `nofixed` skips
//! the fixed-n references).

use perflab_stats::sequential::{nominal_alpha, pilot_spread, rounds_to_decide, Boundaries, Spending};
use perflab_stats::signed_rank::hl_interval;
use perflab_stats::synthetic::Noise;
use rand::rngs::StdRng;
use rand::SeedableRng;
use statrs::distribution::{ContinuousCDF, StudentsT};

const THRESHOLD: f64 = 0.01;
const FIRST_LOOK: u32 = 6;
const GROWTH: f64 = 1.2;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Verdict {
    Slower,
    Faster,
    Equivalent,
    Inconclusive,
}

fn classify(lo: f64, hi: f64) -> Verdict {
    let (lo, hi) = (lo.exp(), hi.exp());
    if lo > 1.0 {
        Verdict::Slower
    } else if hi < 1.0 {
        Verdict::Faster
    } else if lo >= 1.0 - THRESHOLD && hi <= 1.0 + THRESHOLD {
        Verdict::Equivalent
    } else {
        Verdict::Inconclusive
    }
}

fn attainable(n: u32, alpha: f64) -> bool {
    n >= 63 || 2.0 / (1u64 << n) as f64 <= alpha
}

/// A sequential design: the spending it uses, given the pilot's rounds.
#[derive(Clone, Copy)]
enum Design {
    /// Logarithmic from one look below the first to the horizon (perflab until now).
    Old,
    /// Planned: `early` share before the planned look, `at_plan` at it; the planned look
    /// sized for power Φ(z_power) with boundary z_{at_plan·α/2}, and at least `min_plan`.
    Planned { early: f64, at_plan: f64, z_power: f64 },
    /// The logarithmic spending's share raised to `power` (< 1 spends more early).
    Power { power: f64 },
}

struct Outcome {
    verdict: Verdict,
    rounds: u32,
    covered: bool,
}

/// Run one design on the series `d` (long enough for the horizon).
fn sequential(design: Design, d: &[f64], horizon: u32, alpha: f64, truth: f64) -> Outcome {
    let h = horizon as f64;
    let mut boundaries: Option<Boundaries> = None;
    let mut next = FIRST_LOOK;
    let mut planned_look = None;
    let mut last = (Verdict::Inconclusive, f64::NEG_INFINITY, f64::INFINITY);
    for n in FIRST_LOOK..=horizon {
        if n < next && Some(n) != planned_look && n != horizon {
            continue;
        }
        next = ((n as f64 * GROWTH).ceil() as u32).max(n + 1);
        let b = boundaries.get_or_insert_with(|| {
            let start = (n as f64 / GROWTH / h).min(0.5);
            let spending = match design {
                Design::Old => Spending::Logarithmic { start },
                Design::Power { power } => Spending::LogPower { start, power },
                Design::Planned { early, at_plan, z_power } => {
                    let spread = pilot_spread(&d[..n as usize]).unwrap_or(0.0);
                    let z = perflab_stats::normal_quantile_two_sided(1.0 - at_plan * alpha);
                    let fewest = (1..64).find(|&k| attainable(k, at_plan * alpha * 0.5)).unwrap_or(63);
                    let plan = rounds_to_decide(spread, (1.0 + THRESHOLD).ln(), z, z_power)
                        .ceil()
                        .max(fewest as f64)
                        .max(n as f64)
                        .min(h) as u32;
                    planned_look = Some(plan);
                    Spending::Planned { start, plan: plan as f64 / h, early, at_plan }
                }
            };
            Boundaries::new(alpha, spending)
        });
        let t = (n as f64 / h).min(1.0);
        let c = b.boundary(t, n >= horizon);
        let a = nominal_alpha(c);
        if !attainable(n, a) {
            continue;
        }
        b.take(t, c);
        if let Some(i) = hl_interval(&d[..n as usize], 1.0 - a) {
            let v = classify(i.low, i.high);
            last = (v, i.low, i.high);
            if v != Verdict::Inconclusive {
                return Outcome { verdict: v, rounds: n, covered: i.low <= truth && truth <= i.high };
            }
        }
    }
    Outcome { verdict: last.0, rounds: horizon, covered: last.1 <= truth && truth <= last.2 }
}

/// The paired t interval of the first n values at `confidence`.
fn t_interval(d: &[f64], confidence: f64) -> (f64, f64) {
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let t = StudentsT::new(0.0, 1.0, n - 1.0).expect("df").inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    (mean - t * sd / n.sqrt(), mean + t * sd / n.sqrt())
}

fn noise(kind: &str, paired_sigma: f64) -> Noise {
    let run_sigma = paired_sigma / std::f64::consts::SQRT_2;
    match kind {
        "normal" => Noise::gaussian(run_sigma),
        "t3" => Noise::machine_like(run_sigma),
        "drift" => Noise { drift_sigma: 0.002, ..Noise::gaussian(run_sigma) },
        other => panic!("unknown noise {other}: normal, t3 or drift"),
    }
}

fn series(seed: u64, n: usize, noise: &Noise, ratio: f64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut sampler = noise.sampler();
    (0..n)
        .map(|_| {
            let base = sampler.factor(&mut rng);
            let cand = sampler.factor(&mut rng);
            ratio.ln() + cand.ln() - base.ln()
        })
        .collect()
}

fn quantile(v: &mut [u32], q: f64) -> u32 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn right(verdict: Verdict, ratio: f64) -> bool {
    if ratio == 1.0 {
        verdict == Verdict::Equivalent
    } else if ratio > 1.0 + THRESHOLD {
        verdict == Verdict::Slower
    } else {
        verdict == Verdict::Slower || verdict == Verdict::Equivalent
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let sigma: f64 = args.get(1).and_then(|a| a.parse::<f64>().ok()).unwrap_or(0.7) / 100.0;
    let horizon: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(660);
    let alpha: f64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(0.05);
    let kinds: Vec<&str> = match args.get(4).map(String::as_str) {
        None | Some("all") => vec!["normal", "t3", "drift"],
        Some(k) => vec![k],
    };
    // Designs as `old` or `planned:EARLY:AT_PLAN:Z_POWER`, comma-separated.
    let spec = args.get(5).map(String::as_str).unwrap_or("old,planned:0.1:0.6:1.2816,planned:0.1:0.6:0.8416");
    let designs: Vec<(String, Design)> = spec
        .split(',')
        .map(|d| {
            let parts: Vec<&str> = d.split(':').collect();
            let design = match parts.as_slice() {
                ["old"] => Design::Old,
                ["pow", p] => Design::Power { power: p.parse().expect("power") },
                ["planned", e, a, z] => Design::Planned {
                    early: e.parse().expect("early share"),
                    at_plan: a.parse().expect("share at the plan"),
                    z_power: z.parse().expect("z of the power"),
                },
                _ => panic!("unknown design {d}: old or planned:EARLY:AT_PLAN:Z_POWER"),
            };
            (d.to_string(), design)
        })
        .collect();
    let with_fixed = args.get(6).is_none_or(|a| a != "nofixed");
    println!(
        "{count} series per line; paired σ {:.2} %; horizon {horizon} rounds; α {alpha}; ±{:.0} % threshold",
        sigma * 100.0,
        THRESHOLD * 100.0
    );
    for kind in kinds {
        let noise = noise(kind, sigma);
        for ratio in [1.0, 1.005, 1.01, 1.02] {
            let all: Vec<Vec<f64>> =
                (0..count).map(|i| series(1 + i * 7919, horizon as usize, &noise, ratio)).collect();
            // Fixed n: the fewest rounds at which 50 / 80 / 90 % reach the right verdict.
            let fixed = |name: &str, judge: &dyn Fn(&[f64]) -> Verdict| {
                let mut reached = [None; 3];
                for n in 3..=horizon.min(400) as usize {
                    let share = all.iter().filter(|d| right(judge(&d[..n]), ratio)).count() as f64 / count as f64;
                    for (slot, q) in reached.iter_mut().zip([0.5, 0.8, 0.9]) {
                        if slot.is_none() && share >= q {
                            *slot = Some(n);
                        }
                    }
                    if reached[2].is_some() {
                        break;
                    }
                }
                let show = |r: Option<usize>| r.map_or("—".to_string(), |n| n.to_string());
                println!(
                    "| {kind} | {ratio} | fixed-n {name} | n50 {} / n80 {} / n90 {} |",
                    show(reached[0]),
                    show(reached[1]),
                    show(reached[2])
                );
            };
            if with_fixed {
                fixed("paired t", &|d| {
                    let (lo, hi) = t_interval(d, 1.0 - alpha);
                    classify(lo, hi)
                });
                fixed("HL", &|d| {
                    hl_interval(d, 1.0 - alpha).map_or(Verdict::Inconclusive, |i| classify(i.low, i.high))
                });
            }
            for (name, design) in &designs {
                let outcomes: Vec<Outcome> =
                    all.iter().map(|d| sequential(*design, d, horizon, alpha, ratio.ln())).collect();
                let share = |f: &dyn Fn(&Outcome) -> bool| {
                    100.0 * outcomes.iter().filter(|o| f(o)).count() as f64 / count as f64
                };
                let mut rounds: Vec<u32> = outcomes.iter().map(|o| o.rounds).collect();
                println!(
                    "| {kind} | {ratio} | {name} | slower {:.1} % / faster {:.1} % / equiv {:.1} % / inconcl {:.1} % | covers {:.1} % | rounds median {} p90 {} |",
                    share(&|o| o.verdict == Verdict::Slower),
                    share(&|o| o.verdict == Verdict::Faster),
                    share(&|o| o.verdict == Verdict::Equivalent),
                    share(&|o| o.verdict == Verdict::Inconclusive),
                    share(&|o| o.covered),
                    quantile(&mut rounds, 0.5),
                    quantile(&mut rounds, 0.9)
                );
            }
        }
    }
}
