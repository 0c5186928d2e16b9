//! Simulates whole suite runs (`run --baseline`) on the simulated machine of
//! `executor::simulated`: every benchmark is a real engine experiment (warm-up, rounds,
//! looks, verdicts) at the level the suite's rule gives it, and a suite run raises an
//! alarm when any benchmark without a true change is called `slower` or `faster`.
//! Compares the family rule `run` uses (`suite::family`: Bonferroni over the compared
//! benchmarks, each spent over looks by its group-sequential design) with the rule
//! before it (each benchmark at 95 % on its own).
//!
//! Run: cargo run --release --example suite_sim -- [SUITE_RUNS] [PAIRED_SIGMA_PCT] [SECONDS_PER_RUN] [changed]
//! (defaults 200, 2.3, 0.01: the loaded 2-core VM of issue #41's 20-benchmark suite, whose
//! runs took 6–9 ms; docs/statistics.md and docs/evaluation.md have the figures).
//! Lines: A/A suites of 20 and 100 benchmarks; 50 benchmarks of which 3 are +2 % slower.

use perflab::executor::simulated::{Noise, Simulated};
use perflab::experiment::{run_experiment, Quiet};
use perflab::measure::MeasureOptions;
use perflab::model::{metric, CommandSpec, Settings, Verdict};
use perflab::plan::{Compared, Plan};
use perflab::suite::family::benchmark_confidence;

/// The noise model of examples/stopping_sim.rs: t₃ tails, a slow random walk of the
/// machine's speed, 2 % of runs stalled by up to 50 %, scaled to the paired σ asked for.
fn noise(paired_sigma: f64) -> Noise {
    Noise::machine_like(paired_sigma / std::f64::consts::SQRT_2)
}

/// One benchmark's experiment at `confidence`, perflab's other defaults (±1 %, 60 s).
fn benchmark(seed: u64, confidence: f64, ratio: f64, sigma: f64, run_seconds: f64) -> (Verdict, u32, f64) {
    let plan = Plan::new(
        vec![CommandSpec::bare("base"), CommandSpec::bare("pr")],
        Settings { seed, confidence, ..Settings::default() },
        MeasureOptions::default(),
        Compared::fixed(vec![metric::WALL.into()]),
    );
    let mut machine = Simulated::new(seed, vec![run_seconds, run_seconds * ratio], noise(sigma));
    let e = run_experiment(&plan, &mut machine, &mut Quiet).expect("simulated runs");
    let c = e.comparisons.iter().find(|c| c.metric == metric::WALL).expect("a wall comparison");
    (c.verdict, e.rounds, e.duration_s)
}

/// What one suite run ended with.
struct SuiteRun {
    /// An unchanged benchmark was called slower or faster.
    false_alarm: bool,
    /// Every unchanged benchmark ended `equivalent`.
    all_equivalent: bool,
    /// Per changed benchmark: called slower.
    found: Vec<bool>,
    /// Unchanged benchmarks called slower or faster.
    false_verdicts: usize,
    rounds: Vec<u32>,
    seconds: f64,
}

fn suite_run(run: u64, ratios: &[f64], confidence: f64, sigma: f64, run_seconds: f64) -> SuiteRun {
    let mut out = SuiteRun {
        false_alarm: false,
        all_equivalent: true,
        found: Vec::new(),
        false_verdicts: 0,
        rounds: Vec::new(),
        seconds: 0.0,
    };
    for (b, &ratio) in ratios.iter().enumerate() {
        // The same series for both rules: a seed per (suite run, benchmark).
        let seed = 1 + run * 1_000_003 + b as u64 * 7919;
        let (verdict, rounds, seconds) = benchmark(seed, confidence, ratio, sigma, run_seconds);
        out.rounds.push(rounds);
        out.seconds += seconds;
        if ratio == 1.0 {
            let alarm = matches!(verdict, Verdict::Slower | Verdict::Faster);
            out.false_alarm |= alarm;
            out.false_verdicts += usize::from(alarm);
            out.all_equivalent &= verdict == Verdict::Equivalent;
        } else {
            out.found.push(verdict == Verdict::Slower);
        }
    }
    out
}

fn median<T: Copy + PartialOrd>(values: &mut [T]) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let sigma: f64 = args.get(1).and_then(|a| a.parse::<f64>().ok()).unwrap_or(2.3) / 100.0;
    let run_seconds: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0.01);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(2);
    println!(
        "{runs} simulated suite runs per line; paired robust σ {:.1} %, t₃ tails, drift, 2 % stalls; {:.0} ms runs; \
         perflab's defaults (±1 %, 60 s per benchmark)",
        sigma * 100.0,
        run_seconds * 1000.0
    );
    println!(
        "| suite | rule | each benchmark at | runs with a false alarm | unchanged verdicts slower/faster | \
         runs all-equivalent | changed found (each) | median rounds | median suite time |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    // `changed` as the fourth argument: only the 3 changed benchmarks of the 50-suite, at
    // its level (whether a change is found does not depend on the other benchmarks), for
    // the noisier machines where one suite of 50 costs minutes of simulation.
    let changed_only = args.get(3).is_some_and(|a| a == "changed");
    let suites: Vec<(&str, Vec<f64>, usize)> = if changed_only {
        vec![("the 3 at +2 % of 50", vec![1.02; 3], 50)]
    } else {
        vec![
            ("A/A × 20", vec![1.0; 20], 20),
            ("A/A × 100", vec![1.0; 100], 100),
            ("50, 3 at +2 %", (0..50).map(|i| if i % 17 == 5 { 1.02 } else { 1.0 }).collect(), 50),
        ]
    };
    for (name, ratios, k) in &suites {
        let k = *k;
        for (rule, confidence) in [("per benchmark", 0.95), ("family (Bonferroni)", benchmark_confidence(0.95, k))] {
            let results: Vec<SuiteRun> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads as u64)
                    .map(|t| {
                        scope.spawn(move || {
                            (t..runs)
                                .step_by(threads)
                                .map(|r| suite_run(r, ratios, confidence, sigma, run_seconds))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles.into_iter().flat_map(|h| h.join().expect("a simulation thread")).collect()
            });
            let pct = |n: usize| format!("{:.1} %", 100.0 * n as f64 / results.len() as f64);
            let unchanged = ratios.iter().filter(|&&r| r == 1.0).count() * results.len();
            let changed = ratios.iter().filter(|&&r| r != 1.0).count();
            let found: Vec<String> = (0..changed).map(|j| pct(results.iter().filter(|r| r.found[j]).count())).collect();
            let mut rounds: Vec<u32> = results.iter().flat_map(|r| r.rounds.iter().copied()).collect();
            let mut seconds: Vec<f64> = results.iter().map(|r| r.seconds).collect();
            let (alarms, false_verdicts, all_equivalent) = if unchanged == 0 {
                ("—".to_string(), "—".to_string(), "—".to_string())
            } else {
                (
                    pct(results.iter().filter(|r| r.false_alarm).count()),
                    format!(
                        "{:.2} %",
                        100.0 * results.iter().map(|r| r.false_verdicts).sum::<usize>() as f64 / unchanged as f64
                    ),
                    pct(results.iter().filter(|r| r.all_equivalent).count()),
                )
            };
            println!(
                "| {name} | {rule} | {} % | {alarms} | {false_verdicts} | {all_equivalent} | {} | {} | {:.0} s |",
                perflab::model::units::format_level(confidence),
                if found.is_empty() { "—".to_string() } else { found.join(" / ") },
                median(&mut rounds),
                median(&mut seconds),
            );
            if changed_only {
                println!("  rounds, 90th percentile: {}", rounds[rounds.len() * 9 / 10]);
            }
        }
    }
}
