//! Applies four suite rules to the same recorded rounds (scripts/eval-suite record):
//! perflab's family rule and its `--per-benchmark` rule (each benchmark's experiment
//! replayed through the engine on its recorded rounds, in their order, stopping where
//! perflab stops or undecided when the recording ends), Bencher's (Student's t-test of
//! the new build's mean against the history of the baseline's means, 0.99 boundary) and
//! CodSpeed's (a fixed threshold on the change of the mean: 2 % and its default 10 %).
//! Prints per case (quiet, busy) the share of suite runs with an alarm — A/A suites of 20
//! and 100 — and the share in which each known +2 % change of a 50-benchmark suite was
//! found, with n and a 95 % Wilson interval, and the wall time per suite.
//!
//! Run: cargo run --example suite_eval -- OUT   (OUT as given to `scripts/eval-suite`)

use perflab::executor::{Executor, RunError};
use perflab::experiment::{run_experiment, Quiet};
use perflab::measure::MeasureOptions;
use perflab::model::{metric, CommandSpec, Experiment, Machine, Run, Settings, Verdict};
use perflab::plan::{Compared, Plan};
use perflab::stats::paired_means::t_quantile;
use perflab::suite::family::benchmark_confidence;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// A benchmark's recorded rounds handed out in their order: the engine replays its
/// experiment on them. The clock advances by each run's wall time and the harness's
/// share per run in the recording (its duration over the runs' wall time).
struct Recorded {
    runs: Vec<VecDeque<Run>>,
    clock_s: f64,
    overhead_per_run_s: f64,
    machine: Machine,
}

impl Executor for Recorded {
    fn run(&mut self, index: usize, _pad_bytes: Option<usize>) -> Result<Run, RunError> {
        let run = self.runs[index]
            .pop_front()
            .ok_or_else(|| RunError::Incomplete { run: None, why: "the recording ended".into() })?;
        self.clock_s += run.wall_s + self.overhead_per_run_s;
        Ok(run)
    }
    fn elapsed(&self) -> Duration {
        Duration::from_secs_f64(self.clock_s)
    }
    fn interrupted(&self) -> bool {
        false
    }
    fn machine(&self) -> Machine {
        self.machine.clone()
    }
}

/// One recorded benchmark of one block.
struct Bench {
    name: String,
    experiment: Experiment,
}

impl Bench {
    fn rounds(&self) -> u32 {
        self.experiment.commands.iter().map(|c| c.runs.len() as u32).min().unwrap_or(0)
    }

    fn means(&self) -> (f64, f64) {
        let mean = |i: usize| {
            let runs = &self.experiment.commands[i].runs;
            runs.iter().map(|r| r.wall_s).sum::<f64>() / runs.len() as f64
        };
        (mean(0), mean(1))
    }

    /// Seconds the recorded rounds took, the harness included.
    fn recorded_s(&self) -> f64 {
        self.experiment.duration_s
    }

    /// perflab's experiment replayed at `confidence`: its verdict, rounds and seconds.
    fn perflab(&self, confidence: f64, seed: u64) -> (Verdict, u32, f64) {
        let rounds = self.rounds();
        let plan = Plan::new(
            vec![CommandSpec::bare("a"), CommandSpec::bare("b")],
            Settings { seed, confidence, warmup_rounds: 0, max_rounds: rounds, max_time_s: 1e9, ..Settings::default() },
            MeasureOptions::default(),
            Compared {
                metrics: vec![metric::WALL.into(), metric::CPU.into()],
                primary: metric::WALL.into(),
                auto_primary: true,
            },
        );
        let walls: f64 = self.experiment.commands.iter().flat_map(|c| &c.runs).map(|r| r.wall_s).sum();
        let count = self.experiment.commands.iter().map(|c| c.runs.len()).sum::<usize>().max(1);
        let mut executor = Recorded {
            runs: self
                .experiment
                .commands
                .iter()
                .map(|c| {
                    let mut runs = c.runs.clone();
                    runs.sort_by_key(|r| r.round);
                    runs.into_iter().collect()
                })
                .collect(),
            clock_s: 0.0,
            overhead_per_run_s: ((self.recorded_s() - walls) / count as f64).max(0.0),
            machine: self.experiment.machine.clone(),
        };
        let e = run_experiment(&plan, &mut executor, &mut Quiet).expect("recorded runs replay");
        let c =
            e.comparisons.iter().find(|c| c.metric == e.primary_metric).expect("a comparison of the primary metric");
        (c.verdict, e.rounds, e.duration_s)
    }
}

/// One record of `run --json` (the rest of it is not read).
#[derive(serde::Deserialize)]
struct Record {
    benchmark: String,
    experiment: Experiment,
}

/// A block: one `run` of the recorded suite.
struct Block {
    case: String,
    benches: BTreeMap<String, Bench>,
}

fn load(out: &str) -> Vec<Block> {
    let log = std::fs::read_to_string(format!("{out}/blocks.jsonl")).expect("OUT/blocks.jsonl");
    let mut blocks = Vec::new();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let entry: serde_json::Value = serde_json::from_str(line).expect("a block's line");
        if entry["exit"].as_i64() != Some(0) {
            eprintln!("skipping block {} (exit {})", entry["block"], entry["exit"]);
            continue;
        }
        let file = format!("{out}/blocks/{}", entry["file"].as_str().expect("file"));
        let records: Vec<Record> =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("a block's JSON")).expect("the run's records");
        let benches = records
            .into_iter()
            .map(|r| (r.benchmark.clone(), Bench { name: r.benchmark, experiment: r.experiment }))
            .collect();
        blocks.push(Block { case: entry["case"].as_str().unwrap_or("?").to_string(), benches });
    }
    blocks
}

/// The 95 % Wilson score interval of k in n, in percent.
fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let (k, n, z) = (k as f64, n as f64, 1.959964);
    let p = k / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (100.0 * (centre - half).max(0.0), 100.0 * (centre + half).min(1.0))
}

fn share(k: usize, n: usize) -> String {
    let (lo, hi) = wilson(k, n);
    format!("{k}/{n} = {:.0} % [{lo:.0}, {hi:.0}]", 100.0 * k as f64 / n.max(1) as f64)
}

/// Rules, in the order printed.
const RULES: [&str; 5] =
    ["perflab family", "perflab --per-benchmark", "Bencher t-test 0.99", "CodSpeed 2 %", "CodSpeed 10 %"];

/// One benchmark of one block judged by every rule: alarm (slower or faster for an
/// unchanged benchmark), regression found (slower), undecided (perflab only), seconds.
#[derive(Debug, Clone, Copy, Default)]
struct Judged {
    alarm: [bool; 5],
    slower: [bool; 5],
    undecided: [bool; 5],
    seconds: [f64; 5],
}

fn judge(bench: &Bench, family_level: f64, history: &[f64], seed: u64) -> Judged {
    let mut j = Judged::default();
    for (i, level) in [family_level, 0.95].into_iter().enumerate() {
        let (verdict, _, seconds) = bench.perflab(level, seed);
        j.alarm[i] = matches!(verdict, Verdict::Slower | Verdict::Faster);
        j.slower[i] = verdict == Verdict::Slower;
        j.undecided[i] = matches!(verdict, Verdict::Inconclusive | Verdict::NotComparable);
        j.seconds[i] = seconds;
    }
    let (a, b) = bench.means();
    // Bencher: the new value against the history's mean ± t(0.99, n − 1) · s.
    if history.len() >= 2 {
        let n = history.len() as f64;
        let mean = history.iter().sum::<f64>() / n;
        let sd = (history.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let t = t_quantile(0.98, n - 1.0).expect("a t quantile");
        j.slower[2] = b > mean + t * sd;
        j.alarm[2] = j.slower[2] || b < mean - t * sd;
    }
    for (i, threshold) in [(3, 0.02), (4, 0.10)] {
        let change = b / a - 1.0;
        j.slower[i] = change > threshold;
        j.alarm[i] = change.abs() > threshold;
    }
    for s in &mut j.seconds[2..] {
        *s = bench.recorded_s();
    }
    j
}

fn main() {
    let out = std::env::args().nth(1).expect("usage: suite_eval OUT");
    let blocks = load(&out);
    let cases: Vec<String> = {
        let mut c: Vec<String> = blocks.iter().map(|b| b.case.clone()).collect();
        c.dedup();
        c.sort();
        c.dedup();
        c
    };
    // The true ratio of the changed benchmarks: all their rounds pooled, per case.
    for case in &cases {
        let in_case: Vec<&Block> = blocks.iter().filter(|b| &b.case == case).collect();
        println!(
            "\n== {case}: {} blocks (suite runs of 100: {}, of 20: {}, of 50: {})",
            in_case.len(),
            in_case.len(),
            5 * in_case.len(),
            2 * in_case.len()
        );
        let pooled = |prefix: &str| {
            let mut logs = Vec::new();
            let mut sigmas = Vec::new();
            for b in &in_case {
                for bench in b.benches.values().filter(|x| x.name.starts_with(prefix)) {
                    let c = &bench.experiment.commands;
                    let mut by_round: BTreeMap<u32, [f64; 2]> = BTreeMap::new();
                    for (i, cmd) in c.iter().enumerate().take(2) {
                        for r in &cmd.runs {
                            by_round.entry(r.round).or_insert([f64::NAN; 2])[i] = r.wall_s;
                        }
                    }
                    let l: Vec<f64> =
                        by_round.values().filter(|v| v[0] > 0.0 && v[1] > 0.0).map(|v| (v[1] / v[0]).ln()).collect();
                    sigmas.push(perflab::stats::summary::mad_scaled(&l));
                    logs.extend(l);
                }
            }
            (perflab::stats::summary::median(&logs).exp(), perflab::stats::summary::median(&sigmas))
        };
        for prefix in ["aa-", "chg-", "cp-"] {
            let (ratio, sigma) = pooled(prefix);
            println!(
                "  {prefix}*: pooled median wall ratio b/a {ratio:.4}, median paired σ per round {:.1} %",
                sigma * 100.0
            );
        }
        // Judge every benchmark once per suite it belongs to.
        let mut aa20 = [0usize; 5];
        let mut aa100 = [0usize; 5];
        let mut aa20_undecided = [0usize; 2];
        let mut aa100_undecided = [0usize; 2];
        let mut n20 = 0;
        let mut n100 = 0;
        let mut s20: Vec<[f64; 5]> = Vec::new();
        let mut s100: Vec<[f64; 5]> = Vec::new();
        let mut found = [[0usize; 5]; 3];
        let mut all_found = [0usize; 5];
        let mut n50 = 0;
        let mut s50: Vec<[f64; 5]> = Vec::new();
        let mut cp_alarm = [0usize; 5];
        let mut n_cp = 0;
        for (bi, block) in in_case.iter().enumerate() {
            let history = |name: &str| -> Vec<f64> {
                in_case
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != bi)
                    .filter_map(|(_, b)| b.benches.get(name).map(|x| x.means().0))
                    .take(64)
                    .collect()
            };
            let seed = 17 + bi as u64;
            let aa: Vec<&Bench> = (0..100).filter_map(|i| block.benches.get(&format!("aa-{i:03}"))).collect();
            if aa.len() < 100 {
                eprintln!("block {bi} of {case}: {} A/A benchmarks, skipped", aa.len());
                continue;
            }
            // 100: one suite; 20: five suites of consecutive names.
            let suite = |members: &[&Bench], k: usize| -> Vec<Judged> {
                let level = benchmark_confidence(0.95, k);
                members.iter().map(|b| judge(b, level, &history(&b.name), seed)).collect()
            };
            let tally = |judged: &[Judged],
                         alarms: &mut [usize; 5],
                         undecided: &mut [usize; 2],
                         seconds: &mut Vec<[f64; 5]>| {
                for r in 0..5 {
                    alarms[r] += usize::from(judged.iter().any(|j| j.alarm[r]));
                }
                for r in 0..2 {
                    undecided[r] += usize::from(judged.iter().any(|j| j.undecided[r]));
                }
                let mut s = [0.0; 5];
                for j in judged {
                    for r in 0..5 {
                        s[r] += j.seconds[r];
                    }
                }
                seconds.push(s);
            };
            let judged100 = suite(&aa, 100);
            tally(&judged100, &mut aa100, &mut aa100_undecided, &mut s100);
            n100 += 1;
            for fifth in aa.chunks(20) {
                let judged = suite(fifth, 20);
                tally(&judged, &mut aa20, &mut aa20_undecided, &mut s20);
                n20 += 1;
            }
            // 50: 47 A/A and 3 changed, twice.
            for half in 0..2 {
                let changed: Vec<&Bench> =
                    (0..3).filter_map(|i| block.benches.get(&format!("chg-{}", 3 * half + i))).collect();
                if changed.len() < 3 {
                    continue;
                }
                // The 47 unchanged ones are not replayed again at the 50-suite's level (the
                // A/A suites above say what unchanged benchmarks do): only the changes.
                let judged = suite(&changed, 50);
                n50 += 1;
                let mut s = [0.0; 5];
                for r in 0..5 {
                    let hits: Vec<bool> = judged.iter().map(|j| j.slower[r]).collect();
                    for (i, hit) in hits.iter().enumerate() {
                        found[i][r] += usize::from(*hit);
                    }
                    all_found[r] += usize::from(hits.iter().all(|h| *h));
                    // The suite's time: the 3 changes and 47 of the 100-suite's A/A benchmarks.
                    s[r] = judged.iter().map(|j| j.seconds[r]).sum::<f64>()
                        + judged100[47 * half..47 * half + 47].iter().map(|j| j.seconds[r]).sum::<f64>();
                }
                s50.push(s);
            }
            // Copies of one binary: alarms per benchmark (not a suite).
            for i in 0..6 {
                if let Some(b) = block.benches.get(&format!("cp-{i}")) {
                    let j = judge(b, benchmark_confidence(0.95, 50), &history(&b.name), seed);
                    for r in 0..5 {
                        cp_alarm[r] += usize::from(j.alarm[r]);
                    }
                    n_cp += 1;
                }
            }
        }
        let median = |v: &[[f64; 5]], r: usize| {
            let mut x: Vec<f64> = v.iter().map(|s| s[r]).collect();
            x.sort_by(|a, b| a.total_cmp(b));
            x.get(x.len() / 2).copied().unwrap_or(f64::NAN)
        };
        println!(
            "  {:<26} {:<26} {:<26} {:>9} {:>9}",
            "rule", "A/A 20: runs with alarm", "A/A 100: runs with alarm", "s/20", "s/100"
        );
        for r in 0..5 {
            println!(
                "  {:<26} {:<26} {:<26} {:>9.1} {:>9.1}",
                RULES[r],
                share(aa20[r], n20),
                share(aa100[r], n100),
                median(&s20, r),
                median(&s100, r)
            );
        }
        for r in 0..2 {
            println!(
                "  {:<26} undecided somewhere: 20: {}, 100: {}",
                RULES[r],
                share(aa20_undecided[r], n20),
                share(aa100_undecided[r], n100)
            );
        }
        println!(
            "  {:<26} {:<22} {:<22} {:<22} {:<22} {:>8}",
            "rule", "+2 % #1 found", "#2 found", "#3 found", "all 3 found", "s/50"
        );
        for r in 0..5 {
            println!(
                "  {:<26} {:<22} {:<22} {:<22} {:<22} {:>8.1}",
                RULES[r],
                share(found[0][r], n50),
                share(found[1][r], n50),
                share(found[2][r], n50),
                share(all_found[r], n50),
                median(&s50, r)
            );
        }
        println!("  byte-identical copies (cp-*), per benchmark, at the 50-suite's level:");
        for r in 0..5 {
            println!("    {:<26} alarm {}", RULES[r], share(cp_alarm[r], n_cp));
        }
    }
}
