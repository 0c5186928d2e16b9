//! Keeping only some of a profile's samples, as `perf report --comm/--pid/--tid/--dso`
//! does: the tasks and the objects the samples landed in. Applied to the profile before
//! anything is aggregated, so every view (tables, callers, flame graphs, exports, diffs)
//! sees the same samples and shares are of what was kept.

use super::format::{FrameRef, Profile, Space};
use std::collections::HashMap;
use std::path::Path;

/// Which samples to keep; an empty list keeps everything for that field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleFilter {
    /// Command names (`comm`), exactly.
    pub comms: Vec<String>,
    pub pids: Vec<u32>,
    pub tids: Vec<u32>,
    /// Objects the sampled code is in: a path or a file name (`libc.so.6`);
    /// `[kernel.kallsyms]` (or `[kernel]`) for kernel code, `[unknown]` for code outside
    /// any mapped file.
    pub dsos: Vec<String>,
}

/// What a filter kept: samples (not periods), of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    pub samples: u64,
    pub of: u64,
}

impl SampleFilter {
    pub fn is_empty(&self) -> bool {
        self.comms.is_empty() && self.pids.is_empty() && self.tids.is_empty() && self.dsos.is_empty()
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
        profile.samples.retain(|s| task_kept(s.pid, s.tid) && dso_kept(s.space, s.object));
        let frames = profile.frames.clone();
        profile.stacks.retain(|s| {
            let leaf: Option<&FrameRef> = s.frames.first().and_then(|&i| frames.get(i as usize));
            task_kept(s.pid, s.tid) && leaf.is_some_and(|f| dso_kept(f.space, f.object))
        });
        Kept { samples: profile.samples.iter().map(|s| s.count).sum(), of }
    }
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
    use crate::profile::format::{ObjectRef, SampleCount, StackCount, Task};

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
}
