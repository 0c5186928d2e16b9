//! `perflab report` end to end: results stored in a SQLite history (or given as perflab
//! JSON) become one HTML page; the page is opened in headless Chromium.

mod common;

use assert_cmd::Command;
use perflab::model::{CommandResult, Comparison, ExitInfo, Experiment, Machine, Run, Settings, StopReason, Verdict};
use perflab::store::{Meta, Store};
use std::path::{Path, PathBuf};

const EVIL: &str = "<script>alert(1)</script>";

fn machine(hostname: &str) -> Machine {
    Machine {
        hostname: hostname.into(),
        cpu_model: "Test CPU".into(),
        cores: 2,
        kernel: "6.1.0".into(),
        governor: None,
        pmu: false,
        virtualization: Some("kvm".into()),
        ..Machine::default()
    }
}

fn settings() -> Settings {
    Settings { seed: 1, fixed_rounds: Some(12), max_rounds: 12, max_time_s: 10.0, ..Default::default() }
}

/// Twelve runs around `level` seconds with a small deterministic wobble.
fn runs(level: f64) -> Vec<Run> {
    (0..12)
        .map(|i| Run {
            round: i,
            wall_s: level * (1.0 + 0.004 * ((i * 7 % 5) as f64 - 2.0)),
            user_s: level * 0.9,
            sys_s: level * 0.05,
            max_rss_kib: 2048 + i as u64,
            exit: ExitInfo { exit_code: Some(0), signal: None, timed_out: false },
            ..Run::default()
        })
        .collect()
}

fn command(name: &str, level: f64) -> CommandResult {
    CommandResult {
        name: name.into(),
        argv: vec!["bench".into()],
        command_line: "bench".into(),
        parameters: Default::default(),
        runs: runs(level),
        summary: Default::default(),
    }
}

fn experiment(commands: Vec<CommandResult>, comparisons: Vec<Comparison>, host: &str) -> Experiment {
    Experiment {
        perflab_version: "0.1.0".into(),
        started_at: "2026-11-22T03:00:00Z".into(),
        machine: machine(host),
        settings: settings(),
        rounds: 12,
        duration_s: 1.0,
        stop_reason: StopReason::FixedRounds,
        commands,
        comparisons,
        environment: [("GLIBC_TUNABLES".to_string(), EVIL.to_string())].into(),
        ..Experiment::default()
    }
}

fn comparison(baseline: &str, candidate: &str, ratio: f64, verdict: Verdict) -> Comparison {
    Comparison {
        baseline: baseline.into(),
        candidate: candidate.into(),
        metric: "wall_s".into(),
        better: Default::default(),
        ratio,
        ci_low: ratio * 0.99,
        ci_high: ratio * 1.01,
        confidence: 0.95,
        look_confidence: 0.95,
        p_value: 0.001,
        verdict,
        below_threshold: false,
        n: 12,
        flags: vec![],
        explanation: None,
    }
}

/// A history of `benchmarks` benchmarks under labels v1..v3 (each label measured on its
/// own), where every third benchmark gets 20 % slower at v3, plus one interleaved
/// v1-vs-v3 experiment for the first benchmark.
fn store_history(db: &Path, benchmarks: &[String]) {
    let mut store = Store::open(Some(db.to_str().unwrap())).unwrap();
    for label in ["v1", "v2", "v3"] {
        for (i, bench) in benchmarks.iter().enumerate() {
            let slower = label == "v3" && i % 3 == 0;
            let level = 0.001 * (1.0 + i as f64) * if slower { 1.2 } else { 1.0 };
            let meta = Meta { label: label.into(), benchmark: bench.clone(), git_commit: None, source: "test".into() };
            store.save(&meta, &experiment(vec![command(label, level)], vec![], "box")).unwrap();
        }
    }
    let bench = &benchmarks[0];
    let paired = experiment(
        vec![command("v1", 0.001), command("v3", 0.0012)],
        vec![comparison("v1", "v3", 1.2, Verdict::Slower)],
        "box",
    );
    let meta = Meta { label: "v3".into(), benchmark: bench.clone(), git_commit: None, source: "test".into() };
    store.save(&meta, &paired).unwrap();
}

fn names(n: usize) -> Vec<String> {
    let mut names: Vec<String> = (0..n - 1).map(|i| format!("bench-{i:02}")).collect();
    names.push(EVIL.into());
    names
}

fn perflab() -> Command {
    Command::cargo_bin("perflab").unwrap()
}

fn report_from_store(dir: &Path, benchmarks: &[String]) -> (PathBuf, String) {
    let db = dir.join("history.db");
    store_history(&db, benchmarks);
    let out = dir.join("report.html");
    perflab()
        .args(["report", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicates::str::contains("wrote"));
    let html = std::fs::read_to_string(&out).unwrap();
    (out, html)
}

fn forest(html: &str) -> &str {
    let start = html.find("<svg class=\"forest\"").expect("a forest plot");
    &html[start..start + html[start..].find("</svg>").unwrap()]
}

#[test]
fn report_from_the_store_has_one_row_per_benchmark_and_escapes_names() {
    let dir = tempfile::tempdir().unwrap();
    let benchmarks = names(6);
    let (_, html) = report_from_store(dir.path(), &benchmarks);
    let chart = forest(&html);
    assert_eq!(chart.matches("class=\"bar\"").count(), benchmarks.len());
    assert_eq!(chart.matches("class=\"errbar\"").count(), benchmarks.len());
    // bench-00, bench-03 got 20 % slower at v3; the rest did not change.
    assert!(chart.contains("<g class=\"r slower\" data-name=\"bench-00\""));
    assert!(chart.contains("<g class=\"r slower\" data-name=\"bench-03\""));
    assert!(!chart.contains("<g class=\"r slower\" data-name=\"bench-01\""));
    // The interleaved experiment's paired interval wins over the sessions' one.
    let first = &chart[chart.find("data-name=\"bench-00\"").unwrap()..];
    assert!(first[..first.find("</title>").unwrap()].contains("paired"));
    // The other labels are separate sessions: their interval carries the session noise.
    assert!(chart.contains("separate sessions, with their session-to-session noise"));
    assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"));
    assert_eq!(html.matches("<script").count(), 1, "only the page's own script");
    assert!(html.contains("v3 vs v1"));
}

#[test]
fn report_from_json_files_treats_commands_as_labels() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, ratio) in [("parse", 1.2), ("render", 0.9)] {
        let e = experiment(
            vec![command("old", 0.01), command("new", 0.01 * ratio)],
            vec![comparison("old", "new", ratio, if ratio > 1.0 { Verdict::Slower } else { Verdict::Faster })],
            "box",
        );
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_string(&e).unwrap()).unwrap();
        files.push(path);
    }
    let out = dir.path().join("r.html");
    perflab()
        .args(["report", "--from"])
        .arg(&files[0])
        .arg("--from")
        .arg(&files[1])
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    let chart = forest(&html);
    assert!(chart.contains("<g class=\"r slower\" data-name=\"parse\""));
    assert!(chart.contains("<g class=\"r faster\" data-name=\"render\""));
    assert!(html.contains("new vs old"));
}

#[test]
fn bad_input_is_one_line_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    store_history(&db, &names(2));
    let fails = |args: &[&str], needle: &str| {
        let out = perflab().arg("report").args(args).arg("--out").arg(dir.path().join("x.html")).assert().code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    };
    let db_arg = db.to_str().unwrap();
    fails(&["--db", db_arg, "--reference", "nope"], "reference label nope has no results");
    fails(&["--db", db_arg, "--label", "v9"], "label v9 has no results");
    fails(&["--db", db_arg, "--machine", "elsewhere"], "no results from machine elsewhere");
    fails(&["--from", "/nonexistent/x.json"], "cannot read /nonexistent/x.json");
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"not\": 1}").unwrap();
    fails(&["--from", garbage.to_str().unwrap()], "is not a perflab JSON result");
    fails(&["--db", db_arg, "--metric", "instructions"], "no successful run has the metric instructions");
    let out = perflab().args(["report", "--db", db_arg, "--out", "/nonexistent/dir/r.html"]).assert().code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("cannot write /nonexistent/dir/r.html"));
    let missing = dir.path().join("missing.db");
    fails(&["--db", missing.to_str().unwrap()], "no history database at");
    assert!(!missing.exists(), "a read-only command must not create the database");
    let empty = dir.path().join("empty.db");
    drop(Store::open(Some(empty.to_str().unwrap())).unwrap());
    fails(&["--db", empty.to_str().unwrap()], "no results to report");

    // A second machine gets its own part of the page and the builds × machines table;
    // --machine keeps one.
    let mut store = Store::open(Some(db_arg)).unwrap();
    for (label, level) in [("v1", 0.002), ("v3", 0.003)] {
        let meta = Meta { label: label.into(), benchmark: "bench-00".into(), git_commit: None, source: "test".into() };
        store.save(&meta, &experiment(vec![command(label, level)], vec![], "other-box")).unwrap();
    }
    drop(store);
    let both = dir.path().join("both.html");
    perflab().args(["report", "--db", db_arg, "--out"]).arg(&both).assert().success();
    let html = std::fs::read_to_string(&both).unwrap();
    assert!(html.contains("<section id=\"matrix\">") && html.contains("v3 vs v1"), "a builds × machines table");
    assert!(html.contains("Machine 2: other-box"), "a part per machine");
    let one = dir.path().join("one.html");
    perflab().args(["report", "--db", db_arg, "--machine", "box", "--out"]).arg(&one).assert().success();
    assert!(!std::fs::read_to_string(&one).unwrap().contains("<section id=\"matrix\">"));
}

#[test]
fn report_renders_in_headless_chromium_without_errors_or_injected_script() {
    let Some(browser) = common::chromium() else {
        common::skip("chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let benchmarks = names(8);
    let (out, html) = report_from_store(dir.path(), &benchmarks);
    // The probe runs before anything else on the page: it records script errors and
    // any call to alert(), which only an unescaped benchmark name could make.
    let probe = "<script>window.__errors=[];window.onerror=function(m){window.__errors.push(String(m));};\
        window.alert=function(){document.documentElement.setAttribute('data-alerted','yes');};\
        window.addEventListener('load',function(){var r=document.documentElement;\
        r.setAttribute('data-errors',String(window.__errors.length));\
        r.setAttribute('data-bars',String(document.querySelectorAll('svg.forest rect.bar').length));\
        r.setAttribute('data-errbars',String(document.querySelectorAll('svg.forest path.errbar').length));\
        var t=[].map.call(document.querySelectorAll('svg.forest g.r text:first-of-type'),function(e){return e.textContent;});\
        r.setAttribute('data-evil-text',String(t.indexOf('\\x3cscript>alert(1)\\x3c/script>')>=0));\
        var box=document.getElementById('filter');box.value='bench-0';box.dispatchEvent(new Event('input'));\
        var shown=function(sel){return [].filter.call(document.querySelectorAll(sel),function(e){return e.style.display!=='none';}).length;};\
        r.setAttribute('data-filtered',shown('svg.forest g.r')+'/'+shown('figure.h'));});</script>";
    let probed = html.replacen("<head>", &format!("<head>{probe}"), 1);
    let page = dir.path().join("probed.html");
    std::fs::write(&page, probed).unwrap();

    let profile = tempfile::tempdir().unwrap();
    let dom = common::run_chromium(&browser, profile.path(), &["--dump-dom"], &page);
    assert!(dom.status.success(), "chromium failed: {}", String::from_utf8_lossy(&dom.stderr));
    let dom = String::from_utf8_lossy(&dom.stdout);
    let root = &dom[dom.find("<html").expect("a DOM")..];
    let root = &root[..root.find('>').unwrap()];
    assert!(root.contains("data-ready=\"1\""), "page script did not finish: {root}");
    assert!(root.contains("data-errors=\"0\""), "script errors: {root}");
    assert!(!root.contains("data-alerted"), "alert() was called: {root}");
    let n = benchmarks.len();
    assert!(root.contains(&format!("data-bars=\"{n}\"")), "{root}");
    assert!(root.contains(&format!("data-errbars=\"{n}\"")), "{root}");
    assert!(root.contains("data-evil-text=\"true\""), "the script-like name is not shown as text: {root}");
    // The name filter keeps the matching rows and history charts only.
    let matching = benchmarks.iter().filter(|b| b.contains("bench-0")).count();
    assert!(root.contains(&format!("data-filtered=\"{matching}/{matching}\"")), "{root}");

    // A screenshot of the unmodified page, kept for people to look at.
    let shot = out.with_extension("png");
    let profile = tempfile::tempdir().unwrap();
    let res = common::run_chromium(
        &browser,
        profile.path(),
        &["--window-size=1100,1600", &format!("--screenshot={}", shot.display())],
        &out,
    );
    assert!(res.status.success() && shot.exists(), "screenshot failed: {}", String::from_utf8_lossy(&res.stderr));
    if let Ok(keep) = std::env::var("PERFLAB_REPORT_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

#[test]
fn report_from_a_real_compare_json_result() {
    let spin = common::fixture("spin");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("spin.json");
    let spin = spin.to_str().unwrap();
    // Runs long enough that process creation does not dominate, and adaptive stopping
    // (not a fixed round count) so a busy machine costs rounds, not the verdict: not
    // `slower` by the look at 58 rounds only with P ≤ 2.5e-7 (tests/common/noise.rs).
    let tails = [common::noise::tail("wall_s", 10_000_000), common::noise::tail("uncontended_s", 10_000_000)];
    let p = common::noise::p_sequential_misses(6, &tails.iter().collect::<Vec<_>>(), 2.0, 58);
    assert!(p < common::noise::P_MAX, "P(fail) ≤ {p:e}");
    perflab()
        .args(["compare", "--max-time", "60", "-n", "short", "-n", "long"])
        .arg(format!("{spin} 10000000"))
        .arg(format!("{spin} 100000000"))
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let out = dir.path().join("r.html");
    perflab().args(["report", "--from"]).arg(&json).arg("--out").arg(&out).assert().success();
    let html = std::fs::read_to_string(&out).unwrap();
    // Ten times the work is slower, by the paired comparison of the interleaved rounds.
    assert!(html.contains("long vs short"));
    let chart = forest(&html);
    assert!(chart.contains("<g class=\"r slower\" data-name=\"spin\""), "{chart}");
    assert!(chart.contains("paired"));
}

/// A store written before per-run sampling kept one profile of each build of a regression
/// (`profile_changes`): the report still shows it, saying which method it used.
#[test]
fn an_older_one_profile_explanation_is_still_shown_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let mut store = Store::open(Some(db.to_str().unwrap())).unwrap();
    let paired = experiment(
        vec![command("v1", 0.001), command("v2", 0.0012)],
        vec![comparison("v1", "v2", 1.2, Verdict::Slower)],
        "box",
    );
    let meta = Meta { label: "v2".into(), benchmark: "sort".into(), git_commit: None, source: "test".into() };
    let id = store.save(&meta, &paired).unwrap();
    let row: perflab::profile::diff::Change = serde_json::from_value(serde_json::json!({
        "name": "insertion_sort", "object": "[command]", "old_samples": 100, "new_samples": 140,
        "old_share": 0.5, "new_share": 0.58, "share_change": 0.08,
        "old_s": 0.1, "new_s": 0.14, "change_s": 0.04, "contribution": 0.95
    }))
    .unwrap();
    let change = perflab::store::ProfileChange {
        metric: "wall_s".into(),
        baseline: "v1".into(),
        candidate: "v2".into(),
        functions: vec![row],
        flame_graph: None,
        warnings: vec![],
        baseline_profile: b"old".to_vec(),
        candidate_profile: b"new".to_vec(),
    };
    store.save_profile_change(id, &change).unwrap();
    drop(store);
    let out = dir.path().join("report.html");
    perflab().args(["report", "--db"]).arg(&db).arg("--out").arg(&out).assert().success();
    let html = std::fs::read_to_string(&out).unwrap();
    let section = &html[html.find("<section id=\"explained\">").expect("a Why slower section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("Explained from one profile of each build"), "{section}");
    assert!(section.contains("insertion_sort"), "{section}");
}
