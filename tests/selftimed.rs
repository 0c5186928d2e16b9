//! End-to-end tests of benchmarks that measure themselves: metrics read from a command's
//! output (regex, JSON lines, pgbench, Google Benchmark), per-iteration samples, hooks
//! around runs, parameters and `--input`.
//!
//! Why real runs: the metrics come from real commands' output; asserted verdicts are on
//! printed numbers (deterministic) or on a cold-versus-warm difference of whole buffers'
//! page faults timed by the thread's CPU clock, with their failure probability computed
//! from how far such iterations strayed beside two CPU burners (tests/common/noise.rs).

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

fn json_of(output: &[u8]) -> Value {
    serde_json::from_slice(output).expect("valid JSON on stdout")
}

fn comparison<'a>(json: &'a Value, metric: &str) -> &'a Value {
    json["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == metric).unwrap_or_else(|| {
        panic!("no comparison of {metric} in {}", json["comparisons"]);
    })
}

/// A shell command printing `text` (printf's escapes allowed).
fn prints(text: &str) -> String {
    format!("printf '{text}'")
}

/// Tests that depend on the machine's timing run one at a time.
static QUIET: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn quiet() -> std::sync::MutexGuard<'static, ()> {
    QUIET.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn more_of_a_higher_is_better_metric_is_faster_and_worded_so() {
    let out = perflab()
        .args(["compare", "--shell", "-r", "6", "--json", "-", "--output-metric", r"tps = (?<tps>[0-9.]+)"])
        .args(["-n", "A", "-n", "B", &prints("tps = 100.0\\n"), &prints("tps = 125.0\\n")])
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&out.stdout);
    assert_eq!(json["primary_metric"], "tps", "a printed metric comes first");
    let tps = comparison(&json, "tps");
    assert_eq!((tps["verdict"].as_str(), tps["better"].as_str()), (Some("faster"), Some("higher")));
    assert_eq!(tps["ratio"], 1.25);
    let run = &json["commands"][1]["runs"][0];
    assert_eq!(run["counters"]["tps"]["value"], 125.0);
    assert_eq!(run["counters"]["tps"]["samples"], serde_json::json!([125.0]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("B has 25.0 % more tps than A (better)"), "{stderr}");
    // The runs time themselves: process creation is no reason for a warning.
    assert!(!stderr.contains("runs for only"), "{stderr}");
}

#[test]
fn output_lacking_the_metric_fails_with_exit_3_naming_the_expected_line() {
    let out = perflab()
        .args(["compare", "--shell", "-r", "6", "-w", "0", "--json", "-", "--output-metric", r"tps = (?<tps>[0-9.]+)"])
        .args([&prints("tps = 1\\n"), &prints("starting up\\n")])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("printed no value of `tps`: no line matched `tps = (?<tps>[0-9.]+)`"), "{stderr}");
    // What was measured is still written, and the missing value is no zero.
    let json = json_of(&out.stdout);
    assert_eq!(json["stop_reason"], "command_failed");
    let run = &json["commands"][1]["runs"][0];
    assert_eq!(run["counters"]["tps"]["supported"], false);
    assert!(run["counters"]["tps"].get("value").is_none());
}

#[test]
fn malformed_json_lines_and_missing_pgbench_reports_fail_clearly() {
    let bad = perflab()
        .args(["compare", "--shell", "-r", "2", "--parse", "jsonl"])
        .args([&prints(r#"{"metric": "x_ns", "value": 1}\n"#), &prints(r#"{"metric": "x_ns", "value": "fast"}\n"#)])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("malformed metric line (`value` must be a number)"), "{stderr}");

    let silent = perflab().args(["compare", "--shell", "-r", "2", "--parse", "jsonl", "true", "true"]).assert().code(3);
    let stderr = String::from_utf8_lossy(&silent.get_output().stderr).into_owned();
    assert!(stderr.contains(r#"printed no metric: expected lines {"metric": NAME, "value": NUMBER}"#), "{stderr}");

    let pg = perflab().args(["stat", "-r", "2", "--parse", "pgbench", "--", "echo", "pgbench: error"]).assert().code(3);
    let stderr = String::from_utf8_lossy(&pg.get_output().stderr).into_owned();
    assert!(stderr.contains("no `tps = …` line (pgbench's report)"), "{stderr}");
}

#[test]
fn bad_output_options_are_usage_errors() {
    for (args, expected) in [
        (vec!["--output-metric", "tps = ([0-9.]+)"], "has no named capture"),
        (vec!["--output-metric", "(?<wall_s>[0-9]+)"], "measured by perflab itself"),
        (vec!["--parse", "csv"], "invalid value 'csv'"),
        (vec!["--higher-is-better", "x", "--lower-is-better", "x"], "both --higher-is-better and --lower-is-better"),
        (vec!["--metric", "tps"], "unknown metric `tps`"),
        (vec!["--parse", "jsonl", "--mode", "instructions"], "cannot be combined with --mode instructions"),
    ] {
        let out = perflab().arg("compare").args(&args).args(["true", "true 1"]).assert().code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(stderr.contains(expected) && stderr.lines().count() == 1, "{args:?}: {stderr}");
    }
}

/// `iterations N cold|warm 200000`: iterations of ~0.4 ms of CPU; a cold first one also
/// takes the 8,192 page faults of its buffer (~15 ms, ×40).
fn iterations(n: u32, mode: &str) -> String {
    format!("{} {n} {mode} 200000", common::fixture("iterations").display())
}

#[test]
fn the_per_iteration_profile_shows_a_cold_first_iteration_and_steady_state_decides_without_it() {
    let _quiet = quiet();
    let (warm, cold) = (iterations(10, "warm"), iterations(10, "cold"));
    // The failure probability of every assertion on measured values below:
    // * all 10 iterations: cold's mean is ≥ 2.5× warm's (15 ms over 10 iterations of
    //   0.4 ms), `slower` unless no look by 58 rounds cleared 1 (no round of 600 strayed
    //   by e^0.4 beside two burners);
    // * first ÷ rest of cold (~40×, a median over the runs' medians) reads ≤ 2 only if
    //   more than half the runs' rest doubled — e^0.69, never seen;
    // * the steady state (iterations 2…10) of 30 rounds: the estimate is off by ×1.25
    //   only if 9 rounds strayed that far (1 of 600 beyond e^0.2).
    let all = common::noise::selftimed_tail("iter_ns");
    let steady_tail = common::noise::selftimed_tail("iter_ns[steady]");
    let p = common::noise::p_sequential_misses(6, &[&all], 2.5f64.ln(), 58)
        + common::noise::p_estimate_off(&steady_tail, 30, 1.25f64.ln());
    assert!(p < common::noise::P_MAX, "P(fail) ≤ {p:e}");
    let all = perflab()
        .args(["compare", "--no-progress", "--max-time", "60s", "--parse", "jsonl", "--json", "-"])
        .args(["-n", "warm", "-n", "cold", &warm, &cold])
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&all.stdout);
    // The first iteration of `cold` takes the page faults of its whole buffer.
    assert_eq!(comparison(&json, "iter_ns")["verdict"], "slower", "{}", json["comparisons"]);
    for command in json["commands"].as_array().unwrap() {
        for run in command["runs"].as_array().unwrap() {
            let iter = &run["counters"]["iter_ns"];
            let samples: Vec<f64> = iter["samples"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            assert_eq!(samples.len(), 10, "every iteration is kept");
            let mean = samples.iter().sum::<f64>() / 10.0;
            assert!((iter["value"].as_f64().unwrap() - mean).abs() < 1e-6 * mean, "the run's value is their mean");
        }
    }
    let stderr = String::from_utf8_lossy(&all.stderr);
    assert!(stderr.contains("iter_ns per iteration (median over runs; #1 is the first value each run printed; a run's value is the mean of all iterations)"));
    let cold_row = stderr.lines().find(|l| l.trim_start().starts_with("cold ") && l.contains('×')).unwrap();
    let first_over_rest: f64 = cold_row.split_whitespace().last().unwrap().trim_end_matches('×').parse().unwrap();
    assert!(first_over_rest > 2.0, "the cold first iteration shows: {cold_row}");

    let steady = perflab()
        .args(["compare", "--no-progress", "-r", "30", "--parse", "jsonl"])
        .args(["--iterations", "steady", "--json", "-", "-n", "warm", "-n", "cold", &warm, &cold])
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&steady.stdout);
    let c = comparison(&json, "iter_ns");
    // Without the cold iteration the two differ by their warm iterations only (memory
    // placement: a percent or so).
    assert!((0.8..1.25).contains(&c["ratio"].as_f64().unwrap()), "{c}");
    assert_eq!(json["settings"]["iterations"], serde_json::json!({"steady": 1}));
    for run in json["commands"][1]["runs"].as_array().unwrap() {
        let iter = &run["counters"]["iter_ns"];
        let samples: Vec<f64> = iter["samples"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let steady_mean = samples[1..].iter().sum::<f64>() / 9.0;
        assert!((iter["value"].as_f64().unwrap() - steady_mean).abs() < 1e-6 * steady_mean, "iterations 2…10: {iter}");
    }
    let stderr = String::from_utf8_lossy(&steady.stderr);
    assert!(stderr.contains("a run's value is the steady state, the mean of iterations 2…"), "{stderr}");
}

/// `--iterations first` gives the verdict on the cold first iteration with no second
/// regex; the profile keeps the program's numbering (#1 is iteration 1) and its first ÷
/// rest is computed from iteration 1. `--iterations each` gives one verdict per group.
#[test]
fn the_first_iteration_gets_its_own_verdict_and_each_group_gets_one() {
    let _quiet = quiet();
    let (warm, cold) = (iterations(8, "warm"), iterations(8, "cold"));
    // The first iteration is ~40× longer cold (e^3 assumed). 40 rounds each: its
    // interval (at 95 %; with `each` at 98.3 %, three groups deciding as one Bonferroni
    // family) misses `slower`, or its ratio reads ≤ 2, only if several rounds strayed by
    // e^2.3 or more — 2 of 600 strayed by e^0.4 beside two burners, none further.
    let first_tail = common::noise::selftimed_tail("iter_ns[first]");
    let p = common::noise::p_interval_misses(&first_tail, 40, 0.95, 3.0)
        + common::noise::p_interval_misses(&first_tail, 40, 1.0 - 0.05 / 3.0, 3.0)
        + 2.0 * common::noise::p_estimate_off(&first_tail, 40, 3.0 - 2f64.ln());
    assert!(p < common::noise::P_MAX, "P(fail) ≤ {p:e}");
    let first = perflab()
        .args(["compare", "--no-progress", "-r", "40", "--parse", "jsonl", "--json", "-"])
        .args(["--iterations", "first", "-n", "warm", "-n", "cold", &warm, &cold])
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&first.stdout);
    let c = comparison(&json, "iter_ns");
    assert_eq!(c["verdict"], "slower", "{c}");
    assert!(c["ratio"].as_f64().unwrap() > 2.0, "the first iteration alone takes the faults: {c}");
    assert_eq!(json["settings"]["iterations"], serde_json::json!({"first": 1}));
    let run = &json["commands"][1]["runs"][0]["counters"]["iter_ns"];
    let samples = run["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 8, "every iteration is still kept");
    assert_eq!(run["value"], samples[0], "the run's value is iteration 1");
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(stderr.contains("a run's value is the cold start, iteration 1"), "{stderr}");
    assert!(stderr.contains("the verdict that decided is on iter_ns"), "{stderr}");
    let header = stderr.lines().find(|l| l.contains("#1") && l.contains("first ÷ rest")).unwrap();
    assert!(header.contains("#2") && header.contains("#8"), "numbered as the program does: {header}");
    let cold_row = stderr.lines().find(|l| l.trim_start().starts_with("cold ") && l.contains('×')).unwrap();
    let first_over_rest: f64 = cold_row.split_whitespace().last().unwrap().trim_end_matches('×').parse().unwrap();
    assert!(first_over_rest > 2.0, "first ÷ rest is iteration 1 over 2…8: {cold_row}");

    let each = perflab()
        .args(["compare", "--no-progress", "-r", "40", "--parse", "jsonl", "--json", "-"])
        .args(["--iterations", "each", "-n", "warm", "-n", "cold", &warm, &cold])
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&each.stdout);
    assert_eq!(json["primary_metric"], "iter_ns");
    let first = comparison(&json, "iter_ns[first]");
    assert_eq!(first["verdict"], "slower", "{first}");
    let steady = comparison(&json, "iter_ns[steady]");
    assert!(steady["ratio"].as_f64().unwrap() < first["ratio"].as_f64().unwrap() / 1.5, "{steady}");
    // The groups decide with the primary metric, as one Bonferroni family.
    for c in [first, steady, comparison(&json, "iter_ns")] {
        assert_eq!(c["look_confidence"], first["look_confidence"], "{c}");
        assert!(c["look_confidence"].as_f64().unwrap() > 0.983, "α split three ways: {c}");
    }
}

/// Lines of a file a hook appended to.
fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(String::from).collect()
}

#[test]
fn hooks_run_around_every_run_and_once_around_the_experiment() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let log = log.to_str().unwrap();
    perflab()
        .args(["compare", "-r", "3", "-w", "1", "-n", "a", "-n", "b"])
        .args(["--prepare", &format!("echo prepare >> {log}"), "--conclude", &format!("echo conclude >> {log}")])
        .args(["--setup", &format!("echo setup-a >> {log}"), "--setup", &format!("echo setup-b >> {log}")])
        .args(["--cleanup", &format!("echo cleanup >> {log}")])
        .args(["true", "true 1"])
        .assert()
        .success();
    let lines = lines(Path::new(log));
    assert_eq!(&lines[..2], ["setup-a", "setup-b"]);
    assert_eq!(&lines[lines.len() - 2..], ["cleanup", "cleanup"]);
    let middle = &lines[2..lines.len() - 2];
    // 4 rounds (one warm-up) × 2 commands, each run between its prepare and conclude.
    assert_eq!(middle.len(), 16, "{lines:?}");
    assert!(middle.chunks(2).all(|pair| pair == ["prepare", "conclude"]), "{lines:?}");
}

#[test]
fn a_failing_hook_stops_with_exit_3_keeps_the_runs_and_still_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("n");
    let cleaned = dir.path().join("cleaned");
    // The prepare hook fails on its 5th call (round 2 after the warm-up round).
    let prepare =
        format!("echo x >> {0}; test $(wc -l < {0}) -lt 5 || {{ echo broken >&2; exit 4; }}", counter.display());
    let out = perflab()
        .args(["compare", "-r", "10", "--json", "-", "--prepare", &prepare])
        .args(["--cleanup", &format!("touch {}", cleaned.display()), "true", "true 1"])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--prepare `") && stderr.contains("exited with code 4") && stderr.contains("broken"),
        "{stderr}"
    );
    let json = json_of(&out.stdout);
    assert_eq!(json["stop_reason"], "command_failed");
    let runs: usize = json["commands"].as_array().unwrap().iter().map(|c| c["runs"].as_array().unwrap().len()).sum();
    assert_eq!(runs, 2, "the first measured round is kept");
    assert!(cleaned.exists(), "cleanup runs after a failure");
    assert!(json["settings"]["hooks"][0]["prepare"].as_str().unwrap().contains("exit 4"), "hooks are recorded");
}

#[test]
fn input_is_every_run_s_stdin_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "v=7\n").unwrap();
    let out = perflab()
        .args([
            "stat",
            "-r",
            "4",
            "--json",
            "-",
            "--input",
            input.to_str().unwrap(),
            "--output-metric",
            "v=(?<v>[0-9]+)",
        ])
        .arg("cat")
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&out.stdout);
    let values: Vec<f64> = json["commands"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["counters"]["v"]["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [7.0; 4], "each run read the whole file");
    let v = json["metrics"].as_array().unwrap().iter().find(|m| m["name"] == "v").unwrap();
    assert_eq!(v["value"], 7.0);
    let missing = perflab().args(["stat", "--input", "/nonexistent/in", "cat"]).assert().code(2);
    assert!(String::from_utf8_lossy(&missing.get_output().stderr).contains("cannot read --input"));
}

#[test]
fn parameter_lists_and_scans_expand_commands_names_and_hooks() {
    let out = perflab()
        .args(["compare", "--shell", "-r", "2", "--json", "-", "--output-metric", "v=(?<v>[0-9.]+)"])
        .args(["-L", "x", "1,3", "-P", "y", "1", "2", "-n", "x{x} y{y}", "--prepare", "test {x} -gt 0"])
        .arg(prints("v={x}.{y}\\n"))
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&out.stdout);
    let names: Vec<&str> = json["commands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["x1 y1", "x1 y2", "x3 y1", "x3 y2"]);
    let values: Vec<f64> =
        json["commands"].as_array().unwrap().iter().map(|c| c["summary"]["v"]["median"].as_f64().unwrap()).collect();
    assert_eq!(values, [1.1, 1.2, 3.1, 3.2]);
    assert_eq!(json["settings"]["hooks"][3]["prepare"], "test 3 -gt 0");
    let stepped = perflab()
        .args(["compare", "--shell", "-r", "2", "--json", "-", "-P", "n", "0", "1", "-D", "0.5", "echo {n}"])
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&stepped.stdout);
    let lines: Vec<&str> =
        json["commands"].as_array().unwrap().iter().map(|c| c["command_line"].as_str().unwrap()).collect();
    assert_eq!(lines, ["echo 0.0", "echo 0.5", "echo 1.0"]);
    // One command is measured alone, as hyperfine does.
    let single = perflab().args(["compare", "-r", "6", "true"]).assert().success();
    assert!(String::from_utf8_lossy(&single.get_output().stdout).contains("measured alone"));
    let bad = perflab().args(["compare", "-L", "x", "1,2", "echo {y}"]).assert().code(2);
    assert!(String::from_utf8_lossy(&bad.get_output().stderr).contains("`{y}` in `echo {y}` is not a parameter"));
}

#[test]
fn show_output_still_shows_what_metrics_are_read_from() {
    let out = perflab()
        .args(["compare", "--shell", "-r", "2", "-w", "0", "--show-output", "--output-metric", "v=(?<v>[0-9]+)"])
        .args(["printf 'v=%s seen\\n' 1", "printf 'v=%s seen\\n' 2"])
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("v=1 seen").count(), 2, "{stdout}");
    assert_eq!(stdout.matches("v=2 seen").count(), 2, "{stdout}");
}

#[test]
fn google_benchmark_json_names_a_metric_per_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let doc = |real: f64| {
        format!(
            r#"{{"context": {{}}, "benchmarks": [
  {{"name": "BM_sort/64", "run_type": "iteration", "real_time": {real}, "cpu_time": {real}, "time_unit": "us"}},
  {{"name": "BM_sort/64", "run_type": "iteration", "real_time": {real}, "cpu_time": {real}, "time_unit": "us"}},
  {{"name": "BM_sort/64_mean", "run_type": "aggregate", "real_time": {real}, "cpu_time": {real}, "time_unit": "us"}}]}}"#
        )
    };
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&a, doc(10.0)).unwrap();
    std::fs::write(&b, doc(12.0)).unwrap();
    let out = perflab()
        .args(["compare", "-r", "6", "--json", "-", "--parse", "google-benchmark"])
        .args([format!("cat {}", a.display()), format!("cat {}", b.display())])
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&out.stdout);
    assert_eq!(json["primary_metric"], "BM_sort/64:real_ns");
    let c = comparison(&json, "BM_sort/64:real_ns");
    assert_eq!((c["verdict"].as_str(), c["ratio"].as_f64()), (Some("slower"), Some(1.2)));
    let run = &json["commands"][0]["runs"][0]["counters"]["BM_sort/64:real_ns"];
    assert_eq!(run["samples"], serde_json::json!([10000.0, 10000.0]), "one sample per repetition, aggregates skipped");
    assert_eq!(comparison(&json, "BM_sort/64:cpu_ns")["verdict"], "slower");
}

#[test]
fn printed_metrics_reach_csv_markdown_the_store_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let csv = dir.path().join("runs.csv");
    let md = dir.path().join("pr.md");
    perflab()
        .args(["compare", "--shell", "-r", "6", "--parse", "jsonl", "--save", "--label", "v1", "--bench", "q"])
        .args(["--db", db.to_str().unwrap(), "--csv", csv.to_str().unwrap(), "--markdown", md.to_str().unwrap()])
        .args([&prints(r#"{"metric": "q_per_s", "value": 10}\n"#), &prints(r#"{"metric": "q_per_s", "value": 8}\n"#)])
        .assert()
        .success();
    let csv = std::fs::read_to_string(&csv).unwrap();
    // Counted from the end: the quoted commands hold commas.
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let from_end = header.iter().rev().position(|c| *c == "q_per_s").expect("a q_per_s column");
    let eights = csv.lines().filter(|l| l.rsplit(',').nth(from_end) == Some("8")).count();
    assert_eq!(eights, 6, "{csv}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("has 20.0 % less q_per_s than") && md.contains("(worse)"), "{md}");
    let history = perflab()
        .args(["history", "--db", db.to_str().unwrap(), "--metric", "q_per_s", "--json", "-"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&history.stdout);
    assert!(text.contains("\"median\": 8.0") || text.contains("\"median\":8.0"), "{text}");
    let html = dir.path().join("report.html");
    perflab()
        .args(["report", "--db", db.to_str().unwrap(), "--metric", "q_per_s", "-o", html.to_str().unwrap()])
        .assert()
        .success();
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("higher q_per_s is better: a ratio above 1× is an improvement"), "the report says which way");
    let export = perflab().args(["export", "--db", db.to_str().unwrap()]).assert().success().get_output().clone();
    let json = json_of(&export.stdout);
    let run = &json["experiments"][0]["experiment"]["commands"][0]["runs"][0];
    assert_eq!(run["counters"]["q_per_s"]["samples"], serde_json::json!([10.0]), "samples are stored");
}
