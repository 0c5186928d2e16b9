//! The sampling probe of `compare --explain`: every measured run is also sampled (a
//! cpu-clock timer by default, any event perf names), from the held child's exec to its
//! exit, and its samples are named per function right after the run — while the
//! compared binaries are there — into the run's [`RunProfile`]. Both commands of a round
//! carry the same probe, so its cost is the same on both sides.

use super::Probe;
use perflab_model::{Run, RunProfile};
use perflab_profile::aggregate::{self, By};
use perflab_profile::record::{CallGraph, HeldRecording, RecordOptions};
use perflab_profile::symbolize::Symbolizer;

/// Half `perflab profile`'s 997 Hz (prime too, so sampling does not lock step with periodic
/// work): on a CPU-bound program the probe with frame-pointer stacks cost +2.3 % CPU time
/// [1.8, 3.1] at 499 Hz against +4.3 % [3.6, 5.2] at 997 Hz (+3.6 % without stacks), so
/// the 3 % holds only at the lower rate; stacks cost nothing measurable there and
/// give the flame graph (scripts/profile-overhead.py, docs/profiling.md). The cost is the
/// same on both sides of a comparison; `--explain-frequency` trades it for samples.
pub const DEFAULT_FREQUENCY_HZ: u64 = 499;

/// What to sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    /// The perf event sampled (`cpu-clock`, …).
    pub event: String,
    /// Samples per second per CPU.
    pub frequency_hz: u64,
    /// Also keep call stacks (frame pointers) for the flame graph.
    pub call_stacks: bool,
}

impl Default for Sampling {
    fn default() -> Sampling {
        Sampling { event: "cpu-clock".into(), frequency_hz: DEFAULT_FREQUENCY_HZ, call_stacks: true }
    }
}

/// Samples every run of one command.
pub(crate) struct SamplingProbe {
    options: RecordOptions,
    argv: Vec<String>,
    running: Option<HeldRecording>,
    /// Kept across runs: each object is read and indexed once per experiment.
    symbolizer: Symbolizer,
}

impl SamplingProbe {
    pub fn new(sampling: &Sampling) -> Result<SamplingProbe, perflab_sys::perf::event::EventError> {
        perflab_sys::perf::event::parse_one(&sampling.event)?;
        let call_graph = if sampling.call_stacks { CallGraph::FramePointers } else { CallGraph::None };
        let options = RecordOptions {
            event: sampling.event.clone(),
            frequency_hz: sampling.frequency_hz,
            call_graph,
            ..RecordOptions::default()
        };
        Ok(SamplingProbe { options, argv: Vec::new(), running: None, symbolizer: Symbolizer::default() })
    }
}

impl Probe for SamplingProbe {
    fn needs_gate(&self) -> bool {
        true
    }

    fn attach(&mut self, pid: libc::pid_t) -> anyhow::Result<()> {
        let recording = HeldRecording::open(pid, &self.argv, &self.options).map_err(|e| anyhow::anyhow!("{e}"))?;
        self.running = Some(recording);
        Ok(())
    }

    fn collect(&mut self, run: &mut Run) -> anyhow::Result<()> {
        if let Some(recording) = self.running.take() {
            let profile = recording.finish();
            run.profile = Some(Box::new(run_profile(&profile, &mut self.symbolizer)));
        }
        Ok(())
    }
}

impl SamplingProbe {
    /// The argv the runs exec (to name the command's own object `[command]`, as `diff`
    /// does, so two builds' functions match).
    pub(crate) fn set_argv(&mut self, argv: &[String]) {
        self.argv = argv.to_vec();
    }
}

/// A run's samples named per function (self time) and per folded stack.
pub(crate) fn run_profile(profile: &perflab_profile::format::Profile, symbolizer: &mut Symbolizer) -> RunProfile {
    let (located, graph) = aggregate::locate_with_graph(profile, symbolizer);
    let mut out = RunProfile {
        event: profile.event.clone(),
        period_is_time: profile.period_is_time(),
        samples: profile.total_samples(),
        period: profile.total_period(),
        lost: profile.lost,
        ..RunProfile::default()
    };
    for row in aggregate::flat(&located, By::Function) {
        let object = aggregate::matching_object(profile, &row.object).to_string();
        let entry = out.functions.entry((row.name, object)).or_default();
        entry.0 += row.self_samples;
        entry.1 += row.self_period;
    }
    if let Some(graph) = graph {
        for stack in graph.named_stacks() {
            let entry = out.stacks.entry(aggregate::folded_names(&stack.frames)).or_default();
            entry.0 += stack.samples;
            entry.1 += stack.period;
        }
    }
    out
}
