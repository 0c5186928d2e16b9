//! Calls as counters: `-e uprobe:OBJECT:FUNCTION` counted per run by stat and compare,
//! checked exactly against a fixture whose every call is known (tests/fixtures/alloc_calls.c),
//! and the one-line refusals of probes that cannot be placed.
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

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
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
    if !is_root() {
        eprintln!("SKIP: counting uprobes needs root or CAP_PERFMON");
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
    if !is_root() {
        eprintln!("SKIP: counting uprobes needs root or CAP_PERFMON");
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
        if is_root() || !err.contains("need root") {
            assert_eq!(out.status.code(), Some(2), "{event}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{event}: {err}");
            assert!(err.contains(message), "{event}: {err}");
        }
    }
}

/// An unprivileged user is told, in one line, that uprobes need root or CAP_PERFMON.
#[test]
fn an_unprivileged_user_is_told_what_uprobes_need() {
    if !is_root() || which::which("setpriv").is_err() {
        eprintln!("SKIP: not root or no setpriv: cannot run as an unprivileged user here");
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
        eprintln!("SKIP: nobody cannot run the test binary here: {err}");
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
    if !is_root() {
        eprintln!("SKIP: counting uprobes needs root or CAP_PERFMON");
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
