//! The store's test suite, run against SQLite and against a live PostgreSQL
//! (`PERFLAB_TEST_PG`, see tests/common/pg.rs): the same tests, the same expectations.

mod common;

use perflab::history::measured_values;
use perflab::model::metric::Better;
use perflab::model::*;
use perflab::store::{Meta, Query, Store, StoredExperiment};
use std::collections::BTreeMap;

/// Each test body runs once per backend, on an empty database.
fn each_backend(test: &str, body: impl Fn(&str)) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("sub/perflab.db");
    body(sqlite.to_str().unwrap());
    if let Some(url) = common::pg::scratch_db(test) {
        body(&url);
        common::pg::drop_scratch(&url);
    }
}

fn machine(host: &str) -> Machine {
    Machine {
        hostname: host.into(),
        cpu_model: "Test CPU".into(),
        cores: 2,
        kernel: "6.1.0".into(),
        governor: None,
        pmu: false,
        virtualization: Some("KVM".into()),
        ..Machine::default()
    }
}

fn settings() -> Settings {
    let better = [("iter_s".to_string(), Better::Lower)].into();
    Settings { seed: 42, fixed_rounds: Some(3), better, iterations: Iterations::Steady(1), ..Default::default() }
}

fn run(round: u32, wall: f64) -> Run {
    let mut counters = BTreeMap::new();
    counters.insert("task-clock".to_string(), CounterReading::value(wall * 1e9, false));
    counters.insert("instructions".to_string(), CounterReading::unsupported("no PMU"));
    // A self-reported metric with its per-iteration samples (the first one cold).
    let samples = vec![2.0 * wall, wall, wall * 1.01];
    counters.insert("iter_s".to_string(), CounterReading::sampled(samples, Iterations::Steady(1)).unwrap());
    Run {
        round,
        position: round % 2,
        wall_s: wall,
        user_s: wall * 0.9,
        sys_s: 0.001,
        max_rss_kib: 1234,
        minor_faults: 100 + round as u64,
        major_faults: 0,
        voluntary_cs: 1,
        involuntary_cs: 2,
        exit: ExitInfo { exit_code: Some(0), signal: None, timed_out: false },
        env_pad_bytes: 17 * round,
        counters,
        profile: None,
    }
}

fn command(name: &str, walls: &[f64]) -> CommandResult {
    let mut summary = BTreeMap::new();
    summary.insert(
        "wall_s".to_string(),
        Summary {
            n: walls.len(),
            median: walls[walls.len() / 2],
            mean: 0.5,
            stddev: 0.01,
            mad: 0.02,
            min: 0.1,
            max: 0.9,
            outliers: 1,
            median_ci: Some((0.4, 0.6)),
        },
    );
    CommandResult {
        name: name.into(),
        argv: vec![name.into(), "--flag".into(), "a b".into()],
        command_line: format!("{name} --flag 'a b'"),
        parameters: Default::default(),
        runs: walls.iter().enumerate().map(|(i, w)| run(i as u32, *w)).collect(),
        summary,
    }
}

fn experiment(host: &str) -> Experiment {
    let mut environment = BTreeMap::new();
    environment.insert("valgrind".to_string(), "3.19".to_string());
    Experiment {
        started_at: "2026-11-22T03:00:00.000Z".into(),
        machine: machine(host),
        settings: settings(),
        rounds: 3,
        duration_s: 1.25,
        stop_reason: StopReason::FixedRounds,
        commands: vec![command("old", &[0.51, 0.52, 0.5]), command("new", &[0.41, 0.42, 0.4])],
        comparisons: vec![Comparison {
            baseline: "old".into(),
            candidate: "new".into(),
            metric: "wall_s".into(),
            better: Default::default(),
            ratio: 0.8,
            ci_low: 0.78,
            ci_high: 0.82,
            confidence: 0.95,
            look_confidence: 0.99,
            p_value: 0.03125,
            verdict: Verdict::Faster,
            below_threshold: false,
            n: 3,
            flags: vec!["a note".into()],
            explanation: None,
        }],
        warnings: vec![perflab::model::Warning::new(perflab::model::WarningKind::Noisy, "noisy")],
        failure: Some("`new` exited with code 1".into()),
        environment,
        ..Experiment::default()
    }
}

fn meta(label: &str, bench: &str) -> Meta {
    Meta { label: label.into(), benchmark: bench.into(), git_commit: Some("abc123".into()), source: "test".into() }
}

#[test]
fn saved_experiment_reads_back_identical() {
    each_backend("roundtrip", |url| {
        let mut store = Store::open(Some(url)).unwrap();
        let exp = experiment("h1");
        store.save(&meta("v1", "sort[n=10]"), &exp).unwrap();
        let back = store.experiments(&Query::default()).unwrap();
        assert_eq!(back.len(), 1);
        let got = &back[0];
        assert_eq!(got.experiment, exp, "{url}");
        assert_eq!(got.label, "v1");
        assert_eq!(got.benchmark, "sort[n=10]");
        assert_eq!(got.git_commit.as_deref(), Some("abc123"));
        assert_eq!(got.machine_fingerprint, exp.machine.fingerprint());
        assert!(got.complete);
    });
}

#[test]
fn runs_recorded_before_a_crash_are_kept() {
    each_backend("crash", |url| {
        let mut store = Store::open(Some(url)).unwrap();
        let exp = experiment("h1");
        let specs: Vec<CommandSpec> = exp.commands.iter().map(CommandResult::spec).collect();
        let mut rec = store.begin(&meta("v1", "b"), &exp.machine, &exp.settings, &specs);
        rec.record_run(0, &exp.commands[0].runs[0]).unwrap();
        rec.record_run(1, &exp.commands[1].runs[0]).unwrap();
        rec.record_run(0, &exp.commands[0].runs[1]).unwrap();
        drop(rec); // the writer dies before finish

        let back = Store::open(Some(url)).unwrap().experiments(&Query::default()).unwrap();
        assert_eq!(back.len(), 1);
        let got = &back[0];
        assert!(!got.complete);
        assert_eq!(got.experiment.stop_reason, StopReason::Interrupted);
        assert_eq!(got.experiment.rounds, 1, "only round 0 finished for both commands");
        assert_eq!(got.experiment.commands[0].runs, exp.commands[0].runs[..2].to_vec());
        assert_eq!(got.experiment.commands[1].runs, exp.commands[1].runs[..1].to_vec());
        assert!(got.experiment.commands[0].summary.is_empty());
    });
}

#[test]
fn finish_adds_only_the_runs_not_yet_recorded() {
    each_backend("finish", |url| {
        let mut store = Store::open(Some(url)).unwrap();
        let exp = experiment("h1");
        let specs: Vec<CommandSpec> = exp.commands.iter().map(CommandResult::spec).collect();
        let mut rec = store.begin(&meta("v1", "b"), &exp.machine, &exp.settings, &specs);
        rec.record_run(0, &exp.commands[0].runs[0]).unwrap();
        rec.finish(&exp).unwrap();
        let back = store.experiments(&Query::default()).unwrap();
        assert_eq!(back[0].experiment.commands[0].runs.len(), 3);
        assert_eq!(back[0].experiment, exp);
    });
}

#[test]
fn queries_filter_by_label_benchmark_and_machine() {
    each_backend("query", |url| {
        let mut store = Store::open(Some(url)).unwrap();
        store.save(&meta("v1", "a"), &experiment("h1")).unwrap();
        store.save(&meta("v1", "b"), &experiment("h1")).unwrap();
        store.save(&meta("v2", "a"), &experiment("h2")).unwrap();
        store.save(&meta("v0", "a"), &experiment("h1")).unwrap();

        let labels: Vec<String> = store.labels().unwrap().into_iter().map(|l| l.name).collect();
        assert_eq!(labels, ["v1", "v2", "v0"], "stored order, not alphabetical");
        let machines = store.machines().unwrap();
        assert_eq!(machines.len(), 2);
        assert_eq!(machines[0].machine.hostname, "h1");
        assert_eq!(machines[0].experiments, 3);

        let q = |label: Option<&str>, bench: Option<&str>, machine: Option<&str>| Query {
            label: label.map(Into::into),
            benchmark: bench.map(Into::into),
            machine: machine.map(Into::into),
        };
        let count = |store: &mut Store, query: Query| store.experiments(&query).unwrap().len();
        assert_eq!(count(&mut store, q(Some("v1"), None, None)), 2);
        assert_eq!(count(&mut store, q(None, Some("a"), None)), 3);
        assert_eq!(count(&mut store, q(None, Some("a"), Some("h2"))), 1);
        let fp = machine("h1").fingerprint();
        assert_eq!(count(&mut store, q(None, None, Some(&fp[..6]))), 3);
        assert_eq!(count(&mut store, q(Some("nope"), None, None)), 0);
        let ordered: Vec<String> =
            store.experiments(&q(None, Some("a"), None)).unwrap().into_iter().map(|e| e.label).collect();
        assert_eq!(ordered, ["v1", "v2", "v0"]);
    });
}

#[test]
fn reopening_does_not_migrate_twice_and_newer_schemas_are_refused() {
    each_backend("migrate", |url| {
        Store::open(Some(url)).unwrap();
        let mut store = Store::open(Some(url)).unwrap();
        store.save(&meta("v1", "a"), &experiment("h1")).unwrap();
        drop(store);
        // Simulate a database written by a future perflab.
        if url.starts_with("postgres") {
            let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
            c.batch_execute("INSERT INTO schema_migrations VALUES (999, 'future', 'now')").unwrap();
        } else {
            let c = rusqlite::Connection::open(url).unwrap();
            c.execute_batch("INSERT INTO schema_migrations VALUES (999, 'future', 'now')").unwrap();
        }
        let err = Store::open(Some(url)).err().expect("a newer schema must be refused");
        assert!(err.to_string().contains("schema version 999"), "{err}");
    });
}

#[test]
fn concurrent_writers_lose_nothing() {
    each_backend("concurrent", |url| {
        Store::open(Some(url)).unwrap();
        let exp = experiment("h1");
        let threads: Vec<_> = (0..3)
            .map(|t| {
                let (url, exp) = (url.to_string(), exp.clone());
                std::thread::spawn(move || {
                    let mut store = Store::open(Some(&url)).unwrap();
                    for i in 0..5 {
                        let specs = vec![CommandSpec {
                            name: "x".into(),
                            argv: vec!["x".into()],
                            command_line: "x".into(),
                            ..Default::default()
                        }];
                        let mut rec = store.begin(
                            &meta(&format!("label{}", i % 2), &format!("bench{t}")),
                            &exp.machine,
                            &exp.settings,
                            &specs,
                        );
                        for r in 0..20 {
                            rec.record_run(0, &run(r, 0.1)).unwrap();
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let back = Store::open(Some(url)).unwrap().experiments(&Query::default()).unwrap();
        assert_eq!(back.len(), 15);
        let runs: usize = back.iter().map(|e| e.experiment.commands[0].runs.len()).sum();
        assert_eq!(runs, 3 * 5 * 20);
    });
}

#[test]
fn unreachable_database_is_a_one_line_usage_error() {
    let err = perflab::error::Failure::from(Store::open(Some("postgres://nobody:pw@127.0.0.1:1/none")).err().unwrap());
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("cannot connect to postgres://nobody:***@127.0.0.1:1/none"), "{err}");
    assert!(!err.to_string().contains('\n'));
    let err = Store::open(Some("/proc/forbidden/x.db")).err().unwrap();
    assert!(err.to_string().contains("cannot open database /proc/forbidden/x.db"), "{err}");
}

#[test]
fn non_finite_values_survive_storage_and_json() {
    each_backend("nonfinite", |url| {
        let mut store = Store::open(Some(url)).unwrap();
        let mut exp = experiment("h1");
        exp.comparisons[0].ratio = f64::NAN; // no paired rounds yet
        exp.comparisons[0].ci_high = f64::INFINITY;
        store.save(&meta("v1", "a"), &exp).unwrap();
        let back = store.experiments(&Query::default()).unwrap().remove(0).experiment;
        assert!(back.comparisons[0].ratio.is_nan());
        assert_eq!(back.comparisons[0].ci_high, f64::INFINITY);
        // The JSON written by --json and export reads back too.
        let json = serde_json::to_string(&back).unwrap();
        let again: Experiment = serde_json::from_str(&json).unwrap();
        assert!(again.comparisons[0].ratio.is_nan());
    });
}

/// The lean read gives the measured command the same values the full read does, whether
/// they come from a stored sample (a finished experiment's summaries) or from the runs (an
/// experiment cut short, a metric without a sample, a counter).
#[test]
fn metric_samples_match_the_runs() {
    each_backend("metric_samples", |url| {
        let mut store = Store::open(Some(url)).unwrap();
        let mut finished = experiment("h1");
        finished.commands[1].runs[1].exit = ExitInfo { exit_code: Some(1), signal: None, timed_out: false };
        for command in &mut finished.commands {
            for name in ["wall_s", "cpu_s", "max_rss_kib", "minor_faults", "task-clock"] {
                command.summary.insert(name.to_string(), perflab::stats::summary::summarize(&command.values(name)));
            }
        }
        store.save(&meta("v1", "b"), &finished).unwrap();
        let spec: Vec<CommandSpec> = finished.commands.iter().map(CommandResult::spec).collect();
        let mut cut_short = store.begin(&meta("v2", "b"), &machine("h1"), &settings(), &spec);
        cut_short.record_run(0, &run(0, 0.3)).unwrap();
        cut_short.record_run(1, &run(0, 0.2)).unwrap();
        drop(cut_short);

        let full = store.experiments(&Query::default()).unwrap();
        for name in ["wall_s", "cpu_s", "max_rss_kib", "minor_faults", "task-clock", "instructions"] {
            let lean = store.metric_experiments(&Query::default(), name).unwrap();
            assert_eq!(lean.len(), full.len());
            for (l, f) in lean.iter().zip(&full) {
                assert_eq!((l.id, &l.label, l.complete), (f.id, &f.label, f.complete));
                assert_eq!(l.experiment.comparisons, f.experiment.comparisons);
                let names =
                    |e: &StoredExperiment| e.experiment.commands.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
                assert_eq!(names(l), names(f));
                assert!(l.experiment.commands.iter().all(|c| c.runs.is_empty()), "the lean read reads no runs");
                assert_eq!(measured_values(l, name), measured_values(f, name), "{url} {name} {}", l.label);
            }
        }
    });
}

/// A comparison's per-function explanation (`run --profile-changes`, `compare --explain
/// --save`) reads back as written, a NaN p-value (one round) included.
#[test]
fn an_explanation_reads_back_with_its_comparison() {
    each_backend("explanation", |url| {
        let mut store = Store::open(Some(url)).unwrap();
        let change = |estimate: f64, low: f64, high: f64| Change { estimate, low: Some(low), high: Some(high) };
        let function = |name: &str, base: f64, cand: f64, verdict: Verdict| FunctionChange {
            name: name.into(),
            object: "[command]".into(),
            baseline_per_run: base,
            candidate_per_run: cand,
            baseline_samples: base * 4.0,
            candidate_samples: cand * 4.0,
            ratio: Some(cand / base),
            ci_low: Some(cand / base - 0.125),
            ci_high: Some(cand / base + 0.125),
            no_interval: None,
            verdict,
            below_threshold: false,
            contribution: change(cand - base, cand - base - 0.5, cand - base + 0.5),
            share: None,
            detectable: Some(0.0625),
            p_value: 0.001,
            counts: BTreeMap::new(),
            across_layouts: None,
        };
        let explanation = Explanation {
            baseline: "old".into(),
            candidate: "new".into(),
            event: "cpu-clock".into(),
            method: "sampled".into(),
            unit: "ms".into(),
            rounds: 3,
            samples_per_run: (400.0, 500.0),
            confidence: 0.95,
            function_level: 0.995,
            tested: 2,
            threshold: 0.01,
            total: function("[total]", 100.0, 125.0, Verdict::Slower),
            functions: vec![
                FunctionChange {
                    across_layouts: Some(perflab::model::AcrossLayouts {
                        ratio: 1.5,
                        ci_low: Some(1.25),
                        ci_high: Some(1.75),
                        spread: 0.02,
                        layouts: (8, 8),
                        verdict: Verdict::Slower,
                    }),
                    ..function("f_up", 50.0, 75.0, Verdict::Slower)
                },
                FunctionChange {
                    p_value: f64::NAN,
                    no_interval: Some("one round".into()),
                    ..function("f_same", 50.0, 50.0, Verdict::Inconclusive)
                },
            ],
            unflagged_within: Some(0.25),
            unflagged_contribution_within: Some(1.5),
            primary_change: Some(change(25.0, 20.0, 30.0)),
            stacks: Some(perflab::model::MeanStacks {
                baseline: [("main;f_up".to_string(), 50.0), ("main;f_same".to_string(), 50.0)].into(),
                candidate: [("main;f_up".to_string(), 75.0), ("main;f_same".to_string(), 50.0)].into(),
            }),
            stored_flame_graph: None,
            other_members: vec![perflab::model::OtherMember {
                name: "light".into(),
                baseline_samples: 9.0,
                candidate_samples: 18.0,
            }],
            warnings: vec!["only 3 rounds".into()],
        };
        let mut exp = experiment("h1");
        exp.comparisons[0].explanation = Some(Box::new(explanation.clone()));
        store.save(&meta("v1", "a"), &exp).unwrap();
        store.save(&meta("v2", "a"), &experiment("h1")).unwrap();
        let back = store.experiments(&Query::default()).unwrap();
        let got = back[0].experiment.comparisons[0].explanation.as_deref().expect("the explanation is stored");
        assert!(got.functions[1].p_value.is_nan(), "{url}");
        let same = |e: &Explanation| Explanation { functions: vec![e.functions[0].clone()], ..e.clone() };
        assert_eq!(same(got), same(&explanation), "{url}");
        assert_eq!(back[1].experiment.comparisons[0].explanation, None, "not explained: {url}");
    });
}
