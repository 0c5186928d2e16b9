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

/// The issue's reproduction: a printed metric ≤ 0 in the baseline cannot give a ratio.
/// It used to vanish from the comparisons while the gate passed with exit 0.
#[test]
fn a_metric_that_cannot_be_compared_is_reported_and_the_gate_fails_closed() {
    let out = perflab()
        .args(["compare", "-r6", "-w0", "--fail-if-slower", "--json", "-"])
        .args(["--output-metric", "v=(?<v>\\S+)", "--shell=/bin/sh", "echo v=0", "echo v=5"])
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
        .args(["--output-metric", "v=(?<v>\\S+)", "--shell=/bin/sh", "echo v=2", "echo w=5"])
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
        .args(["compare", "-r8", "-w0", "--output-metric", "v=(?<v>\\S+)", "--shell=/bin/sh", &alternating, "echo v=1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("4 of 8 rounds skipped: v ≤ 0 on a side"))
        .stdout(predicate::str::contains("warning: v of `echo v=1` vs"));
}

/// A gate without an interval (too few rounds for one) cannot pass. The reason it gives
/// depends on the machine: usually "too few rounds"; on a loaded one the runs of `true`
/// can leave no usable uncontended time, and the comparison is then "not comparable".
#[test]
fn the_gate_fails_closed_without_an_interval() {
    perflab()
        .args(["compare", "-r3", "-w0", "--fail-if-slower", "--", "true", "true"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("perflab: gate: cannot judge `true #2`"));
}

/// SQLite's WAL index (`-shm`) is a shared memory map: truncated under a running writer,
/// the next access faulted with SIGBUS (exit 135, no message). Now one line and exit 2,
/// and the runs committed before are still there.
#[test]
fn a_truncated_shared_memory_file_ends_in_one_line_and_keeps_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let shm = dir.path().join("h.db-shm");
    let bin = assert_cmd::cargo::cargo_bin("perflab");
    let child = std::process::Command::new(&bin)
        .args(["compare", "-r200", "-w0", "--save", "--db", db.to_str().unwrap(), "sleep 0.02", "sleep 0.02"])
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for a few committed runs, then cut the index to nothing.
    let start = std::time::Instant::now();
    while !shm.exists() || start.elapsed() < std::time::Duration::from_millis(700) {
        assert!(start.elapsed() < std::time::Duration::from_secs(30), "no -shm file appeared");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::OpenOptions::new().write(true).open(&shm).unwrap().set_len(0).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit 2, not a signal: {:?} {stderr}", out.status);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("perflab: error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("-shm"), "{stderr}");
    let history = perflab().args(["export", "--db", db.to_str().unwrap()]).assert().success().get_output().clone();
    let export = json_of(&history.stdout);
    let runs = export["experiments"][0]["experiment"]["commands"][0]["runs"].as_array().map_or(0, Vec::len);
    assert!(runs >= 1, "the committed runs are kept: {export}");
}

/// A command line running `perflab args` with `dir` mounted read-only in a private mount
/// namespace (root), or with `dir` and its files made read-only (anyone else).
fn on_read_only_dir(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("perflab");
    if common::is_root() {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        let script = format!(
            "mount --bind {0} {0} && mount -o remount,ro,bind {0} && NO_COLOR=1 {1} {2}",
            dir.display(),
            bin.display(),
            quoted.join(" ")
        );
        std::process::Command::new("unshare").args(["-m", "sh", "-c", &script]).output().unwrap()
    } else {
        use std::os::unix::fs::PermissionsExt;
        for entry in std::fs::read_dir(dir).unwrap() {
            std::fs::set_permissions(entry.unwrap().path(), std::fs::Permissions::from_mode(0o444)).unwrap();
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        let out = std::process::Command::new(bin).args(args).env("NO_COLOR", "1").output().unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        out
    }
}

/// A database on a read-only filesystem is opened read-only: history, report and
/// export read it; storing into it is one line and exit 2.
#[test]
fn a_database_on_a_read_only_filesystem_can_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    perflab().args(["compare", "-r6", "-w0", "--save", "--label", "v1", "--db", db, "true", "true"]).assert().success();
    let history = on_read_only_dir(dir.path(), &["history", "--db", db]);
    let stderr = String::from_utf8_lossy(&history.stderr);
    assert!(history.status.success(), "history: {stderr}");
    assert!(String::from_utf8_lossy(&history.stdout).contains("true"), "{history:?}");
    assert!(stderr.contains("read-only"), "the fallback is said: {stderr}");
    let export = on_read_only_dir(dir.path(), &["export", "--db", db]);
    assert!(export.status.success(), "export: {}", String::from_utf8_lossy(&export.stderr));
    assert_eq!(json_of(&export.stdout)["experiments"].as_array().unwrap().len(), 1);
    let report = dir.path().join("r.html");
    let out = on_read_only_dir(dir.path(), &["report", "--db", db, "-o", "/dev/null"]);
    assert!(out.status.success(), "report: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!report.exists());
    let save = on_read_only_dir(dir.path(), &["compare", "-r2", "-w0", "--save", "--db", db, "true", "true"]);
    assert_eq!(save.status.code(), Some(2), "{save:?}");
    let stderr = String::from_utf8_lossy(&save.stderr);
    assert_eq!(stderr.lines().filter(|l| l.starts_with("perflab: error")).count(), 1, "{stderr}");
}

/// A TCP server that accepts connections and never answers; its port.
fn silent_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    port
}

/// A PostgreSQL that accepts and never answers used to hang `history` and `run` for
/// minutes: the connect time-out ends them with one line and exit 2.
#[test]
fn a_silent_database_server_is_a_one_line_error_not_a_hang() {
    let db = format!("postgres://u@127.0.0.1:{}/db", silent_server());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("perflab.toml"), "[[benchmark]]\nname = \"t\"\ncommand = \"true\"\n").unwrap();
    for args in [&["history"][..], &["run", "--label", "x"]] {
        let start = std::time::Instant::now();
        let out = perflab()
            .current_dir(dir.path())
            .args(args)
            .args(["--db", &db])
            .env("PERFLAB_PG_CONNECT_TIMEOUT", "1s")
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("no answer within 1"), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().filter(|l| l.starts_with("perflab: error")).count(), 1, "{stderr}");
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "{args:?} took {:?}", start.elapsed());
    }
    // An agent waits it out like any outage, saying so, and stops on Ctrl-C.
    let bin = assert_cmd::cargo::cargo_bin("perflab");
    let log = dir.path().join("agent.log");
    let mut agent = std::process::Command::new(bin)
        .current_dir(dir.path())
        .args(["agent", "--allow-root", "--once", "--db", &db])
        .env("PERFLAB_PG_CONNECT_TIMEOUT", "1s")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&log).unwrap().contains("reconnecting in") {
        assert!(start.elapsed() < std::time::Duration::from_secs(30), "{}", std::fs::read_to_string(&log).unwrap());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: signalling a child this test started.
    unsafe { libc::kill(agent.id() as i32, libc::SIGINT) };
    assert_eq!(agent.wait().unwrap().code(), Some(130), "{}", std::fs::read_to_string(&log).unwrap());
}

/// A statement blocked on the server (a lock someone holds) is cancelled by the
/// statement time-out: one line, exit 2.
#[test]
fn a_blocked_statement_times_out() {
    let Some(db) = common::pg::scratch_db("faults_statement_timeout") else { return };
    perflab().args(["compare", "-r2", "-w0", "--save", "--db", &db, "true", "true"]).assert().success();
    let mut locker = postgres::Client::connect(&db, postgres::NoTls).unwrap();
    let mut transaction = locker.transaction().unwrap();
    transaction.batch_execute("LOCK TABLE experiments IN ACCESS EXCLUSIVE MODE").unwrap();
    let start = std::time::Instant::now();
    let out = perflab()
        .args(["history", "--db", &db])
        .env("PERFLAB_PG_STATEMENT_TIMEOUT", "1s")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("statement timeout"), "{stderr}");
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "took {:?}", start.elapsed());
    transaction.rollback().unwrap();
    common::pg::drop_scratch(&db);
}

/// A profile whose object is a FIFO made `show` wait forever for a writer: objects that
/// are not regular files are not opened (the samples keep their offsets, with a warning).
#[test]
fn a_fifo_named_as_an_object_is_not_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("object-fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let profile = format!(
        "perflab-profile 1\n{{\"event\":\"cpu-clock\",\"frequency_hz\":1000,\"command\":[\"x\"],\"started\":\"\",\"duration_s\":1,\"lost\":0,\"exit_code\":0,\"objects\":[{{\"path\":{:?}}}],\"tasks\":[{{\"pid\":1,\"tid\":1,\"comm\":\"x\"}}],\"samples\":[{{\"pid\":1,\"tid\":1,\"space\":\"user\",\"object\":0,\"offset\":4660,\"count\":5,\"period\":5000000}}]}}\n",
        fifo.to_str().unwrap()
    );
    let path = dir.path().join("p.profile");
    std::fs::write(&path, profile).unwrap();
    for command in [&["show"][..], &["show", "--by", "line"], &["annotate"], &["show", "--flamegraph", "/dev/null"]] {
        let out = perflab().args(command).arg(&path).timeout(std::time::Duration::from_secs(30)).output().unwrap();
        assert!(out.status.code().is_some(), "{command:?} did not end: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.code() == Some(0) || out.status.code() == Some(2), "{command:?}: {out:?}");
        if command == ["show"] {
            assert!(text.contains("object-fifo+0x1234"), "{text}");
        }
    }
}

/// A suite command of 200,000 `{` (none a placeholder) is read at once: finding the
/// placeholders was quadratic (32,000 `{` took 9.8 s; this many would take minutes).
#[test]
fn a_suite_command_of_many_braces_is_read_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let braces = "{".repeat(200_000);
    std::fs::write(
        dir.path().join("perflab.toml"),
        format!("[[benchmark]]\nname = \"b\"\ncommand = \"echo {braces}\"\n"),
    )
    .unwrap();
    let out = perflab()
        .current_dir(dir.path())
        .args(["run", "--list"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&braces), "the command is listed as written");
}

/// An invalid regular expression is one line (the regex library's message spans several,
/// quoting the pattern with a caret under the fault), with the usage exit code.
#[test]
fn an_invalid_regex_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("perflab.toml"), "[[benchmark]]\nname = \"b\"\ncommand = \"true\"\n").unwrap();
    let suite = perflab().current_dir(dir.path()).args(["run", "--list", "--filter", "a(b"]).output().unwrap();
    let metric = perflab().args(["compare", "-r2", "--output-metric", "v=(?<v>\\d+", "true", "true"]).output().unwrap();
    for (what, out) in [("--filter", suite), ("--output-metric", metric)] {
        assert_eq!(out.status.code(), Some(2), "{what}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{what}: {stderr}");
        assert!(stderr.contains("not a regular expression") && stderr.contains("unclosed group"), "{what}: {stderr}");
    }
}

/// Run `argv` and return its exit code and the peak resident memory of it and every
/// process it waited for (wait4's rusage; GNU time's %M), in KiB.
// The child is reaped by wait4 below (Child::wait would not give its rusage).
#[allow(clippy::zombie_processes)]
fn exit_and_peak_rss(argv: &[&str]) -> (i32, std::process::Output, i64) {
    use std::os::unix::process::ExitStatusExt;
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(argv)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    // Drain the pipes on threads, then reap the child ourselves for its rusage.
    let mut stdout = child.stdout.unwrap();
    let mut stderr = child.stderr.unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut b).unwrap();
        b
    });
    let err_thread = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut b).unwrap();
        b
    });
    let mut status = 0;
    // SAFETY: wait4 on our own child, into live locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    let status = std::process::ExitStatus::from_raw(status);
    let output =
        std::process::Output { status, stdout: out_thread.join().unwrap(), stderr: err_thread.join().unwrap() };
    (status.code().unwrap_or(-1), output, usage.ru_maxrss)
}

/// `--output-metric` held a run's whole output in memory (1 GiB printed made perflab's
/// peak RSS 1.06 GB): the output is parsed as it arrives, so printing 24 MiB per run
/// costs about what printing it to /dev/null does. A line longer than the parsers keep
/// (1 MiB) is skipped, the lines after it still read, and stderr's metrics too.
#[test]
fn metrics_are_read_from_output_of_any_size_in_bounded_memory() {
    let command = "yes 0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000 \
                   | head -c 25165824; head -c 2097152 /dev/zero | tr '\\0' x; echo; echo v=5; echo w=7 >&2";
    let base = ["compare", "-r2", "-w0", "--no-progress", "--json", "-", "--shell=/bin/sh"];
    let (code, _, reference_kib) = exit_and_peak_rss(&[&base[..], &[command, command]].concat());
    assert_eq!(code, 0);
    let metrics = ["--output-metric", "v=(?<v>[0-9]+)", "--output-metric", "w=(?<w>[0-9]+)"];
    let (code, out, parsing_kib) = exit_and_peak_rss(&[&base[..], &metrics, &[command, command]].concat());
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    let json = json_of(&out.stdout);
    for c in json["commands"].as_array().unwrap() {
        for run in c["runs"].as_array().unwrap() {
            assert_eq!(run["counters"]["v"]["value"], 5.0, "{run}");
            assert_eq!(run["counters"]["w"]["value"], 7.0, "{run}");
        }
    }
    // Holding one run's output would add 26 MiB.
    assert!(parsing_kib < reference_kib + 8 * 1024, "peak RSS {parsing_kib} KiB parsing, {reference_kib} KiB without");
}

/// A run that fails after printing a lot is explained by the end of its stderr, which
/// the reader keeps (the output itself is not).
#[test]
fn a_failing_run_with_printed_metrics_is_explained_by_its_stderr() {
    let command = "yes | head -c 4194304; echo v=1; echo 'fatal: the disk is on fire' >&2; exit 3";
    perflab()
        .args([
            "compare",
            "-r2",
            "-w0",
            "--no-progress",
            "--output-metric",
            "v=(?<v>[0-9]+)",
            "--shell=/bin/sh",
            command,
            command,
        ])
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(3)
        .stderr(predicate::str::contains("fatal: the disk is on fire"));
}

/// A measured command's background children are ended with it (they would run beside,
/// and write into, the next run); `--keep-children` leaves them, as before.
#[test]
fn a_runs_process_group_is_ended_after_it_unless_kept() {
    let dir = tempfile::tempdir().unwrap();
    let pids = |name: &str| -> Vec<i32> {
        std::fs::read_to_string(dir.path().join(name)).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect()
    };
    let alive = |pid: i32| {
        // A zombie is not alive: its state is Z in /proc/PID/stat (or it is gone).
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
            .unwrap_or(false)
    };
    let background = |name: &str| format!("sleep 30 & echo $! >> {}", dir.path().join(name).display());
    for (file, keep) in [("ended", false), ("kept", true)] {
        let mut cmd = perflab();
        cmd.args(["compare", "-r", "2", "-w", "0", "--no-progress", "--shell=/bin/sh"]);
        if keep {
            cmd.arg("--keep-children");
        }
        cmd.args([&background(file), "true"]).assert().success();
        let started = pids(file);
        assert_eq!(started.len(), 2, "{started:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        for pid in started {
            assert_eq!(alive(pid), keep, "background child {pid}, --keep-children {keep}");
            if keep {
                // SAFETY: ending the sleeper this test left running.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}
