//! `perflab import` / `export` / `history` through the binary, on SQLite and PostgreSQL.

mod common;

use assert_cmd::Command;
use std::path::Path;

fn perflab(dir: &Path, db: &str) -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.current_dir(dir).env("PERFLAB_DB", db).env_remove("CI");
    cmd
}

fn export(dir: &Path, db: &str, args: &[&str]) -> serde_json::Value {
    let out = perflab(dir, db).arg("export").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A file written by a real `hyperfine 1.15 -N --runs 5 --export-json … -P n 1 2 'sleep 0.00{n}' true`.
#[test]
fn imports_checked_in_hyperfine_export() {
    common::pg::each_backend("hf_fixture", |dir, db| {
        let file = common::fixtures_dir().join("hyperfine-1.15.json");
        perflab(dir, db).args(["import", file.to_str().unwrap(), "--label", "v1"]).assert().success();
        let json = export(dir, db, &[]);
        let exps = json["experiments"].as_array().unwrap();
        let names: Vec<&str> = exps.iter().map(|e| e["benchmark"].as_str().unwrap()).collect();
        assert_eq!(names, ["sleep 0.001[n=1]", "true[n=1]", "sleep 0.002[n=2]", "true[n=2]"]);
        let source: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for (e, r) in exps.iter().zip(source["results"].as_array().unwrap()) {
            let runs = e["experiment"]["commands"][0]["runs"].as_array().unwrap();
            let walls: Vec<f64> = runs.iter().map(|r| r["wall_s"].as_f64().unwrap()).collect();
            let times: Vec<f64> = r["times"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
            assert_eq!(walls, times);
            assert_eq!(e["experiment"]["commands"][0]["summary"]["wall_s"]["median"], r["median"]);
            assert_eq!(e["label"], "v1");
        }
    });
}

/// A fresh hyperfine run on this machine (hyperfine must be installed when CI=true).
#[test]
fn imports_a_fresh_hyperfine_run() {
    if !common::have("hyperfine", "apt-get install hyperfine") {
        return;
    }
    let spin = common::fixture("spin");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hf.json");
    let status = std::process::Command::new("hyperfine")
        .args(["-N", "--runs", "4", "--warmup", "1", "--style", "none", "--export-json"])
        .arg(&json)
        .arg(format!("{} 100000", spin.display()))
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    perflab(dir.path(), db)
        .args(["import", json.to_str().unwrap(), "--label", "fresh", "--this-machine"])
        .assert()
        .success()
        .stderr(predicates::str::contains("imported 1 benchmark result (4 runs) under label `fresh`"));
    let exported = export(dir.path(), db, &["--label", "fresh"]);
    let e = &exported["experiments"][0];
    assert_eq!(e["experiment"]["commands"][0]["runs"].as_array().unwrap().len(), 4);
    assert_eq!(e["experiment"]["machine"], serde_json::to_value(perflab::machine::detect()).unwrap());
}

#[test]
fn export_then_import_round_trips() {
    common::pg::each_backend("roundtrip_cli", |dir, db| {
        let file = common::fixtures_dir().join("hyperfine-1.15.json");
        perflab(dir, db).args(["import", file.to_str().unwrap(), "--label", "a"]).assert().success();
        perflab(dir, db).args(["export", "--json", "out.json"]).assert().success();
        perflab(dir, db).args(["import", "out.json", "--label", "b"]).assert().success();
        let a = export(dir, db, &["--label", "a"]);
        let b = export(dir, db, &["--label", "b"]);
        let experiments = |v: &serde_json::Value| -> Vec<serde_json::Value> {
            v["experiments"].as_array().unwrap().iter().map(|e| e["experiment"].clone()).collect()
        };
        assert_eq!(experiments(&a), experiments(&b));
        assert_eq!(experiments(&a).len(), 4);
    });
}

#[test]
fn import_errors_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    std::fs::write(dir.path().join("bad.json"), "{\"something\": 1}").unwrap();
    std::fs::write(dir.path().join("notjson.json"), "results: 1").unwrap();
    std::fs::write(dir.path().join("hf.json"), "{\"results\": [{\"command\": \"x\"}]}").unwrap();
    let file = common::fixtures_dir().join("hyperfine-1.15.json");
    let cases: [(&[&str], &str); 5] = [
        (&["import", "missing.json"], "cannot read missing.json"),
        (
            &["import", "bad.json", "--label", "x"],
            "bad.json: expected hyperfine --export-json output (`results`), perflab compare/run --json output",
        ),
        (&["import", "notjson.json"], "notjson.json: not JSON"),
        (&["import", "hf.json", "--label", "x"], "hf.json: result 1 (`x`) has no per-run `times`"),
        (&["import", file.to_str().unwrap()], "is a hyperfine file: pass --label"),
    ];
    for (args, message) in cases {
        let out = perflab(dir.path(), db).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

/// Stores `walls` as the runs of benchmark `bench` under `label`, measured on `host`.
fn save(db: &str, label: &str, bench: &str, host: &str, walls: &[f64]) {
    use perflab::model::*;
    let machine = Machine { hostname: host.into(), cpu_model: "cpu".into(), cores: 2, ..Machine::default() };
    let runs: Vec<Run> = walls
        .iter()
        .enumerate()
        .map(|(i, &w)| Run {
            round: i as u32,
            wall_s: w,
            exit: ExitInfo { exit_code: Some(0), ..ExitInfo::default() },
            ..Run::default()
        })
        .collect();
    let experiment = Experiment {
        perflab_version: "test".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        machine,
        settings: Settings {
            warmup_rounds: 0,
            min_rounds: 1,
            fixed_rounds: Some(walls.len() as u32),
            max_rounds: 100,
            max_time_s: 1.0,
            env_padding: false,
            ..Default::default()
        },
        rounds: walls.len() as u32,
        stop_reason: StopReason::FixedRounds,
        commands: vec![CommandResult {
            name: bench.into(),
            argv: vec![bench.into()],
            command_line: bench.into(),
            parameters: Default::default(),
            runs,
            summary: Default::default(),
        }],
        ..Experiment::default()
    };
    let meta =
        perflab::store::Meta { label: label.into(), benchmark: bench.into(), git_commit: None, source: "test".into() };
    perflab::store::Store::open(Some(db)).unwrap().save(&meta, &experiment).unwrap();
}

#[test]
fn history_shows_labels_in_order_machines_apart_and_the_shift() {
    common::pg::each_backend("history", |dir, db| {
        for i in 0..12 {
            let level = if i < 7 { 0.010 } else { 0.013 };
            let walls: Vec<f64> = (0..7).map(|k| level * (1.0 + 0.001 * ((i * 3 + k) % 5) as f64)).collect();
            save(db, &format!("r{i:02}"), "parse", "box1", &walls);
            save(db, &format!("r{i:02}"), "render", "box1", &[0.02; 7]);
        }
        save(db, "r11", "parse", "box2", &[0.5; 7]);

        let out = perflab(dir, db).args(["history", "--json", "-"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let machines = h["machines"].as_array().unwrap();
        assert_eq!(machines.len(), 2, "two machines are never pooled");
        let parse = &machines[0]["benchmarks"][0];
        assert_eq!(parse["name"], "parse");
        let labels: Vec<&str> =
            parse["points"].as_array().unwrap().iter().map(|p| p["label"].as_str().unwrap()).collect();
        assert_eq!(labels, (0..12).map(|i| format!("r{i:02}")).collect::<Vec<_>>());
        let shifts = parse["change_points"].as_array().unwrap();
        assert_eq!(shifts.len(), 1, "{shifts:?}");
        assert_eq!(shifts[0]["label"], "r07");
        assert!(machines[0]["benchmarks"][1]["change_points"].as_array().unwrap().is_empty());

        let out = perflab(dir, db).args(["history"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("2 different machines"), "{text}");
        assert!(text.contains("at `r07`"), "{text}");

        let out = perflab(dir, db).args(["history", "parse", "--machine", "box1"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("different machines"), "{text}");
        assert!(text.contains("◀ shift"), "{text}");

        let out = perflab(dir, db)
            .args(["history", "parse", "--machine", "box1", "--last", "3", "--json", "-"])
            .output()
            .unwrap();
        let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let labels: Vec<&str> = h["machines"][0]["benchmarks"][0]["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["label"].as_str().unwrap())
            .collect();
        assert_eq!(labels, ["r09", "r10", "r11"]);

        let out = perflab(dir, db).args(["history", "nothing-like-this"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
    });
}
