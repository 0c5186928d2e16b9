//! The systems our users tune: code generated at run time (a fixture that writes code
//! into a file mapping and names it in its perf map; real SBCL compiling a consing loop
//! that writes its own perf map) named, grouped per piece of code, copied while the
//! process lives and annotated from the copy; stripped binaries named from debug files
//! served by a real debuginfod.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn perflab() -> Command {
    Command::cargo_bin("perflab").unwrap()
}

/// On CI a missing tool fails the test; elsewhere the test is skipped with a message.
fn have(tool: &str, package: &str) -> bool {
    let found = which::which(tool).is_ok();
    if !found {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{tool} is required on CI (apt-get install {package})");
        eprintln!("SKIPPED: {tool} is not installed");
    }
    found
}

/// Profile `argv` into `dir/NAME.profile`; returns the profile and its JSON report.
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
    (out, serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap())
}

fn row<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {:#}", report["functions"]))
}

fn annotate_json(profile: &Path, extra: &[&str]) -> Value {
    let out = perflab().arg("annotate").arg(profile).args(extra).args(["--json", "-"]).assert().success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// Perf maps the profiled processes wrote (named by their pids in the profile).
fn remove_perf_maps(report: &Value) {
    for task in report["tasks"].as_array().unwrap() {
        let _ = std::fs::remove_file(format!("/tmp/perf-{}.map", task["pid"]));
    }
}

#[test]
fn code_written_into_a_file_mapping_is_named_by_the_perf_map_grouped_and_annotated() {
    let exe = common::fixture("runtime_code");
    let dir = tempfile::tempdir().unwrap();
    let code_file = dir.path().join("code.bin");
    let (path, report) =
        profile(dir.path(), "runtime", &[exe.to_str().unwrap(), code_file.to_str().unwrap(), "300000000", "30000000"]);
    remove_perf_maps(&report);
    // The perf map names code in a file mapping (no ELF object): one row, not one per address.
    let named = row(&report, "spin_named");
    assert_eq!(named["object"], "[jit]");
    assert!(named["self_share"].as_f64().unwrap() > 0.5, "{named}");
    // The unnamed function is one row named after its file and offset (its sampled
    // instructions are 6 bytes apart), not one row per instruction.
    let unnamed: Vec<&Value> = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"].as_str().unwrap().starts_with("code.bin+0x"))
        .collect();
    assert_eq!(unnamed.len(), 1, "{:#}", report["functions"]);
    assert!(unnamed[0]["self_share"].as_f64().unwrap() > 0.05, "{}", unnamed[0]);

    // The file is gone, the process too: annotate works from the copy in the profile.
    std::fs::remove_file(&code_file).unwrap();
    let doc = annotate_json(&path, &["--top", "2"]);
    let functions = doc["functions"].as_array().unwrap();
    assert_eq!(functions[0]["name"], "spin_named", "the hottest function, JIT included");
    assert_eq!(functions[0]["generated"], true);
    let texts: Vec<&str> =
        functions[0]["instructions"].as_array().unwrap().iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert_eq!(texts.first(), Some(&"mov $1, %rax"), "{texts:?}");
    assert!(texts.contains(&"imul $3, %rax") && texts.last() == Some(&"ret"), "{texts:?}");
    let sampled: u64 =
        functions[0]["instructions"].as_array().unwrap().iter().map(|i| i["samples"].as_u64().unwrap()).sum();
    assert_eq!(sampled, functions[0]["samples"].as_u64().unwrap());
    // The unnamed code decodes into the division loop; the div's samples skid to the add.
    let div = &functions[1];
    assert!(div["name"].as_str().unwrap().starts_with("code.bin+0x"), "{}", div["name"]);
    assert!(div["note"].as_str().unwrap().contains("decoding starts"), "{}", div["note"]);
    let instructions = div["instructions"].as_array().unwrap();
    let at = instructions.iter().position(|i| i["text"] == "div %rcx").expect("the div is decoded");
    assert!(instructions[at]["hints"].as_array().unwrap().iter().any(|h| h["id"] == "div-integer"));
    assert!(
        instructions[at + 1]["hints"].as_array().unwrap().iter().any(|h| h["id"] == "skid"),
        "{}",
        instructions[at + 1]
    );

    // By the runtime's name, and by an address inside it.
    let by_name = annotate_json(&path, &["--symbol", "spin_named"]);
    assert_eq!(by_name["functions"][0]["start"], functions[0]["start"]);
    let address = format!("{:#x}", functions[0]["start"].as_u64().unwrap() + 7);
    let by_address = annotate_json(&path, &["--symbol", &address]);
    assert_eq!(by_address["functions"][0]["name"], "spin_named");
    // The terminal shows the loop; nothing is hidden in so short a function.
    let out = perflab().arg("annotate").arg(&path).args(["--symbol", "spin_named"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("loop back") && !text.contains("not shown"), "{text}");
}

#[test]
fn sbcl_consing_loop_is_named_from_its_own_perf_map_and_its_allocation_sequence_annotated() {
    if !have("sbcl", "sbcl") {
        return;
    }
    let script = common::fixtures_dir().join("sbcl_consing.lisp");
    let dir = tempfile::tempdir().unwrap();
    let (path, report) = profile(dir.path(), "sbcl", &["sbcl", "--script", script.to_str().unwrap(), "150000000"]);
    remove_perf_maps(&report);
    // SBCL compiled the loop into its mapping of sbcl.core (or anonymous memory beside
    // it); its own perf map names it, and the loop is the hottest function.
    let hottest = &report["functions"][0];
    assert_eq!(hottest["name"], "MAKE-GARBAGE", "{:#}", report["functions"]);
    assert_eq!(hottest["object"], "[jit]");
    assert!(hottest["self_share"].as_f64().unwrap() > 0.3, "{hottest}");
    // Unnamed Lisp code of sbcl.core (the GC's, the allocator's) is grouped per piece of
    // code: no two of its rows start within 256 bytes of each other (before, every
    // sampled instruction was a row of its own).
    let mut offsets: Vec<u64> = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str().unwrap().strip_prefix("sbcl.core+0x"))
        .map(|hex| u64::from_str_radix(hex, 16).unwrap())
        .collect();
    offsets.sort_unstable();
    assert!(offsets.windows(2).all(|w| w[1] - w[0] > 256), "{offsets:x?}");

    // annotate without --symbol disassembles the hottest function from the copy taken
    // while SBCL ran: the inline allocation (bump the region's free pointer, compare with
    // its end) and the cons's two stores are there, with their samples.
    let doc = annotate_json(&path, &["--top", "1"]);
    let function = &doc["functions"][0];
    assert_eq!(function["name"], "MAKE-GARBAGE");
    let instructions = function["instructions"].as_array().unwrap();
    let texts: Vec<&str> = instructions.iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert!(texts.iter().any(|t| t.starts_with("lea 0x10(%")), "allocation of 16 bytes: {texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("cmp ") && t.contains("(%r")), "{texts:?}");
    assert!(instructions.iter().any(|i| i["text"].as_str().unwrap().contains("loop") || i.get("jump_to").is_some()));
    let sampled: u64 = instructions.iter().map(|i| i["samples"].as_u64().unwrap()).sum();
    assert_eq!(sampled, function["samples"].as_u64().unwrap(), "every sample lands on a decoded instruction");
    assert!(sampled as f64 >= 0.3 * report["samples"].as_f64().unwrap());
}
