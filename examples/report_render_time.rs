//! Times `perflab report` on a synthetic suite (default 1,000 benchmarks × 100 labels,
//! 10 runs per benchmark and label), for the README figure and for looking at the page.
//!
//! Without `--db`: builds the experiments in memory and times the two steps after the
//! database read — arranging them (`report::load::build`: pooling runs, medians and
//! their CIs, intervals, change-point detection) and `report::render_html`.
//! With `--db FILE`: stores the experiments into a fresh SQLite history instead, label
//! after label as a suite run stores them (then time `perflab report --db FILE`, as
//! scripts/report-render-time.sh does).
//!
//! `cargo run --release --example report_render_time -- [BENCHMARKS] [LABELS] [--out FILE.html] [--db FILE]`

use perflab::model::*;
use perflab::report::load::{build, Selection};
use perflab::report::render_html;
use perflab::store::{Meta, Store, StoredExperiment};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::time::Instant;

const RUNS: u32 = 10;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut numbers, mut out, mut db) = (Vec::new(), "target/report-synthetic.html".to_string(), None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = args.next().expect("--out FILE"),
            "--db" => db = Some(args.next().expect("--db FILE")),
            n => numbers.push(n.parse::<usize>().expect("BENCHMARKS and LABELS are numbers")),
        }
    }
    let benchmarks = numbers.first().copied().unwrap_or(1000);
    let labels: Vec<String> = (0..numbers.get(1).copied().unwrap_or(100).max(2)).map(|i| format!("v1.{i}")).collect();
    let sources = synthetic(benchmarks, &labels);

    if let Some(path) = db {
        let _ = std::fs::remove_file(&path);
        let mut store = Store::open(Some(&path)).expect("open the database");
        let start = Instant::now();
        // Label after label, as `perflab run` (or a fleet's agents) store a suite.
        let mut in_storing_order: Vec<&StoredExperiment> = sources.iter().collect();
        in_storing_order.sort_by_key(|e| e.label_order);
        for e in in_storing_order {
            let meta = Meta {
                label: e.label.clone(),
                benchmark: e.benchmark.clone(),
                git_commit: None,
                source: "synthetic".into(),
            };
            store.save(&meta, &e.experiment).expect("store");
        }
        println!("stored {} experiments in {:.1} s -> {path}", sources.len(), start.elapsed().as_secs_f64());
        return;
    }

    let options = Selection {
        title: format!("Synthetic suite: {benchmarks} benchmarks × {} labels", labels.len()),
        metric: metric::WALL.into(),
        ..Selection::default()
    };
    let start = Instant::now();
    let data = build(&sources, &options).expect("build the report data");
    let arranged = start.elapsed();
    let start = Instant::now();
    let html = render_html(&data);
    let rendered = start.elapsed();
    std::fs::write(&out, &html).expect("write the report");
    println!(
        "{benchmarks} benchmarks x {} labels x {RUNS} runs: arrange {:.3} s + render {:.3} s = {:.3} s, {:.1} MB -> {out}",
        labels.len(),
        arranged.as_secs_f64(),
        rendered.as_secs_f64(),
        (arranged + rendered).as_secs_f64(),
        html.len() as f64 / 1e6
    );
}

/// One single-command experiment per benchmark and label; a fifth of the benchmarks
/// shift by up to ±25 % at a random label.
fn synthetic(benchmarks: usize, labels: &[String]) -> Vec<StoredExperiment> {
    let mut rng = StdRng::seed_from_u64(7);
    let machine = Machine {
        hostname: "bench-01".into(),
        cpu_model: "synthetic".into(),
        cores: 2,
        kernel: "6.1.0".into(),
        governor: Some("performance".into()),
        pmu: false,
        virtualization: Some("kvm".into()),
        ..Machine::default()
    };
    let settings = Settings { seed: 1, fixed_rounds: Some(RUNS), max_rounds: RUNS, ..Default::default() };
    let mut sources = Vec::with_capacity(benchmarks * labels.len());
    for b in 0..benchmarks {
        let name = format!("suite/group-{}/benchmark-{b:04}", b % 17);
        let base = 10f64.powf(rng.gen_range(-4.0..0.0));
        let shift_at = rng.gen_range(1..labels.len());
        let shift = if rng.gen_bool(0.2) { rng.gen_range(0.8..1.25) } else { 1.0 };
        for (i, label) in labels.iter().enumerate() {
            let level = if i >= shift_at { base * shift } else { base };
            let runs = (0..RUNS)
                .map(|round| {
                    let wall = level * (1.0 + rng.gen_range(-0.01..0.01));
                    let mut counters = std::collections::BTreeMap::new();
                    counters.insert("task-clock".to_string(), CounterReading::value(wall * 1e9, false));
                    Run {
                        round,
                        wall_s: wall,
                        user_s: wall * 0.95,
                        sys_s: wall * 0.03,
                        max_rss_kib: 4096,
                        exit: ExitInfo { exit_code: Some(0), signal: None, timed_out: false },
                        counters,
                        ..Run::default()
                    }
                })
                .collect();
            let mut command = CommandResult {
                name: name.clone(),
                argv: vec!["bench".into()],
                command_line: "bench".into(),
                parameters: Default::default(),
                runs,
                summary: Default::default(),
            };
            // As the engine summarizes every run of a command (the store keeps the
            // samples of the compared metrics with them).
            for metric in metric::ALL.iter().copied().chain(["task-clock"]) {
                let values: Vec<f64> = command.runs.iter().filter_map(|r| r.metric(metric)).collect();
                command.summary.insert(metric.to_string(), perflab::stats::summary::summarize(&values));
            }
            let experiment = Experiment {
                started_at: "2026-11-22T03:00:00Z".into(),
                machine: machine.clone(),
                settings: settings.clone(),
                rounds: RUNS,
                duration_s: 1.0,
                failure: None,
                stop_reason: StopReason::FixedRounds,
                commands: vec![command],
                ..Experiment::default()
            };
            sources.push(StoredExperiment {
                id: 0,
                label: label.clone(),
                label_order: i as i64,
                benchmark: name.clone(),
                git_commit: None,
                source: "synthetic".into(),
                recorded_at: String::new(),
                machine_fingerprint: "synthetic".into(),
                complete: true,
                sample: None,
                profile_change: None,
                experiment,
            });
        }
    }
    sources
}
