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

/// What a directory holds, names sorted (to see that a refused command created nothing).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// Commands that only read refuse what is not a store with one line and exit 2, and
/// write nothing into it or beside it: an empty file stays empty, a FIFO is not opened
/// (the command would block), a directory or a device is never handed to SQLite.
#[test]
fn reading_commands_refuse_what_is_not_a_store_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("empty.db"), b"").unwrap();
    std::fs::write(d.join("text.db"), b"not a database, just words").unwrap();
    std::fs::create_dir(d.join("dir.db")).unwrap();
    let fifo = std::ffi::CString::new(d.join("fifo.db").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let before = listing(d);
    let cases = [
        ("empty.db", "an empty file"),
        ("text.db", "a file that is not a SQLite database"),
        ("dir.db", "a directory"),
        ("fifo.db", "a FIFO"),
        ("/dev/null", "a character device"),
    ];
    for (db, what) in cases {
        for command in [&["history"][..], &["export"], &["report", "-o", "r.html"], &["queue", "--list"]] {
            let out = perflab(d, db).args(command).timeout(std::time::Duration::from_secs(20)).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command:?} --db {db}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains(&format!("is not a perflab history database: it is {what}")), "{stderr}");
        }
    }
    assert_eq!(listing(d), before, "nothing created beside the refused paths");
    assert_eq!(std::fs::metadata(d.join("empty.db")).unwrap().len(), 0, "no schema written into the empty file");
    assert!(!Path::new("/dev/null-wal").exists() && !Path::new("/dev/null-shm").exists());
    // A block device, when there is one to try: refused before SQLite sees it.
    if let Some(device) = ["/dev/loop0", "/dev/sda", "/dev/vda"].into_iter().find(|p| {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device())
    }) {
        let out = perflab(d, device).arg("history").output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("it is a block device"));
        assert!(!Path::new(&format!("{device}-wal")).exists());
    }
}

/// A store at an older schema is read without migrating it: refused with how to migrate,
/// the file unchanged.
#[test]
fn reading_never_migrates_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = common::fixtures_dir().join("hyperfine-1.15.json");
    perflab(d, "s.db").args(["import", file.to_str().unwrap(), "--label", "v1"]).assert().success();
    let conn = rusqlite::Connection::open(d.join("s.db")).unwrap();
    let newest: i64 = conn.query_row("SELECT MAX(version) FROM schema_migrations", [], |r| r.get(0)).unwrap();
    conn.execute("DELETE FROM schema_migrations WHERE version = ?1", [newest]).unwrap();
    drop(conn);
    let bytes = std::fs::read(d.join("s.db")).unwrap();
    let out = perflab(d, "s.db").arg("history").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("commands that only read never migrate it"), "{stderr}");
    assert_eq!(std::fs::read(d.join("s.db")).unwrap(), bytes);
}

/// Importing the same file twice stores its experiments once; an export imported back
/// into the store it came from is recognised too, and the skip is said.
#[test]
fn importing_twice_stores_once() {
    common::pg::each_backend("import_twice", |dir, db| {
        let file = common::fixtures_dir().join("hyperfine-1.15.json");
        let file = file.to_str().unwrap();
        let first = perflab(dir, db).args(["import", file, "--label", "v1"]).output().unwrap();
        assert!(String::from_utf8_lossy(&first.stderr).contains("imported 4 benchmark results"));
        let again = perflab(dir, db).args(["import", file, "--label", "v1"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&again.stderr);
        assert!(again.status.success(), "{stderr}");
        assert!(
            stderr.contains("imported 0 benchmark results") && stderr.contains("skipped 4 already stored"),
            "{stderr}"
        );
        assert_eq!(export(dir, db, &[])["experiments"].as_array().unwrap().len(), 4);
        // Under another label they are other results.
        perflab(dir, db).args(["import", file, "--label", "v2"]).assert().success();
        assert_eq!(export(dir, db, &[])["experiments"].as_array().unwrap().len(), 8);
        // The store's own export, imported back: all 8 recognised.
        let exported = dir.join("all.json");
        perflab(dir, db).args(["export", "--json", exported.to_str().unwrap()]).assert().success();
        let back = perflab(dir, db).args(["import", exported.to_str().unwrap()]).output().unwrap();
        assert!(String::from_utf8_lossy(&back.stderr).contains("skipped 8 already stored"));
        assert_eq!(export(dir, db, &[])["experiments"].as_array().unwrap().len(), 8);
    });
}

/// An export of `count` copies of the checked-in hyperfine result's first experiment,
/// each started at another second (so each is another experiment).
fn large_export(dir: &Path, count: usize) -> std::path::PathBuf {
    let file = common::fixtures_dir().join("hyperfine-1.15.json");
    perflab(dir, "seed.db").args(["import", file.to_str().unwrap(), "--label", "v1"]).assert().success();
    let mut json = export(dir, "seed.db", &[]);
    let one = json["experiments"][0].clone();
    let many: Vec<serde_json::Value> = (0..count)
        .map(|i| {
            let mut e = one.clone();
            e["experiment"]["started_at"] = format!("2026-01-01T00:00:00.{i:06}Z").into();
            e
        })
        .collect();
    json["experiments"] = many.into();
    let path = dir.join("large.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    path
}

/// Ctrl-C stops an import between two experiments: exit 130, each stored experiment
/// whole, and importing again stores the rest (the stored ones skipped).
#[test]
fn ctrl_c_stops_an_import_and_importing_again_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let total = 4000;
    let file = large_export(d, total);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .current_dir(d)
        .args(["import", file.to_str().unwrap(), "--db", "big.db"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The store exists only after the file was checked, with the handler installed;
    // its WAL grows as experiments are stored: interrupt once some are.
    let wal_len = || std::fs::metadata(d.join("big.db-wal")).map_or(0, |m| m.len());
    while wal_len() < 256 << 10 && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stored = export(d, "big.db", &[])["experiments"].as_array().unwrap().len();
    if out.status.success() && stored == total {
        common::skip::skip("the import finished before Ctrl-C reached it");
        return;
    }
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted") && stderr.contains("importing the file again stores the rest"), "{stderr}");
    assert!(stored > 0 && stored < total, "{stored}");
    for e in export(d, "big.db", &[])["experiments"].as_array().unwrap() {
        assert_eq!(e["experiment"]["commands"][0]["runs"].as_array().unwrap().len(), 5, "stored whole");
    }
    let again = perflab(d, "big.db").args(["import", file.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("skipped {stored} already stored")), "{stderr}");
    assert_eq!(export(d, "big.db", &[])["experiments"].as_array().unwrap().len(), total);
}

/// Ctrl-C during `export --json FILE` leaves FILE as it was (the export is written
/// beside it and renamed only when whole) and exits 130.
#[test]
fn ctrl_c_stops_an_export_and_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = large_export(d, 4000);
    perflab(d, "big.db").args(["import", file.to_str().unwrap()]).assert().success();
    std::fs::write(d.join("out.json"), b"previous").unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .current_dir(d)
        .args(["export", "--db", "big.db", "--json", "out.json"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The temporary file appears once the store is open and the handler installed.
    let temporary = |d: &Path| listing(d).into_iter().any(|n| n.starts_with(".out.json.tmp-"));
    while !temporary(d) && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        common::skip::skip("the export finished before Ctrl-C reached it");
        return;
    }
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("nothing written to out.json"), "{stderr}");
    assert_eq!(std::fs::read(d.join("out.json")).unwrap(), b"previous");
    assert!(!temporary(d), "the temporary file is removed: {:?}", listing(d));
}

/// Ctrl-C during `report` stops it with exit 130 and writes nothing: no page, no
/// temporary file beside it (the page is drawn whole, then renamed into place).
#[test]
fn ctrl_c_stops_a_report_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = large_export(d, 4000);
    perflab(d, "big.db").args(["import", file.to_str().unwrap()]).assert().success();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .current_dir(d)
        .args(["report", "--db", "big.db", "--out", "page.html"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The handler is installed before the store is opened: interrupt once it is open.
    let store_open = |pid: u32| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.ends_with("big.db")))
    };
    while !store_open(child.id()) && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        common::skip::skip("the report finished before Ctrl-C reached it");
        return;
    }
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted: nothing written to page.html"), "{stderr}");
    let left: Vec<String> = listing(d).into_iter().filter(|n| n.contains("page.html")).collect();
    assert!(left.is_empty(), "no page and no temporary file: {left:?}");
}

/// An incomplete experiment (a run killed after 1 of its 5 runs) is left out of the
/// pooled points of `history` and `report` with a note naming it; with
/// `--include-incomplete` it is pooled and its point marked (incomplete). Importing its
/// export keeps it incomplete.
#[test]
fn incomplete_experiments_are_marked_and_left_out_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = common::fixtures_dir().join("hyperfine-1.15.json");
    perflab(d, "seed.db").args(["import", file.to_str().unwrap(), "--label", "v1"]).assert().success();
    let mut json = export(d, "seed.db", &["--bench", "sleep 0.001[n=1]"]);
    let complete = json["experiments"][0].clone();
    let mut killed = complete.clone();
    killed["label"] = "v2".into();
    killed["complete"] = false.into();
    killed["experiment"]["stop_reason"] = "interrupted".into();
    killed["experiment"]["started_at"] = "2026-01-02T00:00:00Z".into();
    let runs = killed["experiment"]["commands"][0]["runs"].as_array().unwrap()[..1].to_vec();
    killed["experiment"]["commands"][0]["runs"] = runs.into();
    json["experiments"] = vec![complete, killed].into();
    std::fs::write(d.join("mixed.json"), serde_json::to_vec(&json).unwrap()).unwrap();
    let out = perflab(d, "s.db").args(["import", "mixed.json"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("(1 of them incomplete, marked so)"));
    let stored = export(d, "s.db", &[]);
    let flags: Vec<bool> =
        stored["experiments"].as_array().unwrap().iter().map(|e| e["complete"].as_bool().unwrap()).collect();
    assert_eq!(flags, [true, false]);

    let out = perflab(d, "s.db").args(["history", "--json", "-"]).output().unwrap();
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = h["machines"][0]["benchmarks"][0]["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "the incomplete label is left out: {points:?}");
    assert!(h["left_out"].as_str().unwrap().contains("`sleep 0.001[n=1]` at `v2` (1 run)"), "{h}");
    let text = perflab(d, "s.db").arg("history").output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("left out 1 incomplete experiment"));

    let out = perflab(d, "s.db").args(["history", "--include-incomplete", "--json", "-"]).output().unwrap();
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = h["machines"][0]["benchmarks"][0]["points"].as_array().unwrap();
    assert_eq!((points.len(), points[1]["incomplete"].as_bool()), (2, Some(true)));
    let text = perflab(d, "s.db").args(["history", "--include-incomplete", "sleep 0.001[n=1]"]).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("v2 (incomplete)"));

    perflab(d, "s.db").args(["report", "-o", "r.html"]).assert().success();
    let page = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(page.contains("left out 1 incomplete experiment"));
    perflab(d, "s.db").args(["report", "--include-incomplete", "-o", "all.html"]).assert().success();
    let page = std::fs::read_to_string(d.join("all.html")).unwrap();
    assert!(page.contains("incomplete: runs of an experiment stopped before its end"));
}

/// On PostgreSQL too, reading never writes: `history`, `export`, `report` and `queue
/// --list` on an empty database say there is no history and create no table (the
/// session is read-only).
#[test]
fn reading_an_empty_postgres_database_creates_nothing() {
    let Some(db) = common::pg::scratch_db("read_creates_nothing") else { return };
    let dir = tempfile::tempdir().unwrap();
    for command in [&["history"][..], &["export"], &["report", "-o", "r.html"], &["queue", "--list"]] {
        let out = perflab(dir.path(), &db).args(command).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        assert!(stderr.contains("no history database at"), "{stderr}");
    }
    let mut client = postgres::Client::connect(&db, postgres::NoTls).unwrap();
    let tables: i64 = client
        .query_one("SELECT COUNT(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()", &[])
        .unwrap()
        .get(0);
    assert_eq!(tables, 0, "a reading command created tables");
    drop(client);
    common::pg::drop_scratch(&db);
}
