//! A perf.data file's layout checked against the file before linux-perf-data reads it,
//! so that no byte sequence can make the reader panic or allocate without bound.
//!
//! Hand-written because linux-perf-data 0.13 trusts the sizes a file states: it
//! allocates `vec![0; size]` for every feature section, `Vec::with_capacity(nr)` for
//! event descriptions, event ids and command-line words, divides by `attr_size`, grows a
//! buffer to an AUXTRACE record's stated length and decompresses a whole COMPRESSED
//! record at once — each before reading a byte of what it sized. Mutated files from one
//! real recording made it panic ("capacity overflow", division by zero) or abort asking
//! for terabytes (issue #29). Upstream, these checks belong in the crate; until it has
//! them, every size it will use is checked here against the file's length (or, for
//! records it keeps in memory before sorting them, against a ceiling), and the crate is
//! only handed files that pass.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

/// `struct perf_file_header`: magic, size, attr_size and three sections, then 256
/// feature bits.
const FILE_HEADER: u64 = 104;
/// The smallest `perf_event_attr` (PERF_ATTR_SIZE_VER0).
const ATTR_SIZE_MIN: u64 = 64;
/// No `perf_event_attr` is near this today (PERF_ATTR_SIZE_VER8 is 136 bytes); room for
/// future versions, while a nonsense size is refused.
const ATTR_SIZE_MAX: u64 = 4096;
/// `struct perf_file_section` (offset, size).
const SECTION: u64 = 16;
/// `struct perf_event_header` (type, misc, size).
const RECORD_HEADER: u64 = 8;

const FEATURE_CMDLINE: u32 = 11;
const FEATURE_EVENT_DESC: u32 = 12;
const FEATURE_SIMPLEPERF_META_INFO: u32 = 129;

const RECORD_FINISHED_ROUND: u32 = 68;
const RECORD_AUXTRACE: u32 = 71;
const RECORD_COMPRESSED: u32 = 81;
const RECORD_COMPRESSED2: u32 = 83;

/// linux-perf-data sorts records by time and holds each round (the records between two
/// FINISHED_ROUND markers, simpleperf files: every 1024 records) and the next in memory.
/// A real recording's round is what perf flushed at once (its ring buffers: 512 KiB per
/// CPU by default); a file whose rounds would hold more than this is refused rather than
/// read into memory without bound. Documented in docs/inputs.md.
pub(crate) const HELD_LIMIT_BYTES: u64 = 1 << 30;
/// What one held record costs beyond its bytes (the sorter's entry, the buffer's header).
const HELD_PER_RECORD: u64 = 96;
const SIMPLEPERF_ROUND: u64 = 1024;

/// What the check learnt that the reader must respect.
#[derive(Debug, Clone, Copy)]
pub struct Checked {
    /// The command-line feature can be read (linux-perf-data would otherwise reserve
    /// room for as many words as its count says, before reading one).
    pub(crate) cmdline_readable: bool,
}

#[derive(Clone, Copy)]
enum Endian {
    Little,
    Big,
}

impl Endian {
    fn u16(self, b: &[u8]) -> u16 {
        let b = [b[0], b[1]];
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    fn u32(self, b: &[u8]) -> u32 {
        let b = [b[0], b[1], b[2], b[3]];
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    fn u64(self, b: &[u8]) -> u64 {
        let b = [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }
}

/// Check the layout of the perf.data file `file` (`len` bytes long). The error says
/// what is wrong, in a phrase that follows "is not a readable perf.data file: ".
pub fn check(file: &File, len: u64) -> Result<Checked, String> {
    check_holding(file, len, HELD_LIMIT_BYTES)
}

/// [`check`] with `held_limit` in place of [`HELD_LIMIT_BYTES`].
fn check_holding(file: &File, len: u64, held_limit: u64) -> Result<Checked, String> {
    let mut header = [0u8; FILE_HEADER as usize];
    if len < FILE_HEADER || file.read_exact_at(&mut header, 0).is_err() {
        return Err(format!("{len} bytes is shorter than a perf.data header ({FILE_HEADER} bytes)"));
    }
    let endian = match &header[..8] {
        b"PERFILE2" => Endian::Little,
        b"2ELIFREP" => Endian::Big,
        _ => return Err("it does not start with PERFILE2".into()),
    };
    let file = Layout { file, len, endian };
    let attr_size = endian.u64(&header[16..]);
    let section = |at: usize| (endian.u64(&header[at..]), endian.u64(&header[at + 8..]));
    let (attrs, data, event_types) = (section(24), section(40), section(56));
    let data_end = file.section("data", data)?;

    // The feature sections' table follows the data; each section is read whole into
    // memory, so together they cannot be larger than the file.
    let mut features = Vec::new();
    for bit in 0..256u32 {
        let word = endian.u64(&header[72 + 8 * (bit as usize / 64)..]);
        if word >> (bit % 64) & 1 == 1 {
            features.push(bit);
        }
    }
    let table = file.bytes_at(data_end, features.len() as u64 * SECTION, "the feature table")?;
    let mut sections = Vec::new();
    let mut total = 0u64;
    for (i, &feature) in features.iter().enumerate() {
        let at = i * SECTION as usize;
        let range = (endian.u64(&table[at..]), endian.u64(&table[at + 8..]));
        file.section(&format!("feature {feature}"), range)?;
        total = total.saturating_add(range.1);
        if total > len {
            return Err(format!("its feature sections add up to more than the file's {len} bytes"));
        }
        sections.push((feature, range));
    }
    let feature = |wanted: u32| sections.iter().find(|(f, _)| *f == wanted).map(|(_, range)| *range);

    // The event descriptions, from wherever linux-perf-data will take them (in its order).
    if let Some(range) = feature(FEATURE_EVENT_DESC) {
        check_event_desc(&file.bytes_at(range.0, range.1, "the event descriptions")?, endian)?;
    } else if event_types.1 != 0 {
        file.attributes_with_ids("event types", event_types, attr_size)?;
    } else if feature(FEATURE_SIMPLEPERF_META_INFO).is_some() {
        let inner = attr_size.checked_sub(SECTION).ok_or_else(|| format!("attr_size {attr_size} is too small"))?;
        file.attributes_with_ids("attribute", attrs, inner)?;
    } else {
        check_attr_size(attr_size)?;
        file.section("attribute", attrs)?;
    }
    let cmdline_readable = match feature(FEATURE_CMDLINE) {
        Some(range) => string_list_fits(&file.bytes_at(range.0, range.1, "the command line")?, endian),
        None => true,
    };
    let simpleperf = feature(FEATURE_SIMPLEPERF_META_INFO).is_some();
    // (The most it would hold is known here; only going over the limit matters.)
    file.records(data.0, data_end, simpleperf, held_limit)?;
    Ok(Checked { cmdline_readable })
}

fn check_attr_size(attr_size: u64) -> Result<(), String> {
    if (ATTR_SIZE_MIN..=ATTR_SIZE_MAX).contains(&attr_size) {
        Ok(())
    } else {
        Err(format!("attr_size {attr_size} is no perf_event_attr size ({ATTR_SIZE_MIN} to {ATTR_SIZE_MAX} bytes)"))
    }
}

/// `HEADER_EVENT_DESC`: nr, attr_size, then per event the attr, nr_ids, a string and
/// the ids — every count must fit in the bytes that follow it.
fn check_event_desc(bytes: &[u8], endian: Endian) -> Result<(), String> {
    let bad = |what: &str| format!("its event descriptions are cut short ({what})");
    if bytes.len() < 8 {
        return Err(bad("no count"));
    }
    let nr = endian.u32(bytes) as u64;
    let attr_size = endian.u32(&bytes[4..]) as u64;
    if nr == 0 {
        return Ok(());
    }
    check_attr_size(attr_size)?;
    let mut at = 8u64;
    let len = bytes.len() as u64;
    // Each event takes at least attr_size + 8 bytes: a count beyond that is a lie.
    if nr > (len - at) / (attr_size + 8) {
        return Err(format!("its event descriptions count {nr} events in {len} bytes"));
    }
    for _ in 0..nr {
        at += attr_size;
        if at + 8 > len {
            return Err(bad("an event's ids"));
        }
        let ids = endian.u32(&bytes[at as usize..]) as u64;
        let name = endian.u32(&bytes[at as usize + 4..]) as u64;
        at += 8;
        if name > len - at {
            return Err(bad("an event's name"));
        }
        at += name;
        if ids > (len - at) / 8 {
            return Err(bad("an event's ids"));
        }
        at += ids * 8;
    }
    Ok(())
}

/// Whether a `perf_header_string_list` (nr, then nr strings of len + bytes) is whole.
fn string_list_fits(bytes: &[u8], endian: Endian) -> bool {
    if bytes.len() < 4 {
        return false;
    }
    let nr = endian.u32(bytes) as usize;
    let mut at = 4usize;
    for _ in 0..nr {
        if at + 4 > bytes.len() {
            return false;
        }
        let len = endian.u32(&bytes[at..]) as usize;
        at += 4;
        if len > bytes.len() - at {
            return false;
        }
        at += len;
    }
    true
}

struct Layout<'f> {
    file: &'f File,
    len: u64,
    endian: Endian,
}

impl Layout<'_> {
    /// The end of a section (offset, size) that must lie within the file.
    fn section(&self, name: &str, (offset, size): (u64, u64)) -> Result<u64, String> {
        match offset.checked_add(size) {
            Some(end) if end <= self.len => Ok(end),
            _ => Err(format!(
                "its {name} section (at byte {offset}, {size} bytes) reaches past the end of the file ({} bytes)",
                self.len
            )),
        }
    }

    /// `size` bytes at `offset`, which must lie within the file (so the allocation is
    /// bounded by the file's size).
    fn bytes_at(&self, offset: u64, size: u64, what: &str) -> Result<Vec<u8>, String> {
        let end = offset.checked_add(size).filter(|&end| end <= self.len);
        let cut = || format!("{what} (at byte {offset}, {size} bytes) reaches past the end of the file");
        end.ok_or_else(cut)?;
        let mut bytes = vec![0; size as usize];
        self.file.read_exact_at(&mut bytes, offset).map_err(|e| format!("{what}: {e}"))?;
        Ok(bytes)
    }

    /// Attributes each followed by the section of their event ids (old perf's event
    /// types, simpleperf's attributes): the ids are read into memory, so together they
    /// cannot be larger than the file.
    fn attributes_with_ids(&self, name: &str, range: (u64, u64), attr_size: u64) -> Result<(), String> {
        check_attr_size(attr_size)?;
        self.section(name, range)?;
        let entry = attr_size + SECTION;
        let mut total = 0u64;
        for i in 0..range.1 / entry {
            let ids = self.bytes_at(range.0 + i * entry + attr_size, SECTION, "an event's id section")?;
            let ids = (self.endian.u64(&ids), self.endian.u64(&ids[8..]));
            self.section("event ids", ids)?;
            total = total.saturating_add(ids.1);
            if total > self.len {
                return Err(format!("its event id sections add up to more than the file's {} bytes", self.len));
            }
        }
        Ok(())
    }

    /// Walk the records' headers: an AUXTRACE record's trace data must lie in the data
    /// section, and no two rounds together may hold more than [`HELD_LIMIT_BYTES`]
    /// (compressed records counted as what they decompress to).
    fn records(&self, start: u64, end: u64, simpleperf: bool, held_limit: u64) -> Result<u64, String> {
        let mut reader = BufReader::with_capacity(1 << 18, self.file);
        reader.seek(SeekFrom::Start(start)).map_err(|e| e.to_string())?;
        let mut rounds = Rounds::new(simpleperf, held_limit);
        let mut at = start;
        let mut header = [0u8; RECORD_HEADER as usize];
        let mut body = Vec::new();
        while end - at >= RECORD_HEADER {
            reader.read_exact(&mut header).map_err(|e| format!("reading the record at byte {at}: {e}"))?;
            let kind = self.endian.u32(&header);
            let size = self.endian.u16(&header[6..]) as u64;
            if size < RECORD_HEADER {
                return Err(format!("the record at byte {at} says it is {size} bytes long, less than its header"));
            }
            if size > end - at {
                // linux-perf-data reads it from past the data section (the feature table),
                // at most 64 KiB; nothing to bound.
                return Ok(rounds.most);
            }
            let body_len = (size - RECORD_HEADER) as usize;
            if !matches!(kind, RECORD_AUXTRACE | RECORD_COMPRESSED | RECORD_COMPRESSED2) {
                reader.seek_relative(body_len as i64).map_err(|e| e.to_string())?;
                match kind {
                    RECORD_FINISHED_ROUND => rounds.finish(),
                    _ => rounds.hold(size, at)?,
                }
                at += size;
                continue;
            }
            body.resize(body_len, 0);
            reader.read_exact(&mut body).map_err(|e| format!("reading the record at byte {at}: {e}"))?;
            let mut next = at + size;
            if kind == RECORD_AUXTRACE {
                let trace = if body.len() >= 8 { self.endian.u64(&body) } else { 0 };
                if trace > end - next {
                    return Err(format!(
                            "the AUXTRACE record at byte {at} says {trace} bytes of trace follow; the data section has {} left",
                            end - next
                        ));
                }
                rounds.hold(size + trace, at)?;
                reader.seek_relative(trace as i64).map_err(|e| e.to_string())?;
                next += trace;
            } else {
                let compressed = if kind == RECORD_COMPRESSED2 {
                    let stated = if body.len() >= 8 { self.endian.u64(&body) } else { u64::MAX };
                    if stated > body.len().saturating_sub(8) as u64 {
                        return Err(format!("the COMPRESSED2 record at byte {at} states more data than it holds"));
                    }
                    &body[8..8 + stated as usize]
                } else {
                    &body[..]
                };
                rounds.decompressed(compressed, self.endian, at)?;
            }
            at = next;
        }
        Ok(rounds.most)
    }
}

/// What linux-perf-data's sorter would hold: the current round and the one before.
struct Rounds {
    limit: u64,
    /// The most held at once so far.
    most: u64,
    previous: u64,
    current: u64,
    records: u64,
    simpleperf: bool,
    decompressor: Option<zstd_safe::DCtx<'static>>,
    /// Decompressed bytes of a record that continues in the next compressed chunk.
    carry: Vec<u8>,
}

impl Rounds {
    fn new(simpleperf: bool, limit: u64) -> Rounds {
        Rounds {
            limit,
            most: 0,
            previous: 0,
            current: 0,
            records: 0,
            simpleperf,
            decompressor: None,
            carry: Vec::new(),
        }
    }

    fn finish(&mut self) {
        self.previous = self.current;
        self.current = 0;
        self.records = 0;
    }

    fn hold(&mut self, bytes: u64, at: u64) -> Result<(), String> {
        self.current = self.current.saturating_add(bytes + HELD_PER_RECORD);
        let held = self.previous.saturating_add(self.current);
        self.most = self.most.max(held);
        if held > self.limit {
            return Err(format!(
                "reading it would hold over {} of records in memory at once (at byte {at}, no round marker for too long); perflab's limit is {}",
                mib(held),
                mib(self.limit)
            ));
        }
        self.records += 1;
        if self.simpleperf && self.records >= SIMPLEPERF_ROUND {
            self.finish();
        }
        Ok(())
    }

    /// Count the records a compressed chunk holds, decompressing a MiB at a time (the
    /// reader decompresses the whole chunk into one buffer, which counts as held too).
    fn decompressed(&mut self, compressed: &[u8], endian: Endian, at: u64) -> Result<(), String> {
        // The context carries a frame from one record into the next, as perf writes them.
        let mut context = self.decompressor.take().unwrap_or_else(zstd_safe::DCtx::create);
        let mut input = zstd_safe::InBuffer::around(compressed);
        let mut chunk = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let mut output = zstd_safe::OutBuffer::around(&mut chunk[..]);
            context
                .decompress_stream(&mut output, &mut input)
                .map_err(|code| format!("the compressed record at byte {at}: {}", zstd_safe::get_error_name(code)))?;
            let produced = output.pos();
            total += produced as u64;
            self.carry.extend_from_slice(&chunk[..produced]);
            // Whole records in what was decompressed so far.
            let mut used = 0usize;
            while self.carry.len() - used >= RECORD_HEADER as usize {
                let size = endian.u16(&self.carry[used + 6..]) as usize;
                if size < RECORD_HEADER as usize {
                    return Err(format!("a record compressed at byte {at} is shorter than its header"));
                }
                if self.carry.len() - used < size {
                    break;
                }
                self.hold(size as u64, at)?;
                used += size;
            }
            self.carry.drain(..used);
            // The reader keeps the whole decompressed chunk in one buffer while it splits it.
            let held = self.previous.saturating_add(self.current);
            if held.saturating_add(total) > self.limit {
                // The limit is on what is held at once: say what counted, not only the chunk.
                return Err(format!(
                    "the compressed record at byte {at} decompresses to over {} (decompressing stopped there), held at once with {} of records already read: over perflab's limit of {} held at once",
                    mib(total),
                    mib(held),
                    mib(self.limit)
                ));
            }
            if produced < chunk.len() && input.pos() == compressed.len() {
                self.decompressor = Some(context);
                return Ok(());
            }
        }
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// linux-perf-data's jitdump reader asserts that the file header fits its first 4 KiB
/// read, and takes 16 from each record's size unchecked (a panic in a debug build, a
/// read to the end of the file in a release build): both are checked here first.
pub(crate) fn check_jitdump(file: &File, len: u64) -> Result<(), String> {
    const HEADER: u64 = 40;
    const FIRST_READ: u64 = 4096;
    const RECORD: u64 = 16;
    let mut header = [0u8; HEADER as usize];
    if len < HEADER || file.read_exact_at(&mut header, 0).is_err() {
        return Err(format!("{len} bytes is shorter than a jitdump header"));
    }
    let endian = match &header[..4] {
        b"DTiJ" => Endian::Little,
        b"JiTD" => Endian::Big,
        _ => return Err("it does not start with a jitdump magic".into()),
    };
    let header_size = endian.u32(&header[8..]) as u64;
    if !(HEADER..FIRST_READ).contains(&header_size) || header_size > len {
        return Err(format!("its header says it is {header_size} bytes long"));
    }
    let mut reader = BufReader::with_capacity(1 << 16, file);
    reader.seek(SeekFrom::Start(header_size)).map_err(|e| e.to_string())?;
    let mut at = header_size;
    let mut record = [0u8; RECORD as usize];
    while len - at >= RECORD {
        reader.read_exact(&mut record).map_err(|e| format!("reading the record at byte {at}: {e}"))?;
        let size = endian.u32(&record[4..]) as u64;
        if size < RECORD {
            return Err(format!("the record at byte {at} says it is {size} bytes long, less than its header"));
        }
        if size > len - at {
            // Cut short (a runtime still writing it): the reader stops there.
            return Ok(());
        }
        reader.seek_relative((size - RECORD) as i64).map_err(|e| e.to_string())?;
        at += size;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(name: &str) -> (File, u64) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hostile").join(name);
        let file = File::open(path).unwrap();
        let len = file.metadata().unwrap().len();
        (file, len)
    }

    #[test]
    fn records_held_between_rounds_are_bounded_compressed_ones_as_decompressed() {
        for name in ["callchain.perf.data", "dwarf.perf.data", "compressed.perf.data"] {
            let (file, len) = seed(name);
            assert!(check(&file, len).is_ok(), "{name} is a real recording");
            let refused = check_holding(&file, len, 4096).unwrap_err();
            assert!(refused.contains("limit is 0.0 MiB"), "{name}: {refused}");
        }
    }

    #[test]
    fn compressed_records_count_as_what_they_decompress_to() {
        // 1,000 records of 64 bytes, compressed to about 1.4 KB.
        let mut records = Vec::new();
        for _ in 0..1000 {
            records.extend_from_slice(&9u32.to_le_bytes());
            records.extend_from_slice(&0u16.to_le_bytes());
            records.extend_from_slice(&64u16.to_le_bytes());
            records.extend_from_slice(&[0u8; 56]);
        }
        let mut compressed = vec![0u8; zstd_safe::compress_bound(records.len())];
        let n = zstd_safe::compress(&mut compressed[..], &records, 1).unwrap();
        compressed.truncate(n);
        assert!(compressed.len() < 4000, "{} bytes", compressed.len());
        let mut rounds = Rounds::new(false, u64::MAX);
        rounds.decompressed(&compressed, Endian::Little, 0).unwrap();
        assert_eq!(rounds.most, 1000 * (64 + HELD_PER_RECORD));
        let mut rounds = Rounds::new(false, 100_000);
        let refused = rounds.decompressed(&compressed, Endian::Little, 0).unwrap_err();
        assert!(refused.contains("limit is 0.1 MiB") || refused.contains("limit of 0.1 MiB"), "{refused}");
        // The chunk alone under the limit, the records held before it over: both figures said.
        let records_held = 1000 * (64 + HELD_PER_RECORD);
        let mut rounds = Rounds::new(false, records_held + 1000);
        let refused = rounds.decompressed(&compressed, Endian::Little, 0).unwrap_err();
        let expected = format!(
            "decompresses to over 0.1 MiB (decompressing stopped there), held at once with {} of records",
            mib(records_held)
        );
        assert!(refused.contains(&expected), "{refused}");
        // Zeros decompress to records shorter than their header: refused at the first.
        let zeros = vec![0u8; 1 << 20];
        let mut bomb = vec![0u8; zstd_safe::compress_bound(zeros.len())];
        let n = zstd_safe::compress(&mut bomb[..], &zeros, 1).unwrap();
        bomb.truncate(n);
        let refused = Rounds::new(false, u64::MAX).decompressed(&bomb, Endian::Little, 0).unwrap_err();
        assert!(refused.contains("shorter than its header"), "{refused}");
    }
}
