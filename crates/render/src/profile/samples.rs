//! A profile's samples as the viewers' formats (Firefox Profiler, speedscope, pprof)
//! want them: perflab's symbolised stacks per thread, with time when the profile has a
//! timeline — made once here so the three exporters cannot disagree.

use perflab_profile::aggregate::{FrameKind, StackFrame};
use perflab_profile::format::{Profile, Weight};
use perflab_profile::report::Report;
use std::collections::HashMap;

/// A stack's (pid, tid, samples, summed periods).
type StackTotals = (u32, u32, u64, u64);

/// A profile's samples as the viewers' formats want them: per sample (or, without a
/// timeline, per distinct stack) its thread, its stack of names and its weight.
pub struct Samples {
    /// Distinct stacks, outermost frame first (the leaf alone without call stacks).
    pub stacks: Vec<Vec<StackFrame>>,
    /// Every sample (or distinct stack's total), in recording order.
    pub samples: Vec<Sample>,
    /// (pid, tid) → the thread's name.
    pub threads: HashMap<(u32, u32), String>,
    /// Whether `samples` are single samples with times (else aggregates at time 0).
    pub timed: bool,
    /// What a sample's weight counts.
    pub weight: Weight,
}

/// One sample, or one distinct stack's total.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Its process.
    pub pid: u32,
    /// Its thread.
    pub tid: u32,
    /// Nanoseconds since the recording's first record (0 without a timeline).
    pub(crate) time_ns: u64,
    /// Index into `stacks`.
    pub stack: usize,
    /// Samples it stands for.
    pub count: u64,
    /// Summed periods: nanoseconds of a clock, else events.
    pub period: u64,
}

impl Samples {
    /// The samples of `profile`, with the stacks of its `report`.
    pub fn of(profile: &Profile, report: &Report) -> Samples {
        // With call stacks, every stack of the profile; else every sampled location.
        let (stacks, keys): (Vec<Vec<StackFrame>>, Vec<StackTotals>) = match &report.graph {
            Some(graph) if !profile.stacks.is_empty() => graph
                .named_stacks()
                .zip(&profile.stacks)
                .map(|(named, s)| {
                    let frames = named.frames.into_iter().filter(|f| f.kind != FrameKind::Process).collect();
                    (frames, (s.pid, s.tid, s.count, s.period))
                })
                .unzip(),
            _ => report
                .located
                .iter()
                .map(|l| {
                    let object = perflab_profile::symbolize::basename(&l.location.object).to_string();
                    let frame = StackFrame { function: l.location.function.clone(), object, kind: FrameKind::Code };
                    (vec![frame], (l.pid, l.tid, l.count, l.period))
                })
                .unzip(),
        };
        let by_stack = !profile.stacks.is_empty() && report.graph.is_some();
        let timeline = profile.timeline.as_ref().filter(|t| !by_stack || t.stack.len() == t.len());
        let samples = match timeline {
            Some(t) => t
                .entries(profile)
                .map(|(time_ns, sample, stack, period)| {
                    let s = &profile.samples[sample as usize];
                    let stack = if by_stack { stack.unwrap_or(0) as usize } else { sample as usize };
                    Sample { pid: s.pid, tid: s.tid, time_ns, stack, count: 1, period }
                })
                .collect(),
            None => keys
                .iter()
                .enumerate()
                .map(|(stack, &(pid, tid, count, period))| Sample { pid, tid, time_ns: 0, stack, count, period })
                .collect(),
        };
        let threads = profile.tasks.iter().map(|t| ((t.pid, t.tid), t.comm.clone())).collect();
        Samples { stacks, samples, threads, timed: timeline.is_some(), weight: profile.weight() }
    }

    /// A thread's name, or a made-up one for threads without a COMM record.
    pub(crate) fn thread_name(&self, pid: u32, tid: u32) -> String {
        match self.threads.get(&(pid, tid)) {
            Some(name) if !name.is_empty() => name.clone(),
            _ => format!("thread {tid}"),
        }
    }

    /// A frame's name as the viewers show it: the function, with `[inlined]` for code
    /// the compiler inlined (kernel functions are recognisable by their object).
    pub(crate) fn frame_name(frame: &StackFrame) -> String {
        match frame.kind {
            FrameKind::Inlined => format!("{} [inlined]", frame.function),
            _ => frame.function.clone(),
        }
    }
}
