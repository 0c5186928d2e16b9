//! perf.data in: `show`, `annotate` and `diff` read `perf record` files, checked against
//! `perf report` on the same file. Both read the same samples, so shares must agree
//! closely; what can differ is naming (perflab strips clone suffixes, names stripped
//! code `object+0x…` where perf prints an address) and unwinding (`--call-graph dwarf`:
//! framehop vs perf's libunwind/libdw).
//!
//! "Agree" for a real program's top 10: every function perf report names in its top
//! 10 by self share is a row of perflab's with the same name, and the shares differ by
//! at most 0.3 percentage points; perf's unnamed addresses are counted, not compared.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

/// perf is on PATH; else the test is skipped (on CI, `CI=true`, its absence fails).
fn have_perf() -> bool {
    common::have("perf", "apt-get install linux-perf")
}

/// `perf record OPTIONS -o dir/NAME.data -- ARGV`.
fn perf_record(dir: &Path, name: &str, options: &[&str], argv: &[&str]) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    let out = std::process::Command::new("perf")
        .arg("record")
        .args(["-q", "-o"])
        .arg(&data)
        .args(options)
        .arg("--")
        .args(argv)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "perf record failed: {}", String::from_utf8_lossy(&out.stderr));
    data
}

/// One row of `perf report --stdio`: symbol (clone suffixes stripped), whether it is a
/// kernel symbol, self share (0–1) and, with `--children`, the inclusive share.
#[derive(Debug, Clone)]
struct PerfRow {
    /// The object's file name (`[kernel.kallsyms]` for the kernel).
    dso: String,
    name: String,
    kernel: bool,
    self_share: f64,
    children: Option<f64>,
}

impl PerfRow {
    fn unnamed(&self) -> bool {
        self.name.starts_with("0x")
    }
}

/// `perf report --sort dso,sym` of `data`, hottest (by self, or by children) first.
fn perf_report(data: &Path, extra: &[&str]) -> Vec<PerfRow> {
    let out = std::process::Command::new("perf")
        .args(["report", "--stdio", "-q", "-g", "none", "--percent-limit", "0", "--sort", "dso,sym", "-i"])
        .arg(data)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "perf report failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            // `  12.34%  [ 12.00% ]  dso  [.] symbol`: the kind marker is the last `[x] `.
            let at = line.rfind("] ")?;
            let (head, name) = (&line[..at - 2], &line[at + 2..]);
            let kind = &line[at - 1..at];
            let words: Vec<&str> = head.split_whitespace().collect();
            let shares: Vec<f64> = words.iter().filter_map(|p| p.strip_suffix('%')?.parse::<f64>().ok()).collect();
            let dso = words.last()?.to_string();
            let (self_share, children) = match shares.as_slice() {
                [s] => (*s, None),
                [c, s] => (*s, Some(*c)),
                _ => return None,
            };
            Some(PerfRow {
                dso,
                name: without_clone_suffix(name.trim()),
                kernel: kind == "k",
                self_share: self_share / 100.0,
                children: children.map(|c| c / 100.0),
            })
        })
        .collect()
}

/// perf's names without the compiler's clone suffixes, as perflab reports them.
fn without_clone_suffix(name: &str) -> String {
    let mut name = name;
    for suffix in [".isra.", ".part.", ".constprop.", ".cold", ".lto_priv."] {
        if let Some(i) = name.find(suffix) {
            name = &name[..i];
        }
    }
    name.to_string()
}

/// `perflab show FILE --json -` (plus options).
fn show_json(data: &Path, options: &[&str]) -> Value {
    let out = perflab().arg("show").arg(data).args(options).args(["--json", "-"]).assert().success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

fn row<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["functions"].as_array().unwrap().iter().find(|f| f["name"] == name)
}

fn self_share(report: &Value, name: &str) -> f64 {
    row(report, name).unwrap_or_else(|| panic!("{name} not in {report:#}"))["self_share"].as_f64().unwrap()
}

/// What the agreement check found.
#[derive(Debug)]
struct Agreement {
    /// perf's named top-10 functions found under the same name in perflab's rows.
    same_name: usize,
    /// Found under another name of the same code (an alias such as memcpy/memmove:
    /// the same object and share, where the two tools chose different symbols).
    alias: usize,
    /// perf's unnamed addresses (perflab names them per function, `object+0x…`).
    unnamed: usize,
    /// The largest share difference, in percentage points.
    largest: f64,
}

/// The agreement check of the module doc.
fn top_ten_agree(perf: &[PerfRow], ours: &Value) -> Agreement {
    let mut by_self = perf.to_vec();
    by_self.sort_by(|a, b| b.self_share.total_cmp(&a.self_share));
    let top: Vec<&PerfRow> = by_self.iter().take(10).collect();
    let rows = ours["functions"].as_array().unwrap();
    let mut agreement = Agreement { same_name: 0, alias: 0, unnamed: 0, largest: 0.0 };
    for p in &top {
        if p.unnamed() {
            agreement.unnamed += 1;
            continue;
        }
        let share = match row(ours, &p.name) {
            Some(r) => {
                agreement.same_name += 1;
                r["self_share"].as_f64().unwrap()
            }
            None => {
                let alias = rows
                    .iter()
                    .find(|r| {
                        r["object"] == p.dso.as_str()
                            && (r["self_share"].as_f64().unwrap() - p.self_share).abs() < 0.0005
                            && !perf.iter().any(|q| q.name == r["name"].as_str().unwrap())
                    })
                    .unwrap_or_else(|| {
                        panic!("{} (perf report {:.4}) is not among perflab's rows", p.name, p.self_share)
                    });
                eprintln!("{} is named {} by perflab", p.name, alias["name"]);
                agreement.alias += 1;
                alias["self_share"].as_f64().unwrap()
            }
        };
        agreement.largest = agreement.largest.max((share - p.self_share).abs() * 100.0);
    }
    assert!(agreement.largest <= 0.3, "shares differ by up to {:.2} points: perf {top:#?}", agreement.largest);
    agreement
}

#[test]
fn three_to_one_shares_agree_with_perf_report_on_the_same_file() {
    if !have_perf() {
        return;
    }
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    // 4 kHz: ~1,000 samples, enough for the split's tolerance (tests/common/noise.rs).
    let data =
        perf_record(dir.path(), "ratio", &["-e", "cpu-clock", "-F", "4000"], &[exe.to_str().unwrap(), "60000000"]);
    let perf = perf_report(&data, &[]);
    let report = show_json(&data, &[]);
    for name in ["heavy_work", "light_work"] {
        let theirs = perf.iter().find(|r| r.name == name).unwrap().self_share;
        let ours = self_share(&report, name);
        assert!((ours - theirs).abs() < 0.0005, "{name}: perflab {ours}, perf report {theirs}");
    }
    let samples = |name: &str| row(&report, name).unwrap()["self_samples"].as_u64().unwrap();
    common::noise::assert_split(samples("heavy_work"), samples("light_work"), 0.75, "heavy_work : light_work");
    assert_eq!(report["event"], "cpu-clock");
    assert_eq!(report["frequency_hz"], 4000);
    assert_eq!(report["target"], "command");
    assert_eq!(report["command"][0], exe.to_str().unwrap(), "the program as it ran, its path from its mapping");
    // The terminal report, annotate and diff take the file as they take a profile.
    let text = perflab().arg("show").arg(&data).assert().success().get_output().stdout.clone();
    assert!(String::from_utf8_lossy(&text).contains("heavy_work  [profile_ratio]"));
    let annotated =
        perflab().arg("annotate").arg(&data).args(["--symbol", "heavy_work", "--json", "-"]).assert().success();
    let annotated: Value = serde_json::from_slice(&annotated.get_output().stdout).unwrap();
    assert!(annotated["functions"][0]["samples"].as_u64().unwrap() > 100, "{annotated:#}");
    let slow = common::fixture_with("profile_ratio", &["-DSLOW_LIGHT"]);
    let slower =
        perf_record(dir.path(), "slow", &["-e", "cpu-clock", "-F", "2000"], &[slow.to_str().unwrap(), "60000000"]);
    let diff = perflab().arg("diff").arg(&data).arg(&slower).args(["--json", "-"]).assert().success();
    let diff: Value = serde_json::from_slice(&diff.get_output().stdout).unwrap();
    assert_eq!(diff["unit"], "seconds");
    assert_eq!(diff["changes"][0]["name"], "light_work", "{diff:#}");
    assert!(diff["changes"][0]["change_s"].as_f64().unwrap() > 0.0);
}

/// `show --sort comm,dso` against perf on the same file. perflab names a sample by its
/// task's last command name, perf report by the name at the sample's time: a sample
/// taken in a forked child between its fork and its exec (a few microseconds, more on a
/// busy machine) is the parent's `sh` in perf report, the exec'd program's in perflab
/// (docs/profiling.md). So perflab's rows must equal, sample for sample, perf's samples
/// (`perf script`) grouped by each thread's last name, and perf report's rows must be
/// those samples grouped by the name at the time.
#[test]
fn sort_keys_agree_with_perf_report_on_the_same_file() {
    if !have_perf() {
        return;
    }
    // Three commands (sh, then two programs it runs, one with threads and a child).
    let (ratio, tasks) = (common::fixture("profile_ratio"), common::fixture("profile_tasks"));
    let dir = tempfile::tempdir().unwrap();
    let script = format!("{} 20000000; {} 30000000", tasks.display(), ratio.display());
    let data = perf_record(dir.path(), "sorted", &["-e", "cpu-clock", "-F", "2000"], &["sh", "-c", &script]);
    // Every sample: the name at its time, its thread, its object's file name.
    let out = std::process::Command::new("perf").args(["script", "-F", "comm,tid,ip,dso", "-i"]).arg(&data).output();
    let out = out.unwrap();
    assert!(out.status.success(), "perf script failed: {}", String::from_utf8_lossy(&out.stderr));
    let samples: Vec<(String, u64, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let [comm, tid, _ip, dso] = words.as_slice() else { return None };
            let dso = dso.trim_start_matches('(').trim_end_matches(')');
            Some((comm.to_string(), tid.parse().ok()?, dso.rsplit('/').next().unwrap().to_string()))
        })
        .collect();
    let total = samples.len() as f64;
    assert!(total > 100.0, "{}", String::from_utf8_lossy(&out.stdout));
    let last_comm: HashMap<u64, &str> = samples.iter().map(|(comm, tid, _)| (*tid, comm.as_str())).collect();
    let mut at_the_time: HashMap<(String, String), u64> = HashMap::new();
    let mut by_last_name: HashMap<(String, String), u64> = HashMap::new();
    for (comm, tid, dso) in &samples {
        *at_the_time.entry((comm.clone(), dso.clone())).or_default() += 1;
        *by_last_name.entry((last_comm[tid].to_string(), dso.clone())).or_default() += 1;
    }
    let renamed = samples.iter().filter(|(comm, tid, _)| last_comm[tid] != comm).count();
    eprintln!("{renamed} of {total} samples were taken before their thread's exec");

    let out = std::process::Command::new("perf")
        .args(["report", "--stdio", "-q", "-g", "none", "--percent-limit", "0", "--sort", "comm,dso", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success(), "perf report failed: {}", String::from_utf8_lossy(&out.stderr));
    let perf: Vec<(String, String, f64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            [share, comm, dso] => Some((comm.to_string(), dso.to_string(), share.strip_suffix('%')?.parse().ok()?)),
            _ => None,
        })
        .collect();
    assert!(!perf.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    // perf report: the samples by their name at the time (its two decimals of a percent).
    for (comm, dso, theirs) in &perf {
        let expected = at_the_time.get(&(comm.clone(), dso.clone())).copied().unwrap_or(0) as f64 / total * 100.0;
        assert!((expected - theirs).abs() <= 0.006, "{comm} {dso}: perf report {theirs}%, its samples {expected}%");
    }
    assert_eq!(perf.len(), at_the_time.len(), "{perf:?} vs {at_the_time:?}");

    // perflab: the same samples by each thread's last name, exactly.
    let ours = show_json(&data, &["--sort", "comm,dso"]);
    let rows = ours["sorted"]["rows"].as_array().unwrap();
    let mut got: HashMap<(String, String), u64> = HashMap::new();
    for r in rows {
        let keys: Vec<&str> = r["keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
        got.insert((keys[0].to_string(), keys[1].to_string()), r["self_samples"].as_u64().unwrap());
    }
    assert_eq!(got, by_last_name, "perflab's rows vs perf's samples by their thread's last name");
    let share =
        |comm: &str, dso: &str| got.get(&(comm.to_string(), dso.to_string())).copied().unwrap_or(0) as f64 / total;
    for program in ["profile_ratio", "profile_tasks"] {
        assert!(share(program, program) > 0.2, "{ours:#}");
    }
}

#[test]
fn frame_pointer_and_dwarf_call_stacks_agree_with_perf_report_children() {
    if !have_perf() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let with_fp = common::fixture("profile_callgraph");
    let without_fp = common::fixture_with("profile_callgraph", &["-O2", "-fomit-frame-pointer"]);
    for (name, options, exe, tolerance) in [
        ("fp", ["-g", "-F", "4000"].as_slice(), &with_fp, 0.0005),
        // Two unwinders of the same stack copies: allow a few stacks to end differently.
        ("dwarf", ["--call-graph", "dwarf", "-F", "4000"].as_slice(), &without_fp, 0.02),
    ] {
        let data = perf_record(dir.path(), name, options, &[exe.to_str().unwrap(), "60000000"]);
        let perf = perf_report(&data, &["--children"]);
        let report = show_json(&data, &[]);
        for function in ["main", "a", "b", "leaf"] {
            let theirs = perf.iter().find(|r| r.name == function).and_then(|r| r.children).unwrap();
            let ours = row(&report, function).unwrap()["total_share"].as_f64().unwrap();
            assert!((ours - theirs).abs() <= tolerance, "{name} {function}: perflab {ours}, perf report {theirs}");
        }
        let total = |f: &str| row(&report, f).unwrap()["total_samples"].as_u64().unwrap();
        common::noise::assert_split(total("a"), total("b"), 0.75, &format!("{name}: inclusive a : b"));
        let folded = perflab().arg("show").arg(&data).args(["--folded", "-"]).assert().success();
        let folded = String::from_utf8_lossy(&folded.get_output().stdout).to_string();
        assert!(common::folded_ending_with(&folded, &["main", "a", "leaf"]) > 0, "{name}: {folded}");
        if name == "dwarf" {
            assert!(report["warnings"].as_array().unwrap().is_empty(), "{report:#}");
        }
    }
}

#[test]
fn page_fault_shares_weigh_periods_like_perf_report() {
    if !have_perf() {
        return;
    }
    let exe = common::fixture("profile_faults");
    let dir = tempfile::tempdir().unwrap();
    for (name, options) in
        [("freq", ["-e", "page-faults"].as_slice()), ("every", ["-e", "page-faults", "-c", "1"].as_slice())]
    {
        let data = perf_record(dir.path(), name, options, &[exe.to_str().unwrap()]);
        let perf = perf_report(&data, &[]);
        let report = show_json(&data, &[]);
        assert_eq!(report["weight"], "events");
        for function in ["touch_a", "touch_b"] {
            let theirs = perf.iter().find(|r| r.name == function).unwrap().self_share;
            let ours = self_share(&report, function);
            assert!((ours - theirs).abs() < 0.0005, "{name} {function}: perflab {ours}, perf report {theirs}");
        }
        if name == "every" {
            // Every fault a sample: the true counts (a frequency's periods are the
            // kernel's estimate, which a busy machine can throw off: tests/profile.rs).
            let samples = |f: &str| row(&report, f).unwrap()["self_samples"].as_u64().unwrap();
            // Unless perf lost some (a reader starved of CPU): those are said, and only
            // those are missing.
            let lost = report["lost"].as_u64().unwrap_or(0);
            if lost == 0 {
                // At least one fault per page touched; a fault the kernel retries (its
                // handler entered twice, e.g. on a contended mmap lock) counts twice:
                // 153,601 for touch_a beside a CPU burner.
                for (function, pages) in [("touch_a", 153_600), ("touch_b", 51_200)] {
                    let faults = samples(function);
                    assert!((pages..=pages + 16).contains(&faults), "{function}: {faults} faults for {pages} pages");
                }
            } else {
                assert!(samples("touch_a") <= 153_600 && samples("touch_b") <= 51_200, "{report:#}");
                assert!(samples("touch_a") + samples("touch_b") + lost >= 204_800, "{report:#}");
            }
        }
    }
}

#[test]
fn kernel_functions_are_named_on_the_boot_that_recorded_them() {
    if !have_perf() {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if !common::is_root() {
        common::skip("kernel samples and kallsyms addresses need root here");
        return;
    }
    let exe = common::fixture("pingpong");
    let dir = tempfile::tempdir().unwrap();
    let data =
        perf_record(dir.path(), "pingpong", &["-e", "cpu-clock", "-F", "2000"], &[exe.to_str().unwrap(), "100000"]);
    let perf: Vec<PerfRow> = perf_report(&data, &[]).into_iter().filter(|r| r.kernel).take(5).collect();
    let report = show_json(&data, &[]);
    for p in &perf {
        let ours = self_share(&report, &p.name);
        assert!((ours - p.self_share).abs() < 0.003, "{}: perflab {ours}, perf report {}", p.name, p.self_share);
        assert_eq!(row(&report, &p.name).unwrap()["object"], "[kernel]");
    }
}

#[test]
fn system_wide_and_attached_recordings_say_so() {
    if !have_perf() {
        return;
    }
    let exe = common::fixture("spin");
    let dir = tempfile::tempdir().unwrap();
    let data =
        perf_record(dir.path(), "all", &["-a", "-e", "cpu-clock", "-F", "500"], &[exe.to_str().unwrap(), "300000000"]);
    let report = show_json(&data, &[]);
    assert_eq!(report["target"], "all_cpus");
    let spin = report["tasks"].as_array().unwrap().iter().find(|t| t["comm"] == "spin").expect("the spinning task");
    // A busy machine gives the spinning task a fraction of a CPU: some samples, not a rate.
    assert!(spin["samples"].as_u64().unwrap() > 10, "{spin}");
    // Attached: a process running before perf started, for one second.
    let mut child = std::process::Command::new(&exe).arg("3000000000").spawn().unwrap();
    let pid = child.id().to_string();
    let data = perf_record(dir.path(), "attached", &["-p", &pid, "-e", "cpu-clock", "-F", "500"], &["sleep", "1"]);
    child.kill().unwrap();
    child.wait().unwrap();
    let report = show_json(&data, &[]);
    assert_eq!(report["target"]["pids"][0].as_u64().unwrap().to_string(), pid);
    assert!(report["samples"].as_u64().unwrap() > 10, "{report:#}");
    assert_eq!(report["functions"][0]["name"], "main", "{:#}", report["functions"]);
}

#[test]
fn node_jit_code_is_named_from_its_jitdump() {
    if !have_perf() || !common::have("node", "apt-get install nodejs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hot.js");
    std::fs::write(
        &script,
        "function hotJitFunction(n) { let s = 0; for (let i = 0; i < n; i++) { s = (s * 31 + i) % 1000003; } return s; }\n\
         let t = 0; for (let r = 0; r < 30; r++) t += hotJitFunction(4e6);\nconsole.log(t);\n",
    )
    .unwrap();
    // -k 1: jitdump timestamps are CLOCK_MONOTONIC, as `perf inject --jit` wants them.
    let data = perf_record(
        dir.path(),
        "node",
        &["-k", "1", "-e", "cpu-clock", "-F", "2000"],
        &["node", "--perf-prof", script.to_str().unwrap()],
    );
    let report = show_json(&data, &[]);
    let top = &report["functions"][0];
    assert!(top["name"].as_str().unwrap().contains("hotJitFunction"), "{:#}", report["functions"]);
    assert_eq!(top["object"], "[jit]");
    // V8 compiles the function more than once (baseline, optimised): every version.
    let ours: f64 = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"].as_str().unwrap().contains("hotJitFunction"))
        .map(|f| f["self_share"].as_f64().unwrap())
        .sum();
    // perf itself names it only after `perf inject --jit` turned the dump into ELF files.
    let injected = dir.path().join("injected.data");
    let inject = std::process::Command::new("perf")
        .args(["inject", "--jit", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&injected)
        .output()
        .unwrap();
    if inject.status.success() {
        let perf = perf_report(&injected, &[]);
        let theirs: f64 = perf.iter().filter(|r| r.name.contains("hotJitFunction")).map(|r| r.self_share).sum();
        assert!((ours - theirs).abs() < 0.01, "perflab {ours}, perf report {theirs}: {perf:#?}");
    }
}

#[test]
fn python_top_ten_agrees_with_perf_report() {
    if !have_perf() {
        return;
    }
    // Debian's interpreter (a `python3` on PATH may be a shell shim).
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        common::skip("/usr/bin/python3 is missing (apt-get install python3)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("work.py");
    std::fs::write(
        &script,
        "import json\n\
         data = [{'id': i, 'name': 'item%d' % i, 'tags': ['a', 'b', str(i)], 'v': i * 1.5} for i in range(2000)]\n\
         for _ in range(60):\n    s = json.dumps(data)\n    json.loads(s)\n    sorted(data, key=lambda d: -d['v'])\n",
    )
    .unwrap();
    let data = perf_record(
        dir.path(),
        "python",
        &["-e", "cpu-clock", "-F", "2000"],
        &[python.to_str().unwrap(), script.to_str().unwrap()],
    );
    let agreement = top_ten_agree(&perf_report(&data, &[]), &show_json(&data, &[]));
    eprintln!("python3 vs perf report: {agreement:?}");
    assert!(agreement.same_name >= 5, "{agreement:?}");
}

#[test]
fn postgres_under_pgbench_top_ten_agrees_with_perf_report() {
    if !have_perf() {
        return;
    }
    let Some(cluster) = common::cluster::Cluster::start() else { return };
    let pid = std::fs::read_to_string(cluster.dir().join("data/postmaster.pid")).unwrap();
    let pid = pid.lines().next().unwrap().trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    // The server (postmaster and the backends it forks for pgbench's clients), for as
    // long as pgbench runs.
    let pgbench = format!("{} >/dev/null 2>&1", cluster.client("pgbench -c 2 -j 2 -t 3000"));
    let data =
        perf_record(dir.path(), "postgres", &["-p", &pid, "-e", "cpu-clock", "-F", "1000"], &["sh", "-c", &pgbench]);
    let report = show_json(&data, &[]);
    assert_eq!(report["target"]["pids"][0].as_u64().unwrap().to_string(), pid);
    let agreement = top_ten_agree(&perf_report(&data, &[]), &report);
    eprintln!("postgres vs perf report: {agreement:?}");
    assert!(agreement.same_name >= 5, "{agreement:?}");
}

#[test]
fn broken_perf_data_and_unknown_events_are_one_line_errors() {
    if !have_perf() {
        return;
    }
    let exe = common::fixture("profile_ratio");
    let dir = tempfile::tempdir().unwrap();
    let data = perf_record(
        dir.path(),
        "two",
        &["-e", "cpu-clock", "-e", "page-faults", "-F", "999"],
        &[exe.to_str().unwrap(), "20000000"],
    );
    // Two events: the first is shown, the other named in a warning with how to choose it.
    let out = perflab().arg("show").arg(&data).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(stderr.contains("samples of 2 events") && stderr.contains("--event"), "{stderr}");
    let faults = show_json(&data, &["--event", "page-faults"]);
    assert_eq!(faults["event"], "page-faults");
    let out = perflab().arg("show").arg(&data).args(["--event", "cycles"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(stderr.contains("no sampled event `cycles`") && stderr.lines().count() == 1, "{stderr}");
    let bytes = std::fs::read(&data).unwrap();
    let cut = dir.path().join("cut.data");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let out = perflab().arg("show").arg(&cut).assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(stderr.lines().count() == 1 && stderr.contains("cut.data"), "{stderr}");
}
