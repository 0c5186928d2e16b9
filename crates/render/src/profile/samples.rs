//! A profile's samples as the viewers' formats (Firefox Profiler, speedscope, pprof)
//! want them: perflab's symbolised stacks per thread, with time when the profile has a
//! timeline, and where each frame is (mapping, address, source line, inline depth) —
//! made once here so the three exporters cannot disagree.

use perflab_profile::aggregate::{FrameKind, StackFrame};
use perflab_profile::format::{Profile, Weight};
use perflab_profile::report::Report;
use perflab_profile::sites::{self, Mapping, Site};
use std::collections::HashMap;

/// A stack's (pid, tid, samples, summed periods).
type StackTotals = (u32, u32, u64, u64);

/// A stack's frames, outermost first, and where each is.
type PlacedStack = (Vec<StackFrame>, Vec<Place>);

/// A profile's samples as the viewers' formats want them: per sample (or, without a
/// timeline, per distinct stack) its thread, its stack of names and its weight.
pub struct Samples {
    /// Distinct stacks, outermost frame first (the leaf and the functions inlined at
    /// it without call stacks).
    pub stacks: Vec<Vec<StackFrame>>,
    /// Per frame of `stacks`, where it is.
    pub places: Vec<Vec<Place>>,
    /// The mappings places are in.
    pub mappings: Vec<Mapping>,
    /// Every sample (or distinct stack's total), in recording order.
    pub samples: Vec<Sample>,
    /// (pid, tid) → the thread's name.
    pub threads: HashMap<(u32, u32), String>,
    /// Whether `samples` are single samples with times (else aggregates at time 0).
    pub timed: bool,
    /// What a sample's weight counts.
    pub weight: Weight,
}

/// Where a frame is: an inlined function's frame has its caller's mapping and address,
/// one level deeper.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Place {
    /// Index into [`Samples::mappings`]; None outside every object.
    pub mapping: Option<usize>,
    /// Its address (see `perflab_profile::sites` for the load bases).
    pub address: u64,
    /// The enclosing function's start address and size, when a symbol covers it.
    pub function: Option<(u64, u64)>,
    /// The source file of this level.
    pub file: Option<String>,
    /// The line in it.
    pub line: Option<u32>,
    /// The line the function starts at.
    pub start_line: Option<u32>,
    /// 0 for the code frame, 1 for the function inlined into it, and so on.
    pub inline_depth: u32,
}

impl Place {
    /// The place of level `depth` of `site` (0: the enclosing function).
    fn at(site: &Site, depth: u32) -> Place {
        let level = site.lines.len().checked_sub(1 + depth as usize).and_then(|i| site.lines.get(i));
        Place {
            mapping: site.mapping,
            address: site.address,
            function: site.function,
            file: level.and_then(|l| l.file.clone()),
            line: level.and_then(|l| l.line),
            start_line: level.and_then(|l| l.start_line),
            inline_depth: depth,
        }
    }
}

/// The places of a call graph stack's frames (outermost first, process root removed),
/// from the sites of its profile frames (outermost first): each code frame takes the
/// next site, the inlined frames after it that site's deeper levels.
fn places_of<'a>(frames: &[StackFrame], mut sites: impl Iterator<Item = &'a Site>) -> Vec<Place> {
    let mut current: Option<&Site> = None;
    let mut depth = 0;
    frames
        .iter()
        .map(|f| {
            if f.kind == FrameKind::Inlined {
                depth += 1;
            } else {
                current = sites.next();
                depth = 0;
            }
            current.map(|site| Place::at(site, depth)).unwrap_or_default()
        })
        .collect()
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
        let sites = sites::of(profile, &mut report.symbolizer.borrow_mut());
        // With call stacks, every stack of the profile; else every sampled location.
        let (stacks, keys): (Vec<PlacedStack>, Vec<StackTotals>) =
            match &report.graph {
                Some(graph) if !profile.stacks.is_empty() => graph
                    .named_stacks()
                    .zip(&profile.stacks)
                    .map(|(named, s)| {
                        let frames: Vec<StackFrame> =
                            named.frames.into_iter().filter(|f| f.kind != FrameKind::Process).collect();
                        let places = places_of(&frames, s.frames.iter().rev().map(|&f| &sites.frames[f as usize]));
                        ((frames, places), (s.pid, s.tid, s.count, s.period))
                    })
                    .unzip(),
                _ => report
                    .located
                    .iter()
                    .zip(&sites.samples)
                    .map(|(l, site)| {
                        let object = perflab_profile::symbolize::basename(&l.location.object).to_string();
                        let code = StackFrame {
                            function: l.location.function.clone(),
                            object: object.clone(),
                            kind: FrameKind::Code,
                        };
                        // The functions inlined at the leaf, outermost first, as the call graph has them.
                        let inlined =
                            site.lines.iter().rev().filter_map(|line| line.inlined.clone()).map(|function| {
                                StackFrame { function, object: object.clone(), kind: FrameKind::Inlined }
                            });
                        let frames: Vec<StackFrame> = std::iter::once(code).chain(inlined).collect();
                        let places = places_of(&frames, std::iter::once(site));
                        ((frames, places), (l.pid, l.tid, l.count, l.period))
                    })
                    .unzip(),
            };
        let (stacks, places): (Vec<Vec<StackFrame>>, Vec<Vec<Place>>) = stacks.into_iter().unzip();
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
        Samples {
            stacks,
            places,
            mappings: sites.mappings,
            samples,
            threads,
            timed: timeline.is_some(),
            weight: profile.weight(),
        }
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
