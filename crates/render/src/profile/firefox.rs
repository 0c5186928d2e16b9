//! `--firefox FILE`: the profile in the Firefox Profiler's processed format, written by
//! its own Rust crate (fxprof-processed-profile, samply's writer): one process per pid
//! with one track per thread, every sample at its time on that track (a timeline), each
//! frame a label already symbolised by perflab (the file needs no symbol server), in
//! a category by where the code is (user, kernel, JIT). A count event's samples weigh
//! their periods (the call tree counts events).

use super::exporter::{ExportInput, ProfileExporter};
use super::samples::Samples;
use fxprof_processed_profile::{
    CategoryColor, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo, ProcessHandle, Profile as Processed,
    ReferenceTimestamp, SamplingInterval, ThreadHandle, Timestamp, WeightType,
};
use perflab_profile::aggregate::{FrameKind, StackFrame};
use perflab_profile::error::ProfileError;
use perflab_profile::format::{Profile, Weight};
use perflab_profile::kernel;
use std::collections::HashMap;

pub struct Firefox;

impl ProfileExporter for Firefox {
    fn flag(&self) -> &'static str {
        "--firefox"
    }

    fn encode(&self, input: &ExportInput) -> Result<Vec<u8>, ProfileError> {
        let processed = processed(input.profile, &Samples::of(input.profile, input.report), input.title);
        serde_json::to_vec(&processed)
            .map_err(|e| ProfileError::Export { format: "Firefox Profiler", why: e.to_string() })
    }
}

/// The processed profile of `profile`, as fxprof-processed-profile builds it.
pub fn processed(profile: &Profile, samples: &Samples, title: &str) -> Processed {
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
        if samples.weight == Weight::Events {
            out.set_thread_samples_weight_type(thread, WeightType::Samples);
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
                .map(|f| FrameInfo {
                    frame: Frame::Label(out.intern_string(&Samples::frame_name(f))),
                    category_pair: category(f),
                    flags: if f.object == "[jit]" && f.kind != FrameKind::Inlined {
                        FrameFlags::IS_JS
                    } else {
                        FrameFlags::empty()
                    },
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
    out
}
