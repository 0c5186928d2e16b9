//! The habits a new user brings from hyperfine, perf and git: an A/A check without
//! names, help when nothing is asked, one-line errors with suggestions, completions and a
//! man page, JSON on stdout that stays JSON, read-only commands that create nothing,
//! names that cannot drive the terminal, and no panic on absurd numbers.

mod common;

use assert_cmd::Command;
use serde_json::Value;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1").env_remove("PERFLAB_DB");
    cmd
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn spin(n: u64) -> String {
    format!("{} {n}", common::fixture("spin").display())
}

#[test]
fn the_same_command_twice_is_an_a_a_check_with_numbered_names() {
    let cmd = spin(2_000_000);
    let out = perflab().args(["compare", "-r", "6", "--json", "-", &cmd, &cmd]).assert().success();
    let out = out.get_output();
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let names: Vec<&str> = json["commands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, [format!("{cmd} #1"), format!("{cmd} #2")]);
    assert!(stderr_of(out).contains("is given 2 times (an A/A check)"), "{}", stderr_of(out));
}

#[test]
fn perflab_alone_prints_help() {
    let out = perflab().assert().success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(help.contains("Usage: perflab") && help.contains("compare"), "{help}");
}

#[test]
fn typos_get_a_one_line_error_with_the_suggestion() {
    for (args, needle) in
        [(vec!["comapre"], "'compare'"), (vec!["compare", "--treshold", "1", "true", "true"], "'--threshold'")]
    {
        let out = perflab().args(&args).assert().code(2);
        let stderr = stderr_of(out.get_output());
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
}

#[test]
fn completions_and_man_page() {
    let out = perflab().args(["completions", "bash"]).assert().success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains("_perflab()"));
    let out = perflab().args(["man"]).assert().success();
    let roff = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(roff.starts_with(".ie") || roff.contains(".TH perflab"), "{}", &roff[..200.min(roff.len())]);
    let dir = tempfile::tempdir().unwrap();
    perflab().args(["man", "--dir"]).arg(dir.path()).assert().success();
    for page in ["perflab.1", "perflab-compare.1", "perflab-profile.1"] {
        assert!(dir.path().join(page).exists(), "{page}");
    }
}

#[test]
fn absurd_numbers_are_one_line_errors_not_panics() {
    let out = perflab().args(["compare", "--timeout", "1e19", "true", "true"]).assert().code(2);
    assert!(stderr_of(out.get_output()).contains("longer than the longest accepted duration"));
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("perflab.toml");
    std::fs::write(&suite, "[[benchmark]]\nname = \"a\"\ncommand = \"true\"\ntimeout = \"1e30s\"\n").unwrap();
    let out = perflab().args(["run", "--label", "x", "--suite"]).arg(&suite).current_dir(dir.path()).assert().code(2);
    let stderr = stderr_of(out.get_output());
    assert!(stderr.contains("perflab.toml:4:") && stderr.contains("longer than"), "{stderr}");
    assert!(!dir.path().join(".perflab").exists(), "nothing is stored when the suite is refused");
}

#[test]
fn imported_extremes_are_refused_at_the_edge() {
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("r.json");
    perflab().args(["compare", "-r", "6", "--json"]).arg(&result).args(["true", "true 1"]).assert().success();
    let mut json: Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
    json["commands"][0]["runs"][0]["wall_s"] = serde_json::json!(1.79e308);
    json["commands"][1]["runs"][0]["wall_s"] = serde_json::json!(-1.79e308);
    std::fs::write(&result, serde_json::to_vec(&json).unwrap()).unwrap();
    for args in [vec!["report", "--from", result.to_str().unwrap()], vec!["import", result.to_str().unwrap()]] {
        let out = perflab().args(&args).args(["--label", "x"]).current_dir(dir.path()).assert().code(2);
        let stderr = stderr_of(out.get_output());
        assert!(stderr.contains("is not a time between 0 and a year"), "{args:?}: {stderr}");
    }
}

#[test]
fn read_only_commands_create_no_database() {
    let dir = tempfile::tempdir().unwrap();
    for args in [vec!["history"], vec!["export"], vec!["report"]] {
        let out = perflab().args(&args).current_dir(dir.path()).assert().code(2);
        let stderr = stderr_of(out.get_output());
        assert!(stderr.contains("no history database at .perflab/perflab.db"), "{args:?}: {stderr}");
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "the directory stays empty");
}

#[test]
fn names_cannot_drive_the_terminal() {
    let out = perflab()
        .args(["compare", "-r", "6", "-n", "evil\u{1b}[2J\nline", "-n", "b", "true", "true 1"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!stdout.contains('\u{1b}'), "no escape byte reaches the terminal");
    assert!(stdout.contains("evil\\u{1b}[2J\\nline"), "{stdout}");
}

#[test]
fn run_prints_the_warnings_compare_prints() {
    let dir = tempfile::tempdir().unwrap();
    // A warning that does not depend on the machine: failures kept by -i (a short-run
    // warning would, as a busy machine can stretch `true`'s wall time past 10 ms).
    std::fs::write(dir.path().join("perflab.toml"), "[[benchmark]]\nname = \"failing\"\ncommand = \"false\"\n")
        .unwrap();
    let out = perflab().args(["run", "--label", "v1", "-r", "6", "-i"]).current_dir(dir.path()).assert().success();
    // Named by kind under the benchmark's line, said in full once in the run's summary
    // with the benchmarks it hit (issue #41: a suite's log stays readable).
    let stderr = stderr_of(out.get_output());
    assert!(stderr.contains("warnings: ") && stderr.contains("failures"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("failures (1: failing), e.g. `failing` failed in 6 of 6 runs"), "{stdout}");
}

#[test]
fn profile_json_on_stdout_stays_json_when_the_program_prints() {
    let dir = tempfile::tempdir().unwrap();
    let out = perflab()
        .args(["profile", "-o"])
        .arg(dir.path().join("p.profile"))
        .args([
            "--json",
            "-",
            "--",
            "sh",
            "-c",
            "echo hello from the program; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
        ])
        .assert()
        .success();
    let out = out.get_output();
    let json: Value = serde_json::from_slice(&out.stdout).expect("stdout is only the JSON report");
    assert!(json["samples"].as_u64().is_some());
    assert!(stderr_of(out).contains("hello from the program"), "the program's output went to stderr");
}
