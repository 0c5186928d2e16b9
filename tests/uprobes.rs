//! Calls as counters: `-e uprobe:OBJECT:FUNCTION` counted per run by stat and compare,
//! checked exactly against a fixture whose every call is known (tests/fixtures/alloc_calls.c),
//! and the one-line refusals of probes that cannot be placed; a counted program's threads
//! and children (tests/fixtures/probe_children.c) start and are counted; probe definitions
//! leave tracefs with perflab; `--count-in` counts a server's processes while a client is
//! timed, and an attached server keeps accepting connections (PostgreSQL, `PERFLAB_TEST_PG`).
//!
//! Counting a uprobe needs root or CAP_PERFMON: elsewhere these tests check the refusal
//! and say SKIP for the counts.

mod common;

use assert_cmd::Command;
use serde_json::Value;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}); stderr: {}", String::from_utf8_lossy(&output.stderr)))
}

fn metric(doc: &Value, name: &str) -> f64 {
    let m = doc["metrics"].as_array().unwrap().iter().find(|m| m["name"] == name);
    let m = m.unwrap_or_else(|| panic!("no metric {name} in {}", doc["metrics"]));
    assert_eq!(m["supported"], true, "{m}");
    m["value"].as_f64().unwrap()
}

/// The probes a test places on the fixture and on the C library.
fn probes(fixture: &std::path::Path) -> String {
    let f = fixture.display();
    [
        format!("uprobe:{f}:counted"),
        format!("uretprobe:{f}:counted"),
        format!("uprobe:{f}:make_node"),
        format!("uprobe:{f}:pool_get"),
        "uprobe:libc.so.6:malloc".into(),
        "uprobe:libc:calloc".into(),
        "uprobe:libc:realloc".into(),
        "uprobe:libc:free".into(),
    ]
    .join(",")
}

/// The fixture's known calls (see its header): counts are exact, not estimates, so every
/// run must show them exactly.
#[test]
fn stat_counts_every_call_of_a_function_exactly() {
    if !common::is_root() {
        common::skip("counting uprobes needs root or CAP_PERFMON");
        return;
    }
    let fixture = common::fixture("alloc_calls");
    let f = fixture.display().to_string();
    let n = 1000.0;
    for (mode, expected) in [
        // realloc(NULL, …) enters malloc too (glibc's realloc calls the same function).
        ("malloc", [n, n, n, 0.0, n + 1.0, n / 4.0, n / 100.0, n - n / 10.0 + n / 4.0 + 1.0]),
        ("pool", [n, n, 0.0, n, 1.0, 0.0, 0.0, 1.0]),
    ] {
        let out = perflab()
            .args(["stat", "-r", "3", "--no-progress", "--json", "-", "-e", &probes(&fixture), &f, mode, "1000"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let doc = json_of(&out);
        let names = [
            format!("uprobe:{f}:counted"),
            format!("uretprobe:{f}:counted"),
            format!("uprobe:{f}:make_node"),
            format!("uprobe:{f}:pool_get"),
            "uprobe:libc.so.6:malloc".into(),
            "uprobe:libc:calloc".into(),
            "uprobe:libc:realloc".into(),
            "uprobe:libc:free".into(),
        ];
        for (name, want) in names.iter().zip(expected) {
            assert_eq!(metric(&doc, name), want, "{mode}: {name}");
            // Every run, not only the median.
            for run in doc["commands"][0]["runs"].as_array().unwrap() {
                assert_eq!(run["counters"][name]["value"].as_f64(), Some(want), "{mode}: {name}: {run}");
            }
        }
        let placed = doc["environment"][format!("probe[uprobe:{f}:counted]")].as_str().unwrap_or_default();
        assert!(placed.starts_with("counted in /") && placed.contains("file offset 0x"), "{}", doc["environment"]);
    }
}

/// A/B on exact counts: identical counts are `equivalent` with the interval [1, 1]; the
/// pool's program calls malloc once where the other calls it N+1 times.
#[test]
fn compare_gives_exact_counts_their_ratio_and_verdict() {
    if !common::is_root() {
        common::skip("counting uprobes needs root or CAP_PERFMON");
        return;
    }
    let fixture = common::fixture("alloc_calls");
    let f = fixture.display().to_string();
    let events = format!("uprobe:{f}:counted,uprobe:libc:malloc");
    let out = perflab()
        .args(["compare", "--no-progress", "-r", "6", "--json", "-", "-e", &events])
        .args(["-n", "pool", "-n", "malloc", &format!("{f} pool 500"), &format!("{f} malloc 500")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = json_of(&out);
    let comparison =
        |metric: &str| doc["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == metric).cloned().unwrap();
    let counted = comparison(&format!("uprobe:{f}:counted"));
    assert_eq!(counted["verdict"], "equivalent", "{counted}");
    assert_eq!(
        (counted["ratio"].as_f64(), counted["ci_low"].as_f64(), counted["ci_high"].as_f64()),
        (Some(1.0), Some(1.0), Some(1.0))
    );
    let malloc = comparison("uprobe:libc:malloc");
    assert_eq!(malloc["ratio"].as_f64(), Some(501.0), "{malloc}");
    assert_eq!(malloc["verdict"], "slower", "more calls of a lower-is-better count: {malloc}");
}

/// What cannot be placed is refused before any run: one line, exit 2.
#[test]
fn probes_that_cannot_be_placed_are_one_line_usage_errors() {
    let fixture = common::fixture("alloc_calls");
    let f = fixture.display().to_string();
    let cases = [
        (format!("uprobe:{f}:no_such_function"), "no function no_such_function"),
        (format!("uprobe:{f}:counte"), "similar: counted"),
        ("uprobe:libc.so.6:memcpy".to_string(), "is an IFUNC"),
        ("uprobe:perflab-no-such-object:f".to_string(), "no object `perflab-no-such-object`"),
        (format!("uprobe:{f}"), "expected uprobe:OBJECT:FUNCTION"),
    ];
    for (event, message) in cases {
        let out = perflab().args(["stat", "-r", "1", "--no-progress", "-e", &event, &f, "pool", "1"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if common::is_root() || !err.contains("need root") {
            assert_eq!(out.status.code(), Some(2), "{event}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{event}: {err}");
            assert!(err.contains(message), "{event}: {err}");
        }
    }
}

/// An unprivileged user is told, in one line, that uprobes need root or CAP_PERFMON.
#[test]
fn an_unprivileged_user_is_told_what_uprobes_need() {
    if !common::is_root() || which::which("setpriv").is_err() {
        common::skip("not root or no setpriv: cannot run as an unprivileged user here");
        return;
    }
    let exe = assert_cmd::cargo::cargo_bin("perflab");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(&exe)
        .args(["stat", "-r", "1", "--no-progress", "-e", "uprobe:libc:malloc", "/bin/true"])
        .current_dir("/tmp")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(126) || err.contains("Permission denied") && !err.contains("probe") {
        common::skip(&format!("nobody cannot run the test binary here: {err}"));
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("uprobes need root or CAP_PERFMON"), "{err}");
}

/// `compare --explain` on a uprobe: every call of the probed function per run, A against
/// B, exact for a program as deterministic as the fixture (the pool mode never calls
/// make_node, the malloc mode 500 times), and no talk of too few samples.
#[test]
fn explain_on_a_uprobe_gives_calls_per_run() {
    if !common::is_root() {
        common::skip("counting uprobes needs root or CAP_PERFMON");
        return;
    }
    let fixture = common::fixture("alloc_calls");
    let f = fixture.display().to_string();
    let out = perflab()
        .args(["compare", "--no-progress", "-r", "6", "--explain", "--explain-event", &format!("uprobe:{f}:make_node")])
        .args(["-n", "pool", "-n", "malloc", &format!("{f} pool 500"), &format!("{f} malloc 500")])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("make_node (new) adds 500 "), "{text}");
    assert!(!text.contains("samples per run: per-function intervals are wide"), "{text}");
}

/// The probe_children fixture: `counted()` runs this many times in its whole process tree
/// (main, a thread, a forked child, a posix_spawn'd copy of itself after exec, a clone3
/// child: see tests/fixtures/probe_children.c).
const CHILDREN_CALLS: f64 = 1116.0;
/// What probe_children prints when its thread, fork, vfork, posix_spawn and clone3 all
/// started (else it names the failure and exits 1).
const ALL_STARTED: &str = "children started: all";

/// Under uprobe counters the measured program starts a thread, fork, vfork, posix_spawn
/// (exec) and clone3 children as it does without, and every call in the tree is counted
/// (as perf stat counts children): 1116 in each run, by stat and by compare. Under the
/// uprobe PMU with `inherit` these children failed with EFAULT (issue 38).
#[test]
fn a_counted_program_starts_threads_and_children_and_all_are_counted() {
    if !common::is_root() {
        common::skip("counting uprobes needs root or CAP_PERFMON");
        return;
    }
    let fixture = common::fixture("probe_children");
    let f = fixture.display().to_string();
    let events = format!("uprobe:{f}:counted,uprobe:libc:malloc");
    let counted = format!("uprobe:{f}:counted");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stat.json");
    let out = perflab()
        .args([
            "stat",
            "-r",
            "3",
            "--no-progress",
            "--show-output",
            "--json",
            json.to_str().unwrap(),
            "-e",
            &events,
            &f,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(ALL_STARTED) && !stdout.contains("failed"), "{stdout}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(metric(&doc, &counted), CHILDREN_CALLS);
    for run in doc["commands"][0]["runs"].as_array().unwrap() {
        assert_eq!(run["counters"][&counted]["value"].as_f64(), Some(CHILDREN_CALLS), "{run}");
    }

    let json = dir.path().join("compare.json");
    let out = perflab()
        .args(["compare", "-r", "3", "--no-progress", "--show-output", "--json", json.to_str().unwrap(), "-e", &events])
        .args([&f, &f])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(ALL_STARTED) && !stdout.contains("failed"), "{stdout}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for command in doc["commands"].as_array().unwrap() {
        let runs = command["runs"].as_array().unwrap();
        assert!(!runs.is_empty(), "{command}");
        for run in runs {
            assert_eq!(run["counters"][&counted]["value"].as_f64(), Some(CHILDREN_CALLS), "{run}");
        }
    }
    let comparison = doc["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == counted.as_str()).unwrap();
    assert_eq!(comparison["verdict"], "equivalent", "{comparison}");
}

/// A shell pipeline forks under a libc probe: `sh -c 'ls / | wc -l'` runs (it printed
/// "Cannot fork" under the uprobe PMU).
#[test]
fn a_shell_pipeline_forks_under_a_libc_probe() {
    if !common::is_root() {
        common::skip("counting uprobes needs root or CAP_PERFMON");
        return;
    }
    let out = perflab()
        .args(["stat", "-r", "2", "--no-progress", "--show-output", "--json", "-", "-e", "uprobe:libc:malloc"])
        .args(["--", "sh", "-c", "ls / | wc -l >&2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("Cannot fork") && !stderr.contains("Bad address"), "{stderr}");
    // wc printed the number of entries of / (at least /proc, /sys, /usr …).
    let printed: Vec<u64> = stderr.lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert!(!printed.is_empty() && printed.iter().all(|n| *n >= 3), "{stderr}");
    let doc = json_of(&out);
    assert!(metric(&doc, "uprobe:libc:malloc") > 0.0, "ls and wc call malloc");
}

/// `stat -p PID -- CMD`: when CMD fails, the error names CMD and its exit code, never
/// the process counted with -p (which still runs).
#[test]
fn stat_attached_names_the_failed_command_not_the_attached_process() {
    let mut sleeper = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let out = perflab().args(["stat", "-p", &pid, "--", "sh", "-c", "exit 3"]).output().unwrap();
    let alive = sleeper.try_wait().unwrap().is_none();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("perf_event_paranoid") || stderr.contains("Permission denied") {
        common::skip(&format!("cannot count process {pid} here: {stderr}"));
        return;
    }
    assert!(alive, "the attached process was not disturbed");
    assert_eq!(out.status.code(), Some(3), "the command's failure is exit code 3: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("`sh -c exit 3` exited with code 3"), "{stderr}");
    assert!(!stderr.contains(&pid), "{stderr}");
}

/// Where this machine's tracefs is (the directory with `uprobe_events`).
fn tracefs() -> Option<std::path::PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|root| root.join("uprobe_events").is_file())
}

/// Whether perflab process `pid`'s probe definitions are in tracefs: its event group, or
/// any line of `uprobe_events`.
fn has_probe_group(root: &std::path::Path, pid: u32) -> bool {
    let group = format!("perflab_{pid}");
    let listed = std::fs::read_to_string(root.join("uprobe_events")).unwrap();
    root.join("events").join(&group).exists() || listed.lines().any(|l| l.contains(&format!("{group}/")))
}

/// Start perflab counting a uprobe on `sleep 5` and wait until its probe group is in
/// tracefs.
fn perflab_with_probes_defined(root: &std::path::Path) -> std::process::Child {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["stat", "-r", "1", "--no-progress", "-e", "uprobe:libc:malloc", "--", "sleep", "5"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !has_probe_group(root, child.id()) {
        assert!(start.elapsed().as_secs() < 30, "perflab {} defined no probe group in 30 s", child.id());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// The probe definitions perflab writes to tracefs are its own group, removed when it
/// exits; a perflab killed with SIGKILL leaves its group, and the next perflab that
/// places a probe removes it.
#[test]
fn probe_definitions_are_removed_at_exit_and_after_a_crash() {
    if !common::is_root() {
        common::skip("defining uprobes in tracefs needs root");
        return;
    }
    let Some(root) = tracefs() else {
        common::skip("no tracefs with uprobe_events is mounted");
        return;
    };
    // A clean exit: the group existed during the run and is gone after.
    let mut clean = perflab_with_probes_defined(&root);
    let pid = clean.id();
    assert!(clean.wait().unwrap().success());
    assert!(!has_probe_group(&root, pid), "perflab {pid} exited and left its probes defined");

    // Killed mid-run: nothing could remove the group then.
    let mut killed = perflab_with_probes_defined(&root);
    let pid = killed.id();
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    killed.kill().unwrap();
    killed.wait().unwrap();
    for child in children.split_whitespace().filter_map(|c| c.parse::<i32>().ok()) {
        // SAFETY: kill has no memory preconditions; the sleep perflab started is ours to end.
        unsafe { libc::kill(child, libc::SIGKILL) };
    }
    if !has_probe_group(&root, pid) {
        // Only another perflab's sweep removes it (the tests of this file run in
        // parallel): the removal this test checks next has happened already.
        eprintln!("the group of killed perflab {pid} was swept by a concurrent perflab before it was looked at");
        return;
    }
    // The next perflab that defines a probe removes the dead one's.
    let out = perflab()
        .args(["stat", "-r", "1", "--no-progress", "-e", "uprobe:libc:malloc", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!has_probe_group(&root, pid), "the group of dead perflab {pid} is still defined");
}

/// `--count-in` refusals, one line and exit 2 before any run: a process name nothing
/// runs under, and a scope with no `-e` counters to scope.
#[test]
fn count_in_refusals_are_one_line_usage_errors() {
    for (args, message) in [
        (
            vec!["compare", "-r", "6", "--count-in", "comm:nosuchname", "-e", "task-clock", "true", "true"],
            "--count-in comm:nosuchname: no such process is running",
        ),
        (
            vec!["stat", "-r", "2", "--count-in", "comm:nosuchname", "-e", "task-clock", "true"],
            "--count-in comm:nosuchname: no such process is running",
        ),
        (vec!["compare", "-r", "6", "--count-in", "system", "true", "true"], "none are counted"),
        (vec!["stat", "-r", "2", "--count-in", "system", "true"], "none are given: add -e EVENTS"),
        (vec!["stat", "-r", "2", "--count-in", "comm:", "-e", "task-clock", "true"], "expected --count-in command"),
    ] {
        let out = perflab().arg(args[0]).arg("--no-progress").args(&args[1..]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("perflab: error")).collect();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
        assert!(errors[0].contains(message), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: refused before any run");
    }
    // Every CPU cannot be counted by a user perf_event_paranoid does not allow it: said
    // once, not as a reason on every counter.
    let paranoid: Option<i32> =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok().and_then(|l| l.trim().parse().ok());
    if !common::is_root() || which::which("setpriv").is_err() || paranoid.unwrap_or(0) <= 0 {
        common::skip_part(
            "--count-in system as an unprivileged user",
            "needs root, setpriv and perf_event_paranoid > 0",
        );
        return;
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["stat", "-r", "2", "--no-progress", "--count-in", "system", "-e", "task-clock", "/bin/true"])
        .current_dir("/tmp")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(126) {
        common::skip_part("--count-in system as an unprivileged user", &format!("nobody cannot run perflab: {stderr}"));
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--count-in system: counting every CPU needs root, CAP_PERFMON"), "{stderr}");
}

/// The postmaster of the PostgreSQL server at `url` and its executable, when the server
/// runs on this machine (the parent of this connection's backend); else the whole test is
/// skipped (said and counted).
fn local_server(url: &str) -> Option<(u32, std::path::PathBuf)> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let backend: i32 = client.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let status = std::fs::read_to_string(format!("/proc/{backend}/status")).unwrap_or_default();
    let postmaster = status.lines().find_map(|l| l.strip_prefix("PPid:")).and_then(|p| p.trim().parse::<u32>().ok());
    let exe = postmaster.and_then(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).ok());
    match (postmaster, exe) {
        (Some(pid), Some(exe)) if exe.file_name().is_some_and(|n| n == "postgres") => Some((pid, exe)),
        _ => {
            common::skip(&format!("the PostgreSQL server of PERFLAB_TEST_PG is not a postgres process of this machine (backend {backend})"));
            None
        }
    }
}

/// The server logs of this machine's PostgreSQL clusters (Debian's layout) and their
/// current lengths, to read what a test adds to them.
fn server_logs() -> Vec<(std::path::PathBuf, u64)> {
    let Ok(dir) = std::fs::read_dir("/var/log/postgresql") else { return Vec::new() };
    dir.flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .filter_map(|p| Some((p.clone(), std::fs::metadata(&p).ok()?.len())))
        .collect()
}

/// What the logs got since [`server_logs`] measured them.
fn logged_since(logs: &[(std::path::PathBuf, u64)]) -> String {
    use std::io::{Read, Seek};
    let mut text = String::new();
    for (path, from) in logs {
        let mut file = std::fs::File::open(path).unwrap();
        file.seek(std::io::SeekFrom::Start(*from)).unwrap();
        file.read_to_string(&mut text).unwrap();
    }
    text
}

/// Timing SQL from psql while counting palloc: the backend is the postmaster's child, not
/// psql's, so counted in the command both sides count 0 — said, not passed off as a
/// finding. With `--count-in comm:postgres` the backends are counted: more than 0 in every
/// run of each side, and nothing to warn about.
#[test]
fn a_probe_in_a_server_counts_0_in_the_client_and_is_counted_with_count_in() {
    if !common::is_root() {
        common::skip("counting uprobes needs root or CAP_PERFMON");
        return;
    }
    if !common::have("psql", "apt-get install postgresql-client") {
        return;
    }
    let Some(url) = common::pg::scratch_db("count_in") else { return };
    let Some((_, postgres)) = local_server(&url) else { return };
    let palloc = format!("uprobe:{}:palloc", postgres.display());
    let sides = [format!("psql -X -q -At {url} -c 'select 1'"), format!("psql -X -q -At {url} -c 'select 2'")];
    let dir = tempfile::tempdir().unwrap();
    let zero = "counted 0 in every run";
    for count_in in ["command", "comm:postgres"] {
        let json = dir.path().join(format!("{count_in}.json"));
        let out = perflab()
            .args(["compare", "-r", "6", "--no-progress", "--count-in", count_in, "-e", &palloc])
            .args(["--json", json.to_str().unwrap()])
            .args(&sides)
            .output()
            .unwrap();
        // The report and its warnings, wherever each is printed.
        let stderr = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{count_in}: {stderr}");
        let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let counts: Vec<f64> = doc["commands"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["runs"].as_array().unwrap())
            .map(|run| run["counters"][&palloc]["value"].as_f64().unwrap())
            .collect();
        assert_eq!(counts.len(), 12, "{count_in}: {counts:?}");
        let warned = stderr.contains(zero) && doc["warnings"].to_string().contains(zero);
        if count_in == "command" {
            assert!(counts.iter().all(|c| *c == 0.0), "psql never calls the server's palloc: {counts:?}");
            assert!(warned, "{stderr}");
            assert!(stderr.contains("--count-in comm:NAME"), "the warning says what to do: {stderr}");
        } else {
            assert!(counts.iter().all(|c| *c > 0.0), "each run's backend pallocs: {counts:?}");
            assert!(!stderr.contains(zero), "{stderr}");
            assert!(
                doc["environment"]["counted_in"].as_str().unwrap_or_default().contains("named postgres"),
                "{}",
                doc["environment"]
            );
        }
    }
    common::pg::drop_scratch(&url);
}

/// pgbench's summary: (transactions processed, failed transactions), asserting that no
/// client aborted (a refused connection aborts a client).
fn pgbench_outcome(text: &str) -> (u64, u64) {
    assert!(!text.contains("aborted"), "{text}");
    let number = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no `{prefix}` in pgbench's output: {text}"))
    };
    (number("number of transactions actually processed: "), number("number of failed transactions: "))
}

/// A server attached with probes keeps accepting connections: pgbench with a new
/// connection per transaction (-C) has no failed transaction and no aborted client while
/// `stat -p POSTMASTER -e uprobe:…:palloc` counts it, nor while `profile --alloc -p
/// POSTMASTER` records it, and the server logged no "could not fork" (the postmaster
/// refused every connection under the uprobe PMU with inherit).
#[test]
fn an_attached_probe_session_keeps_a_server_accepting_connections() {
    use std::io::BufRead;
    if !common::is_root() {
        common::skip("counting uprobes needs root or CAP_PERFMON");
        return;
    }
    if !common::have("pgbench", "apt-get install postgresql-contrib") {
        return;
    }
    let Some(url) = common::pg::scratch_db("attached_server") else { return };
    let Some((postmaster, postgres)) = local_server(&url) else { return };
    let init = std::process::Command::new("pgbench").args(["-i", "-q", "-s", "1", &url]).output().unwrap();
    assert!(init.status.success(), "pgbench -i: {}", String::from_utf8_lossy(&init.stderr));
    let logs = server_logs();
    let pid = postmaster.to_string();

    // Counted while pgbench runs as stat's command.
    let palloc = format!("uprobe:{}:palloc", postgres.display());
    let out = perflab()
        .args(["stat", "-p", &pid, "-e", &palloc, "--", "pgbench", "-C", "-c", "2", "-T", "3", &url])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let (processed, failed) = pgbench_outcome(&format!("{stdout}{stderr}"));
    assert!(processed > 0 && failed == 0, "{stdout}");
    let counted = stdout.lines().find(|l| l.contains(&palloc)).unwrap_or_else(|| panic!("{stdout}"));
    let count: u64 = counted.split_whitespace().last().unwrap().replace(',', "").parse().unwrap();
    assert!(count > processed, "every transaction's backend pallocs: {counted}");

    // Recorded by profile --alloc while pgbench runs beside it.
    let dir = tempfile::tempdir().unwrap();
    let mut profile = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["profile", "--alloc", "-p", &pid, "--duration", "4", "-o"])
        .arg(dir.path().join("server.profile"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(profile.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(first.starts_with("perflab: recording the allocations of"), "{first}");
    let bench = std::process::Command::new("pgbench").args(["-C", "-c", "2", "-T", "2", &url]).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&bench.stdout), String::from_utf8_lossy(&bench.stderr));
    assert!(bench.status.success(), "{text}");
    let (processed, failed) = pgbench_outcome(&text);
    assert!(processed > 0 && failed == 0, "{text}");
    let status = profile.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(status.success(), "{first}{rest}");

    if logs.is_empty() {
        common::skip_part("the server log check", "no readable /var/log/postgresql/*.log");
    } else {
        let logged = logged_since(&logs);
        assert!(!logged.contains("could not fork"), "{logged}");
    }
    common::pg::drop_scratch(&url);
}

/// `--count-in pid:PID` counts in that process tree instead of the command: the fixture's
/// 1,116 calls are not counted when a sleeping process is, and the zero-count warning
/// names the process counted.
#[test]
fn count_in_a_process_tree_counts_there_not_in_the_command() {
    if !common::is_root() {
        common::skip("counting uprobes needs root or CAP_PERFMON");
        return;
    }
    let fixture = common::fixture("probe_children");
    let f = fixture.display().to_string();
    let counted = format!("uprobe:{f}:counted");
    let mut sleeper = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id();
    let out = perflab()
        .args(["compare", "-r", "6", "--no-progress", "--json", "-", "--count-in", &format!("pid:{pid}")])
        .args(["-e", &counted, "-n", "a", "-n", "b", &f, &f])
        .output()
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc = json_of(&out);
    for run in doc["commands"].as_array().unwrap().iter().flat_map(|c| c["runs"].as_array().unwrap()) {
        assert_eq!(run["counters"][&counted]["value"].as_f64(), Some(0.0), "{run}");
    }
    let counted_in = doc["environment"]["counted_in"].as_str().unwrap_or_default();
    assert!(counted_in.starts_with(&format!("process {pid} and its descendants")), "{}", doc["environment"]);
    let warning = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["message"].as_str().is_some_and(|m| m.contains("counted 0 in every run")))
        .unwrap_or_else(|| panic!("{}", doc["warnings"]));
    assert!(warning["message"].as_str().unwrap().contains(&format!("it was counted in process {pid}")), "{warning}");
}
