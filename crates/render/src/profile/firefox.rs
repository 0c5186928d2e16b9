//! `--firefox FILE`: the profile in the Firefox Profiler's processed format, written by
//! its own Rust crate (fxprof-processed-profile, samply's writer): one process per pid
//! with one track per thread, every sample at its time on that track (a timeline), in
//! a category by where the code is (user, kernel, JIT). A count event's samples weigh
//! their periods (the call tree counts events).
//!
//! Code in an object perflab read is a frame at its address in a library (`libs`, with
//! path and build ID as `codeId`/`breakpadId`), named by a symbol table of the functions
//! perflab found (`nativeSymbols`, one resource per library); other frames (kernel,
//! JIT, unknown) are labels already symbolised by perflab. The crate writes neither
//! source lines nor inlined frames (its frame table has `line: null`, `inlineDepth: 0`),
//! so [`add_lines`] fills them into its JSON: each function's `fileName` and
//! `lineNumber`, each frame's `line`, and the functions inlined at an address as frames
//! at that address one `inlineDepth` deeper, as the Firefox Profiler's own symbolication
//! writes them.

use super::exporter::{ExportInput, ProfileExporter};
use super::samples::Samples;
use fxprof_processed_profile::debugid::DebugId;
use fxprof_processed_profile::{
    CategoryColor, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo, LibraryHandle, LibraryInfo,
    ProcessHandle, Profile as Processed, ReferenceTimestamp, SamplingInterval, Symbol, SymbolTable, ThreadHandle,
    Timestamp, WeightType,
};
use perflab_profile::aggregate::{FrameKind, StackFrame};
use perflab_profile::error::ProfileError;
use perflab_profile::format::{Profile, Weight};
use perflab_profile::kernel;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

pub struct Firefox;

impl ProfileExporter for Firefox {
    fn flag(&self) -> &'static str {
        "--firefox"
    }

    fn encode(&self, input: &ExportInput) -> Result<Vec<u8>, ProfileError> {
        let failed = |e: serde_json::Error| ProfileError::Export { format: "Firefox Profiler", why: e.to_string() };
        let samples = Samples::of(input.profile, input.report);
        let (processed, lines) = processed_with_lines(input.profile, &samples, input.title);
        let mut json = serde_json::to_value(&processed).map_err(failed)?;
        add_lines(&mut json, &lines);
        serde_json::to_vec(&json).map_err(failed)
    }
}

/// Marks a label that stands for a function inlined at an address, until [`add_lines`]
/// makes it a frame at that address: `name MARK library MARK address MARK depth`. The
/// crate interns frames by label, so each (address, depth) needs a label of its own.
const INLINED_MARK: char = '\u{1}';

/// What [`add_lines`] fills in, per library path.
#[derive(Default)]
pub(crate) struct Lines {
    /// Library paths, in the order of the marks' library numbers.
    libraries: Vec<String>,
    /// (library, relative address, inline depth) → line.
    lines: HashMap<(usize, u32, u32), u32>,
    /// (library, function name) → (source file, start line).
    functions: HashMap<(usize, String), (String, Option<u32>)>,
}

/// The processed profile of `profile`, as fxprof-processed-profile builds it (without
/// source lines and with inlined functions as marked labels), and the lines
/// [`add_lines`] completes its JSON with.
fn processed_with_lines(profile: &Profile, samples: &Samples, title: &str) -> (Processed, Lines) {
    let started = chrono::DateTime::parse_from_rfc3339(&profile.started)
        .map(|t| {
            std::time::UNIX_EPOCH + std::time::Duration::from_nanos(t.timestamp_nanos_opt().unwrap_or(0).max(0) as u64)
        })
        .unwrap_or_else(|_| std::time::SystemTime::now());
    let interval = match (profile.sample_period, profile.frequency_hz) {
        (Some(ns), _) if profile.period_is_time() => SamplingInterval::from_nanos(ns),
        (_, hz) if hz > 0 => SamplingInterval::from_hz(hz as f32),
        _ => SamplingInterval::from_millis(1),
    };
    let mut out = Processed::new(title, ReferenceTimestamp::from_system_time(started), interval);
    out.set_os_name("Linux");
    let user: CategoryPairHandle = out.add_category("User", CategoryColor::Yellow).into();
    let kernel_category: CategoryPairHandle = out.add_category("Kernel", CategoryColor::Orange).into();
    let jit: CategoryPairHandle = out.add_category("JIT", CategoryColor::Green).into();
    let category = |frame: &StackFrame| {
        if kernel::is_kernel_object(&frame.object) {
            kernel_category
        } else if frame.object == "[jit]" {
            jit
        } else {
            user
        }
    };
    let (libraries, mut lines) = libraries(&mut out, samples);
    let mut processes: HashMap<u32, ProcessHandle> = HashMap::new();
    let mut threads: HashMap<(u32, u32), ThreadHandle> = HashMap::new();
    let mut pairs: Vec<(u32, u32)> = samples.samples.iter().map(|s| (s.pid, s.tid)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let zero = Timestamp::from_nanos_since_reference(0);
    for &(pid, tid) in &pairs {
        let process =
            *processes.entry(pid).or_insert_with(|| out.add_process(&samples.thread_name(pid, pid), pid, zero));
        let thread = out.add_thread(process, tid, zero, tid == pid);
        out.set_thread_name(thread, &samples.thread_name(pid, tid));
        // What the call tree's columns count: an allocation profile's weights are
        // bytes requested ("Total Size (bytes)"), a count event's its events.
        if let Some(weight_type) = weight_type(profile, samples.weight) {
            out.set_thread_samples_weight_type(thread, weight_type);
        }
        threads.insert((pid, tid), thread);
    }
    // Each thread interns each stack once.
    let mut interned: HashMap<(ThreadHandle, usize), Option<fxprof_processed_profile::StackHandle>> = HashMap::new();
    for s in &samples.samples {
        let thread = threads[&(s.pid, s.tid)];
        let stack = *interned.entry((thread, s.stack)).or_insert_with(|| {
            let frames: Vec<FrameInfo> = samples.stacks[s.stack]
                .iter()
                .zip(&samples.places[s.stack])
                .map(|(f, place)| {
                    let library = place.mapping.and_then(|m| libraries.get(&samples.mappings[m].path));
                    let frame = match library {
                        Some(&(handle, number, base)) => {
                            let relative = u32::try_from(place.address - base).unwrap_or(u32::MAX);
                            if let Some(line) = place.line {
                                lines.lines.insert((number, relative, place.inline_depth), line);
                            }
                            if let Some(file) = &place.file {
                                lines
                                    .functions
                                    .entry((number, f.function.clone()))
                                    .or_insert_with(|| (file.clone(), place.start_line));
                            }
                            if f.kind == FrameKind::Inlined {
                                let label = format!(
                                    "{}{INLINED_MARK}{number}{INLINED_MARK}{relative}{INLINED_MARK}{}",
                                    f.function, place.inline_depth
                                );
                                Frame::Label(out.intern_string(&label))
                            } else {
                                Frame::RelativeAddressFromInstructionPointer(handle, relative)
                            }
                        }
                        None => Frame::Label(out.intern_string(&Samples::frame_name(f))),
                    };
                    FrameInfo {
                        frame,
                        category_pair: category(f),
                        flags: if f.object == "[jit]" && f.kind != FrameKind::Inlined {
                            FrameFlags::IS_JS
                        } else {
                            FrameFlags::empty()
                        },
                    }
                })
                .collect();
            out.intern_stack_frames(thread, frames.into_iter())
        });
        let time = Timestamp::from_nanos_since_reference(s.time_ns);
        // A clock's sample is its period of CPU time; a count event's weighs its events.
        let (cpu, weight) = match samples.weight {
            Weight::Time => (CpuDelta::from_nanos(s.period), s.count),
            Weight::Events => (CpuDelta::from_nanos(0), s.period),
        };
        out.add_sample(thread, time, stack, cpu, i32::try_from(weight).unwrap_or(i32::MAX));
    }
    out.set_symbolicated(true);
    (out, lines)
}

/// The weight type of the samples' `weight` column, when it is not the crate's default
/// (samples): an allocation profile's periods are bytes requested, and the Firefox
/// Profiler names them so only when told.
fn weight_type(profile: &Profile, weight: Weight) -> Option<WeightType> {
    match (&profile.alloc, weight) {
        (Some(_), _) => Some(WeightType::Bytes),
        (None, Weight::Events) => Some(WeightType::Samples),
        (None, Weight::Time) => None,
    }
}

/// A library per object perflab read, with a symbol table of the functions sampled in
/// it (perflab's names, so the call tree reads as perflab's report): path → (handle,
/// number in [`Lines::libraries`], the address relative addresses count from).
fn libraries(out: &mut Processed, samples: &Samples) -> (HashMap<String, (LibraryHandle, usize, u64)>, Lines) {
    let mut symbols: HashMap<&str, Vec<Symbol>> = HashMap::new();
    for (stack, places) in samples.stacks.iter().zip(&samples.places) {
        for (f, place) in stack.iter().zip(places) {
            let Some(mapping) = place.mapping.map(|m| &samples.mappings[m]).filter(|m| m.read) else { continue };
            if f.kind != FrameKind::Code {
                continue;
            }
            // Code outside every symbol is named as perflab names it, at its own address.
            let (start, size) = place.function.unwrap_or((place.address, 1));
            symbols.entry(&mapping.path).or_default().push(Symbol {
                address: u32::try_from(start.saturating_sub(mapping.image_base)).unwrap_or(u32::MAX),
                size: u32::try_from(size).ok(),
                name: f.function.clone(),
            });
        }
    }
    let mut libraries = HashMap::new();
    let mut lines = Lines::default();
    for mapping in samples.mappings.iter().filter(|m| m.read) {
        if libraries.contains_key(&mapping.path) {
            continue;
        }
        let build_id = mapping.build_id.as_deref().and_then(|hex| {
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                .collect::<Option<Vec<u8>>>()
        });
        // As samply and Breakpad make an ELF file's debug ID: the build ID's first 16
        // bytes read as a GUID, age 0.
        let debug_id = build_id
            .map(|mut id| {
                id.resize(16, 0);
                DebugId::from_guid_age(&id[..16], 0).unwrap_or_default()
            })
            .unwrap_or_default();
        let name = perflab_profile::symbolize::basename(&mapping.path).to_string();
        let table = symbols.remove(mapping.path.as_str()).unwrap_or_default();
        let handle = out.add_lib(LibraryInfo {
            name: name.clone(),
            debug_name: name,
            path: mapping.path.clone(),
            debug_path: mapping.path.clone(),
            debug_id,
            code_id: mapping.build_id.clone(),
            arch: Some(std::env::consts::ARCH.to_string()),
            symbol_table: Some(Arc::new(SymbolTable::new(table))),
        });
        libraries.insert(mapping.path.clone(), (handle, lines.libraries.len(), mapping.image_base));
        lines.libraries.push(mapping.path.clone());
    }
    (libraries, lines)
}

/// Fill what fxprof-processed-profile leaves empty into its JSON `profile` (see the
/// module comment): functions' files and start lines, frames' lines, inlined frames.
/// Columns follow the Firefox Profiler's src/types/profile.js.
pub(crate) fn add_lines(profile: &mut Value, lines: &Lines) {
    // The file's `libs` order is the crate's: map it to ours by path.
    let library_of: Vec<Option<usize>> = profile["libs"]
        .as_array()
        .map(|libs| {
            libs.iter().map(|l| lines.libraries.iter().position(|p| Some(p.as_str()) == l["path"].as_str())).collect()
        })
        .unwrap_or_default();
    let Some(threads) = profile["threads"].as_array_mut() else { return };
    for thread in threads {
        add_thread_lines(thread, lines, &library_of);
    }
}

fn add_thread_lines(thread: &mut Value, lines: &Lines, library_of: &[Option<usize>]) {
    let mut strings: Vec<String> = serde_json::from_value(thread["stringArray"].take()).unwrap_or_default();
    let mut string_ids: HashMap<String, usize> = strings.iter().enumerate().map(|(i, s)| (s.clone(), i)).collect();
    let mut string_id = |s: &str, strings: &mut Vec<String>| {
        *string_ids.entry(s.to_string()).or_insert_with(|| {
            strings.push(s.to_string());
            strings.len() - 1
        })
    };
    let column = |table: &Value, name: &str| -> Vec<Value> { table[name].as_array().cloned().unwrap_or_default() };
    let (funcs, frames, resources) = (&thread["funcTable"], &thread["frameTable"], &thread["resourceTable"]);
    let mut func_name = column(funcs, "name");
    let mut func_resource = column(funcs, "resource");
    let mut func_file = column(funcs, "fileName");
    let mut func_line = column(funcs, "lineNumber");
    let mut func_column = column(funcs, "columnNumber");
    let mut func_is_js = column(funcs, "isJS");
    let mut func_relevant = column(funcs, "relevantForJS");
    let frame_func = column(frames, "func");
    let mut frame_address = column(frames, "address");
    let mut frame_depth = column(frames, "inlineDepth");
    let mut frame_line = column(frames, "line");
    let mut frame_symbol = column(frames, "nativeSymbol");
    let frame_funcs: Vec<usize> = frame_func.iter().map(|f| f.as_u64().unwrap_or(0) as usize).collect();
    let resource_lib = column(resources, "lib");
    // Our library number per resource, and the resource per library number.
    let library_of_resource = |r: &Value| -> Option<usize> {
        let lib = resource_lib.get(r.as_u64()? as usize)?.as_u64()? as usize;
        library_of.get(lib).copied().flatten()
    };
    let resource_of_library: HashMap<usize, usize> =
        (0..resource_lib.len()).filter_map(|r| Some((library_of_resource(&Value::from(r))?, r))).collect();
    // The native symbol of each code frame's address, for the frames inlined there.
    let mut symbol_at: HashMap<(usize, u64), Value> = HashMap::new();
    for (i, &func) in frame_funcs.iter().enumerate() {
        let (Some(library), Some(address)) =
            (func_resource.get(func).and_then(library_of_resource), frame_address[i].as_i64())
        else {
            continue;
        };
        if address >= 0 {
            symbol_at.insert((library, address as u64), frame_symbol[i].clone());
        }
    }
    // Functions inlined somewhere: one per (name, library), made on first use.
    let mut inlined_funcs: HashMap<(String, usize), usize> = HashMap::new();
    let mut new_frame_func = frame_func.clone();
    for (i, &func) in frame_funcs.iter().enumerate() {
        let name = func_name[func].as_u64().and_then(|s| strings.get(s as usize)).cloned().unwrap_or_default();
        let marked: Vec<&str> = name.split(INLINED_MARK).collect();
        if let [function, library, address, depth] = marked[..] {
            let (Ok(library), Ok(address), Ok(depth)) = (library.parse(), address.parse::<u32>(), depth.parse()) else {
                continue;
            };
            let function = function.to_string();
            let new_func = *inlined_funcs.entry((function.clone(), library)).or_insert_with(|| {
                let (file, start) = lines.functions.get(&(library, function.clone())).cloned().unzip();
                func_name.push(Value::from(string_id(&function, &mut strings)));
                func_resource.push(resource_of_library.get(&library).map_or(Value::from(-1), |&r| Value::from(r)));
                func_file.push(file.map_or(Value::Null, |f| Value::from(string_id(&f, &mut strings))));
                func_line.push(start.flatten().map_or(Value::Null, Value::from));
                func_column.push(Value::Null);
                func_is_js.push(Value::from(false));
                func_relevant.push(Value::from(false));
                func_name.len() - 1
            });
            new_frame_func[i] = Value::from(new_func);
            // The label's own function is no frame's now; it keeps the plain name.
            func_name[func] = func_name[new_func].clone();
            frame_address[i] = Value::from(address);
            frame_depth[i] = Value::from(depth);
            frame_symbol[i] = symbol_at.get(&(library, address.into())).cloned().unwrap_or(Value::Null);
            frame_line[i] = lines.lines.get(&(library, address, depth)).map_or(Value::Null, |&l| Value::from(l));
            continue;
        }
        let (Some(library), Some(address)) =
            (func_resource.get(func).and_then(library_of_resource), frame_address[i].as_u64())
        else {
            continue;
        };
        let address = u32::try_from(address).unwrap_or(u32::MAX);
        frame_line[i] = lines.lines.get(&(library, address, 0)).map_or(Value::Null, |&l| Value::from(l));
        if func_file[func].is_null() {
            if let Some((file, start)) = lines.functions.get(&(library, name.clone())) {
                func_file[func] = Value::from(string_id(file, &mut strings));
                func_line[func] = start.map_or(Value::Null, Value::from);
            }
        }
    }
    let funcs = &mut thread["funcTable"];
    funcs["length"] = Value::from(func_name.len());
    funcs["name"] = Value::from(func_name);
    funcs["resource"] = Value::from(func_resource);
    funcs["fileName"] = Value::from(func_file);
    funcs["lineNumber"] = Value::from(func_line);
    funcs["columnNumber"] = Value::from(func_column);
    funcs["isJS"] = Value::from(func_is_js);
    funcs["relevantForJS"] = Value::from(func_relevant);
    let frames = &mut thread["frameTable"];
    frames["func"] = Value::from(new_frame_func);
    frames["address"] = Value::from(frame_address);
    frames["inlineDepth"] = Value::from(frame_depth);
    frames["line"] = Value::from(frame_line);
    frames["nativeSymbol"] = Value::from(frame_symbol);
    thread["stringArray"] = Value::from(strings);
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_profile::allocations::AllocSummary;
    use perflab_profile::format::{SampleCount, Space};

    /// One user-space-less sample of `period` at an unmapped address, of `event`.
    fn encoded(event: &str, alloc: Option<AllocSummary>, period: u64) -> Value {
        let sample =
            SampleCount { pid: 7, tid: 7, space: Space::Unmapped, object: None, offset: 0x1000, count: 3, period };
        let profile = Profile { event: event.into(), alloc, samples: vec![sample], ..Profile::default() };
        let report = perflab_profile::report::build(&profile, &Default::default()).unwrap();
        let flame = crate::profile::flame::FlameOptions::default();
        let input = ExportInput { profile: &profile, report: &report, title: "t", flame: &flame };
        serde_json::from_slice(&Firefox.encode(&input).unwrap()).unwrap()
    }

    fn samples(file: &Value) -> &Value {
        &file["threads"][0]["samples"]
    }

    // The Firefox Profiler's loader read an allocation profile's bytes as "samples"
    // (its call tree said "Running samples" over byte counts).
    #[test]
    fn an_allocation_profiles_weights_are_bytes() {
        let file = encoded("alloc-bytes", Some(AllocSummary::default()), 4096);
        assert_eq!(samples(&file)["weightType"], "bytes");
        assert_eq!(samples(&file)["weight"], serde_json::json!([4096]));
    }

    #[test]
    fn a_count_events_weights_are_its_events_and_a_clocks_its_samples() {
        let faults = encoded("page-faults", None, 40);
        assert_eq!(
            (samples(&faults)["weightType"].as_str(), &samples(&faults)["weight"]),
            (Some("samples"), &serde_json::json!([40]))
        );
        let clock = encoded("cpu-clock", None, 3_000_000);
        assert_eq!(
            (samples(&clock)["weightType"].as_str(), &samples(&clock)["weight"]),
            (Some("samples"), &serde_json::json!([3]))
        );
    }
}
