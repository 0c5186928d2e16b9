//! Off-CPU time (`profile --off-cpu`): where threads block and for how long, shown
//! beside on-CPU time per function and per stack.
//!
//! Recorded without BPF: a `context-switches` software event with period 1 samples
//! every switch-out of a profiled thread with its call stack (kernel and user), and
//! PERF_RECORD_SWITCH records give the moment it runs again. A switch-out marked as a
//! preemption (the thread still wanted the CPU) is not blocking and is not counted;
//! every other switch-out is blocked time from then to the next switch-in.

use super::aggregate::CallGraph;
use super::format::{Profile, StackCount};
use serde::Serialize;
use std::collections::HashMap;

/// A thread switched out with this stack at `time` and has not run since.
struct Pending {
    time: u64,
    pid: u32,
    frames: Vec<u32>,
}

/// Pairs switch-outs with switch-ins into blocked intervals per stack, in time order.
#[derive(Default)]
pub(crate) struct Tracker {
    pending: HashMap<u32, Pending>,
    /// (pid, tid, frames leaf first) → (blocks, nanoseconds off the CPU)
    blocked: HashMap<(u32, u32, Vec<u32>), (u64, u64)>,
}

impl Tracker {
    /// The thread is leaving the CPU with this stack (a context-switch sample).
    pub(crate) fn switched_out(&mut self, time: u64, pid: u32, tid: u32, frames: Vec<u32>) {
        self.pending.insert(tid, Pending { time, pid, frames });
    }

    /// The switch-out was a preemption: the thread stays runnable, so it is not blocked.
    pub fn preempted(&mut self, tid: u32) {
        self.pending.remove(&tid);
    }

    /// The thread runs again: its pending switch-out becomes a blocked interval.
    pub(crate) fn switched_in(&mut self, time: u64, tid: u32) {
        if let Some(p) = self.pending.remove(&tid) {
            self.add(tid, p, time);
        }
    }

    /// The thread exited: nothing more to wait for.
    pub fn exited(&mut self, tid: u32) {
        self.pending.remove(&tid);
    }

    fn add(&mut self, tid: u32, p: Pending, until: u64) {
        let e = self.blocked.entry((p.pid, tid, p.frames)).or_default();
        e.0 += 1;
        e.1 += until.saturating_sub(p.time);
    }

    /// The blocked stacks; threads still blocked when the recording ended count up to
    /// `end` (they were off the CPU at least that long).
    pub fn finish(mut self, end: u64) -> Vec<StackCount> {
        for (tid, p) in std::mem::take(&mut self.pending) {
            if p.time <= end {
                self.add(tid, p, end);
            }
        }
        let mut stacks: Vec<StackCount> = self
            .blocked
            .into_iter()
            .map(|((pid, tid, frames), (count, period))| StackCount { pid, tid, frames, count, period })
            .collect();
        stacks.sort_by(|a, b| (a.pid, a.tid, &a.frames).cmp(&(b.pid, b.tid, &b.frames)));
        stacks
    }
}

/// One function's time with it on the stack, on and off the CPU.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FunctionTime {
    /// The function's name.
    pub name: String,
    /// Its object's basename.
    pub object: String,
    /// Seconds on the CPU with this function on the stack (from samples).
    pub on_cpu_s: f64,
    /// Seconds blocked with this function on the stack.
    pub off_cpu_s: f64,
    /// (on_cpu_s + off_cpu_s) / (all on-CPU + all off-CPU seconds), 0–1.
    pub share: f64,
}

/// One blocked call stack.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StackTime {
    /// Function names, outermost caller first (as in folded stacks).
    pub frames: Vec<String>,
    /// Seconds blocked in exactly this stack.
    pub off_cpu_s: f64,
    /// Seconds on the CPU in exactly this stack (usually 0: blocking stacks end in the scheduler).
    pub on_cpu_s: f64,
    /// Times a thread blocked in it.
    pub blocks: u64,
}

/// `off_cpu` in `--json`: on- and off-CPU time side by side.
#[derive(Debug, Serialize)]
pub struct OffCpuReport {
    /// All sampled on-CPU seconds.
    pub on_cpu_s: f64,
    /// All blocked seconds.
    pub off_cpu_s: f64,
    /// Per function, on and off the CPU.
    pub functions: Vec<FunctionTime>,
    /// Per blocked call stack.
    pub stacks: Vec<StackTime>,
}

/// Seconds a stack's samples stand for: summed periods of a clock event, else samples
/// at the sampling frequency (NaN, written as null, for a count event sampled every N
/// events: its samples say nothing about time).
fn on_cpu_seconds(profile: &Profile, samples: u64, period: u64) -> f64 {
    if profile.period_is_time() {
        period as f64 / 1e9
    } else if profile.frequency_hz > 0 {
        samples as f64 / profile.frequency_hz as f64
    } else {
        f64::NAN
    }
}

/// The side-by-side report; None when off-CPU time was not recorded.
pub fn report(profile: &Profile, on_cpu: Option<&CallGraph>) -> Option<OffCpuReport> {
    if !profile.off_cpu_recorded {
        return None;
    }
    let on_graph = on_cpu?;
    let off_cpu = on_graph.with_stacks(&profile.off_cpu);
    let on_total = on_cpu_seconds(profile, profile.total_samples(), profile.total_period());
    let off_total = profile.off_cpu.iter().map(|s| s.period).sum::<u64>() as f64 / 1e9;
    let all = on_total + off_total;
    let mut times: HashMap<(String, String), (f64, f64)> = HashMap::new();
    for ((name, object), (samples, period)) in on_graph.inclusive() {
        times.entry((name.to_string(), object.to_string())).or_default().0 = on_cpu_seconds(profile, samples, period);
    }
    for ((name, object), (_, ns)) in off_cpu.inclusive() {
        times.entry((name.to_string(), object.to_string())).or_default().1 = ns as f64 / 1e9;
    }
    let mut functions: Vec<FunctionTime> = times
        .into_iter()
        .map(|((name, object), (on, off))| FunctionTime {
            name,
            object,
            on_cpu_s: on,
            off_cpu_s: off,
            share: if all > 0.0 { (on + off) / all } else { 0.0 },
        })
        .collect();
    functions.sort_by(|a, b| b.share.total_cmp(&a.share).then_with(|| a.name.cmp(&b.name)));
    let on_by_stack: HashMap<Vec<String>, (u64, u64)> = on_graph.by_names();
    let mut stacks: Vec<StackTime> = off_cpu
        .by_names()
        .into_iter()
        .map(|(frames, (blocks, ns))| {
            let on = on_by_stack.get(&frames).map_or(0.0, |&(n, p)| on_cpu_seconds(profile, n, p));
            StackTime { frames, off_cpu_s: ns as f64 / 1e9, on_cpu_s: on, blocks }
        })
        .collect();
    stacks.sort_by(|a, b| b.off_cpu_s.total_cmp(&a.off_cpu_s).then_with(|| a.frames.cmp(&b.frames)));
    Some(OffCpuReport { on_cpu_s: on_total, off_cpu_s: off_total, functions, stacks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_outs_pair_with_switch_ins_and_preemptions_do_not_count() {
        let mut t = Tracker::default();
        t.switched_out(100, 1, 1, vec![0, 1]);
        t.switched_in(350, 1);
        t.switched_out(400, 1, 1, vec![0, 1]);
        t.switched_in(500, 1);
        // Preempted: runnable, not blocked.
        t.switched_out(600, 1, 2, vec![2]);
        t.preempted(2);
        t.switched_in(900, 2);
        // A switch-in without a switch-out seen (blocked before recording) adds nothing.
        t.switched_in(950, 3);
        // Exited while blocked: dropped; still blocked at the end: counted to the end.
        t.switched_out(960, 1, 4, vec![3]);
        t.exited(4);
        t.switched_out(970, 1, 5, vec![4]);
        let stacks = t.finish(1000);
        let by_tid = |tid| stacks.iter().find(|s| s.tid == tid);
        assert_eq!((by_tid(1).unwrap().count, by_tid(1).unwrap().period), (2, 350));
        assert!(by_tid(2).is_none() && by_tid(3).is_none() && by_tid(4).is_none());
        assert_eq!(by_tid(5).unwrap().period, 30);
    }
}
