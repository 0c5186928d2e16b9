//! The viewers' formats written by `profile`/`show` (`--pprof`, `--speedscope`,
//! `--firefox`) checked by their own clients where one is installable: `go tool pprof`
//! reads our pprof file, speedscope's published file-format schema (from its npm
//! package) validates our speedscope JSON, and the Firefox Profiler's processed format
//! is walked through its documented tables (fxprof-processed-profile writes it and has
//! no reader). Each check finds the 3:1 split of the profile_ratio fixture within five
//! points, so a file that parses but says the wrong thing fails too.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One `profile -g` of the 3:1 fixture with every viewer's file, shared by the tests.
struct Exports {
    _dir: tempfile::TempDir,
    profile: PathBuf,
    pprof: PathBuf,
    speedscope: PathBuf,
    firefox: PathBuf,
    /// heavy_work's split of the samples in heavy_work and light_work, from perflab's
    /// own report of the recording: what every viewer must show.
    split: f64,
}

fn exports() -> &'static Exports {
    static EXPORTS: OnceLock<Exports> = OnceLock::new();
    EXPORTS.get_or_init(|| {
        let exe = common::fixture("profile_ratio");
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        let (profile, pprof, speedscope, firefox, report) =
            (path("r.profile"), path("r.pb.gz"), path("r.speedscope.json"), path("r.firefox.json"), path("r.json"));
        Command::cargo_bin("perflab")
            .unwrap()
            .args(["profile", "-g", "-F", "2000", "-o"])
            .arg(&profile)
            .arg("--pprof")
            .arg(&pprof)
            .arg("--speedscope")
            .arg(&speedscope)
            .arg("--firefox")
            .arg(&firefox)
            .arg("--json")
            .arg(&report)
            .arg("--")
            .arg(&exe)
            .arg("100000000")
            .assert()
            .success();
        // The recording's split is 3:1 within Hoeffding's tolerance (tests/common/noise.rs);
        // the viewers are then checked against the recording itself, exactly.
        let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let samples = |name: &str| {
            let functions = report["functions"].as_array().unwrap();
            functions.iter().find(|f| f["name"] == name).map_or(0, |f| f["self_samples"].as_u64().unwrap())
        };
        let (heavy, light) = (samples("heavy_work"), samples("light_work"));
        common::noise::assert_split(heavy, light, 0.75, "the recording's heavy_work : light_work");
        let split = heavy as f64 / (heavy + light) as f64;
        Exports { _dir: dir, profile, pprof, speedscope, firefox, split }
    })
}

/// The viewer shows the recording's split (within `go tool pprof`'s two decimals of a
/// percent).
fn assert_three_to_one(shares: &HashMap<String, f64>, client: &str) {
    let share = |name: &str| shares.get(name).copied().unwrap_or(0.0);
    let (heavy, light) = (share("heavy_work"), share("light_work"));
    let split = heavy / (heavy + light);
    let recorded = exports().split;
    assert!((split - recorded).abs() < 1e-3, "{client}: heavy {heavy}, light {light}: {split}, recorded {recorded}");
}

/// `go tool pprof -top`'s flat% column per function.
fn pprof_top(file: &Path) -> Option<HashMap<String, f64>> {
    if !common::have("go", "apt-get install golang-go") {
        return None;
    }
    let out = std::process::Command::new("go").args(["tool", "pprof", "-top"]).arg(file).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "go tool pprof: {}{text}", String::from_utf8_lossy(&out.stderr));
    // Rows: flat flat% sum% cum cum% name
    let rows = text.lines().skip_while(|l| !l.trim_start().starts_with("flat")).skip(1);
    let shares = rows
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let share = cols.get(1)?.strip_suffix('%')?.parse::<f64>().ok()?;
            Some((cols.get(5..)?.join(" "), share / 100.0))
        })
        .collect();
    Some(shares)
}

#[test]
fn go_tool_pprof_reads_the_pprof_file_of_profile_and_show() {
    let e = exports();
    let Some(shares) = pprof_top(&e.pprof) else { return };
    assert_three_to_one(&shares, "go tool pprof (profile --pprof)");
    // show writes the same file from the saved profile.
    let again = e.pprof.with_extension("show.gz");
    Command::cargo_bin("perflab").unwrap().arg("show").arg(&e.profile).arg("--pprof").arg(&again).assert().success();
    assert_three_to_one(&pprof_top(&again).unwrap(), "go tool pprof (show --pprof)");
}

/// speedscope's file-format schema, from the npm package scripts/test installs.
fn speedscope_schema() -> Option<PathBuf> {
    let dir = std::env::var_os("PERFLAB_SPEEDSCOPE_DIR").map(PathBuf::from);
    let schema = dir.map(|d| d.join("node_modules/speedscope/dist/release/file-format-schema.json"));
    match schema.filter(|s| s.exists()) {
        Some(s) => Some(s),
        None => {
            common::skip("PERFLAB_SPEEDSCOPE_DIR is unset or has no speedscope package (scripts/test installs it)");
            None
        }
    }
}

#[test]
fn speedscope_file_follows_speedscopes_schema_and_weighs_three_to_one() {
    let e = exports();
    let Some(schema) = speedscope_schema() else { return };
    let check = "import json, sys, jsonschema\n\
                 jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))";
    let out = std::process::Command::new("python3").args(["-c", check]).arg(&schema).arg(&e.speedscope).output();
    match out {
        Ok(out) => assert!(out.status.success(), "schema: {}", String::from_utf8_lossy(&out.stderr)),
        Err(err) => panic!("python3 with jsonschema is needed (apt-get install python3-jsonschema): {err}"),
    }
    let file: Value = serde_json::from_slice(&std::fs::read(&e.speedscope).unwrap()).unwrap();
    let frames = file["shared"]["frames"].as_array().unwrap();
    let mut leaf_weight: HashMap<String, f64> = HashMap::new();
    let mut total = 0.0;
    for profile in file["profiles"].as_array().unwrap() {
        assert_eq!(profile["unit"], "nanoseconds", "cpu-clock weighs time");
        let weights = profile["weights"].as_array().unwrap();
        for (stack, weight) in profile["samples"].as_array().unwrap().iter().zip(weights) {
            let leaf = stack.as_array().unwrap().last().unwrap().as_u64().unwrap() as usize;
            let name = frames[leaf]["name"].as_str().unwrap().to_string();
            *leaf_weight.entry(name).or_default() += weight.as_f64().unwrap();
            total += weight.as_f64().unwrap();
        }
    }
    leaf_weight.values_mut().for_each(|w| *w /= total);
    assert_three_to_one(&leaf_weight, "speedscope");
}

/// The processed format's tables, as documented in the Firefox Profiler's
/// src/types/profile.js: samples.stack → stackTable.frame → frameTable.func →
/// funcTable.name → stringArray; samples.timeDeltas accumulate into time.
#[test]
fn firefox_profile_has_a_timeline_and_its_tables_resolve_to_the_three_to_one_split() {
    let e = exports();
    let file: Value = serde_json::from_slice(&std::fs::read(&e.firefox).unwrap()).unwrap();
    assert!(file["meta"]["version"].as_u64().is_some() && file["meta"]["preprocessedProfileVersion"].is_u64());
    assert_eq!(file["meta"]["symbolicated"], true);
    let mut leaf_weight: HashMap<String, f64> = HashMap::new();
    let mut total = 0.0;
    for thread in file["threads"].as_array().unwrap() {
        let column = |table: &str, name: &str| -> Vec<Value> { thread[table][name].as_array().unwrap().clone() };
        let strings = thread["stringArray"].as_array().unwrap();
        let (stack_frame, frame_func, func_name) =
            (column("stackTable", "frame"), column("frameTable", "func"), column("funcTable", "name"));
        let samples = &thread["samples"];
        let length = samples["length"].as_u64().unwrap() as usize;
        let stacks = samples["stack"].as_array().unwrap();
        let deltas = samples["timeDeltas"].as_array().unwrap();
        assert!(stacks.len() == length && deltas.len() == length);
        // A timeline: one entry per sample, at its own time (not all at 0).
        if length > 10 {
            assert!(deltas.iter().skip(1).any(|d| d.as_f64().unwrap() > 0.0), "no timeline");
        }
        let weights = samples["weight"].as_array().cloned().unwrap_or_else(|| vec![Value::from(1); length]);
        for (stack, weight) in stacks.iter().zip(&weights) {
            let Some(stack) = stack.as_u64() else { continue };
            let frame = stack_frame[stack as usize].as_u64().unwrap() as usize;
            let func = frame_func[frame].as_u64().unwrap() as usize;
            let name = strings[func_name[func].as_u64().unwrap() as usize].as_str().unwrap().to_string();
            *leaf_weight.entry(name).or_default() += weight.as_f64().unwrap();
            total += weight.as_f64().unwrap();
        }
    }
    assert!(total > 500.0, "{total} samples");
    leaf_weight.values_mut().for_each(|w| *w /= total);
    assert_three_to_one(&leaf_weight, "Firefox Profiler tables");
}
