//! What a run reports about itself on a real machine: its true peak memory in every
//! command (checked against GNU time), and its run-queue wait beside busy neighbours.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON on stdout")
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Every run's value of `metric` in an experiment's JSON.
fn run_values(experiment: &Value, metric: &str) -> Vec<f64> {
    experiment["commands"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["runs"].as_array().unwrap().iter())
        .filter_map(|r| r.get(metric).or_else(|| r["counters"].get(metric).and_then(|c| c.get("value"))))
        .filter_map(Value::as_f64)
        .collect()
}

/// Tests that load or measure the machine run one at a time.
static QUIET: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn quiet() -> std::sync::MutexGuard<'static, ()> {
    QUIET.lock().unwrap_or_else(|e| e.into_inner())
}

/// GNU time's "Maximum resident set size" of `argv`, median of three runs.
fn gnu_time_peak_kib(argv: &[&str]) -> f64 {
    let runs = (0..3)
        .map(|_| {
            let out = std::process::Command::new("/usr/bin/time").arg("-f").arg("%M").args(argv).output().unwrap();
            assert!(out.status.success(), "/usr/bin/time {argv:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stderr).trim().lines().last().unwrap().parse::<f64>().unwrap()
        })
        .collect();
    median(runs)
}

#[test]
fn peak_memory_is_the_programs_own_in_every_command() {
    let _quiet = quiet();
    if !Path::new("/usr/bin/time").exists() {
        panic!("GNU time is needed as the reference (scripts/test installs the `time` package)");
    }
    let touch = common::fixture("touch_mib");
    let touch = touch.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for mib in [2, 8, 32] {
        let command = format!("{touch} {mib}");
        let reference = gnu_time_peak_kib(&[touch, &mib.to_string()]);
        // Within 5 %, or 1.5 MiB for small programs (GNU time's own floor is ~1 MiB).
        let close = |what: &str, kib: f64| {
            let tolerance = (reference * 0.05).max(1536.0);
            assert!(
                (kib - reference).abs() <= tolerance,
                "{what} reports {kib} KiB for a {mib} MiB program; GNU time: {reference} KiB"
            );
        };
        let compare =
            json_of(&perflab().args(["compare", "-r", "3", "--json", "-", &command, &command]).output().unwrap());
        close("compare", median(run_values(&compare, "max_rss_kib")));
        let counted =
            perflab().args(["compare", "-r", "3", "-e", "task-clock", "--json", "-", &command, &command]).output();
        close("compare -e", median(run_values(&json_of(&counted.unwrap()), "max_rss_kib")));
        let stat = json_of(&perflab().args(["stat", "-r", "3", "--json", "-", &command]).output().unwrap());
        close("stat", median(run_values(&stat, "max_rss_kib")));

        let db = dir.path().join("h.db");
        std::fs::write(
            dir.path().join("perflab.toml"),
            format!("[defaults]\nrounds = 3\n[[benchmark]]\nname = \"touch{mib}\"\ncommand = \"{command}\"\n"),
        )
        .unwrap();
        let run =
            perflab().current_dir(dir.path()).env("PERFLAB_DB", &db).args(["run", "--label", "x"]).output().unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let export = perflab()
            .current_dir(dir.path())
            .env("PERFLAB_DB", &db)
            .args(["export", "--bench", &format!("touch{mib}")])
            .output()
            .unwrap();
        let stored = json_of(&export);
        close("run (stored)", median(run_values(&stored["experiments"][0]["experiment"], "max_rss_kib")));
    }
}

/// Two spinning processes per CPU until dropped.
struct Neighbours(Vec<std::process::Child>);

impl Neighbours {
    fn start() -> Neighbours {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let spin = common::fixture("spin");
        Neighbours(
            (0..2 * cpus).map(|_| std::process::Command::new(&spin).arg("100000000000").spawn().unwrap()).collect(),
        )
    }
}

impl Drop for Neighbours {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn beside_busy_neighbours_the_wait_is_measured_and_removed() {
    let _quiet = quiet();
    let spin = format!("{} 30000000", common::fixture("spin").display());
    // The premise, not the measurement, can fail: once in about ten experiments beside a
    // third spinner in the same session, all 24 runs ran without waiting (1.2 s for 12
    // rounds instead of 3 s: wall time equal to CPU time, and a wait of 0.7 % measured).
    // So up to three experiments, until the neighbours did make the runs wait.
    let (out, e, _) = (0..3)
        .map(|_| {
            let neighbours = Neighbours::start();
            let out = perflab().args(["compare", "-r", "12", "--json", "-", &spin, &spin]).output().unwrap();
            drop(neighbours);
            let e = json_of(&out);
            let (walls, waits) = (run_values(&e, "wall_s"), run_values(&e, "runq_wait_s"));
            assert_eq!(waits.len(), walls.len(), "every run of a single-threaded program has its wait");
            let share = waits.iter().sum::<f64>() / walls.iter().sum::<f64>();
            (out, e, share)
        })
        .find(|(_, _, share)| *share > 0.2)
        .expect("two spinning neighbours per CPU leave the run waiting in one of three experiments");
    // A CPU-bound program's time without the wait is its CPU time (plus exec and exit).
    let uncontended = run_values(&e, "uncontended_s");
    let cpu: Vec<f64> = e["commands"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["runs"].as_array().unwrap().iter())
        .map(|r| r["user_s"].as_f64().unwrap() + r["sys_s"].as_f64().unwrap())
        .collect();
    // The median over 24 runs leaves [0.97, 1.05) only if 12 runs did: beside four such
    // spinners 8 of 200 runs did (the wait read from schedstat can miss or overcount a
    // few ms: docs/statistics.md, Run-queue wait) — P ≤ 1e-6 (tests/common/noise.rs).
    let p = common::noise::at_least(12, 24, common::noise::upper_bound(8, 200));
    assert!(p < common::noise::P_MAX, "P(fail) ≤ {p:e}");
    let ratio = median(uncontended.iter().zip(&cpu).map(|(u, c)| u / c).collect());
    assert!((0.97..1.05).contains(&ratio), "uncontended / cpu = {ratio}");
    assert_eq!(e["primary_metric"], "uncontended_s", "{}", String::from_utf8_lossy(&out.stderr));
    let warnings = e["warnings"].to_string();
    assert!(warnings.contains("was waiting for a CPU; deciding on uncontended_s"), "{warnings}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("runq wait"),
        "the table (on stderr with --json -) shows the wait"
    );
}

/// Run perflab as user `nobody` (only possible as root).
fn as_nobody(args: &[&str]) -> Option<std::process::Output> {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        return None;
    }
    let bin = assert_cmd::cargo::cargo_bin("perflab");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(bin)
        .args(args)
        .output()
        .unwrap();
    Some(out)
}

#[test]
fn threads_and_children_need_a_cgroup_and_are_never_guessed() {
    let tasks = format!("{} 2000000", common::fixture("profile_tasks").display());
    let spin = format!("{} 2000000", common::fixture("spin").display());
    let e = json_of(&perflab().args(["compare", "-r", "3", "--json", "-", &tasks, &spin]).output().unwrap());
    let source = e["environment"]["run_queue_wait"].as_str().unwrap().to_string();
    let tasks_wait = &e["commands"][0]["runs"][0]["counters"]["runq_wait_s"];
    if source.contains("cpu.pressure") {
        assert_eq!(tasks_wait["supported"], true, "the cgroup covers threads and children: {tasks_wait}");
    } else {
        assert_eq!(tasks_wait["supported"], false, "{source}");
    }
    let Some(out) = as_nobody(&["compare", "-r", "3", "--json", "-", &tasks, &spin]) else {
        common::skip_part("the unprivileged half", "running as user nobody needs root");
        return;
    };
    let e = json_of(&out);
    let source = e["environment"]["run_queue_wait"].as_str().unwrap();
    assert!(source.contains("have none: cannot create a cgroup"), "nobody cannot create a cgroup here: {source}");
    let tasks_wait = &e["commands"][0]["runs"][0]["counters"]["runq_wait_s"];
    assert_eq!(tasks_wait["supported"], false);
    let reason = tasks_wait["reason"].as_str().unwrap();
    assert!(reason.contains("ran other threads or processes"), "{reason}");
    let spin_wait = &e["commands"][1]["runs"][0]["counters"]["runq_wait_s"];
    assert_eq!(spin_wait["supported"], true, "a single-threaded program needs no cgroup: {spin_wait}");
    // With the JSON on stdout, the table (and its list of what is not supported) is on stderr.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not supported here:\n") && stderr.contains("\n  runq_wait_s: the command ran other threads"),
        "{stderr}"
    );
}
