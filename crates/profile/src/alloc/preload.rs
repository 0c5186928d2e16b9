//! Allocation profiles of a launched command by the in-process recorder
//! (`preload/perflab_alloc.c`, built by this crate's build script and embedded here): the
//! library is written to a private directory, LD_PRELOADed into the command (and so into
//! every process it starts, across exec), and each process image writes its totals there
//! when it exits; they become an ordinary allocation [`Profile`].
//!
//! Chosen over the uprobes of [`super::AllocProbes`] for commands perflab launches by the
//! figures in docs/profiling.md: on 200,000 malloc/free pairs the uprobes took 13–15 s
//! and lost records, heaptrack 0.5–0.7 s, this recorder about as long as heaptrack.
//! Uprobes stay for running processes (`-p`), static programs (no dynamic loader to
//! preload into) and custom allocators (`--alloc-fn`).

use crate::allocations::{AllocFunction, AllocSummary};
use crate::format::{Profile, RecordTarget};
use crate::record::converter::Converter;
use crate::record::records::{Record, PERF_CONTEXT_USER};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The recorder as built for this target (empty when no C compiler was found).
const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libperflab_alloc.so"));

/// Why the recorder cannot be used for `program`, or None when it can.
pub fn unusable_for(program: &Path) -> Option<String> {
    if cfg!(perflab_no_preload) || LIBRARY.is_empty() {
        return Some("this perflab was built without a C compiler, so without its in-process recorder".into());
    }
    match std::fs::read(program) {
        Ok(data) if !dynamically_linked(&data) => {
            Some(format!("{} is statically linked: no dynamic loader to load the recorder into", program.display()))
        }
        Ok(_) => None,
        Err(e) => Some(format!("{}: {e}", program.display())),
    }
}

/// An ELF program with a PT_INTERP header is started by the dynamic loader, which honours
/// LD_PRELOAD; a script (`#!`) is too, through its interpreter.
fn dynamically_linked(data: &[u8]) -> bool {
    use object::read::elf::{ElfFile64, ProgramHeader};
    if data.starts_with(b"#!") {
        return true;
    }
    let Ok(elf) = ElfFile64::<object::Endianness>::parse(data) else { return false };
    let endian = elf.endian();
    elf.elf_program_headers().iter().any(|ph| ph.p_type(endian) == object::elf::PT_INTERP)
}

/// A private directory holding the recorder and the processes' dumps; removed on drop.
pub struct Recorder {
    dir: PathBuf,
    library: PathBuf,
    sample_bytes: Option<u64>,
}

impl Recorder {
    /// Write the recorder into a new private directory (mode 0700 under the temporary
    /// directory: no other user can replace the library the command will load).
    pub fn new(sample_bytes: Option<u64>) -> std::io::Result<Recorder> {
        let template = std::env::temp_dir().join("perflab-alloc-XXXXXX");
        let mut bytes = template.as_os_str().as_bytes().to_vec();
        bytes.push(0);
        // SAFETY: a NUL-terminated, writable template, as mkdtemp requires.
        let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if made.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        bytes.pop();
        let dir = PathBuf::from(std::ffi::OsStr::from_bytes(&bytes));
        let library = dir.join("libperflab_alloc.so");
        std::fs::write(&library, LIBRARY)?;
        Ok(Recorder { dir, library, sample_bytes })
    }

    /// The variables the command needs: the recorder preloaded before any the user
    /// preloads, where to write, and how to sample.
    pub fn variables(&self) -> Vec<(String, std::ffi::OsString)> {
        let mut preload = self.library.as_os_str().to_os_string();
        if let Some(theirs) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            preload.push(" ");
            preload.push(theirs);
        }
        vec![
            ("LD_PRELOAD".into(), preload),
            ("PERFLAB_ALLOC_DIR".into(), self.dir.as_os_str().to_os_string()),
            ("PERFLAB_ALLOC_SAMPLE_BYTES".into(), self.sample_bytes.unwrap_or(0).to_string().into()),
        ]
    }

    /// The allocation profile of every process image that wrote its dump.
    pub fn profile(&self, argv: &[String]) -> Profile {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("alloc.") && !n.ends_with(".tmp"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        // alloc.PID.NANOS: in the order the images ended (an exec'd image after its parent image).
        names.sort_by_key(|p| p.extension().and_then(|e| e.to_str()).and_then(|e| e.parse::<u128>().ok()));
        let dumps: Vec<Dump> = names.iter().filter_map(|p| Dump::parse(&std::fs::read_to_string(p).ok()?)).collect();
        build(&dumps, argv, self.sample_bytes, names.len() - dumps.len())
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One process image's recording, as its dump states it.
#[derive(Debug, Default, PartialEq)]
struct Dump {
    pid: u32,
    functions: Vec<(String, u64, u64)>,
    frees: u64,
    freed_bytes: u64,
    unmatched_frees: u64,
    sites: Vec<Site>,
    maps: Vec<(u64, u64, u64, String)>,
}

#[derive(Debug, Default, PartialEq)]
struct Site {
    function: String,
    calls: f64,
    bytes: f64,
    live_blocks: f64,
    live_bytes: f64,
    bytes_variance: f64,
    /// Return addresses, the call site first.
    frames: Vec<u64>,
}

impl Dump {
    /// The dump's records; None when it is not one or was cut short (no `end`).
    fn parse(text: &str) -> Option<Dump> {
        let mut lines = text.lines();
        if lines.next()? != "perflab-alloc 1" || !text.ends_with("end\n") {
            return None;
        }
        let mut dump = Dump::default();
        let hex = |w: &str| u64::from_str_radix(w, 16).ok();
        for line in lines {
            let mut words = line.split(' ');
            match words.next()? {
                "pid" => dump.pid = words.next()?.parse().ok()?,
                "function" => {
                    let name = words.next()?.to_string();
                    dump.functions.push((name, words.next()?.parse().ok()?, words.next()?.parse().ok()?));
                }
                "frees" => {
                    dump.frees = words.next()?.parse().ok()?;
                    dump.freed_bytes = words.next()?.parse().ok()?;
                    dump.unmatched_frees = words.next()?.parse().ok()?;
                }
                "site" => {
                    let function = words.next()?.to_string();
                    let mut number = || words.next()?.parse::<f64>().ok().filter(|v| v.is_finite());
                    let (calls, bytes, live_blocks, live_bytes, bytes_variance) =
                        (number()?, number()?, number()?, number()?, number()?);
                    let frames = words.map(hex).collect::<Option<Vec<u64>>>()?;
                    dump.sites.push(Site { function, calls, bytes, live_blocks, live_bytes, bytes_variance, frames });
                }
                "map" => {
                    let (start, end, offset) = (hex(words.next()?)?, hex(words.next()?)?, hex(words.next()?)?);
                    // The path is the rest of the line (it may hold spaces).
                    let path = line.splitn(5, ' ').nth(4)?.to_string();
                    dump.maps.push((start, end.checked_sub(start)?, offset, path));
                }
                _ => {}
            }
        }
        Some(dump)
    }
}

/// The name of a dump's program: the file mapped lowest in its address space (the
/// executable, below its libraries and the heap), without its directory.
fn program_name(dump: &Dump) -> String {
    dump.maps
        .iter()
        .filter(|(_, _, _, path)| path.starts_with('/'))
        .min_by_key(|(start, ..)| *start)
        .map(|(.., path)| crate::symbolize::basename(path).to_string())
        .unwrap_or_default()
}

/// The profile of `dumps`: each site a weighted sample (its calls the count, its bytes the
/// period) over its image's mappings, and the summary.
fn build(dumps: &[Dump], argv: &[String], sample_bytes: Option<u64>, unreadable: usize) -> Profile {
    let exact = sample_bytes.is_none();
    let mut profile = Profile {
        event: "alloc-bytes".into(),
        frequency_hz: 0,
        sample_period: Some(1),
        command: argv.to_vec(),
        target: RecordTarget::Command,
        ..Profile::default()
    };
    let convert = |weights: &dyn Fn(&Site) -> (f64, f64), into: &mut Profile| {
        let mut converter = Converter::new(true);
        let mut seen = std::collections::HashSet::new();
        for (index, dump) in dumps.iter().enumerate() {
            let time = index as u64 + 1;
            // A second image of one pid replaced the first (exec): a fresh address space.
            // The process is named after its program, as the kernel names a task after
            // exec (a dump has no comm; the viewers' tracks said "thread PID").
            let exec = !seen.insert(dump.pid);
            converter.handle(time, Record::Comm { pid: dump.pid, tid: dump.pid, comm: program_name(dump), exec });
            for (start, len, pgoff, path) in &dump.maps {
                let record =
                    Record::Mmap { pid: dump.pid, start: *start, len: *len, pgoff: *pgoff, path: path.clone() };
                converter.handle(time, record);
            }
            for site in &dump.sites {
                let (count, period) = weights(site);
                let count = count.round() as u64;
                if count == 0 || site.frames.is_empty() {
                    continue;
                }
                // The call site is a return address: the call instruction is just before it.
                let ip = site.frames[0].wrapping_sub(1);
                let mut chain = vec![PERF_CONTEXT_USER, ip];
                chain.extend(&site.frames[1..]);
                converter.on_samples(time, dump.pid, dump.pid, ip, count, period.round() as u64, false, &chain);
            }
        }
        converter.finish(into);
        // Aggregated per stack, not sample by sample: no timeline to show.
        into.timeline = None;
    };
    convert(&|s: &Site| (s.calls, s.bytes), &mut profile);
    let live = if exact {
        let mut live_profile = Profile::default();
        convert(&|s: &Site| (s.live_blocks, s.live_bytes), &mut live_profile);
        super::remap(&live_profile, &profile)
    } else {
        Vec::new()
    };
    let libc = dumps
        .iter()
        .flat_map(|d| &d.maps)
        .map(|m| &m.3)
        .find(|p| Path::new(p).file_name().is_some_and(|n| n.to_string_lossy().starts_with("libc.so")))
        .cloned()
        .unwrap_or_else(|| "libc.so.6".into());
    let mut functions: Vec<AllocFunction> = super::FAMILY
        .iter()
        .map(|(name, role)| AllocFunction {
            name: name.to_string(),
            object: libc.clone(),
            role: *role,
            ..AllocFunction::default()
        })
        .collect();
    for dump in dumps {
        for (name, calls, bytes) in &dump.functions {
            if let Some(f) = functions.iter_mut().find(|f| f.name == *name) {
                f.calls += calls;
                f.bytes += bytes;
            }
        }
    }
    let frees: u64 = dumps.iter().map(|d| d.frees).sum();
    let mut notes = vec![format!(
        "recorded in-process (the recorder preloaded into each process of the command, as heaptrack does): every call of the C library's malloc family, in {} process image{}",
        dumps.len(),
        if dumps.len() == 1 { "" } else { "s" }
    )];
    if let Some(mean) = sample_bytes {
        notes.push(format!(
            "sampled by bytes: allocations holding a byte of a Poisson process with a mean gap of {mean} bytes were unwound, each of s bytes standing for s / (1 − e^(−s/{mean})) bytes; calls and bytes per call site are unbiased estimates (± shown per site), the totals per function exact; blocks are not followed to their frees"
        ));
    }
    if unreadable > 0 {
        notes.push(format!("{unreadable} process image(s) left an unreadable or unfinished recording: not counted"));
    }
    notes.push("a process that ends without exiting normally (killed by a signal, _exit) or that is statically linked leaves no recording".into());
    let summary = AllocSummary {
        every: 1,
        functions,
        frees,
        freed_bytes: dumps.iter().map(|d| d.freed_bytes).sum(),
        unmatched_frees: dumps.iter().map(|d| d.unmatched_frees).sum(),
        tracked: exact,
        live,
        notes,
        sample_bytes,
        site_bytes_sd: if exact { Vec::new() } else { site_spreads(dumps, &profile) },
    };
    profile.alloc = Some(summary);
    profile
}

/// Per sample row of `profile` with a sampled estimate, the standard deviation of its
/// bytes (sites of one row summed: their estimates are independent).
fn site_spreads(dumps: &[Dump], profile: &Profile) -> Vec<(u32, f64)> {
    // Rows are keyed by call site (pid, object, offset of the call instruction).
    let mut by_row: std::collections::HashMap<(u32, Option<String>, u64), f64> = std::collections::HashMap::new();
    for dump in dumps {
        for site in &dump.sites {
            let Some(&ret) = site.frames.first() else { continue };
            let ip = ret.wrapping_sub(1);
            let mapped = dump.maps.iter().find(|(start, len, _, _)| ip >= *start && ip < start + len);
            let key = match mapped {
                Some((start, _, pgoff, path)) => (dump.pid, Some(path.clone()), ip - start + pgoff),
                None => (dump.pid, None, ip),
            };
            *by_row.entry(key).or_default() += site.bytes_variance;
        }
    }
    profile
        .samples
        .iter()
        .enumerate()
        .filter_map(|(row, s)| {
            let path = s.object.and_then(|o| profile.objects.get(o as usize)).map(|o| o.path.clone());
            let variance = by_row.get(&(s.pid, path, s.offset))?;
            Some((row as u32, variance.sqrt()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "perflab-alloc 1\npid 42\nsample-bytes 0\nfunction malloc 3 160\nfunction calloc 0 0\n\
frees 2 128 1 0\nsite malloc 2 128 0 0 0 401136 401200\nsite malloc 1 32 1 32 0 401150 401200\n\
map 400000 402000 0 /opt/my prog\nend\n";

    #[test]
    fn a_dump_reads_back_exactly() {
        let dump = Dump::parse(DUMP).unwrap();
        assert_eq!(dump.pid, 42);
        assert_eq!(dump.functions[0], ("malloc".into(), 3, 160));
        assert_eq!((dump.frees, dump.freed_bytes, dump.unmatched_frees), (2, 128, 1));
        assert_eq!(dump.sites.len(), 2);
        assert_eq!(dump.sites[0].frames, vec![0x401136, 0x401200]);
        assert_eq!(dump.sites[1].live_bytes, 32.0);
        // A path with a space stays whole.
        assert_eq!(dump.maps, vec![(0x400000, 0x2000, 0, "/opt/my prog".to_string())]);
    }

    #[test]
    fn unfinished_or_foreign_dumps_are_not_read() {
        assert_eq!(Dump::parse(&DUMP.replace("end\n", "")), None, "cut short");
        assert_eq!(Dump::parse(&DUMP.replace("perflab-alloc 1", "perflab-alloc 9")), None, "another version");
        assert_eq!(Dump::parse(&DUMP.replace("site malloc 2 128", "site malloc x 128")), None, "not a number");
    }

    #[test]
    fn sites_become_weighted_samples_and_the_summary_adds_processes() {
        let dump = Dump::parse(DUMP).unwrap();
        let second = Dump { pid: 43, ..Dump::parse(DUMP).unwrap() };
        let profile = build(&[dump, second], &["prog".into()], None, 0);
        let summary = profile.alloc.as_ref().unwrap();
        assert_eq!(summary.functions.iter().find(|f| f.name == "malloc").map(|f| (f.calls, f.bytes)), Some((6, 320)));
        assert_eq!((summary.frees, summary.freed_bytes, summary.unmatched_frees), (4, 256, 2));
        assert_eq!(summary.functions.iter().find(|f| f.name == "calloc").map(|f| f.calls), Some(0));
        // Two sites in each of two processes; the counts are the calls, the periods bytes.
        let calls: u64 = profile.samples.iter().map(|s| s.count).sum();
        let bytes: u64 = profile.samples.iter().map(|s| s.period).sum();
        assert_eq!((calls, bytes), (6, 320));
        // One live block per process, at the second site.
        assert_eq!((summary.live_blocks(), summary.live_bytes()), (2, 64));
        assert!(summary.tracked);
        // Each process is named after its program (exports named tracks "thread 42").
        assert!(profile.tasks.len() == 2 && profile.tasks.iter().all(|t| t.comm == "my prog"), "{:?}", profile.tasks);
    }
}
