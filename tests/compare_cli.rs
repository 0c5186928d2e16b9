//! End-to-end tests of `perflab compare`: verdicts, outputs and every documented failure.
//!
//! Why real timed runs: these test the whole path a user takes (spawn, wait4, the
//! outputs, exit codes). Where a verdict is asserted the two commands differ tenfold, so
//! no load on a CI runner can move it; the stopping and verdict logic itself is tested
//! on the simulated executor (crates/engine/src/experiment/engine.rs, src/analysis/).

mod common;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

fn spin(n: u64) -> String {
    format!("{} {n}", common::fixture("spin").display())
}

/// Tests whose ratios depend on the machine run one at a time, so that the other tests
/// of this file do not compete with them for the two cores.
static QUIET: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn quiet() -> std::sync::MutexGuard<'static, ()> {
    QUIET.lock().unwrap_or_else(|e| e.into_inner())
}

fn json_of(output: &[u8]) -> Value {
    serde_json::from_slice(output).expect("valid JSON on stdout")
}

/// Rounds of the timed comparisons whose verdicts are asserted: fixed, so that the
/// failure probability below is that of one interval (tests/common/noise.rs).
const ROUNDS: usize = 40;

#[test]
fn a_tenfold_difference_is_slower_with_the_right_ratio() {
    let _quiet = quiet();
    let out = perflab()
        .args(["compare", "-r", &ROUNDS.to_string(), "--json", "-", "-n", "A", "-n", "B"])
        .args([&spin(10_000_000), &spin(100_000_000)])
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&out.stdout);
    assert_eq!(json["schema_version"], 2);
    let comparison = |metric: &str| json["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == metric);
    let wall = comparison("wall_s").unwrap();
    // 10× the work, ~9× the wall time with process creation (≥ e^2 = 7.4× assumed). The
    // interval misses `slower` only if 8 of the 40 rounds strayed by more than e^1.6
    // (1 of 600 did beside two burners): P ≤ 2.5e-7.
    // The chance that any of the three assertions on measured values below fails on a
    // machine as busy as two CPU burners make it (tests/common/noise.rs):
    // * the wall interval misses `slower` only if 8 of the 40 rounds strayed by more
    //   than e^1.6 (10× the work is ~9× the wall time with process creation; e^2 is
    //   assumed; 1 of 600 rounds strayed that far): ≤ 2.5e-7;
    // * the wall ratio is off by ×3 only if 12 rounds strayed that far (4 of 600): ≤ 1e-10;
    // * the CPU-time ratio (no process creation, no waiting: 9.7× with exec's 0.3 ms)
    //   leaves [8, 11.5] only if 12 rounds strayed by 10 % (4 of 600): ≤ 1e-10.
    let (wall_tail, cpu_tail) = (common::noise::tail("wall_s", 10_000_000), common::noise::tail("cpu_s", 10_000_000));
    let p = common::noise::p_interval_misses(&wall_tail, ROUNDS, 0.95, 2.0)
        + common::noise::p_estimate_off(&wall_tail, ROUNDS, 3.0f64.ln())
        + common::noise::p_estimate_off(&cpu_tail, ROUNDS, 0.1);
    assert!(p < common::noise::P_MAX, "{wall_tail:?}, {cpu_tail:?}: P(fail) ≤ {p:e}");
    assert_eq!(wall["verdict"], "slower", "{wall}");
    assert_eq!((wall["baseline"].as_str(), wall["candidate"].as_str()), (Some("A"), Some("B")));
    let ratio = wall["ratio"].as_f64().unwrap();
    assert!((3.0..30.0).contains(&ratio), "ratio {ratio}");
    assert!(wall["ci_low"].as_f64().unwrap() <= ratio && ratio <= wall["ci_high"].as_f64().unwrap());
    assert_eq!(wall["confidence"], 0.95);
    assert!(wall["p_value"].as_f64().unwrap() < 0.05);
    let cpu = comparison("cpu_s").unwrap();
    assert!((8.0..11.5).contains(&cpu["ratio"].as_f64().unwrap()), "{cpu}");

    assert_eq!(json["rounds"], ROUNDS as u64);
    for command in json["commands"].as_array().unwrap() {
        let runs = command["runs"].as_array().unwrap();
        assert_eq!(runs.len(), ROUNDS, "one run per command per round");
        for (i, run) in runs.iter().enumerate() {
            assert_eq!(run["round"], i as u64);
            assert_eq!(run["exit_code"], 0);
            assert!(run["wall_s"].as_f64().unwrap() > 0.0);
            assert!(run["user_s"].as_f64().unwrap() >= 0.0 && run["sys_s"].as_f64().unwrap() >= 0.0);
            assert!(run["max_rss_kib"].as_u64().unwrap() > 0);
        }
        assert!(command["summary"]["wall_s"]["median"].as_f64().unwrap() > 0.0);
        assert!(command["argv"].as_array().unwrap().len() == 2);
    }
    // The human report went to stderr because stdout carried the JSON (on a busy
    // machine the verdict is on uncontended_s: "× slower than A in uncontended_s [").
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("B is ") && stderr.contains("× slower than A"), "{stderr}");
}

/// The default design — looks at 6, 8, 10, 12, 15, … rounds, stopping at the first
/// decisive one — on real runs: it stops because it decided, on `slower`, and every
/// look's interval and the rounds are as the JSON says.
#[test]
fn sequential_looks_stop_on_a_tenfold_difference() {
    let _quiet = quiet();
    let out = perflab()
        .args(["compare", "--max-time", "60s", "--json", "-", "-n", "A", "-n", "B"])
        .args([&spin(10_000_000), &spin(100_000_000)])
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&out.stdout);
    // It decides on wall time, or on uncontended time when the machine is busy. By the
    // look at 58 rounds (≤ 20 s here even at a third of a CPU) the decided metric's
    // interval misses `slower` — or an earlier look decided the wrong way — only if 9
    // rounds strayed by e^1.6 (tests/common/noise.rs): P ≤ 2.5e-7.
    let tails = [common::noise::tail("wall_s", 10_000_000), common::noise::tail("uncontended_s", 10_000_000)];
    let p = common::noise::p_sequential_misses(6, &tails.iter().collect::<Vec<_>>(), 2.0, 58);
    assert!(p < common::noise::P_MAX, "P(no `slower` by 58 rounds) ≤ {p:e}");
    assert_eq!(json["stop_reason"], "decided", "{}", String::from_utf8_lossy(&out.stderr));
    let primary = json["primary_metric"].as_str().unwrap();
    assert!(["wall_s", "uncontended_s"].contains(&primary), "{primary}");
    let decided = json["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == primary).unwrap();
    assert_eq!(decided["verdict"], "slower", "{decided}");
    let rounds = json["rounds"].as_u64().unwrap();
    assert!((6..=58).contains(&rounds), "{rounds} rounds");
    for command in json["commands"].as_array().unwrap() {
        assert_eq!(command["runs"].as_array().unwrap().len() as u64, rounds, "one run per command per round");
    }
    // A look's interval is wider than the fixed 95 % one: the level it was taken at.
    assert!(decided["look_confidence"].as_f64().unwrap() > 0.95, "{decided}");
}

#[test]
fn rounds_are_interleaved_in_random_order_with_shared_padding() {
    let _quiet = quiet();
    let out = perflab()
        // A fixed seed: with a random one, all 12 rounds in one order happens once in 2,048.
        .args(["compare", "--rounds", "12", "--seed", "7", "--json", "-", &spin(1000), &spin(2000)])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let json = json_of(&out);
    assert_eq!(json["rounds"], 12);
    assert_eq!(json["stop_reason"], "fixed_rounds");
    let runs: Vec<&Vec<Value>> =
        json["commands"].as_array().unwrap().iter().map(|c| c["runs"].as_array().unwrap()).collect();
    let first_positions: Vec<u64> = runs[0].iter().map(|r| r["position"].as_u64().unwrap()).collect();
    assert!(first_positions.contains(&0) && first_positions.contains(&1), "both orders occur: {first_positions:?}");
    for (a, b) in runs[0].iter().zip(runs[1]) {
        assert_eq!(a["env_pad_bytes"], b["env_pad_bytes"], "padding is shared within a round");
        assert_ne!(a["position"], b["position"]);
    }
    let pads: std::collections::HashSet<u64> = runs[0].iter().map(|r| r["env_pad_bytes"].as_u64().unwrap()).collect();
    assert!(pads.len() > 1, "padding varies across rounds");
}

#[test]
fn same_seed_gives_the_same_schedule() {
    let _quiet = quiet();
    let order = |seed: &str| {
        let out =
            perflab().args(["compare", "-r", "8", "--seed", seed, "--json", "-", "true", "true -x"]).output().unwrap();
        let json = json_of(&out.stdout);
        json["commands"][0]["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["position"].clone(), r["env_pad_bytes"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(order("42"), order("42"));
}

#[test]
fn csv_and_markdown_outputs() {
    let _quiet = quiet();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("runs.csv");
    let md = dir.path().join("pr.md");
    perflab()
        .args([
            "compare",
            "-r",
            "6",
            "--csv",
            csv.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
            "-n",
            "old",
            "-n",
            "new",
            &spin(1000),
            &spin(1000),
        ])
        .assert()
        .success();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("command,round,position,wall_s,user_s,sys_s,max_rss_kib"));
    assert_eq!(lines.count(), 12);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("| old |") && md.contains("| new | wall_s |"), "{md}");
}

#[test]
fn output_is_discarded_unless_asked() {
    let _quiet = quiet();
    let args = ["compare", "-r", "2", "-n", "a", "-n", "b", "echo hello-from-a", "echo hello-from-b"];
    let shown = perflab().args(args).arg("--show-output").output().unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("hello-from-a"));
    let hidden = perflab().args(args).output().unwrap();
    assert!(!String::from_utf8_lossy(&hidden.stdout).contains("hello-from"));
}

#[test]
fn shell_mode_runs_through_sh() {
    // A bare `--shell` before `--` (or an option) means /bin/sh; `--shell X` names X.
    let _quiet = quiet();
    perflab()
        .args(["compare", "-r", "3", "--shell", "--", "test -n \"$PERFLAB_PAD$HOME\" && true", "true | true"])
        .assert()
        .success();
}

#[test]
fn a_missing_program_fails_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    perflab()
        .args(["compare", &format!("touch {}", marker.display()), "no-such-program-xyz --flag"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("`no-such-program-xyz` not found").and(predicate::str::contains('\n').count(1)),
        );
    assert!(!marker.exists(), "nothing ran");
}

#[test]
fn a_non_executable_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.txt");
    std::fs::write(&file, "x").unwrap();
    perflab()
        .args(["compare", "true", file.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not executable"));
}

#[test]
fn bad_options_are_usage_errors() {
    perflab()
        .args(["compare", "--fail-if-slower", "true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("needs a second command").and(predicate::str::contains('\n').count(1)));
    perflab()
        .args(["compare", "--threshold", "abc", "true", "true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a percentage"));
    perflab().args(["compare", "--max-time", "-3", "true", "true"]).assert().code(2);
    perflab().args(["compare", "--confidence", "120", "true", "true"]).assert().code(2);
    perflab()
        .args(["compare", "--metric", "bogus", "true", "true -x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown metric `bogus`"));
    perflab()
        .args(["compare", "true", "echo 'unbalanced"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot split"));
    perflab().args(["compare", "-n", "same", "-n", "same", "true", "false"]).assert().code(2);
    perflab()
        .args(["compare", "--json", "/nonexistent-dir/x.json", "-r", "2", "true", "true -x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot write"));
}

#[test]
fn a_failing_command_stops_with_its_stderr() {
    let _quiet = quiet();
    perflab()
        .args(["compare", "--shell", "--", "true", "echo something broke >&2; exit 4"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("exited with code 4").and(predicate::str::contains("something broke")))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn ignore_failure_keeps_going() {
    let _quiet = quiet();
    let out = perflab()
        .args(["compare", "-r", "4", "--ignore-failure", "--json", "-", "true", "false"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let json = json_of(&out);
    assert_eq!(json["commands"][1]["runs"][0]["exit_code"], 1);
    assert_eq!(json["commands"][1]["runs"].as_array().unwrap().len(), 4);
}

#[test]
fn a_killed_command_is_reported_as_such() {
    let _quiet = quiet();
    perflab()
        .args(["compare", "--shell", "--", "true", "kill -SEGV $$"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("killed by signal 11 (SIGSEGV)"));
}

#[test]
fn timeout_kills_the_run() {
    let _quiet = quiet();
    perflab()
        .args(["compare", "--timeout", "200ms", "true", "sleep 5"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("timed out"));
}

#[test]
fn the_gate_trips_on_a_real_regression_only() {
    let _quiet = quiet();
    // Ten times the work (~9× the wall time): on the default sequential design the gate
    // (1 %) trips — or fails closed, also exit 1 — unless the decided metric's interval
    // failed to clear 1 by the look at 58 rounds, P ≤ 2.5e-7. Three times the work (at
    // most 3× the time) under a gate at +999 % (11×) trips only if a look's interval
    // clears 11 within its 200 rounds, which takes most of its rounds straying by e^1.1
    // or more (4 of 600 did beside two burners) (tests/common/noise.rs).
    let tails = [common::noise::tail("wall_s", 10_000_000), common::noise::tail("uncontended_s", 10_000_000)];
    let tails: Vec<_> = tails.iter().collect();
    let p = common::noise::p_sequential_misses(6, &tails, 2.0, 58)
        + common::noise::p_sequential_crosses(6, &tails, (11.0f64 / 3.0).ln(), 200);
    assert!(p < common::noise::P_MAX, "P(fail) ≤ {p:e}");
    perflab()
        .args(["compare", "--fail-if-slower", "--", &spin(10_000_000), &spin(100_000_000)])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("gate"));
    perflab()
        .args(["compare", "--fail-if-slower=999", "--max-rounds", "200", &spin(10_000_000), &spin(30_000_000)])
        .assert()
        .success();
}

#[test]
fn ctrl_c_keeps_the_partial_results() {
    let _quiet = quiet();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("partial.json");
    let csv = dir.path().join("partial.csv");
    let bin = assert_cmd::cargo::cargo_bin("perflab");
    let child = std::process::Command::new(bin)
        .args([
            "compare",
            "--max-time",
            "60",
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "sleep 0.05",
            "sleep 0.06",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some rounds are on disk (the CSV is written as runs finish), then interrupt.
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&csv).is_ok_and(|t| t.lines().count() > 6) {
        assert!(started.elapsed().as_secs() < 60, "no 6 runs written within 60 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result["stop_reason"], "interrupted");
    let runs = result["commands"][0]["runs"].as_array().unwrap().len();
    assert!(runs >= 3, "partial runs kept: {runs}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("sleep 0.05 (baseline)"), "the table is printed");
}

#[test]
fn ctrl_c_kills_the_running_command_at_once() {
    let _quiet = quiet();
    let marker = format!("sleep {}.{}", 30 + std::process::id() % 7, std::process::id() % 1000);
    let bin = assert_cmd::cargo::cargo_bin("perflab");
    let mut child = std::process::Command::new(bin)
        .args(["compare", "--warmup", "0", "--shell", "--", "sleep 0.01", &format!("{marker}; true")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Anchored: perflab's own command line holds the marker too, and a signal sent before
    // perflab is under way ends it the default way, not with 130.
    let pattern = format!("^{marker}$");
    let running = || std::process::Command::new("pgrep").args(["-f", &pattern]).output().unwrap().status.success();
    let started = std::time::Instant::now();
    while !running() {
        assert!(started.elapsed().as_secs() < 60, "the long command did not start within 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(!running(), "the command's process group was killed with perflab's interrupt");
}
