//! End-to-end tests of profiling for systems work: attaching to running processes
//! (`-p`), every CPU (`-a`), off-CPU time (`--off-cpu`), the live view (`top`), and the
//! messages an unprivileged user gets. Tests that need privileges say why they skip.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn perflab() -> Command {
    Command::cargo_bin("perflab").unwrap()
}

use common::is_root;

fn paranoid() -> i32 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap().trim().parse().unwrap()
}

/// Whether root, or perf_event_paranoid ≤ `at_most`, allows `what`; says why it skips if not.
fn allowed(at_most: i32, what: &str) -> bool {
    let ok = is_root() || paranoid() <= at_most;
    if !ok {
        common::skip(&format!("perf_event_paranoid={} and not root: {what} is not allowed", paranoid()));
    }
    ok
}

/// A fixture process, in its own process group, killed with everything it started
/// when the test ends, however it ends.
struct Running(Child);

impl Running {
    fn start(argv: &[&str]) -> Running {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new(argv[0]);
        command.args(&argv[1..]).stdout(Stdio::null()).process_group(0);
        Running(command.spawn().unwrap())
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // SAFETY: signalling the process group this test created.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// The JSON report of `perflab profile ARGS --json -`.
fn profile_json(args: &[&str], dir: &std::path::Path) -> Value {
    let out = perflab()
        .arg("profile")
        .arg("-o")
        .arg(dir.join("p.profile"))
        .args(["--json", "-"])
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// The flat row of a function (rows do not split by process: the fixtures' function
/// names are unique on the machine).
fn function<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["functions"].as_array().unwrap().iter().find(|f| f["name"] == name)
}

fn samples_of_pid(report: &Value, pid: u32) -> u64 {
    report["tasks"].as_array().unwrap().iter().filter(|t| t["pid"] == pid).map(|t| t["samples"].as_u64().unwrap()).sum()
}

/// Wait until the process has used some CPU (it is past exec and the dynamic loader).
fn wait_until_running(pid: u32) {
    let stat = || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        let fields: Vec<String> =
            stat().rsplit_once(')').map_or(vec![], |(_, r)| r.split_whitespace().map(String::from).collect());
        if fields.get(11).is_some_and(|utime| utime != "0") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn attaching_with_p_finds_the_hot_function_of_a_running_process() {
    let exe = common::fixture("profile_ratio");
    let target = Running::start(&[exe.to_str().unwrap(), "100000000000"]);
    wait_until_running(target.pid());
    let dir = tempfile::tempdir().unwrap();
    let pid = target.pid().to_string();
    let report = profile_json(&["-p", &pid, "--duration", "1", "-F", "2000"], dir.path());
    assert_eq!(report["target"], serde_json::json!({ "pids": [target.pid()] }), "{report:#}");
    // A busy machine (tests run in parallel) may give the fixture a fraction of a CPU.
    assert!(report["samples"].as_u64().unwrap() > 50, "{}", report["samples"]);
    assert_eq!(report["functions"][0]["name"], "heavy_work", "{report:#}");
    assert_eq!(report["functions"][0]["object"], "profile_ratio");
    // --duration 1: a timer of 1 s, then the records are read (beside two burners
    // perflab waits milliseconds for a CPU, not seconds).
    let duration = report["duration_s"].as_f64().unwrap();
    assert!((0.9..3.0).contains(&duration), "{duration}");
    // The attached process keeps running: attaching never stops it.
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn attaching_follows_processes_the_target_starts_later() {
    let exe = common::fixture("profile_ratio");
    // The shell is attached to while it sleeps; the fixture it starts afterwards (fork
    // + exec, never seen in /proc by perflab) must be sampled and symbolized too.
    let script = format!("sleep 0.5; {} 100000000000", exe.display());
    let shell = Running::start(&["/bin/sh", "-c", &script]);
    let dir = tempfile::tempdir().unwrap();
    let report = profile_json(&["-p", &shell.pid().to_string(), "--duration", "1.5", "-F", "2000"], dir.path());
    let heavy = function(&report, "heavy_work").unwrap_or_else(|| panic!("{report:#}"));
    assert!(heavy["self_samples"].as_u64().unwrap() > 50, "{heavy}");
    assert_eq!(heavy["object"], "profile_ratio");
}

#[test]
fn all_cpus_with_a_finds_a_running_process_and_one_started_meanwhile() {
    if !allowed(0, "-a") {
        return;
    }
    let exe = common::fixture("profile_ratio");
    let before = Running::start(&[exe.to_str().unwrap(), "100000000000"]);
    wait_until_running(before.pid());
    let dir = tempfile::tempdir().unwrap();
    let recording = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["profile", "-a", "--duration", "2", "-F", "1000", "-o"])
        .arg(dir.path().join("a.profile"))
        .args(["--json", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let during = Running::start(&[common::fixture("profile_callgraph").to_str().unwrap(), "100000000000"]);
    let out = recording.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["target"], "all_cpus");
    assert!(samples_of_pid(&report, before.pid()) > 50, "{:#}", report["tasks"]);
    assert!(function(&report, "heavy_work").is_some_and(|f| f["self_samples"].as_u64().unwrap() > 50));
    // Started after the recording began: known only from its FORK/COMM/MMAP2 records.
    assert!(samples_of_pid(&report, during.pid()) > 30, "{:#}", report["tasks"]);
    assert!(function(&report, "leaf").is_some_and(|f| f["object"] == "profile_callgraph"), "{report:#}");
}

#[test]
fn off_cpu_time_of_a_half_sleeping_thread_is_half_in_its_sleeping_function() {
    if !allowed(1, "--off-cpu") {
        return;
    }
    let exe = common::fixture("offcpu_half");
    let dir = tempfile::tempdir().unwrap();
    // 50 ms phases: a busy machine (tests run in parallel) delays each wake-up by a
    // few ms, which counts as off-CPU time (the thread is not running) but must stay
    // small against the sleep.
    let report = profile_json(&["--off-cpu", "--", exe.to_str().unwrap(), "12", "50"], dir.path());
    let off = &report["off_cpu"];
    let row = |name: &str| {
        off["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{off:#}"))
    };
    let nap = row("nap");
    // 12 naps of 50 ms: at least that long blocked, plus the wake-up latency — a few ms
    // each beside two burners, 10–15 ms beside six (0.71–0.74 s in all): 1.5 s would
    // take 75 ms per wake-up.
    let nap_s = nap["off_cpu_s"].as_f64().unwrap();
    assert!((0.59..1.5).contains(&nap_s), "{nap}");
    assert!(nap["on_cpu_s"].as_f64().unwrap() < 0.05, "{nap}");
    let burn = row("burn");
    // burn runs 12 × 50 ms of its own CPU clock: all of main's on-CPU time but the
    // loader's and the system calls'; burn's own share of it shrinks on a busy machine
    // (a sample taken at a preemption lands in the kernel above burn: 0.38–0.41 s of
    // 0.6 beside six burners), so only its never-blocked time is asserted.
    let main = row("main");
    assert!((0.5..0.8).contains(&main["on_cpu_s"].as_f64().unwrap()), "{main}");
    assert!(burn["off_cpu_s"].as_f64().unwrap() < 0.05 && burn["on_cpu_s"].as_f64().unwrap() > 0.0, "{burn}");
    // A share is of the thread's time on and off the CPU: nap's is the larger.
    assert!(nap["share"].as_f64().unwrap() > burn["share"].as_f64().unwrap(), "{nap} {burn}");
    // The longest-blocked stack goes through nap into the kernel's sleep.
    let stack: Vec<&str> = off["stacks"][0]["frames"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(stack.windows(2).any(|w| w == ["main", "nap"]), "{stack:?}");
    assert!(stack.contains(&"do_nanosleep"), "{stack:?}");
    assert_eq!(off["stacks"][0]["blocks"], 12);
    // Saved and shown again: the same side-by-side view.
    let shown = perflab().arg("show").arg(dir.path().join("p.profile")).assert().success().get_output().stdout.clone();
    let text = String::from_utf8_lossy(&shown);
    assert!(text.contains("off-CPU") && text.contains("longest-blocked stacks"), "{text}");
}

/// `-g dwarf` with the other targets: an attached process built without frame pointers
/// is unwound to `_start` (its existing mappings reach the unwinder), and so are blocked
/// stacks with `--off-cpu`.
#[test]
fn dwarf_unwinding_works_when_attaching_and_for_off_cpu_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let exe = common::fixture_with("profile_callgraph", &["-O2", "-fomit-frame-pointer"]);
    let target = Running::start(&[exe.to_str().unwrap(), "100000000000"]);
    wait_until_running(target.pid());
    let folded = dir.path().join("p.folded");
    let pid = target.pid().to_string();
    let args = ["-p", &pid, "-g", "dwarf", "--duration", "1", "-F", "2000", "--folded", folded.to_str().unwrap()];
    profile_json(&args, dir.path());
    let folded = std::fs::read_to_string(&folded).unwrap();
    // The fixture starts with a long call of a (3N iterations of leaf), unwound to _start.
    let from_start: String =
        folded.lines().filter(|l| l.split(';').any(|f| f == "_start")).map(|l| format!("{l}\n")).collect();
    let via_a = common::folded_ending_with(&from_start, &["main", "a", "leaf"]);
    assert!(via_a > 50, "{folded}");

    if !is_root() && paranoid() > 1 {
        let reason = format!("perf_event_paranoid={} and not root: --off-cpu is not allowed", paranoid());
        common::skip_part("the off-CPU half", &reason);
        return;
    }
    // Without frame pointers the kernel's walk of the blocked thread stops in nap.
    let exe = common::fixture_with("offcpu_half", &["-fomit-frame-pointer"]);
    let report = profile_json(&["--off-cpu", "-g", "dwarf", "--", exe.to_str().unwrap(), "6", "20"], dir.path());
    let stack: Vec<&str> =
        report["off_cpu"]["stacks"][0]["frames"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(stack.windows(2).any(|w| w == ["main", "nap"]) && stack.contains(&"do_nanosleep"), "{stack:?}");
}

#[test]
fn target_options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.profile");
    let fails = |args: &[&str], message: &str| {
        perflab()
            .arg("profile")
            .args(args)
            .arg("-o")
            .arg(&out)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
    };
    fails(&[], "nothing to profile");
    fails(&["-p", "1", "--", "true"], "one target");
    fails(&["-p", "x"], "not a process id");
    fails(&["-p", "1", "-a"], "cannot be used with");
    fails(&["--duration", "1", "--", "true"], "--duration is for -p and -a");
    fails(&["-p", "999999999", "--duration", "1"], "no process with PID 999999999");
    fails(&["-p", "1", "--duration", "0"], "positive duration");
}

/// Run perflab as the unprivileged user `nobody` (setpriv), or None when that is not
/// possible here.
fn as_nobody(args: &[&str]) -> Option<std::process::Output> {
    if !is_root() || which::which("setpriv").is_err() {
        common::skip("not root or no setpriv: cannot test as an unprivileged user");
        return None;
    }
    let exe = assert_cmd::cargo::cargo_bin("perflab");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(&exe)
        .args(args)
        .current_dir("/tmp")
        .output()
        .unwrap();
    Some(out)
}

#[test]
fn unprivileged_users_get_one_line_paranoid_messages() {
    if paranoid() < 2 {
        common::skip(&format!("perf_event_paranoid={} lets unprivileged users do more", paranoid()));
        return;
    }
    let cases: [(&[&str], &str); 3] = [
        (&["profile", "-a", "--duration", "0.2", "-o", "/tmp/nobody.profile"], "-a needs root"),
        (&["profile", "-p", "1", "--duration", "0.2", "-o", "/tmp/nobody.profile"], "not allowed to attach"),
        (&["profile", "--off-cpu", "-o", "/tmp/nobody.profile", "--", "true"], "--off-cpu needs kernel samples"),
    ];
    for (args, message) in cases {
        let Some(out) = as_nobody(args) else { return };
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(message) && err.contains("perf_event_paranoid is"), "{args:?}: {err}");
    }
    // Profiling one's own command still works, user space only.
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = dir.path().join("nobody.profile");
    let args = ["profile", "-o", out.to_str().unwrap(), "--json", "-", "--", exe.to_str().unwrap(), "20000000"];
    let Some(out) = as_nobody(&args) else { return };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["functions"][0]["name"], "heavy_work");
}

#[test]
fn attaching_to_a_postgres_backend_during_pgbench_names_postgres_functions() {
    let Some(url) = common::pg::scratch_db("attach_pgbench") else { return };
    if !common::have("pgbench", "apt-get install postgresql") {
        return;
    }
    let init = std::process::Command::new("pgbench").args(["-q", "-i", "-s", "1", &url]).output().unwrap();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let bench = Running::start(&["pgbench", "-n", "-c", "1", "-T", "20", &url]);
    // pgbench's backend: the server process serving the client named `pgbench`. pgbench
    // first opens and closes a setup connection: take a backend that stays.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let query = "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' AND datname = current_database()";
    let start = Instant::now();
    let mut seen: Vec<i32> = Vec::new();
    let backend: i32 = loop {
        let now: Vec<i32> = client.query(query, &[]).unwrap().iter().map(|row| row.get(0)).collect();
        if let Some(&pid) = now.iter().find(|pid| seen.contains(pid)) {
            break pid;
        }
        seen = now;
        assert!(start.elapsed() < Duration::from_secs(10), "pgbench never kept a connection");
        std::thread::sleep(Duration::from_millis(500));
    };
    let dir = tempfile::tempdir().unwrap();
    let report = profile_json(&["-p", &backend.to_string(), "--duration", "2", "-F", "2000"], dir.path());
    drop(bench);
    drop(client);
    common::pg::drop_scratch(&url);
    let objects = report["objects"].as_array().unwrap();
    let postgres = objects
        .iter()
        .find(|o| o["name"].as_str().unwrap().ends_with("/postgres"))
        .unwrap_or_else(|| panic!("{objects:#?}"));
    // A backend serving pgbench mostly waits for its client and the WAL flush, and the
    // machine may be busy: a few dozen samples of its own code in 2 s are plenty.
    assert!(postgres["self_samples"].as_u64().unwrap() >= 10, "{objects:#?}");
    // The server binary's functions are named (from its dynamic symbols), not offsets.
    let named = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["object"] == "postgres" && !f["name"].as_str().unwrap().contains("+0x"))
        .count();
    assert!(named >= 5, "{report:#}");
}

/// The stdout of a successful `perflab top ARGS` (not on a terminal: plain frames).
fn top_output(args: &[&str]) -> String {
    String::from_utf8(perflab().arg("top").args(args).assert().success().get_output().stdout.clone()).unwrap()
}

#[test]
fn top_in_batch_mode_prints_plain_frames_of_a_command_and_of_an_attached_process() {
    let exe = common::fixture("profile_ratio");
    // An argument no other test uses, to find the command in /proc afterwards.
    let arg = "100000000004";
    let text =
        top_output(&["--iterations", "2", "--interval", "0.4", "--limit", "5", "--", exe.to_str().unwrap(), arg]);
    assert_eq!(text.matches("perflab top — ").count(), 2, "{text}");
    assert!(!text.contains('\u{1b}'), "plain text without a terminal: {text}");
    // The first frame may be mostly the dynamic loader; the program is in the frames.
    assert!(text.lines().any(|l| l.contains("heavy_work") && l.contains("[profile_ratio]")), "{text}");
    // The command was stopped with the view.
    assert!(!running_with_arg(arg, &exe), "the watched command outlived top");

    let target = Running::start(&[exe.to_str().unwrap(), "100000000001"]);
    wait_until_running(target.pid());
    let text = top_output(&["--batch", "--iterations", "1", "--interval", "0.5", "-p", &target.pid().to_string()]);
    assert!(text.contains(&format!("PID {}", target.pid())) && text.contains("heavy_work"), "{text}");
}

/// Whether a process runs `exe` with `arg` (found through /proc).
fn running_with_arg(arg: &str, exe: &std::path::Path) -> bool {
    std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()).any(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        args.first().is_some_and(|a| *a == exe.as_os_str().as_encoded_bytes()) && args.contains(&arg.as_bytes())
    })
}

/// tmux drives the live view on a real terminal: it draws, sorts and pauses on keys,
/// quits on the key (Ctrl-C is an interruption: 130), stops the command, gives the
/// screen back and leaves the last frame on it.
#[test]
fn top_on_a_terminal_takes_keys_quits_on_q_and_ctrl_c_and_keeps_the_last_frame() {
    if !common::have("tmux", "apt-get install tmux") {
        return;
    }
    let exe = common::fixture("profile_ratio");
    let perflab = assert_cmd::cargo::cargo_bin("perflab");
    for (n, key, exit) in [("q", "q", "EXIT=0"), ("ctrl-c", "C-c", "EXIT=130")] {
        let session = format!("perflab-top-{}-{n}", std::process::id());
        let arg = format!("10000000000{}", if n == "q" { 2 } else { 3 });
        let script = format!(
            "echo BEFORE; {} top --interval 0.3 -- {} {arg}; echo EXIT=$?; sleep 30",
            perflab.display(),
            exe.display()
        );
        let tmux = |args: &[&str]| std::process::Command::new("tmux").args(args).output().unwrap();
        let started = tmux(&["new-session", "-d", "-s", &session, "-x", "120", "-y", "30", "sh", "-c", &script]);
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        let screen = || String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", &session]).stdout).into_owned();
        let wait_for = |text: &str| {
            let start = Instant::now();
            while !screen().contains(text) {
                assert!(start.elapsed() < Duration::from_secs(20), "never saw {text:?}:\n{}", screen());
                std::thread::sleep(Duration::from_millis(100));
            }
        };
        wait_for("heavy_work");
        let live = screen();
        assert!(live.contains("perflab top — ") && !live.contains("BEFORE"), "the view has the screen:\n{live}");
        assert!(live.contains("keys: q quit · s sort · / filter · p pause") && live.contains("command"), "{live}");
        tmux(&["send-keys", "-t", &session, "s"]);
        wait_for("sorted by pid");
        tmux(&["send-keys", "-t", &session, "p"]);
        wait_for("PAUSED");
        tmux(&["send-keys", "-t", &session, key]);
        wait_for(exit);
        let after = screen();
        tmux(&["kill-session", "-t", &session]);
        // The shell's screen is back, with the last frame printed below what was there.
        let (before, frame) = (after.find("BEFORE"), after.find("perflab top — "));
        assert!(before.is_some() && frame > before && after.contains("heavy_work"), "screen not restored:\n{after}");
        assert!(!running_with_arg(&arg, &exe), "the watched command outlived top");
    }
}
