//! Dynamic probes on user functions: `-e uprobe:OBJECT:FUNCTION` (and `uretprobe:` for
//! returns) counts, per run, the calls of any function of any ELF object, with no agent in
//! the process — the kernel plants a breakpoint at the function's file offset.
//!
//! Each probe is defined as a dynamic event in tracefs (`uprobe_events`, as `perf probe`
//! does) and opened as a tracepoint by its id. Not through the uprobe PMU: its
//! `config1` is a pointer to the object's path *in the opener's memory*, and the kernel
//! reads it again each time an inherited event is copied into a new task — in the
//! traced task's context (`perf_uprobe_init`, from `inherit_event` during `fork` and
//! `clone`), where that address means nothing: every `fork`, `pthread_create` and
//! `posix_spawn` of the measured program failed with EFAULT. A tracefs event inherits like
//! any tracepoint. The definitions live in a group of this process (`perflab_PID`), are
//! removed when it exits, and a later perflab removes those of dead processes (a
//! definition with no open event plants no breakpoint: a crash leaves nothing that traps).
//!
//! The object is a path, a program on PATH or a library name as the dynamic linker finds
//! it (`libc.so.6`, `libc`); the function is a symbol of its .symtab or .dynsym, else of
//! its separate debug file (by build ID under /usr/lib/debug, .gnu_debuglink, the
//! debuginfod cache, or a fetch the binary installs with [`set_debug_fetcher`]), or
//! `NAME+OFFSET`, or an address (`0x…`, as the ELF file states it). Every placement is
//! tried once while parsing (a disabled probe on perflab itself), so a probe that cannot
//! be placed is a one-line usage error naming why — permissions, no such symbol, an
//! inlined or IFUNC function — before any run.
//!
//! Resolved here, on the ground floor, with `object` rather than by perflab-profile's
//! symbolizer: the event list is parsed by every command that counts (stat, compare,
//! suites, profile), all of which sit above this crate; only the debuginfod download
//! (network, caching) belongs to the profiler and reaches here through the fetcher hook.

use object::read::elf::{ElfFile64, ProgramHeader};
use object::{Endianness, Object, ObjectSection, ObjectSymbol, SymbolKind};
use std::collections::HashMap;
use std::ffi::CStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

/// One placed probe: the tracepoint id of its dynamic event, and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uprobe {
    /// The dynamic event's tracepoint id (tracefs `events/perflab_PID/NAME/id`).
    pub id: u64,
    /// Fires when the function returns rather than when it is entered.
    pub retprobe: bool,
    /// The object file the probe is in.
    pub path: &'static CStr,
    /// Where in that file the kernel plants the breakpoint.
    pub file_offset: u64,
}

impl perf_event::events::Event for Uprobe {
    fn update_attrs(self, attr: &mut perf_event_open_sys::bindings::perf_event_attr) {
        attr.type_ = perf_event_open_sys::bindings::PERF_TYPE_TRACEPOINT;
        attr.config = self.id;
    }
}

/// Fetches the separate debug file of a build ID when none is on this disk.
pub type DebugFetcher = fn(&[u8]) -> Option<PathBuf>;

static FETCHER: OnceLock<DebugFetcher> = OnceLock::new();

/// Install the debuginfod client (perflab-profile's, by the binary): the ground floor
/// cannot call up to it.
pub fn set_debug_fetcher(fetcher: DebugFetcher) {
    let _ = FETCHER.set(fetcher);
}

/// Where a probe was placed: for the run's environment and the user's eyes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The object's canonical path.
    pub object: PathBuf,
    /// The function as named (or the address as written).
    pub function: String,
    /// Its address as the ELF file states it.
    pub address: u64,
    /// Where the kernel plants the breakpoint.
    pub file_offset: u64,
    /// A return probe (fires when the function returns).
    pub retprobe: bool,
    /// The object's GNU build ID (hex), if it has one.
    pub build_id: Option<String>,
    /// Where the symbol came from when not from the object itself (its debug file).
    pub symbols_from: Option<PathBuf>,
}

impl Placement {
    /// One line: `malloc in /usr/lib/x86_64-linux-gnu/libc.so.6 at 0x9a6d0 (file offset 0x9a6d0)`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{}{} in {} at {:#x} (file offset {:#x})",
            if self.retprobe { "returns of " } else { "" },
            self.function,
            self.object.display(),
            self.address,
            self.file_offset
        );
        if let Some(id) = &self.build_id {
            s.push_str(&format!(", build ID {id}"));
        }
        if let Some(debug) = &self.symbols_from {
            s.push_str(&format!(", symbol from {}", debug.display()));
        }
        s
    }
}

/// Placements resolved in this process, by event name: parsing happens once per command
/// that needs the list, and a debug file can be tens of megabytes.
type Placed = Result<(Placement, Uprobe), String>;

fn placements() -> &'static Mutex<HashMap<String, Placed>> {
    static PLACED: OnceLock<Mutex<HashMap<String, Placed>>> = OnceLock::new();
    PLACED.get_or_init(Mutex::default)
}

/// The placement of a parsed uprobe event (None for any other event).
pub fn placement(event_name: &str) -> Option<Placement> {
    let placed = placements().lock().unwrap_or_else(|p| p.into_inner());
    placed.get(event_name)?.as_ref().ok().map(|(p, _)| p.clone())
}

/// The canonical name and parts of `uprobe:OBJECT:FUNCTION`, `uretprobe:…` or
/// `uprobe:OBJECT:FUNCTION%return`; None when `text` is no uprobe.
pub fn split(text: &str) -> Option<(String, &str, &str, bool)> {
    let (rest, mut retprobe) = if let Some(rest) = text.strip_prefix("uprobe:") {
        (rest, false)
    } else {
        (text.strip_prefix("uretprobe:")?, true)
    };
    // The object is up to the first colon (paths rarely hold one; C++ names do).
    let (object, mut function) = rest.split_once(':').unwrap_or((rest, ""));
    if let Some(f) = function.strip_suffix("%return") {
        function = f;
        retprobe = true;
    }
    let name = format!("{}:{object}:{function}", if retprobe { "uretprobe" } else { "uprobe" });
    Some((name, object, function, retprobe))
}

/// Parse and place a uprobe event on this machine's tracefs: its canonical name, and the
/// probe or why it cannot be placed (one line); None when `text` is not one.
/// `try_probes` tries the placement on perflab itself.
pub fn parse(text: &str, try_probes: bool) -> Option<(String, Result<Uprobe, String>)> {
    parse_with(text, || super::tracefs::root(&super::tracefs::default_roots(), true), try_probes)
}

/// [`parse`] with the tracefs root found by `tracefs` (a seam for tests).
pub(crate) fn parse_with(
    text: &str,
    tracefs: impl FnOnce() -> Option<PathBuf>,
    try_probes: bool,
) -> Option<(String, Result<Uprobe, String>)> {
    let (name, object, function, retprobe) = split(text)?;
    if object.is_empty() || function.is_empty() {
        return Some((
            name,
            Err("expected uprobe:OBJECT:FUNCTION (e.g. uprobe:libc.so.6:malloc, uretprobe:/usr/bin/prog:parse, \
             uprobe:prog:func+0x10, uprobe:prog:0x4011d0)"
                .into()),
        ));
    }
    let cached = placements().lock().unwrap_or_else(|p| p.into_inner()).get(&name).cloned();
    let placed = match cached {
        Some(placed) => placed,
        None => {
            let placed = locate(object, function, retprobe).and_then(|placement| {
                let probe = define(&placement, tracefs)?;
                match keep(probe) {
                    Ok(true) => {}
                    Err(err) if try_probes => return Err(refused(&err)),
                    _ if try_probes => try_open(probe)?,
                    _ => {}
                }
                Ok((placement, probe))
            });
            placements().lock().unwrap_or_else(|p| p.into_inner()).insert(name.clone(), placed.clone());
            placed
        }
    };
    Some((name, placed.map(|(_, probe)| probe)))
}

/// Where `function` of `object` is: the object's file, the function's address and the file
/// offset the kernel needs. Reads files only; defines nothing.
pub fn locate(object: &str, function: &str, retprobe: bool) -> Result<Placement, String> {
    let path = find_object(object)?;
    let data = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let elf = ElfFile64::<Endianness>::parse(&*data)
        .map_err(|e| format!("{} is not a 64-bit ELF object ({e})", path.display()))?;
    let build_id = elf.build_id().ok().flatten().map(hex);
    let (address, symbols_from) = address_of(&elf, &path, function)?;
    let file_offset = file_offset(&elf, address).ok_or_else(|| {
        format!("{function} is at {address:#x}, which no loadable segment of {} maps", path.display())
    })?;
    Ok(Placement {
        object: path,
        function: function.to_string(),
        address,
        file_offset,
        retprobe,
        build_id,
        symbols_from,
    })
}

/// A probe at a known file offset of `path` (no symbol needed), defined but not tried.
pub fn at_file_offset(path: &Path, file_offset: u64, retprobe: bool) -> Result<Uprobe, String> {
    let placement = Placement {
        object: path.to_path_buf(),
        function: format!("{file_offset:#x}"),
        address: file_offset,
        file_offset,
        retprobe,
        build_id: None,
        symbols_from: None,
    };
    let probe = define(&placement, || super::tracefs::root(&super::tracefs::default_roots(), true))?;
    // A probe the keeper cannot hold is refused again, with the reason, when it is opened.
    let _ = keep(probe);
    Ok(probe)
}

/// This process's group of dynamic events in tracefs.
fn group() -> String {
    format!("perflab_{}", std::process::id())
}

/// The dynamic events this process defined (`GROUP/NAME`), with the tracefs they are in:
/// removed at exit.
static DEFINED: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());
/// The process that defined them: a forked child's exit must not remove its parent's.
static OWNER: AtomicU32 = AtomicU32::new(0);

/// Define the probe as a dynamic event (`p:GROUP/NAME PATH:OFFSET`, `r:` for a return
/// probe) and read its tracepoint id.
fn define(placement: &Placement, tracefs: impl FnOnce() -> Option<PathBuf>) -> Result<Uprobe, String> {
    let need_root = "uprobes need root or CAP_PERFMON with write access to tracefs: perflab defines them in \
                     tracefs's uprobe_events, as perf probe does";
    let root = tracefs().ok_or_else(|| format!("{need_root} (no tracefs with events is mounted or readable here)"))?;
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| remove_stale(&root));
    let path = intern(&placement.object)?;
    let text_path = placement.object.to_str().filter(|p| !p.chars().any(char::is_whitespace)).ok_or_else(|| {
        format!(
            "{}: tracefs takes no path with spaces or non-UTF-8 bytes (link it elsewhere)",
            placement.object.display()
        )
    })?;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let stem: String =
        placement.function.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).take(40).collect();
    let name = format!(
        "{}{stem}_{}{}",
        if stem.starts_with(|c: char| c.is_ascii_digit()) { "f" } else { "" },
        NEXT.fetch_add(1, Ordering::Relaxed),
        if placement.retprobe { "_return" } else { "" }
    );
    let group = group();
    let spec = format!(
        "{}:{group}/{name} {text_path}:{:#x}\n",
        if placement.retprobe { 'r' } else { 'p' },
        placement.file_offset
    );
    let events = root.join("uprobe_events");
    // Appended, never truncated: opening uprobe_events for writing without O_APPEND
    // deletes every dynamic event on the machine (perf's and other tools' too).
    let written = std::fs::OpenOptions::new().append(true).open(&events).and_then(|mut f| f.write_all(spec.as_bytes()));
    if let Err(e) = written {
        return Err(match e.kind() {
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound => {
                format!("{need_root} ({}: {e})", events.display())
            }
            _ => format!("the kernel refused the probe `{}` ({e}{})", spec.trim(), last_error(&root)),
        });
    }
    OWNER.store(std::process::id(), Ordering::Relaxed);
    {
        let mut defined = DEFINED.lock().unwrap_or_else(|p| p.into_inner());
        if defined.is_empty() {
            // SAFETY: registers a plain extern "C" function; it only locks, writes files
            // and ignores failures.
            unsafe { libc::atexit(remove_defined) };
        }
        defined.push((root.clone(), format!("{group}/{name}")));
    }
    let id_file = root.join("events").join(&group).join(&name).join("id");
    let id = std::fs::read_to_string(&id_file)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| format!("{} was not created or holds no number", id_file.display()))?;
    Ok(Uprobe { id, retprobe: placement.retprobe, path, file_offset: placement.file_offset })
}

/// The kernel's own reason for the last refused definition (tracefs `error_log`).
fn last_error(root: &Path) -> String {
    let log = std::fs::read_to_string(root.join("error_log")).unwrap_or_default();
    log.lines()
        .rev()
        .find(|l| l.contains("trace_uprobe") || l.contains("error:"))
        .map(|l| format!("; tracefs error_log: {}", l.trim()))
        .unwrap_or_default()
}

/// Remove one dynamic event (`GROUP/NAME`); false when the kernel keeps it (still open).
fn remove(root: &Path, event: &str) -> bool {
    std::fs::OpenOptions::new()
        .append(true)
        .open(root.join("uprobe_events"))
        .and_then(|mut f| f.write_all(format!("-:{event}\n").as_bytes()))
        .is_ok()
}

extern "C" fn remove_defined() {
    if OWNER.load(Ordering::Relaxed) != std::process::id() {
        return;
    }
    release_keepers();
    let defined = std::mem::take(&mut *DEFINED.lock().unwrap_or_else(|p| p.into_inner()));
    for (root, event) in defined {
        remove(&root, &event);
    }
}

/// The groups of perflab processes that no longer run (killed before their exit could
/// remove them): removed, so definitions do not pile up.
fn remove_stale(root: &Path) {
    let Ok(groups) = std::fs::read_dir(root.join("events")) else { return };
    for group in groups.flatten() {
        let name = group.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("perflab_").and_then(|p| p.parse::<u32>().ok()) else { continue };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        for event in std::fs::read_dir(group.path()).into_iter().flatten().flatten() {
            if event.path().is_dir() {
                remove(root, &format!("{name}/{}", event.file_name().to_string_lossy()));
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The kernel keeps no copy of the path it is given: each distinct path is kept once for
/// the process, for `Uprobe` to stay `Copy`.
fn intern(path: &Path) -> Result<&'static CStr, String> {
    static PATHS: Mutex<Vec<&'static CStr>> = Mutex::new(Vec::new());
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{} holds a NUL byte", path.display()))?;
    let mut paths = PATHS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = paths.iter().find(|p| ***p == *c) {
        return Ok(found);
    }
    let leaked: &'static CStr = Box::leak(c.into_boxed_c_str());
    paths.push(leaked);
    Ok(leaked)
}

/// Directories the dynamic linker searches, in its order: LD_LIBRARY_PATH, ld.so.conf's
/// directories, then the multiarch and classic defaults.
fn library_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    let mut conf_files = vec![PathBuf::from("/etc/ld.so.conf")];
    if let Ok(entries) = std::fs::read_dir("/etc/ld.so.conf.d") {
        let mut more: Vec<PathBuf> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "conf")).collect();
        more.sort();
        conf_files.extend(more);
    }
    for file in conf_files {
        for line in std::fs::read_to_string(file).unwrap_or_default().lines() {
            let line = line.trim();
            if line.starts_with('/') {
                dirs.push(PathBuf::from(line));
            }
        }
    }
    let triplet = format!("{}-linux-gnu", std::env::consts::ARCH);
    for dir in [
        format!("/lib/{triplet}"),
        format!("/usr/lib/{triplet}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
        "/usr/local/lib".into(),
    ] {
        dirs.push(PathBuf::from(dir));
    }
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// The object's file: a path as given; a bare name on PATH, else a library as the
/// dynamic linker would find it (`libc.so.6`, or `libc` for `libc.so*`).
pub fn find_object(object: &str) -> Result<PathBuf, String> {
    let canonical = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    if object.contains('/') {
        let path = Path::new(object);
        if !path.is_file() {
            return Err(format!("no file {object}"));
        }
        return canonical(path);
    }
    if let Ok(found) = which::which(object) {
        return canonical(&found);
    }
    let dirs = library_dirs();
    for dir in &dirs {
        let candidate = dir.join(object);
        if candidate.is_file() {
            return canonical(&candidate);
        }
    }
    // A short name (`libc`, `pthread`): the shortest `NAME.so*` or `libNAME.so*` that is
    // an ELF object (`libc.so` itself is a linker script).
    for prefix in [format!("{object}.so"), format!("lib{object}.so")] {
        for dir in &dirs {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            let mut names: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| *n == prefix || n.starts_with(&format!("{prefix}.")))
                .filter(|n| is_elf(&dir.join(n)))
                .collect();
            names.sort_by_key(|n| (n.len(), n.clone()));
            if let Some(name) = names.first() {
                return canonical(&dir.join(name));
            }
        }
    }
    Err(format!(
        "no object `{object}`: not a path, not on PATH, and not a library in {} (give its path)",
        dirs.iter().take(4).map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    ))
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

/// The ELF address of `function` (`NAME`, `NAME+OFF` or `0xADDR`) and the debug file its
/// symbol came from, if not the object itself.
fn address_of(elf: &ElfFile64<Endianness>, path: &Path, function: &str) -> Result<(u64, Option<PathBuf>), String> {
    if let Some(hex) = function.strip_prefix("0x") {
        let address = u64::from_str_radix(hex, 16).map_err(|_| format!("`{function}` is not a hex address"))?;
        return Ok((address, None));
    }
    let (name, offset) = match function.rsplit_once('+') {
        Some((name, off)) => {
            let offset = match off.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => off.parse().ok(),
            }
            .ok_or_else(|| format!("`{off}` in `{function}` is not an offset (decimal or 0x…)"))?;
            (name, offset)
        }
        None => (function, 0),
    };
    let object = path.display();
    let mut found = named_functions(elf, name);
    let mut symbols_from = None;
    let mut debug: Option<(PathBuf, Vec<u8>)> = None;
    if found.is_empty() {
        // A stripped object keeps its full symbol table in its debug file.
        if let Some(file) = debug_file(elf, path) {
            if let Ok(data) = std::fs::read(&file) {
                if let Ok(debug_elf) = ElfFile64::<Endianness>::parse(&*data) {
                    found = named_functions(&debug_elf, name);
                    if !found.is_empty() {
                        symbols_from = Some(file.clone());
                    }
                }
                debug = Some((file, data));
            }
        }
    }
    found.sort_by_key(|f| f.0);
    found.dedup_by_key(|f| f.0);
    match found.as_slice() {
        [] => Err(not_found(elf, path, name, debug.as_ref())),
        [(_, _, true)] => Err(format!(
            "{name} in {object} is an IFUNC: a probe would count its resolver (run once), not its calls; \
             probe the implementation it selects instead (e.g. perflab profile shows its name)"
        )),
        [(address, size, false)] => {
            if offset > 0 && *size > 0 && offset >= *size {
                return Err(format!("{name} in {object} is {size} bytes long: +{offset:#x} is past its end"));
            }
            Ok((address + offset, symbols_from))
        }
        many => Err(format!(
            "{name} names {} functions in {object} (static functions of different files): name one by address: {}",
            many.len(),
            many.iter().map(|(a, _, _)| format!("{a:#x}")).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// (address, size, is IFUNC) of the defined functions called `name`. A hidden version of
/// an exported name (`memcpy@GLIBC_2.2.5` beside the default `memcpy@@GLIBC_2.14`) is
/// left out: only old binaries call it, and the default one is what `name` means.
fn named_functions(elf: &ElfFile64<Endianness>, name: &str) -> Vec<(u64, u64, bool)> {
    let endian = elf.endian();
    let versions = elf.elf_section_table().versions(endian, elf.data()).ok().flatten();
    let hidden = |index| versions.as_ref().is_some_and(|v| v.version_index(endian, index).is_hidden());
    let named = |s: &object::read::elf::ElfSymbol64<'_, '_, Endianness>| {
        // IFUNC symbols are Text to `object` but not "definitions": test the section instead.
        s.kind() == SymbolKind::Text
            && !s.is_undefined()
            && s.address() != 0
            && s.name_bytes().is_ok_and(|n| n == name.as_bytes())
    };
    elf.symbols()
        .filter(|s| named(s))
        .chain(elf.dynamic_symbols().filter(|s| named(s) && !hidden(s.index())))
        .map(|s| (s.address(), s.size(), s.elf_symbol().st_type() == object::elf::STT_GNU_IFUNC))
        .collect()
}

/// Why `name` has no symbol, in one line: inlined, stripped without a debug file, or a
/// typo (with the names that come closest).
fn not_found(elf: &ElfFile64<Endianness>, path: &Path, name: &str, debug: Option<&(PathBuf, Vec<u8>)>) -> String {
    let object = path.display();
    let debug_elf = debug.and_then(|(_, data)| ElfFile64::<Endianness>::parse(&**data).ok());
    let in_debug_strings = [Some(elf), debug_elf.as_ref()].into_iter().flatten().any(|e| debug_str_has(e, name));
    if in_debug_strings {
        return format!(
            "{name} is in {object}'s debug information but has no symbol of its own: it was inlined into its callers \
             (or removed); probe a caller, or build with -fno-inline / __attribute__((noinline))"
        );
    }
    let mut near: Vec<String> = [Some(elf), debug_elf.as_ref()]
        .into_iter()
        .flatten()
        .flat_map(|e| e.symbols().chain(e.dynamic_symbols()).collect::<Vec<_>>())
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| n.contains(name) || name.contains(n.as_str()) && n.len() > 3)
        .collect();
    near.sort_by_key(|n| (n.len(), n.clone()));
    near.dedup();
    near.truncate(5);
    let stripped = elf.section_by_name(".symtab").is_none();
    let mut why = format!("no function {name} in {object}");
    if stripped && debug.is_none() {
        let id = elf.build_id().ok().flatten().map(hex);
        why.push_str(&format!(
            " (stripped: only its exported symbols are known, and no debug file{} was found under /usr/lib/debug, \
             in the debuginfod cache or from DEBUGINFOD_URLS; static functions need it)",
            id.map(|id| format!(" for build ID {id}")).unwrap_or_default()
        ));
    } else if let Some((file, _)) = debug {
        why.push_str(&format!(" nor in its debug file {}", file.display()));
    }
    if !near.is_empty() {
        why.push_str(&format!("; similar: {}", near.join(", ")));
    }
    why
}

/// True when `.debug_str` holds `name` as a whole string (DWARF names every function,
/// inlined ones included, there).
fn debug_str_has(elf: &ElfFile64<Endianness>, name: &str) -> bool {
    let Some(section) = elf.section_by_name(".debug_str") else { return false };
    let Ok(data) = section.uncompressed_data() else { return false };
    data.split(|b| *b == 0).any(|s| s == name.as_bytes())
}

/// The separate debug file of an object: GDB's places, then the debuginfod cache, then
/// the installed fetcher.
fn debug_file(elf: &ElfFile64<Endianness>, path: &Path) -> Option<PathBuf> {
    let root = Path::new("/usr/lib/debug");
    let build_id = elf.build_id().ok().flatten().filter(|id| id.len() > 1);
    if let Some(id) = build_id {
        let hex = hex(id);
        let candidate = root.join(".build-id").join(&hex[..2]).join(format!("{}.debug", &hex[2..]));
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    if let Ok(Some((name, _))) = elf.gnu_debuglink() {
        if let (Ok(name), Some(dir)) = (std::str::from_utf8(name), path.parent()) {
            let rel = dir.strip_prefix("/").unwrap_or(dir);
            for candidate in [dir.join(name), dir.join(".debug").join(name), root.join(rel).join(name)] {
                if candidate.is_file() && candidate != path {
                    return Some(candidate);
                }
            }
        }
    }
    let id = build_id?;
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty()).map(PathBuf::from);
    let cache = var("DEBUGINFOD_CACHE_PATH").or_else(|| {
        var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache"))).map(|c| c.join("debuginfod_client"))
    });
    if let Some(cached) =
        cache.map(|c| c.join(hex(id)).join("debuginfo")).filter(|p| p.metadata().is_ok_and(|m| m.len() > 0))
    {
        return Some(cached);
    }
    FETCHER.get().and_then(|fetch| fetch(id))
}

/// The file offset of an ELF address: through the loadable segment that maps it.
fn file_offset(elf: &ElfFile64<Endianness>, address: u64) -> Option<u64> {
    let endian = elf.endian();
    elf.elf_program_headers().iter().filter(|ph| ph.p_type(endian) == object::elf::PT_LOAD).find_map(|ph| {
        let (vaddr, offset, size) = (ph.p_vaddr(endian), ph.p_offset(endian), ph.p_filesz(endian));
        (address >= vaddr && address < vaddr + size).then(|| offset + (address - vaddr))
    })
}

/// Try the placement on perflab itself (disabled, closed at once): the kernel's answer —
/// permissions, a refused offset — as a sentence before any run. Only when no keeper could
/// be opened (see [`keep`]), which tries the same.
fn try_open(probe: Uprobe) -> Result<(), String> {
    let result = perf_event::Builder::new(probe).observe_self().any_cpu().enabled(false).build();
    result.map(drop).map_err(|err| refused(&err))
}

/// The kernel's refusal to open a probe, as a sentence.
fn refused(err: &std::io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => format!(
            "the kernel refused the probe ({err}): uprobes need root or CAP_PERFMON, whatever \
                 perf_event_paranoid says"
        ),
        Some(libc::ENOENT) => format!("the kernel could not open the object ({err})"),
        Some(libc::EINVAL) => {
            format!("the kernel refused a probe at this offset ({err}): not the start of an instruction?")
        }
        Some(libc::ENODEV | libc::EOPNOTSUPP) => format!("this kernel cannot place uprobes ({err})"),
        _ => format!("perf_event_open failed: {err}"),
    }
}

/// Each defined probe held open by a disabled event on a parked child of perflab, so that
/// closing the events that measure never unregisters a probe: they are closed at exit.
///
/// Why: closing a probe's last perf event unregisters it, and the kernel then waits for an
/// RCU tasks-trace grace period (80–110 ms each on this VM) under its global `event_mutex`,
/// one probe after another. An attached session of 18 probes kept its target trapping for
/// 1.5 s after its stated end, and every `compare` run with uprobe counters paid the same
/// wait per probe. While a keeper holds the registration, closing a measuring event only
/// updates the probe's filter and takes the breakpoints out of the processes no event
/// watches any more (`uprobe_perf_close` → `uprobe_apply`), with no grace period. The
/// parked child is a process of its own (a fork, no file descriptors, asleep), so the
/// breakpoints the keepers leave are in it and nowhere else.
struct Keepers {
    parked: libc::pid_t,
    events: Vec<perf_event::Counter>,
}

static KEEPERS: Mutex<Option<Keepers>> = Mutex::new(None);

/// Hold `probe` registered until exit (see [`Keepers`]). Ok(false) when no child could be
/// parked (the probe then unregisters with its last measuring event, as before); the
/// kernel's refusal when the probe cannot be opened at all.
fn keep(probe: Uprobe) -> std::io::Result<bool> {
    let mut keepers = KEEPERS.lock().unwrap_or_else(|p| p.into_inner());
    if keepers.is_none() {
        let Some(parked) = park() else { return Ok(false) };
        *keepers = Some(Keepers { parked, events: Vec::new() });
    }
    let Some(keepers) = keepers.as_mut() else { return Ok(false) };
    let event = perf_event::Builder::new(probe).observe_pid(keepers.parked).any_cpu().enabled(false).build()?;
    keepers.events.push(event);
    Ok(true)
}

/// A child that sleeps until perflab is gone, holding no file descriptor (a pipe it kept
/// open would keep a reader from its end of file).
fn park() -> Option<libc::pid_t> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the child calls only async-signal-safe system calls before it exits: it may
    // have been forked from a process with other threads.
    match unsafe { libc::fork() } {
        -1 => None,
        0 => unsafe {
            libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
            let nap = libc::timespec { tv_sec: 0, tv_nsec: 500_000_000 };
            while libc::getppid() == parent {
                libc::nanosleep(&nap, std::ptr::null_mut());
            }
            libc::_exit(0)
        },
        child => Some(child),
    }
}

/// Close the keepers (each close now waits for its grace period: nothing measured traps
/// any more) and end the parked child; before the definitions can be removed.
fn release_keepers() {
    let Some(keepers) = KEEPERS.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
    drop(keepers.events);
    // SAFETY: signalling and reaping our own child.
    unsafe {
        libc::kill(keepers.parked, libc::SIGKILL);
        libc::waitpid(keepers.parked, std::ptr::null_mut(), 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function of this test binary to place probes on: its runtime address, minus the
    /// start of the mapping that holds it, is the file offset the kernel needs.
    #[no_mangle]
    #[inline(never)]
    pub extern "C" fn perflab_uprobe_target(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_mul(3))
    }

    /// The file offset of `address` in this process, from /proc/self/maps.
    fn runtime_file_offset(address: u64) -> u64 {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        for line in maps.lines() {
            let mut fields = line.split_whitespace();
            let range = fields.next().unwrap();
            let _perms = fields.next();
            let offset = u64::from_str_radix(fields.next().unwrap(), 16).unwrap();
            let (start, end) = range.split_once('-').unwrap();
            let (start, end) = (u64::from_str_radix(start, 16).unwrap(), u64::from_str_radix(end, 16).unwrap());
            if (start..end).contains(&address) {
                return offset + (address - start);
            }
        }
        panic!("{address:#x} is in no mapping");
    }

    /// Where a probe would go, without defining it (split as parsing splits).
    fn placed(text: &str) -> Result<Placement, String> {
        let (_, object, function, retprobe) = split(text).expect("a uprobe");
        if object.is_empty() || function.is_empty() {
            return Err(parse_with(text, || None, false).expect("a uprobe").1.expect_err("no placement"));
        }
        locate(object, function, retprobe)
    }

    #[test]
    fn the_syntax_names_object_function_and_return_probes() {
        assert_eq!(
            split("uprobe:libc.so.6:malloc"),
            Some(("uprobe:libc.so.6:malloc".into(), "libc.so.6", "malloc", false))
        );
        assert_eq!(split("uretprobe:/a/b:f"), Some(("uretprobe:/a/b:f".into(), "/a/b", "f", true)));
        // perf probe's spelling of a return probe is the same event.
        assert_eq!(split("uprobe:prog:f%return"), Some(("uretprobe:prog:f".into(), "prog", "f", true)));
        // C++ names keep their colons.
        assert_eq!(split("uprobe:prog:ns::f").map(|s| s.2.to_string()), Some("ns::f".into()));
        assert_eq!(split("sched:sched_switch"), None);
        let err = placed("uprobe:libc.so.6").unwrap_err();
        assert!(err.contains("expected uprobe:OBJECT:FUNCTION"), "{err}");
    }

    #[test]
    fn a_function_of_this_binary_is_placed_at_its_file_offset() {
        let exe = std::fs::canonicalize("/proc/self/exe").unwrap();
        let text = format!("uprobe:{}:perflab_uprobe_target", exe.display());
        let probe = placed(&text).unwrap();
        let expected = runtime_file_offset(perflab_uprobe_target as *const () as usize as u64);
        assert_eq!(probe.file_offset, expected);
        assert!(!probe.retprobe);
        assert_eq!(probe.object, exe);
        assert!(probe.describe().contains("perflab_uprobe_target in /"), "{}", probe.describe());
        // An offset inside the function, and a return probe of it.
        assert_eq!(placed(&format!("{text}+1")).unwrap().file_offset, expected + 1);
        assert!(placed(&text.replacen("uprobe:", "uretprobe:", 1)).unwrap().retprobe);
        let past = placed(&format!("{text}+0x100000")).unwrap_err();
        assert!(past.contains("past its end"), "{past}");
    }

    #[test]
    fn what_cannot_be_placed_is_one_line_saying_why() {
        let exe = std::fs::canonicalize("/proc/self/exe").unwrap();
        let err = |text: String| placed(&text).unwrap_err();
        let typo = err(format!("uprobe:{}:perflab_uprobe_targe", exe.display()));
        assert!(
            typo.contains("no function perflab_uprobe_targe") && typo.contains("similar: perflab_uprobe_target"),
            "{typo}"
        );
        let missing = err("uprobe:/no/such/object:f".into());
        assert!(missing.contains("no file /no/such/object"), "{missing}");
        let unknown = err("uprobe:perflab-no-such-library:f".into());
        assert!(unknown.contains("no object `perflab-no-such-library`"), "{unknown}");
        let not_elf = err("uprobe:/etc/passwd:f".into());
        assert!(not_elf.contains("not a 64-bit ELF object"), "{not_elf}");
        for e in [typo, missing, unknown, not_elf] {
            assert!(!e.contains('\n'), "{e}");
        }
        // Without tracefs nothing can be defined (straight to `define`: parsing caches
        // placements by name, and another test may have placed this one for real).
        let placement = locate(&exe.display().to_string(), "perflab_uprobe_target", false).unwrap();
        let err = define(&placement, || None).unwrap_err();
        assert!(err.contains("uprobes need root or CAP_PERFMON") && err.contains("tracefs"), "{err}");
    }

    /// The C library, found by its short and full names; its `memcpy` is an IFUNC (on
    /// glibc since 2.14), which the probe refuses rather than counting its resolver.
    #[test]
    fn libraries_are_found_by_name_and_ifuncs_are_refused() {
        let Ok(libc_path) = find_object("libc.so.6") else {
            eprintln!("SKIP: no libc.so.6 in the linker's directories (not glibc?)");
            return;
        };
        assert_eq!(
            find_object("libc").unwrap(),
            libc_path,
            "the short name finds the ELF object, not libc.so's script"
        );
        assert!(placed("uprobe:libc.so.6:malloc").unwrap().file_offset > 0);
        let memcpy = placed("uprobe:libc.so.6:memcpy").unwrap_err();
        assert!(memcpy.contains("is an IFUNC"), "{memcpy}");
    }

    /// On this machine as root: the probe counts every call of the function in this
    /// process, exactly; its definition is in this process's tracefs group.
    /// A function no other test probes (their open events would plant its breakpoint).
    #[no_mangle]
    #[inline(never)]
    pub extern "C" fn perflab_uprobe_kept(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_mul(5))
    }

    /// The first byte of `perflab_uprobe_kept` as process `pid` sees it (0xcc while a
    /// uprobe's breakpoint is planted there).
    fn first_byte_in(pid: libc::pid_t) -> u8 {
        use std::os::unix::fs::FileExt;
        let mut byte = [0u8];
        let mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
        mem.read_exact_at(&mut byte, perflab_uprobe_kept as *const () as usize as u64).unwrap();
        byte[0]
    }

    #[test]
    fn closing_a_measuring_event_takes_its_breakpoints_out_and_leaves_the_probe_registered() {
        std::hint::black_box(perflab_uprobe_kept(1));
        let exe = std::fs::canonicalize("/proc/self/exe").unwrap();
        let text = format!("uprobe:{}:perflab_uprobe_kept", exe.display());
        let probe = match parse(&text, true).unwrap().1 {
            Ok(probe) => probe,
            Err(e) => {
                eprintln!("SKIP: {e}");
                return;
            }
        };
        let parked = KEEPERS.lock().unwrap().as_ref().map(|k| k.parked).expect("a parked keeper");
        let me = std::process::id() as libc::pid_t;
        let bare = first_byte_in(me);
        assert_ne!(bare, 0xcc, "no event watches this process yet");
        // The parked child is a fork of this test binary: the keeper planted its breakpoint
        // there, and only there.
        assert_eq!(first_byte_in(parked), 0xcc);
        let counter = perf_event::Builder::new(probe).observe_self().any_cpu().build().unwrap();
        assert_eq!(first_byte_in(me), 0xcc);
        drop(counter);
        assert_eq!(first_byte_in(me), bare, "the close took the breakpoint out of this process");
        assert_eq!(first_byte_in(parked), 0xcc, "the keeper still holds the probe registered");
    }

    #[test]
    fn a_placed_probe_counts_every_call_exactly() {
        let exe = std::fs::canonicalize("/proc/self/exe").unwrap();
        let text = format!("uprobe:{}:perflab_uprobe_target", exe.display());
        let probe = match parse(&text, true).unwrap().1 {
            Ok(probe) => probe,
            Err(e) => {
                eprintln!("SKIP: {e}");
                return;
            }
        };
        let mut counter = perf_event::Builder::new(probe).observe_self().any_cpu().build().unwrap();
        counter.enable().unwrap();
        let mut acc = 0;
        for i in 0..1234 {
            acc += perflab_uprobe_target(i);
        }
        counter.disable().unwrap();
        std::hint::black_box(acc);
        // Other test threads do not call it: the count is exactly ours.
        assert_eq!(counter.read().unwrap(), 1234);
    }
}
