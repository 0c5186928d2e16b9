//! Where each sampled frame of a profile is in its object, for the viewers' formats
//! (pprof, the Firefox Profiler, speedscope): the object's mapping (address range, file
//! offset, path, build ID), the frame's address, and its source lines with the
//! functions inlined there — what those viewers need to open source and assembly.
//!
//! A profile keeps file offsets, not the addresses its objects were loaded at, so each
//! object gets a load base of its own here: the addresses an object's file states
//! (SVMA, what objdump and `perflab annotate` print) plus `index << 36`, the program's
//! first mapping at base 0. Mappings then never overlap (pprof finds an address's
//! function by the address alone), and `address - start + file_offset` is the file
//! offset, as pprof and the Firefox Profiler compute it.

use super::format::{Profile, Space};
use super::jitmap;
use super::kernel;
use super::symbolize::{basename, normalize, ObjectInfo, Symbolizer};
use std::collections::HashMap;
use std::rc::Rc;

/// The kernel's mapping's name, as perf and pprof spell it.
pub const KERNEL_MAPPING: &str = "[kernel.kallsyms]";

/// One mapped range of an object.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// The object's path (as recorded), or `[kernel.kallsyms]`.
    pub path: String,
    /// First address of the range.
    pub start: u64,
    /// One past its last address.
    pub limit: u64,
    /// The file offset `start` maps.
    pub file_offset: u64,
    /// The GNU build ID in lower-case hex, when the object has one.
    pub build_id: Option<String>,
    /// The object's image base (its lowest PT_LOAD address, 0 for most libraries and
    /// PIEs) plus its load base: relative addresses count from it.
    pub image_base: u64,
    /// True when the object was read (an ELF file on this machine): its symbols are in
    /// the profile.
    pub read: bool,
    /// True when the object has DWARF: lines and inlined functions are in the profile.
    pub has_lines: bool,
}

/// One source level at an address: the enclosing function's, or an inlined one's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceLine {
    /// The inlined function's name (normalised as the call graph names it); None for
    /// the enclosing function, which the call graph names.
    pub inlined: Option<String>,
    /// The source file, as DWARF names it.
    pub file: Option<String>,
    /// The line in it.
    pub line: Option<u32>,
    /// The line the function starts at: DWARF's declaration line of it, else (for the
    /// enclosing function) the line of its entry address; None when unknown.
    pub start_line: Option<u32>,
}

/// Where one frame is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Site {
    /// Index into [`Sites::mappings`]; None for addresses outside every object.
    pub mapping: Option<usize>,
    /// The address (with the object's load base).
    pub address: u64,
    /// The enclosing function's start address and size (with the load base), when a
    /// symbol covers the address.
    pub function: Option<(u64, u64)>,
    /// Source levels, innermost first: the inlined functions (as many as the call
    /// graph shows), then the enclosing function.
    pub lines: Vec<SourceLine>,
}

/// The sites of a profile's frames and samples.
#[derive(Debug, Default)]
pub struct Sites {
    /// Every mapping a site is in.
    pub mappings: Vec<Mapping>,
    /// Per entry of the profile's `frames`.
    pub frames: Vec<Site>,
    /// Per entry of the profile's `samples`.
    pub samples: Vec<Site>,
}

/// How far apart objects are placed (64 GiB: more than any object's extent).
const LOAD_STRIDE_BITS: u32 = 36;

/// The sites of `profile`'s frames and samples, each distinct one resolved once, with
/// the objects `symbolizer` has loaded (or loads).
pub fn of(profile: &Profile, symbolizer: &mut Symbolizer) -> Sites {
    let mut finder = Finder {
        profile,
        symbolizer,
        bases: HashMap::new(),
        mappings: Vec::new(),
        mapping_ids: HashMap::new(),
        cache: HashMap::new(),
        start_lines: HashMap::new(),
        decl_lines: HashMap::new(),
    };
    // The program gets base 0, so its addresses read as objdump prints them.
    let program = profile.command.first().map(|c| basename(c)).unwrap_or("");
    let mut order: Vec<u32> = (0..profile.objects.len() as u32).collect();
    order.sort_by_key(|&i| basename(&profile.objects[i as usize].path) != program);
    for (k, object) in order.into_iter().enumerate() {
        finder.bases.insert(object, (k as u64) << LOAD_STRIDE_BITS);
    }
    let frames = profile.frames.iter().map(|f| finder.site(f.space, f.object, f.offset)).collect();
    let samples = profile.samples.iter().map(|s| finder.site(s.space, s.object, s.offset)).collect();
    let mut mappings = finder.mappings;
    // Ranges of unread objects and the kernel were grown as addresses came.
    for m in &mut mappings {
        m.limit = m.limit.max(m.start + 1);
    }
    Sites { mappings, frames, samples }
}

struct Finder<'a> {
    profile: &'a Profile,
    symbolizer: &'a mut Symbolizer,
    /// Load base per object index.
    bases: HashMap<u32, u64>,
    mappings: Vec<Mapping>,
    /// (object index or u32::MAX for the kernel, segment file offset) → mapping index.
    mapping_ids: HashMap<(u32, u64), usize>,
    cache: HashMap<(Space, Option<u32>, u64), Site>,
    /// (object index, function name) → its start line.
    start_lines: HashMap<(u32, String), Option<u32>>,
    /// (object index, compilation unit) → its subprograms' declaration lines by name.
    decl_lines: HashMap<(u32, usize), HashMap<String, u32>>,
}

impl Finder<'_> {
    fn site(&mut self, space: Space, object: Option<u32>, offset: u64) -> Site {
        if let Some(site) = self.cache.get(&(space, object, offset)) {
            return site.clone();
        }
        let site = match (space, object) {
            (Space::User, Some(object)) => self.user_site(object, offset),
            (Space::Kernel, _) => {
                let mapping = self.grown_mapping((u32::MAX, 0), KERNEL_MAPPING, 0, offset);
                Site { mapping: Some(mapping), address: offset, function: None, lines: vec![SourceLine::default()] }
            }
            _ => Site { lines: vec![SourceLine::default()], ..Site::default() },
        };
        self.cache.insert((space, object, offset), site.clone());
        site
    }

    /// A user frame: in its object's segment when the object can be read, else at its
    /// file offset past the object's base.
    fn user_site(&mut self, object: u32, offset: u64) -> Site {
        let path = self.profile.objects[object as usize].path.clone();
        let base = self.bases.get(&object).copied().unwrap_or(0);
        let info = if jitmap::is_runtime_object(&path) || kernel::is_kernel_object(&path) {
            None
        } else {
            self.symbolizer.object(&path)
        };
        let located = info.as_ref().and_then(|o| Some((o.svma(offset)?, o)));
        let Some((svma, info)) = located else {
            let mapping = self.grown_mapping((object, 0), &path, base, base + offset);
            return Site {
                mapping: Some(mapping),
                address: base + offset,
                function: None,
                lines: vec![SourceLine::default()],
            };
        };
        let info = Rc::clone(info);
        let (seg_offset, seg_size, seg_addr) = info.segment_of(svma).unwrap_or((offset, 1, svma));
        let mapping = *self.mapping_ids.entry((object, seg_offset)).or_insert_with(|| {
            self.mappings.push(Mapping {
                path: path.clone(),
                start: base + seg_addr,
                limit: base + seg_addr + seg_size,
                file_offset: seg_offset,
                build_id: info.build_id.as_ref().map(|id| id.iter().map(|b| format!("{b:02x}")).collect()),
                image_base: base + info.image_base(),
                read: true,
                has_lines: info.has_debug_info(),
            });
            self.mappings.len() - 1
        });
        let symbol = info.symbol_at(svma).map(|s| (s.start, info.symbol_len(s)));
        let mut frames = info.frames(svma);
        let enclosing = frames.pop();
        let enclosing_name = enclosing.as_ref().and_then(|f| f.function.as_deref());
        let enclosing_start =
            self.enclosing_start_line(object, &info, svma, enclosing_name, symbol.map(|(start, _)| start));
        let mut lines: Vec<SourceLine> = frames
            .into_iter()
            .filter_map(|f| {
                let name = f.function?;
                let start_line = self.start_line(object, &info, svma, &name);
                Some(SourceLine { inlined: Some(normalize(&name)), file: f.file, line: f.line, start_line })
            })
            .collect();
        lines.push(match enclosing {
            Some(f) => SourceLine { inlined: None, file: f.file, line: f.line, start_line: enclosing_start },
            None => SourceLine::default(),
        });
        Site {
            mapping: Some(mapping),
            address: base + svma,
            function: symbol.map(|(start, len)| (base + start, len)),
            lines,
        }
    }

    /// The mapping `key`, grown to hold `address` (objects perflab cannot read, the
    /// kernel): its range is the sampled addresses' span.
    fn grown_mapping(&mut self, key: (u32, u64), path: &str, base: u64, address: u64) -> usize {
        let i = *self.mapping_ids.entry(key).or_insert_with(|| {
            self.mappings.push(Mapping {
                path: path.to_string(),
                start: address,
                limit: address + 1,
                file_offset: address - base,
                build_id: None,
                image_base: base,
                read: false,
                has_lines: false,
            });
            self.mappings.len() - 1
        });
        let m = &mut self.mappings[i];
        if address < m.start {
            m.file_offset -= m.start - address;
            m.start = address;
        }
        m.limit = m.limit.max(address.saturating_add(1));
        i
    }

    /// A function's start line: its declaration line in the compilation unit at `svma`.
    /// (Looking for an out-of-line copy's entry instead means demangling every symbol
    /// of the object per name: minutes for a large Rust binary.)
    fn start_line(&mut self, object: u32, info: &ObjectInfo, svma: u64, name: &str) -> Option<u32> {
        if let Some(&line) = self.start_lines.get(&(object, name.to_string())) {
            return line;
        }
        // Each unit's declarations are read once: a unit can have many sampled functions.
        let declared = info.unit_at(svma).and_then(|unit| {
            let lines =
                self.decl_lines.entry((object, unit)).or_insert_with(|| info.decl_lines(svma).unwrap_or_default());
            lines.get(name).copied()
        });
        self.start_lines.insert((object, name.to_string()), declared);
        declared
    }

    /// The enclosing function's start line: its declaration line, else that of its entry.
    fn enclosing_start_line(
        &mut self,
        object: u32,
        info: &ObjectInfo,
        svma: u64,
        name: Option<&str>,
        start: Option<u64>,
    ) -> Option<u32> {
        name.and_then(|name| self.start_line(object, info, svma, name)).or_else(|| entry_line(info, start?))
    }
}

/// The line of a function's entry address, in the function itself (not in code inlined
/// at its first instruction).
fn entry_line(info: &ObjectInfo, start: u64) -> Option<u32> {
    info.frames(start).pop().and_then(|f| f.line)
}
