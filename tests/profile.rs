//! End-to-end tests of `perflab profile`, `show`, `annotate` and `diff` on fixture
//! programs. Sampling is statistical: the fixtures run long enough at -F 2000 for
//! ~900 samples, and a split between functions is asserted within the tolerance
//! Hoeffding's inequality gives that many samples (tests/common/noise.rs: P(fail) ≤ 1e-5
//! each), never in time. Splits are of the functions' own samples: a busy machine adds
//! samples of kernel code at every preemption (up to 7 % seen), which dilute every share
//! of the whole but not a split between two functions. Exact counts come from counted
//! events at a fixed period (`-e page-faults -c 1`).

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn perflab() -> Command {
    Command::cargo_bin("perflab").unwrap()
}

/// Profile `argv` into `dir/name.profile` and return (profile path, JSON report).
fn profile(dir: &Path, name: &str, argv: &[&str]) -> (PathBuf, Value) {
    let out = dir.join(format!("{name}.profile"));
    let json = dir.join(format!("{name}.json"));
    perflab()
        .args(["profile", "-F", "2000", "-o"])
        .arg(&out)
        .arg("--json")
        .arg(&json)
        .arg("--")
        .args(argv)
        .assert()
        .success();
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (out, report)
}

/// A function's own samples in a report (0 when it has no row).
fn samples_of(report: &Value, function: &str) -> u64 {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == function)
        .map_or(0, |f| f["self_samples"].as_u64().unwrap())
}

/// heavy_work's split of the samples in heavy_work and light_work: 0.75 (3:1 work).
fn assert_three_to_one(report: &Value, what: &str) {
    common::noise::assert_split(samples_of(report, "heavy_work"), samples_of(report, "light_work"), 0.75, what);
}

/// Samples in user space (every function whose object is not the kernel).
fn user_samples(report: &Value) -> u64 {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["object"].as_str().unwrap().starts_with("[kernel"))
        .map(|f| f["self_samples"].as_u64().unwrap())
        .sum()
}

fn share_of(report: &Value, function: &str) -> f64 {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == function)
        .unwrap_or_else(|| panic!("{function} not in {report:#}"))["self_share"]
        .as_f64()
        .unwrap()
}

#[test]
fn known_three_to_one_ratio_is_measured_within_five_points() {
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = profile(dir.path(), "ratio", &[exe.to_str().unwrap(), "100000000"]);
    assert_eq!(report["event"], "cpu-clock");
    assert!(report["samples"].as_u64().unwrap() > 500, "{}", report["samples"]);
    assert_three_to_one(&report, "heavy_work : light_work");
    assert_eq!(report["functions"][0]["object"], "profile_ratio");
}

/// perf report's filters: `--comm` and `--dso` keep the matching samples (shares then of
/// those, said on stderr), a filter that keeps nothing is one line and exit 2.
#[test]
fn show_keeps_only_the_samples_a_filter_selects() {
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = profile(dir.path(), "ratio", &[exe.to_str().unwrap(), "100000000"]);
    let show = |filter: &[&str]| {
        let json = dir.path().join("filtered.json");
        let out = perflab().arg("show").arg(&path).args(filter).arg("--json").arg(&json).output().unwrap();
        let report =
            out.status.success().then(|| serde_json::from_slice::<Value>(&std::fs::read(&json).unwrap()).unwrap());
        (out, report)
    };
    let (out, report) = show(&["--dso", "profile_ratio"]);
    let report = report.unwrap_or_else(|| panic!("{out:?}"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("samples kept by --dso profile_ratio"), "{out:?}");
    let names: Vec<&str> =
        report["functions"].as_array().unwrap().iter().map(|f| f["object"].as_str().unwrap()).collect();
    assert!(names.iter().all(|o| *o == "profile_ratio"), "{names:?}");
    assert_three_to_one(&report, "--dso profile_ratio");
    let (out, report) = show(&["--comm", "profile_ratio"]);
    assert!(report.is_some(), "{out:?}");
    let (out, report) = show(&["--comm", "no-such-command"]);
    assert!(report.is_none() && out.status.code() == Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no samples match --comm no-such-command") && stderr.lines().count() == 1, "{stderr}");

    // --symbol keeps the samples that landed in the named functions, by exact name.
    let (out, report) = show(&["--symbol", "heavy_work,light_work"]);
    let report = report.unwrap_or_else(|| panic!("{out:?}"));
    let names: Vec<&str> =
        report["functions"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_three_to_one(&report, "--symbol heavy_work,light_work");
    let shares = share_of(&report, "heavy_work") + share_of(&report, "light_work");
    assert!((shares - 1.0).abs() < 1e-9, "shares of the kept samples: {report}");
    let (out, report) = show(&["--symbol", "heavy"]);
    assert!(report.is_none() && out.status.code() == Some(2), "not a substring match: {out:?}");
}

/// perf report's sort keys: one column per key in the order given, rows per distinct
/// tuple; an unknown key, or a key diff cannot match by, is one line and exit 2.
#[test]
fn show_groups_by_perf_report_sort_keys() {
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = profile(dir.path(), "ratio", &[exe.to_str().unwrap(), "30000000"]);
    let json = dir.path().join("sorted.json");
    perflab().arg("show").arg(&path).args(["--sort", "sym,comm", "--json"]).arg(&json).assert().success();
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["sorted"]["keys"], serde_json::json!(["sym", "comm"]));
    let rows = report["sorted"]["rows"].as_array().unwrap();
    assert_eq!(rows[0]["keys"], serde_json::json!(["heavy_work", "profile_ratio"]), "{report:#}");
    let heavy = share_of(&report, "heavy_work");
    assert!((rows[0]["self_share"].as_f64().unwrap() - heavy).abs() < 1e-9, "same share as the function row");
    let sum: f64 = rows.iter().map(|r| r["self_share"].as_f64().unwrap()).sum();
    assert!((sum - 1.0).abs() < 1e-9, "{sum}");

    let text = perflab().arg("show").arg(&path).args(["--sort", "comm,dso"]).env("NO_COLOR", "1").assert().success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).to_string();
    let header = text.lines().find(|l| l.contains("Command")).unwrap_or_else(|| panic!("{text}"));
    assert!(header.find("Command").unwrap() < header.find("Shared Object").unwrap(), "{text}");
    assert!(text.lines().any(|l| l.contains("profile_ratio  profile_ratio")), "{text}");

    for (command, sort, message) in [
        ("show", "comm,cpu", "unknown sort key `cpu` in --sort comm,cpu; valid keys: comm, pid, dso, sym, srcline"),
        ("diff", "comm,dso", "diff --sort comm,dso is not supported"),
    ] {
        let mut cmd = perflab();
        cmd.arg(command).arg(&path);
        if command == "diff" {
            cmd.arg(&path);
        }
        let out = cmd.args(["--sort", sort]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(message) && stderr.lines().count() == 1, "{stderr}");
    }
    let diff =
        perflab().arg("diff").arg(&path).arg(&path).args(["--sort", "dso,sym", "--json", "-"]).assert().success();
    let diff: Value = serde_json::from_slice(&diff.get_output().stdout).unwrap();
    assert!(diff["changes"].as_array().unwrap().iter().any(|c| c["name"] == "heavy_work"), "{diff:#}");
}

#[test]
fn saved_profile_is_shown_again_identically() {
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    let (path, first) = profile(dir.path(), "again", &[exe.to_str().unwrap(), "20000000"]);
    let out = perflab().arg("show").arg(&path).args(["--json", "-"]).assert().success().get_output().stdout.clone();
    let shown: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(shown["functions"], first["functions"]);
    assert_eq!(shown["samples"], first["samples"]);
    for by in ["function", "line", "object"] {
        perflab().arg("show").arg(&path).args(["--by", by]).assert().success();
    }
    let lines = &shown["lines"].as_array().unwrap()[0];
    assert!(lines["name"].as_str().unwrap().contains("profile_ratio.c:"), "{lines}");
}

#[test]
fn hot_function_in_a_shared_library_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = common::fixtures_dir();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let lib = dir.path().join("libperflabwork.so");
    let status = std::process::Command::new(&cc)
        .args(["-O2", "-g", "-shared", "-fPIC"])
        .arg(fixtures.join("profile_lib_work.c"))
        .arg("-o")
        .arg(&lib)
        .status()
        .unwrap();
    assert!(status.success());
    let exe = dir.path().join("profile_lib_main");
    let status = std::process::Command::new(&cc)
        .args(["-O2", "-g"])
        .arg(fixtures.join("profile_lib_main.c"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", dir.path().display()))
        .arg(format!("-Wl,-rpath,{}", dir.path().display()))
        .arg("-lperflabwork")
        .status()
        .unwrap();
    assert!(status.success());
    let (_, report) = profile(dir.path(), "lib", &[exe.to_str().unwrap(), "400000000"]);
    let top = &report["functions"][0];
    assert_eq!(top["name"], "library_hot_loop", "{report:#}");
    assert_eq!(top["object"], "libperflabwork.so");
    // All the program's work is that loop: of its user-space samples (the dynamic
    // loader takes ~1 ms of ~200 ms) at least 0.9, P(fail) ≤ 1e-5 by Hoeffding.
    let hot = top["self_samples"].as_u64().unwrap();
    common::noise::assert_split(hot, user_samples(&report) - hot, 0.99, "library_hot_loop of user samples");
}

#[test]
fn stripped_binary_gets_object_offset_names() {
    let exe = common::fixture_with("profile_ratio", &["-s"]);
    let dir = tempfile::tempdir().unwrap();
    let (path, report) = profile(dir.path(), "stripped", &[exe.to_str().unwrap(), "100000000"]);
    let functions = report["functions"].as_array().unwrap();
    for f in &functions[..2] {
        assert!(f["name"].as_str().unwrap().starts_with("profile_ratio-s+0x"), "{f}");
    }
    // .eh_frame still delimits the functions, so samples group per function.
    let (heavy, light) =
        (functions[0]["self_samples"].as_u64().unwrap(), functions[1]["self_samples"].as_u64().unwrap());
    common::noise::assert_split(heavy, light, 0.75, "the stripped heavy_work : light_work");
    let name = functions[0]["name"].as_str().unwrap();
    let doc = annotate_json(&path, name);
    assert!(doc["functions"][0]["instructions"].as_array().unwrap().len() > 3);
}

#[test]
fn every_task_of_a_forking_threaded_program_is_sampled() {
    let exe = common::fixture("profile_tasks");
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = profile(dir.path(), "tasks", &[exe.to_str().unwrap(), "100000000"]);
    let tasks: Vec<&Value> =
        report["tasks"].as_array().unwrap().iter().filter(|t| t["samples"].as_u64().unwrap() > 0).collect();
    assert_eq!(tasks.len(), 4, "{:#}", report["tasks"]);
    let pids: std::collections::BTreeSet<u64> = tasks.iter().map(|t| t["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids.len(), 2, "parent and forked child");
    // Four tasks with a quarter of the work each (~225 samples): fewer than 20 would be
    // a split of 0.02 where the truth is 0.25, far outside Hoeffding's ±0.08.
    for t in tasks {
        assert!(t["samples"].as_u64().unwrap() > 20, "{t}");
    }
    let spin = samples_of(&report, "spin");
    common::noise::assert_split(spin, user_samples(&report) - spin, 0.99, "spin of user samples");
}

fn annotate_json(path: &Path, symbol: &str) -> Value {
    let out = perflab()
        .arg("annotate")
        .arg(path)
        .args(["--symbol", symbol, "--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// Instruction indexes sorted by samples, hottest first.
fn hottest(instructions: &[Value]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..instructions.len()).collect();
    idx.sort_by_key(|&i| std::cmp::Reverse(instructions[i]["samples"].as_u64().unwrap()));
    idx
}

fn hint_ids(ins: &Value) -> Vec<String> {
    ins["hints"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn annotate_finds_the_implicitly_locked_xchg() {
    let exe = common::fixture("profile_xchg");
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = profile(dir.path(), "xchg", &[exe.to_str().unwrap(), "100000000"]);
    let doc = annotate_json(&path, "take_block");
    let f = &doc["functions"][0];
    assert_eq!(f["name"], "take_block");
    let ins = f["instructions"].as_array().unwrap();
    let x = ins.iter().position(|i| i["text"].as_str().unwrap().starts_with("xchg")).expect("an xchg");
    assert!(hint_ids(&ins[x]).contains(&"xchg-memory".to_string()), "{:#}", ins[x]);
    // The xchg and the instruction after it (where its cost skids) held 448 of 452
    // samples beside two burners: the top two miss both only if another instruction
    // outdid them by a share Hoeffding puts at P ≤ 1e-10.
    let top2 = &hottest(ins)[..2];
    assert!(top2.contains(&x) || top2.contains(&(x + 1)), "xchg at {x}, hottest {top2:?}");
    // Terminal output shows the hint too.
    let text = perflab()
        .arg("annotate")
        .arg(&path)
        .args(["--symbol", "take_block"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&text).contains("implicitly LOCKed"));
}

#[test]
fn annotate_flags_the_hot_division_and_its_skid() {
    let exe = common::fixture("profile_div");
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = profile(dir.path(), "div", &[exe.to_str().unwrap(), "100000000", "7"]);
    let doc = annotate_json(&path, "divide_all");
    let ins = doc["functions"][0]["instructions"].as_array().unwrap();
    let d = ins.iter().position(|i| i["text"].as_str().unwrap().starts_with("div")).expect("a div");
    assert!(hint_ids(&ins[d]).contains(&"div-integer".to_string()));
    // The div and the add after it held 893 of 950 samples beside two burners (as for
    // the xchg: P ≤ 1e-10 that another instruction outdoes both).
    let top2 = &hottest(ins)[..2];
    assert!(top2.contains(&d) || top2.contains(&(d + 1)), "div at {d}, hottest {top2:?}");
    // Whichever instruction after the DIV is hot points back at it.
    if ins[d + 1]["share"].as_f64().unwrap() >= 0.02 {
        let skid = ins[d + 1]["hints"].as_array().unwrap().iter().find(|h| h["id"] == "skid").expect("skid hint");
        assert_eq!(skid["skid_from"], ins[d]["address"]);
    }
    for i in ins {
        assert!(i["source"].is_string() || i["source"].is_null());
        assert!((0.0..=1.0).contains(&i["share"].as_f64().unwrap()));
    }
}

#[test]
fn diff_matches_functions_across_builds_and_sorts_by_contribution() {
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    let (old, _) = profile(dir.path(), "old", &[exe.to_str().unwrap(), "40000000"]);
    let (new, _) = profile(dir.path(), "new", &[exe.to_str().unwrap(), "120000000"]);
    let out =
        perflab().arg("diff").arg(&old).arg(&new).args(["--json", "-"]).assert().success().get_output().stdout.clone();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    let changes = doc["changes"].as_array().unwrap();
    // heavy_work gains 3 × 80 M iterations (~480 samples), light_work 80 M (~160); any
    // kernel function a few: the order moves only with a split off by 0.25.
    assert_eq!(changes[0]["name"], "heavy_work", "{doc:#}");
    assert_eq!(changes[1]["name"], "light_work");
    assert!(changes[0]["change_s"].as_f64().unwrap() > changes[1]["change_s"].as_f64().unwrap());
    let total: f64 = changes.iter().map(|c| c["contribution"].as_f64().unwrap()).sum();
    assert!((total - 1.0).abs() < 1e-6, "{total}");
    perflab().arg("diff").arg(&old).arg(&new).assert().success();
}

#[test]
fn group_by_source_makes_regions_from_matching_lines() {
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("regions.profile");
    let json = perflab()
        .args(["profile", "-F", "2000", "-o"])
        .arg(&out)
        .args(["--group-by-source", r"profile_ratio.c:^NOINLINE unsigned long (\w+)", "--json", "-", "--"])
        .arg(&exe)
        .arg("100000000")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: Value = serde_json::from_slice(&json).unwrap();
    let regions = doc["regions"].as_array().unwrap();
    let samples =
        |name: &str| regions.iter().find(|r| r["name"] == name).map_or(0, |r| r["self_samples"].as_u64().unwrap());
    common::noise::assert_split(samples("heavy_work"), samples("light_work"), 0.75, "region heavy_work : light_work");
    perflab().arg("show").arg(&out).args(["--group-by-source", "nocolon"]).assert().code(2);
}

/// Top-5 user functions by self share from `perf report`, hottest first.
fn perf_top5(dir: &Path, argv: &[&str]) -> Option<Vec<String>> {
    perf_top(dir, argv, "[.] ")
}

/// Top-5 functions of one kind (`[.] ` user, `[k] ` kernel) by self share from `perf
/// report`, hottest first, None when perf is not installed.
fn perf_top(dir: &Path, argv: &[&str], kind: &str) -> Option<Vec<String>> {
    let data = dir.join("perf.data");
    let record = std::process::Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "-o"])
        .arg(&data)
        .arg("--")
        .args(argv)
        .output()
        .ok()?;
    assert!(record.status.success(), "perf record failed: {}", String::from_utf8_lossy(&record.stderr));
    let report = std::process::Command::new("perf")
        .args(["report", "--stdio", "-q", "--sort", "sym", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    Some(text.lines().filter_map(|l| l.split_once(kind).map(|(_, name)| name.trim().to_string())).take(5).collect())
}

#[test]
fn top_five_functions_agree_with_perf() {
    let exe = common::fixture("profile_five");
    let argv = [exe.to_str().unwrap(), "20000000"];
    let dir = tempfile::tempdir().unwrap();
    let Some(perf) = perf_top5(dir.path(), &argv) else {
        common::skip("perf is not installed (apt-get install linux-perf)");
        return;
    };
    let (_, report) = profile(dir.path(), "five", &argv);
    // User functions only, as perf's `[.]` rows: on a busy machine a kernel function can
    // hold a percent or two. The five hold 16:8:4:2:1 of the work — work_one 3.2 %,
    // ~45 samples — and the next user code is the dynamic loader's ~1 ms (≤ 3 samples):
    // two separate runs put the same five on top unless work_one lost 90 % of its
    // samples (Hoeffding: P ≤ 1e-10 at 1,400 samples).
    let ours: Vec<String> = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            !f["name"].as_str().unwrap().starts_with('[') && !f["object"].as_str().unwrap().starts_with("[kernel")
        })
        .take(5)
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect();
    let mut a = ours.clone();
    let mut b = perf.clone();
    a.sort();
    b.sort();
    assert_eq!(a, b, "perflab {ours:?} vs perf {perf:?}");
    assert_eq!(ours[0], perf[0]);
}

#[test]
fn truncated_or_corrupt_profiles_are_one_line_errors() {
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = profile(dir.path(), "ok", &[exe.to_str().unwrap(), "4000000"]);
    let bytes = std::fs::read(&path).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", bytes[..bytes.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("garbage", b"\x7fELF\x00\x01garbage".to_vec()),
        ("future", b"perflab-profile 7\n{}".to_vec()),
    ];
    for (name, content) in cases {
        let bad = dir.path().join(name);
        std::fs::write(&bad, content).unwrap();
        for cmd in [vec!["show"], vec!["annotate"], vec!["diff", path.to_str().unwrap()]] {
            let out = perflab().args(&cmd).arg(&bad).assert().code(2).get_output().clone();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.trim().lines().count(), 1, "{name} {cmd:?}: {err}");
            assert!(err.contains("not a valid perflab profile"), "{err}");
        }
    }
    perflab().args(["show", "/nonexistent/x.profile"]).assert().code(2);
}

#[test]
fn corrupt_elf_objects_degrade_to_offsets_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let exe = common::fixture("profile_ratio");
    let mut elf = std::fs::read(&exe).unwrap();
    elf.truncate(700);
    let bad = dir.path().join("corrupt_elf");
    std::fs::write(&bad, &elf).unwrap();
    let profile = format!(
        "perflab-profile 1\n{{\"event\":\"cpu-clock\",\"frequency_hz\":1000,\"command\":[\"x\"],\"started\":\"\",\"duration_s\":1,\"lost\":0,\"exit_code\":0,\"objects\":[{{\"path\":{:?}}}],\"tasks\":[],\"samples\":[{{\"pid\":1,\"tid\":1,\"space\":\"user\",\"object\":0,\"offset\":4660,\"count\":5,\"period\":5000000}}]}}\n",
        bad.to_str().unwrap()
    );
    let path = dir.path().join("p.profile");
    std::fs::write(&path, profile).unwrap();
    let out = perflab().arg("show").arg(&path).args(["--json", "-"]).assert().success().get_output().clone();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["functions"][0]["name"], "corrupt_elf+0x1234");
    perflab().arg("annotate").arg(&path).assert().success();
}

#[test]
fn bad_profile_options_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.profile");
    perflab().args(["profile", "-e", "bogus", "-o"]).arg(&out).args(["--", "true"]).assert().code(2);
    perflab().args(["profile", "-F", "0", "-o"]).arg(&out).args(["--", "true"]).assert().code(2);
    perflab().args(["profile", "-o"]).arg(&out).args(["--", "/nonexistent/program"]).assert().code(2);
    perflab().args(["profile", "-o"]).arg(&out).assert().code(2);
    // An unwritable output is reported before the command runs.
    let marker = dir.path().join("ran");
    perflab()
        .args(["profile", "-o", "/nonexistent/dir/x.profile", "--", "sh", "-c"])
        .arg(format!("touch {}", marker.display()))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot write /nonexistent/dir/x.profile"));
    assert!(!marker.exists());
}

#[test]
fn failing_command_is_still_profiled_and_reported_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fail.profile");
    perflab().args(["profile", "-o"]).arg(&out).args(["--", "sh", "-c", "exit 4"]).assert().code(3);
    perflab().arg("show").arg(&out).assert().success();
}

#[test]
fn ctrl_c_stops_the_command_and_keeps_the_profile() {
    let exe = common::fixture("spin");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("int.profile");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["profile", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .arg("100000000000")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Interrupt once perflab has forked the command (its signal handlers are in place
    // by then), plus a moment so some samples exist.
    let children = format!("/proc/{0}/task/{0}/children", child.id());
    while std::fs::read_to_string(&children).unwrap_or_default().trim().is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    perflab().arg("show").arg(&out).assert().success();
}

#[test]
fn llvm_mca_describes_the_hot_loop_when_installed() {
    if which::which("llvm-mca").is_err() && which::which("llvm-mca-14").is_err() {
        common::skip("llvm-mca is not installed (apt-get install llvm)");
        return;
    }
    let exe = common::fixture("profile_div");
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = profile(dir.path(), "mca", &[exe.to_str().unwrap(), "50000000", "7"]);
    let out = perflab()
        .arg("annotate")
        .arg(&path)
        .args(["--symbol", "divide_all", "--mca=skylake", "--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    let f = &doc["functions"][0];
    assert_eq!(f["mca"]["cpu"], "skylake");
    let ins = f["instructions"].as_array().unwrap();
    let div = ins.iter().find(|i| i["text"].as_str().unwrap().starts_with("div")).unwrap();
    let add_latency = ins.iter().filter_map(|i| i["mca"]["latency"].as_u64()).min().unwrap();
    assert!(div["mca"]["latency"].as_u64().unwrap() > add_latency, "{div}");
}

/// Whether this user may sample the kernel (root, or perf_event_paranoid < 2); says why
/// not when skipping.
fn kernel_sampling_allowed() -> bool {
    let paranoid: i32 =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap().trim().parse().unwrap();
    // SAFETY: geteuid has no preconditions.
    let allowed = paranoid < 2 || unsafe { libc::geteuid() } == 0;
    if !allowed {
        common::skip(&format!("perf_event_paranoid={paranoid} and not root: kernel samples are not allowed"));
    }
    allowed
}

fn kernel_rows(report: &Value) -> Vec<&Value> {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["object"].as_str().unwrap().starts_with("[kernel"))
        .collect()
}

#[test]
fn kernel_samples_are_named_from_kallsyms_when_the_kernel_may_be_sampled() {
    if !kernel_sampling_allowed() {
        return;
    }
    let exe = common::fixture("profile_syscalls");
    let dir = tempfile::tempdir().unwrap();
    let (path, report) = profile(dir.path(), "syscalls", &[exe.to_str().unwrap(), "3000000"]);
    let kernel = kernel_rows(&report);
    let share: f64 = kernel.iter().map(|f| f["self_share"].as_f64().unwrap()).sum();
    // The fixture makes system calls in a loop: 77 % of ~1,000 samples in the kernel
    // here; below 30 % is a split off by 0.47 (Hoeffding: P ≤ 1e-100).
    assert!(share > 0.3, "kernel share {share}");
    // Root reads kallsyms addresses: the hottest kernel rows are functions, not `[kernel]`.
    assert_ne!(kernel[0]["name"], "[kernel]", "{kernel:?}");
    let object_samples: u64 = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["name"].as_str().unwrap().starts_with("[kernel"))
        .map(|o| o["self_samples"].as_u64().unwrap())
        .sum();
    assert_eq!(object_samples, kernel.iter().map(|f| f["self_samples"].as_u64().unwrap()).sum::<u64>());
    // The terminal table marks them like perf.
    let text = perflab().arg("show").arg(&path).assert().success().get_output().stdout.clone();
    assert!(String::from_utf8_lossy(&text).contains("[k] "), "{}", String::from_utf8_lossy(&text));
    // Annotating a kernel function needs the kernel image; without one, the reason.
    if perflab::profile::kernel::find_vmlinux().is_none() {
        let name = kernel[0]["name"].as_str().unwrap();
        perflab().arg("annotate").arg(&path).args(["--symbol", name]).assert().code(2).stderr(
            predicates::str::contains(format!("cannot annotate kernel function `{name}`: no readable kernel image")),
        );
        perflab()
            .arg("annotate")
            .arg(&path)
            .assert()
            .success()
            .stderr(predicates::str::contains("hot kernel functions are not annotated: no readable kernel image"));
    }
}

/// perf's kernel names without the compiler's clone suffixes, as perflab reports them.
fn without_clone_suffix(name: &str) -> String {
    let mut name = name;
    for suffix in [".isra.", ".part.", ".constprop.", ".cold"] {
        if let Some(i) = name.find(suffix) {
            name = &name[..i];
        }
    }
    name.to_string()
}

#[test]
fn pipe_ping_pong_kernel_functions_agree_with_perf() {
    if !kernel_sampling_allowed() {
        return;
    }
    let exe = common::fixture("pingpong");
    let argv = [exe.to_str().unwrap(), "150000"];
    let dir = tempfile::tempdir().unwrap();
    let Some(perf) = perf_top(dir.path(), &argv, "[k] ") else {
        common::skip("perf is not installed (apt-get install linux-perf)");
        return;
    };
    let perf: Vec<String> = perf.iter().map(|n| without_clone_suffix(n)).collect();
    let (_, report) = profile(dir.path(), "pingpong", &argv);
    let ours: Vec<String> =
        kernel_rows(&report).iter().take(5).map(|f| f["name"].as_str().unwrap().to_string()).collect();
    // Two separate runs: their top two kernel functions are the same two, the first the
    // same one. Beside two burners perf's own runs gave finish_task_switch 40–49 %,
    // _raw_spin_unlock_irqrestore 16–24 %, then functions of 1–5 % whose order changes
    // from run to run — so ranks 3–5 are not compared here (the same perf.data read by
    // both tools is, tests/perf_data.rs). Swapping the first two, or the second with the
    // third, needs a share off by 0.05 or more (Hoeffding at ~2,000 samples: P ≤ 1e-5).
    let (mut top_ours, mut top_perf) = (ours[..2].to_vec(), perf[..2].to_vec());
    top_ours.sort();
    top_perf.sort();
    assert_eq!(top_ours, top_perf, "perflab {ours:?} vs perf {perf:?}");
    assert_eq!(ours[0], perf[0], "perflab {ours:?} vs perf {perf:?}");
}

#[test]
fn debug_info_is_found_through_gnu_debuglink() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("ratio-split");
    std::fs::copy(common::fixture("profile_ratio"), &exe).unwrap();
    let debug = dir.path().join("ratio-split.debug");
    let objcopy = |args: &[&std::ffi::OsStr]| {
        let status = std::process::Command::new("objcopy").args(args).status().expect("objcopy (binutils)");
        assert!(status.success());
    };
    objcopy(&["--only-keep-debug".as_ref(), exe.as_os_str(), debug.as_os_str()]);
    objcopy(&["--strip-debug".as_ref(), exe.as_os_str()]);
    let link = format!("--add-gnu-debuglink={}", debug.display());
    objcopy(&[link.as_ref(), exe.as_os_str()]);
    let (_, report) = profile(dir.path(), "split", &[exe.to_str().unwrap(), "40000000"]);
    let top_line = report["lines"][0]["name"].as_str().unwrap();
    assert!(top_line.contains("profile_ratio.c:"), "{top_line}");
    assert_eq!(report["functions"][0]["name"], "heavy_work");
}

#[test]
fn call_graph_splits_the_leaf_between_its_callers_and_counts_inclusive_time() {
    let exe = common::fixture("profile_callgraph");
    let dir = tempfile::tempdir().unwrap();
    let (out, json, folded) = (dir.path().join("g.profile"), dir.path().join("g.json"), dir.path().join("g.folded"));
    perflab()
        .args(["profile", "-g", "-F", "2000", "-o"])
        .arg(&out)
        .arg("--json")
        .arg(&json)
        .arg("--folded")
        .arg(&folded)
        .arg("--")
        .args([exe.to_str().unwrap(), "100000000"])
        .assert()
        .success()
        .stdout(predicates::str::contains("total    self"));
    let folded = std::fs::read_to_string(&folded).unwrap();
    let via_a = common::folded_ending_with(&folded, &["main", "a", "leaf"]);
    let via_b = common::folded_ending_with(&folded, &["main", "b", "leaf"]);
    common::noise::assert_split(via_a, via_b, 0.75, "leaf's samples through a : through b");

    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let samples = report["samples"].as_u64().unwrap();
    let function = |name: &str| {
        report["functions"].as_array().unwrap().iter().find(|f| f["name"] == name).cloned().unwrap_or_default()
    };
    // Outside main: the dynamic loader before it (~1 ms of CPU of ~450 ms, a few samples).
    let main = function("main");
    assert!(main["total_share"].as_f64().unwrap() > 0.95, "{main}");
    assert_eq!(main["self_samples"], 0);
    // leaf's inclusive samples beyond its own are exactly the stacks that go on from leaf
    // into the kernel (an interrupt taken while in leaf: more of them on a busy machine).
    let kernel: std::collections::HashSet<&str> = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["object"].as_str().unwrap().starts_with("[kernel"))
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let mut beyond_leaf = 0;
    for line in folded.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        let frames: Vec<&str> = stack.split(';').collect();
        if let Some(at) = frames.iter().position(|f| *f == "leaf").filter(|&at| at + 1 < frames.len()) {
            assert!(frames[at + 1..].iter().all(|f| kernel.contains(f)), "only the kernel runs above leaf: {line}");
            beyond_leaf += count.parse::<u64>().unwrap();
        }
    }
    let leaf = function("leaf");
    let (total, own) = (leaf["total_samples"].as_u64().unwrap(), leaf["self_samples"].as_u64().unwrap());
    assert_eq!(total - own, beyond_leaf, "{leaf}");
    let (a, b) = (function("a")["total_samples"].as_u64().unwrap(), function("b")["total_samples"].as_u64().unwrap());
    common::noise::assert_split(a, b, 0.75, "inclusive a : b");
    assert!(a + b <= samples);

    // The saved profile gives the same folded stacks and totals again.
    let shown = perflab().arg("show").arg(&out).args(["--folded", "-"]).assert().success().get_output().stdout.clone();
    assert_eq!(String::from_utf8(shown).unwrap(), folded);
    let shown = perflab().arg("show").arg(&out).args(["--json", "-"]).assert().success().get_output().stdout.clone();
    let shown: Value = serde_json::from_slice(&shown).unwrap();
    assert_eq!(shown["functions"], report["functions"]);
}

#[test]
fn folded_output_without_call_stacks_is_a_usage_error() {
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    let folded = dir.path().join("f.folded");
    perflab()
        .args(["profile", "-o"])
        .arg(dir.path().join("x.profile"))
        .arg("--folded")
        .arg(&folded)
        .args(["--", "true"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("add -g"));
    perflab()
        .args(["profile", "-g", "-o"])
        .arg(dir.path().join("x.profile"))
        .args(["--json", "-", "--folded", "-", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("same place"));
    let (path, report) = profile(dir.path(), "flat", &[exe.to_str().unwrap(), "2000000"]);
    assert!(report["functions"][0].get("total_samples").is_none(), "{report:#}");
    perflab()
        .arg("show")
        .arg(&path)
        .arg("--folded")
        .arg(&folded)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("has no call stacks"));
    assert!(!folded.exists());
}

/// Self shares of `function` in a report, and the report's weight.
fn weighted_share(report: &Value, function: &str) -> f64 {
    assert_eq!(report["weight"], "events", "a count event's shares are of events");
    share_of(report, function)
}

#[test]
fn page_fault_shares_are_of_events_not_samples() {
    // At a frequency the kernel adapts the period from sample to sample: counting
    // samples gave touch_a 67–70 % of a 75 % truth; each sample weighs its period.
    let exe = common::fixture("profile_faults");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("faults.profile");
    let json = dir.path().join("faults.json");
    // Page faults of the fixture run with `run` (pages, passes), sampled as `how` says:
    // the JSON report.
    let record = |how: &[&str], run: [&str; 2]| -> Value {
        perflab()
            .args(["profile", "-e", "page-faults"])
            .args(how)
            .arg("-o")
            .arg(&out)
            .arg("--json")
            .arg(&json)
            .args(["--", exe.to_str().unwrap(), run[0], run[1]])
            .assert()
            .success();
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
    };
    let report = record(&[], ["10240", "5"]);
    let (a, b) = (weighted_share(&report, "touch_a"), weighted_share(&report, "touch_b"));
    // Each share is its function's events (summed periods) over all events, exactly.
    let functions = report["functions"].as_array().unwrap();
    let events: u64 = functions.iter().map(|f| f["self_period"].as_u64().unwrap()).sum();
    let period_of = |name: &str| functions.iter().find(|f| f["name"] == name).unwrap()["self_period"].as_u64().unwrap();
    for (name, share) in [("touch_a", a), ("touch_b", b)] {
        assert!((share - period_of(name) as f64 / events as f64).abs() < 1e-9, "{name}: {share} of {events}");
    }
    // How many events those are is the kernel's word: at a frequency it adapts the
    // period from the time between samples, and beside busy neighbours at 997 Hz that
    // miscounts several-fold (`perf record -e page-faults -F 997` read touch_a as 117,303
    // to 185,006 of its 153,600 faults beside six burners, perflab as 158,478–537,074;
    // at 4 kHz both within 1 %). So the split is checked against the truth below with
    // every fault a sample.
    let shown = perflab().env("NO_COLOR", "1").arg("show").arg(&out).assert().success().get_output().stdout.clone();
    let shown = String::from_utf8_lossy(&shown);
    assert!(shown.contains("page-faults events (each sample weighs its period), not of samples"), "{shown}");

    // One page-fault sample per `period` faults, of 3 × 256 × 20 in touch_a and 256 × 20
    // in touch_b: the JSON report.
    let every = |period: u64| -> Value {
        let report = record(&["-c", &period.to_string()], ["256", "20"]);
        assert_eq!(report["sample_period"], period);
        report
    };
    let row = |report: &Value, name: &str| {
        report["functions"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap().clone()
    };

    // -c 1: every fault is a sample, so samples and events agree exactly.
    let report = every(1);
    let samples = |name: &str| row(&report, name)["self_samples"].as_u64().unwrap();
    let (truth_a, truth_b) = (3 * 256 * 20, 256 * 20);
    // Exact — unless samples were lost (a ring buffer its reader, starved of CPU on a busy
    // machine, did not drain in time): the profile says how many, and only those are
    // missing.
    let lost = report["lost"].as_u64().unwrap();
    if lost == 0 {
        assert_eq!((samples("touch_a"), samples("touch_b")), (truth_a, truth_b));
        let (a, b) = (weighted_share(&report, "touch_a"), weighted_share(&report, "touch_b"));
        assert!((a - 0.75).abs() <= 0.01 && (b - 0.25).abs() <= 0.01, "touch_a {a}, touch_b {b}");
    } else {
        assert!(samples("touch_a") <= truth_a && samples("touch_b") <= truth_b, "{report}");
        assert!(samples("touch_a") + samples("touch_b") + lost >= truth_a + truth_b, "{report}");
    }
    // -c 64: one sample per 64 faults, each weighing 64 (PERF_SAMPLE_PERIOD with a fixed
    // period made the kernel sample every fault: 15,360 samples of touch_a instead of 240).
    // The count runs on across the 40 switches between the two functions, so each one's
    // samples may be off by one per switch: 240 ± 40 and 80 ± 40.
    let report = every(64);
    for (name, truth) in [("touch_a", truth_a / 64), ("touch_b", truth_b / 64)] {
        let function = row(&report, name);
        let (samples, events) = (function["self_samples"].as_u64().unwrap(), function["self_period"].as_u64().unwrap());
        assert_eq!(events, 64 * samples, "{name}: {report}");
        if report["lost"] == 0 {
            assert!(samples.abs_diff(truth) <= 40, "{name}: {samples} samples, expected {truth} ± 40: {report}");
        }
    }
    // -c and -F are two ways of saying when to sample: one at a time.
    perflab().args(["profile", "-c", "1", "-F", "99", "--", "true"]).assert().code(2);
    perflab().args(["profile", "-c", "0", "--", "true"]).assert().code(2);
}
