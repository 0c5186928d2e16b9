//! Hostile inputs for every reader of outside data (issue #29): seeds from real files
//! (tests/data/hostile), mutators that keep most of a file's structure while lying in
//! its size and count fields, the readers as perflab's commands drive them, and a
//! harness that runs each case in a forked child to count what an in-process test
//! cannot survive: aborts (a failed allocation), time-outs and peak memory.

#![allow(dead_code)]

use perflab::profile::aggregate::{self, By};
use perflab::profile::symbolize::{ObjectInfo, Symbolizer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hostile").join(name)
}

pub fn seed(name: &str) -> Vec<u8> {
    std::fs::read(data(name)).unwrap_or_else(|e| panic!("read seed {name}: {e}"))
}

/// Whether a reader accepted an input (else it refused it with an error).
pub type Accepted = bool;

/// A reader of outside data, as a perflab command uses it: read `path`, then use what
/// was read the way `show`/`import`/`run` would.
pub struct Reader {
    pub name: &'static str,
    pub seeds: Vec<Vec<u8>>,
    pub mutate: fn(&[u8], &mut StdRng) -> Vec<u8>,
    pub read: fn(&Path) -> Accepted,
}

/// Values that break size and count fields.
fn nasty_u64(rng: &mut StdRng, len: usize) -> u64 {
    let len = len as u64;
    match rng.gen_range(0..14) {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => u64::MAX / 2 + 1,
        4 => u32::MAX as u64,
        5 => u16::MAX as u64,
        6 => len,
        7 => len + rng.gen_range(1..64),
        8 => len.saturating_sub(rng.gen_range(1..64)),
        9 => 1 << rng.gen_range(8..63),
        10 => rng.gen_range(0..256),
        11 => (1u64 << 32) + rng.gen_range(0..16),
        12 => i64::MAX as u64,
        _ => rng.gen(),
    }
}

/// Mutate a binary file: overwrite aligned integers (often in the header, where the
/// sizes are) with nasty values, flip bytes, cut, splice and zero ranges.
pub fn mutate_binary(seed: &[u8], rng: &mut StdRng) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..rng.gen_range(1..6) {
        if b.is_empty() {
            break;
        }
        let len = b.len();
        match rng.gen_range(0..10) {
            0..=3 => {
                // An integer field: header (first 256 bytes) half the time.
                let width = [2usize, 4, 8][rng.gen_range(0..3)];
                let span = if rng.gen_bool(0.5) { len.min(256) } else { len };
                if span < width {
                    continue;
                }
                let at = rng.gen_range(0..=(span - width)) / width * width;
                let v = nasty_u64(rng, len).to_le_bytes();
                b[at..at + width].copy_from_slice(&v[..width]);
            }
            4 | 5 => {
                for _ in 0..rng.gen_range(1..8) {
                    let at = rng.gen_range(0..len);
                    b[at] = rng.gen();
                }
            }
            6 => b.truncate(rng.gen_range(0..len)),
            7 => {
                let from = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - from).min(512));
                let chunk = b[from..from + n].to_vec();
                let at = rng.gen_range(0..=len);
                b.splice(at..at, chunk);
            }
            8 => {
                let from = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - from).min(64));
                b[from..from + n].fill(if rng.gen() { 0 } else { 0xff });
            }
            _ => {
                let a = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - a).min(256));
                b.drain(a..a + n);
            }
        }
    }
    b
}

/// Mutate a text file line by line: lines repeated (many times), dropped, cut, joined,
/// with numbers made huge, negative or not numbers, and control characters added.
pub fn mutate_lines(seed: &[u8], rng: &mut StdRng) -> Vec<u8> {
    let text = String::from_utf8_lossy(seed);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..rng.gen_range(1..6) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let i = rng.gen_range(0..lines.len());
        match rng.gen_range(0..9) {
            0 => {
                let copy = lines[i].clone();
                let times = if rng.gen_bool(0.1) { rng.gen_range(100..2000) } else { rng.gen_range(1..4) };
                for _ in 0..times {
                    lines.insert(i, copy.clone());
                }
            }
            1 => {
                lines.remove(i);
            }
            2 => {
                let cut = rng.gen_range(0..=lines[i].len());
                let cut = (0..=cut).rev().find(|&c| lines[i].is_char_boundary(c)).unwrap_or(0);
                lines[i].truncate(cut);
            }
            3 => {
                let numbers = [
                    "ffffffffffffffff",
                    "0",
                    "-1",
                    "18446744073709551616",
                    "1e309",
                    "nan",
                    "9223372036854775807",
                    "7fffffffffffffff",
                    "",
                ];
                let n = numbers[rng.gen_range(0..numbers.len())];
                let words: Vec<&str> = lines[i].split(' ').collect();
                let w = rng.gen_range(0..words.len().max(1));
                lines[i] = words
                    .iter()
                    .enumerate()
                    .map(|(k, word)| if k == w { n } else { word })
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            4 => lines[i].push_str("\u{1b}]0;owned\u{7}\u{1b}[2J\r\0"),
            5 => lines[i] = lines[i].repeat(rng.gen_range(2..200)),
            6 => {
                if i + 1 < lines.len() {
                    let next = lines.remove(i + 1);
                    lines[i].push_str(&next);
                }
            }
            7 => {
                let j = rng.gen_range(0..lines.len());
                lines.swap(i, j);
            }
            _ => lines[i] = lines[i].replace(' ', "\t"),
        }
    }
    let mut out = lines.join("\n").into_bytes();
    if rng.gen_bool(0.5) {
        out.push(b'\n');
    }
    out
}

/// Mutate a JSON document structurally (random bytes rarely get past a JSON parser):
/// a node replaced by an extreme number, hostile text, null, a deep or long array; a
/// node removed or duplicated. A leading header line (a profile's) is kept.
pub fn mutate_json(seed: &[u8], rng: &mut StdRng) -> Vec<u8> {
    let (header, body) = match seed.first() {
        Some(b'{') | Some(b'[') => (&seed[..0], seed),
        _ => {
            let nl = seed.iter().position(|&b| b == b'\n').map_or(0, |p| p + 1);
            (&seed[..nl], &seed[nl..])
        }
    };
    let Ok(mut doc) = serde_json::from_slice::<Value>(body) else { return mutate_binary(seed, rng) };
    for _ in 0..rng.gen_range(1..5) {
        let count = count_nodes(&doc);
        let mut target = rng.gen_range(1..=count.max(1)) as i64;
        let action = rng.gen_range(0..3);
        let value = nasty_json(rng);
        edit_node(&mut doc, &mut target, action, &value);
    }
    let mut out = header.to_vec();
    out.extend(serde_json::to_vec(&doc).unwrap());
    if rng.gen_bool(0.05) {
        // Cut short.
        let cut = rng.gen_range(0..out.len());
        out.truncate(cut);
    }
    out
}

fn nasty_json(rng: &mut StdRng) -> Value {
    match rng.gen_range(0..16) {
        0 => Value::Null,
        1 => serde_json::json!(1.79e308),
        2 => serde_json::json!(-1.0),
        3 => serde_json::json!(0),
        4 => serde_json::json!(u64::MAX),
        5 => serde_json::json!(i64::MIN),
        6 => serde_json::json!(5e-324),
        7 => serde_json::json!("\u{1b}]0;x\u{7}\u{1b}[31m<script>alert(1)</script>\n"),
        8 => serde_json::json!(""),
        9 => serde_json::json!([]),
        10 => serde_json::json!({}),
        11 => serde_json::json!(true),
        12 => Value::Array(vec![serde_json::json!(1); rng.gen_range(0..5000)]),
        13 => serde_json::json!("x".repeat(rng.gen_range(0..100_000))),
        14 => serde_json::json!(rng.gen::<u32>()),
        _ => serde_json::json!(rng.gen::<f64>() * 1e6),
    }
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Replace (0), remove (1) or duplicate (2) the node at pre-order position `target`.
fn edit_node(v: &mut Value, target: &mut i64, action: u32, value: &Value) -> bool {
    let keys: Vec<String> = match v {
        Value::Object(o) => o.keys().cloned().collect(),
        Value::Array(a) => (0..a.len()).map(|i| i.to_string()).collect(),
        _ => return false,
    };
    for key in keys {
        *target -= 1;
        if *target == 0 {
            match v {
                Value::Object(o) => match action {
                    0 => {
                        o.insert(key, value.clone());
                    }
                    1 => {
                        o.remove(&key);
                    }
                    _ => {}
                },
                Value::Array(a) => {
                    let i: usize = key.parse().unwrap();
                    match action {
                        0 => a[i] = value.clone(),
                        1 => {
                            a.remove(i);
                        }
                        _ => {
                            let copy = a[i].clone();
                            a.insert(i, copy);
                        }
                    }
                }
                _ => {}
            }
            return true;
        }
        let child = match v {
            Value::Object(o) => o.get_mut(&key).unwrap(),
            Value::Array(a) => &mut a[key.parse::<usize>().unwrap()],
            _ => return false,
        };
        if edit_node(child, target, action, value) {
            return true;
        }
    }
    false
}

// ---- The readers, as the commands drive them ----

/// `perflab show FILE` on a perf.data file (or a perflab profile): load, symbolize the
/// call graph, the flat report.
pub fn read_profile(path: &Path) -> Accepted {
    let Ok(loaded) = perflab::profile::input::load(path, None) else { return false };
    // One symbolizer for every case (the objects the seeds name are the same files):
    // loading dash's and libc's DWARF anew for each case would dominate the time.
    thread_local! {
        static SYMBOLIZER: std::cell::RefCell<Symbolizer> = std::cell::RefCell::new(Symbolizer::default());
    }
    let (located, graph) = SYMBOLIZER.with(|s| aggregate::locate_with_graph(&loaded.profile, &mut s.borrow_mut()));
    let rows = aggregate::flat(&located, By::Function);
    if let Some(graph) = graph {
        // The table of the shown rows only (the terminal's) and of every row (--json).
        let _ = graph.with_totals(rows.clone(), Some(20));
        let _ = graph.with_totals(rows, None);
        let _ = graph.folded();
    }
    true
}

/// The jitdump reader (a process of a recording mapped `jit-PID.dump`).
pub fn read_jitdump(path: &Path) -> Accepted {
    match perflab::profile::record::jit::read_jitdump(path.to_str().unwrap()) {
        Some(map) => {
            for address in [0u64, 0x1000, u64::MAX, 0x7fff_0000_0000] {
                let _ = map.lookup(address);
            }
            true
        }
        None => false,
    }
}

/// A perf map (`/tmp/perf-PID.map`), read as the recorder reads it.
pub fn read_perf_map(path: &Path) -> Accepted {
    let Ok(bytes) = perflab::files::read_regular(path) else { return false };
    let map = perflab::profile::jitmap::JitMap::parse(&String::from_utf8_lossy(&bytes));
    for address in [0u64, 0x1000, u64::MAX, 0x7fff_0000_0000] {
        let _ = map.lookup(address);
    }
    !map.is_empty()
}

/// `perflab run --suite FILE --list`: parse, then every benchmark's plan for every build.
pub fn read_suite(path: &Path) -> Accepted {
    let Ok(suite) = perflab::suite::load(path) else { return false };
    let run = perflab::suite::runner::RunOptions::default();
    let builds: Vec<Option<&perflab::suite::Build>> =
        std::iter::once(None).chain(suite.builds.iter().map(Some)).collect();
    for bench in &suite.benchmarks {
        for build in &builds {
            let _ = bench.command_for(*build);
            let _ = perflab::suite::runner::plan_for(bench, *build, None, &run);
        }
    }
    true
}

/// `perflab import FILE` into a fresh store.
pub fn read_import(path: &Path) -> Accepted {
    use perflab::store::exchange::{read_import, store_records, ImportOptions};
    let options = ImportOptions { file: path.to_str().unwrap().into(), label: Some("v2".into()), ..Default::default() };
    let Ok(records) = read_import(&options) else { return false };
    let db = path.with_extension("db");
    let _ = std::fs::remove_file(&db);
    let mut store = perflab::store::Store::open(Some(db.to_str().unwrap())).unwrap();
    store_records(&mut store, &records).expect("an accepted import can be stored");
    true
}

/// An object file as the symbolizer reads it (ELF headers, symbols, DWARF lines and
/// inlined frames).
pub fn read_object(path: &Path) -> Accepted {
    let Ok(obj) = ObjectInfo::load(path.to_str().unwrap()) else { return false };
    for offset in [0u64, 0x1000, 0x1040, 0x1100, 0x1200, 0x2000, u64::MAX] {
        if let Some(svma) = obj.svma(offset) {
            let _ = obj.frames(svma);
            let _ = obj.location(svma);
            if let Some(sym) = obj.symbol_at(svma).cloned() {
                let _ = obj.symbol_name(&sym);
                let _ = obj.bytes(sym.start, obj.symbol_len(&sym));
            }
        }
    }
    true
}

/// A suite like the ones users write: builds, parameters, hooks, limits.
pub const SUITE_SEED: &str = r#"[defaults]
warmup = 1
max_time = "30s"
threshold = "2%"

[builds]
old = "./build-old"
new = "./build-new"

[[benchmark]]
name = "sort"
command = "true {build} {n} {algo}"
params = { n = [1, 10, 100], algo = ["quick", "merge"] }
setup = "true"

[[benchmark]]
name = "noop"
command = "true"
rounds = 5
"#;

// ---- The forked harness ----

/// What the cases of one reader did.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub cases: usize,
    pub accepted: usize,
    pub refused: usize,
    pub panics: usize,
    pub aborts: usize,
    pub timeouts: usize,
    pub max_rss_kib: i64,
    pub max_seconds: f64,
    pub seconds: f64,
    /// Files of the failing cases, kept for regression tests.
    pub kept: Vec<PathBuf>,
}

const EXIT_ACCEPTED: i32 = 0;
const EXIT_REFUSED: i32 = 3;
const EXIT_PANICKED: i32 = 101;

/// Run `cases` mutated inputs through `reader`, each in a forked child limited to
/// `memory_limit` bytes of address space (a runaway allocation then fails — an abort —
/// instead of taking the machine) and `timeout`. Failing inputs are copied to `keep`.
///
/// Forking a test process is safe here only because the test runs alone
/// (`--test-threads 1`): no other thread can hold the allocator's lock at the fork.
pub fn run_forked(
    reader: &Reader,
    cases: usize,
    rng_seed: u64,
    timeout: Duration,
    memory_limit: u64,
    keep: &Path,
) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    let ext = match reader.name {
        "perf.data" => "data",
        "profile" => "profile",
        "suite" => "toml",
        "import" => "json",
        _ => "in",
    };
    let input = dir.path().join(format!("case.{ext}"));
    let mut rng = StdRng::seed_from_u64(rng_seed);
    let mut tally = Tally::default();
    let started = Instant::now();
    for case in 0..cases {
        let seed = &reader.seeds[rng.gen_range(0..reader.seeds.len())];
        let bytes = (reader.mutate)(seed, &mut rng);
        std::fs::write(&input, &bytes).unwrap();
        let begun = Instant::now();
        // SAFETY: see the function's comment; the child only reads the file and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            child(reader, &input, memory_limit);
        }
        let (status, rss_kib, timed_out) = wait_for(pid, timeout);
        tally.cases += 1;
        tally.max_rss_kib = tally.max_rss_kib.max(rss_kib);
        tally.max_seconds = tally.max_seconds.max(begun.elapsed().as_secs_f64());
        let failed = if timed_out {
            tally.timeouts += 1;
            Some("timeout")
        } else if libc::WIFSIGNALED(status) {
            tally.aborts += 1;
            Some("abort")
        } else {
            match libc::WEXITSTATUS(status) {
                EXIT_ACCEPTED => {
                    tally.accepted += 1;
                    None
                }
                EXIT_REFUSED => {
                    tally.refused += 1;
                    None
                }
                _ => {
                    tally.panics += 1;
                    Some("panic")
                }
            }
        };
        if let Some(kind) = failed {
            std::fs::create_dir_all(keep).unwrap();
            let kept = keep.join(format!("{}-{kind}-{case}.{ext}", reader.name.replace('.', "_")));
            std::fs::write(&kept, &bytes).unwrap();
            tally.kept.push(kept);
        }
    }
    tally.seconds = started.elapsed().as_secs_f64();
    tally
}

fn child(reader: &Reader, input: &Path, memory_limit: u64) -> ! {
    // SAFETY: plain system calls in the single-threaded child.
    unsafe {
        let limit = libc::rlimit { rlim_cur: memory_limit, rlim_max: memory_limit };
        libc::setrlimit(libc::RLIMIT_AS, &limit);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        libc::dup2(null, 2);
    }
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (reader.read)(input)));
    let code = match outcome {
        Ok(true) => EXIT_ACCEPTED,
        Ok(false) => EXIT_REFUSED,
        Err(_) => EXIT_PANICKED,
    };
    // SAFETY: leaving the child without running the parent's exit handlers.
    unsafe { libc::_exit(code) }
}

/// Wait for `pid` up to `timeout` (then kill it): (status, peak RSS in KiB, timed out).
fn wait_for(pid: libc::pid_t, timeout: Duration) -> (i32, i64, bool) {
    let deadline = Instant::now() + timeout;
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut timed_out = false;
    let mut pause = Duration::from_micros(50);
    loop {
        // SAFETY: waiting for our own child.
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if done == pid {
            break;
        }
        if Instant::now() >= deadline && !timed_out {
            timed_out = true;
            // SAFETY: killing our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
    (status, usage.ru_maxrss, timed_out)
}

// ---- perf.data layout, for corrupting one field on purpose ----

/// Where the fields of a (little-endian) perf.data file are.
pub struct PerfLayout {
    pub data_offset: u64,
    pub data_size: u64,
    /// (feature bit, where its (offset, size) entry is, its offset, its size).
    pub features: Vec<(u32, usize, u64, u64)>,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl PerfLayout {
    pub fn of(b: &[u8]) -> PerfLayout {
        assert_eq!(&b[..8], b"PERFILE2");
        let (data_offset, data_size) = (u64_at(b, 40), u64_at(b, 48));
        let mut features = Vec::new();
        let mut entry = (data_offset + data_size) as usize;
        for bit in 0..256u32 {
            if u64_at(b, 72 + 8 * (bit as usize / 64)) >> (bit % 64) & 1 == 1 {
                features.push((bit, entry, u64_at(b, entry), u64_at(b, entry + 8)));
                entry += 16;
            }
        }
        PerfLayout { data_offset, data_size, features }
    }

    pub fn feature(&self, bit: u32) -> (usize, u64, u64) {
        let f = self.features.iter().find(|f| f.0 == bit).unwrap_or_else(|| panic!("the seed has feature {bit}"));
        (f.1, f.2, f.3)
    }
}

pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
