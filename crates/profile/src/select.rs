//! Keeping only some of a profile's samples, as `perf report --comm/--pid/--tid/--dso/
//! --symbols` does: the tasks, the objects and the functions the samples landed in. Applied to the profile before
//! anything is aggregated, so every view (tables, callers, flame graphs, exports, diffs)
//! sees the same samples and shares are of what was kept.

use super::aggregate;
use super::format::{FrameRef, Profile, Space, Timeline};
use super::symbolize::{normalize, Symbolizer};
use std::collections::HashMap;
use std::path::Path;

/// Which samples to keep; an empty list keeps everything for that field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleFilter {
    /// Command names (`comm`), exactly.
    pub comms: Vec<String>,
    /// Process ids, exactly.
    pub pids: Vec<u32>,
    /// Thread ids, exactly.
    pub tids: Vec<u32>,
    /// Objects the sampled code is in: a path or a file name (`libc.so.6`);
    /// `[kernel.kallsyms]` (or `[kernel]`) for kernel code, `[unknown]` for code outside
    /// any mapped file.
    pub dsos: Vec<String>,
    /// Functions the samples landed in (self, not callers), by exact name as perflab
    /// shows them (demangled, clone suffixes dropped: `foo.isra.0` is `foo`, and either
    /// spelling may be given).
    pub symbols: Vec<String>,
}

/// What a filter kept: samples (not periods), of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    /// Samples kept.
    pub samples: u64,
    /// Samples before filtering.
    pub of: u64,
}

impl SampleFilter {
    /// True when the filter keeps everything.
    pub fn is_empty(&self) -> bool {
        self.comms.is_empty()
            && self.pids.is_empty()
            && self.tids.is_empty()
            && self.dsos.is_empty()
            && self.symbols.is_empty()
    }

    /// The flags this filter came from, for messages (`--comm postgres --dso libc.so.6`).
    pub fn describe(&self) -> String {
        let list =
            |flag: &str, values: Vec<String>| (!values.is_empty()).then(|| format!("--{flag} {}", values.join(",")));
        [
            list("comm", self.comms.clone()),
            list("pid", self.pids.iter().map(u32::to_string).collect()),
            list("tid", self.tids.iter().map(u32::to_string).collect()),
            list("dso", self.dsos.clone()),
            list("symbol", self.symbols.clone()),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
    }

    /// Drop the samples and call stacks outside the filter (a stack is judged by its
    /// task and its leaf, the sampled location).
    pub fn apply(&self, profile: &mut Profile) -> Kept {
        let of = profile.samples.iter().map(|s| s.count).sum();
        if self.is_empty() {
            return Kept { samples: of, of };
        }
        let comms: HashMap<(u32, u32), String> =
            profile.tasks.iter().map(|t| ((t.pid, t.tid), t.comm.clone())).collect();
        let objects: Vec<String> = profile.objects.iter().map(|o| o.path.clone()).collect();
        let task_kept = |pid: u32, tid: u32| {
            (self.pids.is_empty() || self.pids.contains(&pid))
                && (self.tids.is_empty() || self.tids.contains(&tid))
                && (self.comms.is_empty() || comms.get(&(pid, tid)).is_some_and(|c| self.comms.contains(c)))
        };
        let dso_kept = |space: Space, object: Option<u32>| {
            self.dsos.is_empty() || self.dsos.iter().any(|d| dso_matches(d, space, object, &objects))
        };
        // Functions need symbolising: only when asked for (the report symbolises again).
        let (sample_functions, frame_functions): (Vec<String>, Vec<String>) = if self.symbols.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            let mut symbolizer = Symbolizer::default();
            let samples = aggregate::locate(profile, &mut symbolizer).into_iter().map(|l| l.location.function.clone());
            let frames = aggregate::locate_frames(profile, &mut symbolizer).into_iter().map(|l| l.function);
            (samples.collect(), frames.collect())
        };
        let symbols: Vec<String> = self.symbols.iter().map(|s| normalize(s)).collect();
        let symbol_kept =
            |function: Option<&String>| symbols.is_empty() || function.is_some_and(|f| symbols.contains(f));
        let sample_kept: Vec<bool> = profile
            .samples
            .iter()
            .enumerate()
            .map(|(i, s)| {
                task_kept(s.pid, s.tid) && dso_kept(s.space, s.object) && symbol_kept(sample_functions.get(i))
            })
            .collect();
        let stack_kept: Vec<bool> = profile
            .stacks
            .iter()
            .map(|s| {
                let leaf = s.frames.first().map(|&i| i as usize);
                let leaf_frame: Option<&FrameRef> = leaf.and_then(|i| profile.frames.get(i));
                task_kept(s.pid, s.tid)
                    && leaf_frame.is_some_and(|f| dso_kept(f.space, f.object))
                    && symbol_kept(leaf.and_then(|i| frame_functions.get(i)))
            })
            .collect();
        if let Some(timeline) = profile.timeline.take() {
            profile.timeline = Some(kept_timeline(timeline, &sample_kept, &stack_kept));
        }
        let mut kept = sample_kept.iter();
        profile.samples.retain(|_| *kept.next().expect("one flag per sample"));
        let mut kept = stack_kept.iter();
        profile.stacks.retain(|_| *kept.next().expect("one flag per stack"));
        Kept { samples: profile.samples.iter().map(|s| s.count).sum(), of }
    }
}

/// New index of each kept entry (None for dropped ones).
fn renumber(kept: &[bool]) -> Vec<Option<u32>> {
    let mut next = 0u32;
    kept.iter()
        .map(|&k| {
            k.then(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// The timeline of the kept samples, indices renumbered as `samples` and `stacks` are;
/// a dropped sample's time since the previous one goes to the next kept one, so times
/// stay times since the recording's start.
fn kept_timeline(t: Timeline, sample_kept: &[bool], stack_kept: &[bool]) -> Timeline {
    let (samples, stacks) = (renumber(sample_kept), renumber(stack_kept));
    let mut kept = Timeline::default();
    let mut carried = 0u64;
    for i in 0..t.len() {
        carried = carried.saturating_add(t.delta_ns[i]);
        let Some(sample) = samples.get(t.sample[i] as usize).copied().flatten() else { continue };
        // Without a stack column every sample is kept by its location alone.
        let stack = match t.stack.get(i) {
            Some(&s) => match stacks.get(s as usize).copied().flatten() {
                Some(s) => Some(s),
                None => continue,
            },
            None => None,
        };
        kept.delta_ns.push(std::mem::take(&mut carried));
        kept.sample.push(sample);
        kept.stack.extend(stack);
        if let Some(&period) = t.period.get(i) {
            kept.period.push(period);
        }
    }
    kept
}

fn dso_matches(dso: &str, space: Space, object: Option<u32>, objects: &[String]) -> bool {
    match space {
        Space::Kernel => dso == "[kernel.kallsyms]" || dso == "[kernel]",
        Space::Unmapped => dso == "[unknown]",
        Space::User => object.and_then(|o| objects.get(o as usize)).is_some_and(|path| {
            path == dso || Path::new(path).file_name().is_some_and(|name| name.to_string_lossy() == dso)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{ObjectRef, SampleCount, StackCount, Task};

    fn profile() -> Profile {
        let sample =
            |pid, tid, space, object, count| SampleCount { pid, tid, space, object, offset: 0, count, period: count };
        Profile {
            objects: vec![ObjectRef { path: "/usr/bin/postgres".into() }, ObjectRef { path: "/lib/libc.so.6".into() }],
            tasks: vec![
                Task { pid: 10, tid: 10, comm: "postgres".into() },
                Task { pid: 10, tid: 11, comm: "bgworker".into() },
                Task { pid: 20, tid: 20, comm: "pgbench".into() },
            ],
            samples: vec![
                sample(10, 10, Space::User, Some(0), 6),
                sample(10, 10, Space::User, Some(1), 2),
                sample(10, 11, Space::Kernel, None, 1),
                sample(20, 20, Space::User, Some(1), 3),
            ],
            frames: vec![
                FrameRef { space: Space::User, object: Some(0), offset: 0 },
                FrameRef { space: Space::User, object: Some(1), offset: 0 },
            ],
            stacks: vec![
                StackCount { pid: 10, tid: 10, frames: vec![0], count: 6, period: 6 },
                StackCount { pid: 20, tid: 20, frames: vec![1, 0], count: 3, period: 3 },
            ],
            ..Profile::default()
        }
    }

    #[test]
    fn tasks_and_objects_select_samples_and_stacks() {
        let mut p = profile();
        let kept = SampleFilter { comms: vec!["postgres".into()], ..SampleFilter::default() }.apply(&mut p);
        assert_eq!(kept, Kept { samples: 8, of: 12 });
        assert_eq!(p.stacks.len(), 1);

        let mut p = profile();
        let kept = SampleFilter { dsos: vec!["libc.so.6".into()], ..SampleFilter::default() }.apply(&mut p);
        assert_eq!(kept.samples, 5, "both tasks' libc samples");
        assert_eq!(p.stacks.iter().map(|s| s.pid).collect::<Vec<_>>(), [20], "judged by the leaf");

        let mut p = profile();
        let filter = SampleFilter { pids: vec![10], dsos: vec!["[kernel.kallsyms]".into()], ..SampleFilter::default() };
        assert_eq!(filter.apply(&mut p).samples, 1);
        assert_eq!(filter.describe(), "--pid 10 --dso [kernel.kallsyms]");

        let mut p = profile();
        assert_eq!(SampleFilter { tids: vec![11, 20], ..SampleFilter::default() }.apply(&mut p).samples, 4);
        let mut p = profile();
        assert_eq!(SampleFilter::default().apply(&mut p), Kept { samples: 12, of: 12 });
        assert_eq!(p.samples.len(), 4);
    }

    /// Functions are named by symbolising; an unreadable object names its code
    /// `object+0xOFFSET`, which is enough to select by function here.
    #[test]
    fn symbols_select_by_the_leaf_function_and_the_timeline_follows() {
        let mut p = profile();
        p.objects[0].path = "/nonexistent/postgres".into();
        p.samples[0].offset = 0x10;
        p.frames[0].offset = 0x10;
        p.timeline = Some(Timeline {
            delta_ns: vec![5, 7, 11, 13],
            sample: vec![3, 0, 1, 0],
            stack: vec![1, 0, 1, 0],
            period: vec![],
        });
        let filter = SampleFilter { symbols: vec!["postgres+0x10".into()], ..SampleFilter::default() };
        assert_eq!(filter.describe(), "--symbol postgres+0x10");
        assert_eq!(filter.apply(&mut p), Kept { samples: 6, of: 12 });
        assert_eq!(p.samples.len(), 1);
        assert_eq!(p.stacks.iter().map(|s| s.pid).collect::<Vec<_>>(), [10], "the stack whose leaf it is");
        let t = p.timeline.unwrap();
        assert_eq!((t.delta_ns, t.sample, t.stack), (vec![12, 24], vec![0, 0], vec![0, 0]), "times carried over");

        let mut p = profile();
        let filter = SampleFilter { symbols: vec!["no_such_function".into()], ..SampleFilter::default() };
        assert_eq!(filter.apply(&mut p).samples, 0);
    }
}
