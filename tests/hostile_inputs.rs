//! Inputs users bring, bounded (issue #29): every reader of outside data — perf.data,
//! jitdump, perf maps, perflab profiles, suites, imports, object files — given mutated
//! real files must read them or refuse them in one line: no panic, no abort, no hang,
//! no allocation beyond what the file could hold. Crashes found are kept as regression
//! files in tests/data/hostile (each read again here).
//!
//! In the suite each reader runs a fixed number of seeded cases in-process (an abort
//! would end this test binary: the input being read is written first to
//! target/hostile-last-case so that it can be kept). `scripts/eval-hostile-inputs`
//! runs ≥ 10,000 cases per reader each in a forked child, counting aborts, time-outs
//! and peak memory (the ignored test `hostile_input_figures`).

mod common;
mod hostile;

use hostile::Reader;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn readers() -> Vec<Reader> {
    let import_seeds = vec![
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hyperfine-1.15.json")).unwrap(),
        hostile::seed("export.json"),
    ];
    vec![
        Reader {
            name: "perf.data",
            seeds: vec![
                hostile::seed("callchain.perf.data"),
                hostile::seed("dwarf.perf.data"),
                hostile::seed("compressed.perf.data"),
            ],
            mutate: hostile::mutate_binary,
            read: hostile::read_profile,
        },
        Reader {
            name: "jitdump",
            seeds: vec![hostile::seed("node.jitdump")],
            mutate: hostile::mutate_binary,
            read: hostile::read_jitdump,
        },
        Reader {
            name: "perf map",
            seeds: vec![hostile::seed("node.perf.map")],
            mutate: hostile::mutate_lines,
            read: hostile::read_perf_map,
        },
        Reader {
            name: "profile",
            seeds: vec![hostile::seed("dash.profile")],
            mutate: hostile::mutate_json,
            read: hostile::read_profile,
        },
        Reader {
            name: "suite",
            seeds: vec![hostile::SUITE_SEED.as_bytes().to_vec()],
            mutate: hostile::mutate_lines,
            read: hostile::read_suite,
        },
        Reader { name: "import", seeds: import_seeds, mutate: hostile::mutate_json, read: hostile::read_import },
        Reader {
            name: "object",
            seeds: vec![std::fs::read(common::fixture("profile_ratio")).unwrap()],
            mutate: hostile::mutate_binary,
            read: hostile::read_object,
        },
    ]
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// `cases` seeded mutations of `reader`'s seeds, read in-process. The input about to be
/// read is first written to target/hostile-last-case.
fn fuzz_in_process(reader: &Reader, cases: usize) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join(format!("case.{}", extension(reader.name)));
    let last = target_dir().join("hostile-last-case");
    let mut rng = StdRng::seed_from_u64(29);
    let (mut accepted, started) = (0, Instant::now());
    for case in 0..cases {
        let seed = &reader.seeds[rng.gen_range(0..reader.seeds.len())];
        let bytes = (reader.mutate)(seed, &mut rng);
        std::fs::write(&input, &bytes).unwrap();
        let _ = std::fs::write(&last, &bytes);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (reader.read)(&input)));
        match outcome {
            Ok(true) => accepted += 1,
            Ok(false) => {}
            Err(_) => panic!("{}: case {case} panicked; its input is in {}", reader.name, last.display()),
        }
    }
    eprintln!(
        "{}: {cases} cases in {:.1} s, {accepted} accepted, no panic",
        reader.name,
        started.elapsed().as_secs_f64()
    );
    assert!(accepted > 0, "{}: every case was refused: the mutations never got past the first check", reader.name);
}

fn extension(reader: &str) -> &'static str {
    match reader {
        "perf.data" => "data",
        "profile" => "profile",
        "suite" => "toml",
        "import" => "json",
        _ => "in",
    }
}

fn reader(name: &str) -> Reader {
    readers().into_iter().find(|r| r.name == name).unwrap()
}

#[test]
fn mutated_perf_data_files_are_read_or_refused() {
    fuzz_in_process(&reader("perf.data"), 300);
}

#[test]
fn mutated_jitdump_files_are_read_or_refused() {
    fuzz_in_process(&reader("jitdump"), 400);
}

#[test]
fn mutated_perf_maps_are_read_or_refused() {
    fuzz_in_process(&reader("perf map"), 400);
}

#[test]
fn mutated_profiles_are_read_or_refused() {
    fuzz_in_process(&reader("profile"), 200);
}

#[test]
fn mutated_suites_are_read_or_refused() {
    fuzz_in_process(&reader("suite"), 300);
}

#[test]
fn mutated_imports_are_read_or_refused() {
    fuzz_in_process(&reader("import"), 100);
}

/// The figures of `scripts/eval-hostile-inputs`: `PERFLAB_HOSTILE_CASES` cases per
/// reader (default 10,000), each in a forked child with a 4 GiB address-space limit and
/// a 20 s time-out. Run alone: `cargo test --release --test hostile_inputs --
/// --ignored --test-threads 1 --nocapture hostile_input_figures`.
#[test]
#[ignore]
fn hostile_input_figures() {
    let cases: usize = std::env::var("PERFLAB_HOSTILE_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let only = std::env::var("PERFLAB_HOSTILE_READERS").ok();
    let keep = target_dir().join("hostile-crashes");
    // SAFETY: getrusage on this process.
    let baseline = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage.ru_maxrss
    };
    println!(
        "the harness's own peak RSS: {} MiB (a case's RSS counts the pages its child shares with it)",
        baseline / 1024
    );
    println!(
        "{:<10} {:>7} {:>8} {:>8} {:>7} {:>7} {:>9} {:>13} {:>12} {:>8}",
        "reader",
        "cases",
        "accepted",
        "refused",
        "panics",
        "aborts",
        "timeouts",
        "peak RSS MiB",
        "slowest s",
        "total s"
    );
    let mut failures = 0;
    for reader in readers() {
        if only.as_deref().is_some_and(|o| !o.split(',').any(|n| n == reader.name)) {
            continue;
        }
        let t = hostile::run_forked(&reader, cases, 29, Duration::from_secs(20), 4 << 30, &keep);
        println!(
            "{:<10} {:>7} {:>8} {:>8} {:>7} {:>7} {:>9} {:>13.1} {:>12.2} {:>8.0}",
            reader.name,
            t.cases,
            t.accepted,
            t.refused,
            t.panics,
            t.aborts,
            t.timeouts,
            t.max_rss_kib as f64 / 1024.0,
            t.max_seconds,
            t.seconds
        );
        for kept in t.kept.iter().take(5) {
            println!("    kept {}", kept.display());
        }
        failures += t.panics + t.aborts + t.timeouts;
    }
    assert_eq!(failures, 0, "some cases panicked, aborted or timed out (kept in {})", keep.display());
}

// ---- The table's rows, one test each (issue #29) ----

fn perflab() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1").env_remove("PERFLAB_DB").timeout(Duration::from_secs(60));
    cmd
}

/// The command's stderr, asserting it failed with exit code 2 and said so in one line.
fn refused(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "exit code; stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// Row "mutated perf.data": each size field linux-perf-data trusted, set to a lie,
/// is refused in one line before the parser allocates (a 21 KB file asked for 2 TB).
#[test]
fn perf_data_whose_sizes_lie_is_refused_in_one_line() {
    use hostile::{put_u32, put_u64, PerfLayout};
    let seed = hostile::seed("callchain.perf.data");
    let layout = PerfLayout::of(&seed);
    let dir = tempfile::tempdir().unwrap();
    let show = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        refused(perflab().arg("show").arg(&path))
    };
    const EVENT_DESC: u32 = 12;
    // A feature section of 2 TB in a 7 KB file (the aborts: "memory allocation of
    // 2199023255552 bytes failed").
    let mut b = seed.clone();
    let (entry, _, _) = layout.feature(EVENT_DESC);
    put_u64(&mut b, entry + 8, 1 << 41);
    assert!(show("feature.data", &b).contains("reaches past the end of the file"));
    // The event descriptions count 4 billion events ("capacity overflow").
    let mut b = seed.clone();
    let (_, offset, _) = layout.feature(EVENT_DESC);
    put_u32(&mut b, offset as usize, u32::MAX);
    assert!(show("events.data", &b).contains("count 4294967295 events"));
    // An event's name 4 GB long.
    let mut b = seed.clone();
    let attr_size = u32::from_le_bytes(b[offset as usize + 4..offset as usize + 8].try_into().unwrap()) as usize;
    put_u32(&mut b, offset as usize + 8 + attr_size + 4, u32::MAX);
    assert!(show("name.data", &b).contains("cut short (an event's name)"));
    // No event descriptions, and attr_size 0 (a division by zero).
    let mut b = seed.clone();
    b[72 + 1] &= !(1 << (EVENT_DESC - 8));
    put_u64(&mut b, 16, 0);
    assert!(show("attr.data", &b).contains("attr_size 0"));
    // The data section runs past the end of the file.
    let mut b = seed.clone();
    put_u64(&mut b, 48, u64::MAX - 10);
    assert!(show("data.data", &b).contains("data section"));
    // The first record becomes an AUXTRACE record with a terabyte of trace after it.
    let mut b = seed.clone();
    let first = layout.data_offset as usize;
    put_u32(&mut b, first, 71);
    put_u64(&mut b, first + 8, 1 << 40);
    assert!(show("aux.data", &b).contains("AUXTRACE record"));
}

/// A perf.data file whose command line counts 4 billion words is still read (the
/// command line is only a label): the rest of the file is fine.
#[test]
fn perf_data_with_an_unreadable_command_line_is_shown_without_it() {
    use hostile::{put_u32, PerfLayout};
    let mut b = hostile::seed("callchain.perf.data");
    let (_, offset, _) = PerfLayout::of(&b).feature(11);
    put_u32(&mut b, offset as usize, u32::MAX);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cmdline.data");
    std::fs::write(&path, &b).unwrap();
    let out = perflab().arg("show").arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("samples of cpu-clock"));
}

/// Regression files: inputs that once crashed a reader (tests/data/hostile/crash-*),
/// each read again and refused or read, never a panic.
#[test]
fn kept_crash_inputs_stay_fixed() {
    let dir = hostile::data("");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("crash-") else { continue };
        let reader = match rest.split('-').next().unwrap() {
            "perf_data" => hostile::read_profile,
            "jitdump" => hostile::read_jitdump,
            "profile" => hostile::read_profile,
            "import" => hostile::read_import,
            "suite" => hostile::read_suite,
            other => panic!("{name}: no reader named {other}"),
        };
        let outcome = std::panic::catch_unwind(|| reader(&path));
        assert!(outcome.is_ok(), "{name} panics again");
        seen += 1;
    }
    eprintln!("{seen} kept crash inputs read again");
}

/// Row "a suite of 432 bytes: 9 parameters × 10 values": the expansion is counted
/// first and refused with its count, by `run --list` and by `queue` alike.
#[test]
fn a_suite_expanding_past_the_limit_is_refused_with_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let params: Vec<String> = (0..9).map(|p| format!("p{p} = [0,1,2,3,4,5,6,7,8,9]")).collect();
    let placeholders: String = (0..9).map(|p| format!(" {{p{p}}}")).collect();
    let suite = format!(
        "[[benchmark]]\nname = \"b\"\ncommand = \"true{placeholders}\"\nparams = {{ {} }}\n",
        params.join(", ")
    );
    let path = dir.path().join("perflab.toml");
    std::fs::write(&path, &suite).unwrap();
    let started = Instant::now();
    let line = refused(perflab().args(["run", "--list", "--suite"]).arg(&path));
    assert!(line.contains("1000000000 commands") && line.contains("limit of 10000"), "{line}");
    let db = dir.path().join("h.db");
    let line = refused(perflab().args(["queue", "--label", "v1", "--suite"]).arg(&path).arg("--db").arg(&db));
    assert!(line.contains("1000000000"), "{line}");
    // Several benchmarks that together pass the limit.
    let many: String = (0..3)
        .map(|i| {
            format!(
                "[[benchmark]]\nname = \"b{i}\"\ncommand = \"true {{n}} {{m}}\"\nparams = {{ n = [{}], m = [{}] }}\n",
                (0..60).map(|v| v.to_string()).collect::<Vec<_>>().join(","),
                (0..60).map(|v| v.to_string()).collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    std::fs::write(&path, many).unwrap();
    let line = refused(perflab().args(["run", "--list", "--suite"]).arg(&path));
    assert!(line.contains("more than 10000 benchmarks"), "{line}");
    // -L on the command line is counted the same way.
    let values = (0..200).map(|v| v.to_string()).collect::<Vec<_>>().join(",");
    let line = refused(perflab().args(["compare", "-L", "a", &values, "-L", "b", &values, "true {a} {b}"]));
    assert!(line.contains("40000 commands"), "{line}");
    eprintln!("refused in {:.1} s", started.elapsed().as_secs_f64());
}

/// Row "show, diff, annotate, import, run --suite on a FIFO / on /dev/zero": refused
/// at once as not a regular file (a FIFO blocked forever, /dev/zero grew 1.6 GB/s).
#[test]
fn special_files_are_refused_as_not_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let good = hostile::data("dash.profile");
    let db = dir.path().join("h.db");
    for special in [fifo.as_path(), Path::new("/dev/zero")] {
        let cases: Vec<Vec<std::ffi::OsString>> = vec![
            vec!["show".into(), special.into()],
            vec!["annotate".into(), special.into()],
            vec!["diff".into(), good.clone().into(), special.into()],
            vec!["diff".into(), special.into(), good.clone().into()],
            vec!["import".into(), "--label".into(), "x".into(), "--db".into(), db.clone().into(), special.into()],
            vec!["run".into(), "--list".into(), "--suite".into(), special.into()],
            vec!["report".into(), "--from".into(), special.into(), "-o".into(), dir.path().join("r.html").into()],
        ];
        for args in cases {
            let started = Instant::now();
            let line = refused(perflab().args(&args).timeout(Duration::from_secs(20)));
            assert!(line.contains("not a regular file"), "{args:?}: {line}");
            assert!(started.elapsed() < Duration::from_secs(10), "{args:?} took {:?}", started.elapsed());
        }
    }
}

/// The seed export with `edit` applied to its first experiment, written to `dir`.
fn edited_export(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let mut doc: serde_json::Value = serde_json::from_slice(&hostile::seed("export.json")).unwrap();
    edit(&mut doc["experiments"][0]["experiment"]);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    path
}

/// Row "import": a run given twice (the same round and position: pooled twice), a
/// negative contention time, an experiment without commands — each refused with the
/// record, its line and the reason, and nothing stored.
#[test]
fn imports_with_impossible_records_are_refused_with_the_line_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let duplicate = edited_export(dir.path(), "dup.json", |e| {
        let runs = e["commands"][0]["runs"].as_array_mut().unwrap();
        let copy = runs[3].clone();
        runs.insert(4, copy);
    });
    let negative = edited_export(dir.path(), "neg.json", |e| {
        e["commands"][1]["runs"][2]["counters"]["uncontended_s"]["value"] = serde_json::json!(-0.5);
    });
    let empty = edited_export(dir.path(), "empty.json", |e| e["commands"] = serde_json::json!([]));
    let db = dir.path().join("h.db");
    for (file, reason) in [
        (&duplicate, "has two runs of round 3"),
        (&negative, "uncontended_s = -5e-1 is negative"),
        (&empty, "the experiment has no commands"),
    ] {
        let line = refused(perflab().arg("import").arg("--db").arg(&db).arg(file));
        assert!(line.contains("record 1 (ending on line ") && line.contains(reason), "{line}");
        assert!(!db.exists(), "nothing is stored (the file is checked whole first)");
    }
    // The unedited export imports.
    perflab().arg("import").arg("--db").arg(&db).arg(hostile::data("export.json")).assert().success();
}

/// Row "import of a 53 MB export (100k runs)": import and export stream a record at a
/// time (the figures are scripts/eval-hostile-inputs'); what they write is what the
/// whole-file export wrote, and an export imports back to the same export.
#[test]
fn streamed_export_equals_the_whole_export_and_round_trips() {
    use perflab::store::exchange;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    // Many experiments (several export batches), from the seed and hyperfine's file.
    for label in 0..40 {
        perflab()
            .args(["import", "--db", db, "--label", &format!("v{label}")])
            .arg(hostile::data("export.json"))
            .assert()
            .success();
    }
    perflab()
        .args(["import", "--db", db, "--label", "h"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hyperfine-1.15.json"))
        .assert()
        .success();
    let mut store = perflab::store::Store::open(Some(db)).unwrap();
    let query = perflab::store::Query::default();
    let whole = perflab::render::json::to_string(&exchange::export(&mut store, &query).unwrap()).unwrap();
    let streamed = dir.path().join("streamed.json");
    let count = exchange::export_to(&mut store, &query, &mut std::fs::File::create(&streamed).unwrap()).unwrap();
    assert_eq!(count, 44);
    assert!(std::fs::read_to_string(&streamed).unwrap() == whole, "the streamed export differs");
    // Imported again into a fresh store, exported again: the same experiments.
    let again = dir.path().join("again.db");
    perflab().arg("import").arg("--db").arg(&again).arg(&streamed).assert().success();
    let mut again = perflab::store::Store::open(Some(again.to_str().unwrap())).unwrap();
    let before: Vec<_> = exchange::export(&mut store, &query).unwrap().experiments;
    let after: Vec<_> = exchange::export(&mut again, &query).unwrap().experiments;
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(&after) {
        assert_eq!((&b.label, &b.benchmark, &b.experiment.commands), (&a.label, &a.benchmark, &a.experiment.commands));
    }
}

/// Row "a PostgreSQL URL with ?password=… (or an @ in the password)": hidden in the
/// error line whatever form the secret takes.
#[test]
fn database_secrets_are_hidden_in_error_lines() {
    let secrets = ["Hunter2-userinfo", "qwertyuiop-query", "zxcvbnm-sslpass", "p@ss@word-at"];
    let urls = [
        format!("postgres://u:{}@127.0.0.1:1/db", secrets[0]),
        format!("postgres://u@127.0.0.1:1/db?password={}&connect_timeout=2", secrets[1]),
        format!("postgresql://127.0.0.1:1/db?sslpassword={}&pass%77ord={}", secrets[2], secrets[1]),
        format!("postgres://u:{}@127.0.0.1:1/db", secrets[3]),
    ];
    for url in &urls {
        for args in [vec!["history", "--db", url], vec!["export", "--db", url], vec!["queue", "--list", "--db", url]] {
            let out = perflab().args(&args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{args:?}");
            for secret in secrets {
                assert!(!stderr.contains(secret), "{args:?} shows {secret}: {stderr}");
            }
            assert!(stderr.contains("***"), "{args:?}: {stderr}");
        }
    }
}

/// The same on a live server: the "saved" line, the agent's log and every output of
/// `compare --save` and `queue` hide a `?password=` (SKIPPED without PostgreSQL).
#[test]
fn database_secrets_are_hidden_in_saved_lines_and_the_agents_log() {
    let Some(scratch) = common::pg::scratch_db("hostile_secrets") else { return };
    // The test server's password moved from the userinfo into the query.
    let (head, query) =
        scratch.split_once('?').map_or((scratch.as_str(), String::new()), |(h, q)| (h, format!("&{q}")));
    let (scheme, rest) = head.split_once("://").unwrap();
    let (userinfo, server) = rest.split_once('@').unwrap();
    let (user, password) = userinfo.split_once(':').unwrap();
    let url = format!("{scheme}://{user}@{server}?password={password}{query}");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = perflab()
        .args(["compare", "--save", "--db", &url, "-r", "3", "--json"])
        .arg(&json)
        .args(["true", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let saved = stderr.lines().find(|l| l.starts_with("saved ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(saved.contains("password=***") && !saved.contains(&format!("password={password}")), "{saved}");
    assert!(!std::fs::read_to_string(&json).unwrap().contains(&format!("password={password}")));
    let suite = dir.path().join("perflab.toml");
    std::fs::write(&suite, "[[benchmark]]\nname = \"t\"\ncommand = \"true\"\nrounds = 3\n").unwrap();
    let out = perflab().args(["queue", "--db", &url, "--label", "v1", "--suite"]).arg(&suite).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = perflab()
        .args(["agent", "--allow-root", "--db", &url, "--exit-when-idle", "--dir"])
        .arg(dir.path())
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("password=***") && !log.contains(&format!("password={password}")), "{log}");
    common::pg::drop_scratch(&scratch);
}

/// Row "a label or command containing ESC/BEL/OSC": escaped in the "saved" line and in
/// error lines, as every table already does — no raw control byte reaches stderr.
#[test]
fn control_characters_in_labels_and_commands_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let out = perflab()
        .args(["compare", "--save", "-r", "3", "--label", "v\u{1b}]0;owned\u{7}1", "--bench", "b\u{1b}[2J"])
        .arg("--db")
        .arg(&db)
        .args(["true", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("saved `b\\u{1b}[2J` as label `v\\u{1b}]0;owned\\u{7}1`"), "{stderr}");
    assert!(!stderr.contains(['\u{1b}', '\u{7}']), "a raw control character: {stderr:?}");
    let line = refused(perflab().args(["compare", "tru\u{1b}x\u{7}e", "true"]));
    assert!(!line.contains(['\u{1b}', '\u{7}']) && line.contains("tru\\u{1b}x\\u{7}e"), "{line:?}");
}

/// Row "object paths reach the terminal raw in warnings; bidi overrides printed raw":
/// a profile of a program whose path holds ESC, BEL, an OSC sequence and U+202E (right-
/// to-left override), shown after the program is gone, warns that it cannot open it —
/// with every one of them escaped. A label with bidi controls is escaped too.
#[test]
fn object_paths_in_warnings_and_bidi_controls_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("e\u{1b}]0;owned\u{7}\u{202e}dir");
    std::fs::create_dir(&odd).unwrap();
    let program = odd.join("spin");
    std::fs::copy(common::fixture("spin"), &program).unwrap();
    let profile = dir.path().join("p.perflab");
    let out =
        perflab().arg("profile").arg("-o").arg(&profile).arg("--").arg(&program).arg("20000000").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        common::skip::skip(&format!("cannot profile here: {stderr}"));
        return;
    }
    std::fs::remove_file(&program).unwrap();
    let out = perflab().arg("show").arg(&profile).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let raw = ['\u{1b}', '\u{7}', '\u{202e}'];
    assert!(!stderr.contains(raw), "a raw control character: {stderr:?}");
    assert!(
        stderr.contains("warning: cannot open") && stderr.contains("e\\u{1b}]0;owned\\u{7}\\u{202e}dir/spin"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(raw));

    let db = dir.path().join("h.db");
    let out = perflab()
        .args(["compare", "--save", "-r", "3", "--label", "v\u{202e}1\u{2066}", "--bench", "b\u{202d}"])
        .arg("--db")
        .arg(&db)
        .args(["true", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("saved `b\\u{202d}` as label `v\\u{202e}1\\u{2066}`"), "{stderr}");
    let out = perflab().arg("history").arg("--db").arg(&db).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(['\u{202e}', '\u{202d}', '\u{2066}']), "{stdout}");
}

/// Row "error lines quoting a bad value: up to 400 KB on one line": the value is
/// shortened, with its length.
#[test]
fn error_lines_quote_a_long_value_shortened_with_its_length() {
    // One argument can be 128 KiB at most (MAX_ARG_STRLEN).
    let long = "9".repeat(100_000);
    for args in [
        vec!["compare".to_string(), "--threshold".into(), long.clone(), "true".into(), "true".into()],
        vec!["compare".to_string(), format!("{long}-no-such-program"), "true".into()],
        vec!["compare".to_string(), "--metric".into(), format!("{long}x"), "true".into(), "true".into()],
    ] {
        let line = refused(perflab().args(&args));
        assert!(line.len() < 2_500, "{} bytes: {}…", line.len(), &line[..200]);
        assert!(line.contains("characters"), "{line}");
    }
    // A value read from a file: a suite whose benchmark name is 400 KB.
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("perflab.toml");
    let name = "n".repeat(400_000);
    std::fs::write(&suite, format!("[[benchmark]]\nname = \"{name}\"\ncommand = \"true {{x}}\"\n")).unwrap();
    let line = refused(perflab().args(["run", "--list", "--suite"]).arg(&suite));
    assert!(line.len() < 2_500, "{} bytes", line.len());
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Run `script` (sh) in a private mount namespace (root): mounts there vanish with it.
fn in_private_mounts(script: &str) -> std::process::Output {
    std::process::Command::new("unshare").args(["-m", "sh", "-c", script]).env("NO_COLOR", "1").output().unwrap()
}

/// Row "--output-metric on a command printing 1 GiB of matching lines": each run keeps
/// at most 10,000 values but its value is still the mean of every one, with a warning.
/// (Peak memory for 1 GiB is measured by scripts/eval-hostile-inputs.)
#[test]
fn printed_metrics_keep_bounded_samples_and_an_exact_mean() {
    let out = perflab()
        .args(["stat", "-r", "2", "-w", "0", "--json", "-", "--output-metric", "v=(?<v>\\S+)"])
        .arg("seq 1 200000 | sed s/^/v=/")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for run in json["commands"][0]["runs"].as_array().unwrap() {
        let v = &run["counters"]["v"];
        assert_eq!(v["samples"].as_array().unwrap().len(), 10_000, "the first 10,000 are kept");
        assert_eq!(v["samples"][9_999], 10_000.0);
        assert_eq!(v["value"], 100_000.5, "the mean of all 200,000");
    }
    let warned = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["message"].as_str().unwrap().contains("only the first 10000"));
    assert!(warned, "{}", json["warnings"]);
}

/// Row "--fail-if-slower where the gated printed metric is 0 on both sides in every
/// round": nothing was measured, so the gate fails closed with that reason.
#[test]
fn a_gate_on_a_metric_zero_everywhere_fails_closed() {
    let out = perflab()
        .args(["compare", "-r", "6", "-w", "0", "--fail-if-slower", "--metric", "v", "--output-metric", "v=(?<v>\\S+)"])
        .args(["echo v=0", "echo v=0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("it was 0 in every run of both, so nothing was measured"), "{stderr}");
}

/// Row "--rounds 2147483648 --max-time 2s": both limits hold.
#[test]
fn max_time_holds_with_a_huge_round_count() {
    let started = Instant::now();
    let out = perflab()
        .args(["compare", "--rounds", "2147483648", "--max-time", "2s", "--json", "-", "true", "true"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["stop_reason"], "max_time");
    eprintln!("stopped after {:.1} s, {} rounds", started.elapsed().as_secs_f64(), json["rounds"]);
}

/// Row "compare --save --json F on a full store": the comparison is measured to its end,
/// printed and written to F (with a warning that it was not stored); the store's error
/// is the exit line. `run --json` keeps the benchmark measured when the store filled.
#[test]
fn a_full_store_still_gets_the_results_written() {
    if !is_root() || which::which("unshare").is_err() {
        eprintln!("SKIPPED: a full filesystem needs root (a private tmpfs)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("perflab");
    let json = dir.path().join("out.json");
    let run_json = dir.path().join("run.json");
    let suite = dir.path().join("perflab.toml");
    std::fs::write(
        &suite,
        "[[benchmark]]\nname = \"s\"\ncommand = \"true\"\nrounds = 8\n[[benchmark]]\nname = \"t\"\ncommand = \"true\"\nrounds = 8\n",
    )
    .unwrap();
    let script = format!(
        "mount -t tmpfs -o size=300k tmpfs {full} && {bin} compare --save --db {full}/h.db -r 3 true true 2>/dev/null >/dev/null; \
         dd if=/dev/zero of={full}/fill bs=4k 2>/dev/null; \
         {bin} compare --save --db {full}/h.db -r 12 --json {json} true 'true 1' >/dev/null; echo \"compare=$?\" >&2; \
         {bin} run --suite {suite} --label v2 --db {full}/h.db --json {run_json} >/dev/null; echo \"run=$?\" >&2",
        full = full.display(),
        bin = bin.display(),
        json = json.display(),
        suite = suite.display(),
        run_json = run_json.display(),
    );
    let out = in_private_mounts(&script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("compare=2") && stderr.contains("run=2"), "{stderr}");
    assert!(stderr.contains("database or disk is full"), "{stderr}");
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(written["rounds"], 12, "measured to its end");
    assert!(written["warnings"].to_string().contains("not stored in the history"), "{written}");
    let records: serde_json::Value = serde_json::from_slice(&std::fs::read(&run_json).unwrap()).unwrap();
    // A full disk does not stop the suite: every benchmark is measured and written, and
    // the last line says which were not stored.
    assert_eq!(records.as_array().unwrap().len(), 2, "every benchmark measured is written: {records}");
    assert_eq!((&records[0]["experiment"]["rounds"], &records[1]["experiment"]["rounds"]), (&8.into(), &8.into()));
    assert!(stderr.contains("2 of 2 benchmarks measured but not stored in the history (`s`, `t`;"), "{stderr}");
}

/// Row "a read-only store (file 444, directory 555) or an immutable -wal": history,
/// report and export read it (storage.md promises read-only opens).
#[test]
fn read_only_stores_are_read() {
    if !is_root() {
        eprintln!("SKIPPED: needs root (another user for 444/555, chattr for an immutable -wal)");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = store.join("h.db");
    perflab()
        .args(["compare", "--save", "-r", "3", "--label", "v1", "--db"])
        .arg(&db)
        .args(["true", "true"])
        .assert()
        .success();
    let reads = |prefix: &[&str]| {
        for command in [vec!["history"], vec!["export"], vec!["report", "-o", "/dev/null"]] {
            let out = std::process::Command::new(prefix[0])
                .args(&prefix[1..])
                .arg(assert_cmd::cargo::cargo_bin("perflab"))
                .args(&command)
                .arg("--db")
                .arg(&db)
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{command:?}: {stderr}");
            assert!(!stderr.contains("readonly database"), "{stderr}");
        }
    };
    // 444 in 555, read by another user.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
    reads(&["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]);
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    // A -wal left by a writer that died, made immutable.
    let conn = rusqlite_like_writer(&db);
    let wal = store.join("h.db-wal");
    let chattr = std::process::Command::new("chattr").arg("+i").arg(&wal).status();
    if !chattr.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED (immutable -wal): chattr +i is not supported here");
        drop(conn);
        return;
    }
    reads(&["env"]);
    std::process::Command::new("chattr").arg("-i").arg(&wal).status().unwrap();
    drop(conn);
}

/// A writer that leaves the database's -wal behind (it is killed without closing).
fn rusqlite_like_writer(db: &Path) -> std::process::Child {
    // perflab itself, killed in the middle of a comparison, leaves its -wal.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["compare", "--save", "-r", "1000", "--label", "v2", "--db"])
        .arg(db)
        .args(["sleep 0.01", "sleep 0.01"])
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let wal = db.with_file_name("h.db-wal");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::metadata(&wal).is_ok_and(|m| m.len() > 32) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    child
}

/// Row "an agent interrupted (SIGINT) mid-benchmark, then resumed": the benchmark cut
/// short is left incomplete (as after kill -9), the resumed job measures it anew and
/// history reads only the complete one — SQLite and PostgreSQL.
#[test]
fn an_interrupted_agents_benchmark_is_measured_again_on_resume() {
    common::pg::each_backend("hostile_agent_sigint", |dir, db| {
        let suite = dir.join("perflab.toml");
        std::fs::write(&suite, "[[benchmark]]\nname = \"slow\"\ncommand = \"sleep 0.05\"\nrounds = 40\nwarmup = 0\n")
            .unwrap();
        perflab().args(["queue", "--db", db, "--label", "v1", "--suite"]).arg(&suite).assert().success();
        let agent = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
            .args(["agent", "--allow-root", "--db", db, "--exit-when-idle", "--dir"])
            .arg(dir)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Interrupted once some of its 40 rounds are stored (5 rounds take ~0.3 s).
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(agent.id() as i32, libc::SIGINT) };
        let out = agent.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
        let resumed = perflab()
            .args(["agent", "--allow-root", "--db", db, "--exit-when-idle", "--dir"])
            .arg(dir)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&resumed.stderr);
        assert!(resumed.status.success(), "{log}");
        assert!(!log.contains("resuming"), "the cut benchmark is not counted as done: {log}");
        let export = perflab().args(["export", "--db", db]).output().unwrap();
        let export: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
        let experiments = export["experiments"].as_array().unwrap();
        assert_eq!(experiments.len(), 1, "the cut attempt is superseded: {export}");
        assert_eq!(experiments[0]["complete"], true);
        assert_eq!(experiments[0]["experiment"]["rounds"], 40);
    });
}
