//! Validates `compare --explain`'s per-function statistics before they are trusted:
//! thousands of simulated experiments (`analysis::explain::simulate`: round, run and
//! function noise with Student-t tails and stalls, samples drawn as a cpu-clock timer
//! takes them) with known per-function changes. Reports, per scenario, rounds and
//! function: how often the function had a row, how often its ratio and contribution
//! intervals covered the truth, how often it was flagged (and the wrong way), the mean
//! half-width of its ratio interval; then how often a one-run profile diff names the
//! wrong function first; then experiments that go on past the verdict, as
//! `compare --explain` does, until the rows carrying the change are decided.
//!
//! Run: cargo run --release --example explain_sim -- [TRIALS] [SEED]
//! (defaults 1000, 19; docs/statistics.md and the README quote the figures).

use perflab::analysis::explain::simulate::{
    evaluate, evaluate_until_explained, one_run_diff, FunctionRecord, Scenario,
};

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        "–".into()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let trials: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let seed: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(19);
    println!("{trials} simulated experiments per line, seed {seed}; intervals at 95 % family-wise (Bonferroni over the rows)");
    println!();
    println!("| scenario | rounds | samples/run | function | true ratio | row | ratio CI covers | row and ratio CI covers | contribution CI covers | flagged | wrong way | mean ± of ratio CI |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let scenarios = [
        Scenario::opposite_changes(),
        Scenario::three_percent_of_total(),
        Scenario::unchanged(),
        Scenario::opposite_changes().shorter(10.0),
        Scenario::small_doubles(),
    ];
    for scenario in &scenarios {
        let samples: f64 =
            scenario.functions.iter().map(|f| f.baseline_ms).sum::<f64>() * scenario.frequency_hz / 1000.0;
        for rounds in [10, 20, 40] {
            let records = evaluate(scenario, rounds, trials, seed);
            for r in records.iter().filter(|r| !r.name.starts_with("small_")) {
                println!(
                    "| {} | {rounds} | {samples:.0} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {} |",
                    scenario.name,
                    r.name,
                    r.true_ratio,
                    pct(r.tested, r.trials),
                    pct(r.ratio_covered, r.tested),
                    pct(r.ratio_covered, r.trials),
                    pct(r.contribution_covered, r.tested),
                    pct(r.flagged, r.trials),
                    pct(r.wrong_sign, r.trials),
                    if r.tested > 0 {
                        format!("{:.1} %", 100.0 * r.half_width_sum / r.tested as f64)
                    } else {
                        "–".into()
                    },
                );
            }
            let small: Vec<_> = records.iter().filter(|r| r.name.starts_with("small_")).collect();
            let (tested, flagged, covered) =
                small.iter().fold((0, 0, 0), |(t, f, c), r| (t + r.tested, f + r.flagged, c + r.ratio_covered));
            println!(
                "| {} | {rounds} | {samples:.0} | 20 small (5 ms each, unchanged) | 1.00 | {} | {} | | | {} | {} | |",
                scenario.name,
                pct(tested, small.len() * trials),
                pct(covered, tested),
                pct(flagged, small.len() * trials),
                pct(flagged, small.len() * trials),
            );
        }
    }
    println!();
    println!("Past the verdict (the verdict at the first look from round 10 on; then look by look while a row carrying the change is inconclusive, at most 40 rounds): at the verdict's look → at the stop");
    println!();
    println!("| scenario | function | true ratio | row | ratio CI covers | flagged | wrong way | mean rounds | budget ended undecided |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for scenario in [Scenario::opposite_changes(), Scenario::small_doubles(), Scenario::unchanged()] {
        let r = evaluate_until_explained(&scenario, 10, 40, trials, seed);
        let both = |f: &dyn Fn(&FunctionRecord) -> String, i: usize| {
            format!("{} → {}", f(&r.at_verdict[i]), f(&r.functions[i]))
        };
        let named: Vec<usize> =
            (0..r.functions.len()).filter(|&i| !r.functions[i].name.starts_with("small_")).collect();
        for i in named {
            println!(
                "| {} | {} | {:.2} | {} | {} | {} | {} | {:.1} | {} |",
                scenario.name,
                r.functions[i].name,
                r.functions[i].true_ratio,
                both(&|f| pct(f.tested, f.trials), i),
                both(&|f| pct(f.ratio_covered, f.tested), i),
                both(&|f| pct(f.flagged, f.trials), i),
                both(&|f| pct(f.wrong_sign, f.trials), i),
                r.rounds_sum as f64 / trials as f64,
                pct(r.budget_ended, trials),
            );
        }
        let small = |records: &[FunctionRecord]| {
            let small: Vec<_> = records.iter().filter(|f| f.name.starts_with("small_")).collect();
            let flagged: usize = small.iter().map(|f| f.flagged).sum();
            pct(flagged, small.len() * trials)
        };
        println!(
            "| {} | 20 small (unchanged) | 1.00 | | | {} → {} | | | |",
            scenario.name,
            small(&r.at_verdict),
            small(&r.functions)
        );
    }
    println!();
    println!("One profile per build (a single pair of runs): the function with the largest change named first");
    println!();
    println!("| scenario | samples/run | by time (perflab diff): not a changed function | wrong sign | by share (perf diff): not a changed function | wrong sign |");
    println!("|---|---|---|---|---|---|");
    for scenario in scenarios.iter().filter(|s| s.functions.iter().any(|f| f.ratio != 1.0)) {
        let samples: f64 =
            scenario.functions.iter().map(|f| f.baseline_ms).sum::<f64>() * scenario.frequency_hz / 1000.0;
        let r = one_run_diff(scenario, trials, seed);
        println!(
            "| {} | {samples:.0} | {} | {} | {} | {} |",
            scenario.name,
            pct(r.wrong_function_by_time, r.trials),
            pct(r.wrong_sign_by_time, r.trials),
            pct(r.wrong_function_by_share, r.trials),
            pct(r.wrong_sign_by_share, r.trials)
        );
    }
}
