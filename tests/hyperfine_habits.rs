//! What a hyperfine user types, with hyperfine's meanings: `--export-json` in hyperfine's
//! schema (checked field by field against what its scripts read), `--export-csv`,
//! `--export-asciidoc`, `--export-orgmode`, `-u`, `--sort`, `--style`, `--reference`,
//! `-m`/`-M`, `--output`, one command alone, `--runs` below an interval; and tables that
//! fit the terminal.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1").env_remove("PERFLAB_DB").env_remove("COLUMNS");
    cmd
}

fn spin(n: u64) -> String {
    format!("{} {n}", common::fixture("spin").display())
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The fields hyperfine's scripts/*.py read, with the JSON types they need (the same
/// check as the unit test of `render::hyperfine`, here on the command's real output).
fn assert_hyperfine_schema(doc: &Value, runs: usize) {
    let results = doc["results"].as_array().expect("results[]");
    for r in results {
        assert!(r["command"].is_string(), "{r}");
        for number in ["mean", "median", "user", "system", "min", "max"] {
            assert!(r[number].is_f64(), "{number}: {r}");
        }
        assert!(r["stddev"].is_f64() || r["stddev"].is_null(), "{r}");
        let times = r["times"].as_array().expect("times[]");
        assert_eq!(times.len(), runs, "{r}");
        assert!(times.iter().all(|t| t.as_f64().is_some_and(|t| t > 0.0)), "{r}");
        let codes = r["exit_codes"].as_array().expect("exit_codes[]");
        assert!(codes.len() == runs && codes.iter().all(|c| c == 0), "{r}");
        let memory = r["memory_usage_byte"].as_array().expect("memory_usage_byte[]");
        assert!(memory.len() == runs && memory.iter().all(|m| m.as_u64().is_some_and(|m| m > 0)), "{r}");
        let min = r["min"].as_f64().unwrap();
        let (mean, max) = (r["mean"].as_f64().unwrap(), r["max"].as_f64().unwrap());
        assert!(min <= mean && mean <= max, "{r}");
    }
}

#[test]
fn export_json_is_hyperfines_schema_with_parameters_and_perflabs_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("h.json");
    perflab()
        .args(["compare", "-r", "6", "--export-json"])
        .arg(&json)
        .args(["-L", "n", "100000,200000", &format!("{} {{n}}", common::fixture("spin").display())])
        .assert()
        .success();
    let doc = read_json(&json);
    assert_hyperfine_schema(&doc, 6);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["parameters"]["n"], "100000");
    assert_eq!(results[1]["parameters"]["n"], "200000");
    let comparison = &results[1]["perflab"]["comparisons"][0];
    assert_eq!(comparison["baseline"], results[0]["command"]);
    assert!(comparison["ratio"].is_f64() && comparison["verdict"].is_string(), "{comparison}");
    assert_eq!(results[0]["perflab"]["baseline"], true);
    assert_eq!(doc["perflab"]["rounds"], 6);
    // perflab's own JSON keeps its schema on --json, now with the parameters too.
    let own = dir.path().join("own.json");
    perflab().args(["compare", "-r", "6", "--json"]).arg(&own).args(["true", "true 1"]).assert().success();
    assert!(read_json(&own)["commands"].is_array());
}

#[test]
fn the_other_exports_and_the_time_unit() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| dir.path().join(name);
    let out = perflab()
        .args(["compare", "-r", "6", "-u", "millisecond", "--sort", "mean-time", "-n", "slow", "-n", "fast"])
        .args(["--export-csv", file("h.csv").to_str().unwrap(), "--export-asciidoc", file("h.adoc").to_str().unwrap()])
        .args([
            "--export-orgmode",
            file("h.org").to_str().unwrap(),
            "--export-markdown",
            file("h.md").to_str().unwrap(),
        ])
        .args([&spin(4_000_000), &spin(400_000)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let csv = std::fs::read_to_string(file("h.csv")).unwrap();
    // hyperfine's columns (wall seconds), then perflab's, named with the deciding metric.
    let header = csv.lines().next().unwrap();
    let deciding = ["wall_s", "uncontended_s"].into_iter().find(|m| header.contains(&format!(",{m}_median,")));
    let deciding = deciding.unwrap_or_else(|| panic!("{header}"));
    assert_eq!(
        header,
        format!("command,mean,stddev,median,user,system,min,max,{deciding}_median,{deciding}_ratio_paired,{deciding}_ratio_paired_ci_low,{deciding}_ratio_paired_ci_high,{deciding}_verdict")
    );
    assert_eq!(csv.lines().count(), 3, "{csv}");
    let adoc = std::fs::read_to_string(file("h.adoc")).unwrap();
    assert!(adoc.contains("|===") && adoc.contains("| wall median [ms]"), "{adoc}");
    let org = std::fs::read_to_string(file("h.org")).unwrap();
    assert!(org.contains("|---+") && org.contains("| fast |"), "{org}");
    let md = std::fs::read_to_string(file("h.md")).unwrap();
    // --sort mean-time: the command with the smaller mean first, in every table — by the
    // means of this very run (ten times less work is almost always that one, but a busy
    // machine may delay a few of six runs: the order is checked against the data).
    let mean = |name: &str| -> f64 {
        let line = csv.lines().find(|l| l.starts_with(&format!("{name},"))).unwrap_or_else(|| panic!("{csv}"));
        line.split(',').nth(1).unwrap().parse().unwrap()
    };
    let (first, second) = if mean("fast") <= mean("slow") { ("fast", "slow") } else { ("slow", "fast") };
    assert!(md.find(&format!("| {first} |")).unwrap() < md.find(&format!("| {second} |")).unwrap(), "{md}");
    let text = stdout(&out);
    let row = |name: &str| text.find(&format!(" {name} ")).unwrap_or_else(|| panic!("{text}"));
    assert!(row(first) < row(second), "{text}");
    // -u millisecond: every time in the tables in ms, none in µs. (The warnings that
    // follow keep their own unit: on a fast machine `fast` is under 1 ms and a change-point
    // warning names its medians as they read best.)
    let tables: String = text.lines().filter(|l| !l.starts_with("warning:")).collect::<Vec<_>>().join("\n");
    assert!(!tables.contains(" µs") && tables.contains(" ms"), "{text}");
}

#[test]
fn one_command_is_measured_alone_and_five_runs_say_why_there_is_no_interval() {
    let out = perflab().args(["compare", "true"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(text.starts_with("perflab 10 runs"), "{text}");
    assert!(text.contains("(95 % CI of the median, 10 runs)") && text.contains("measured alone"), "{text}");
    let out = perflab().args(["compare", "--runs", "5", "true", "true 1"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(text.contains("wall median ± MAD"), "the medians and spread: {text}");
    assert!(text.contains("a paired interval needs at least 6 rounds (this had 5)"), "{text}");
    assert!(text.contains("--runs 6 or more"), "{text}");
}

#[test]
fn styles_reference_and_run_limits() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // --style none: nothing on stdout, the file still written.
    let out = perflab()
        .args(["compare", "-r", "6", "--style", "none", "--json"])
        .arg(&json)
        .args(["--reference", "true", "--reference-name", "ref", "true 1"])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let e = read_json(&json);
    assert_eq!(e["commands"][0]["name"], "ref", "the reference is the baseline");
    assert_eq!(e["comparisons"][0]["baseline"], "ref");
    // --style full: colours even off a terminal; basic: none.
    let full = perflab().args(["compare", "-r", "6", "--style", "full", "true", "true 1"]).output().unwrap();
    assert!(stdout(&full).contains('\u{1b}'), "{}", stdout(&full));
    let basic = perflab()
        .args(["compare", "-r", "6", "--style", "basic", "--color", "always", "true", "true 1"])
        .output()
        .unwrap();
    assert!(!stdout(&basic).contains('\u{1b}'), "{}", stdout(&basic));
    // -m/-M are hyperfine's --min-runs/--max-runs.
    perflab().args(["compare", "-m", "6", "-M", "7", "--json"]).arg(&json).args(["true", "true 1"]).assert().success();
    let e = read_json(&json);
    assert!(e["rounds"].as_u64().unwrap() <= 7, "{}", e["rounds"]);
    assert_eq!((e["settings"]["min_rounds"].as_u64(), e["settings"]["max_rounds"].as_u64()), (Some(6), Some(7)));
}

#[test]
fn output_goes_where_asked_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    let out = perflab()
        .args(["compare", "-r", "2", "--output"])
        .arg(&log)
        .args(["--output", "pipe", "--shell=/bin/sh", "echo to-file", "echo to-pipe"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // Two measured runs and one warm-up, each appended.
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "to-file\n".repeat(3));
    assert!(!stdout(&out).contains("to-pipe\n"), "the pipe's output is thrown away");
    let inherit = perflab().args(["compare", "-r", "2", "--output", "inherit", "echo shown", "true"]).output().unwrap();
    assert!(stdout(&inherit).contains("shown\n"), "{inherit:?}");
}

#[test]
fn tables_fit_the_terminal_and_wide_keeps_them_whole() {
    let args = [
        "compare",
        "-r",
        "6",
        "-n",
        "a-rather-long-name-for-the-baseline",
        "-n",
        "another-long-name",
        "true",
        "true 1",
    ];
    let fitted = perflab().env("COLUMNS", "80").args(args).output().unwrap();
    let text = stdout(&fitted);
    // The tables' lines: their rules and the rows between (notes below them are prose).
    let (mut widths, mut inside) = (Vec::new(), false);
    for line in text.lines() {
        if line.starts_with('─') || line.starts_with('═') {
            widths.push(line.chars().count());
            inside = line.starts_with('═') || (!inside && line.starts_with('─'));
        } else if inside {
            widths.push(line.chars().count());
        }
    }
    assert!(!widths.is_empty() && widths.iter().all(|w| *w <= 80), "{text}");
    // What else gives way depends on the numbers' widths this run (a busy machine adds
    // its own columns); `outliers` goes first.
    let note = text.lines().find(|l| l.contains("(to fit 80 columns: left out ")).unwrap_or_else(|| panic!("{text}"));
    assert!(note.contains("`outliers`"), "{text}");
    let wide = perflab().env("COLUMNS", "80").arg("--wide").args(args).output().unwrap();
    let text = stdout(&wide);
    assert!(text.contains("outliers") && !text.contains("to fit"), "{text}");
    assert!(text.lines().any(|l| l.chars().count() > 80), "{text}");
    // Piped without COLUMNS: full width.
    let piped = perflab().args(args).output().unwrap();
    assert!(stdout(&piped).contains("outliers"), "{}", stdout(&piped));
}
