//! Counters, `perflab stat` and instruction mode, end to end through the binary.

mod common;

use assert_cmd::Command;
use serde_json::Value;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1").env_remove(perflab_sys::perf::counters::FORCE_NO_PMU_ENV);
    cmd
}

fn spin() -> String {
    common::fixture("spin").display().to_string()
}

fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn metric<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["metrics"]
        .as_array()
        .expect("metrics array")
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} in {}", doc["metrics"]))
}

const HARDWARE: [&str; 4] = ["cycles", "instructions", "branches", "branch-misses"];

#[test]
fn stat_without_pmu_reports_software_counters_and_unsupported_hardware() {
    let output = perflab()
        .env(perflab_sys::perf::counters::FORCE_NO_PMU_ENV, "1")
        .args(["stat", "-r", "3", "--no-progress", "--json", "-", &spin(), "200000"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc = json_of(&output);
    let user_only = doc["environment"]["counter_scope"] == "user";
    for name in ["task-clock", "page-faults", "context-switches"] {
        let m = metric(&doc, name);
        if name == "context-switches" && user_only {
            // Happen in kernel mode: user-only counting cannot see them.
            assert_eq!(m["supported"], false, "{m}");
            continue;
        }
        assert_eq!(m["supported"], true, "{m}");
        assert!(m["value"].as_f64().is_some(), "{m}");
        assert_eq!(m["summary"]["n"], 3, "{m}");
    }
    assert!(metric(&doc, "task-clock")["value"].as_f64().unwrap() > 0.0);
    assert!(metric(&doc, "page-faults")["value"].as_f64().unwrap() > 0.0);
    for name in HARDWARE.iter().chain(&["ipc", "branch-miss-rate"]) {
        let m = metric(&doc, name);
        assert_eq!(m["supported"], false, "{m}");
        assert!(m.get("value").is_none(), "an unsupported counter must have no value: {m}");
        assert!(!m["reason"].as_str().unwrap_or("").is_empty(), "{m}");
    }
    assert!(metric(&doc, "cycles")["reason"].as_str().unwrap().contains("no hardware PMU"));
    let warnings = doc["warnings"].as_array().unwrap();
    let degraded: Vec<&str> =
        warnings.iter().filter(|w| w["kind"] == "unsupported").map(|w| w["message"].as_str().unwrap()).collect();
    assert!(
        degraded.iter().any(|m| m.contains("`cycles`") && m.contains("no hardware PMU")),
        "the hardware events that were dropped are a warning: {degraded:?}"
    );
    assert!(!degraded.iter().any(|m| m.contains("`ipc`")), "a derived rate is not warned twice: {degraded:?}");
    // Per run too: never a zero for what could not be counted.
    let run = &doc["commands"][0]["runs"][0]["counters"]["instructions"];
    assert_eq!(run["supported"], false, "{run}");
    assert!(run.get("value").is_none());
}

/// This machine as it is: every counter either has a value or says why not.
#[test]
fn stat_on_this_machine_gives_a_value_or_a_reason_for_every_counter() {
    let output =
        perflab().args(["stat", "-r", "2", "--no-progress", "--json", "-", &spin(), "100000"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc = json_of(&output);
    for name in perflab_sys::perf::counters::DEFAULT_STAT_EVENTS {
        let m = metric(&doc, name);
        match m["supported"].as_bool() {
            Some(true) => assert!(m["value"].as_f64().is_some(), "{m}"),
            Some(false) => {
                assert!(m["reason"].as_str().is_some_and(|r| !r.is_empty()) && m.get("value").is_none(), "{m}")
            }
            None => panic!("no `supported` in {m}"),
        }
    }
    assert!(metric(&doc, "task-clock")["supported"].as_bool().unwrap());
}

#[test]
fn stat_terminal_lists_unsupported_counters_with_reasons() {
    let output = perflab()
        .env(perflab_sys::perf::counters::FORCE_NO_PMU_ENV, "1")
        .args(["stat", "-r", "2", "--no-progress", "-e", "task-clock,cycles", &spin(), "100000"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("task-clock") && text.contains("wall_s"), "{text}");
    assert!(text.contains("cycles") && text.contains("<not supported>") && text.contains("no hardware PMU"), "{text}");
}

#[test]
fn unknown_event_is_a_usage_error_listing_the_valid_ones() {
    let output = perflab().args(["stat", "-e", "cycles,bogus", &spin()]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown event `bogus`") && stderr.contains("branch-misses"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn events_and_instruction_mode_are_exclusive() {
    let output = perflab().args(["stat", "--mode", "instructions", "-e", "cycles", &spin()]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("-e cannot be combined with --mode instructions"));
}

#[test]
fn missing_valgrind_is_exit_2_with_the_install_hint() {
    for args in [
        vec!["stat".to_string(), "--mode".into(), "instructions".into(), spin()],
        vec![
            "compare".to_string(),
            "--mode".into(),
            "instructions".into(),
            format!("{} 10", spin()),
            format!("{} 20", spin()),
        ],
    ] {
        let output = perflab().env("PATH", "/nonexistent").args(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("valgrind") && stderr.contains("apt-get install valgrind"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

/// spin N vs spin 1.01·N: the loop dominates (4 instructions per iteration against
/// ~0.1 M of start-up), so the true instruction ratio is 1.01 within 0.02 %.
#[test]
fn instruction_mode_gets_a_one_percent_difference_from_one_run_each() {
    if !common::have_valgrind() {
        return;
    }
    let output = perflab()
        .args(["compare", "--mode", "instructions", "--no-progress", "--json", "-"])
        .arg(format!("{} 2000000", spin()))
        .arg(format!("{} 2020000", spin()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc = json_of(&output);
    assert_eq!(doc["rounds"], 1, "one run per command suffices");
    let comparison = doc["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "instructions")
        .expect("an instructions comparison");
    let ratio = comparison["ratio"].as_f64().unwrap();
    assert!((ratio / 1.01 - 1.0).abs() < 0.001, "ratio {ratio} not within 0.1 % of 1.01");
    assert_eq!(comparison["verdict"], "slower", "{comparison}");
    // One run each shows no spread: no interval, and the flag says why the ratio decides.
    assert!(comparison["ci_high"].is_null(), "no interval from one run: {comparison}");
    assert!(comparison["flags"][0].as_str().unwrap().starts_with("one run each: no interval"), "{comparison}");
    for name in ["estimated_cycles", "branch_mispredicts", "d1_misses", "ll_misses"] {
        assert!(doc["comparisons"].as_array().unwrap().iter().any(|c| c["metric"] == name), "no {name} comparison");
    }
    let env = &doc["environment"];
    for key in ["valgrind_version", "glibc_version", "glibc_hwcaps", "binary_sha256", "cachegrind_caches"] {
        assert!(env.get(key).is_some(), "environment lacks {key}: {env}");
    }
    assert_eq!(doc["settings"]["env_padding"], false);
}

#[test]
fn stat_instruction_mode_reports_exact_repeats() {
    if !common::have_valgrind() {
        return;
    }
    let output = perflab()
        .args(["stat", "--mode", "instructions", "-r", "2", "--no-progress", "--json", "-", &spin(), "100000"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc = json_of(&output);
    let instructions = metric(&doc, "instructions");
    assert_eq!(instructions["exact"], true, "{instructions}");
    assert!(instructions["value"].as_f64().unwrap() > 400_000.0, "{instructions}");
    for name in ["estimated_cycles", "branch_mispredicts", "d1_misses", "ll_misses", "data_reads"] {
        assert_eq!(metric(&doc, name)["supported"], true);
    }
}

#[test]
fn stat_instruction_mode_shows_the_spread_of_counts_that_differ() {
    if !common::have_valgrind() {
        return;
    }
    let jitter = common::fixture("jitter").display().to_string();
    let output = perflab()
        .args(["stat", "--mode", "instructions", "-r", "3", "--no-progress", "--json", "-", &jitter, "50000"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc = json_of(&output);
    let m = metric(&doc, "instructions");
    assert_eq!(m["exact"], false, "{m}");
    assert!(m["summary"]["min"].as_f64() < m["summary"]["max"].as_f64(), "{m}");
    let text = perflab()
        .args(["stat", "--mode", "instructions", "-r", "3", "--no-progress", &jitter, "50000"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let line = text.lines().find(|l| l.trim_start().starts_with("instructions")).expect("instructions row");
    assert!(line.contains("± ") && line.contains(" … "), "spread missing: {line}");
}

#[test]
fn a_failing_program_under_valgrind_keeps_its_exit_code() {
    if !common::have_valgrind() {
        return;
    }
    let output = perflab().args(["stat", "--mode", "instructions", "--no-progress", "false"]).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("exited with code 1"));
}

/// Every counter becomes a metric with its own comparison, at the Bonferroni level over
/// the counters that could be measured; unsupported ones are listed, not compared.
#[test]
fn compare_with_events_compares_each_measured_counter_at_the_corrected_level() {
    let output = perflab()
        .env(perflab_sys::perf::counters::FORCE_NO_PMU_ENV, "1")
        .args(["compare", "-r", "6", "-e", "task-clock,page-faults,cycles", "--no-progress", "--json", "-"])
        .arg(format!("{} 100000", spin()))
        .arg(format!("{} 200000", spin()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc = json_of(&output);
    let comparisons = doc["comparisons"].as_array().unwrap();
    let level = |metric: &str| {
        comparisons.iter().find(|c| c["metric"] == metric).unwrap_or_else(|| panic!("no {metric} comparison"))
            ["look_confidence"]
            .as_f64()
            .unwrap()
    };
    assert!((level("wall_s") - 0.95).abs() < 1e-9);
    // Two measurable counters (task-clock, page-faults): 1 − 0.05/2 each.
    assert!((level("task-clock") - 0.975).abs() < 1e-9);
    assert!((level("page-faults") - 0.975).abs() < 1e-9);
    assert!(!comparisons.iter().any(|c| c["metric"] == "cycles"), "an unsupported counter has no comparison");
    for run in doc["commands"][1]["runs"].as_array().unwrap() {
        assert_eq!(run["counters"]["cycles"]["supported"], false);
        assert!(run["counters"]["task-clock"]["value"].as_f64().unwrap() > 0.0);
    }
    let terminal = String::from_utf8_lossy(&output.stderr);
    assert!(terminal.contains("warning: `cycles` not counted, measured without: no hardware PMU"), "{terminal}");
    let warned = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["kind"] == "unsupported" && w["message"].as_str().is_some_and(|m| m.contains("`cycles`")));
    assert!(warned, "the degraded counter is a warning in the JSON too: {}", doc["warnings"]);
}

/// `compare -e` takes perf's syntax: a group with a modifier and a modified software
/// event; on the fake PMU every member is counted and compared under its perf name.
#[test]
fn compare_with_perf_event_syntax_on_the_fake_pmu() {
    let output = perflab()
        .env(perflab_sys::perf::counters::FAKE_PMU_ENV, "1")
        .args(["compare", "-r", "6", "-e", "{cycles,instructions}:u,page-faults:u", "--no-progress", "--json", "-"])
        .arg(format!("{} 100000", spin()))
        .arg(format!("{} 200000", spin()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc = json_of(&output);
    let comparisons = doc["comparisons"].as_array().unwrap();
    for name in ["cycles:u", "instructions:u", "page-faults:u"] {
        let c = comparisons.iter().find(|c| c["metric"] == name).unwrap_or_else(|| panic!("no {name} comparison"));
        assert!(c["ratio"].as_f64().is_some_and(|r| r > 0.0), "{c}");
    }
    let run = &doc["commands"][0]["runs"][0]["counters"];
    assert_eq!(run["cycles:u"]["supported"], true, "{run}");
    assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w["message"].as_str().unwrap().contains("made up")));
}

/// A PMU this machine lacks cannot be encoded, so it is refused in one line naming the
/// PMUs that are here; so is a bad modifier.
#[test]
fn bad_event_strings_are_one_line_usage_errors() {
    for (events, expected) in [
        ("cycles:zz", "unknown modifier `z`"),
        ("{cycles,instructions", "unbalanced braces"),
        ("nosuchpmu/event=0x3c/", "this machine has no PMU `nosuchpmu` (it has: "),
        ("r00cx", "unknown event `r00cx`"),
    ] {
        let output = perflab().args(["stat", "-e", events, &spin()]).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{events}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{events}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{events}: {stderr}");
    }
}

fn median_of(doc: &Value, name: &str) -> f64 {
    metric(doc, name)["value"].as_f64().unwrap_or_else(|| panic!("{name} has no value: {}", metric(doc, name)))
}

fn stat_json(args: &[&str]) -> Value {
    let output = perflab().args(["stat", "--no-progress", "--json", "-"]).args(args).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    json_of(&output)
}

/// Counters follow the program's children (inherit): a shell running spin twice
/// faults about twice as often as spin once.
#[test]
fn counters_include_child_processes() {
    let once = stat_json(&["-r", "3", "-e", "page-faults", &spin(), "1000"]);
    let twice = stat_json(&["-r", "3", "-e", "page-faults", "--shell=/bin/sh", &format!("{0} 1000; {0} 1000", spin())]);
    let ratio = median_of(&twice, "page-faults") / median_of(&once, "page-faults");
    assert!(ratio > 1.6, "children's page faults are missing: ratio {ratio}");
}

/// Instruction mode follows children too and adds their counts.
#[test]
fn instruction_mode_includes_child_processes() {
    if !common::have_valgrind() {
        return;
    }
    let once = stat_json(&["--mode", "instructions", &spin(), "500000"]);
    let twice = stat_json(&["--mode", "instructions", "--shell=/bin/sh", &format!("{0} 500000; {0} 500000", spin())]);
    let ratio = median_of(&twice, "instructions") / median_of(&once, "instructions");
    assert!((1.9..2.3).contains(&ratio), "expected about twice the instructions, got ratio {ratio}");
}

use common::is_root;

/// perf's event syntax through the binary: a tracepoint counted per run (as root, tracefs
/// mounted on demand like perf), a modifier in the metric's name, a refused group naming
/// its failing member, a raw event with its reason.
#[test]
fn stat_counts_tracepoints_modifiers_and_says_why_a_group_failed() {
    let output = perflab()
        .env(perflab_sys::perf::counters::FORCE_NO_PMU_ENV, "1")
        .args(["stat", "-r", "2", "--no-progress", "--json", "-"])
        .args(["-e", "task-clock:u,{page-faults,cycles},r00c0"])
        .args(if is_root() { vec!["-e", "sched:sched_process_exec"] } else { vec![] })
        .args(["/bin/sh", "-c", "/bin/true; /bin/true"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc = json_of(&output);
    assert!(metric(&doc, "task-clock:u")["value"].as_f64().unwrap() > 0.0);
    for member in ["page-faults", "cycles"] {
        let reason = metric(&doc, member)["reason"].as_str().unwrap().to_string();
        assert!(reason.starts_with("group {page-faults,cycles} was not opened"), "{reason}");
        assert!(reason.contains("cycles: no hardware PMU") && !reason.contains("page-faults:"), "{reason}");
    }
    assert!(metric(&doc, "r00c0")["reason"].as_str().unwrap().contains("no hardware PMU"));
    if !is_root() {
        common::skip_part("the tracepoint", "counting sched:sched_process_exec needs root (tracefs)");
    } else {
        // Two children exec /bin/true (sh itself may exec the last one in place).
        let execs = metric(&doc, "sched:sched_process_exec");
        assert!(execs["summary"]["median"].as_f64().unwrap() >= 2.0, "{execs}");
    }
}

/// The fake-PMU seam runs the hardware path end to end: perf stat -d's detailed set, the
/// derived rates exact by construction, multiplexing marked, and the result saying its
/// counts are made up.
#[test]
fn stat_detailed_on_the_fake_pmu_derives_rates_and_says_the_counts_are_fake() {
    let output = perflab()
        .env(perflab_sys::perf::counters::FAKE_PMU_ENV, "slots=4")
        .args(["stat", "-d", "-r", "2", "--no-progress", "--json", "-", &spin(), "100000"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc = json_of(&output);
    for name in ["L1-dcache-loads", "L1-dcache-load-misses", "LLC-loads", "LLC-load-misses", "cycles"] {
        let m = metric(&doc, name);
        assert_eq!(m["supported"], true, "{m}");
        assert_eq!(m["scaled"], true, "8 CPU events on 4 counters are multiplexed: {m}");
    }
    let ipc = metric(&doc, "ipc")["value"].as_f64().unwrap();
    assert!((ipc - 1.5).abs() < 1e-3, "{ipc}");
    let llc = metric(&doc, "LLC-miss-rate")["value"].as_f64().unwrap();
    assert!((llc - 20.0).abs() < 0.1, "{llc}");
    assert!(doc["environment"]["fake_pmu"].as_str().unwrap().contains("made up"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("PERFLAB_FAKE_PMU"), "the terminal says the counts are fake: {stderr}");
}

/// `profile -e` takes the same syntax: a tracepoint is sampled at every event.
#[test]
fn profile_samples_a_tracepoint() {
    if !is_root() {
        common::skip("sampling a tracepoint needs root (tracefs)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.profile");
    let output = perflab()
        .args(["profile", "-e", "sched:sched_switch", "-o", out.to_str().unwrap(), "--"])
        .args(["/bin/sh", "-c", "for i in 1 2 3 4 5; do sleep 0.01; done"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let samples: u64 = stderr
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no sample count in {stderr}"));
    assert!(samples >= 5, "each sleep switches out at least once: {stderr}");
}

/// `stat -I MS` prints every interval as it ends, then the totals; `-a` counts every CPU
/// while the command runs (root); `-p` attaches to a running process.
#[test]
fn stat_intervals_all_cpus_and_attach() {
    let output = perflab()
        .args(["stat", "-I", "50", "-e", "task-clock,page-faults", "--"])
        .args(["/bin/sh", "-c", "sleep 0.2; /bin/true"])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    let intervals = stderr.lines().filter(|l| l.trim_end().ends_with("page-faults")).count();
    assert!(intervals >= 2, "one line per interval: {stderr}");
    assert!(stdout.contains("Counter totals for '/bin/sh -c sleep 0.2; /bin/true'") && stdout.contains("task-clock"));

    if !is_root() {
        common::skip_part("stat -a", "counting every CPU needs root");
    } else {
        let output = perflab().args(["stat", "-a", "-e", "context-switches", "sleep", "0.1"]).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(stdout.contains("all CPUs (system-wide)"), "{stdout}");
    }

    let mut target = std::process::Command::new("sleep").arg("0.5").spawn().unwrap();
    let pid = target.id().to_string();
    let output = perflab().args(["stat", "-p", &pid, "--per-thread", "-e", "task-clock"]).output().unwrap();
    target.wait().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains(&format!("sleep-{pid}")), "a row per thread, named comm-tid: {stdout}");
    let refused = perflab().args(["stat", "-a", "-r", "3", "true"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
}
