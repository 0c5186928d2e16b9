//! Checks the main-effect intervals of a 2×2 build design (analysis::design) by
//! simulation: thousands of whole experiments — the real engine, rounds, looks — on the
//! simulated machine of `executor::simulated` (heavy-tailed run noise, drift, stalls).
//! Reports, per scenario and number of rounds (fixed, or perflab's sequential stopping
//! on the pairwise verdicts against the first build), how often each main effect's
//! interval covered its true value, how often both did (nominal 95 %: each is at
//! 1 − 0.05/2), the median interval width and the share of `slower`/`faster` verdicts.
//!
//! Run: cargo run --release --example design_sim -- [EXPERIMENTS] [RUN_SIGMA_PCT]
//! (defaults 2000, 2.1: a paired σ near 3 %, the noise measured on this VM).

use perflab::executor::simulated::{Noise, Simulated};
use perflab::experiment::{run_experiment, Quiet};
use perflab::measure::MeasureOptions;
use perflab::model::{metric, CommandSpec, Design, Factor, Settings, Verdict};
use perflab::plan::{Compared, Plan};

fn plan(rounds: Option<u32>, seed: u64) -> Plan {
    let command = CommandSpec::bare;
    Plan::new(
        ["gcc-switch", "gcc-threaded", "clang-switch", "clang-threaded"].map(command).to_vec(),
        Settings { seed, fixed_rounds: rounds, ..Settings::default() },
        MeasureOptions::default(),
        Compared::fixed(vec![metric::WALL.into()]),
    )
    .with_design(Some(Design {
        factors: vec![
            Factor { name: "cc".into(), levels: vec!["gcc".into(), "clang".into()] },
            Factor { name: "disp".into(), levels: vec!["switch".into(), "threaded".into()] },
        ],
        cells: vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]],
        pairwise: false,
    }))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let experiments: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let sigma: f64 = args.get(2).and_then(|a| a.parse::<f64>().ok()).unwrap_or(2.1) / 100.0;
    let noise = Noise::machine_like(sigma);
    let scenarios: [(&str, [f64; 4]); 3] = [
        ("interaction (clang −10 %/−2 %, threaded −20 %/−12.9 %)", [0.100, 0.080, 0.090, 0.0784]),
        ("additive (clang −5 %, threaded −3 %)", [0.100, 0.097, 0.095, 0.09215]),
        ("null (all builds equal)", [0.100, 0.100, 0.100, 0.100]),
    ];
    println!("{experiments} experiments per row, run σ {:.1} % (t3 tails, drift, 2 % stalls)", sigma * 100.0);
    for (name, times) in scenarios {
        let effect = |a: [usize; 2], b: [usize; 2]| {
            (((times[b[0]] / times[a[0]]).ln() + (times[b[1]] / times[a[1]]).ln()) / 2.0).exp()
        };
        let truth = [effect([0, 1], [2, 3]), effect([0, 2], [1, 3])];
        println!("\n{name}: true main effects cc {:.4}, disp {:.4}", truth[0], truth[1]);
        println!("  rounds        cover cc  cover disp  cover both  median width cc  decided cc  median rounds");
        for rounds in [Some(8), Some(12), Some(20), Some(40), None] {
            let (mut covered, mut both, mut decided) = ([0u64; 2], 0u64, 0u64);
            let mut widths = Vec::new();
            let mut used = Vec::new();
            for seed in 0..experiments {
                let plan = plan(rounds, seed);
                let mut sim = Simulated::new(seed ^ 0x5eed, times.to_vec(), noise.clone());
                let e = run_experiment(&plan, &mut sim, &mut Quiet).expect("simulated runs");
                used.push(e.rounds);
                let effects = e.design.expect("design").effects;
                let hits: Vec<bool> = effects.iter().zip(truth).map(|(c, t)| c.ci_low <= t && t <= c.ci_high).collect();
                for (k, hit) in hits.iter().enumerate() {
                    covered[k] += *hit as u64;
                }
                both += hits.iter().all(|h| *h) as u64;
                decided += matches!(effects[0].verdict, Verdict::Slower | Verdict::Faster) as u64;
                widths.push(effects[0].ci_high / effects[0].ci_low - 1.0);
            }
            widths.sort_by(f64::total_cmp);
            used.sort();
            let pct = |k: u64| 100.0 * k as f64 / experiments as f64;
            let label = rounds.map_or("sequential".to_string(), |r| r.to_string());
            println!(
                "  {label:<12}  {:>7.1} %  {:>8.1} %  {:>8.1} %  {:>13.2} %  {:>8.1} %  {:>13}",
                pct(covered[0]),
                pct(covered[1]),
                pct(both),
                100.0 * widths[widths.len() / 2],
                pct(decided),
                used[used.len() / 2]
            );
        }
    }
}
