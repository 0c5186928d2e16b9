//! What `compare --layouts auto` can decide, by simulation (docs/statistics.md, "What a
//! decision costs"): whole runs of `layouts_auto::run` on the simulated machine
//! (`layouts_auto_simulated`), a layout's effect drawn per layout, a pair costing what its
//! builds, overhead and runs cost on this machine.
//!
//! Two tables. **Layouts needed**: with no time limit, the pairs at which a +3 % change
//! was decided, per layout spread — the median and the 90th percentile (the layouts a
//! decision in 90 % of runs needs). **Within a budget**: per spread and pace, how often a
//! +3 % change was found `slower` and a same-source pair called different within
//! `--max-time`, with the pairs and seconds used.
//!
//! Run: cargo run --release -p perflab-engine --example layouts_auto_sim -- [RUNS] [BUDGET_S]
//! (defaults 200 and 120).

use perflab_engine::executor::simulated::Noise;
use perflab_engine::layouts_auto::{self, AutoBudget};
use perflab_engine::layouts_auto_simulated::{LayoutEffect, PairCost, SimulatedPairs};
use perflab_model::Verdict;

/// A pace of this machine: seconds of a link, of a pair's overhead, of one run.
struct Pace {
    name: &'static str,
    cost: PairCost,
}

fn noise(sigma: f64) -> Noise {
    Noise { run_sigma: sigma, tail_df: 3.0, stall_probability: 0.02, stall_factor: 0.5, ..Noise::none() }
}

fn effects() -> Vec<(&'static str, LayoutEffect)> {
    vec![
        ("normal ±2.5 %", LayoutEffect::Normal(0.025)),
        ("normal ±5 %", LayoutEffect::Normal(0.05)),
        // Two speeds 20 % apart, half the layouts each (the loop fixture's shape): σ 9.1 %.
        ("two speeds ±9.1 %", LayoutEffect::TwoSpeeds { gap: 1.2f64.ln(), share: 0.5 }),
        ("normal ±10 %", LayoutEffect::Normal(0.10)),
    ]
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let budget_s: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(120.0);
    let sigma = 0.015;

    println!(
        "Layouts needed for a +3 % change (no time limit, {runs} runs a row, runs' own noise {:.1} %):",
        sigma * 100.0
    );
    println!("| layout spread | decided | pairs at the decision: median | 90th percentile |");
    println!("|---|---|---|---|");
    for (name, effect) in effects() {
        let mut pairs = Vec::new();
        let mut decided = 0;
        for seed in 0..runs {
            let mut runner = SimulatedPairs::new(seed, effect, 1.03, 0.0);
            runner.noise = noise(sigma);
            runner.cost = PairCost { build_s: 0.0, overhead_s: 0.0, run_s: 0.035 };
            let e = layouts_auto::run(&mut runner, AutoBudget { max_time_s: 1e9, max_layouts: 3000 }, ("a", "b"))
                .expect("simulated pairs do not fail");
            let n = e.layouts.as_ref().and_then(|l| l.auto.as_ref()).map_or(0, |a| a.pairs.len());
            if e.comparisons[0].verdict == Verdict::Slower {
                decided += 1;
                pairs.push(n as f64);
            } else {
                // Undecided at 3,000 pairs (or called the wrong way): counted past the table.
                pairs.push(f64::INFINITY);
            }
        }
        pairs.sort_by(f64::total_cmp);
        println!("| {name} | {decided}/{runs} | {:.0} | {:.0} |", quantile(&pairs, 0.5), quantile(&pairs, 0.9));
    }

    let paces = [
        // Measured (docs/statistics.md): an idle machine, and load ~14 on its 2 cores.
        Pace { name: "idle", cost: PairCost { build_s: 0.03, overhead_s: 0.03, run_s: 0.035 } },
        Pace { name: "load ~14", cost: PairCost { build_s: 0.17, overhead_s: 0.06, run_s: 0.2 } },
        // Measured at load 4–6 (12:05, release build, loop10, 4 runs each of 30 s at the
        // same minutes): before the two links ran at once and the helper left its cgroup,
        // and after (a pair's builds 0.10 s in all: `build_s` is half of it, two links).
        Pace { name: "load ~5, before", cost: PairCost { build_s: 0.068, overhead_s: 0.037, run_s: 0.063 } },
        Pace { name: "load ~5, links at once", cost: PairCost { build_s: 0.05, overhead_s: 0.02, run_s: 0.062 } },
    ];
    println!("\nWithin --max-time {budget_s:.0} s ({runs} runs a row):");
    println!("| layout spread | pace | +3 % found | same source called different | pairs, median (+3 %) | s, median (+3 %) |");
    println!("|---|---|---|---|---|---|");
    for (name, effect) in effects() {
        for pace in &paces {
            let mut found = 0;
            let mut false_calls = 0;
            let mut pairs = Vec::new();
            let mut seconds = Vec::new();
            for seed in 0..runs {
                for ratio in [1.03, 1.0] {
                    let mut runner = SimulatedPairs::new(seed + 1_000_000, effect, ratio, 0.0);
                    runner.noise = noise(sigma);
                    runner.cost = pace.cost;
                    let e = layouts_auto::run(
                        &mut runner,
                        AutoBudget { max_time_s: budget_s, max_layouts: 10_000 },
                        ("a", "b"),
                    )
                    .expect("simulated pairs do not fail");
                    let verdict = e.comparisons[0].verdict;
                    if ratio > 1.0 {
                        found += (verdict == Verdict::Slower) as u32;
                        pairs
                            .push(e.layouts.as_ref().and_then(|l| l.auto.as_ref()).map_or(0, |a| a.pairs.len()) as f64);
                        seconds.push(e.duration_s);
                    } else {
                        false_calls += matches!(verdict, Verdict::Slower | Verdict::Faster) as u32;
                    }
                }
            }
            pairs.sort_by(f64::total_cmp);
            seconds.sort_by(f64::total_cmp);
            println!(
                "| {name} | {} | {found}/{runs} | {false_calls}/{runs} | {:.0} | {:.0} |",
                pace.name,
                quantile(&pairs, 0.5),
                quantile(&seconds, 0.5)
            );
        }
    }
}
