//! Names for JIT-compiled code from perf map files, `/tmp/perf-PID.map`: one line
//! `START SIZE name` (hex, no 0x) per piece of generated code, written by node
//! `--perf-basic-prof`, the JVM (`-XX:+DumpPerfMapAtExit`, `jcmd PID Compiler.perfmap`)
//! and CPython ≥ 3.12 (`-X perf`). Code can be freed and its memory reused, so a later
//! line replaces whatever earlier lines it overlaps, as a new mapping replaces an old one.
//!
//! The recorder reads the file when the command has finished and keeps the names of
//! the code that was sampled in the profile, so the profile does not depend on the file
//! afterwards (JIT maps are deleted, and pids are reused).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Where a process's perf map lives.
pub(crate) fn map_path(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/perf-{pid}.map"))
}

/// Is `path` a perf map path (as `map_path` writes it)?
pub fn is_map_path(path: &str) -> bool {
    map_pid(path).is_some()
}

fn map_pid(path: &str) -> Option<u32> {
    let pid = path.strip_prefix("/tmp/perf-")?.strip_suffix(".map")?;
    pid.bytes().all(|b| b.is_ascii_digit()).then(|| pid.parse().ok()).flatten()
}

/// The profile object standing for the code a process generated at run time (JIT code,
/// SBCL's compiled Lisp): its samples' offsets are addresses.
pub(crate) fn runtime_object(pid: u32) -> String {
    format!("[jit:{pid}]")
}

/// The process whose runtime code `path` stands for: `[jit:PID]`, or the perf map path
/// that profiles written before runtime code was copied used.
pub(crate) fn runtime_pid(path: &str) -> Option<u32> {
    match path.strip_prefix("[jit:").and_then(|rest| rest.strip_suffix(']')) {
        Some(pid) if pid.bytes().all(|b| b.is_ascii_digit()) => pid.parse().ok(),
        _ => map_pid(path),
    }
}

/// Whether `path` is a process's runtime code (named from perf maps, not an object file).
pub(crate) fn is_runtime_object(path: &str) -> bool {
    runtime_pid(path).is_some()
}

/// The code ranges of one perf map: start → (end, name).
#[derive(Debug, Default, PartialEq)]
pub struct JitMap {
    ranges: BTreeMap<u64, (u64, String)>,
}

impl JitMap {
    /// Parse a perf map; malformed lines are skipped (a map being written while read
    /// may end in half a line).
    pub fn parse(text: &str) -> JitMap {
        let mut map = JitMap::default();
        let _ = each_line(text.as_bytes(), &mut |start, end, name| map.insert(start, end, name.to_string()));
        map
    }

    /// The perf map of `pid`, if there is one that this user may trust: like perf, only
    /// a file owned by the user running perflab (or root) is read, so another user cannot
    /// plant names in the profile. Read a line at a time (the file is never held whole).
    pub fn read(pid: u32) -> Option<JitMap> {
        let mut map = JitMap::default();
        each_line(open_trusted(pid)?, &mut |start, end, name| map.insert(start, end, name.to_string())).ok()?;
        Some(map)
    }

    /// Code at `start..end` named `name`, replacing whatever it overlaps. The ranges
    /// never overlap, so their ends rise with their starts: of the ranges starting before
    /// `start` only the last can reach into it, and every range starting in
    /// `start..end` overlaps. Each insert costs O(log n) plus what it removes (a scan of
    /// every range below `end` made a 100k-line map take half a minute).
    pub fn insert(&mut self, start: u64, end: u64, name: String) {
        if start >= end {
            return;
        }
        self.remove_overlapping(start, end);
        self.ranges.insert(start, (end, name));
    }

    /// Remove every range overlapping `start..end`.
    pub(crate) fn remove_overlapping(&mut self, start: u64, end: u64) {
        if let Some((&before, &(before_end, _))) = self.ranges.range(..start).next_back() {
            if before_end > start {
                self.ranges.remove(&before);
            }
        }
        let inside: Vec<u64> = self.ranges.range(start..end).map(|(&s, _)| s).collect();
        for s in inside {
            self.ranges.remove(&s);
        }
    }

    /// How many code ranges the map holds.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// True when the map holds no code range.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether a range starts at `start`.
    pub(crate) fn starts_at(&self, start: u64) -> bool {
        self.ranges.contains_key(&start)
    }

    /// Whether any range overlaps `start..end`.
    pub(crate) fn overlaps(&self, start: u64, end: u64) -> bool {
        self.ranges.range(..end).next_back().is_some_and(|(_, &(e, _))| e > start)
    }

    /// (start, size, name) of the code at `address`.
    pub fn lookup(&self, address: u64) -> Option<(u64, u64, &str)> {
        let (&start, (end, name)) = self.ranges.range(..=address).next_back()?;
        (address < *end).then_some((start, end - start, name.as_str()))
    }
}

/// The perf map of `pid` opened for reading, when this user may trust it (see
/// [`JitMap::read`]).
fn open_trusted(pid: u32) -> Option<std::io::BufReader<std::fs::File>> {
    let path = map_path(pid);
    let meta = std::fs::metadata(&path).ok()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.is_file() || (meta.uid() != me && meta.uid() != 0) {
        return None;
    }
    perflab_sys::files::open_regular(&path).ok().map(|f| std::io::BufReader::with_capacity(1 << 16, f))
}

/// Bytes of a runtime's name for a piece of code that are kept (perf map and jitdump):
/// a longer name keeps its first `MAX_NAME_BYTES` and says how long it was —
/// 1,500 names of 1 MiB each, all sampled, would otherwise take gigabytes once copied
/// into the report's rows. Real names (JavaScript, Java, Python) are far shorter.
pub(crate) const MAX_NAME_BYTES: usize = 4096;

/// `name`, or its first [`MAX_NAME_BYTES`] (at a character boundary) and how long it was.
pub(crate) fn capped_name(name: &str, full_len: usize) -> String {
    if full_len <= MAX_NAME_BYTES {
        return name.to_string();
    }
    let mut end = name.len().min(MAX_NAME_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… (a name of {full_len} bytes, cut at {MAX_NAME_BYTES})", &name[..end])
}

/// Read one line into `line` (without what lies past `cap` bytes, which is skipped);
/// its full length, None at the end of the input.
fn read_line_capped(
    reader: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Option<usize>> {
    let mut total = 0usize;
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok((total > 0).then_some(total));
        }
        let (chunk, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (&buffer[..=at], true),
            None => (buffer, false),
        };
        let room = cap.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        total += used;
        reader.consume(used);
        if done {
            return Ok(Some(total));
        }
    }
}

/// Hand each well-formed line of a perf map (`START SIZE name`, hex) to `each` as
/// (start, end, name), reading `reader` a line at a time; malformed lines and empty
/// ranges are skipped. A map can have millions of lines: a Ctrl-C or SIGTERM arriving
/// while it is read stops the reading (the code named so far keeps its names).
fn each_line(mut reader: impl std::io::BufRead, each: &mut dyn FnMut(u64, u64, &str)) -> std::io::Result<()> {
    let signals = perflab_sys::interrupt::signals_received();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        // A line is held up to its name's cap (a line of a gigabyte is not read whole).
        let Some(length) = read_line_capped(&mut reader, &mut line, MAX_NAME_BYTES + 64)? else {
            return Ok(());
        };
        number += 1;
        if number.is_multiple_of(65536) && perflab_sys::interrupt::signals_received() != signals {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&line);
        let mut fields = text.splitn(3, ' ');
        let (Some(start), Some(size), Some(name)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let (Ok(start), Ok(size)) = (u64::from_str_radix(start, 16), u64::from_str_radix(size, 16)) else {
            continue;
        };
        if size == 0 {
            continue;
        }
        let name = name.trim_end();
        let cut = length - line.len();
        if cut == 0 {
            each(start, start.saturating_add(size), name);
        } else {
            let full = name.len() + cut - usize::from(line.last() != Some(&b'\n'));
            each(start, start.saturating_add(size), &capped_name(name, full));
        }
    }
}

/// The names the perf map of `pid` gives `addresses`: (start, size, name) per named
/// address, as [`JitMap::read`] then [`JitMap::lookup`] would give them, but holding only
/// the ranges that cover a sampled address — memory follows the profile, not the map
/// (a map of 10⁷ lines held whole took 1.35 GB). A later line still replaces every range
/// it overlaps. None when there is no map this user may trust.
pub(crate) fn names_for(
    pid: u32,
    addresses: &std::collections::BTreeSet<u64>,
) -> Option<BTreeMap<u64, (u64, u64, String)>> {
    let reader = open_trusted(pid)?;
    Some(resolve(reader, addresses))
}

fn resolve(
    reader: impl std::io::BufRead,
    addresses: &std::collections::BTreeSet<u64>,
) -> BTreeMap<u64, (u64, u64, String)> {
    // The ranges in force that cover a sampled address (a subset of what JitMap holds).
    let mut active = JitMap::default();
    let _ = each_line(reader, &mut |start, end, name| {
        if start >= end {
            return;
        }
        if addresses.range(start..end).next().is_some() {
            active.insert(start, end, name.to_string());
        } else {
            // Not sampled, but it still replaces the ranges in force that it overlaps.
            active.remove_overlapping(start, end);
        }
    });
    addresses.iter().filter_map(|&a| active.lookup(a).map(|(s, size, n)| (a, (s, size, n.to_string())))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_later_code_replaces_earlier() {
        let map = JitMap::parse(
            "1000 100 JS:~hot /app.js:1:1\n\
             2000 10 first\n\
             bogus line\n\
             2000 20 LazyCompile:*second with spaces\n\
             3000 0 empty\n\
             4000 1",
        );
        assert_eq!(map.lookup(0x1000), Some((0x1000, 0x100, "JS:~hot /app.js:1:1")));
        assert_eq!(map.lookup(0x10ff).map(|s| s.2), Some("JS:~hot /app.js:1:1"));
        assert_eq!(map.lookup(0x1100), None);
        assert_eq!(map.lookup(0x2015).map(|s| s.2), Some("LazyCompile:*second with spaces"));
        assert_eq!(map.lookup(0x3000), None);
        assert_eq!(map.lookup(0x4000), None, "a line without a name is skipped");
        assert_eq!(map.lookup(0xfff), None);
    }

    proptest::proptest! {
        /// The O(log n) insert keeps exactly the ranges a scan of every range would.
        #[test]
        fn inserting_matches_replacing_every_overlapping_range(
            ranges in proptest::collection::vec((0u64..200, 1u64..40), 0..60)
        ) {
            let mut map = JitMap::default();
            let mut model: Vec<(u64, u64, String)> = Vec::new();
            for (i, (start, size)) in ranges.into_iter().enumerate() {
                let end = start + size;
                map.insert(start, end, i.to_string());
                model.retain(|(s, e, _)| !(*s < end && *e > start));
                model.push((start, end, i.to_string()));
            }
            model.sort();
            let kept: Vec<(u64, u64, String)> =
                map.ranges.iter().map(|(&s, (e, n))| (s, *e, n.clone())).collect();
            proptest::prop_assert_eq!(kept, model);
        }
    }

    proptest::proptest! {
        /// Resolving only the sampled addresses names them exactly as the whole map does.
        #[test]
        fn resolving_sampled_addresses_matches_the_whole_map(
            lines in proptest::collection::vec((0u64..400, 0u64..60), 0..60),
            sampled in proptest::collection::btree_set(0u64..460, 0..30),
        ) {
            let text: String = lines.iter().enumerate().map(|(i, (s, n))| format!("{s:x} {n:x} f{i}\n")).collect();
            let whole = JitMap::parse(&text);
            let expected: BTreeMap<u64, (u64, u64, String)> = sampled
                .iter()
                .filter_map(|&a| whole.lookup(a).map(|(s, n, name)| (a, (s, n, name.to_string()))))
                .collect();
            proptest::prop_assert_eq!(resolve(text.as_bytes(), &sampled), expected);
        }
    }

    #[test]
    fn recognises_map_paths() {
        assert!(is_map_path("/tmp/perf-123.map"));
        assert!(!is_map_path("/tmp/perf-.map"));
        assert!(!is_map_path("/tmp/perf-12x.map"));
        assert!(!is_map_path("/usr/lib/libc.so.6"));
        assert_eq!(map_path(42).to_str(), Some("/tmp/perf-42.map"));
        assert_eq!(runtime_pid(&runtime_object(42)), Some(42));
        assert_eq!(runtime_pid("/tmp/perf-7.map"), Some(7));
        assert_eq!(runtime_pid("[jit:x]"), None);
        assert!(!is_runtime_object("[kernel]") && !is_runtime_object("[jit:]"));
    }
}
