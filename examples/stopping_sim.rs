//! Simulates perflab's stopping rule: thousands of whole experiments — the real engine,
//! warm-up, rounds, looks, verdicts — on the simulated machine of
//! `executor::simulated` (heavy-tailed run noise, drift, stalls), once per look design,
//! on the same series. Reports per design and true effect: the share of each verdict,
//! how often the interval covered the true ratio, and the median rounds and (simulated)
//! seconds to the end.
//!
//! Run: cargo run --release --example stopping_sim -- [SERIES] [PAIRED_SIGMA_PCT] [SECONDS_PER_RUN] [RATIOS] [DESIGNS]
//! (defaults 1000, 3.0, 0.065, 1,1.005,1.01,1.02: the ~65 ms pair of the evaluation at
//! the noise measured on this VM; DESIGNS by their JSON names, e.g.
//! `logarithmic,logarithmic_front`, all by default; docs/statistics.md has the figures).

use perflab::executor::simulated::{Noise, Simulated};
use perflab::experiment::run_experiment;
use perflab::experiment::Quiet;
use perflab::measure::MeasureOptions;
use perflab::model::{metric, CommandSpec, LookDesign, Settings, Verdict};
use perflab::plan::{Compared, Plan};

fn plan(design: LookDesign, seed: u64) -> Plan {
    let command = CommandSpec::bare;
    Plan::new(
        vec![command("A"), command("B")],
        Settings { seed, looks: design, ..Settings::default() },
        MeasureOptions::default(),
        Compared::fixed(vec![metric::WALL.into()]),
    )
}

/// This project's reading of the VM's noise (docs/statistics.md): heavy tails (t₃),
/// a slow random walk of the machine's speed, and rare stalls — scaled so that the
/// paired log ratio has the robust σ asked for.
fn noise(paired_sigma: f64) -> Noise {
    Noise::machine_like(paired_sigma / std::f64::consts::SQRT_2)
}

#[derive(Default)]
struct Tally {
    verdicts: [usize; 4],
    covered: usize,
    rounds: Vec<u32>,
    seconds: Vec<f64>,
}

fn median<T: Copy + PartialOrd>(values: &mut [T]) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let series: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let paired_sigma: f64 = args.get(1).and_then(|a| a.parse::<f64>().ok()).unwrap_or(3.0) / 100.0;
    let run_seconds: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0.065);
    let ratios: Vec<f64> = args
        .get(3)
        .map(|a| a.split(',').filter_map(|r| r.parse().ok()).collect())
        .unwrap_or_else(|| vec![1.0, 1.005, 1.01, 1.02]);
    let all = [LookDesign::UnionBound, LookDesign::Pocock, LookDesign::Logarithmic, LookDesign::LogarithmicFront];
    // Designs by their JSON names (`logarithmic,logarithmic_front`); all four by default.
    let designs: Vec<LookDesign> = match args.get(4) {
        Some(names) => names
            .split(',')
            .map(|name| serde_json::from_value(serde_json::Value::String(name.into())).expect("a look design"))
            .collect(),
        None => all.to_vec(),
    };
    println!(
        "{series} simulated experiments per line; paired robust σ {:.1} %, t₃ tails, drift, 2 % stalls; \
         {:.0} ms runs; perflab's defaults (95 %, ±1 %, 60 s)",
        paired_sigma * 100.0,
        run_seconds * 1000.0
    );
    println!(
        "| design | true ratio | slower | faster | equivalent | inconclusive | CI covers | median rounds | median time |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for &ratio in &ratios {
        for &design in &designs {
            let mut tally = Tally::default();
            for i in 0..series {
                let seed = 1 + i * 7919;
                let mut machine = Simulated::new(seed, vec![run_seconds, run_seconds * ratio], noise(paired_sigma));
                let e = run_experiment(&plan(design, seed), &mut machine, &mut Quiet).expect("simulated runs");
                let c = e.comparisons.iter().find(|c| c.metric == metric::WALL).expect("a wall comparison");
                let slot = match c.verdict {
                    Verdict::Slower => 0,
                    Verdict::Faster => 1,
                    Verdict::Equivalent => 2,
                    Verdict::Inconclusive | Verdict::NotComparable => 3,
                };
                tally.verdicts[slot] += 1;
                tally.covered += usize::from(c.ci_low <= ratio && ratio <= c.ci_high);
                tally.rounds.push(e.rounds);
                tally.seconds.push(e.duration_s);
            }
            let pct = |n: usize| format!("{:.1} %", 100.0 * n as f64 / series as f64);
            println!(
                "| {design:?} | {ratio} | {} | {} | {} | {} | {} | {} | {:.1} s |",
                pct(tally.verdicts[0]),
                pct(tally.verdicts[1]),
                pct(tally.verdicts[2]),
                pct(tally.verdicts[3]),
                pct(tally.covered),
                median(&mut tally.rounds),
                median(&mut tally.seconds)
            );
        }
    }
}
