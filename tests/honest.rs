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
        "--metric",
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
    if !common::have_valgrind() {
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

/// One stored session of a single-command benchmark: 30 runs whose own time is `level`
/// (with a little noise), on a machine that made them wait `busy` of their wall time.
fn session(label: &str, level: f64, busy: f64, seed: u64, floor_kib: u64) -> perflab::model::Experiment {
    use perflab::model::{metric, CommandResult, CounterReading, ExitInfo, Experiment, Machine, Run, Settings};
    let runs = (0..30u64)
        .map(|i| {
            let jitter = 1.0 + 0.002 * (((seed * 31 + i * 17) % 7) as f64 - 3.0);
            let own = level * jitter;
            let waited = own * busy / (1.0 - busy) * (0.5 + ((seed + i * 13) % 10) as f64 / 10.0);
            let counters = [(metric::RUNQ_WAIT, waited), (metric::NEIGHBOUR_WAIT, waited), (metric::UNCONTENDED, own)]
                .map(|(name, value)| (name.to_string(), CounterReading::value(value, false)))
                .into_iter()
                .collect();
            Run {
                round: i as u32,
                wall_s: own + waited,
                user_s: own,
                exit: ExitInfo { exit_code: Some(0), ..ExitInfo::default() },
                counters,
                ..Run::default()
            }
        })
        .collect();
    let machine = Machine { hostname: "vm".into(), cpu_model: "EPYC".into(), cores: 2, ..Machine::default() };
    let mut environment = std::collections::BTreeMap::new();
    // What differs between two sessions of one machine: the spawner's floor and its cgroup.
    environment.insert("max_rss_floor_kib".to_string(), floor_kib.to_string());
    environment.insert("run_queue_wait".to_string(), format!("/sys/fs/cgroup/perflab-{seed}/cpu.pressure"));
    environment.insert("busy_share".to_string(), format!("{:.4}", if busy > 0.0 { busy } else { 0.0 }));
    Experiment {
        machine,
        settings: Settings { fixed_rounds: Some(30), ..Settings::default() },
        rounds: 30,
        stop_reason: perflab::model::StopReason::FixedRounds,
        commands: vec![CommandResult {
            name: label.into(),
            argv: vec!["./bench".into()],
            command_line: "./bench".into(),
            runs,
            summary: Default::default(),
            parameters: Default::default(),
        }],
        environment,
        ..Experiment::default()
    }
}

/// A store with sessions (label, own time, busy share) in that order.
fn store_of(dir: &std::path::Path, sessions: &[(&str, f64, f64)]) -> String {
    let db = dir.join("sessions.db");
    let mut store = perflab::store::Store::open(Some(db.to_str().unwrap())).unwrap();
    for (i, (label, level, busy)) in sessions.iter().enumerate() {
        let meta = perflab::store::Meta {
            label: label.to_string(),
            benchmark: "bench".into(),
            git_commit: None,
            source: "test".into(),
        };
        store.save(&meta, &session(label, *level, *busy, i as u64 + 1, 700 + 100 * i as u64)).unwrap();
    }
    db.display().to_string()
}

fn history_json(db: &str, extra: &[&str]) -> Value {
    let out = perflab().args(["history", "--db", db, "--json", "-"]).args(extra).assert().success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

#[test]
fn sessions_of_one_binary_beside_a_busy_neighbour_and_quiet_are_not_called_different() {
    let dir = tempfile::tempdir().unwrap();
    // The same binary, first beside a busy neighbour (48 % of wall time waiting), then quiet.
    let db = store_of(dir.path(), &[("v1", 0.065, 0.48), ("v2", 0.065, 0.0), ("v3", 0.065 * 1.05, 0.0)]);
    let h = history_json(&db, &[]);
    assert_eq!(h["metric"], "uncontended_s", "the metric the sessions decided on");
    let note = h["metric_note"].as_str().unwrap();
    assert!(note.contains("`v1` ran on a busy machine") && note.contains("--metric wall_s"), "{note}");
    let points = h["machines"][0]["benchmarks"][0]["points"].as_array().unwrap();
    assert!(points[0]["busy_share"].as_f64().unwrap() > 0.4, "the busy label is marked");
    let aa = &points[1]["vs_previous"];
    assert_eq!(aa["method"], "sessions");
    assert!(aa["verdict"] != "slower" && aa["verdict"] != "faster", "{aa}");
    assert!(aa["ci_low"].as_f64().unwrap() < 1.0 && aa["ci_high"].as_f64().unwrap() > 1.0, "{aa}");
    // A real +5 % between sessions is still found.
    assert_eq!(points[2]["vs_previous"]["verdict"], "slower", "{}", points[2]["vs_previous"]);

    // Asked for wall time: busy wall time is not compared with quiet wall time.
    let h = history_json(&db, &["--metric", "wall_s"]);
    let wall = &h["machines"][0]["benchmarks"][0]["points"][1]["vs_previous"];
    assert_eq!(wall["verdict"], "inconclusive", "{wall}");
    assert!(wall["note"].as_str().unwrap().contains("their wall times are not comparable"), "{wall}");
    let text = perflab().args(["history", "--db", &db, "bench"]).assert().success();
    let text = self::text(&text.get_output().stdout);
    assert!(text.contains("v1 (busy: 48 % waiting)") && text.starts_with("note: comparing uncontended_s"), "{text}");
}

#[test]
fn the_report_compares_the_decided_metric_says_so_and_sees_one_machine() {
    let dir = tempfile::tempdir().unwrap();
    let db = store_of(dir.path(), &[("v1", 0.065, 0.48), ("v2", 0.065, 0.0)]);
    let page = dir.path().join("report.html");
    perflab().args(["report", "--db", &db, "-o", page.to_str().unwrap()]).assert().success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("comparing uncontended_s"), "the default metric is said");
    assert!(html.contains("v1 was measured on a busy machine: 48 %"), "the busy label is marked");
    assert!(html.contains("measured in separate sessions"), "the session noise is said");
    assert!(!html.contains("different machine fingerprints"), "one VM is one machine");
}

/// One timing test at a time: they measure.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_pinned_ping_pong_keeps_its_own_waiting() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !common::have("taskset", "apt-get install util-linux") {
        return;
    }
    let pingpong = common::fixture("pingpong");
    let command = format!("taskset -c 0 {} 20000", pingpong.display());
    let (json, _) = compare_json(&["-r", "20", "--no-progress", &command, &command]);
    let source = json["environment"]["run_queue_wait"].as_str().unwrap_or_default();
    if !source.contains("neighbours' part bounded by") {
        common::skip(&format!("runs with other processes have no neighbours' wait here: {source}"));
        return;
    }
    let runs = json["commands"][0]["runs"].as_array().unwrap();
    let value = |r: &Value, m: &str| r["counters"][m]["value"].as_f64().unwrap_or_else(|| panic!("{m}: {r}"));
    let mut own_share = Vec::new();
    for r in runs {
        let (wall, runq, neighbour) =
            (r["wall_s"].as_f64().unwrap(), value(r, "runq_wait_s"), value(r, "neighbour_wait_s"));
        assert!(neighbour <= runq + 1e-9, "a neighbour's wait is part of the wait: {r}");
        let cpu = r["user_s"].as_f64().unwrap() + r["sys_s"].as_f64().unwrap();
        assert!(value(r, "uncontended_s") >= 0.95 * cpu, "never less than the run's own CPU time: {r}");
        own_share.push((runq - neighbour) / wall);
    }
    own_share.sort_by(f64::total_cmp);
    // The halves take turns on CPU 0: much of the wait is the benchmark's own, and kept
    // (alone here 40–55 % of wall time; beside other jobs less, but never nothing: beside
    // a burner per CPU a median of 15 %, 1 of 60 runs at 10 % or less). The median of 40
    // runs is ≤ 10 % only if 20 runs were: P ≤ 1e-8 (tests/common/noise.rs).
    let p = common::noise::at_least(20, 40, common::noise::upper_bound(1, 60));
    assert!(p < common::noise::P_MAX, "P(fail) ≤ {p:e}");
    assert!(own_share[own_share.len() / 2] > 0.1, "{own_share:?}");
}
