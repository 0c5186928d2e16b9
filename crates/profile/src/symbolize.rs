//! From (object file, file offset) to names: ELF symtab/dynsym and DWARF (functions,
//! inlined frames, source lines) through object + gimli + addr2line; PIE-aware (file
//! offset → SVMA via the covering PT_LOAD); separate debug files found by build-id or
//! .gnu_debuglink under /usr/lib/debug; names demangled (Rust, C++) and normalised so
//! two builds of one program can be matched. Objects are loaded once and cached.

use super::error::ObjectError;
use super::format::KernelSymbol;
use super::kernel;
use addr2line::Context;
use gimli::{EndianRcSlice, RunTimeEndian};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

type Dwarf = Context<EndianRcSlice<RunTimeEndian>>;

/// One function symbol, addresses as stated in the ELF file (SVMA). The name stays
/// in the mapped file (as a byte range) and is demangled on demand: big libraries have
/// hundreds of thousands of symbols, and copying and demangling them all up front
/// dominated report time.
#[derive(Debug, Clone)]
pub struct FunctionSymbol {
    /// Its address as stated in the ELF file (SVMA).
    pub start: u64,
    /// Bytes of code, as the symbol table states it.
    pub size: u64,
    /// Byte range of the name in the file; None for a function known only from its
    /// .eh_frame unwind entry (stripped code), named `object+0xFILE_OFFSET`.
    name: Option<(usize, usize)>,
    /// The name is in the separate debug file (a stripped object's .symtab lives there).
    in_debug_file: bool,
}

/// One frame of the inline stack at an address.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The function's name, when DWARF gives one.
    pub function: Option<String>,
    /// Source file, when known.
    pub file: Option<String>,
    /// Source line, when known.
    pub line: Option<u32>,
}

/// A loaded object with its symbols and debug info.
pub struct ObjectInfo {
    /// The object's path.
    pub path: String,
    data: memmap2::Mmap,
    /// PT_LOAD segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
    symbols: Vec<FunctionSymbol>,
    dwarf: Option<Dwarf>,
    /// The separate debug file, when names or DWARF came from it.
    debug_data: Option<memmap2::Mmap>,
    /// Where the debug information came from when it was fetched (debuginfod), or why
    /// a fetch failed: for the user to know.
    pub(crate) debug_note: Option<String>,
    /// When the object lacks names or source lines and no debug file was found: where
    /// one was looked for (said when samples fall where it would have helped).
    pub(crate) debug_searched: Option<String>,
    pub(crate) is_64: bool,
    /// The GNU build ID (.note.gnu.build-id), which viewers match debug files and
    /// binaries by.
    pub build_id: Option<Vec<u8>>,
    /// Whether it is a fixed-address executable (ET_EXEC) rather than position-independent.
    pub fixed_address: bool,
}

impl ObjectInfo {
    /// Load and index an object; the error is one line naming what is wrong with it.
    pub fn load(path: &str) -> Result<ObjectInfo, ObjectError> {
        let file = perflab_sys::files::open_regular(path)
            .map_err(|source| ObjectError::Open { path: path.to_string(), source })?;
        // SAFETY: the file is only read; a concurrent truncation could fault, as for every
        // tool that maps binaries (perf, addr2line), and is accepted.
        let data = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|source| ObjectError::Map { path: path.to_string(), source })?;
        let elf = object::File::parse(&*data)
            .map_err(|source| ObjectError::NotAnObject { path: path.to_string(), source })?;
        let segments: Vec<(u64, u64, u64)> = elf
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        let own_dwarf = load_dwarf(&elf);
        let stripped = elf.symbols().next().is_none();
        // A stripped object's names and lines are in its debug file: on this disk, or
        // from a debuginfod server.
        let mut debug_note = None;
        let mut debug_searched = None;
        let mut debug_path = None;
        let debug_data = if own_dwarf.is_none() || stripped {
            let (file, note) = find_debug_file(&elf, Path::new(path));
            debug_path = file.clone();
            if file.is_none() {
                debug_searched = Some(debug_search(&elf, Path::new(path), note.is_some()));
            }
            debug_note = note;
            file.and_then(|debug| {
                let f = perflab_sys::files::open_regular(&debug).ok()?;
                // SAFETY: as above.
                unsafe { memmap2::Mmap::map(&f) }.ok()
            })
        } else {
            None
        };
        // A debug file whose symbol table is damaged (a name blank or not text) would
        // blank the names of the functions it covers; its DWARF is no more to be trusted:
        // none of it is used, the object keeps its own names, and the note says so.
        let damage =
            debug_data.as_ref().and_then(|d| crate::symbol_damage::damaged_symbols(&object::File::parse(&**d).ok()?));
        let debug_data = match damage {
            Some(why) => {
                let refused = format!("it was refused ({why}): {} keeps its own names", basename(path));
                let file = debug_path.as_deref().unwrap_or(Path::new("?")).display();
                debug_note = Some(match debug_note {
                    Some(note) => format!("{note}; {refused}"),
                    None => format!("the debug file {file} of {path} was found, but {refused}"),
                });
                None
            }
            None => debug_data,
        };
        let debug_elf = debug_data.as_ref().and_then(|d| object::File::parse(&**d).ok());
        let mut symbols: Vec<FunctionSymbol> = function_symbols(&elf, &data, false);
        if stripped {
            if let Some(debug) = &debug_elf {
                symbols.extend(function_symbols(debug, debug_data.as_deref().unwrap_or_default(), true));
            }
        }
        // Functions without a symbol (stripped binaries, hidden functions of libraries
        // that keep only .dynsym) still have unwind entries: use them as boundaries so
        // their samples group per function instead of per address.
        let named: std::collections::HashSet<u64> = symbols.iter().map(|s| s.start).collect();
        symbols.extend(
            eh_frame_functions(&elf)
                .into_iter()
                .filter(|(start, size)| *size > 0 && !named.contains(start))
                .map(|(start, size)| FunctionSymbol { start, size, name: None, in_debug_file: false }),
        );
        // Per start address keep the named symbol, then the largest.
        symbols.sort_by(|a, b| {
            a.start.cmp(&b.start).then(b.name.is_some().cmp(&a.name.is_some())).then(b.size.cmp(&a.size))
        });
        symbols.dedup_by_key(|s| s.start);
        let dwarf = own_dwarf.or_else(|| debug_elf.as_ref().and_then(load_dwarf));
        let is_64 = elf.is_64();
        let build_id = elf.build_id().ok().flatten().map(<[u8]>::to_vec);
        let fixed_address = elf.kind() == object::ObjectKind::Executable;
        drop(elf);
        drop(debug_elf);
        Ok(ObjectInfo {
            path: path.to_string(),
            data,
            segments,
            symbols,
            dwarf,
            debug_data,
            debug_note,
            debug_searched,
            is_64,
            build_id,
            fixed_address,
        })
    }

    /// SVMA for a file offset: find the PT_LOAD that maps that offset.
    pub fn svma(&self, file_offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(off, size, _)| file_offset >= *off && file_offset < off + size)
            .map(|(off, _, addr)| addr + (file_offset - off))
    }

    /// The PT_LOAD segment mapping `svma`: (file offset, file size, virtual address).
    pub fn segment_of(&self, svma: u64) -> Option<(u64, u64, u64)> {
        self.segments.iter().copied().find(|(_, size, addr)| svma >= *addr && svma < addr + size)
    }

    /// The lowest address a PT_LOAD segment is linked at: the image base that relative
    /// addresses (the Firefox Profiler's, Breakpad's) count from.
    pub fn image_base(&self) -> u64 {
        self.segments.iter().map(|s| s.2).min().unwrap_or(0)
    }

    /// Inverse of [`svma`](Self::svma), for mapping sample offsets onto disassembly.
    pub(crate) fn file_offset(&self, svma: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(_, size, addr)| svma >= *addr && svma < addr + size)
            .map(|(off, _, addr)| off + (svma - addr))
    }

    /// Bytes of the file mapped at `start..start+len` (SVMA), for disassembly.
    pub fn bytes(&self, start: u64, len: u64) -> Option<&[u8]> {
        let off = self.file_offset(start)? as usize;
        let end = off.checked_add(len as usize)?.min(self.data.len());
        self.data.get(off..end)
    }

    /// The function symbol covering `svma`; zero-sized symbols extend to the next one.
    pub fn symbol_at(&self, svma: u64) -> Option<&FunctionSymbol> {
        let i = self.symbols.partition_point(|s| s.start <= svma).checked_sub(1)?;
        let sym = &self.symbols[i];
        let end =
            if sym.size > 0 { sym.start + sym.size } else { self.symbols.get(i + 1).map_or(u64::MAX, |n| n.start) };
        (svma < end).then_some(sym)
    }

    /// The demangled (not normalised) name of a symbol.
    pub fn symbol_name(&self, sym: &FunctionSymbol) -> String {
        match sym.name {
            Some((offset, len)) => {
                let data = if sym.in_debug_file { self.debug_data.as_deref().unwrap_or_default() } else { &self.data };
                let bytes = data.get(offset..offset + len).unwrap_or_default();
                demangle(&String::from_utf8_lossy(bytes))
            }
            None => format!("{}+{:#x}", basename(&self.path), self.file_offset(sym.start).unwrap_or(sym.start)),
        }
    }

    /// The best name of a function: its symbol, else DWARF's name for its start, else
    /// `object+0xFILE_OFFSET`.
    pub(crate) fn function_name(&self, sym: &FunctionSymbol) -> String {
        if sym.name.is_none() {
            if let Some(name) = self.frames(sym.start).into_iter().last().and_then(|f| f.function) {
                return name;
            }
        }
        self.symbol_name(sym)
    }

    /// Symbols whose demangled or normalised name equals `name`.
    pub fn symbols_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a FunctionSymbol> + 'a {
        self.symbols.iter().filter(move |s| {
            let full = self.symbol_name(s);
            full == name || normalize(&full) == name
        })
    }

    /// Starts of the symbols in `range` (SVMAs): instruction starts for the disassembler.
    pub(crate) fn symbol_starts(&self, range: std::ops::Range<u64>) -> impl Iterator<Item = u64> + '_ {
        let first = self.symbols.partition_point(|s| s.start < range.start);
        self.symbols[first..].iter().map(|s| s.start).take_while(move |a| *a < range.end)
    }

    /// The extent of a symbol (size, or up to the next symbol for size-0 symbols).
    pub fn symbol_len(&self, sym: &FunctionSymbol) -> u64 {
        if sym.size > 0 {
            return sym.size;
        }
        let i = self.symbols.partition_point(|s| s.start <= sym.start);
        self.symbols.get(i).map_or(256, |n| n.start - sym.start).min(1 << 20)
    }

    /// Inline stack at `svma`, innermost first; empty without DWARF.
    pub fn frames(&self, svma: u64) -> Vec<Frame> {
        let Some(ctx) = &self.dwarf else { return Vec::new() };
        let mut out = Vec::new();
        if let Ok(mut iter) = ctx.find_frames(svma).skip_all_loads() {
            while let Ok(Some(frame)) = iter.next() {
                // A blank name (damaged DWARF) is no name: the symbol's stays.
                let function = frame
                    .function
                    .as_ref()
                    .and_then(|f| f.raw_name().ok())
                    .filter(|n| !n.trim().is_empty())
                    .map(|n| demangle(&n));
                let (file, line) = match &frame.location {
                    Some(loc) => (loc.file.map(same_path), loc.line),
                    None => (None, None),
                };
                out.push(Frame { function, file, line });
            }
        }
        out
    }

    /// The declaration lines (DW_AT_decl_line) of the subprograms of the compilation
    /// unit holding `svma`, by demangled linkage name and by name; None without DWARF
    /// there.
    pub fn decl_lines(&self, svma: u64) -> Option<HashMap<String, u32>> {
        let unit = self.dwarf.as_ref()?.find_dwarf_and_unit(svma).skip_all_loads()?;
        let mut lines = HashMap::new();
        let mut entries = unit.entries();
        while let Ok(Some((_, entry))) = entries.next_dfs() {
            if entry.tag() != gimli::DW_TAG_subprogram {
                continue;
            }
            let Some(line) = entry.attr(gimli::DW_AT_decl_line).ok().flatten().and_then(|a| a.udata_value()) else {
                continue;
            };
            for at in [gimli::DW_AT_linkage_name, gimli::DW_AT_name] {
                let name = entry.attr_value(at).ok().flatten().and_then(|value| unit.attr_string(value).ok());
                if let (Some(name), Ok(line)) = (name, u32::try_from(line)) {
                    if let Ok(name) = gimli::Reader::to_string_lossy(&name) {
                        lines.entry(demangle(&name)).or_insert(line);
                    }
                }
            }
        }
        Some(lines)
    }

    /// The offset of the compilation unit holding `svma`: which [`decl_lines`](Self::decl_lines)
    /// a caller has read already.
    pub fn unit_at(&self, svma: u64) -> Option<usize> {
        let unit = self.dwarf.as_ref()?.find_dwarf_and_unit(svma).skip_all_loads()?;
        Some(match unit.header.offset() {
            gimli::UnitSectionOffset::DebugInfoOffset(o) => o.0,
            gimli::UnitSectionOffset::DebugTypesOffset(o) => o.0,
        })
    }

    /// Source file and line of `svma` (the innermost inlined location).
    pub fn location(&self, svma: u64) -> Option<(String, u32)> {
        let ctx = self.dwarf.as_ref()?;
        let loc = ctx.find_location(svma).ok()??;
        Some((same_path(loc.file?), loc.line?))
    }

    /// True when DWARF debug info was found (in the object or its separate debug file).
    pub fn has_debug_info(&self) -> bool {
        self.dwarf.is_some()
    }
}

/// A source path as DWARF gives it with each `/./` made `/`: glibc's objects name one
/// header both `./elf/./get-dynamic-info.h` and `./elf/get-dynamic-info.h`, which split
/// its lines into two rows (`--by line`, the exports' per-line counts). Only `.` goes:
/// `..` after a symlink is not the parent directory.
fn same_path(path: &str) -> String {
    let mut out = path.to_string();
    while let Some(i) = out.find("/./") {
        out.replace_range(i..i + 2, "");
    }
    out
}

/// The defined function symbols of `elf` (.symtab and .dynsym), names as byte ranges of
/// `data` (the mapped file `elf` was parsed from).
fn function_symbols(elf: &object::File, data: &[u8], in_debug_file: bool) -> Vec<FunctionSymbol> {
    let base = data.as_ptr() as usize;
    elf.symbols()
        .chain(elf.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0 && s.is_definition())
        .filter_map(|s| {
            let name = s.name_bytes().ok()?;
            // object borrows names from `data`, so the offset is within the mapping.
            let name_offset = (name.as_ptr() as usize).checked_sub(base)?;
            Some(FunctionSymbol {
                start: s.address(),
                size: s.size(),
                name: Some((name_offset, name.len())),
                in_debug_file,
            })
        })
        .collect()
}

/// The separate debug file of an object: on this disk ([`separate_debug_file`]), else
/// from the debuginfod servers of `DEBUGINFOD_URLS` by build-id; with a note saying
/// where it came from when it was fetched, or why fetching failed.
fn find_debug_file(elf: &object::File, path: &Path) -> (Option<PathBuf>, Option<String>) {
    if let Some(local) = separate_debug_file(elf, path) {
        return (Some(local), None);
    }
    let Ok(Some(build_id)) = elf.build_id() else { return (None, None) };
    let name = path.display();
    match super::debuginfod::debuginfo(build_id) {
        super::debuginfod::Fetched::Downloaded { path: file, url } => {
            let note = format!("debug info for {name} fetched from debuginfod: {url} (cached as {})", file.display());
            (Some(file), Some(note))
        }
        super::debuginfod::Fetched::Cached(file) => {
            let note = format!("debug info for {name} from the debuginfod cache: {}", file.display());
            (Some(file), Some(note))
        }
        super::debuginfod::Fetched::Failed(why) => {
            (None, Some(format!("no debug info for {name}: asking debuginfod failed: {why}")))
        }
        super::debuginfod::Fetched::NotFound | super::debuginfod::Fetched::Disabled => (None, None),
    }
}

/// Where the debug file of an object was looked for, for a note when none was found:
/// the build-id path and the debuglink places [`separate_debug_file`] tries, and
/// debuginfod — unset, or which servers had nothing (a failed request has its own note,
/// `failed_said`).
fn debug_search(elf: &object::File, path: &Path, failed_said: bool) -> String {
    let mut places = Vec::new();
    let hex = elf.build_id().ok().flatten().map(|id| id.iter().map(|b| format!("{b:02x}")).collect::<String>());
    if let Some(hex) = hex.as_ref().filter(|h| h.len() > 2) {
        places.push(format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]));
    }
    if let Ok(Some((name, _))) = elf.gnu_debuglink() {
        let name = String::from_utf8_lossy(name);
        let dir = path.parent().map_or_else(String::new, |d| d.display().to_string());
        places.push(format!("{name} in {dir}, {dir}/.debug and /usr/lib/debug{dir}"));
    }
    let config = super::debuginfod::Config::from_env();
    let servers = if failed_said {
        None
    } else if config.urls.is_empty() {
        Some(
            "DEBUGINFOD_URLS is unset, so no debuginfod server was asked (Debian's: https://debuginfod.debian.net)"
                .to_string(),
        )
    } else {
        match &hex {
            Some(hex) => Some(format!(
                "the debuginfod servers of DEBUGINFOD_URLS ({}) have none for build-id {hex}",
                config.urls.join(" ")
            )),
            None => Some("it has no build-id to ask debuginfod with".to_string()),
        }
    };
    let looked = if places.is_empty() {
        "it names no debug file (no build-id, no debuglink)".to_string()
    } else {
        format!("looked for {}", places.join(" and "))
    };
    let mut text = format!("no debug info found for {}: {looked}", path.display());
    if let Some(servers) = servers {
        text += &format!("; {servers}");
    }
    text + "; install its debug package (-dbgsym on Debian and Ubuntu, -debuginfo on Fedora)"
}

/// (start, length) of every function described by an FDE in .eh_frame.
fn eh_frame_functions(elf: &object::File) -> Vec<(u64, u64)> {
    use gimli::UnwindSection;
    let Some(section) = elf.section_by_name(".eh_frame") else { return Vec::new() };
    let Ok(data) = section.data() else { return Vec::new() };
    let endian = if elf.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
    let eh_frame = gimli::EhFrame::new(data, endian);
    let mut bases = gimli::BaseAddresses::default().set_eh_frame(section.address());
    if let Some(text) = elf.section_by_name(".text") {
        bases = bases.set_text(text.address());
    }
    if let Some(got) = elf.section_by_name(".got") {
        bases = bases.set_got(got.address());
    }
    let mut out = Vec::new();
    let mut entries = eh_frame.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        if let gimli::CieOrFde::Fde(partial) = entry {
            if let Ok(fde) = partial.parse(|section, bases, offset| section.cie_from_offset(bases, offset)) {
                out.push((fde.initial_address(), fde.len()));
            }
        }
    }
    out
}

fn load_dwarf(elf: &object::File) -> Option<Dwarf> {
    elf.section_by_name(".debug_info")?;
    let endian = if elf.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
    let load = |id: gimli::SectionId| -> Result<EndianRcSlice<RunTimeEndian>, gimli::Error> {
        let data = elf
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .map(|d| Rc::<[u8]>::from(&*d))
            .unwrap_or_else(|| Rc::from(&[][..]));
        Ok(EndianRcSlice::new(data, endian))
    };
    let dwarf = gimli::Dwarf::load(load).ok()?;
    Context::from_dwarf(dwarf).ok()
}

/// Debug files per the GDB conventions: /usr/lib/debug/.build-id/ab/cdef.debug, then
/// the .gnu_debuglink name next to the object, in .debug/, and under /usr/lib/debug.
pub(crate) fn separate_debug_file(elf: &object::File, path: &Path) -> Option<PathBuf> {
    let root = Path::new("/usr/lib/debug");
    if let Ok(Some(id)) = elf.build_id() {
        if id.len() > 1 {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            let candidate = root.join(".build-id").join(&hex[..2]).join(format!("{}.debug", &hex[2..]));
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    if let Ok(Some((name, _crc))) = elf.gnu_debuglink() {
        let name = std::str::from_utf8(name).ok()?;
        let dir = path.parent()?;
        let rel = dir.strip_prefix("/").unwrap_or(dir);
        for candidate in [dir.join(name), dir.join(".debug").join(name), root.join(rel).join(name)] {
            if candidate.is_file() && candidate != path {
                return Some(candidate);
            }
        }
    }
    None
}

/// Demangle Rust (legacy and v0, hash dropped) and Itanium C++ names; others unchanged.
pub fn demangle(raw: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(raw) {
        return format!("{d:#}");
    }
    if raw.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(raw) {
            if let Ok(text) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                // cpp_demangle prints an empty template parameter pack as a trailing
                // ", " (`AnalysisManager<llvm::Function, >`); c++filt omits it.
                return text.replace(", >", ">");
            }
        }
    }
    raw.to_string()
}

/// Strip compiler clone suffixes (`.isra.0`, `.part.1`, `.cold`, `.constprop.0`,
/// `.lto_priv.0`, `[clone .cold]`) and Rust hashes (`::h0123456789abcdef`) so one
/// function keeps one name across builds.
pub fn normalize(name: &str) -> String {
    let mut s = name.trim();
    loop {
        let before = s;
        if let Some(i) = s.find(" [clone ") {
            s = &s[..i];
        }
        if let Some(rest) = s.rfind("::h").map(|i| (i, &s[i + 3..])) {
            if rest.1.len() == 16 && rest.1.chars().all(|c| c.is_ascii_hexdigit()) {
                s = &s[..rest.0];
            }
        }
        for suffix in [".cold", ".isra", ".part", ".constprop", ".lto_priv", ".localalias", ".llvm"] {
            if let Some(i) = s.rfind(suffix) {
                let tail = &s[i + suffix.len()..];
                if i > 0 && tail.chars().all(|c| c.is_ascii_digit() || c == '.') {
                    s = &s[..i];
                }
            }
        }
        if s == before {
            return s.to_string();
        }
    }
}

/// The symbolised form of one sampled location.
#[derive(Debug, Clone)]
pub struct Location {
    /// Object path (`[kernel]`, `[unknown]`, `[vdso]` for special cases).
    pub object: String,
    /// Normalised, demangled function name, or `object+0xoffset` when unknown.
    pub function: String,
    /// Innermost source location, when DWARF has one.
    pub file: Option<String>,
    /// Innermost source line, when DWARF has one.
    pub line: Option<u32>,
}

impl Symbolizer {
    /// Where the debug information of `path` was looked for when none was found (the
    /// object lacks names or lines); None when found, not needed, or not loaded.
    pub(crate) fn debug_searched(&mut self, path: &str) -> Option<String> {
        self.object(path)?.debug_searched.clone()
    }
}

/// Caches loaded objects and resolved offsets.
#[derive(Default)]
pub struct Symbolizer {
    objects: HashMap<String, Option<Rc<ObjectInfo>>>,
    /// Load problems, reported once per object.
    pub warnings: Vec<String>,
}

impl Symbolizer {
    /// The object at `path`, loaded once and cached; None when it cannot be read (a warning says why).
    pub fn object(&mut self, path: &str) -> Option<Rc<ObjectInfo>> {
        if let Some(cached) = self.objects.get(path) {
            return cached.clone();
        }
        // Special mappings and JIT perf maps (named from the profile) are no object files.
        let loaded = if path.starts_with('[') || path.starts_with("//anon") || super::jitmap::is_runtime_object(path) {
            None
        } else {
            match ObjectInfo::load(path) {
                Ok(o) => {
                    self.warnings.extend(o.debug_note.clone());
                    Some(Rc::new(o))
                }
                Err(e) => {
                    self.warnings.push(e.to_string());
                    None
                }
            }
        };
        self.objects.insert(path.to_string(), loaded.clone());
        loaded
    }

    /// Resolve a file offset inside `path`.
    pub fn resolve(&mut self, path: &str, file_offset: u64) -> Location {
        let base = basename(path);
        let unknown = || Location {
            object: path.to_string(),
            function: format!("{base}+{file_offset:#x}"),
            file: None,
            line: None,
        };
        let Some(obj) = self.object(path) else { return unknown() };
        let Some(svma) = obj.svma(file_offset) else { return unknown() };
        let (file, line) = obj.location(svma).map_or((None, None), |(f, l)| (Some(f), Some(l)));
        let function = match obj.symbol_at(svma) {
            Some(sym) => normalize(&obj.function_name(sym)),
            None => match obj.frames(svma).last().and_then(|f| f.function.clone()) {
                Some(name) => normalize(&name),
                None => format!("{base}+{file_offset:#x}"),
            },
        };
        Location { object: path.to_string(), function, file, line }
    }

    /// Functions inlined at a file offset inside `path`, innermost first (normalised;
    /// the enclosing function, which [`resolve`](Self::resolve) names, is not included).
    pub fn inlined(&mut self, path: &str, file_offset: u64) -> Vec<String> {
        let Some(obj) = self.object(path) else { return Vec::new() };
        let Some(svma) = obj.svma(file_offset) else { return Vec::new() };
        let mut frames = obj.frames(svma);
        frames.pop();
        frames.into_iter().filter_map(|f| f.function).map(|name| normalize(&name)).collect()
    }

    /// Resolve a kernel address against the kernel symbols a profile kept; unnamed
    /// addresses (no symbols recorded, or outside every function) stay `[kernel]`.
    pub(crate) fn resolve_kernel(&self, symbols: &[KernelSymbol], address: u64) -> Location {
        let (object, function) = match kernel::lookup(symbols, address) {
            Some(sym) => (kernel::object_name(sym.module.as_deref()), normalize(&sym.name)),
            None => (kernel::KERNEL_OBJECT.to_string(), kernel::KERNEL_OBJECT.to_string()),
        };
        Location { object, function, file: None, line: None }
    }
}

/// The last component of `path`.
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_clone_suffixes_and_rust_hashes() {
        assert_eq!(normalize("foo.isra.0"), "foo");
        assert_eq!(normalize("foo.part.1.cold"), "foo");
        assert_eq!(normalize("bar.constprop.0.isra.0"), "bar");
        assert_eq!(normalize("std::rt::lang_start::h0123456789abcdef"), "std::rt::lang_start");
        assert_eq!(normalize("f() [clone .cold]"), "f()");
        assert_eq!(normalize("my.coldness"), "my.coldness");
        assert_eq!(normalize("plain"), "plain");
    }

    #[test]
    fn demangles_rust_and_cpp() {
        assert_eq!(demangle("_ZN3std2rt10lang_start17h0123456789abcdefE"), "std::rt::lang_start");
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(
            demangle("_ZN4llvm15AnalysisManagerINS_8FunctionEJEE3runEv"),
            "llvm::AnalysisManager<llvm::Function>::run()"
        );
        assert_eq!(demangle("main"), "main");
    }

    #[test]
    fn resolves_own_executable_and_reports_unknown_offsets() {
        let exe = std::env::current_exe().unwrap();
        let path = exe.to_str().unwrap();
        let obj = ObjectInfo::load(path).unwrap();
        let sym = obj.symbols_named("perflab_profile::symbolize::normalize").next().expect("symbol present");
        let off = obj.file_offset(sym.start).unwrap();
        assert_eq!(obj.svma(off), Some(sym.start));
        let mut s = Symbolizer::default();
        assert_eq!(s.resolve(path, off).function, "perflab_profile::symbolize::normalize");
        let far = s.resolve(path, u64::MAX / 2);
        assert!(far.function.contains("+0x"), "{}", far.function);
    }

    // glibc's ld.so named one header two ways, and `--by line` had a row for each.
    #[test]
    fn one_source_file_has_one_path() {
        assert_eq!(same_path("./elf/./get-dynamic-info.h"), "./elf/get-dynamic-info.h");
        assert_eq!(same_path("/src/a/././b.c"), "/src/a/b.c");
        assert_eq!(same_path("/src/a/../b.c"), "/src/a/../b.c");
        assert_eq!(same_path("./csu/../sysdeps/x.h"), "./csu/../sysdeps/x.h");
    }

    #[test]
    fn corrupt_objects_are_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        for (i, cut) in [0usize, 4, 64, 1000, exe.len() / 3].into_iter().enumerate() {
            let p = dir.path().join(format!("bad{i}"));
            let mut bytes = exe[..cut.min(exe.len())].to_vec();
            if i == 2 {
                bytes.extend(std::iter::repeat_n(0xff, 4096));
            }
            std::fs::write(&p, &bytes).unwrap();
            let mut s = Symbolizer::default();
            let loc = s.resolve(p.to_str().unwrap(), 0x1000);
            assert!(loc.function.contains("+0x"));
        }
        let p = dir.path().join("text");
        std::fs::write(&p, b"not an elf").unwrap();
        let err = ObjectInfo::load(p.to_str().unwrap()).err().expect("a text file is no object").to_string();
        assert!(err.contains("not a readable object"), "{err}");
    }
}
