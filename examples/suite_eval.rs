//! Applies the suite rules to the same recorded rounds (scripts/eval-suite record):
//! perflab's family rule and its `--per-benchmark` rule (each benchmark's experiment
//! replayed through the engine on its recorded rounds, in their order, with `run`'s
//! settings and metrics — wall time giving way to `uncontended_s` on a busy machine —,
//! stopping where perflab stops or undecided when the recording ends), the family rule at
//! the recording's fixed rounds (`run --rounds R`, one look), Bencher's (Student's t-test
//! of the new build's mean against the history of the baseline's means, 0.99 boundary) and
//! CodSpeed's (a fixed threshold on the change of the mean: 2 % and its default 10 %).
//! Prints per case (quiet, busy) the share of suite runs with an alarm — A/A suites of 20
//! and 100 — and the share in which each known +2 % change of a 50-benchmark suite was
//! found, with n and a 95 % Wilson interval, the rounds each rule used and the time per
//! suite they cost (the recorded runs' wall times and harness overhead).
//!
//! Run: cargo run --release --example suite_eval -- OUT   (OUT as given to
//! `scripts/eval-suite`). The replays of each block are kept in OUT/replays/ (a new
//! block is replayed once, however often the figures are printed), several blocks at
//! a time on SUITE_EVAL_THREADS threads (2 by default).

use perflab::executor::{Executor, RunError};
use perflab::experiment::{run_experiment, Quiet};
use perflab::measure::MeasureOptions;
use perflab::model::{metric, CommandSpec, Experiment, Machine, Run, Settings, Verdict};
use perflab::plan::{Compared, Plan};
use perflab::stats::paired_means::t_quantile;
use perflab::suite::family::benchmark_confidence;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// A benchmark's recorded rounds handed out in their order: the engine replays its
/// experiment on them. The clock advances by each run's wall time and the harness's
/// share per run in the recording (its duration over the runs' wall time). Once the last
/// recorded round is handed out the clock reads past any `--max-time`: the engine then
/// ends the experiment as a run whose time ran out at that round does (a final look that
/// spends what is left of α), without asking for a run the recording does not have.
struct Recorded {
    runs: Vec<VecDeque<Run>>,
    clock_s: f64,
    overhead_per_run_s: f64,
    machine: Machine,
    ended: bool,
}

/// What the clock reads once the recording ended: beyond any time limit.
const PAST_ANY_LIMIT_S: f64 = 1e9;

impl Executor for Recorded {
    fn run(&mut self, index: usize, _pad_bytes: Option<usize>) -> Result<Run, RunError> {
        let run = self.runs[index]
            .pop_front()
            .ok_or_else(|| RunError::Incomplete { run: None, why: "the recording ended".into() })?;
        self.clock_s += run.wall_s + self.overhead_per_run_s;
        self.ended = self.runs.iter().all(VecDeque::is_empty);
        Ok(run)
    }
    fn elapsed(&self) -> Duration {
        Duration::from_secs_f64(self.clock_s + if self.ended { PAST_ANY_LIMIT_S } else { 0.0 })
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

/// What one replay of perflab's experiment decided and what it cost.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct Replayed {
    verdict: Verdict,
    rounds: u32,
    seconds: f64,
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

    /// perflab's experiment replayed at `confidence` with `run`'s defaults (no `--metric`:
    /// wall time, CPU time and peak RSS compared, wall time giving way to `uncontended_s`
    /// when the runs waited for a CPU; `--max-time 60s`, `--max-rounds 10000`, so the
    /// looks plan the same horizon from the recorded pace). `fixed`: one look after every
    /// recorded round (`run --rounds R`); otherwise the sequential looks, and where the
    /// recording ends the experiment ends as if its time ran out there (a real run would
    /// go on towards its 60 s). The warm-up run was taken when recording and is not among
    /// the runs.
    fn perflab(&self, confidence: f64, fixed: bool, seed: u64) -> Replayed {
        let rounds = self.rounds();
        let plan = Plan::new(
            vec![CommandSpec::bare("a"), CommandSpec::bare("b")],
            Settings {
                seed,
                confidence,
                warmup_rounds: 0,
                fixed_rounds: fixed.then_some(rounds),
                ..Settings::default()
            },
            MeasureOptions::default(),
            Compared {
                metrics: metric::COMPARED.iter().map(|m| m.to_string()).collect(),
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
            ended: false,
        };
        let e = run_experiment(&plan, &mut executor, &mut Quiet).expect("recorded runs replay");
        assert!(e.failure.is_none(), "{}: the replay failed: {:?}", self.name, e.failure);
        let c =
            e.comparisons.iter().find(|c| c.metric == e.primary_metric).expect("a comparison of the primary metric");
        Replayed { verdict: c.verdict, rounds: e.rounds, seconds: executor.clock_s }
    }

    /// The pooled log ratios b/a of `name` round by round, and their robust σ.
    fn paired_logs(&self, name: &str) -> Vec<f64> {
        let mut by_round: BTreeMap<u32, [f64; 2]> = BTreeMap::new();
        for (i, cmd) in self.experiment.commands.iter().enumerate().take(2) {
            for r in &cmd.runs {
                let value = if name == metric::WALL { Some(r.wall_s) } else { r.metric(name) };
                by_round.entry(r.round).or_insert([f64::NAN; 2])[i] = value.unwrap_or(f64::NAN);
            }
        }
        by_round.values().filter(|v| v[0] > 0.0 && v[1] > 0.0).map(|v| (v[1] / v[0]).ln()).collect()
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
    /// Its number in OUT/blocks.jsonl (the seed of its replays).
    number: u64,
    /// Its JSON's name without `.json`.
    stem: String,
    case: String,
    load: [f64; 2],
    wall_s: f64,
    started: String,
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
        let one_minute = |key: &str| entry[key][0].as_f64().unwrap_or(f64::NAN);
        blocks.push(Block {
            number: entry["block"].as_u64().unwrap_or(0),
            stem: entry["file"].as_str().unwrap_or("?").trim_end_matches(".json").to_string(),
            case: entry["case"].as_str().unwrap_or("?").to_string(),
            load: [one_minute("load_before"), one_minute("load_after")],
            wall_s: entry["wall_s"].as_f64().unwrap_or(f64::NAN),
            started: entry["started"].as_str().unwrap_or("?").chars().skip(11).take(5).collect(),
            benches,
        });
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

const RULE_COUNT: usize = 6;
/// Rules, in the order printed; the first three are perflab's.
const RULES: [&str; RULE_COUNT] = [
    "perflab family (sequential)",
    "perflab --per-benchmark",
    "perflab family, --rounds R",
    "Bencher t-test 0.99",
    "CodSpeed 2 %",
    "CodSpeed 10 %",
];
const PERFLAB_RULES: usize = 3;

/// One benchmark of one suite judged by every rule: alarm (slower or faster for an
/// unchanged benchmark), regression found (slower), undecided and `equivalent` (perflab
/// only), rounds used and seconds.
#[derive(Debug, Clone, Copy, Default)]
struct Judged {
    alarm: [bool; RULE_COUNT],
    slower: [bool; RULE_COUNT],
    undecided: [bool; RULE_COUNT],
    equivalent: [bool; RULE_COUNT],
    rounds: [u32; RULE_COUNT],
    seconds: [f64; RULE_COUNT],
}

/// Judges benchmarks, replaying each perflab experiment once per level (the
/// `--per-benchmark` replay at 95 % serves every suite the benchmark is in).
struct Judge<'a> {
    replays: Replays,
    seed: u64,
    history: Box<dyn Fn(&str) -> Vec<f64> + 'a>,
}

impl Judge<'_> {
    fn replay(&mut self, bench: &Bench, level: f64, fixed: bool) -> Replayed {
        let key = replay_key(&bench.name, level, fixed);
        let seed = self.seed;
        *self.replays.entry(key).or_insert_with(|| bench.perflab(level, fixed, seed))
    }

    fn judge(&mut self, bench: &Bench, family_level: f64) -> Judged {
        let mut j = Judged::default();
        for (i, (level, fixed)) in [(family_level, false), (0.95, false), (family_level, true)].into_iter().enumerate()
        {
            let r = self.replay(bench, level, fixed);
            j.alarm[i] = matches!(r.verdict, Verdict::Slower | Verdict::Faster);
            j.slower[i] = r.verdict == Verdict::Slower;
            j.undecided[i] = matches!(r.verdict, Verdict::Inconclusive | Verdict::NotComparable);
            j.equivalent[i] = r.verdict == Verdict::Equivalent;
            j.rounds[i] = r.rounds;
            j.seconds[i] = r.seconds;
        }
        let (a, b) = bench.means();
        let history = (self.history)(&bench.name);
        // Bencher: the new value against the history's mean ± t(0.99, n − 1) · s.
        if history.len() >= 2 {
            let n = history.len() as f64;
            let mean = history.iter().sum::<f64>() / n;
            let sd = (history.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            let t = t_quantile(0.98, n - 1.0).expect("a t quantile");
            j.slower[3] = b > mean + t * sd;
            j.alarm[3] = j.slower[3] || b < mean - t * sd;
        }
        for (i, threshold) in [(4, 0.02), (5, 0.10)] {
            let change = b / a - 1.0;
            j.slower[i] = change > threshold;
            j.alarm[i] = change.abs() > threshold;
        }
        // Bencher and CodSpeed judge a fixed number of iterations: the recorded rounds.
        for r in PERFLAB_RULES..RULE_COUNT {
            j.rounds[r] = bench.rounds();
            j.seconds[r] = bench.recorded_s();
        }
        j
    }
}

/// Per rule: suite runs with an alarm, with a benchmark left undecided, with every
/// benchmark `equivalent`, and each suite run's seconds and its benchmarks' rounds.
#[derive(Default)]
struct Tally {
    runs: usize,
    alarm: [usize; RULE_COUNT],
    undecided: [usize; RULE_COUNT],
    all_equivalent: [usize; RULE_COUNT],
    seconds: Vec<[f64; RULE_COUNT]>,
    rounds: Vec<[u32; RULE_COUNT]>,
}

impl Tally {
    fn add(&mut self, judged: &[Judged]) {
        self.runs += 1;
        let mut s = [0.0; RULE_COUNT];
        for r in 0..RULE_COUNT {
            self.alarm[r] += usize::from(judged.iter().any(|j| j.alarm[r]));
            self.undecided[r] += usize::from(judged.iter().any(|j| j.undecided[r]));
            self.all_equivalent[r] += usize::from(judged.iter().all(|j| j.equivalent[r]));
            s[r] = judged.iter().map(|j| j.seconds[r]).sum();
        }
        self.seconds.push(s);
        for j in judged {
            self.rounds.push(j.rounds);
        }
    }
}

/// A block's replays by [`replay_key`].
type Replays = HashMap<String, Replayed>;

fn replay_key(name: &str, level: f64, fixed: bool) -> String {
    format!("{name}|{level:.10}|{}", if fixed { "fixed" } else { "sequential" })
}

/// Bumped whenever the replay changes, so that an older cache is not read.
const REPLAY_VERSION: u32 = 1;

fn cache_path(out: &str, block: &Block) -> String {
    format!("{out}/replays/v{REPLAY_VERSION}-{}.json", block.stem)
}

/// The A/A benchmarks of a block, in name order.
fn unchanged(block: &Block) -> Vec<&Bench> {
    block.benches.values().filter(|b| b.name.starts_with("aa-")).collect()
}

/// The replays `main` asks for: every suite a benchmark is in (A/A: 100 and 20, or 50 and
/// 20 in a block without a suite of 100; changed and copied: 50), sequential and fixed,
/// and the `--per-benchmark` one at 95 %.
fn needed(block: &Block) -> Vec<(&Bench, f64, bool)> {
    let aa_sizes: &[usize] = if unchanged(block).len() >= 100 { &[100, 20] } else { &[50, 20] };
    let mut out = Vec::new();
    for bench in block.benches.values() {
        let sizes: &[usize] = if bench.name.starts_with("aa-") { aa_sizes } else { &[50] };
        for &k in sizes {
            for fixed in [false, true] {
                out.push((bench, benchmark_confidence(0.95, k), fixed));
            }
        }
        out.push((bench, 0.95, false));
    }
    out
}

/// Replays what no earlier analysis kept, several blocks at a time, and returns every
/// block's replays.
fn replay_all(out: &str, blocks: &[Block]) -> Vec<Replays> {
    std::fs::create_dir_all(format!("{out}/replays")).expect("OUT/replays");
    let threads: usize = std::env::var("SUITE_EVAL_THREADS").ok().and_then(|t| t.parse().ok()).unwrap_or(2).max(1);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Replays>>> = Mutex::new((0..blocks.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(block) = blocks.get(i) else { break };
                let path = cache_path(out, block);
                let mut replays: Replays = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|text| serde_json::from_str(&text).ok())
                    .unwrap_or_default();
                let before = replays.len();
                for (bench, level, fixed) in needed(block) {
                    let key = replay_key(&bench.name, level, fixed);
                    replays.entry(key).or_insert_with(|| bench.perflab(level, fixed, 17 + block.number));
                }
                if replays.len() != before {
                    std::fs::write(&path, serde_json::to_string(&replays).expect("replays as JSON"))
                        .expect("writing OUT/replays");
                    eprintln!("block {} ({}): {} replays", block.number, block.case, replays.len() - before);
                }
                results.lock().expect("results")[i] = Some(replays);
            });
        }
    });
    results.into_inner().expect("results").into_iter().map(|r| r.expect("every block replayed")).collect()
}

fn median_of(mut x: Vec<f64>) -> f64 {
    x.sort_by(|a, b| a.total_cmp(b));
    x.get(x.len() / 2).copied().unwrap_or(f64::NAN)
}

fn seconds(v: &[[f64; RULE_COUNT]], r: usize) -> String {
    let x: Vec<f64> = v.iter().map(|s| s[r]).collect();
    if x.is_empty() {
        return "-".into();
    }
    let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.0} ({:.0}–{:.0})", median_of(x), lo, hi)
}

fn rounds(v: &[[u32; RULE_COUNT]], r: usize) -> String {
    let mut x: Vec<u32> = v.iter().map(|s| s[r]).collect();
    if x.is_empty() {
        return "-".into();
    }
    x.sort();
    format!("{}/{}", x[x.len() / 2], x[(x.len() * 9 / 10).min(x.len() - 1)])
}

fn main() {
    let out = std::env::args().nth(1).expect("usage: suite_eval OUT");
    let blocks = load(&out);
    let mut replays = replay_all(&out, &blocks);
    let mut cases: Vec<String> = blocks.iter().map(|b| b.case.clone()).collect();
    cases.sort();
    cases.dedup();
    for case in &cases {
        let in_case: Vec<&Block> = blocks.iter().filter(|b| &b.case == case).collect();
        let mut case_replays: Vec<Replays> = blocks
            .iter()
            .zip(replays.iter_mut())
            .filter(|(b, _)| &b.case == case)
            .map(|(_, r)| std::mem::take(r))
            .collect();
        let loads: Vec<f64> = in_case.iter().flat_map(|b| b.load).collect();
        let changed_names: Vec<String> = {
            let mut names: Vec<String> = in_case[0].benches.keys().filter(|n| n.starts_with("chg-")).cloned().collect();
            names.sort();
            names
        };
        let rounds_recorded: Vec<u32> =
            in_case.iter().filter_map(|b| b.benches.values().next()).map(Bench::rounds).collect();
        println!(
            "\n== {case}: {} blocks of {} rounds, started {} UTC; load average (1 min) {:.1}–{:.1} before/after; a block took {:.0}–{:.0} s",
            in_case.len(),
            rounds_recorded.first().copied().unwrap_or(0),
            in_case.iter().map(|b| b.started.as_str()).collect::<Vec<_>>().join(" "),
            loads.iter().copied().fold(f64::INFINITY, f64::min),
            loads.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            in_case.iter().map(|b| b.wall_s).fold(f64::INFINITY, f64::min),
            in_case.iter().map(|b| b.wall_s).fold(f64::NEG_INFINITY, f64::max),
        );
        // The true ratios: every round of every block pooled, on both time metrics.
        for prefix in ["aa-", "chg-", "cp-"] {
            if !in_case.iter().any(|b| b.benches.keys().any(|n| n.starts_with(prefix))) {
                continue;
            }
            let mut parts = Vec::new();
            for name in [metric::WALL, metric::UNCONTENDED] {
                let mut logs = Vec::new();
                let mut sigmas = Vec::new();
                for b in &in_case {
                    for bench in b.benches.values().filter(|x| x.name.starts_with(prefix)) {
                        let l = bench.paired_logs(name);
                        sigmas.push(perflab::stats::summary::mad_scaled(&l));
                        logs.extend(l);
                    }
                }
                let (lo, hi) = perflab::stats::summary::median_ci(&logs, 0.95).unwrap_or((f64::NAN, f64::NAN));
                parts.push(format!(
                    "{name} {:.4} [{:.4}, {:.4}] (σ per round {:.1} %)",
                    perflab::stats::summary::median(&logs).exp(),
                    lo.exp(),
                    hi.exp(),
                    100.0 * perflab::stats::summary::median(&sigmas)
                ));
            }
            println!("  {prefix}*: pooled median ratio b/a {}", parts.join(", "));
        }
        let primaries: BTreeMap<String, usize> =
            in_case.iter().flat_map(|b| b.benches.values()).fold(BTreeMap::new(), |mut m, b| {
                *m.entry(b.experiment.primary_metric.clone()).or_insert(0) += 1;
                m
            });
        println!("  metric the recording decided on: {primaries:?}");
        let mut aa20 = Tally::default();
        let mut aa100 = Tally::default();
        let mut s50 = Tally::default();
        let mut found = [[0usize; RULE_COUNT]; 3];
        let mut all_found = [0usize; RULE_COUNT];
        let mut changed_rounds: Vec<[u32; RULE_COUNT]> = Vec::new();
        let mut aa_benchmarks = [0usize; 2];
        let mut aa_equivalent = [0usize; RULE_COUNT];
        let mut aa20_equivalent = [0usize; RULE_COUNT];
        let mut cp_alarm = [0usize; RULE_COUNT];
        let mut n_cp = 0;
        for (bi, block) in in_case.iter().enumerate() {
            let mut judge = Judge {
                replays: std::mem::take(&mut case_replays[bi]),
                seed: 17 + block.number,
                history: Box::new(|name: &str| -> Vec<f64> {
                    in_case
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| *j != bi)
                        .filter_map(|(_, b)| b.benches.get(name).map(|x| x.means().0))
                        .take(64)
                        .collect()
                }),
            };
            // A block of 100 A/A benchmarks (or more) gives one suite of 100, five of 20,
            // and the 47 unchanged members of its suites of 50 from the 100's verdicts (at
            // 99.95 % rather than 99.9 %), taken in turn. A long block of 47 (`record --aa
            // 47`) gives two suites of 20 and its 47 as every suite of 50's unchanged
            // members, judged at the 50-suite's level.
            let aa = unchanged(block);
            if aa.len() < 47 {
                eprintln!("block {bi} of {case}: {} A/A benchmarks, skipped", aa.len());
                continue;
            }
            let mut suite = |members: &[&Bench], k: usize| -> Vec<Judged> {
                let level = benchmark_confidence(0.95, k);
                members.iter().map(|b| judge.judge(b, level)).collect()
            };
            let hundred = aa.len() >= 100;
            let unchanged50: Vec<Judged> = if hundred {
                let judged100 = suite(&aa[..100], 100);
                aa100.add(&judged100);
                aa_benchmarks[0] += judged100.len();
                for j in &judged100 {
                    for r in 0..RULE_COUNT {
                        aa_equivalent[r] += usize::from(j.equivalent[r]);
                    }
                }
                judged100
            } else {
                suite(&aa[..47], 50)
            };
            for fifth in aa[..if hundred { 100 } else { 40 }].chunks(20) {
                let judged = suite(fifth, 20);
                aa20.add(&judged);
                aa_benchmarks[1] += judged.len();
                for j in &judged {
                    for r in 0..RULE_COUNT {
                        aa20_equivalent[r] += usize::from(j.equivalent[r]);
                    }
                }
            }
            // 50: 47 A/A and 3 changed, once per three changed benchmarks; the A/A suites
            // say what unchanged benchmarks do, so the 47 are not independent draws.
            for (si, three) in changed_names.chunks(3).enumerate() {
                let changed: Vec<&Bench> = three.iter().filter_map(|n| block.benches.get(n)).collect();
                if changed.len() < 3 {
                    continue;
                }
                let judged = suite(&changed, 50);
                let start = if hundred { (47 * si) % 53 } else { 0 };
                let mut all: Vec<Judged> = judged.clone();
                all.extend_from_slice(&unchanged50[start..start + 47]);
                s50.add(&all);
                changed_rounds.extend(judged.iter().map(|j| j.rounds));
                for r in 0..RULE_COUNT {
                    let hits: Vec<bool> = judged.iter().map(|j| j.slower[r]).collect();
                    for (i, hit) in hits.iter().enumerate() {
                        found[i][r] += usize::from(*hit);
                    }
                    all_found[r] += usize::from(hits.iter().all(|h| *h));
                }
            }
            // Copies of one binary: alarms per benchmark (not a suite).
            for i in 0..6 {
                if let Some(b) = block.benches.get(&format!("cp-{i}")) {
                    let j = judge.judge(b, benchmark_confidence(0.95, 50));
                    for r in 0..RULE_COUNT {
                        cp_alarm[r] += usize::from(j.alarm[r]);
                    }
                    n_cp += 1;
                }
            }
        }
        println!(
            "  {:<28} {:<24} {:<24} {:>16} {:>16} {:>11} {:>11}",
            "rule",
            "A/A 20: runs w/ alarm",
            "A/A 100: runs w/ alarm",
            "s/20 med (range)",
            "s/100 med (range)",
            "rounds 20",
            "rounds 100"
        );
        for r in 0..RULE_COUNT {
            println!(
                "  {:<28} {:<24} {:<24} {:>16} {:>16} {:>11} {:>11}",
                RULES[r],
                share(aa20.alarm[r], aa20.runs),
                share(aa100.alarm[r], aa100.runs),
                seconds(&aa20.seconds, r),
                seconds(&aa100.seconds, r),
                rounds(&aa20.rounds, r),
                rounds(&aa100.rounds, r)
            );
        }
        println!("  (rounds: median/90th percentile per benchmark; seconds: the suite's rounds, recorded wall time and harness overhead)");
        for r in 0..PERFLAB_RULES {
            println!(
                "  {:<28} A/A × 100: {} of {} benchmarks equivalent (× 20: {} of {}); runs with a benchmark undecided: 20: {}, 100: {}; all equivalent: 20: {}, 100: {}",
                RULES[r],
                aa_equivalent[r],
                aa_benchmarks[0],
                aa20_equivalent[r],
                aa_benchmarks[1],
                share(aa20.undecided[r], aa20.runs),
                share(aa100.undecided[r], aa100.runs),
                share(aa20.all_equivalent[r], aa20.runs),
                share(aa100.all_equivalent[r], aa100.runs),
            );
        }
        println!(
            "  {:<28} {:<22} {:<22} {:<22} {:<22} {:>16} {:>9}",
            "rule", "+2 % #1 found", "#2 found", "#3 found", "all 3 found", "s/50 med (range)", "rounds of the 3"
        );
        for r in 0..RULE_COUNT {
            println!(
                "  {:<28} {:<22} {:<22} {:<22} {:<22} {:>16} {:>9}",
                RULES[r],
                share(found[0][r], s50.runs),
                share(found[1][r], s50.runs),
                share(found[2][r], s50.runs),
                share(all_found[r], s50.runs),
                seconds(&s50.seconds, r),
                rounds(&changed_rounds, r)
            );
        }
        if n_cp == 0 {
            continue;
        }
        println!("  byte-identical copies (cp-*), per benchmark, at the 50-suite's level:");
        for r in 0..RULE_COUNT {
            println!("    {:<28} alarm {}", RULES[r], share(cp_alarm[r], n_cp));
        }
    }
}
