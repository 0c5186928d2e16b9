//! One metric per row, named (issue #39, item 2): every view and export of one pair —
//! the terminal, `--json`, hyperfine's JSON and CSV, Markdown, `run`'s line, `history`
//! and the HTML report — prints the same digits for the same figure and names its
//! metric (and whether it is paired or across sessions). The metrics are read from the
//! files, so a busy machine that decides on uncontended_s changes nothing asserted.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn perflab(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.current_dir(dir).env("NO_COLOR", "1").env_remove("PERFLAB_DB");
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `compare` deciding on a metric other than wall time (`--metric cpu_s`): its ratio
/// has the same digits, beside the name `cpu_s`, in the terminal, perflab's JSON,
/// hyperfine's JSON and CSV and the Markdown; hyperfine's own fields stay wall time.
#[test]
fn a_compared_pair_reads_the_same_with_its_metric_in_every_export() {
    let dir = tempfile::tempdir().unwrap();
    let spin = common::fixture("spin");
    let (a, b) = (format!("{} 2000000", spin.display()), format!("{} 4000000", spin.display()));
    let out = perflab(dir.path())
        .args(["compare", "-r", "8", "--metric", "cpu_s", "-n", "A", "-n", "B"])
        .args(["--json", "j.json", "--export-json", "h.json", "--export-csv", "h.csv", "--markdown", "m.md"])
        .args([&a, &b])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let terminal = text(&out.stdout) + &text(&out.stderr);
    let own = json(&dir.path().join("j.json"));
    assert_eq!(own["primary_metric"], "cpu_s");
    let decided = own["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == "cpu_s").unwrap().clone();
    let ratio = decided["ratio"].as_f64().unwrap();
    let digits = format!("{ratio:.4}");

    // The terminal's comparison row and sentence.
    let row = terminal
        .lines()
        .find(|l| l.contains("B vs A") && l.contains(" cpu_s "))
        .unwrap_or_else(|| panic!("{terminal}"));
    assert!(row.contains(&digits), "{row} lacks {digits}");
    assert!(terminal.contains("than A in cpu_s"), "{terminal}");

    // Markdown: the same row, its metric named.
    let md = std::fs::read_to_string(dir.path().join("m.md")).unwrap();
    let md_row = md.lines().find(|l| l.starts_with("| B | cpu_s |")).unwrap_or_else(|| panic!("{md}"));
    assert!(md_row.contains(&format!("| {digits} |")), "{md_row}");
    assert!(md.contains("| command | wall median ["), "the command table names wall time: {md}");

    // hyperfine's JSON: wall times where hyperfine has them, said so; the deciding
    // metric's figures named beside them; the same ratio, paired.
    let hyper = json(&dir.path().join("h.json"));
    let b_result = &hyper["results"][1];
    let walls: Vec<f64> =
        own["commands"][1]["runs"].as_array().unwrap().iter().map(|r| r["wall_s"].as_f64().unwrap()).collect();
    let times: Vec<f64> = b_result["times"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
    assert_eq!(times, walls, "`times` are wall times, as in hyperfine");
    assert_eq!(b_result["perflab"]["times_metric"], "wall_s");
    let deciding = &b_result["perflab"]["deciding"];
    assert_eq!(deciding["metric"], "cpu_s");
    assert_eq!(deciding["median"], own["commands"][1]["summary"]["cpu_s"]["median"]);
    let hyper_ratio =
        b_result["perflab"]["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == "cpu_s").unwrap();
    assert_eq!((hyper_ratio["ratio"].as_f64(), hyper_ratio["method"].as_str()), (Some(ratio), Some("paired")));

    // hyperfine's CSV: perflab's columns named with the deciding metric.
    let csv = std::fs::read_to_string(dir.path().join("h.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name}: {header:?}"));
    let b_row: Vec<&str> =
        lines.nth(1).unwrap().rsplitn(header.len(), ',').collect::<Vec<_>>().into_iter().rev().collect();
    assert_eq!(b_row[column("cpu_s_ratio_paired")].parse::<f64>().unwrap(), ratio);
    assert_eq!(b_row[column("cpu_s_verdict")], decided["verdict"].as_str().unwrap());
    assert_eq!(
        b_row[column("cpu_s_median")].parse::<f64>().unwrap(),
        own["commands"][1]["summary"]["cpu_s"]["median"].as_f64().unwrap()
    );
}

/// `run --baseline` then `history` and `report`: the pair's record has the same digits,
/// metric and method in `run`'s line, the history row and the report; the line names
/// the metric of its median, and the history's change-point and median figures say
/// they are across sessions or name their metric.
#[test]
fn a_suite_pair_reads_the_same_in_run_history_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let spin = common::fixture("spin");
    let suite = format!(
        "[builds]\nsmall = {{ command = \"{0} 2000000\" }}\nbig = {{ command = \"{0} 4000000\" }}\n[[benchmark]]\nname = \"loop\"\ncommand = \"{{build}}\"\n",
        spin.display()
    );
    std::fs::write(dir.path().join("perflab.toml"), suite).unwrap();
    let run = |args: &[&str]| {
        let out = perflab(dir.path()).args(["run", "-r", "8", "--db", "h.db"]).args(args).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout) + &text(&out.stderr)
    };
    run(&["--label", "small", "--build", "small"]);
    let line_text = run(&["--label", "big", "--build", "big", "--baseline", "small"]);
    let line = line_text.lines().find(|l| l.starts_with("loop ")).unwrap_or_else(|| panic!("{line_text}"));

    let out = perflab(dir.path()).args(["export", "--db", "h.db", "--label", "big"]).output().unwrap();
    let export: Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = &export["experiments"][0]["experiment"];
    let metric = e["primary_metric"].as_str().unwrap().to_string();
    // The line's median is named: `loop  uncontended_s 5.10 ms [...]`.
    assert!(line.starts_with(&format!("loop  {metric} ")), "{line}");
    // The pair's record: `2× [1.9×, 2.1×] slower (METRIC, paired)`.
    let (_, record) = line.split_once("big vs small: ").unwrap_or_else(|| panic!("{line}"));
    let (figures, rest) = record.split_once("] ").unwrap();
    let figures = format!("{figures}]");
    assert!(rest.ends_with(&format!("({metric}, paired)")), "{line}");

    let out = perflab(dir.path()).args(["history", "--db", "h.db", "--metric", &metric]).output().unwrap();
    let history = text(&out.stdout);
    let row = history.lines().find(|l| l.trim_start().starts_with("big")).unwrap_or_else(|| panic!("{history}"));
    assert!(row.contains(&format!("{figures} {metric}, paired")), "{row} lacks {figures} {metric}, paired");
    assert!(history.contains(&format!("median {metric}")), "{history}");

    let out =
        perflab(dir.path()).args(["report", "--db", "h.db", "--metric", &metric, "-o", "r.html"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    let (ratio, interval) = figures.trim_end_matches(']').split_once(" [").unwrap();
    let interval = interval.replace(", ", " – ");
    assert!(
        html.contains(&format!("{ratio} <tspan class=\"tick\">{interval} · paired")),
        "report lacks {ratio} {interval}"
    );
    assert!(
        html.contains(&format!("<h3>big vs small <span class=\"muted\">({metric})</span></h3>")),
        "the section names its metric"
    );
    assert!(
        html.contains(&format!(": median {metric} ")) && html.contains("medians of separate sessions, not paired"),
        "history tooltips"
    );
}
