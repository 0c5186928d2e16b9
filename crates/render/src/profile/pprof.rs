//! `--pprof FILE`: the profile as pprof's profile.proto (gzipped), which `go tool pprof`,
//! Parca, Pyroscope and OpenTelemetry's converters read. Two values per sample: the
//! samples, and CPU nanoseconds (clock events) or events (count events), the latter the
//! default; stacks are perflab's symbolised frames (leaf first, as pprof wants), each
//! sample labelled with its pid, tid and thread name. A location is an address in a
//! mapping (start, limit, file offset, path and build ID, as `perflab_profile::sites`
//! places objects) with its lines, the inlined functions first; a function has its
//! source file and start line; samples with the same thread and locations are one. An allocation profile carries the
//! four values of Go's heap profiles instead (calls and bytes allocated, blocks and bytes
//! live at exit).
//!
//! The messages are derived here with prost from profile.proto's field numbers
//! (github.com/google/pprof/blob/main/proto/profile.proto): the crates that ship them
//! generated (pprof, pprof_util) come with a profiler or an allocator attached.

use super::exporter::{ExportInput, ProfileExporter};
use super::samples::{Place, Samples};
use perflab_profile::aggregate::{FrameKind, StackFrame};
use perflab_profile::alloc::view::{view, AllocView};
use perflab_profile::error::ProfileError;
use perflab_profile::format::{Profile, Weight};
use std::collections::HashMap;
use std::io::Write;

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct PprofProfile {
    #[prost(message, repeated, tag = "1")]
    pub(crate) sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<PprofSample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub(crate) string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub(crate) time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub(crate) duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub(crate) period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub(crate) default_sample_type: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct PprofSample {
    #[prost(uint64, repeated, tag = "1")]
    pub(crate) location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    #[prost(bool, tag = "7")]
    pub(crate) has_functions: bool,
    #[prost(bool, tag = "8")]
    pub(crate) has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub(crate) has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub(crate) has_inline_frames: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub(crate) mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Innermost (inlined) function first, the enclosing one last.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub(crate) function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub(crate) system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

/// pprof's string table: index 0 is the empty string.
struct Strings {
    list: Vec<String>,
    ids: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        Strings { list: vec![String::new()], ids: HashMap::from([(String::new(), 0)]) }
    }

    fn id(&mut self, text: &str) -> i64 {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let id = self.list.len() as i64;
        self.list.push(text.to_string());
        self.ids.insert(text.to_string(), id);
        id
    }
}

/// The message (before compression), for tests.
pub fn message(profile: &Profile, samples: &Samples) -> PprofProfile {
    let (value_type, value_unit) = match samples.weight {
        Weight::Time => ("cpu", "nanoseconds"),
        Weight::Events => (profile.event.as_str(), "count"),
    };
    let values = Values {
        types: vec![("samples", "count"), (value_type, value_unit)],
        default: None,
        period_type: (value_type, value_unit),
    };
    message_of(profile, &[samples], &values)
}

/// An allocation profile's message (`profile --alloc`), with the sample types Go's heap
/// profiles have, so `go tool pprof -sample_index=…` reads it as one: `alloc_objects`
/// (calls) and `alloc_space` (bytes requested) from `allocated`, `inuse_objects` and
/// `inuse_space` (blocks and bytes still allocated at exit) from `live` when blocks were
/// followed. `alloc_space` is shown by default.
pub fn alloc_message(profile: &Profile, allocated: &Samples, live: Option<&Samples>) -> PprofProfile {
    let mut types = vec![("alloc_objects", "count"), ("alloc_space", "bytes")];
    let mut sets = vec![allocated];
    if let Some(live) = live {
        types.extend([("inuse_objects", "count"), ("inuse_space", "bytes")]);
        sets.push(live);
    }
    let values = Values { types, default: Some("alloc_space"), period_type: ("calls", "count") };
    message_of(profile, &sets, &values)
}

/// What a message's samples carry: a (type, unit) per value — each set of samples fills
/// two, its counts then its periods — the type shown by default (else the last), and
/// what the profile's period counts.
struct Values<'a> {
    types: Vec<(&'a str, &'a str)>,
    default: Option<&'a str>,
    period_type: (&'a str, &'a str),
}

/// What makes two frames one pprof location.
#[derive(PartialEq, Eq, Hash)]
enum LocationKey {
    /// (mapping index, address).
    Address(usize, u64),
    /// (frame name, object) of a frame outside every object.
    Name(String, String),
}

fn message_of(profile: &Profile, sets: &[&Samples], values: &Values) -> PprofProfile {
    let samples = sets[0];
    let mut strings = Strings::new();
    let sample_type =
        values.types.iter().map(|(t, u)| ValueType { r#type: strings.id(t), unit: strings.id(u) }).collect();
    // pprof names the profile after its first mapping ("File:"): make it the object
    // holding the most leaf weight (the program), not whichever was met first (ld.so).
    // The sets (allocation views of one profile) each place their frames: their
    // mappings merge by object and range, an unread object's spans into one.
    let key = |m: &perflab_profile::sites::Mapping| (m.path.clone(), if m.read { m.start } else { u64::MAX });
    let mut merged_mappings: Vec<perflab_profile::sites::Mapping> = Vec::new();
    let mut merged_index: HashMap<(String, u64), usize> = HashMap::new();
    let mut set_mapping: Vec<Vec<usize>> = Vec::new();
    for of in sets {
        set_mapping.push(
            of.mappings
                .iter()
                .map(|m| {
                    let i = *merged_index.entry(key(m)).or_insert_with(|| {
                        merged_mappings.push(m.clone());
                        merged_mappings.len() - 1
                    });
                    let into = &mut merged_mappings[i];
                    if m.start < into.start {
                        into.file_offset -= into.start - m.start;
                        into.start = m.start;
                    }
                    into.limit = into.limit.max(m.limit);
                    i
                })
                .collect(),
        );
    }
    let mut leaf_weight: HashMap<usize, u64> = HashMap::new();
    for s in &samples.samples {
        if let Some(mapping) = samples.places[s.stack].last().and_then(|p| p.mapping) {
            *leaf_weight.entry(set_mapping[0][mapping]).or_default() += s.period;
        }
    }
    let mut order: Vec<usize> = (0..merged_mappings.len()).collect();
    order.sort_by_key(|i| std::cmp::Reverse(leaf_weight.get(i).copied().unwrap_or(0)));
    let mut mapping_ids: HashMap<usize, u64> = HashMap::new();
    let mut mappings: Vec<Mapping> = Vec::new();
    for i in order {
        let m = &merged_mappings[i];
        let id = mappings.len() as u64 + 1;
        mapping_ids.insert(i, id);
        mappings.push(Mapping {
            id,
            memory_start: m.start,
            memory_limit: m.limit,
            file_offset: m.file_offset,
            filename: strings.id(&m.path),
            build_id: m.build_id.as_deref().map_or(0, |b| strings.id(b)),
            has_functions: true,
            has_filenames: m.has_lines,
            has_line_numbers: m.has_lines,
            has_inline_frames: m.has_lines,
        });
    }
    let mut functions: Vec<Function> = Vec::new();
    let mut locations: Vec<Location> = Vec::new();
    // One location per address (with the functions inlined there), or per name for a
    // frame outside every object; one function per (name, source file).
    let mut location_ids: HashMap<LocationKey, u64> = HashMap::new();
    let mut function_ids: HashMap<(String, String), u64> = HashMap::new();
    let mut locate = |set: usize, stack: &Vec<StackFrame>, places: &Vec<Place>| -> Vec<u64> {
        // A code frame and the frames inlined into it (outermost first) make one location.
        let mut groups: Vec<Vec<(&StackFrame, &Place)>> = Vec::new();
        for (frame, place) in stack.iter().zip(places) {
            match groups.last_mut() {
                Some(group) if frame.kind == FrameKind::Inlined => group.push((frame, place)),
                _ => groups.push(vec![(frame, place)]),
            }
        }
        groups
            .iter()
            .rev()
            .map(|group| {
                let (code, place) = group[0];
                let mapping = place.mapping.map(|m| set_mapping[set][m]);
                let key = match mapping {
                    Some(mapping) => LocationKey::Address(mapping, place.address),
                    None => LocationKey::Name(Samples::frame_name(code), code.object.clone()),
                };
                if let Some(&id) = location_ids.get(&key) {
                    return id;
                }
                let line = group
                    .iter()
                    .rev()
                    .map(|(frame, place)| {
                        // pprof marks inlined functions itself ("(inline)"): the plain name.
                        let name = frame.function.clone();
                        let file = place.file.clone().unwrap_or_default();
                        let function_id = *function_ids.entry((name.clone(), file.clone())).or_insert_with(|| {
                            let id = functions.len() as u64 + 1;
                            let name_id = strings.id(&name);
                            functions.push(Function {
                                id,
                                name: name_id,
                                system_name: name_id,
                                filename: strings.id(&file),
                                start_line: place.start_line.unwrap_or(0).into(),
                            });
                            id
                        });
                        Line { function_id, line: place.line.unwrap_or(0).into() }
                    })
                    .collect();
                let id = locations.len() as u64 + 1;
                let mapping_id = mapping.and_then(|m| mapping_ids.get(&m).copied()).unwrap_or(0);
                let address = if mapping.is_some() { place.address } else { 0 };
                locations.push(Location { id, mapping_id, address, line });
                location_ids.insert(key, id);
                id
            })
            .collect()
    };
    // Samples merge per (thread, locations), whichever set and stack they came from:
    // pprof has no time axis.
    let mut merged: HashMap<(u32, u32, Vec<u64>), Vec<i64>> = HashMap::new();
    for (set, of) in sets.iter().enumerate() {
        let stacks: Vec<Vec<u64>> = of.stacks.iter().zip(&of.places).map(|(s, p)| locate(set, s, p)).collect();
        for s in &of.samples {
            let e = merged.entry((s.pid, s.tid, stacks[s.stack].clone())).or_insert_with(|| vec![0; 2 * sets.len()]);
            e[2 * set] += s.count as i64;
            e[2 * set + 1] += s.period as i64;
        }
    }
    let mut merged: Vec<_> = merged.into_iter().collect();
    merged.sort_unstable();
    let (pid_key, tid_key, thread_key) = (strings.id("pid"), strings.id("tid"), strings.id("thread"));
    let sample = merged
        .into_iter()
        .map(|((pid, tid, location_id), value)| {
            let thread = sets.iter().map(|s| s.thread_name(pid, tid)).next().unwrap_or_default();
            let label = vec![
                Label { key: pid_key, str: 0, num: pid.into() },
                Label { key: tid_key, str: 0, num: tid.into() },
                Label { key: thread_key, str: strings.id(&thread), num: 0 },
            ];
            PprofSample { location_id, value, label }
        })
        .collect();
    let time_nanos =
        chrono::DateTime::parse_from_rfc3339(&profile.started).ok().and_then(|t| t.timestamp_nanos_opt()).unwrap_or(0);
    let period = match (profile.sample_period, profile.frequency_hz) {
        (Some(p), _) => p as i64,
        (None, hz) if hz > 0 && profile.period_is_time() => 1_000_000_000 / hz as i64,
        _ => 0,
    };
    let period_type =
        Some(ValueType { r#type: strings.id(values.period_type.0), unit: strings.id(values.period_type.1) });
    let default_sample_type = values.default.map_or(0, |t| strings.id(t));
    let comment = vec![strings.id(&format!(
        "perflab {}: {} of {}",
        env!("CARGO_PKG_VERSION"),
        samples.weight.describe(),
        profile.event
    ))];
    PprofProfile {
        sample_type,
        sample,
        mapping: mappings,
        location: locations,
        function: functions,
        string_table: strings.list,
        time_nanos,
        duration_nanos: (profile.duration_s * 1e9) as i64,
        period_type,
        period,
        comment,
        // Unset (0, the empty string): `go tool pprof` shows the last value (time or events).
        default_sample_type,
    }
}

pub struct Pprof;

impl ProfileExporter for Pprof {
    fn flag(&self) -> &'static str {
        "--pprof"
    }

    /// The gzipped profile.proto bytes.
    fn encode(&self, input: &ExportInput) -> Result<Vec<u8>, ProfileError> {
        use prost::Message;
        let samples = Samples::of(input.profile, input.report);
        let message = match &input.profile.alloc {
            None => message(input.profile, &samples),
            Some(summary) => {
                let mut allocated = samples;
                // A timed sample is one sampled call, standing for `every` calls.
                if allocated.timed {
                    for s in &mut allocated.samples {
                        s.count *= summary.every.max(1);
                    }
                }
                let live = if summary.tracked {
                    let live = view(input.profile, AllocView::Live);
                    let report = perflab_profile::report::build(&live, &Default::default())?;
                    Some(Samples::of(&live, &report))
                } else {
                    None
                };
                alloc_message(input.profile, &allocated, live.as_ref())
            }
        };
        gzip(&message.encode_to_vec())
    }
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>, ProfileError> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes)
        .and_then(|_| gz.finish())
        .map_err(|e| ProfileError::Export { format: "pprof", why: e.to_string() })
}
