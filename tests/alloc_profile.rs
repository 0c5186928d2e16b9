//! Allocation profiles (`profile --alloc`) checked exactly against a fixture whose every
//! allocation is known (tests/fixtures/alloc_calls.c): calls and bytes per call site,
//! frees, the blocks live at exit — by the in-process recorder and by uprobes alike —,
//! sampling by bytes, custom allocators, and the views the other outputs draw. Uprobes
//! need root or CAP_PERFMON: elsewhere SKIP, after checking the refusal is one line.

mod common;

use assert_cmd::Command;
use perflab_profile::allocations::AllocSummary;
use perflab_profile::format::Profile;
use std::collections::BTreeMap;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

/// Record `args` + the fixture; the saved profile and the terminal report.
fn record(extra: &[&str], fixture: &std::path::Path, mode: &str, n: &str) -> Option<(Profile, String)> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("alloc.profile");
    // 1 KiB stack copies: the ~3,400 records of ~1.2 KiB of the largest run here fit one
    // 8 MiB ring even if perflab is never scheduled to drain it, so the exact counts do
    // not depend on how busy the machine is (the fixture's stacks are shallow).
    let output = perflab()
        .args(["profile", "--alloc", "--stack-size", "1024", "-o", out.to_str().unwrap()])
        .args(extra)
        .arg("--")
        .arg(fixture)
        .args([mode, n])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let uprobes = extra.windows(2).any(|w| w == ["--alloc-via", "uprobes"]) || extra.contains(&"--alloc-fn");
    if !common::is_root() && uprobes {
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("uprobes need root or CAP_PERFMON") && stderr.trim().lines().count() == 1, "{stderr}");
        common::skip("allocation profiles need root or CAP_PERFMON");
        return None;
    }
    assert!(output.status.success(), "{stderr}");
    Some((Profile::load(&out).unwrap(), String::from_utf8_lossy(&output.stdout).into_owned()))
}

/// (calls, bytes) per call site's function, from the profile's leaf frames.
fn by_site(profile: &Profile) -> BTreeMap<String, (u64, u64)> {
    let mut symbolizer = perflab_profile::symbolize::Symbolizer::default();
    perflab_profile::alloc::view::sites(profile, &mut symbolizer)
        .into_iter()
        .map(|s| (s.function, (s.calls, s.bytes)))
        .collect()
}

fn function<'a>(summary: &'a AllocSummary, name: &str) -> &'a perflab_profile::allocations::AllocFunction {
    summary.functions.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{name} not probed: {summary:?}"))
}

/// Every number of the fixture's malloc mode (N = 1000), exact: make_node mallocs 32,
/// 64, 128, … bytes (334 × 32 + 333 × 64 + 333 × 128 = 74,624) and leaks each tenth
/// (k = 0..99: 34 × 32 + 33 × 64 + 33 × 128 = 7,424 bytes); 250 callocs of 160 bytes
/// are made from main (make_table's call is a tail call: its frame is gone); grow_buffer
/// reallocs 256 · (2^10 − 1) = 261,888 bytes over 10 calls, the first realloc(NULL)
/// entering malloc inside (nested: not counted twice).
#[test]
fn an_allocation_profile_counts_every_call_and_byte_by_call_site() {
    let fixture = common::fixture("alloc_calls");
    for via in ["preload", "uprobes"] {
        let Some((profile, report)) = record(&["--alloc-via", via], &fixture, "malloc", "1000") else { continue };
        the_fixtures_malloc_mode_exactly(&profile, &report, via);
    }
}

fn the_fixtures_malloc_mode_exactly(profile: &Profile, report: &str, via: &str) {
    let summary = profile.alloc.as_ref().expect("an allocation summary");
    assert_eq!(profile.lost, 0, "nothing may be lost for exact counts");
    assert!(summary.tracked);
    let sites = by_site(profile);
    assert_eq!(sites.get("make_node"), Some(&(1000, 74_624)), "{via}: {sites:?}");
    assert_eq!(sites.get("main"), Some(&(250, 40_000)), "{via}: {sites:?}");
    assert_eq!(sites.get("grow_buffer"), Some(&(10, 261_888)), "{via}: {sites:?}");
    assert_eq!(sites.len(), 3, "{via}: {sites:?}");
    let malloc = function(summary, "malloc");
    // The probe on malloc also fires inside realloc(NULL, n) (told apart as nested); the
    // C library's internal call does not pass through an interposed malloc at all.
    let nested = if via == "uprobes" { 1 } else { 0 };
    assert_eq!((malloc.calls, malloc.bytes, malloc.nested), (1000, 74_624, nested), "{via}");
    assert_eq!((function(summary, "calloc").calls, function(summary, "calloc").bytes), (250, 40_000));
    assert_eq!((function(summary, "realloc").calls, function(summary, "realloc").bytes), (10, 261_888));
    assert_eq!(function(summary, "free").calls, 900 + 250 + 1);
    // Frees matched: 900 nodes, 250 tables, the buffer, and the 9 blocks realloc moved
    // or grew (each realloc of a block releases it).
    assert_eq!((summary.frees, summary.unmatched_frees), (1160, 0));
    assert_eq!((summary.live_blocks(), summary.live_bytes()), (100, 7_424));
    assert_eq!(summary.allocated_bytes() - summary.freed_bytes, 7_424, "what was not freed is what is live");
    // The live blocks' stacks run from _start through main to make_node.
    let mut symbolizer = perflab_profile::symbolize::Symbolizer::default();
    let live = perflab_profile::alloc::view::view(profile, perflab_profile::alloc::view::AllocView::Live);
    let (_, graph) = perflab_profile::aggregate::locate_with_graph(&live, &mut symbolizer);
    let folded = graph.expect("call stacks").folded();
    assert!(folded.trim().ends_with("main;make_node 7424"), "{folded}");
    assert!(report.contains("1,260 allocations, 367.7 KiB requested"), "{report}");
    assert!(report.contains("live at exit: 100 blocks, 7.2 KiB"), "{report}");
    // make_table's calloc is a tail call: said, with the way to see it.
    assert!(report.contains("250 allocation(s) shown in main were made by make_table"), "{via}: {report}");
}

/// The pool's program allocates its pool once: the N node mallocs vanish.
#[test]
fn the_pool_mode_allocates_once() {
    let fixture = common::fixture("alloc_calls");
    for via in ["preload", "uprobes"] {
        let Some((profile, _)) = record(&["--alloc-via", via], &fixture, "pool", "1000") else { continue };
        let summary = profile.alloc.as_ref().unwrap();
        assert_eq!(by_site(&profile).into_iter().collect::<Vec<_>>(), vec![("main".to_string(), (1, 64 * 128))]);
        assert_eq!((summary.frees, summary.live_blocks()), (1, 0), "{via}");
    }
}

/// Frame-pointer stacks: the call site comes from the return address on top of the
/// stack (at a function's first instruction its caller has no frame yet), its callers
/// from the chain.
#[test]
fn frame_pointer_stacks_find_the_call_site() {
    let fixture = common::fixture_with("alloc_calls", &["-fno-omit-frame-pointer"]);
    let Some((profile, _)) = record(&["--alloc-via", "uprobes", "-g", "fp"], &fixture, "malloc", "300") else { return };
    let sites = by_site(&profile);
    assert_eq!(sites.get("make_node").map(|s| s.0), Some(300), "{sites:?}");
    assert_eq!(sites.get("grow_buffer").map(|s| s.0), Some(3), "{sites:?}");
}

/// Sampled by bytes (a Poisson process, mean gap 256 bytes): the totals per function stay
/// exact; each call site's bytes are an unbiased estimate whose standard deviation the
/// profile states. The check allows 5 of those: for a sum of ~100+ independent sampled
/// allocations (normal to a good approximation) it fails with probability < 10⁻⁶ per site.
#[test]
fn sampling_by_bytes_estimates_each_site_without_bias() {
    let fixture = common::fixture("alloc_calls");
    let Some((profile, report)) = record(&["--alloc-sample", "256"], &fixture, "malloc", "1000") else { return };
    let summary = profile.alloc.as_ref().unwrap();
    assert_eq!(summary.sample_bytes, Some(256));
    assert!(!summary.tracked && summary.live.is_empty());
    assert_eq!((function(summary, "malloc").calls, function(summary, "malloc").bytes), (1000, 74_624));
    assert_eq!((function(summary, "calloc").calls, function(summary, "calloc").bytes), (250, 40_000));
    let mut symbolizer = perflab_profile::symbolize::Symbolizer::default();
    let sites = perflab_profile::alloc::view::sites(&profile, &mut symbolizer);
    for (name, truth) in [("make_node", 74_624.0), ("main", 40_000.0), ("grow_buffer", 261_888.0)] {
        let site = sites.iter().find(|s| s.function == name);
        let (estimate, sd) = site.map_or((0.0, None), |s| (s.bytes as f64, s.bytes_sd));
        let sd = sd.unwrap_or_else(|| panic!("{name}: no spread stated: {sites:?}"));
        assert!((estimate - truth).abs() <= 5.0 * sd.max(1.0), "{name}: {estimate} for {truth} (sd {sd})");
    }
    assert!(report.contains("sampled by bytes"), "{report}");
}

/// A custom allocator by name, its size in the first argument: the fixture's pool_get
/// takes none, so `make_node` stands in (its size is its first argument).
#[test]
fn custom_allocators_are_probed_by_name() {
    let fixture = common::fixture("alloc_calls");
    let spec = format!("{}:make_node", fixture.display());
    let Some((profile, _)) = record(&["--no-libc-alloc", "--alloc-fn", &spec], &fixture, "malloc", "600") else {
        return;
    };
    let summary = profile.alloc.as_ref().unwrap();
    assert_eq!(summary.functions.len(), 1);
    assert_eq!((summary.functions[0].calls, summary.functions[0].bytes), (600, 200 * (32 + 64 + 128)));
    assert_eq!(by_site(&profile).get("main").map(|s| s.0), Some(600));
}

#[test]
fn bad_allocation_options_are_one_line_usage_errors() {
    let fixture = common::fixture("alloc_calls");
    for (args, message) in [
        (vec!["--alloc-fn", "nocolon"], "OBJECT:FUNCTION"),
        (vec!["--alloc-fn", "libc.so.6:no_such_allocator"], "no function no_such_allocator"),
        (vec!["--alloc-every", "10"], "--alloc-sample BYTES samples by bytes"),
        (vec!["--alloc-sample", "0"], "at least 1 byte"),
        (vec!["--alloc-via", "uprobes", "--alloc-sample", "64k"], "needs the in-process recorder"),
        (vec!["--no-libc-alloc"], "leaves nothing to probe"),
    ] {
        let out = perflab()
            .args(["profile", "--alloc", "-o", "/tmp/perflab-alloc-bad.profile"])
            .args(&args)
            .arg("--")
            .arg(&fixture)
            .args(["pool", "1"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if !common::is_root() && err.contains("need root") {
            continue;
        }
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
    }
}

/// `go tool pprof -sample_index=INDEX -top`: the flat value per function (raw numbers).
fn pprof_flat(file: &std::path::Path, index: &str) -> BTreeMap<String, u64> {
    let out = std::process::Command::new("go")
        .args(["tool", "pprof", "-unit=byte", "-top", &format!("-sample_index={index}")])
        .arg(file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "go tool pprof: {}{text}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("Type: {index}")), "{text}");
    // Rows: flat flat% sum% cum cum% name; -unit=byte prints every value as NUMBERbyte or NUMBERB.
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let flat = cols.first()?.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse::<u64>().ok()?;
            Some((cols.get(5..)?.join(" "), flat))
        })
        .filter(|(_, flat)| *flat > 0)
        .collect()
}

/// The pprof file carries Go heap profiles' four sample types, read by `go tool pprof`
/// itself with the fixture's exact numbers: calls and bytes per call site, and the
/// blocks and bytes live at exit. The pprof file is written whatever `--alloc-view`
/// says (it carries all of them).
#[test]
fn go_tool_pprof_reads_alloc_and_inuse_space_and_objects() {
    if which::which("go").is_err() {
        common::skip("go not installed: cannot check with go tool pprof");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pprof = dir.path().join("alloc.pb.gz");
    let fixture = common::fixture("alloc_calls");
    let extra = ["--alloc-view", "calls", "--pprof", pprof.to_str().unwrap()];
    let Some(_) = record(&extra, &fixture, "malloc", "1000") else { return };
    let expect = |pairs: &[(&str, u64)]| pairs.iter().map(|(f, v)| (f.to_string(), *v)).collect::<BTreeMap<_, _>>();
    assert_eq!(
        pprof_flat(&pprof, "alloc_space"),
        expect(&[("make_node", 74_624), ("main", 40_000), ("grow_buffer", 261_888)])
    );
    assert_eq!(pprof_flat(&pprof, "alloc_objects"), expect(&[("make_node", 1000), ("main", 250), ("grow_buffer", 10)]));
    assert_eq!(pprof_flat(&pprof, "inuse_space"), expect(&[("make_node", 7_424)]));
    assert_eq!(pprof_flat(&pprof, "inuse_objects"), expect(&[("make_node", 100)]));
}

/// `compare --explain-alloc` watches every compared run with the allocation probes and
/// explains the change by call site, with the fixture's exact numbers per run: the pool
/// allocates once, from main (one 8 KiB malloc); the malloc mode 500 nodes from
/// make_node (37,280 bytes), 125 tables calloc'ed from main (make_table's tail call:
/// 20,000 bytes) and 5 reallocs from grow_buffer (7,936 bytes). Both weights, each
/// with the other beside it as a count.
#[test]
fn compare_explains_allocations_by_call_site_exactly() {
    let fixture = common::fixture("alloc_calls");
    let f = fixture.display().to_string();
    for (weight, other, expected) in [
        (
            "bytes",
            "calls",
            [("make_node", 0.0, 37_280.0, 500.0), ("main", 8192.0, 20_000.0, 125.0), ("grow_buffer", 0.0, 7936.0, 5.0)],
        ),
        (
            "calls",
            "bytes",
            [("make_node", 0.0, 500.0, 37_280.0), ("main", 1.0, 125.0, 20_000.0), ("grow_buffer", 0.0, 5.0, 7936.0)],
        ),
    ] {
        let out = perflab()
            .args(["compare", "--no-progress", "-r", "2", "--json", "-", &format!("--explain-alloc={weight}")])
            .args(["-n", "pool", "-n", "malloc", &format!("{f} pool 500"), &format!("{f} malloc 500")])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !common::is_root() {
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            assert!(
                stderr.contains("uprobes need root or CAP_PERFMON") && stderr.trim().lines().count() == 1,
                "{stderr}"
            );
            common::skip("allocation probes need root or CAP_PERFMON");
            return;
        }
        assert!(out.status.success(), "{stderr}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let primary = json["primary_metric"].as_str().unwrap();
        let comparison = json["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == primary).unwrap();
        let e = &comparison["explanation"];
        assert_eq!(e["event"], format!("alloc-{weight}"), "{e}");
        let rows: BTreeMap<String, (f64, f64, f64)> = e["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let n = |v: &serde_json::Value| v.as_f64().unwrap();
                (
                    r["name"].as_str().unwrap().to_string(),
                    (n(&r["baseline_per_run"]), n(&r["candidate_per_run"]), n(&r["counts"][other][1])),
                )
            })
            .collect();
        let expected: BTreeMap<String, (f64, f64, f64)> =
            expected.iter().map(|(name, a, b, count)| (name.to_string(), (*a, *b, *count))).collect();
        assert_eq!(rows, expected, "{e}");
        // Every call counted: exact per run, so each row's change is a point, and real.
        for row in e["functions"].as_array().unwrap() {
            assert_eq!(row["verdict"], "slower", "{row}");
            assert_eq!(row["contribution"]["low"], row["contribution"]["high"], "{row}");
        }
        assert!(e["warnings"].to_string().contains("carried the allocation probes"), "{e}");
    }
}

/// `profile --alloc -p PID` attaches to a running process and follows it across its exec
/// until it exits: a shell waits on its stdin until perflab says it is recording, then
/// execs the fixture, whose call sites come out exact (the shell's own allocations, if
/// any, are other call sites).
#[test]
fn attaching_to_a_running_process_counts_its_calls_exactly() {
    use std::io::{BufRead, Write};
    use std::process::Stdio;
    let fixture = common::fixture("alloc_calls");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("attached.profile");
    let mut shell = std::process::Command::new("sh")
        .args(["-c", &format!("read go; exec {} malloc 500", fixture.display())])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut perflab = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["profile", "--alloc", "--stack-size", "1024", "-p", &shell.id().to_string(), "-o"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(perflab.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    if !common::is_root() {
        let _ = shell.kill();
        let _ = shell.wait();
        let _ = perflab.wait();
        assert!(first.contains("uprobes need root or CAP_PERFMON"), "{first}");
        common::skip("allocation profiles need root or CAP_PERFMON");
        return;
    }
    assert!(first.starts_with("perflab: recording the allocations of"), "{first}");
    shell.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(shell.wait().unwrap().success());
    let status = perflab.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(status.success(), "{first}{rest}");
    let profile = Profile::load(&out).unwrap();
    // The fixture's own call sites: the shell's (its `main` too, if named) are elsewhere.
    let mut symbolizer = perflab_profile::symbolize::Symbolizer::default();
    let sites: BTreeMap<String, (u64, u64)> = perflab_profile::alloc::view::sites(&profile, &mut symbolizer)
        .into_iter()
        .filter(|s| s.object.ends_with("alloc_calls"))
        .map(|s| (s.function, (s.calls, s.bytes)))
        .collect();
    for (site, expected) in [("make_node", (500, 37_280)), ("main", (125, 20_000)), ("grow_buffer", (5, 7936))] {
        assert_eq!(sites.get(site), Some(&expected), "{site}: {sites:?}");
    }
    let summary = profile.alloc.unwrap();
    assert!(summary.notes.iter().any(|n| n.starts_with("attached to running processes")), "{:?}", summary.notes);
}

/// Under the allocation probes the profiled program starts a thread, fork, vfork,
/// posix_spawn (exec) and clone3 children as it does without (under the uprobe PMU with
/// `inherit` they failed with EFAULT), and the profile is written.
#[test]
fn a_profiled_program_starts_threads_and_children() {
    let fixture = common::fixture("probe_children");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("children.profile");
    let output =
        perflab().args(["profile", "--alloc", "-o", out.to_str().unwrap(), "--"]).arg(&fixture).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !common::is_root() {
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        common::skip("allocation profiles need root or CAP_PERFMON");
        return;
    }
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("children started: all"), "{stdout}{stderr}");
    let summary = Profile::load(&out).unwrap().alloc.expect("an allocation summary");
    // At least stdout's buffer, which the fixture's printf allocates.
    assert!(function(&summary, "malloc").calls >= 1, "{summary:?}");
}

/// A server's work is its children's (the postmaster's backends): attached to the
/// parent, the children already running are not followed, and the profile says so with
/// the way to add them.
#[test]
fn children_running_before_the_attach_are_said_not_watched() {
    if !common::is_root() {
        common::skip("allocation profiles need root or CAP_PERFMON");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("parent.profile");
    let mut parent = std::process::Command::new("sh").args(["-c", "sleep 30 & wait"]).spawn().unwrap();
    let children = || std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", parent.id())).unwrap_or_default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while children().trim().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let child = children().trim().to_string();
    let status = perflab()
        .args(["profile", "--alloc", "-p", &parent.id().to_string(), "--duration", "0.3", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let both = dir.path().join("both.profile");
    let with_child = perflab()
        .args(["profile", "--alloc", "-p", &format!("{},{child}", parent.id()), "--duration", "0.3", "-o"])
        .arg(&both)
        .output()
        .unwrap();
    let _ = std::process::Command::new("kill").arg(&child).status();
    let _ = parent.kill();
    let _ = parent.wait();
    assert!(with_child.status.success(), "{}", String::from_utf8_lossy(&with_child.stderr));
    let notes = Profile::load(&both).unwrap().alloc.unwrap().notes;
    assert!(
        !notes.iter().any(|n| n.contains("running when the probes were placed")),
        "a watched child is no missed one: {notes:?}"
    );
    let stdout = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{stdout}{}", String::from_utf8_lossy(&status.stderr));
    let notes = Profile::load(&out).unwrap().alloc.unwrap().notes;
    let note =
        notes.iter().find(|n| n.contains("running when the probes were placed")).unwrap_or_else(|| panic!("{notes:?}"));
    assert!(note.contains(&format!("1 child process(es) running when the probes were placed ({child})")), "{note}");
    assert!(note.contains(&format!("-p {0},$(pgrep -d, -P {0})", parent.id())), "{note}");
    assert!(stdout.contains(note.as_str()), "the note is printed: {stdout}");
}
