//! `--pprof FILE`: the profile as pprof's profile.proto (gzipped), which `go tool pprof`,
//! Parca, Pyroscope and OpenTelemetry's converters read. Two values per sample: the
//! samples, and CPU nanoseconds (clock events) or events (count events), the latter the
//! default; stacks are perflab's symbolised frames (leaf first, as pprof wants), each
//! sample labelled with its pid, tid and thread name.
//!
//! The messages are derived here with prost from profile.proto's field numbers
//! (github.com/google/pprof/blob/main/proto/profile.proto): the crates that ship them
//! generated (pprof, pprof_util) come with a profiler or an allocator attached.

use super::exporter::{ExportInput, ProfileExporter};
use super::samples::Samples;
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
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(bool, tag = "7")]
    pub(crate) has_functions: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub(crate) mapping_id: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub(crate) function_id: u64,
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
    let mut strings = Strings::new();
    let (value_type, value_unit) = match samples.weight {
        Weight::Time => ("cpu", "nanoseconds"),
        Weight::Events => (profile.event.as_str(), "count"),
    };
    let sample_type = vec![
        ValueType { r#type: strings.id("samples"), unit: strings.id("count") },
        ValueType { r#type: strings.id(value_type), unit: strings.id(value_unit) },
    ];
    let mut mappings: Vec<Mapping> = Vec::new();
    let mut mapping_ids: HashMap<String, u64> = HashMap::new();
    // pprof names the profile after its first mapping ("File:"): make it the object
    // holding the most leaf weight (the program), not whichever was met first (ld.so).
    let mut leaf_weight: HashMap<&str, u64> = HashMap::new();
    for s in &samples.samples {
        if let Some(leaf) = samples.stacks[s.stack].last() {
            *leaf_weight.entry(leaf.object.as_str()).or_default() += s.period;
        }
    }
    if let Some((object, _)) = leaf_weight.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0))) {
        mapping_ids.insert(object.to_string(), 1);
        mappings.push(Mapping { id: 1, filename: strings.id(object), has_functions: true });
    }
    let mut functions: Vec<Function> = Vec::new();
    let mut locations: Vec<Location> = Vec::new();
    // One location per distinct (function, object, inlined) frame, one function per name.
    let mut location_ids: HashMap<(String, String, bool), u64> = HashMap::new();
    let mut function_ids: HashMap<(String, String), u64> = HashMap::new();
    let stacks: Vec<Vec<u64>> = samples
        .stacks
        .iter()
        .map(|stack| {
            stack
                .iter()
                .rev()
                .map(|f| {
                    let name = Samples::frame_name(f);
                    let key = (name.clone(), f.object.clone(), false);
                    if let Some(&id) = location_ids.get(&key) {
                        return id;
                    }
                    let mapping_id = *mapping_ids.entry(f.object.clone()).or_insert_with(|| {
                        let id = mappings.len() as u64 + 1;
                        mappings.push(Mapping { id, filename: strings.id(&f.object), has_functions: true });
                        id
                    });
                    let function_id = *function_ids.entry((name.clone(), f.object.clone())).or_insert_with(|| {
                        let id = functions.len() as u64 + 1;
                        let name_id = strings.id(&name);
                        functions.push(Function {
                            id,
                            name: name_id,
                            system_name: name_id,
                            filename: strings.id(&f.object),
                        });
                        id
                    });
                    let id = locations.len() as u64 + 1;
                    locations.push(Location { id, mapping_id, line: vec![Line { function_id }] });
                    location_ids.insert(key, id);
                    id
                })
                .collect()
        })
        .collect();
    // Samples merge per (thread, stack): pprof has no time axis.
    let mut merged: HashMap<(u32, u32, usize), (u64, u64)> = HashMap::new();
    for s in &samples.samples {
        let e = merged.entry((s.pid, s.tid, s.stack)).or_default();
        e.0 += s.count;
        e.1 += s.period;
    }
    let mut keys: Vec<(u32, u32, usize)> = merged.keys().copied().collect();
    keys.sort_unstable();
    let (pid_key, tid_key, thread_key) = (strings.id("pid"), strings.id("tid"), strings.id("thread"));
    let sample = keys
        .into_iter()
        .map(|(pid, tid, stack)| {
            let (count, period) = merged[&(pid, tid, stack)];
            let label = vec![
                Label { key: pid_key, str: 0, num: pid.into() },
                Label { key: tid_key, str: 0, num: tid.into() },
                Label { key: thread_key, str: strings.id(&samples.thread_name(pid, tid)), num: 0 },
            ];
            PprofSample { location_id: stacks[stack].clone(), value: vec![count as i64, period as i64], label }
        })
        .collect();
    let time_nanos =
        chrono::DateTime::parse_from_rfc3339(&profile.started).ok().and_then(|t| t.timestamp_nanos_opt()).unwrap_or(0);
    let period = match (profile.sample_period, profile.frequency_hz) {
        (Some(p), _) => p as i64,
        (None, hz) if hz > 0 && profile.period_is_time() => 1_000_000_000 / hz as i64,
        _ => 0,
    };
    let period_type = Some(ValueType { r#type: strings.id(value_type), unit: strings.id(value_unit) });
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
        // The second value (time or events) is what `go tool pprof` shows by default.
        default_sample_type: 0,
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
        gzip(&message(input.profile, &Samples::of(input.profile, input.report)).encode_to_vec())
    }
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>, ProfileError> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes)
        .and_then(|_| gz.finish())
        .map_err(|e| ProfileError::Export { format: "pprof", why: e.to_string() })
}
