//! Instruction mode: each run executes under valgrind cachegrind with cache and branch
//! simulation at fixed cache sizes, so its counts do not depend on the host; the
//! per-run output files are parsed into counters and deleted.

use super::error::ProbeError;
use super::Probe;
use anyhow::Context;
use perflab_model::{CounterReading, Run};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Simulated caches (size in bytes, associativity, line size), fixed so that results do
/// not depend on the host's caches: I1/D1 32 KiB 8-way, LL 8 MiB 16-way, 64-byte lines
/// (the values CodSpeed uses).
pub(crate) const CACHE_OPTIONS: [&str; 3] = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"];

/// Metrics compared in instruction mode, the first being the primary (stopping) metric.
pub const COMPARED: [&str; 5] = ["instructions", "estimated_cycles", "branch_mispredicts", "d1_misses", "ll_misses"];

/// Raw cachegrind events and the metric names they are reported under.
pub(crate) const RAW_EVENTS: [(&str, &str); 13] = [
    ("Ir", "instructions"),
    ("Dr", "data_reads"),
    ("Dw", "data_writes"),
    ("I1mr", "i1_misses"),
    ("D1mr", "d1_read_misses"),
    ("D1mw", "d1_write_misses"),
    ("ILmr", "ll_instruction_misses"),
    ("DLmr", "ll_read_misses"),
    ("DLmw", "ll_write_misses"),
    ("Bc", "conditional_branches"),
    ("Bcm", "conditional_mispredicts"),
    ("Bi", "indirect_branches"),
    ("Bim", "indirect_mispredicts"),
];

/// Cycle weights of the estimate: an L1 hit, an LL hit, a RAM access (iai's and
/// Gungraun's), and a mispredicted branch: the pipeline refill of current x86 cores,
/// ~15–20 cycles (Agner Fog's microarchitecture manual: Skylake 15–20, Zen 2 ~18);
/// the lower end, as the estimate's other weights are.
pub(crate) const CYCLES_L1: u64 = 1;
pub(crate) const CYCLES_LL: u64 = 5;
pub(crate) const CYCLES_RAM: u64 = 35;
pub(crate) const CYCLES_MISPREDICT: u64 = 15;

const OUT_PREFIX: &str = "cachegrind.out.";
const LOG_PREFIX: &str = "valgrind.log.";

pub(crate) const INSTALL_HINT: &str = "install it with `apt-get install valgrind`";

/// Where valgrind is, or the one-line usage error (exit 2) with the install hint.
pub(crate) fn find_valgrind() -> Result<PathBuf, ProbeError> {
    which::which("valgrind").map_err(|source| ProbeError::NoValgrind { hint: INSTALL_HINT, source })
}

/// A private directory for one command's cachegrind output files, removed on drop.
struct OutputDir(PathBuf);

impl OutputDir {
    fn create() -> anyhow::Result<Self> {
        let base = std::env::temp_dir();
        for _ in 0..100 {
            let dir = base.join(format!("perflab-cachegrind-{:016x}", rand::random::<u64>()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(OutputDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
            }
        }
        anyhow::bail!("could not create a temporary directory in {}", base.display())
    }

    /// The output files present now (one per counted process).
    fn files(&self) -> anyhow::Result<Vec<PathBuf>> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&self.0).with_context(|| format!("reading {}", self.0.display()))? {
            files.push(entry?.path());
        }
        files.sort();
        Ok(files)
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The instruction-mode probe for one command's runs.
pub(crate) struct CachegrindProbe {
    valgrind: PathBuf,
    out: OutputDir,
    /// Also keep each run's per-function counts (`--explain`).
    per_function: bool,
}

impl CachegrindProbe {
    pub fn new() -> Result<Self, ProbeError> {
        let valgrind = find_valgrind()?;
        Ok(CachegrindProbe { valgrind, out: OutputDir::create().map_err(ProbeError::OutputDir)?, per_function: false })
    }

    /// Keep each run's per-function counts in its profile (`--explain`).
    pub(crate) fn per_function(self, per_function: bool) -> Self {
        CachegrindProbe { per_function, ..self }
    }
}

/// The valgrind command line that runs `argv` under cachegrind, writing one output file
/// per process (`%p`) into `out_dir`.
pub(crate) fn valgrind_argv(valgrind: &Path, out_dir: &Path, argv: Vec<String>) -> Vec<String> {
    let mut full = vec![
        valgrind.display().to_string(),
        // Quiet keeps the command's own stderr (shown when it fails) free of banners.
        "-q".to_string(),
        "--tool=cachegrind".to_string(),
        // Explicit: 3.19 simulates caches by default, 3.21 and later do not.
        "--cache-sim=yes".to_string(),
        "--branch-sim=yes".to_string(),
    ];
    full.extend(CACHE_OPTIONS.iter().map(|s| s.to_string()));
    full.push("--trace-children=yes".to_string());
    full.push(format!("--cachegrind-out-file={}/{OUT_PREFIX}%p", out_dir.display()));
    // Valgrind's own messages (3.19 warns about the host's L3 even when --LL is given)
    // go to a log, so the command's stderr stays the program's; collect() reports them
    // when valgrind produced no counts.
    full.push(format!("--log-file={}/{LOG_PREFIX}%p", out_dir.display()));
    // No --error-exitcode: cachegrind reports no errors, so valgrind exits with the
    // program's own code (and re-raises a fatal signal), which the spawner reports.
    full.push("--".to_string());
    full.extend(argv);
    full
}

impl Probe for CachegrindProbe {
    fn wrap(&self, argv: Vec<String>) -> anyhow::Result<Vec<String>> {
        // valgrind would only report a missing program as a failing run: check it first.
        let program = argv.first().context("empty command")?;
        perflab_sys::command::resolve_program(program)?;
        Ok(valgrind_argv(&self.valgrind, &self.out.0, argv))
    }

    fn collect(&mut self, run: &mut Run) -> anyhow::Result<()> {
        let mut totals: BTreeMap<String, u64> = BTreeMap::new();
        let mut functions = PerFunction::default();
        let mut parse_error = None;
        let mut valgrind_messages = Vec::new();
        for file in self.out.files()? {
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()));
            // Delete as we go so the next run starts from an empty directory.
            let _ = std::fs::remove_file(&file);
            let is_log = file.file_name().is_some_and(|n| n.to_string_lossy().starts_with(LOG_PREFIX));
            match text {
                Ok(text) if is_log => valgrind_messages
                    .extend(text.lines().filter(|l| !l.contains("warning:")).map(|l| l.trim().to_string())),
                Ok(text) => match parse_output(&text) {
                    Ok(events) => {
                        for (event, count) in events {
                            *totals.entry(event).or_default() += count;
                        }
                        if self.per_function {
                            match parse_per_function(&text) {
                                Ok(more) => functions.merge(more),
                                Err(err) => parse_error = Some(err.context(format!("parsing {}", file.display()))),
                            }
                        }
                    }
                    Err(err) => parse_error = Some(err.context(format!("parsing {}", file.display()))),
                },
                Err(err) => parse_error = Some(err),
            }
        }
        if let Some(err) = parse_error {
            return Err(err);
        }
        if totals.is_empty() {
            let said = valgrind_messages.iter().rev().find(|l| !l.is_empty()).cloned().unwrap_or_default();
            if run.exit.success() {
                anyhow::bail!("valgrind wrote no cachegrind output: {said}");
            }
            let reason = format!("no cachegrind output: the run {}", run.exit.describe());
            for name in COMPARED.iter().chain(RAW_EVENTS.iter().map(|(_, m)| m)) {
                run.counters.insert(name.to_string(), CounterReading::unsupported(reason.clone()));
            }
            return Ok(());
        }
        run.counters.extend(metrics(&totals));
        if self.per_function {
            run.profile = Some(Box::new(run_profile(&functions)));
        }
        Ok(())
    }
}

/// Parse a cachegrind output file's `events:` and `summary:` lines into totals.
pub(crate) fn parse_output(text: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut events: Option<Vec<&str>> = None;
    let mut summary: Option<Vec<&str>> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("events:") {
            events = Some(rest.split_whitespace().collect());
        } else if let Some(rest) = line.strip_prefix("summary:") {
            summary = Some(rest.split_whitespace().collect());
        }
    }
    let events = events.context("no `events:` line")?;
    let summary = summary.context("no `summary:` line")?;
    if events.len() != summary.len() {
        anyhow::bail!("{} events but {} summary values", events.len(), summary.len());
    }
    events
        .iter()
        .zip(&summary)
        .map(|(event, value)| {
            let count = value.parse::<u64>().with_context(|| format!("`{value}` is not a count of {event}"))?;
            Ok((event.to_string(), count))
        })
        .collect()
}

/// Per-function and per-line counts of a cachegrind output file: the `fl=` (source file)
/// and `fn=` lines name the counts that follow, one line per source line
/// (`LINE COUNT…`, trailing zero counts left out).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PerFunction {
    /// (function, source file basename) → event → count.
    pub functions: BTreeMap<(String, String), BTreeMap<String, u64>>,
    /// (`file:line`, function) → event → count.
    pub lines: BTreeMap<(String, String), BTreeMap<String, u64>>,
}

impl PerFunction {
    /// Add another process's counts (a run with children writes one file per process).
    pub fn merge(&mut self, other: PerFunction) {
        for (mine, theirs) in [(&mut self.functions, other.functions), (&mut self.lines, other.lines)] {
            for (key, events) in theirs {
                let entry = mine.entry(key).or_default();
                for (event, count) in events {
                    *entry.entry(event).or_default() += count;
                }
            }
        }
    }
}

/// Parse the per-function and per-line counts of a cachegrind output file.
pub(crate) fn parse_per_function(text: &str) -> anyhow::Result<PerFunction> {
    let mut events: Vec<String> = Vec::new();
    let mut file = String::from("???");
    let mut function: Option<String> = None;
    let mut out = PerFunction::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("events:") {
            events = rest.split_whitespace().map(String::from).collect();
        } else if let Some(rest) = line.strip_prefix("fl=") {
            file = rest.trim().to_string();
        } else if let Some(rest) = line.strip_prefix("fn=") {
            function = Some(perflab_profile::symbolize::normalize(&perflab_profile::symbolize::demangle(rest.trim())));
        } else if line.starts_with(|c: char| c.is_ascii_digit()) {
            let Some(function) = &function else { anyhow::bail!("counts before any `fn=` line: {line}") };
            let mut fields = line.split_whitespace();
            let number = fields.next().unwrap_or_default();
            let base = perflab_profile::symbolize::basename(&file).to_string();
            let per_function = out.functions.entry((function.clone(), base.clone())).or_default();
            let per_line = out.lines.entry((format!("{base}:{number}"), function.clone())).or_default();
            for (event, value) in events.iter().zip(fields) {
                let count = value.parse::<u64>().with_context(|| format!("`{value}` is not a count of {event}"))?;
                *per_function.entry(event.clone()).or_default() += count;
                *per_line.entry(event.clone()).or_default() += count;
            }
        }
    }
    if events.is_empty() {
        anyhow::bail!("no `events:` line");
    }
    Ok(out)
}

/// A run's per-function counts as the explanation reads them: instructions as the
/// "period", branch mispredictions and cache misses beside them.
pub(crate) fn run_profile(per_function: &PerFunction) -> perflab_model::RunProfile {
    let mut profile =
        perflab_model::RunProfile { event: "instructions".into(), exact: true, ..perflab_model::RunProfile::default() };
    for (key, events) in &per_function.functions {
        let metrics = metrics(events);
        let value = |name: &str| metrics.get(name).and_then(|c| c.value).unwrap_or(0.0) as u64;
        let instructions = value("instructions");
        profile.samples += instructions;
        profile.period += instructions;
        profile.functions.insert(key.clone(), (instructions, instructions));
        for name in ["branch_mispredicts", "d1_misses", "ll_misses", "estimated_cycles"] {
            profile.counts.entry(name.to_string()).or_default().insert(key.clone(), value(name));
        }
    }
    profile
}

/// Estimated cycles from cachegrind's totals: the memory part is the formula iai and
/// Gungraun use — RAM = ILmr + DLmr + DLmw; LL hits = I1mr + D1mr + D1mw − RAM;
/// L1 hits = Ir + Dr + Dw − (I1mr + D1mr + D1mw); L1 + 5·LL + 35·RAM — plus 15 cycles
/// per mispredicted branch (Bcm + Bim) of cachegrind's branch simulation, without which
/// a change of dispatch (switch vs threaded code) reads as its extra instructions and
/// nothing of the mispredictions it saves. None without the cache events or the branch
/// simulation (an estimate never silently leaves a term out).
pub fn estimated_cycles(totals: &BTreeMap<String, u64>) -> Option<u64> {
    let get = |name: &str| totals.get(name).copied();
    let ram = get("ILmr")? + get("DLmr")? + get("DLmw")?;
    let l1_misses = get("I1mr")? + get("D1mr")? + get("D1mw")?;
    let accesses = get("Ir")? + get("Dr")? + get("Dw")?;
    let mispredicts = get("Bcm")? + get("Bim")?;
    let ll_hits = l1_misses.saturating_sub(ram);
    let l1_hits = accesses.saturating_sub(l1_misses);
    Some(CYCLES_L1 * l1_hits + CYCLES_LL * ll_hits + CYCLES_RAM * ram + CYCLES_MISPREDICT * mispredicts)
}

/// The instruction-mode counters of one run from cachegrind's totals.
pub fn metrics(totals: &BTreeMap<String, u64>) -> BTreeMap<String, CounterReading> {
    let sum = |events: &[&str]| -> Option<u64> { events.iter().map(|e| totals.get(*e).copied()).sum() };
    let reading = |value: Option<u64>, needs: &str| match value {
        Some(v) => CounterReading::value(v as f64, false),
        None => CounterReading::unsupported(format!("cachegrind did not report {needs}")),
    };
    let mut out = BTreeMap::new();
    for (event, name) in RAW_EVENTS {
        out.insert(name.to_string(), reading(totals.get(event).copied(), event));
    }
    out.insert(
        "estimated_cycles".into(),
        reading(estimated_cycles(totals), "the cache events and the branch simulation (Bcm, Bim)"),
    );
    out.insert("branch_mispredicts".into(), reading(sum(&["Bcm", "Bim"]), "Bcm and Bim"));
    out.insert("d1_misses".into(), reading(sum(&["D1mr", "D1mw"]), "D1mr and D1mw"));
    out.insert("ll_misses".into(), reading(sum(&["ILmr", "DLmr", "DLmw"]), "ILmr, DLmr and DLmw"));
    out
}

/// Facts that can shift instruction counts of `argv0` under valgrind: valgrind's
/// version, the simulated caches, the glibc version, hwcaps level and string-function
/// preferences glibc selects on valgrind's synthetic CPU, GLIBC_TUNABLES, and the
/// binary's SHA-256. Facts that cannot be determined are left out.
pub(crate) fn environment_facts(argv0: &Path) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    facts.insert("cachegrind_caches".into(), CACHE_OPTIONS.map(|o| o.trim_start_matches("--")).join(" "));
    if let Ok(tunables) = std::env::var("GLIBC_TUNABLES") {
        facts.insert("glibc_tunables".into(), tunables);
    }
    if let Ok(hash) = sha256_file(argv0) {
        facts.insert("binary_sha256".into(), hash);
    }
    let Ok(valgrind) = find_valgrind() else { return facts };
    if let Some(version) = output_of(Command::new(&valgrind).arg("--version")) {
        facts.insert("valgrind_version".into(), version.trim().trim_start_matches("valgrind-").to_string());
    }
    // A static binary carries its glibc inside; the system's loader (perflab's own) then
    // tells what that glibc version would select, which is the best available guess.
    let loader = match interpreter(argv0) {
        Some(loader) => Some(loader),
        None => {
            facts.insert("binary_linking".into(), "static (glibc facts are the system glibc's)".into());
            std::env::current_exe().ok().and_then(|exe| interpreter(&exe))
        }
    };
    if let Some(loader) = loader {
        // Ask the dynamic loader, under valgrind, which glibc it is and what it selects on
        // valgrind's synthetic CPU (glibc >= 2.33).
        let diagnostics =
            output_of(Command::new(&valgrind).args(["-q", "--tool=none"]).arg(&loader).arg("--list-diagnostics"));
        if let Some(text) = diagnostics {
            facts.extend(glibc_facts(&text));
        }
    }
    facts
}

/// glibc_version, glibc_hwcaps (the highest active glibc-hwcaps subdirectory) and
/// glibc_cpu_preferred (the tuning flags that pick memcpy & co.) from
/// `ld.so --list-diagnostics`.
pub(crate) fn glibc_facts(diagnostics: &str) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    let mut subdirs: Vec<String> = Vec::new();
    let mut active: Option<u64> = None;
    let mut preferred: Vec<&str> = Vec::new();
    for line in diagnostics.lines() {
        let Some((key, value)) = line.split_once('=') else { continue };
        let unquoted = value.trim_matches('"');
        match key {
            "version.version" => {
                facts.insert("glibc_version".to_string(), unquoted.to_string());
            }
            "dl_hwcaps_subdirs" => subdirs = unquoted.split(':').map(String::from).collect(),
            "dl_hwcaps_subdirs_active" => active = u64::from_str_radix(value.trim_start_matches("0x"), 16).ok(),
            _ => {
                if let Some(flag) = key.strip_prefix("x86.cpu_features.preferred.") {
                    if value != "0x0" {
                        preferred.push(flag);
                    }
                }
            }
        }
    }
    if let Some(mask) = active {
        // Bit i marks subdirs[i] as usable; subdirs are listed best first.
        let level = subdirs.iter().enumerate().find(|(i, _)| *i < 64 && mask & (1 << i) != 0).map(|(_, s)| s.clone());
        facts.insert("glibc_hwcaps".to_string(), level.unwrap_or_else(|| "baseline".to_string()));
    }
    if !preferred.is_empty() {
        facts.insert("glibc_cpu_preferred".to_string(), preferred.join(","));
    }
    facts
}

fn output_of(command: &mut Command) -> Option<String> {
    let out = command.stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The ELF program interpreter (dynamic loader) of a binary, if it has one.
fn interpreter(binary: &Path) -> Option<PathBuf> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let data = perflab_sys::files::read_regular(binary).ok()?;
    let elf = ElfFile64::<object::Endianness>::parse(&*data).ok()?;
    let endian = elf.endian();
    elf.elf_program_headers().iter().find_map(|header| {
        let bytes = header.interpreter(endian, &*data).ok()??;
        let text = std::str::from_utf8(bytes).ok()?;
        Some(PathBuf::from(text.trim_end_matches('\0')))
    })
}

fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = perflab_sys::files::open_regular(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "desc: I1 cache:         32768 B, 64 B, 8-way associative\n\
        cmd: ./spin 100\n\
        events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim \n\
        fl=spin.c\nfn=main\n12 3 0 0 1 0 0 0 0 0 1 0 0 0\n\
        summary: 1000 10 4 300 20 6 100 5 2 150 12 8 3\n";

    fn totals() -> BTreeMap<String, u64> {
        parse_output(SAMPLE).unwrap()
    }

    #[test]
    fn parses_events_and_summary() {
        let t = totals();
        assert_eq!(t.len(), 13);
        assert_eq!((t["Ir"], t["Dw"], t["Bim"]), (1000, 100, 3));
    }

    #[test]
    fn per_function_counts_follow_fl_and_fn_lines() {
        let text = "events: Ir Bc Bcm Bi Bim\nfl=/src/a.c\nfn=main\n3 10 2 1 0 0\n4 5\nfn=helper\n9 7 1\n\
            fl=/src/b.c\nfn=helper\n1 100 0 0\nsummary: 122 3 1 0 0\n";
        let p = parse_per_function(text).unwrap();
        let main = &p.functions[&("main".to_string(), "a.c".to_string())];
        assert_eq!((main["Ir"], main["Bc"], main["Bcm"]), (15, 2, 1));
        assert_eq!(p.functions[&("helper".to_string(), "b.c".to_string())]["Ir"], 100);
        assert_eq!(p.lines[&("a.c:4".to_string(), "main".to_string())]["Ir"], 5);
        let total: u64 = p.functions.values().map(|e| e["Ir"]).sum();
        assert_eq!(total, 122, "the functions add up to the summary");
        let profile = run_profile(&p);
        assert_eq!((profile.period, profile.exact), (122, true));
        assert_eq!(profile.counts["branch_mispredicts"][&("main".to_string(), "a.c".to_string())], 1);
        assert!(parse_per_function("fn=x\n1 2\n").is_err());
    }

    #[test]
    fn rejects_malformed_output() {
        assert!(parse_output("events: Ir Dr\nsummary: 1\n").is_err());
        assert!(parse_output("events: Ir\n").is_err());
        assert!(parse_output("events: Ir\nsummary: x\n").is_err());
    }

    #[test]
    fn estimated_cycles_follow_the_documented_formula() {
        // RAM = 4 + 6 + 2 = 12; L1 misses = 10 + 20 + 5 = 35; LL hits = 23;
        // L1 hits = 1400 − 35 = 1365; mispredicts = 12 + 3 = 15;
        // cycles = 1365 + 5·23 + 35·12 + 15·15 = 2125.
        assert_eq!(estimated_cycles(&totals()), Some(2125));
    }

    #[test]
    fn metrics_use_the_documented_names() {
        let m = metrics(&totals());
        let value = |name: &str| m[name].value.unwrap();
        assert_eq!(value("instructions"), 1000.0);
        assert_eq!(value("estimated_cycles"), 2125.0);
        assert_eq!(value("branch_mispredicts"), 15.0);
        assert_eq!(value("d1_misses"), 25.0);
        assert_eq!(value("ll_misses"), 12.0);
        assert_eq!(value("data_reads"), 300.0);
        assert_eq!(value("indirect_mispredicts"), 3.0);
        assert!(m.values().all(|c| c.supported && !c.scaled));
    }

    #[test]
    fn missing_branch_simulation_makes_branch_metrics_unsupported() {
        let t = parse_output("events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\nsummary: 1 0 0 0 0 0 0 0 0\n").unwrap();
        let m = metrics(&t);
        assert!(!m["branch_mispredicts"].supported && m["branch_mispredicts"].value.is_none());
        let estimate = &m["estimated_cycles"];
        assert!(
            !estimate.supported && estimate.reason.as_deref().unwrap().contains("branch simulation"),
            "{estimate:?}"
        );
        assert!(m["instructions"].supported);
    }

    #[test]
    fn wraps_with_fixed_caches_and_per_process_output() {
        let argv =
            valgrind_argv(Path::new("/usr/bin/valgrind"), Path::new("/tmp/d"), vec!["./spin".into(), "5".into()]);
        assert_eq!(argv[0], "/usr/bin/valgrind");
        for option in CACHE_OPTIONS.iter().chain(&["--cache-sim=yes", "--branch-sim=yes", "--trace-children=yes"]) {
            assert!(argv.iter().any(|a| a == option), "{option} missing from {argv:?}");
        }
        assert!(argv.contains(&"--cachegrind-out-file=/tmp/d/cachegrind.out.%p".to_string()));
        assert!(!argv.iter().any(|a| a.starts_with("--error-exitcode")));
        assert_eq!(&argv[argv.len() - 3..], ["--", "./spin", "5"]);
    }

    #[test]
    fn glibc_facts_pick_the_best_active_hwcaps_level() {
        let text = "dl_hwcaps_subdirs=\"x86-64-v4:x86-64-v3:x86-64-v2\"\ndl_hwcaps_subdirs_active=0x6\n\
            version.version=\"2.36\"\nx86.cpu_features.preferred.Fast_Rep_String=0x1\n\
            x86.cpu_features.preferred.Slow_BSF=0x0\n";
        let facts = glibc_facts(text);
        assert_eq!(facts["glibc_version"], "2.36");
        assert_eq!(facts["glibc_hwcaps"], "x86-64-v3");
        assert_eq!(facts["glibc_cpu_preferred"], "Fast_Rep_String");
        assert_eq!(
            glibc_facts("dl_hwcaps_subdirs=\"a:b\"\ndl_hwcaps_subdirs_active=0x0\n")["glibc_hwcaps"],
            "baseline"
        );
    }

    #[test]
    fn environment_facts_hash_the_binary() {
        let facts = environment_facts(Path::new("/bin/true"));
        assert_eq!(facts["binary_sha256"].len(), 64);
        assert!(facts["cachegrind_caches"].contains("LL=8388608,16,64"));
    }

    /// Runs a real program under cachegrind when valgrind is installed; on CI a missing
    /// valgrind is a failure, not a silent pass.
    #[test]
    fn real_cachegrind_run_counts_instructions() {
        let Ok(mut probe) = CachegrindProbe::new() else {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "valgrind is required on CI");
            return;
        };
        let missing = probe.wrap(vec!["/nonexistent/program".into()]).unwrap_err().to_string();
        assert!(missing.contains("does not exist"), "{missing}");
        let argv = probe.wrap(vec!["/bin/true".into()]).unwrap();
        let status = Command::new(&argv[0]).args(&argv[1..]).status().unwrap();
        assert!(status.success());
        let mut run =
            Run { exit: perflab_model::ExitInfo { exit_code: Some(0), ..Default::default() }, ..Default::default() };
        probe.collect(&mut run).unwrap();
        assert!(run.counters["instructions"].value.is_some_and(|v| v > 1000.0));
        assert!(probe.out.files().unwrap().is_empty(), "output files must be deleted");
        let facts = environment_facts(Path::new("/bin/true"));
        assert!(facts.contains_key("valgrind_version") && facts.contains_key("glibc_version"), "{facts:?}");
    }
}
