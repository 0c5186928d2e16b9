//! Every number honest on every path (issue #18): one test per row of its table that
//! the engine, the history and the command line own — shell syntax is never run
//! literally, failures that were ignored are counted, equal and zero counters are
//! shown as equal, one run gets no interval, the client's CPU is named as such, the
//! benchmark's own waiting is not removed as a neighbour's, and labels measured in
//! different sessions are compared with the sessions' noise.

mod common;

use assert_cmd::Command;
use serde_json::Value;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1").env_remove("PERFLAB_DB");
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn shell_syntax_runs_through_the_shell_with_a_note_or_is_refused_with_n() {
    let dir = tempfile::tempdir().unwrap();
    let out = perflab()
        .current_dir(dir.path())
        .args(["compare", "-r", "2", "--json", "-", "/bin/true", "echo hi > out.txt"])
        .assert()
        .success();
    let stderr = text(&out.get_output().stderr);
    assert!(
        stderr.contains("note: `echo hi > out.txt` has shell syntax (>): running every command with /bin/sh -c"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "hi\n", "the redirection happened");
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(json["commands"][0]["argv"], serde_json::json!(["/bin/sh", "-c", "/bin/true"]), "both through sh");

    let out =
        perflab().current_dir(dir.path()).args(["compare", "-N", "/bin/true", "echo hi > x.txt"]).assert().code(2);
    let stderr = text(&out.get_output().stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("has shell syntax (>), and -N (--no-shell) runs commands without a shell"), "{stderr}");
    assert!(!dir.path().join("x.txt").exists(), "nothing ran");
}

#[test]
fn the_shell_is_the_value_of_shell_however_it_is_spelled() {
    for flags in [&["--shell", "sh"][..], &["--shell=sh"], &["-S", "sh"]] {
        let out = perflab()
            .args(["compare", "-r", "2", "--json", "-"])
            .args(flags)
            .args(["true", "true 1"])
            .assert()
            .success();
        let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let names: Vec<&str> =
            json["commands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["true", "true 1"], "{flags:?}: sh is the shell, not a command");
        assert_eq!(json["commands"][1]["argv"], serde_json::json!(["sh", "-c", "true 1"]), "{flags:?}");
    }
    let out = perflab().args(["compare", "--shell", "no-such-shell-xyz", "true", "true"]).assert().code(2);
    let stderr = text(&out.get_output().stderr);
    assert!(stderr.contains("--shell `no-such-shell-xyz`: program `no-such-shell-xyz` not found"), "{stderr}");
}
