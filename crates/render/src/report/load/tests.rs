//! Tests of the parent module (kept apart so that it stays readable).

use super::*;
use perflab_model::{CommandResult, ExitInfo, Machine, Settings, Verdict};
use perflab_store::history::ratio::CiMethod;

fn runs(level: f64) -> Vec<Run> {
    (0..8)
        .map(|i| Run {
            round: i,
            wall_s: level * (1.0 + 0.002 * (i % 3) as f64),
            exit: ExitInfo { exit_code: Some(0), signal: None, timed_out: false },
            ..Run::default()
        })
        .collect()
}

fn experiment(commands: &[(&str, f64)], comparisons: Vec<Comparison>) -> Experiment {
    Experiment {
        perflab_version: "0.1.0".into(),
        machine: Machine { hostname: "h".into(), ..Machine::default() },
        settings: Settings {
            warmup_rounds: 0,
            max_rounds: 8,
            max_time_s: 1.0,
            env_padding: false,
            ..Default::default()
        },
        rounds: 8,
        duration_s: 1.0,
        stop_reason: StopReason::FixedRounds,
        commands: commands
            .iter()
            .map(|(name, level)| CommandResult {
                name: name.to_string(),
                argv: vec![],
                command_line: String::new(),
                parameters: Default::default(),
                runs: runs(*level),
                summary: Default::default(),
            })
            .collect(),
        comparisons,
        ..Experiment::default()
    }
}

fn stored(
    label: &str,
    order: i64,
    benchmark: &str,
    commands: &[(&str, f64)],
    comparisons: Vec<Comparison>,
) -> StoredExperiment {
    StoredExperiment {
        id: 0,
        label: label.into(),
        label_order: order,
        benchmark: benchmark.into(),
        git_commit: None,
        source: "test".into(),
        recorded_at: String::new(),
        machine_fingerprint: "fp".into(),
        complete: true,
        sample: None,
        profile_change: None,
        experiment: experiment(commands, comparisons),
    }
}

fn options() -> Selection {
    Selection { metric: metric::WALL.into(), ..Selection::default() }
}

#[test]
fn defaults_compare_the_newest_label_with_the_oldest() {
    let experiments = vec![
        stored("old", 0, "b", &[("./bench", 1.0)], vec![]),
        stored("mid", 1, "b", &[("./bench", 1.0)], vec![]),
        stored("new", 2, "b", &[("./bench", 1.5)], vec![]),
    ];
    let data = build(&experiments, &options()).unwrap();
    assert_eq!((data.pages[0].reference.as_str(), data.pages[0].labels.len()), ("old", 3));
    assert_eq!(data.pages[0].comparisons.len(), 1);
    let row = &data.pages[0].comparisons[0].rows[0].change;
    assert_eq!(
        (data.pages[0].comparisons[0].label.as_str(), row.method, row.verdict),
        ("new", CiMethod::Sessions, Verdict::Slower)
    );
    assert!(row.ci_low <= 1.5 && 1.5 <= row.ci_high * 1.01, "{row:?}");
    assert_eq!(data.pages[0].histories[0].points.len(), 3);
}

#[test]
fn a_paired_comparison_run_the_other_way_round_is_inverted() {
    let c = Comparison {
        baseline: "new".into(),
        candidate: "./old".into(),
        metric: metric::WALL.into(),
        better: Default::default(),
        ratio: 0.8,
        ci_low: 0.78,
        ci_high: 0.82,
        confidence: 0.95,
        look_confidence: 0.99,
        p_value: 0.001,
        verdict: Verdict::Faster,
        below_threshold: false,
        n: 8,
        flags: vec![],
        explanation: None,
    };
    // Stored under `old`: its measured (last) command is `old`, its baseline is the
    // command named after the stored label `new`.
    let experiments = vec![
        stored("new", 0, "b", &[("./bench", 1.25)], vec![]),
        stored("old", 1, "b", &[("new", 1.25), ("./old", 1.0)], vec![c]),
    ];
    let opts = Selection { reference: Some("old".into()), labels: vec!["new".into()], ..options() };
    let data = build(&experiments, &opts).unwrap();
    let row = &data.pages[0].comparisons[0].rows[0].change;
    assert_eq!((row.method, row.verdict, row.n), (CiMethod::Paired, Verdict::Slower, 8));
    assert!((row.ratio - 1.25).abs() < 1e-12);
    assert!((row.ci_low - 1.0 / 0.82).abs() < 1e-12 && (row.ci_high - 1.0 / 0.78).abs() < 1e-12);
}

#[test]
fn history_marks_the_label_where_a_shift_began() {
    let experiments: Vec<StoredExperiment> = (0..12)
        .map(|i| {
            let level = if i >= 6 { 1.3 } else { 1.0 } * (1.0 + 0.001 * (i % 2) as f64);
            stored(&format!("v{i:02}"), i, "b", &[("./bench", level)], vec![])
        })
        .collect();
    let data = build(&experiments, &options()).unwrap();
    let cps = &data.pages[0].histories[0].change_points;
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0].label, "v06");
    assert!(cps[0].ratio > 1.25 && cps[0].ratio < 1.35);
}

#[test]
fn json_results_become_one_benchmark_with_a_label_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let c = Comparison {
        baseline: "old".into(),
        candidate: "new".into(),
        metric: metric::WALL.into(),
        better: Default::default(),
        ratio: 1.1,
        ci_low: 1.05,
        ci_high: 1.15,
        confidence: 0.95,
        look_confidence: 0.99,
        p_value: 0.01,
        verdict: Verdict::Slower,
        below_threshold: false,
        n: 8,
        flags: vec![],
        explanation: None,
    };
    let path = dir.path().join("parse.json");
    std::fs::write(&path, serde_json::to_string(&experiment(&[("old", 1.0), ("new", 1.1)], vec![c])).unwrap()).unwrap();
    let experiments = from_json_files(&[&path]).unwrap();
    let labels: Vec<&str> = experiments.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["old", "new"]);
    assert!(experiments.iter().all(|e| e.benchmark == "parse"));
    assert_eq!(experiments[1].experiment.commands.len(), 2, "the candidate keeps its baseline");
    let data = build(&experiments, &options()).unwrap();
    assert_eq!(data.pages[0].comparisons[0].rows[0].change.method, CiMethod::Paired);
    assert_eq!(data.pages[0].histories[0].points.len(), 2);
}

fn uses_build(mut e: StoredExperiment, uses: bool) -> StoredExperiment {
    e.experiment.environment.insert(controls::USES_BUILD_FACT.into(), uses.to_string());
    e
}

/// Issue #28, row 2: after `run --label new --baseline base` the report said "No other
/// label to compare", and `--reference base` "has no results". The paired comparison
/// stored by that run is the report's, without a second session.
#[test]
fn what_run_baseline_measured_is_in_the_report_without_a_second_session() {
    use perflab_store::fixtures::interleaved;
    // On the machine of `interleaved` (fixtures' host "h").
    let nap = uses_build(perflab_store::fixtures::stored("new", 1, "nap", "h", &[0.02; 8]), false);
    let experiments = vec![uses_build(interleaved("new", 1, "hot", "base"), true), nap];
    for reference in [None, Some("base".to_string())] {
        let data = build(&experiments, &Selection { reference, ..options() }).unwrap();
        let page = &data.pages[0];
        assert_eq!(page.reference, "base");
        let comparison = &page.comparisons[0];
        assert_eq!(comparison.label, "new");
        let hot = &comparison.rows[0].change;
        assert_eq!((comparison.rows.len(), hot.method, hot.ratio), (1, CiMethod::Paired, 1.2));
        // The benchmark without {build} ran once, in new's session: a control with nothing to compare.
        assert_eq!(comparison.controls[0].benchmark, "nap");
        assert!(comparison.controls[0].change.as_ref().unwrap_err().contains("measured once"));
        assert!(!data.notes.iter().any(|n| n.contains("no results under label base")), "{:?}", data.notes);
    }
    let unknown = build(&experiments, &Selection { reference: Some("nope".into()), ..options() }).unwrap_err();
    assert!(unknown.to_string().contains("base"), "the builds are listed: {unknown}");
}

/// Issue #28, row 3: the Counters table printed cpu_s new÷base 0.504× for identical
/// code, with no interval. Every ratio now is the pair's record on that metric, with its
/// interval, verdict and method, or a row saying why there is none.
#[test]
fn every_counter_ratio_carries_its_interval_and_method_or_says_why_not() {
    use perflab_store::fixtures::interleaved;
    let experiments = vec![uses_build(interleaved("new", 1, "hot", "base"), true)];
    let data = build(&experiments, &options()).unwrap();
    let rows = &data.pages[0].counters.rows;
    let cpu = rows.iter().find(|r| r.metric == metric::CPU).unwrap();
    let change = cpu.change.as_ref().unwrap();
    // cpu_s was not compared by the session: computed from its paired runs, and said.
    assert_eq!((change.method, change.verdict), (CiMethod::Paired, Verdict::Slower));
    assert!((change.ratio - 1.2).abs() < 1e-9 && change.ci_low <= 1.2 && 1.2 <= change.ci_high, "{change:?}");
    assert!(change.note.as_deref().unwrap().contains("paired runs"), "{change:?}");
    let medians = (cpu.reference_value.unwrap(), cpu.value.unwrap());
    assert!((medians.1 / medians.0 - 1.2).abs() < 1e-9, "the medians the ratio compares: {medians:?}");
    assert!(!rows.iter().any(|r| r.metric == metric::WALL), "the chart's own metric is not repeated");
    // Separate sessions: the sessions' record with their noise, on each metric.
    let sessions =
        vec![stored("v1", 0, "b", &[("./bench", 1.0)], vec![]), stored("v2", 1, "b", &[("./bench", 1.0)], vec![])];
    let data = build(&sessions, &options()).unwrap();
    for row in &data.pages[0].counters.rows {
        match &row.change {
            // Two sessions of one benchmark say nothing of how much max_rss_kib varies
            // between sessions: the verdict is withheld, and the row says why.
            Ok(r) => {
                assert_eq!((r.method, r.verdict), (CiMethod::Sessions, Verdict::Inconclusive), "{row:?}");
                assert!(r.note.as_deref().unwrap().starts_with("verdict withheld"), "{row:?}");
            }
            Err(why) => assert!(why.contains("not positive"), "{row:?}"),
        }
    }
}

/// Issue #28, row 4: the geometric mean (1.158×) included `nap`, whose command does not
/// use {build}; the real changes were ≈ +24 %. Controls stay out of it, are shown as
/// an A/A check of the sessions, and warn when they move.
#[test]
fn controls_are_left_out_of_the_geomean_and_warn_when_they_move() {
    let experiments = vec![
        uses_build(stored("v1", 0, "hot", &[("v1", 1.0)], vec![]), true),
        uses_build(stored("v1", 0, "nap", &[("nap", 1.0)], vec![]), false),
        uses_build(stored("v2", 1, "hot", &[("v2", 1.24)], vec![]), true),
        uses_build(stored("v2", 1, "nap", &[("nap", 1.0)], vec![]), false),
    ];
    let data = build(&experiments, &options()).unwrap();
    let comparison = &data.pages[0].comparisons[0];
    assert_eq!(comparison.rows.len(), 1);
    let g = super::super::geomean(&comparison.rows).unwrap();
    assert!((g.ratio - 1.24).abs() < 1e-9 && g.n == 1, "{g:?}");
    let nap = comparison.controls[0].change.as_ref().unwrap();
    assert_eq!((comparison.controls[0].benchmark.as_str(), nap.method), ("nap", CiMethod::Sessions));
    assert!(!data.notes.iter().any(|n| n.contains("controls moved")), "{:?}", data.notes);
    let mut moved = experiments.clone();
    moved[3] = uses_build(stored("v2", 1, "nap", &[("nap", 1.3)], vec![]), false);
    let data = build(&moved, &options()).unwrap();
    let warning =
        data.notes.iter().find(|n| n.contains("controls moved")).unwrap_or_else(|| panic!("{:?}", data.notes));
    assert!(warning.contains("nap +30 %"), "{warning}");
}

/// A benchmark measured in several layouts carries its newest layout spread under either
/// label beside its ratio, and the forest row says it; others carry none.
#[test]
fn a_layout_experiments_spread_reaches_the_row_and_its_tag() {
    let mut experiments = vec![
        stored("old", 0, "b", &[("./bench", 1.0)], vec![]),
        stored("new", 1, "b", &[("./bench", 1.5)], vec![]),
        stored("old", 0, "c", &[("./other", 1.0)], vec![]),
        stored("new", 1, "c", &[("./other", 1.1)], vec![]),
    ];
    for (i, e) in experiments.iter_mut().enumerate() {
        e.id = i as i64;
    }
    let facts = |spread: &str| {
        std::collections::BTreeMap::from([
            ("layout_spread".to_string(), spread.to_string()),
            ("layout_spread_metric".to_string(), "wall_s".to_string()),
        ])
    };
    experiments[0].experiment.environment = facts("0.030000");
    experiments[1].experiment.environment = facts("0.014000");
    let data = build(&experiments, &options()).unwrap();
    let rows = &data.pages[0].comparisons[0].rows;
    let of = |name: &str| rows.iter().find(|r| r.benchmark == name).unwrap();
    let seen = of("b").layout_spread.as_ref().expect("b was measured in layouts");
    assert_eq!((seen.spread, seen.label.as_str(), seen.metric.as_str()), (0.014, "new", "wall_s"));
    assert_eq!(of("c").layout_spread, None);
    // The forest draws what a relink reaches (±1.96·√2·1.4 %) as a band behind the row,
    // says it in the row's tooltip, and the legend says what the band is.
    let html = crate::report::html::render_html(&data);
    assert!(html.contains("layouts of this benchmark differ by ±1.4 % (wall_s in `new`)"), "the tooltip");
    assert!(html.contains("0.962× – 1.04× apart by layout alone"), "the reach of a relink");
    assert_eq!(html.matches("<rect class=\"relink\"").count(), 1, "one band, for b only");
    assert!(html.contains("band: what relinking alone moves it"), "the legend");
}
