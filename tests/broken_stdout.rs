//! A broken stdout, per command: a full disk (`> /dev/full`) and a pipe whose reader
//! left (`| head -1`, here a pipe whose read end is closed before perflab writes). Never
//! a panic; every file output and stored run is written first; then one line on stderr
//! and exit 2 for a full disk, silence and exit 141 for a closed pipe (README, exit codes).

mod common;

use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// How stdout is broken.
#[derive(Debug, Clone, Copy)]
enum Broken {
    /// `> /dev/full`: every write fails with ENOSPC.
    Full,
    /// A pipe without a reader: every write fails with EPIPE.
    Closed,
}

const BOTH: [Broken; 2] = [Broken::Full, Broken::Closed];

fn stdout_of(broken: Broken) -> Stdio {
    match broken {
        Broken::Full => Stdio::from(File::options().write(true).open("/dev/full").expect("/dev/full")),
        Broken::Closed => {
            let mut fds = [0; 2];
            // SAFETY: pipe fills two descriptors we then own.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            // SAFETY: both descriptors are ours; the read end is closed at once.
            let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            drop(read);
            Stdio::from(write)
        }
    }
}

fn perflab(dir: &Path, broken: Broken, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perflab"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("PERFLAB_DB", dir.join("h.db"))
        .stdin(Stdio::null())
        .stdout(stdout_of(broken))
        .stderr(Stdio::piped())
        .output()
        .expect("run perflab")
}

/// The documented ending: exit 2 with one line about stdout, or exit 141 and no word.
fn assert_broken_stdout_reported(out: &Output, broken: Broken, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    let about_stdout: Vec<&str> = stderr.lines().filter(|l| l.contains("standard output")).collect();
    match broken {
        Broken::Full => {
            assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
            assert_eq!(about_stdout.len(), 1, "{what}: one line: {stderr}");
            assert!(
                about_stdout[0].starts_with("perflab: error: cannot write to standard output:"),
                "{what}: {stderr}"
            );
        }
        Broken::Closed => {
            assert_eq!(out.status.code(), Some(141), "{what}: {stderr}");
            assert!(about_stdout.is_empty() && !stderr.contains("error"), "{what}: silent: {stderr}");
        }
    }
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn compare_writes_every_file_before_the_broken_stdout() {
    for broken in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let out = perflab(
            dir.path(),
            broken,
            &[
                "compare",
                "-r",
                "3",
                "--json",
                "r.json",
                "--export-json",
                "h.json",
                "--export-csv",
                "h.csv",
                "--markdown",
                "r.md",
                "--csv",
                "runs.csv",
                "--save",
                "true",
                "true 1",
            ],
        );
        assert_broken_stdout_reported(&out, broken, "compare");
        assert_eq!(json(&dir.path().join("r.json"))["commands"].as_array().unwrap().len(), 2);
        assert_eq!(json(&dir.path().join("h.json"))["results"].as_array().unwrap().len(), 2);
        assert_eq!(std::fs::read_to_string(dir.path().join("h.csv")).unwrap().lines().count(), 3);
        assert!(std::fs::read_to_string(dir.path().join("r.md")).unwrap().contains("| true 1 |"));
        assert_eq!(std::fs::read_to_string(dir.path().join("runs.csv")).unwrap().lines().count(), 7);
        assert!(String::from_utf8_lossy(&out.stderr).contains("saved `true vs true 1`"), "stored too");
    }
}

#[test]
fn stat_writes_its_json_before_the_broken_stdout() {
    for broken in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let out =
            perflab(dir.path(), broken, &["stat", "-r", "2", "--json", "s.json", "--export-json", "h.json", "true"]);
        assert_broken_stdout_reported(&out, broken, "stat");
        assert_eq!(json(&dir.path().join("s.json"))["rounds"], 2);
        assert_eq!(json(&dir.path().join("h.json"))["results"][0]["times"].as_array().unwrap().len(), 2);
    }
}

/// A suite of three benchmarks; `run` goes on to all of them whatever stdout does.
fn suite(dir: &Path) {
    let spin = common::fixture("spin");
    let mut text = String::new();
    for name in ["one", "two", "three"] {
        text += &format!("[[benchmark]]\nname = \"{name}\"\ncommand = \"{} 1000\"\n", spin.display());
    }
    std::fs::write(dir.join("perflab.toml"), text).unwrap();
}

#[test]
fn run_goes_on_to_the_other_benchmarks_and_stores_them_all() {
    for broken in BOTH {
        let dir = tempfile::tempdir().unwrap();
        suite(dir.path());
        let out = perflab(dir.path(), broken, &["run", "--label", "v1", "-r", "3", "--json", "run.json"]);
        assert_broken_stdout_reported(&out, broken, "run");
        assert!(String::from_utf8_lossy(&out.stderr).contains("stored 3 benchmark results"), "{out:?}");
        assert_eq!(json(&dir.path().join("run.json")).as_array().unwrap().len(), 3);
        // What is stored is all there: `export` to a file reads it back.
        let export = Command::new(env!("CARGO_BIN_EXE_perflab"))
            .args(["export", "--json", "all.json"])
            .current_dir(dir.path())
            .env("PERFLAB_DB", dir.path().join("h.db"))
            .output()
            .unwrap();
        assert!(export.status.success(), "{export:?}");
        assert_eq!(json(&dir.path().join("all.json"))["experiments"].as_array().unwrap().len(), 3);

        let listed = perflab(dir.path(), broken, &["run", "--list"]);
        assert_broken_stdout_reported(&listed, broken, "run --list");
        let history = perflab(dir.path(), broken, &["history"]);
        assert_broken_stdout_reported(&history, broken, "history");
        let exported = perflab(dir.path(), broken, &["export"]);
        assert_broken_stdout_reported(&exported, broken, "export");
    }
}

#[test]
fn completions_and_man_pages_end_with_the_documented_code() {
    let dir = tempfile::tempdir().unwrap();
    for broken in BOTH {
        for args in [vec!["completions", "bash"], vec!["man"], vec!["compare", "--help"], vec![]] {
            let out = perflab(dir.path(), broken, &args);
            assert_broken_stdout_reported(&out, broken, &format!("{args:?}"));
        }
    }
}

#[test]
fn profile_writes_its_flame_graph_and_show_its_json_before_the_broken_stdout() {
    let spin = common::fixture("spin");
    for broken in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let profiled = perflab(
            dir.path(),
            broken,
            &[
                "profile",
                "-g",
                "-o",
                "p.profile",
                "--flamegraph",
                "f.svg",
                "--folded",
                "f.folded",
                "--",
                spin.to_str().unwrap(),
                "20000000",
            ],
        );
        assert_broken_stdout_reported(&profiled, broken, "profile");
        assert!(std::fs::read_to_string(dir.path().join("f.svg")).unwrap().contains("<svg"), "the flame graph");
        assert!(dir.path().join("f.folded").exists() && dir.path().join("p.profile").exists());
        let shown = perflab(dir.path(), broken, &["show", "p.profile", "--json", "s.json"]);
        assert_broken_stdout_reported(&shown, broken, "show");
        assert!(json(&dir.path().join("s.json"))["samples"].as_u64().is_some());
    }
}
