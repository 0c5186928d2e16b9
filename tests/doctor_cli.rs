//! `perflab doctor`: the machine's checks, a command's A/A calibration stored with the
//! machine fingerprint, compare's warning from it, and the usual one-line errors.

mod common;

use assert_cmd::Command;
use serde_json::Value;

fn perflab(db: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1").env("PERFLAB_DB", db);
    cmd
}

fn spin(n: u64) -> String {
    format!("{} {n}", common::fixture("spin").display())
}

#[test]
fn every_check_has_a_finding_and_warnings_have_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    let out = perflab(&dir.path().join("h.db")).args(["doctor", "--json", "-"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    let checks: Vec<&str> = findings.iter().map(|f| f["check"].as_str().unwrap()).collect();
    for expected in [
        "frequency governor",
        "turbo boost",
        "SMT siblings",
        "virtualization",
        "busy neighbours",
        "perf events",
        "transparent huge pages",
        "address-space randomization",
        "CPU isolation",
        "run-queue wait",
    ] {
        assert!(checks.contains(&expected), "{expected} missing from {checks:?}");
    }
    for f in findings {
        assert!(!f["finding"].as_str().unwrap().is_empty(), "{f}");
        if f["status"] == "warn" {
            assert!(f["fix"].as_str().is_some_and(|fix| !fix.is_empty()), "a warning without a fix: {f}");
        }
    }
    assert!(report["fingerprint"].as_str().unwrap().len() == 12);
    assert!(!dir.path().join("h.db").exists(), "no command, nothing stored");
}

#[test]
fn a_calibration_is_stored_and_compare_warns_below_its_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let out = perflab(&db)
        .args(["doctor", "--calibrate-for", "1s", "--effect", "2", "--json", "-", "--", &spin(2_000_000)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calibration = &report["calibration"];
    assert!(calibration["rounds"].as_u64().unwrap() >= 12, "{calibration}");
    assert!(calibration["paired_sigma"].as_f64().unwrap() > 0.0, "{calibration}");
    let budgets: Vec<f64> =
        calibration["resolution"].as_array().unwrap().iter().map(|r| r["budget_s"].as_f64().unwrap()).collect();
    assert_eq!(budgets, [10.0, 30.0, 60.0]);
    // More time resolves finer effects.
    let effects: Vec<f64> = calibration["resolution"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["detectable_effect"].as_f64().unwrap())
        .collect();
    assert!(effects[0] > effects[1] && effects[1] > effects[2], "{effects:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("saved with the machine fingerprint"), "{stderr}");
    assert!(stderr.contains("round-to-round noise") && stderr.contains("effect needs"), "{stderr}");

    // A threshold far below the calibrated resolution draws a warning (and is in the JSON).
    let out = perflab(&db)
        .args([
            "compare",
            "--threshold",
            "0.001",
            "--max-time",
            "2s",
            "--json",
            "-",
            &spin(1_000_000),
            &spin(1_000_000),
        ])
        .output()
        .unwrap();
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = e["warnings"].to_string();
    assert!(warnings.contains("finer than this machine resolved within 2 s"), "{warnings}");
}

#[test]
fn bad_input_gets_one_line_and_exit_2_and_a_failing_command_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    for (args, expected) in [
        (vec!["doctor", "--calibrate-for", "0", "--", "true"], "must be a positive duration"),
        (vec!["doctor", "--effect", "0", "true"], "--effect must be above 0 %"),
        (vec!["doctor", "--calibrate-for", "soon", "true"], "is not a duration"),
        (vec!["doctor", "/nonexistent/program"], "/nonexistent/program"),
        (vec!["doctor", "--frobnicate"], "--frobnicate"),
    ] {
        let out = perflab(&db).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    let out = perflab(&db).args(["doctor", "--", "sh", "-c", "exit 4"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!db.exists(), "a failed calibration stores nothing");
}

#[test]
fn a_calibration_is_recorded_as_a_noise_trace_the_replay_reads_back() {
    use perflab::executor::replay::Trace;
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.csv");
    let out = perflab(&dir.path().join("h.db"))
        .args(["doctor", "--calibrate-for", "1s", "--no-save", "--record-noise"])
        .arg(&trace_path)
        .args(["--", &spin(1_000_000)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = Trace::load(&trace_path).unwrap();
    // Every measured round of the A/A calibration, both runs of it, in execution order.
    let rounds: usize = trace.fact("rounds").unwrap().parse().unwrap();
    assert!(rounds >= 2, "{rounds}");
    assert_eq!(trace.runs.len(), 2 * rounds);
    for (k, pair) in trace.runs.chunks(2).enumerate() {
        assert!(pair.iter().all(|r| r.round as usize == k && r.wall_s > 0.0), "{pair:?}");
    }
    assert!(trace.duration_s.is_some_and(|d| d > 0.0));
    let text = std::fs::read_to_string(&trace_path).unwrap();
    assert!(text.starts_with("# perflab noise trace: A/A runs of `"), "{text}");
    assert!(text.contains("# load: 1-min load average "), "{text}");

    // Both to stdout is a usage error, not an interleaving.
    let both = perflab(&dir.path().join("h.db"))
        .args(["doctor", "--calibrate-for", "1s", "--no-save", "--record-noise", "-", "--json", "-", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&both.stderr);
    assert!(stderr.contains("--record-noise and --json cannot both write to stdout"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}
