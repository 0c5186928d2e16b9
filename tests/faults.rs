//! Faults without loss or hang (issue #23): metrics that cannot be compared, store faults,
//! bounded output capture, hostile input, exit codes and the children a benchmark leaves.

mod common;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

fn json_of(output: &[u8]) -> Value {
    serde_json::from_slice(output).expect("valid JSON on stdout")
}

/// The reproduction: a printed metric ≤ 0 in the baseline cannot give a ratio.
/// It used to vanish from the comparisons while the gate passed with exit 0.
#[test]
fn a_metric_that_cannot_be_compared_is_reported_and_the_gate_fails_closed() {
    let out = perflab()
        .args(["compare", "-r6", "-w0", "--fail-if-slower", "--json", "-"])
        .args(["--output-metric", "v=(?<v>\\S+)", "--shell", "echo v=0", "echo v=5"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("gate").and(predicate::str::contains("`v`")))
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not comparable"), "the table row says so: {stderr}");
    assert!(stderr.contains("warning: v"), "a warning says why: {stderr}");
    let json = json_of(&out.stdout);
    let v = json["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == "v").expect("a v comparison");
    assert_eq!(v["verdict"], "not_comparable");
    assert!(v["flags"][0].as_str().unwrap().contains("≤ 0"), "{v}");
}

/// A command that prints no value of the metric fails its run (exit 3); the metric's row
/// says it is not comparable and why, rather than vanishing.
#[test]
fn a_metric_missing_in_one_command_is_reported() {
    let out = perflab()
        .args(["compare", "-r6", "-w0", "--metric", "v,wall_s"])
        .args(["--output-metric", "v=(?<v>\\S+)", "--shell", "echo v=2", "echo w=5"])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("not comparable") && stdout.contains("value of v"), "{stdout}");
}

/// Some rounds ≤ 0, others positive: the comparison uses the positive pairs and says
/// how many it skipped.
#[test]
fn skipped_non_positive_rounds_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("n");
    // Every other run of the baseline prints 0.
    let alternating =
        format!("n=$(cat {0} 2>/dev/null || echo 0); echo $((n + 1)) > {0}; echo v=$((n % 2))", count.display());
    perflab()
        .args(["compare", "-r8", "-w0", "--output-metric", "v=(?<v>\\S+)", "--shell", &alternating, "echo v=1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("4 of 8 rounds skipped: v ≤ 0 on a side"))
        .stdout(predicate::str::contains("warning: v of `echo v=1` vs"));
}

/// A gate without an interval (too few rounds for one) cannot pass.
#[test]
fn the_gate_fails_closed_without_an_interval() {
    perflab()
        .args(["compare", "-r3", "-w0", "--fail-if-slower", "--", "true", "true"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot judge").and(predicate::str::contains("too few rounds")));
}
