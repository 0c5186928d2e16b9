//! Validates the estimator choice (`analysis::noise`) on the library of real noise
//! (`tests/data/noise/*.csv`, replayed by `executor::replay`) and on synthetic noise:
//!
//! * **fixed n** — for each estimator (Hodges–Lehmann, median, 20 % trimmed mean, the
//!   mean with a t interval for reference, and the adaptive choice made on the same
//!   rounds), how many rounds a single 95 % interval needs for half of the experiments
//!   to reach the right verdict (`n50`), and its coverage;
//! * **sequential** — whole experiments of the real engine (perflab's defaults: 95 %,
//!   ±1 %, 60 s, group-sequential looks) with each estimator forced and with the
//!   adaptive choice: verdict shares, false verdicts (any `slower`/`faster` of an A/A
//!   pair, `faster` of a slower one…), interval coverage of the true ratio, median and
//!   90th-percentile rounds and seconds.
//!
//! Run: cargo run --release --example noise_sim -- [EXPERIMENTS] [fixed|sequential|both] [FILTER]
//! (defaults 200, both, every scenario; FILTER keeps scenarios whose name contains it).

use perflab_engine::executor::replay::{Replay, Trace};
use perflab_engine::executor::simulated::{Noise, Simulated};
use perflab_engine::executor::Executor;
use perflab_engine::experiment::{run_experiment, Quiet};
use perflab_engine::measure::MeasureOptions;
use perflab_engine::plan::{Compared, Plan};
use perflab_model::{metric, CommandSpec, Estimator, Settings, Verdict};
use perflab_stats::estimator::{self, locate};
use perflab_stats::summary;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// Where a scenario's runs come from.
#[derive(Clone)]
enum Source {
    Trace(Arc<Trace>),
    /// Noise model and seconds per run.
    Synthetic(Noise, f64),
}

#[derive(Clone)]
struct Scenario {
    name: String,
    source: Source,
}

impl Scenario {
    fn executor(&self, seed: u64, ratio: f64) -> Box<dyn Executor> {
        match &self.source {
            Source::Trace(t) => Box::new(Replay::new(t.clone(), seed, vec![1.0, ratio])),
            Source::Synthetic(noise, run_s) => {
                Box::new(Simulated::new(seed, vec![*run_s, run_s * ratio], noise.clone()))
            }
        }
    }
}

fn scenarios() -> Vec<Scenario> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/noise");
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "csv")).collect()
        })
        .unwrap_or_default();
    paths.sort();
    for path in paths {
        match Trace::load(&path) {
            Ok(t) => out.push(Scenario { name: t.name.clone(), source: Source::Trace(Arc::new(t)) }),
            Err(e) => eprintln!("skipping {}: {e}", path.display()),
        }
    }
    out.push(Scenario { name: "synthetic-two-speeds".into(), source: Source::Trace(Arc::new(two_speeds())) });
    // Synthetic noise of known shape, each with a paired robust σ near 2 %.
    let run_sigma = 0.02 / std::f64::consts::SQRT_2;
    out.push(Scenario { name: "synthetic-normal".into(), source: Source::Synthetic(Noise::gaussian(run_sigma), 0.05) });
    out.push(Scenario {
        name: "synthetic-t3-drift-stalls".into(),
        source: Source::Synthetic(Noise::machine_like(run_sigma), 0.05),
    });
    out.push(Scenario {
        name: "synthetic-t2-stalls".into(),
        source: Source::Synthetic(Noise::heavy_tailed(run_sigma), 0.05),
    });
    out
}

/// The per-round log ratios of `rounds` rounds (random order in each, as the engine).
fn rounds_of(scenario: &Scenario, seed: u64, ratio: f64, rounds: usize) -> Vec<f64> {
    let mut machine = scenario.executor(seed, ratio);
    let mut order = StdRng::seed_from_u64(seed ^ 0x9e37_79b9);
    // One warm-up round, as the engine runs.
    let _ = machine.run(0, None);
    let _ = machine.run(1, None);
    (0..rounds)
        .map(|_| {
            let first = usize::from(order.gen::<bool>());
            let a = deciding_time(&machine.run(first, None).expect("replayed"));
            let b = deciding_time(&machine.run(1 - first, None).expect("replayed"));
            let (base, cand) = if first == 0 { (a, b) } else { (b, a) };
            (cand / base).ln()
        })
        .collect()
}

/// The time the fixed-n table compares: wall time minus the neighbours' wait where the
/// trace measured waits (`uncontended_s`, what the engine decides on when a neighbour
/// takes a share of the CPU, as it did in every trace of the library), else wall time.
fn deciding_time(run: &perflab_model::Run) -> f64 {
    run.metric(metric::UNCONTENDED).unwrap_or(run.wall_s)
}

/// A machine alternating every 25 rounds between a quiet speed (0.2 % run noise) and a
/// 20 % slower, noisy one (3 %), without run-queue waits: the neighbours slow execution
/// itself (the phases of issue #30, where the sign test needed a third of
/// Hodges–Lehmann's rounds). 4,000 rounds of ~50 ms runs.
fn two_speeds() -> Trace {
    use perflab_engine::executor::replay::TraceRun;
    use rand_distr::{Distribution, Normal};
    let mut rng = StdRng::seed_from_u64(5);
    let normal = Normal::new(0.0, 1.0).expect("σ 1");
    let runs: Vec<TraceRun> = (0..8000)
        .map(|i| {
            let busy = (i / 2 / 25) % 2 == 1;
            let (speed, sigma) = if busy { (1.2, 0.03) } else { (1.0, 0.002) };
            let wall_s: f64 = 0.05 * speed * (sigma * normal.sample(&mut rng) as f64).exp();
            TraceRun { round: (i / 2) as u32, wall_s, cpu_s: wall_s, runq_s: Some(0.0) }
        })
        .collect();
    let duration_s = runs.iter().map(|r| r.wall_s).sum::<f64>() * 1.01;
    Trace { name: "synthetic-two-speeds".into(), header: vec![], runs, duration_s: Some(duration_s) }
}

/// An estimator of the fixed-n table: one of perflab's, the mean with Student's t
/// interval (what hyperfine's users compute), or the adaptive choice.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Fixed(Estimator),
    Mean,
    Adaptive,
}

/// The 95 % interval of `mode` on d (log scale).
fn interval(d: &[f64], mode: Mode) -> Option<(f64, f64)> {
    let estimator = match mode {
        Mode::Fixed(e) => e,
        Mode::Adaptive => estimator::choose(
            d,
            &perflab_engine::analysis::noise::CANDIDATES,
            perflab_engine::analysis::noise::SWITCH_BELOW,
        )
        .map_or(Estimator::HodgesLehmann, |c| c.estimator),
        Mode::Mean => {
            let n = d.len() as f64;
            let m = summary::mean(d);
            let se = summary::stddev(d) / n.sqrt();
            use statrs::distribution::{ContinuousCDF, StudentsT};
            let t = StudentsT::new(0.0, 1.0, n - 1.0).ok()?.inverse_cdf(0.975);
            return Some((m - t * se, m + t * se));
        }
    };
    locate(d, estimator, 0.95).interval.map(|i| (i.low, i.high))
}

/// Right, wrong or undecided, for a verdict on an interval of the ratio with the truth.
fn judge(verdict: Verdict, truth: f64, threshold: f64) -> (bool, bool) {
    let decided = verdict.is_decided();
    let wrong = match verdict {
        Verdict::Slower => truth <= 1.0,
        Verdict::Faster => truth >= 1.0,
        Verdict::Equivalent => (truth - 1.0).abs() > threshold,
        _ => false,
    };
    (decided && !wrong, wrong)
}

const GRID: [usize; 16] = [10, 15, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920];

fn fixed_table(scenarios: &[Scenario], experiments: u64) {
    let modes = [
        Mode::Fixed(Estimator::HodgesLehmann),
        Mode::Fixed(Estimator::Median),
        Mode::Fixed(Estimator::TrimmedMean),
        Mode::Mean,
        Mode::Adaptive,
    ];
    println!(
        "\n### Fixed n: rounds for half of the experiments to reach the right verdict (n50), and coverage at that n\n"
    );
    println!(
        "On uncontended time (wall time minus the neighbours' wait) where the trace measured waits, else wall time.\n"
    );
    println!("{experiments} experiments per n; 95 % intervals; ±1 % threshold; n on the grid {GRID:?}\n");
    println!("| scenario | paired σ | true ratio | HL n50 | median n50 | trimmed n50 | mean n50 | adaptive n50 | adaptive ÷ best single | coverage (HL / median / trimmed / mean / adaptive) at the adaptive n50 |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for s in scenarios {
        let sigma = summary::mad_scaled(&rounds_of(s, 1, 1.0, 2000));
        for ratio in [1.0, 1.01] {
            let mut n50 = vec![None; modes.len()];
            let mut coverage_at: Vec<Vec<f64>> = vec![Vec::new(); GRID.len()];
            for (g, &n) in GRID.iter().enumerate() {
                if n50.iter().all(Option::is_some) {
                    break;
                }
                let mut right = vec![0u64; modes.len()];
                let mut covered = vec![0u64; modes.len()];
                for e in 0..experiments {
                    let d = rounds_of(s, 1000 + e * 7919 + n as u64, ratio, n);
                    for (m, &mode) in modes.iter().enumerate() {
                        if let Some((lo, hi)) = interval(&d, mode) {
                            let (lo, hi) = (lo.exp(), hi.exp());
                            let (v, _) =
                                perflab_engine::analysis::verdict::classify(lo, hi, 0.01, metric::Better::Lower);
                            right[m] += u64::from(judge(v, ratio, 0.01).0);
                            covered[m] += u64::from(lo <= ratio && ratio <= hi);
                        }
                    }
                }
                for m in 0..modes.len() {
                    if n50[m].is_none() && right[m] * 2 >= experiments {
                        n50[m] = Some(g);
                    }
                }
                coverage_at[g] = covered.iter().map(|c| *c as f64 / experiments as f64).collect();
            }
            let show = |g: Option<usize>| g.map_or("> 1920".to_string(), |g| GRID[g].to_string());
            let best = n50[..4].iter().flatten().map(|g| GRID[*g]).min();
            let adaptive = n50[4].map(|g| GRID[g]);
            let factor = match (adaptive, best) {
                (Some(a), Some(b)) => format!("{:.2}", a as f64 / b as f64),
                _ => "-".into(),
            };
            let coverage = n50[4]
                .and_then(|g| coverage_at.get(g))
                .filter(|c| !c.is_empty())
                .map_or("-".into(), |c| c.iter().map(|x| format!("{:.1}", x * 100.0)).collect::<Vec<_>>().join(" / "));
            println!(
                "| {} | {:.2} % | {ratio} | {} | {} | {} | {} | {} | {factor} | {coverage} |",
                s.name,
                sigma * 100.0,
                show(n50[0]),
                show(n50[1]),
                show(n50[2]),
                show(n50[3]),
                show(n50[4])
            );
        }
    }
}

#[derive(Default)]
struct Tally {
    verdicts: [u64; 4],
    right: u64,
    wrong: u64,
    covered: u64,
    rounds: Vec<u32>,
    seconds: Vec<f64>,
    chosen: [u64; 3],
}

fn quantile<T: Copy + PartialOrd>(values: &mut [T], q: f64) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    values[((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1]
}

fn sequential_table(scenarios: &[Scenario], experiments: u64) {
    let modes: [(&str, Option<Estimator>); 4] = [
        ("HL", Some(Estimator::HodgesLehmann)),
        ("median", Some(Estimator::Median)),
        ("trimmed", Some(Estimator::TrimmedMean)),
        ("adaptive", None),
    ];
    println!("\n### Sequential: the real engine, perflab's defaults (95 %, ±1 %, 60 s; wall time, uncontended time on a busy machine)\n");
    println!("{experiments} experiments per line\n");
    println!("| scenario | true ratio | estimator | slower / faster / equivalent / inconclusive | right / wrong | covers | median (p90) rounds | median (p90) s | chosen HL / median / trimmed |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for s in scenarios {
        for ratio in [1.0, 1.005, 1.01, 1.02] {
            for (label, forced) in modes {
                let mut t = Tally::default();
                for e in 0..experiments {
                    let seed = 1 + e * 7919;
                    let settings = Settings {
                        seed,
                        estimator: forced,
                        estimator_by_shape: forced.is_none(),
                        ..Settings::default()
                    };
                    let plan = Plan::new(
                        vec![CommandSpec::bare("A"), CommandSpec::bare("B")],
                        settings,
                        MeasureOptions::default(),
                        // As `compare` by default: wall time, giving way to uncontended
                        // time when neighbours take a share of the CPU.
                        Compared {
                            metrics: vec![metric::WALL.into(), metric::UNCONTENDED.into()],
                            primary: metric::WALL.into(),
                            auto_primary: true,
                        },
                    );
                    let mut machine = s.executor(seed, ratio);
                    let x = run_experiment(&plan, machine.as_mut(), &mut Quiet).expect("replayed runs");
                    let c = x.comparisons.iter().find(|c| c.metric == x.primary_metric).expect("a comparison");
                    let slot = match c.verdict {
                        Verdict::Slower => 0,
                        Verdict::Faster => 1,
                        Verdict::Equivalent => 2,
                        _ => 3,
                    };
                    t.verdicts[slot] += 1;
                    let (right, wrong) = judge(c.verdict, ratio, 0.01);
                    t.right += u64::from(right);
                    t.wrong += u64::from(wrong);
                    t.covered += u64::from(c.ci_low <= ratio && ratio <= c.ci_high);
                    t.rounds.push(x.rounds);
                    t.seconds.push(x.duration_s);
                    if let Some(est) = &x.estimation {
                        t.chosen[Estimator::ALL.iter().position(|e| *e == est.estimator).unwrap_or(0)] += 1;
                    }
                }
                let pct = |k: u64| format!("{:.1}", 100.0 * k as f64 / experiments as f64);
                println!(
                    "| {} | {ratio} | {label} | {} / {} / {} / {} | {} / {} | {} % | {} ({}) | {:.1} ({:.1}) | {} |",
                    s.name,
                    pct(t.verdicts[0]),
                    pct(t.verdicts[1]),
                    pct(t.verdicts[2]),
                    pct(t.verdicts[3]),
                    pct(t.right),
                    pct(t.wrong),
                    pct(t.covered),
                    quantile(&mut t.rounds.clone(), 0.5),
                    quantile(&mut t.rounds, 0.9),
                    quantile(&mut t.seconds.clone(), 0.5),
                    quantile(&mut t.seconds, 0.9),
                    if forced.is_none() {
                        format!("{} / {} / {}", pct(t.chosen[0]), pct(t.chosen[1]), pct(t.chosen[2]))
                    } else {
                        "-".into()
                    }
                );
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let experiments: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let what = args.get(1).map(String::as_str).unwrap_or("both");
    let filter = args.get(2).cloned().unwrap_or_default();
    let scenarios: Vec<Scenario> = scenarios().into_iter().filter(|s| s.name.contains(&filter)).collect();
    println!("## Estimators on recorded and synthetic noise\n");
    for s in &scenarios {
        if let Source::Trace(t) = &s.source {
            let facts: Vec<String> = ["run", "case", "load", "steal", "recorded"]
                .iter()
                .filter_map(|k| t.fact(k).map(|v| format!("{k}: {v}")))
                .collect();
            println!("- {}: {} runs; {}", s.name, t.runs.len(), facts.join("; "));
        }
    }
    if what != "sequential" {
        fixed_table(&scenarios, experiments);
    }
    if what != "fixed" {
        sequential_table(&scenarios, experiments);
    }
}
