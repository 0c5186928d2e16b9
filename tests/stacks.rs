//! End-to-end tests of call stacks: DWARF unwinding (`profile -g dwarf`) of a fixture
//! without frame pointers and of Debian's python3.11 against `perf record --call-graph
//! dwarf`, JIT names from node's perf map, flame graphs (opened in headless Chromium,
//! with hostile names), differential flame graphs, `diff --stacks`, `--callers` and
//! `--callees`. Sampling is statistical: tolerances are in percentage points of share.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn perflab() -> Command {
    Command::cargo_bin("perflab").unwrap()
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// On CI a missing tool fails the test; elsewhere the test is skipped, said and counted.
fn have(tool: &str, package: &str) -> bool {
    common::have(tool, &format!("apt-get install {package}"))
}

/// The call-graph fixture (main calls a and b, both call leaf, 3:1) built with -O2
/// and without frame pointers, as distributions build programs.
fn fixture_without_frame_pointers() -> PathBuf {
    common::fixture_with("profile_callgraph", &["-O2", "-fomit-frame-pointer"])
}

/// Record `argv` with the given -g mode into `dir/NAME.profile`; returns the profile
/// path and its folded stacks.
fn record(dir: &Path, name: &str, mode: &str, argv: &[&str]) -> (PathBuf, String) {
    let (out, folded) = (dir.join(format!("{name}.profile")), dir.join(format!("{name}.folded")));
    perflab()
        .args(["profile", "-g", mode, "-F", "2000", "-o"])
        .arg(&out)
        .arg("--folded")
        .arg(&folded)
        .arg("--")
        .args(argv)
        .assert()
        .success();
    (out, std::fs::read_to_string(&folded).unwrap())
}

#[test]
fn dwarf_unwinding_recovers_the_three_to_one_split_that_frame_pointers_cannot() {
    let exe = fixture_without_frame_pointers();
    let argv = [exe.to_str().unwrap(), "100000000"];
    let dir = tempfile::tempdir().unwrap();
    let (path, folded) = record(dir.path(), "dwarf", "dwarf", &argv);
    let via_a = common::folded_ending_with(&folded, &["main", "a", "leaf"]);
    let via_b = common::folded_ending_with(&folded, &["main", "b", "leaf"]);
    common::noise::assert_split(via_a, via_b, 0.75, "leaf through a : through b");
    // Unwound to the program's entry point: nothing is cut short.
    let all: u64 = folded.lines().filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok()).sum();
    let from_start: u64 = folded
        .lines()
        .filter(|l| l.starts_with("_start;"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    assert!(from_start as f64 >= 0.98 * all as f64, "{from_start} of {all} stacks reach _start\n{folded}");
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.contains(r#""dwarf":{"stack_bytes":16384"#), "unwinding statistics saved");

    // Frame pointers: the kernel's walk stops at the leaf, so no sample reaches a or b.
    let (_, folded) = record(dir.path(), "fp", "fp", &argv);
    let via_callers =
        common::folded_ending_with(&folded, &["a", "leaf"]) + common::folded_ending_with(&folded, &["b", "leaf"]);
    assert!(via_callers as f64 <= 0.02 * all as f64, "frame pointers found callers?\n{folded}");

    // The caller and callee trees of the dwarf profile show the same split.
    let shown = perflab()
        .arg("show")
        .arg(&path)
        .args(["--callers", "leaf", "--callees", "main", "--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let shown: Value = serde_json::from_slice(&shown).unwrap();
    // Trees are flat lists of nodes naming their parent; node 0 is the function.
    let child = |tree: &Value, name: &str| -> u64 {
        let nodes = tree.as_array().unwrap();
        nodes.iter().find(|c| c["name"] == name && c["parent"] == 0).unwrap()["samples"].as_u64().unwrap()
    };
    let (callers, callees) = (&shown["callers"], &shown["callees"]);
    common::noise::assert_split(child(callers, "a"), child(callers, "b"), 0.75, "leaf's callers a : b");
    common::noise::assert_split(child(callees, "b"), child(callees, "a"), 0.25, "main's callees b : a");
    let text =
        perflab().arg("show").arg(&path).args(["--callers", "leaf"]).assert().success().get_output().stdout.clone();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("callers of leaf") && text.contains("a [profile_callgraph-O2fomitframepointer] ← main"),
        "{text}"
    );
}

#[test]
fn dwarf_unwinding_works_unprivileged() {
    // perf_event_paranoid 2 (Debian's default) lets a user sample its own user code,
    // stack copies included; the ring buffers must fit perf_event_mlock_kb.
    // SAFETY: geteuid has no preconditions.
    if !common::is_root() || which::which("setpriv").is_err() {
        common::skip("needs root and setpriv to run as nobody");
        return;
    }
    let exe = fixture_without_frame_pointers();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let folded = dir.path().join("n.folded");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["profile", "-g", "dwarf", "-F", "2000", "-o"])
        .arg(dir.path().join("n.profile"))
        .arg("--folded")
        .arg(&folded)
        .args(["--", exe.to_str().unwrap(), "100000000"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // The one refusal allowed is the documented paranoid message (paranoid ≥ 3).
        assert!(stderr.contains("perf_event_paranoid"), "{stderr}");
        common::skip_part("the unwinding", &format!("perf_event_paranoid refuses user nobody: {}", stderr.trim()));
        return;
    }
    let folded = std::fs::read_to_string(&folded).unwrap();
    let (a, b) = (
        common::folded_ending_with(&folded, &["main", "a", "leaf"]),
        common::folded_ending_with(&folded, &["main", "b", "leaf"]),
    );
    common::noise::assert_split(a, b, 0.75, "leaf through a : through b, as nobody");
}

/// Caller chains of `function`: its 3 nearest callers (inlined frames left out), with
/// sample counts, from the stacks of `stacks` (leaf first) using its outermost call.
fn caller_chains(stacks: impl Iterator<Item = (Vec<String>, u64)>, function: &str) -> HashMap<Vec<String>, u64> {
    let mut chains: HashMap<Vec<String>, u64> = HashMap::new();
    for (frames, count) in stacks {
        if let Some(at) = frames.iter().rposition(|f| f == function) {
            let chain: Vec<String> = frames[at + 1..].iter().take(3).map(|f| comparable(f)).collect();
            *chains.entry(chain).or_default() += count;
        }
    }
    chains
}

fn top3(chains: &HashMap<Vec<String>, u64>) -> Vec<Vec<String>> {
    let mut sorted: Vec<(&Vec<String>, &u64)> = chains.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    sorted.into_iter().take(3).map(|(c, _)| c.clone()).collect()
}

/// perf's names carry GCC's clone suffixes, perflab's are normalised; perf calls a
/// function without a symbol `[unknown]`, perflab `object+0xOFFSET` (from .eh_frame).
fn comparable(name: &str) -> String {
    if name.contains("+0x") {
        return "[unknown]".to_string();
    }
    [".isra", ".part", ".constprop", ".cold", ".lto_priv"]
        .iter()
        .filter_map(|s| name.find(s))
        .min()
        .map_or(name.to_string(), |i| name[..i].to_string())
}

#[test]
fn python_callers_of_the_top_function_agree_with_perf_dwarf() {
    let python = Path::new("/usr/bin/python3.11");
    if !python.exists() {
        common::skip("/usr/bin/python3.11 is not installed (Debian 12's python3)");
        return;
    }
    if !have("perf", "linux-perf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("work.py");
    std::fs::write(&script, JSON_WORKLOAD).unwrap();
    let argv = [python.to_str().unwrap(), script.to_str().unwrap()];

    // perflab: the top function by own samples, then its callers.
    let (path, report) = (dir.path().join("py.profile"), dir.path().join("py.json"));
    perflab()
        .args(["profile", "-g", "dwarf", "-F", "2000", "-o"])
        .arg(&path)
        .arg("--json")
        .arg(&report)
        .arg("--")
        .args(argv)
        .assert()
        .success();
    let report = json(&report);
    let top = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        // perf names functions without a symbol `[unknown]`: compare named ones.
        .filter(|f| !f["name"].as_str().unwrap().starts_with('[') && !f["name"].as_str().unwrap().contains("+0x"))
        .max_by_key(|f| f["self_samples"].as_u64().unwrap())
        .unwrap()["name"]
        .as_str()
        .unwrap()
        .to_string();
    // Inlined frames are marked in the JSON trees only (perf is asked not to show
    // them), so take the callers tree and flatten it back into stacks.
    let tree = perflab()
        .arg("show")
        .arg(&path)
        .args(["--callers", &top, "--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let tree: Value = serde_json::from_slice(&tree).unwrap();
    // Each node's own samples (minus its children's) end a stack: the path of
    // non-inlined names from the function through its ancestors in the tree.
    let nodes = tree["callers"].as_array().unwrap();
    let mut below = vec![0u64; nodes.len()];
    for n in nodes {
        if let Some(p) = n["parent"].as_u64() {
            below[p as usize] += n["samples"].as_u64().unwrap();
        }
    }
    let mut ours: Vec<(Vec<String>, u64)> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let here = n["samples"].as_u64().unwrap() - below[i];
        if here == 0 {
            continue;
        }
        let mut path = Vec::new();
        let mut at = Some(i);
        while let Some(j) = at {
            if !nodes[j]["inlined"].as_bool().unwrap_or(false) {
                path.push(nodes[j]["name"].as_str().unwrap().to_string());
            }
            at = nodes[j]["parent"].as_u64().map(|p| p as usize);
        }
        // path runs from the outermost caller found to the function: leaf first is reversed.
        path.reverse();
        ours.push((path, here));
    }
    let ours = caller_chains(ours.into_iter(), &top);

    // perf: same program, same frequency, DWARF call graphs, inlined frames off.
    let data = dir.path().join("perf.data");
    let rec = std::process::Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf", "-o"])
        .arg(&data)
        .arg("--")
        .args(argv)
        .output()
        .unwrap();
    assert!(rec.status.success(), "perf record: {}", String::from_utf8_lossy(&rec.stderr));
    let script = std::process::Command::new("perf")
        .args(["script", "--no-inline", "-F", "ip,sym", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&script.stdout);
    let perf_stacks = text.split("\n\n").map(|block| {
        let frames: Vec<String> =
            block.lines().filter_map(|l| l.trim().split_once(' ').map(|(_, sym)| sym.trim().to_string())).collect();
        (frames, 1)
    });
    let theirs = caller_chains(perf_stacks, &top);
    let (a, b) = (top3(&ours), top3(&theirs));
    let overlap = a.iter().filter(|c| b.contains(c)).count();
    // At least 2 of the top 3 agree (or all of them, when a function has fewer callers).
    assert!(
        !a.is_empty() && overlap >= a.len().min(b.len()).min(2),
        "top function {top}: perflab's top-3 caller chains {a:?}, perf's {b:?}"
    );
}

/// Serialising and parsing JSON for ~1.5 s in Debian's python3.11 (C accelerators in
/// _json, the interpreter around them).
const JSON_WORKLOAD: &str = r#"import json
data = [{"id": i, "name": "item%d" % i, "tags": ["a", "b", "c"], "value": i * 1.5,
         "nested": {"x": [1, 2, 3], "y": None}} for i in range(2000)]
for _ in range(90):
    json.loads(json.dumps(data))
"#;

#[test]
fn node_jit_function_is_named_from_its_perf_map() {
    if !have("node", "nodejs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hot.js");
    std::fs::write(
        &script,
        "function hotLoopFunction(n) { let s = 0; for (let i = 0; i < n; i++) { s = (s * 31 + i) % 1000003; } return s; }\n\
         let t = 0; for (let r = 0; r < 30; r++) t += hotLoopFunction(5e6);\nconsole.log(t);\n",
    )
    .unwrap();
    let (path, report) = (dir.path().join("node.profile"), dir.path().join("node.json"));
    // node --perf-basic-prof also writes an isolate-*-v8.log into its working directory.
    perflab()
        .current_dir(dir.path())
        .args(["profile", "-F", "2000", "-o"])
        .arg(&path)
        .arg("--json")
        .arg(&report)
        .args(["--", "node", "--perf-basic-prof"])
        .arg(&script)
        .assert()
        .success();
    let report = json(&report);
    let top5: Vec<(&str, &str)> = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .take(5)
        .map(|f| (f["name"].as_str().unwrap(), f["object"].as_str().unwrap()))
        .collect();
    assert!(top5.iter().any(|(name, object)| name.contains("hotLoopFunction") && *object == "[jit]"), "{top5:?}");
    // The names were kept in the profile: the map file is no longer needed.
    let pid = report["tasks"][0]["pid"].as_u64().unwrap();
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    let shown = perflab().arg("show").arg(&path).args(["--json", "-"]).assert().success().get_output().stdout.clone();
    let shown: Value = serde_json::from_slice(&shown).unwrap();
    assert_eq!(shown["functions"], report["functions"]);
}

/// A profile of one process whose code is all JIT code named by `names` (perf map
/// symbols may be any text, so they carry hostile names through the real pipeline):
/// `stacks` are (frame names root first, samples).
fn jit_profile(stacks: &[(&[&str], u64)]) -> String {
    let mut names: Vec<&str> = stacks.iter().flat_map(|(s, _)| s.iter().copied()).collect();
    names.sort();
    names.dedup();
    let start = |name: &str| 0x7f00_0000_u64 + 0x100 * names.iter().position(|n| *n == name).unwrap() as u64;
    let frames: Vec<Value> =
        names.iter().map(|n| serde_json::json!({"space": "user", "object": 0, "offset": start(n)})).collect();
    let symbols: Vec<Value> =
        names.iter().map(|n| serde_json::json!({"object": 0, "start": start(n), "size": 0x100, "name": n})).collect();
    let index = |name: &str| names.iter().position(|n| *n == name).unwrap();
    let stack_values: Vec<Value> = stacks
        .iter()
        .map(|(s, count)| {
            let frames: Vec<usize> = s.iter().rev().map(|n| index(n)).collect();
            serde_json::json!({"pid": 1, "tid": 1, "frames": frames, "count": count, "period": count * 1_000_000})
        })
        .collect();
    let mut samples: HashMap<&str, u64> = HashMap::new();
    for (s, count) in stacks {
        *samples.entry(s.last().unwrap()).or_default() += count;
    }
    let samples: Vec<Value> = samples
        .into_iter()
        .map(|(leaf, count)| {
            serde_json::json!({"pid": 1, "tid": 1, "space": "user", "object": 0, "offset": start(leaf),
                               "count": count, "period": count * 1_000_000})
        })
        .collect();
    let body = serde_json::json!({
        "event": "cpu-clock", "frequency_hz": 1000, "command": ["app"], "started": "2026-01-01T00:00:00Z",
        "duration_s": 1.0, "cpu_s": 1.0, "lost": 0, "exit_code": 0,
        "objects": [{"path": "/tmp/perf-1.map"}], "tasks": [{"pid": 1, "tid": 1, "comm": "app"}],
        "samples": samples, "frames": frames, "stacks": stack_values, "jit_symbols": symbols,
    });
    format!("perflab-profile 2\n{body}\n")
}

const EVIL: &str = "</script><script>alert(1)</script><img src=x onerror=alert(2)> \"q\" & 'a' \u{1}\u{1b}[31m";

/// Chromium from Debian; under CI=true its absence fails, elsewhere the caller skips.
fn chromium() -> Option<PathBuf> {
    common::chromium()
}

fn run_chromium(browser: &Path, extra: &[&str], page: &Path) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    std::process::Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--virtual-time-budget=5000", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium")
}

#[test]
fn flame_graph_opens_in_chromium_zooms_searches_and_shows_hostile_names_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.profile");
    let hot = format!("hot {EVIL}");
    let stacks: [(&[&str], u64); 3] =
        [(&["main", "parse", &hot], 60), (&["main", "parse", "lex"], 20), (&["main", "render"], 20)];
    std::fs::write(&path, jit_profile(&stacks)).unwrap();
    let svg_path = dir.path().join("flame.svg");
    perflab().arg("show").arg(&path).arg("--flamegraph").arg(&svg_path).assert().success();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(svg.matches("<script").count(), 1, "only the flame graph's own script");
    assert!(!svg.contains("<img") && !svg.contains('\u{1b}'), "markup or control characters leaked");
    assert!(svg.contains("&#60;/script&#62;&#60;script&#62;alert(1)"));

    let Some(browser) = chromium() else {
        common::skip_part("the headless Chromium check", "chromium is not installed (apt-get install chromium)");
        return;
    };
    // The SVG inline in an HTML page, as the HTML report embeds it: a probe records
    // script errors and alert() calls, then drives zoom and search.
    let probe = "<script>window.__errors=[];window.onerror=function(m){window.__errors.push(String(m));};\
        window.alert=function(){document.documentElement.setAttribute('data-alerted','yes');};\
        window.addEventListener('load',function(){var r=document.documentElement;try{\
        var svg=document.querySelector('svg.perflab-flame');\
        var width=function(name){var g=[].filter.call(svg.querySelectorAll('g.f'),function(g){return g.getAttribute('data-n')===name;})[0];\
          return g.style.display==='none'?'hidden':Math.round(+g.querySelector('rect').getAttribute('width'));};\
        r.setAttribute('data-frames',String(svg.querySelectorAll('g.f').length));\
        r.setAttribute('data-parse-before',String(width('parse')));\
        svg.perflabFlame.zoom('parse');\
        r.setAttribute('data-parse-zoomed',String(width('parse')));\
        r.setAttribute('data-render-zoomed',String(width('render')));\
        svg.perflabFlame.search('^lex$');\
        r.setAttribute('data-matched',svg.querySelector('.matched').textContent);\
        var texts=[].map.call(svg.querySelectorAll('g.f title'),function(t){return t.textContent;});\
        r.setAttribute('data-evil-text',String(texts.some(function(t){return t.indexOf('alert(1)\\x3c/script>')>=0;})));\
        }catch(e){r.setAttribute('data-exception',String(e));}\
        r.setAttribute('data-errors',String(window.__errors.length));});</script>";
    let page = dir.path().join("page.html");
    std::fs::write(&page, format!("<!DOCTYPE html><html><head>{probe}</head><body>{svg}</body></html>")).unwrap();
    let dom = run_chromium(&browser, &["--dump-dom"], &page);
    assert!(dom.status.success(), "chromium: {}", String::from_utf8_lossy(&dom.stderr));
    let dom = String::from_utf8_lossy(&dom.stdout);
    let root = &dom[dom.find("<html").expect("a DOM")..];
    let root = &root[..root.find('>').unwrap()];
    assert!(root.contains("data-errors=\"0\""), "{root}");
    assert!(!root.contains("data-alerted"), "a name ran as script: {root}");
    assert!(root.contains("data-evil-text=\"true\""), "the hostile name is shown as text: {root}");
    assert!(root.contains("data-frames=\"6\""), "all, main, parse, hot…, lex, render: {root}");
    // parse has 80 % of the width (1180 px inside the margins), all of it once zoomed;
    // render, beside it, is hidden.
    assert!(root.contains("data-parse-before=\"944\""), "{root}");
    assert!(root.contains("data-parse-zoomed=\"1180\""), "{root}");
    assert!(root.contains("data-render-zoomed=\"hidden\""), "{root}");
    assert!(root.contains("data-matched=\"Matched: 20.0%\""), "{root}");

    // The standalone SVG as people open it; the picture is kept for looking at.
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("flamegraph-hostile.png");
    let _ = std::fs::remove_file(&shot);
    let res =
        run_chromium(&browser, &[&format!("--screenshot={}", shot.display()), "--window-size=1200,200"], &svg_path);
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    assert!(std::fs::metadata(&shot).map(|m| m.len() > 5_000).unwrap_or(false), "no screenshot at {}", shot.display());
}

#[test]
fn diff_shows_changed_and_vanished_stacks_and_draws_them() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old.profile"), dir.path().join("new.profile"));
    std::fs::write(
        &old,
        jit_profile(&[(&["main", "a", "leaf"], 300), (&["main", "b", "leaf"], 100), (&["main", "gone"], 50)]),
    )
    .unwrap();
    std::fs::write(
        &new,
        jit_profile(&[(&["main", "a", "leaf"], 100), (&["main", "b", "leaf"], 100), (&["main", "fresh"], 80)]),
    )
    .unwrap();
    let out = perflab().arg("diff").arg(&old).arg(&new).args(["--stacks", "--json", "-"]).assert().success();
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let change = |name: &str| {
        report["changes"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()["change_s"].as_f64().unwrap()
    };
    assert!((change("main;a;leaf") + 0.2).abs() < 1e-9, "{report:#}");
    assert_eq!(change("main;b;leaf"), 0.0);
    assert!((change("main;gone") + 0.05).abs() < 1e-9);
    assert!((change("main;fresh") - 0.08).abs() < 1e-9);
    assert_eq!(report["changes"][0]["name"], "main;a;leaf", "sorted by |change|");

    let svg_path = dir.path().join("diff.svg");
    perflab().arg("diff").arg(&old).arg(&new).arg("--flamegraph").arg(&svg_path).assert().success();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let fill = |name: &str| {
        let at = svg.find(&format!("data-n=\"{name}\"")).unwrap_or_else(|| panic!("{name} not drawn"));
        let rest = &svg[at..];
        let f = &rest[rest.find("fill=\"").unwrap() + 6..];
        f[..f.find('"').unwrap()].to_string()
    };
    // Own time: leaf under a fell most (deepest blue), gone vanished (blue), fresh is new (red).
    assert!(fill("fresh").starts_with("rgb(250,"), "{}", fill("fresh"));
    assert!(fill("gone").ends_with(",250)"), "{}", fill("gone"));
    assert_eq!(fill("main"), "rgb(235,235,235)", "no own time, no colour");

    // Without call stacks in a profile, --stacks and --flamegraph are usage errors.
    let flat = dir.path().join("flat.profile");
    let text = jit_profile(&[(&["main"], 10)]);
    let body: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    let mut body = body.as_object().unwrap().clone();
    body.remove("stacks");
    body.remove("frames");
    std::fs::write(&flat, format!("perflab-profile 2\n{}\n", Value::Object(body))).unwrap();
    for (args, flag) in [(vec!["--stacks"], "--stacks"), (vec!["--flamegraph", "x.svg"], "--flamegraph")] {
        perflab()
            .arg("diff")
            .arg(&flat)
            .arg(&new)
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(format!("has no call stacks for {flag}")));
    }
}

#[test]
fn stack_options_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.profile");
    for (args, message) in [
        (vec!["--flamegraph", "f.svg"], "--flamegraph needs call stacks: add -g"),
        (vec!["--callers", "main"], "--callers needs call stacks: add -g"),
        (vec!["-g", "dwarf", "--stack-size", "100"], "--stack-size must be a multiple of 8"),
        (vec!["-g", "dwarf", "--stack-size", "70000"], "between 8 and 65528 bytes"),
        (vec!["-g", "lbr"], "invalid value 'lbr'"),
        (vec!["-g", "--folded", "same", "--flamegraph", "same"], "cannot write to the same place"),
    ] {
        perflab()
            .arg("profile")
            .args(&args)
            .arg("-o")
            .arg(&out)
            .args(["--", "true"])
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
    }
    perflab()
        .args(["profile", "-g", "-o"])
        .arg(&out)
        .args(["--callers", "no_such_function", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no function named `no_such_function`"));
}
