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

fn compare_json(args: &[&str]) -> (Value, String) {
    let out = perflab().args(["compare", "--json", "-"]).args(args).assert().success();
    let out = out.get_output();
    (serde_json::from_slice(&out.stdout).expect("JSON on stdout"), text(&out.stderr))
}

fn comparison<'a>(json: &'a Value, metric: &str) -> &'a Value {
    json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == metric)
        .unwrap_or_else(|| panic!("no comparison of {metric} in {}", json["comparisons"]))
}

#[test]
fn ignored_failures_are_counted_and_said() {
    let (json, stderr) = compare_json(&["-i", "-r", "6", "false", "true"]);
    let warning = json["warnings"].as_array().unwrap().iter().find(|w| w["kind"] == "failures").expect("a warning");
    let message = warning["message"].as_str().unwrap();
    assert_eq!(
        message,
        "`false` failed in 6 of 6 runs (exited with code 1 ×6); --ignore-failure kept them, and their values are in the statistics"
    );
    assert!(stderr.contains(message), "{stderr}");
}

#[test]
fn identical_and_zero_counters_are_equivalent_and_shown() {
    // Two commands printing the same count every run, and a harness count that is 0 in
    // every run of both (major page faults of a program whose pages are all cached).
    let print = |value: &str| format!(r#"echo '{{"metric": "items", "value": {value}}}'"#);
    let (json, _) = compare_json(&[
        "-S",
        "sh",
        "-r",
        "6",
        "--parse",
        "jsonl",
        "-m",
        "items,wall_s,major_faults",
        &print("42"),
        &format!("{} # the same", print("42")),
    ]);
    let items = comparison(&json, "items");
    assert_eq!((items["verdict"].as_str(), items["ratio"].as_f64()), (Some("equivalent"), Some(1.0)), "{items}");
    let zero = comparison(&json, "major_faults");
    assert_eq!((zero["verdict"].as_str(), zero["ratio"].as_f64()), (Some("equivalent"), Some(1.0)), "{zero}");
    assert_eq!(zero["flags"][0], "exact: 0 in every run of both");
}

#[test]
fn one_run_gets_no_interval() {
    let spin = common::fixture("spin");
    let out = perflab()
        .args(["compare", "-r", "1", &format!("{} 1000000", spin.display()), &format!("{} 1300000", spin.display())])
        .assert()
        .success();
    let stdout = text(&out.get_output().stdout);
    assert!(stdout.contains("one run each: no interval and no verdict"), "{stdout}");
    assert!(stdout.contains("none: one run") && !stdout.contains("95 % CI,"), "{stdout}");
}

#[test]
fn a_server_ab_names_cpu_s_as_the_clients() {
    let Some(cluster) = common::cluster::Cluster::start() else { return };
    let pgbench = cluster.client("pgbench -S -t 200");
    let (json, stderr) = compare_json(&["--no-progress", "-r", "6", "--parse", "pgbench", &pgbench, &pgbench]);
    let cpu = comparison(&json, "cpu_s");
    let flags: Vec<&str> = cpu["flags"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(flags.contains(&"the client's CPU time (pgbench's), not the server's"), "{cpu}");
    let warning = json["warnings"].as_array().unwrap().iter().find(|w| w["kind"] == "scope").expect("a scope warning");
    assert!(
        warning["message"].as_str().unwrap().starts_with("cpu_s is the client's CPU time (pgbench's)"),
        "{warning}"
    );
    assert!(stderr.contains("the server's CPU is not in it"), "{stderr}");
}

#[test]
fn the_instruction_mode_estimate_counts_mispredicted_branches() {
    if which::which("valgrind").is_err() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but valgrind is not installed");
        eprintln!("skipping: valgrind is not installed");
        return;
    }
    let dispatch = common::fixture("dispatch");
    let (json, _) = compare_json(&[
        "--mode",
        "instructions",
        &format!("{} switch 5", dispatch.display()),
        &format!("{} threaded 5", dispatch.display()),
    ]);
    for command in json["commands"].as_array().unwrap() {
        let counters = &command["runs"][0]["counters"];
        let count = |name: &str| counters[name]["value"].as_f64().unwrap_or_else(|| panic!("{name}: {counters}"));
        let ram = count("ll_instruction_misses") + count("ll_read_misses") + count("ll_write_misses");
        let l1_misses = count("i1_misses") + count("d1_read_misses") + count("d1_write_misses");
        let l1_hits = count("instructions") + count("data_reads") + count("data_writes") - l1_misses;
        let mispredicts = count("conditional_mispredicts") + count("indirect_mispredicts");
        assert!(mispredicts > 1000.0, "the interpreter's dispatch mispredicts: {counters}");
        let expected = l1_hits + 5.0 * (l1_misses - ram) + 35.0 * ram + 15.0 * mispredicts;
        assert_eq!(count("estimated_cycles"), expected, "{}", command["name"]);
    }
    let estimate = comparison(&json, "estimated_cycles");
    assert_eq!(estimate["flags"][0].as_str().unwrap().split(':').next(), Some("one run each"), "{estimate}");
}
