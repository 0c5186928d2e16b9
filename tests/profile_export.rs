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

/// One `profile -g` of the inline fixture (step() inlined into outer(), built -O2 -g)
/// with the pprof, Firefox and speedscope files: what the viewers need to open source,
/// assembly and inline frames.
struct InlineExports {
    _dir: tempfile::TempDir,
    exe: PathBuf,
    pprof: PathBuf,
    speedscope: PathBuf,
    firefox: PathBuf,
}

fn inline_exports() -> &'static InlineExports {
    static EXPORTS: OnceLock<InlineExports> = OnceLock::new();
    EXPORTS.get_or_init(|| {
        let exe = common::fixture("profile_inline");
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        let (profile, pprof, speedscope, firefox) =
            (path("i.profile"), path("i.pb.gz"), path("i.speedscope.json"), path("i.firefox.json"));
        Command::cargo_bin("perflab")
            .unwrap()
            .args(["profile", "-g", "-F", "2000", "-o"])
            .arg(&profile)
            .arg("--")
            .arg(&exe)
            .arg("100000000")
            .assert()
            .success();
        // The files come from `show` of the saved profile: the path every export shares.
        Command::cargo_bin("perflab")
            .unwrap()
            .arg("show")
            .arg(&profile)
            .arg("--pprof")
            .arg(&pprof)
            .arg("--speedscope")
            .arg(&speedscope)
            .arg("--firefox")
            .arg(&firefox)
            .assert()
            .success();
        InlineExports { _dir: dir, exe, pprof, speedscope, firefox }
    })
}

/// The line of profile_inline.c that contains `text` (a function's declaration).
fn declared_at(text: &str) -> u64 {
    let source = std::fs::read_to_string(common::fixtures_dir().join("profile_inline.c")).unwrap();
    source.lines().position(|l| l.contains(text)).expect("declared in the fixture") as u64 + 1
}

/// `go tool pprof ARGS FILE`'s stdout, None (skipped) without Go.
fn go_pprof(args: &[&str], file: &Path) -> Option<String> {
    if !common::have("go", "apt-get install golang-go") {
        return None;
    }
    let out = std::process::Command::new("go").arg("tool").arg("pprof").args(args).arg(file).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "go tool pprof {args:?}: {}{text}", String::from_utf8_lossy(&out.stderr));
    Some(text)
}

/// The fixture's GNU build ID as binutils' readelf prints it.
fn readelf_build_id(exe: &Path) -> Option<String> {
    if !common::have("readelf", "apt-get install binutils") {
        return None;
    }
    let out = std::process::Command::new("readelf").arg("-n").arg(exe).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
}

/// The samples (first column, e.g. `93ms`, `.` for none) of the `-list` row whose
/// source text contains `needle`.
fn listed_flat<'a>(listing: &'a str, needle: &str) -> &'a str {
    let row =
        listing.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no row with {needle}:\n{listing}"));
    row.split_whitespace().next().unwrap()
}

#[test]
fn pprof_list_shows_outers_source_and_the_inlined_step_at_its_own_lines() {
    let e = inline_exports();
    let Some(outer) = go_pprof(&["-list", "^outer$"], &e.pprof) else { return };
    assert!(outer.contains("profile_inline.c"), "{outer}");
    // The call of step() carries step's samples as cumulative ones (column 2).
    let call = outer.lines().find(|l| l.contains("x = step(x);")).unwrap_or_else(|| panic!("{outer}"));
    assert_ne!(call.split_whitespace().nth(1), Some("."), "{call}");
    let step = go_pprof(&["-list", "^step$"], &e.pprof).unwrap();
    assert_ne!(listed_flat(&step, "6364136223846793005UL"), ".", "step's multiply has the samples:\n{step}");
    assert!(!step.contains("ELF"), "source, not the binary's bytes:\n{step}");
}

#[test]
fn pprof_disasm_puts_samples_on_outers_instructions() {
    let e = inline_exports();
    if !common::have("objdump", "apt-get install binutils") {
        return;
    }
    let Some(text) = go_pprof(&["-disasm", "outer"], &e.pprof) else { return };
    // Rows: flat cum address: instruction; some with samples (not `.`).
    let sampled = text
        .lines()
        .filter(|l| {
            l.contains(": ") && !l.trim_start().starts_with('.') && !l.contains("ROUTINE") && !l.contains("Total")
        })
        .count();
    assert!(sampled >= 1, "no instruction with samples:\n{text}");
    assert!(text.contains("IMUL") || text.contains("imul"), "outer's multiply disassembled:\n{text}");
}

#[test]
fn pprof_lines_top_names_file_line_and_inline() {
    let e = inline_exports();
    let Some(text) = go_pprof(&["-lines", "-top"], &e.pprof) else { return };
    let top = text.lines().skip_while(|l| !l.trim_start().starts_with("flat")).nth(1).unwrap_or_default();
    assert!(top.contains("step") && top.contains("profile_inline.c:10") && top.contains("(inline)"), "{text}");
}

#[test]
fn pprof_raw_has_mappings_with_range_offset_path_and_build_id_and_located_addresses() {
    let e = inline_exports();
    let Some(build_id) = readelf_build_id(&e.exe) else { return };
    let Some(raw) = go_pprof(&["-raw"], &e.pprof) else { return };
    let exe = e.exe.to_str().unwrap();
    // `1: 0xSTART/0xLIMIT/0xOFFSET PATH BUILDID [FN][FL][LN][IN]`
    let mapping = raw
        .lines()
        .skip_while(|l| l != &"Mappings")
        .find(|l| l.contains(exe))
        .unwrap_or_else(|| panic!("no mapping of {exe}:\n{raw}"));
    assert!(mapping.contains(&build_id) && mapping.contains("[FN][FL][LN][IN]"), "{mapping} (build ID {build_id})");
    let range: Vec<u64> = mapping
        .split_whitespace()
        .nth(1)
        .unwrap()
        .split('/')
        .map(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).unwrap())
        .collect();
    assert!(range[0] < range[1], "{mapping}");
    // Locations of outer: a real address inside that mapping, and the source line.
    let id = mapping.split(':').next().unwrap().trim();
    let outer: Vec<&str> = raw.lines().filter(|l| l.contains(&format!("M={id} outer"))).collect();
    assert!(!outer.is_empty(), "{raw}");
    for l in outer {
        let address = u64::from_str_radix(l.split_whitespace().nth(1).unwrap().trim_start_matches("0x"), 16).unwrap();
        assert!(address >= range[0] && address < range[1], "{l} outside {mapping}");
        assert!(l.contains("profile_inline.c:1"), "{l}");
    }
}

#[test]
fn pprof_weblist_writes_the_annotated_source() {
    let e = inline_exports();
    let html = e.pprof.with_extension("weblist.html");
    let output = format!("-output={}", html.display());
    if go_pprof(&["-weblist=^outer$", &output], &e.pprof).is_none() {
        return;
    }
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("profile_inline.c") && text.contains("step(x)"), "{text}");
}

#[test]
fn firefox_file_has_libs_resources_native_symbols_addresses_lines_and_inline_frames() {
    let e = inline_exports();
    let file: Value = serde_json::from_slice(&std::fs::read(&e.firefox).unwrap()).unwrap();
    let exe = e.exe.to_str().unwrap();
    let libs = file["libs"].as_array().unwrap();
    let lib = libs.iter().position(|l| l["path"] == exe).unwrap_or_else(|| panic!("no lib {exe}: {libs:?}"));
    if let Some(build_id) = readelf_build_id(&e.exe) {
        assert_eq!(libs[lib]["codeId"], build_id.as_str());
    }
    assert_eq!(libs[lib]["breakpadId"].as_str().map(str::len), Some(33), "{:?}", libs[lib]);
    // Across threads: outer at an address with a line and a native symbol in the
    // fixture's resource; step inlined at the same address, one level deeper.
    let (mut outer_seen, mut step_seen) = (false, false);
    for thread in file["threads"].as_array().unwrap() {
        let strings = thread["stringArray"].as_array().unwrap();
        let string = |v: &Value| v.as_u64().and_then(|i| strings[i as usize].as_str()).unwrap_or_default().to_string();
        let (frames, funcs) = (&thread["frameTable"], &thread["funcTable"]);
        let resources = &thread["resourceTable"];
        let symbols = &thread["nativeSymbols"];
        for i in 0..frames["length"].as_u64().unwrap() as usize {
            let func = frames["func"][i].as_u64().unwrap() as usize;
            let name = string(&funcs["name"][func]);
            if name != "outer" && name != "step" {
                continue;
            }
            let resource = funcs["resource"][func].as_i64().unwrap();
            assert!(resource >= 0, "{name} has a resource");
            assert_eq!(resources["lib"][resource as usize], lib, "{name} is in the fixture's lib");
            assert!(string(&funcs["fileName"][func]).ends_with("profile_inline.c"), "{name}'s file");
            assert!(frames["address"][i].as_i64().unwrap() > 0, "{name} has an address");
            assert!(frames["line"][i].as_u64().is_some(), "{name} has a line");
            let symbol = frames["nativeSymbol"][i].as_u64().expect("a native symbol") as usize;
            assert_eq!(string(&symbols["name"][symbol]), "outer", "the symbol is the enclosing function");
            assert_eq!(symbols["libIndex"][symbol], lib);
            let depth = frames["inlineDepth"][i].as_u64().unwrap();
            if name == "outer" {
                assert_eq!(depth, 0);
                assert_eq!(funcs["lineNumber"][func].as_u64(), Some(declared_at("unsigned long outer(")));
                outer_seen = true;
            } else {
                assert_eq!(depth, 1, "step is inlined into outer");
                assert_eq!(frames["line"][i], 10, "step's multiply is line 10");
                assert_eq!(funcs["lineNumber"][func].as_u64(), Some(declared_at("unsigned long step(")));
                step_seen = true;
            }
        }
    }
    assert!(outer_seen && step_seen, "outer {outer_seen}, step {step_seen}");
}

#[test]
fn speedscope_frames_name_the_source_file_and_start_line() {
    let e = inline_exports();
    let file: Value = serde_json::from_slice(&std::fs::read(&e.speedscope).unwrap()).unwrap();
    let frames = file["shared"]["frames"].as_array().unwrap();
    let outer = frames.iter().find(|f| f["name"] == "outer").unwrap_or_else(|| panic!("{frames:?}"));
    assert!(outer["file"].as_str().unwrap().ends_with("profile_inline.c"), "{outer}");
    // Each function's line is where the source declares it.
    assert_eq!(outer["line"].as_u64(), Some(declared_at("unsigned long outer(")), "{outer}");
    let step = frames.iter().find(|f| f["name"] == "step [inlined]").unwrap_or_else(|| panic!("{frames:?}"));
    assert!(step["file"].as_str().unwrap().ends_with("profile_inline.c"), "{step}");
    assert_eq!(step["line"].as_u64(), Some(declared_at("unsigned long step(")), "{step}");
    let Some(schema) = speedscope_schema() else { return };
    let check = "import json, sys, jsonschema\n\
                 jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))";
    let out =
        std::process::Command::new("python3").args(["-c", check]).arg(&schema).arg(&e.speedscope).output().unwrap();
    assert!(out.status.success(), "schema: {}", String::from_utf8_lossy(&out.stderr));
}

/// The `-lines -top` rows and `-raw` mappings of a pprof file, asserting that the
/// fixture `exe` is a mapping with its path, build ID and line tables.
fn assert_pprof_carries_mapping_of(file: &Path, exe: &Path) -> Option<String> {
    let build_id = readelf_build_id(exe)?;
    let raw = go_pprof(&["-raw"], file)?;
    let exe = exe.to_str().unwrap();
    let mapping = raw.lines().skip_while(|l| l != &"Mappings").find(|l| l.contains(exe));
    let mapping = mapping.unwrap_or_else(|| panic!("no mapping of {exe}:\n{raw}"));
    assert!(mapping.contains(&build_id) && mapping.contains("[FN][FL][LN][IN]"), "{mapping} (build ID {build_id})");
    go_pprof(&["-lines", "-top"], file)
}

#[test]
fn show_of_perf_data_writes_the_same_lines_and_inline_frames() {
    if !common::have("perf", "apt-get install linux-perf") {
        return;
    }
    let exe = common::fixture("profile_inline");
    let dir = tempfile::tempdir().unwrap();
    let (data, pprof) = (dir.path().join("i.data"), dir.path().join("i.pb.gz"));
    let out = std::process::Command::new("perf")
        .args(["record", "-q", "-g", "-F", "2000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&exe)
        .arg("100000000")
        .output()
        .unwrap();
    if !out.status.success() {
        common::skip(&format!("perf record failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        return;
    }
    Command::cargo_bin("perflab").unwrap().arg("show").arg(&data).arg("--pprof").arg(&pprof).assert().success();
    let Some(top) = assert_pprof_carries_mapping_of(&pprof, &exe) else { return };
    let first = top.lines().skip_while(|l| !l.trim_start().starts_with("flat")).nth(1).unwrap_or_default();
    assert!(first.contains("step") && first.contains("profile_inline.c:10") && first.contains("(inline)"), "{top}");
}

#[test]
fn allocation_profile_exports_carry_the_allocating_lines() {
    if !common::is_root() {
        common::skip("allocation profiles need root or CAP_PERFMON (uprobes)");
        return;
    }
    let exe = common::fixture("alloc_calls");
    let dir = tempfile::tempdir().unwrap();
    let (pprof, firefox) = (dir.path().join("a.pb.gz"), dir.path().join("a.firefox.json"));
    Command::cargo_bin("perflab")
        .unwrap()
        .args(["profile", "--alloc", "--stack-size", "1024", "--pprof"])
        .arg(&pprof)
        .arg("--firefox")
        .arg(&firefox)
        .arg("--")
        .arg(&exe)
        .args(["malloc", "1000"])
        .assert()
        .success();
    // make_node's malloc: the source line that allocates, with its bytes.
    let source = std::fs::read_to_string(common::fixtures_dir().join("alloc_calls.c")).unwrap();
    let line = source.lines().position(|l| l.contains("malloc(size)")).expect("make_node's malloc") + 1;
    if let Some(top) = assert_pprof_carries_mapping_of(&pprof, &exe) {
        let row = format!("make_node {}:{line}", common::fixtures_dir().join("alloc_calls.c").display());
        assert!(top.contains(&row), "no row {row}:\n{top}");
    }
    let file: Value = serde_json::from_slice(&std::fs::read(&firefox).unwrap()).unwrap();
    assert!(file["libs"].as_array().unwrap().iter().any(|l| l["path"] == exe.to_str().unwrap()), "{}", file["libs"]);
}

/// speedscope's own importer, in headless Chromium: its release page (from the npm
/// package) is served over HTTP with `#profileURL=` naming our file (its module
/// script does not load from file://), and the page's DOM then shows the file's title
/// and the busiest thread's profile — which speedscope shows only after importing it.
#[test]
fn speedscope_imports_the_file_in_headless_chromium() {
    let e = inline_exports();
    let Some(schema) = speedscope_schema() else { return };
    let Some(browser) = common::chromium() else {
        common::skip("chromium is not installed (apt-get install chromium)");
        return;
    };
    if !common::have("python3", "apt-get install python3") {
        return;
    }
    // The page and the profile in one served directory.
    let site = tempfile::tempdir().unwrap();
    let release = schema.parent().unwrap();
    for entry in std::fs::read_dir(release).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), site.path().join(entry.file_name())).unwrap();
    }
    std::fs::copy(&e.speedscope, site.path().join("profile.json")).unwrap();
    let mut server = std::process::Command::new("python3")
        .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory"])
        .arg(site.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // "Serving HTTP on 127.0.0.1 port 42559 (…) ..."
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.stdout.take().unwrap()), &mut first).unwrap();
    let port: u16 = first.split_whitespace().skip_while(|w| *w != "port").nth(1).and_then(|p| p.parse().ok()).unwrap();
    let url = format!("http://127.0.0.1:{port}/index.html#profileURL=http://127.0.0.1:{port}/profile.json");
    let user_dir = tempfile::tempdir().unwrap();
    let dom = std::process::Command::new(&browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("--user-data-dir={}", user_dir.path().display()))
        .arg(&url)
        .output();
    server.kill().ok();
    server.wait().ok();
    let dom = dom.expect("run chromium");
    let text = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.status.success(), "chromium: {}", String::from_utf8_lossy(&dom.stderr));
    let file: Value = serde_json::from_slice(&std::fs::read(&e.speedscope).unwrap()).unwrap();
    let title = format!("<title>{} - speedscope</title>", file["name"].as_str().unwrap());
    let thread = file["profiles"][0]["name"].as_str().unwrap();
    assert!(
        text.contains(&title) && text.contains(thread),
        "speedscope did not import the file ({title}, {thread}):\n{text}"
    );
}
