//! What an allocation profile is read as: bytes requested (its samples as recorded),
//! calls, or the blocks still live at exit — each an ordinary profile, so the flat
//! table, flame graphs and exports draw whichever was asked — and the table of call
//! sites with all of them side by side.

use crate::aggregate::{self, By};
use crate::allocations::AllocSummary;
use crate::format::{Profile, SampleCount, StackCount};
use crate::symbolize::Symbolizer;
use std::collections::HashMap;

/// Which weight an allocation profile's samples carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllocView {
    /// Bytes requested by each call site.
    #[default]
    Bytes,
    /// Calls of the allocating functions by call site.
    Calls,
    /// Bytes still allocated at exit, by the call site that allocated them.
    Live,
}

impl AllocView {
    /// The views' names as `--alloc-view` takes them and `from_str` reads them.
    pub const NAMES: [&'static str; 3] = ["bytes", "calls", "live"];

    /// The event name a viewed profile carries (what its periods are).
    pub fn event(self) -> &'static str {
        match self {
            AllocView::Bytes => "alloc-bytes",
            AllocView::Calls => "alloc-calls",
            AllocView::Live => "live-bytes",
        }
    }
}

impl std::str::FromStr for AllocView {
    type Err = crate::error::UnknownChoice;
    fn from_str(s: &str) -> Result<AllocView, Self::Err> {
        match s {
            "bytes" => Ok(AllocView::Bytes),
            "calls" => Ok(AllocView::Calls),
            "live" => Ok(AllocView::Live),
            other => Err(crate::error::UnknownChoice { expected: "bytes, calls or live", found: other.to_string() }),
        }
    }
}

/// `profile` weighed as `view` (a profile without allocations is returned as it is).
pub fn view(profile: &Profile, view: AllocView) -> Profile {
    let mut out = profile.clone();
    let Some(summary) = &profile.alloc else { return out };
    out.event = view.event().to_string();
    match view {
        AllocView::Bytes => {}
        AllocView::Calls => {
            for s in &mut out.samples {
                s.period = s.count;
            }
            for s in &mut out.stacks {
                s.period = s.count;
            }
            if let Some(timeline) = &mut out.timeline {
                timeline.period.clear();
            }
        }
        AllocView::Live => {
            out.stacks = summary
                .live
                .iter()
                .map(|s| StackCount {
                    pid: s.pid,
                    tid: s.tid,
                    frames: s.frames.clone(),
                    count: s.count,
                    period: s.period,
                })
                .collect();
            out.samples = live_samples(profile, summary);
            out.timeline = None;
        }
    }
    out
}

/// One sample location per live stack's leaf, summed.
fn live_samples(profile: &Profile, summary: &AllocSummary) -> Vec<SampleCount> {
    let mut by_leaf: HashMap<(u32, u32, u32), (u64, u64)> = HashMap::new();
    for stack in &summary.live {
        let Some(&leaf) = stack.frames.first() else { continue };
        let entry = by_leaf.entry((stack.pid, stack.tid, leaf)).or_default();
        entry.0 += stack.count;
        entry.1 += stack.period;
    }
    let mut samples: Vec<SampleCount> = by_leaf
        .into_iter()
        .filter_map(|((pid, tid, leaf), (count, period))| {
            let frame = profile.frames.get(leaf as usize)?;
            Some(SampleCount {
                pid,
                tid,
                space: frame.space,
                object: frame.object,
                offset: frame.offset,
                count,
                period,
            })
        })
        .collect();
    samples.sort_by_key(|s| (s.pid, s.tid, s.space, s.object, s.offset));
    samples
}

/// One call site (a function that called the allocator) with everything known of it.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Site {
    /// The calling function, as in the function column.
    pub function: String,
    /// The object holding it.
    pub object: String,
    /// Allocating calls it made (an estimate when calls were sampled).
    pub calls: u64,
    /// Bytes those calls requested.
    pub bytes: u64,
    /// Blocks it allocated that were still live at exit (0 when blocks were not followed).
    pub live_blocks: u64,
    /// Bytes of those blocks.
    pub live_bytes: u64,
    /// When allocations were sampled by bytes: the standard deviation of `bytes`.
    pub bytes_sd: Option<f64>,
}

/// The call sites of an allocation profile, most bytes first.
pub fn sites(profile: &Profile, symbolizer: &mut Symbolizer) -> Vec<Site> {
    let mut out: HashMap<(String, String), Site> = HashMap::new();
    for (view, live) in [(AllocView::Bytes, false), (AllocView::Live, true)] {
        let viewed = self::view(profile, view);
        for row in aggregate::flat(&aggregate::locate(&viewed, symbolizer), By::Function) {
            let site = out.entry((row.name.clone(), row.object.clone())).or_insert_with(|| Site {
                function: row.name.clone(),
                object: row.object.clone(),
                ..Site::default()
            });
            if live {
                site.live_blocks += row.self_samples;
                site.live_bytes += row.self_period;
            } else {
                site.calls += row.self_samples;
                site.bytes += row.self_period;
            }
        }
    }
    // Sampled by bytes: the variance of each function's estimate is the sum of its rows'
    // (independent), found by the same aggregation over a copy whose periods are variances.
    if let Some(summary) = profile.alloc.as_ref().filter(|a| !a.site_bytes_sd.is_empty()) {
        let mut variances = profile.clone();
        for sample in &mut variances.samples {
            sample.period = 0;
        }
        for &(row, sd) in &summary.site_bytes_sd {
            if let Some(sample) = variances.samples.get_mut(row as usize) {
                sample.period = (sd * sd).round() as u64;
            }
        }
        for row in aggregate::flat(&aggregate::locate(&variances, symbolizer), By::Function) {
            if let Some(site) = out.get_mut(&(row.name.clone(), row.object.clone())) {
                site.bytes_sd = Some((row.self_period as f64).sqrt());
            }
        }
    }
    let mut sites: Vec<Site> = out.into_values().collect();
    sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.calls.cmp(&a.calls)).then(a.function.cmp(&b.function)));
    sites
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocations::LiveStack;
    use crate::format::{FrameRef, Space};

    fn profile() -> Profile {
        let frame = |offset| FrameRef { space: Space::User, object: Some(0), offset };
        let sample = SampleCount::example;
        let stack = |frames: Vec<u32>, count, period| StackCount { pid: 1, tid: 1, frames, count, period };
        Profile {
            event: "alloc-bytes".into(),
            frames: vec![frame(0x10), frame(0x20), frame(0x30)],
            samples: vec![sample(0x10, 3, 300), sample(0x20, 1, 4096)],
            stacks: vec![stack(vec![0, 2], 3, 300), stack(vec![1, 2], 1, 4096)],
            alloc: Some(AllocSummary {
                every: 1,
                tracked: true,
                live: vec![LiveStack { pid: 1, tid: 1, frames: vec![0, 2], count: 1, period: 100 }],
                ..Default::default()
            }),
            ..Profile::default()
        }
    }

    #[test]
    fn calls_and_live_views_reweigh_the_same_stacks() {
        let p = profile();
        assert_eq!(view(&p, AllocView::Bytes), p.clone().tap_event("alloc-bytes"));
        let calls = view(&p, AllocView::Calls);
        assert_eq!(calls.event, "alloc-calls");
        assert_eq!(calls.samples.iter().map(|s| (s.count, s.period)).collect::<Vec<_>>(), [(3, 3), (1, 1)]);
        assert_eq!(calls.stacks.iter().map(|s| s.period).collect::<Vec<_>>(), [3, 1]);
        let live = view(&p, AllocView::Live);
        assert_eq!(live.event, "live-bytes");
        assert_eq!(live.stacks, vec![stack_of(&p.alloc.as_ref().unwrap().live[0])]);
        assert_eq!(live.samples.iter().map(|s| (s.offset, s.count, s.period)).collect::<Vec<_>>(), [(0x10, 1, 100)]);
        // A profile without allocations is left as it is.
        let plain = Profile { alloc: None, ..p };
        assert_eq!(view(&plain, AllocView::Live), plain);
    }

    fn stack_of(s: &LiveStack) -> StackCount {
        StackCount { pid: s.pid, tid: s.tid, frames: s.frames.clone(), count: s.count, period: s.period }
    }

    trait TapEvent {
        fn tap_event(self, event: &str) -> Self;
    }

    impl TapEvent for Profile {
        fn tap_event(mut self, event: &str) -> Profile {
            self.event = event.to_string();
            self
        }
    }
}
