//! `--speedscope FILE`: the profile in speedscope's file format
//! (<https://www.speedscope.app/file-format-schema.json>): shared frames (function,
//! the source file and the line it starts at — the object's path when there is no debug
//! information), one "sampled" profile per thread with its stacks (outermost frame first)
//! in time order and their weights — nanoseconds of CPU time for a clock, events for a
//! count event. Written with serde: the schema is a small JSON document and no crate
//! writes it.

use super::exporter::{ExportInput, ProfileExporter};
use super::samples::Samples;
use perflab_profile::error::ProfileError;
use perflab_profile::format::{Profile, Weight};
use serde::Serialize;
use std::collections::HashMap;

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared,
    profiles: Vec<Sampled>,
    name: &'a str,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    exporter: String,
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<FrameJson>,
}

#[derive(Serialize, PartialEq, Eq, Hash, Clone)]
struct FrameJson {
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    file: String,
    /// The line the function starts at: speedscope's frames are functions, not lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
}

#[derive(Serialize)]
struct Sampled {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: u64,
    #[serde(rename = "endValue")]
    end_value: u64,
    samples: Vec<Vec<usize>>,
    weights: Vec<u64>,
}

pub struct Speedscope;

impl ProfileExporter for Speedscope {
    fn flag(&self) -> &'static str {
        "--speedscope"
    }

    fn encode(&self, input: &ExportInput) -> Result<Vec<u8>, ProfileError> {
        encode(input.profile, &Samples::of(input.profile, input.report), input.title)
    }
}

/// The speedscope JSON of `profile`.
fn encode(profile: &Profile, samples: &Samples, title: &str) -> Result<Vec<u8>, ProfileError> {
    let mut frames: Vec<FrameJson> = Vec::new();
    let mut frame_ids: HashMap<FrameJson, usize> = HashMap::new();
    // Per stack of the profile, its frame indices (root first).
    let stacks: Vec<Vec<usize>> = samples
        .stacks
        .iter()
        .zip(&samples.places)
        .map(|(stack, places)| {
            stack
                .iter()
                .zip(places)
                .map(|(f, place)| {
                    let object =
                        || place.mapping.map_or_else(|| f.object.clone(), |m| samples.mappings[m].path.clone());
                    let (file, line) = match &place.file {
                        Some(file) => (file.clone(), place.start_line),
                        None => (object(), None),
                    };
                    let frame = FrameJson { name: Samples::frame_name(f), file, line };
                    *frame_ids.entry(frame.clone()).or_insert_with(|| {
                        frames.push(frame);
                        frames.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    let unit = match samples.weight {
        Weight::Time => "nanoseconds",
        Weight::Events => "none",
    };
    let mut by_thread: Vec<((u32, u32), Sampled)> = Vec::new();
    let mut index: HashMap<(u32, u32), usize> = HashMap::new();
    for s in &samples.samples {
        let i = *index.entry((s.pid, s.tid)).or_insert_with(|| {
            let name = format!("{} (pid {}, tid {})", samples.thread_name(s.pid, s.tid), s.pid, s.tid);
            by_thread.push((
                (s.pid, s.tid),
                Sampled {
                    kind: "sampled",
                    name,
                    unit,
                    start_value: 0,
                    end_value: 0,
                    samples: Vec::new(),
                    weights: Vec::new(),
                },
            ));
            by_thread.len() - 1
        });
        let thread = &mut by_thread[i].1;
        thread.samples.push(stacks[s.stack].clone());
        thread.weights.push(s.period);
        thread.end_value += s.period;
    }
    // The busiest thread first: speedscope opens the first profile.
    by_thread.sort_by(|a, b| b.1.end_value.cmp(&a.1.end_value).then(a.0.cmp(&b.0)));
    let file = File {
        schema: "https://www.speedscope.app/file-format-schema.json",
        shared: Shared { frames },
        profiles: by_thread.into_iter().map(|(_, p)| p).collect(),
        name: title,
        active_profile_index: 0,
        exporter: format!("perflab {} ({} of {})", env!("CARGO_PKG_VERSION"), samples.weight.describe(), profile.event),
    };
    serde_json::to_vec(&file).map_err(|e| ProfileError::Export { format: "speedscope", why: e.to_string() })
}
