//! Code generated at run time, while converting: an address in anonymous executable
//! memory, in a file mapping that is no ELF object (SBCL compiles Lisp into a private
//! writable mapping of `sbcl.core`), or outside every mapping but named by the
//! process's perf map, becomes a frame of the process's runtime code (`[jit:PID]`, the
//! address as offset). When the recording ends each sampled address is named from the
//! perf map (`/tmp/perf-PID.map`) or, where nothing names it, grouped with its sampled
//! neighbours into one unnamed region — one row per hot piece of code instead of one
//! per instruction. The names are kept in the profile (the map file may be gone when
//! the profile is read). A process that maps a jitdump file (`jit-PID.dump`, written by
//! runtimes for `perf inject --jit`: node --perf-prof, the JVM's agent, CPython -X
//! perf_jit) has its code named from that file instead of a perf map.

use super::objects::Objects;
use crate::format::{FrameRef, JitSymbol, Space};
use crate::jitmap::{self, JitMap};
use crate::symbolize::basename;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;

/// Sampled unnamed addresses closer than this belong to one region: code of one
/// function lies together, and the gap between two functions' hot loops is usually
/// larger. A guess, said in the docs; a perf map replaces it with the runtime's names.
const REGION_GAP: u64 = 256;

/// What an executable mapping holds, for attributing its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Contents {
    /// An ELF object on disk: symbolized from the file at report time.
    Object,
    /// Code the process generated (anonymous memory, a non-ELF or deleted file, memfd).
    Runtime { anonymous: bool },
}

/// Classifies mapped paths (each file is opened once).
#[derive(Default, Clone)]
pub(crate) struct Classifier {
    files: HashMap<String, Contents>,
}

impl Classifier {
    pub(crate) fn contents(&mut self, path: &str) -> Contents {
        if path.is_empty()
            || path.starts_with("//anon")
            || path.starts_with("[anon")
            || path == "[heap]"
            || path == "[stack]"
        {
            return Contents::Runtime { anonymous: true };
        }
        // [vdso], [vsyscall], [uprobes]: the kernel's, symbolized as before.
        if path.starts_with('[') {
            return Contents::Object;
        }
        *self.files.entry(path.to_string()).or_insert_with(|| classify_file(path))
    }
}

fn classify_file(path: &str) -> Contents {
    let runtime = Contents::Runtime { anonymous: false };
    // memfd code (double-mapped JIT heaps) and files deleted while mapped have nothing
    // on disk to read the code from.
    if path.starts_with("/memfd:") || path.ends_with(" (deleted)") {
        return runtime;
    }
    let mut magic = [0u8; 4];
    // Only a regular file is opened: a FIFO or device named by a mapping would block.
    match perflab_sys::files::open_regular(path).and_then(|mut f| f.read_exact(&mut magic)) {
        Ok(()) if magic == *b"\x7fELF" => Contents::Object,
        Ok(()) => runtime,
        // Unreadable here (another mount namespace, permissions): leave it to the
        // symbolizer, which says so.
        Err(_) => Contents::Object,
    }
}

/// Where a sampled runtime address lay when it was sampled.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Place {
    /// The mapping's path (empty outside any mapping) and its start and file offset.
    path: std::rc::Rc<str>,
    start: u64,
    pgoff: u64,
    anonymous: bool,
}

#[derive(Default)]
pub(crate) struct JitObjects {
    /// Per pid: its code ranges held whole — from its jitdump, or its perf map when an
    /// address outside every mapping had to be looked up in it — None when it has none.
    /// Other perf maps are read at the end for the sampled addresses only
    /// ([`jitmap::names_for`]).
    maps: HashMap<u32, Option<JitMap>>,
    /// Per pid: the object of its runtime code.
    objects: rustc_hash::FxHashMap<u32, u32>,
    /// Per sampled runtime (object, address), pushed when the converter first saw it:
    /// where it lay, as its number in `place_list` (1.2 M sampled addresses lie in a
    /// handful of mappings; a list, not a map: the converter's own maps already tell a
    /// new address, and growing a second map of 1.2 M was a tenth of `show`).
    placed: Vec<(u32, u64, u32)>,
    /// Every distinct place, and its number.
    place_list: Vec<Place>,
    place_ids: rustc_hash::FxHashMap<Place, u32>,
    /// Per pid: the jitdump file it mapped, read at the end for the sampled addresses
    /// only (a jitdump of 10⁷ records held whole took over 2 GB).
    jitdumps: HashMap<u32, String>,
}

/// Is `path` a jitdump file (`…/jit-PID.dump`)? A process mapping one names its JIT
/// code in it.
pub(crate) fn is_jitdump_path(path: &str) -> bool {
    basename(path)
        .strip_prefix("jit-")
        .and_then(|rest| rest.strip_suffix(".dump"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// What a jitdump record says about code: the two readers below differ only in what
/// they keep of it, so both walk the file through [`each_code_record`].
enum CodeRecord<'a> {
    /// Code of `size` bytes loaded at `start`, named `name`.
    Load { start: u64, size: u64, name: &'a linux_perf_data::linux_perf_event_reader::RawData<'a> },
    /// The code loaded at `old` now lies at `new` (`size`: as the record states it).
    Move { old: u64, new: u64, size: u64 },
}

/// Open and check the jitdump at `path`, then hand each code load and code move to
/// `visit` in file order until it breaks or the file ends (at the first record that
/// cannot be read, as perf does). None when the file cannot be read (or is no regular
/// file) or `visit` broke off; a panic left in the parser is caught.
fn each_code_record(path: &str, mut visit: impl FnMut(CodeRecord) -> std::ops::ControlFlow<()>) -> Option<()> {
    use linux_perf_data::jitdump::{JitDumpReader, JitDumpRecord, JitDumpRecordType};
    let file = perflab_sys::files::open_regular(std::path::Path::new(path)).ok()?;
    let len = file.metadata().ok()?.len();
    super::perf_data_check::check_jitdump(&file, len).ok()?;
    std::io::Seek::rewind(&mut &file).ok()?;
    perflab_sys::panic_guard::catching(move || {
        let mut reader = JitDumpReader::new(std::io::BufReader::with_capacity(1 << 16, file)).ok()?;
        while let Ok(Some(raw)) = reader.next_record() {
            // Only loads and moves name code; other records are not parsed at all (the
            // crate sizes a debug-info record's entries by its stated count).
            if !matches!(raw.record_type, JitDumpRecordType::JIT_CODE_LOAD | JitDumpRecordType::JIT_CODE_MOVE) {
                continue;
            }
            let flow = match raw.parse() {
                Ok(JitDumpRecord::CodeLoad(load)) => visit(CodeRecord::Load {
                    start: load.code_addr,
                    size: load.code_bytes.len() as u64,
                    name: &load.function_name,
                }),
                Ok(JitDumpRecord::CodeMove(moved)) => visit(CodeRecord::Move {
                    old: moved.old_code_addr,
                    new: moved.new_code_addr,
                    size: moved.code_size,
                }),
                Ok(_) => std::ops::ControlFlow::Continue(()),
                Err(_) => break,
            };
            if flow.is_break() {
                return None;
            }
        }
        Some(())
    })
    .ok()?
}

/// The names a jitdump gives the sampled `addresses`: (start, size, name) per named
/// address, as [`read_jitdump`] then [`JitMap::lookup`] would give them, holding only the
/// code that covers a sampled address. None when the file cannot be read, or when a
/// code move brought code whose name was not kept onto sampled code — then the caller
/// reads the file whole (a move names code by its old address only).
fn jitdump_names_for(path: &str, addresses: &BTreeSet<u64>) -> Option<BTreeMap<u64, (u64, u64, String)>> {
    use std::ops::ControlFlow;
    let covers = |start: u64, end: u64| addresses.range(start..end).next().is_some();
    let mut active = JitMap::default();
    // Name and size per start of the kept code, for moves (as `read_jitdump`).
    let mut names: HashMap<u64, (u64, String)> = HashMap::new();
    each_code_record(path, |record| {
        match record {
            CodeRecord::Load { start, size, name } => {
                let end = start.saturating_add(size);
                if covers(start, end) {
                    let name = jitdump_name(name);
                    active.insert(start, end, name.clone());
                    names.insert(start, (size, name));
                } else {
                    active.remove_overlapping(start, end);
                    names.remove(&start);
                }
            }
            CodeRecord::Move { old, new, size: stated } => match names.remove(&old) {
                Some((size, name)) if covers(new, new.saturating_add(size)) => {
                    active.insert(new, new.saturating_add(size), name.clone());
                    names.insert(new, (size, name));
                }
                Some((size, _)) => {
                    active.remove_overlapping(new, new.saturating_add(size));
                    names.remove(&new);
                }
                None => {
                    // Code not kept (or never loaded): harmless unless it lands on what
                    // is sampled or kept.
                    let end = new.saturating_add(stated);
                    if covers(new, end) || active.overlaps(new, end) || active.starts_at(new) {
                        return ControlFlow::Break(());
                    }
                }
            },
        }
        ControlFlow::Continue(())
    })?;
    Some(addresses.iter().filter_map(|&a| active.lookup(a).map(|(s, size, n)| (a, (s, size, n.to_string())))).collect())
}

/// A code load's name, at most [`jitmap::MAX_NAME_BYTES`] of it.
fn jitdump_name(name: &linux_perf_data::linux_perf_event_reader::RawData) -> String {
    let bytes = name.as_slice();
    let kept = &bytes[..bytes.len().min(jitmap::MAX_NAME_BYTES + 4)];
    jitmap::capped_name(&String::from_utf8_lossy(kept), bytes.len())
}

/// The code a jitdump file says was loaded (and moved) by the end of the file, as a map
/// of code ranges; None when it cannot be read (or is no regular file).
/// Public for the fuzz tests (tests/hostile_inputs.rs).
pub fn read_jitdump(path: &str) -> Option<JitMap> {
    use std::ops::ControlFlow;
    let mut map = JitMap::default();
    // Moves refer to code by its old address: keep each loaded range's name by start.
    let mut names: HashMap<u64, (u64, String)> = HashMap::new();
    each_code_record(path, |record| {
        match record {
            CodeRecord::Load { start, size, name } => {
                let name = jitdump_name(name);
                map.insert(start, start.saturating_add(size), name.clone());
                names.insert(start, (size, name));
            }
            CodeRecord::Move { old, new, .. } => {
                if let Some((size, name)) = names.remove(&old) {
                    map.insert(new, new.saturating_add(size), name.clone());
                    names.insert(new, (size, name));
                }
            }
        }
        ControlFlow::Continue(())
    })?;
    Some(map)
}

impl JitObjects {
    /// `pid` mapped a jitdump file: its code ranges name the process's runtime code
    /// (instead of a perf map).
    pub(crate) fn jitdump(&mut self, pid: u32, path: &str) {
        let readable = perflab_sys::files::open_regular(std::path::Path::new(path))
            .ok()
            .and_then(|file| Some((file.metadata().ok()?.len(), file)))
            .is_some_and(|(len, file)| super::perf_data_check::check_jitdump(&file, len).is_ok());
        if readable {
            self.jitdumps.insert(pid, path.to_string());
            // A perf map read earlier no longer names this process's code.
            self.maps.remove(&pid);
        }
    }

    /// The runtime-code frame of `address` in `pid`, which lies in a mapping of runtime
    /// code (`in_mapping`) or outside every mapping — then only if the process's perf map
    /// names it.
    pub(crate) fn attribute(
        &mut self,
        pid: u32,
        address: u64,
        in_mapping: bool,
        objects: &mut Objects,
    ) -> Option<FrameRef> {
        // Only an address outside every mapping needs the map now (is it runtime code at
        // all?); the others are named at the end from the sampled addresses alone.
        if !in_mapping {
            let jitdumps = &self.jitdumps;
            let map = self.maps.entry(pid).or_insert_with(|| match jitdumps.get(&pid) {
                Some(path) => read_jitdump(path),
                None => JitMap::read(pid),
            });
            if map.as_ref().is_none_or(|m| m.lookup(address).is_none()) {
                return None;
            }
        }
        let object = *self.objects.entry(pid).or_insert_with(|| objects.id(&jitmap::runtime_object(pid)));
        Some(FrameRef { space: Space::User, object: Some(object), offset: address })
    }

    /// Is `object` the runtime code of `pid` (a frame [`attribute`](Self::attribute) made)?
    pub(crate) fn is_runtime_code(&self, pid: u32, object: Option<u32>) -> bool {
        object.is_some() && self.objects.get(&pid).copied() == object
    }

    /// Where the runtime frame (`object`, `address`) lay when first sampled: in the
    /// mapping `place` (path, start, file offset, anonymous), or outside every mapping.
    /// Told once per new frame or location (twice at most per address); the first wins.
    pub(crate) fn place(&mut self, object: u32, address: u64, place: Option<(std::rc::Rc<str>, u64, u64, bool)>) {
        let (path, start, pgoff, anonymous) = place.unwrap_or_else(|| (std::rc::Rc::from(""), 0, 0, true));
        let place = Place { path, start, pgoff, anonymous };
        // Frames come in runs from one mapping: the last place first, without hashing
        // its path.
        let id = match self.place_list.last() {
            Some(last) if *last == place => self.place_list.len() as u32 - 1,
            _ => match self.place_ids.get(&place) {
                Some(&id) => id,
                None => {
                    let id = self.place_list.len() as u32;
                    self.place_list.push(place.clone());
                    self.place_ids.insert(place, id);
                    id
                }
            },
        };
        self.placed.push((object, address, id));
    }

    /// The symbols of every sampled runtime address (each told to [`place`](Self::place)):
    /// the perf map's, else one unnamed region per run of sampled addresses (in one
    /// mapping, at most [`REGION_GAP`] apart), each once, sorted by (object, start).
    pub(crate) fn symbols(&mut self) -> Vec<JitSymbol> {
        let pid_of: rustc_hash::FxHashMap<u32, u32> = self.objects.iter().map(|(&pid, &o)| (o, pid)).collect();
        // Every sampled address once, sorted, with where it lay: one list, not a set
        // (three times the cost at 1.2 M addresses) nor a second sorted list of them.
        let mut addresses = std::mem::take(&mut self.placed);
        // Stable: of an address told twice, the first place stays.
        addresses.sort_by_key(|&(object, address, _)| (object, address));
        addresses.dedup_by_key(|&mut (object, address, _)| (object, address));
        // The jitdumps and perf maps not held whole, read once each for the sampled
        // addresses.
        let mut streamed: HashMap<u32, BTreeMap<u64, (u64, u64, String)>> = HashMap::new();
        for (&pid, &object) in &self.objects {
            if !self.maps.contains_key(&pid) {
                let first = addresses.partition_point(|&(o, _, _)| o < object);
                let end = addresses.partition_point(|&(o, _, _)| o <= object);
                let sampled: BTreeSet<u64> = addresses[first..end].iter().map(|&(_, a, _)| a).collect();
                let names = match self.jitdumps.get(&pid) {
                    Some(path) => jitdump_names_for(path, &sampled).or_else(|| {
                        let whole = read_jitdump(path)?;
                        Some(
                            sampled
                                .iter()
                                .filter_map(|&a| whole.lookup(a).map(|(s, size, n)| (a, (s, size, n.to_string()))))
                                .collect(),
                        )
                    }),
                    None => jitmap::names_for(pid, &sampled),
                };
                if let Some(names) = names {
                    streamed.insert(pid, names);
                }
            }
        }
        // Sorted by (object, start) at the end; the first symbol for a start is kept.
        // At most one per sampled address: room made once, not grown by doubling.
        let mut symbols: Vec<JitSymbol> = Vec::with_capacity(addresses.len());
        // Unnamed addresses per (object, place number), in address order.
        let mut unnamed: BTreeMap<(u32, u32), Vec<u64>> = BTreeMap::new();
        // What names one object's addresses (they come object by object): its map held
        // whole, or the names read for them.
        let mut current = None;
        for (object, address, place) in addresses {
            let (held, read) = match current {
                Some((o, held, read)) if o == object => (held, read),
                _ => {
                    let pid = pid_of.get(&object).copied().unwrap_or_default();
                    let found = (self.maps.get(&pid), streamed.get(&pid));
                    current = Some((object, found.0, found.1));
                    found
                }
            };
            let named = match held {
                Some(map) => map.as_ref().and_then(|m| m.lookup(address)),
                None => read.and_then(|n| n.get(&address)).map(|(s, size, name)| (*s, *size, name.as_str())),
            };
            match named {
                Some((start, size, name)) => {
                    // Consecutive addresses of one piece of code name it once.
                    if symbols.last().is_none_or(|last| (last.object, last.start) != (object, start)) {
                        symbols.push(JitSymbol {
                            object,
                            start,
                            size,
                            name: name.to_string(),
                            unnamed: false,
                            code: None,
                        });
                    }
                }
                None => unnamed.entry((object, place)).or_default().push(address),
            }
        }
        for ((object, place), addresses) in unnamed {
            let place = &self.place_list[place as usize];
            let mut run_start = addresses[0];
            let mut last = addresses[0];
            for &address in addresses[1..].iter().chain(std::iter::once(&u64::MAX)) {
                if address != u64::MAX && address - last <= REGION_GAP {
                    last = address;
                    continue;
                }
                let name = if place.anonymous {
                    region_name("[anon ", run_start, "]")
                } else {
                    region_name(&format!("{}+", basename(&place.path)), run_start - place.start + place.pgoff, "")
                };
                symbols.push(JitSymbol {
                    object,
                    start: run_start,
                    size: last - run_start + 1,
                    name,
                    unnamed: true,
                    code: None,
                });
                run_start = address;
                last = address;
            }
        }
        // Of symbols with the same start, the named one stays, else the first by name
        // (sorted in place: a stable sort's buffer of 1.2 M symbols was a peak of its own).
        symbols.sort_unstable_by(|a, b| {
            (a.object, a.start, a.unnamed).cmp(&(b.object, b.start, b.unnamed)).then_with(|| a.name.cmp(&b.name))
        });
        symbols.dedup_by_key(|j| (j.object, j.start));
        symbols.shrink_to_fit();
        symbols
    }
}

/// `before`, `address` in hex with `0x`, then `after`, in a string of exactly that
/// length: `format!` guessed short, grew and left room (two allocations and 28 bytes for
/// 18, a quarter of the converter's end at 1.2 M unnamed regions).
fn region_name(before: &str, address: u64, after: &str) -> String {
    use std::fmt::Write;
    let digits = (64 - address.leading_zeros()).div_ceil(4).max(1) as usize;
    let mut name = String::with_capacity(before.len() + 2 + digits + after.len());
    name.push_str(before);
    let _ = write!(name, "{address:#x}");
    name.push_str(after);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names_are_made_at_their_exact_length() {
        for (address, hex) in
            [(0, "0x0"), (0xf, "0xf"), (0x10, "0x10"), (0x100000004, "0x100000004"), (u64::MAX, "0xffffffffffffffff")]
        {
            let name = region_name("[anon ", address, "]");
            assert_eq!(name, format!("[anon {hex}]"));
            assert_eq!(name.capacity(), name.len(), "{name}");
        }
        assert_eq!(region_name("sbcl.core+", 0x2a, ""), "sbcl.core+0x2a");
    }

    #[test]
    fn mappings_are_told_apart_by_their_contents() {
        let mut c = Classifier::default();
        assert_eq!(c.contents("//anon"), Contents::Runtime { anonymous: true });
        assert_eq!(c.contents("[anon:v8]"), Contents::Runtime { anonymous: true });
        assert_eq!(c.contents("[vdso]"), Contents::Object);
        assert_eq!(c.contents("/memfd:jit (deleted)"), Contents::Runtime { anonymous: false });
        let exe = std::env::current_exe().unwrap();
        assert_eq!(c.contents(exe.to_str().unwrap()), Contents::Object);
        let dir = tempfile::tempdir().unwrap();
        let core = dir.path().join("sbcl.core");
        std::fs::write(&core, b"CORE and compiled code").unwrap();
        assert_eq!(c.contents(core.to_str().unwrap()), Contents::Runtime { anonymous: false });
        assert_eq!(c.contents("/nonexistent/lib.so"), Contents::Object, "left to the symbolizer");
    }
}
