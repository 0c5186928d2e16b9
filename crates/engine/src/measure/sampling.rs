//! The sampling probe of `compare --explain`: every measured run is also sampled (a
//! cpu-clock timer by default, any event perf names), from the held child's exec to its
//! exit, and its samples are named per function right after the run — while the
//! compared binaries are there — into the run's [`RunProfile`]. Both commands of a round
//! carry the same probe, so its cost is the same on both sides.
//!
//! A clock event (cpu-clock, task-clock) ticks on a fixed grid of the task's CPU time
//! that starts at exec, so a program whose work repeats the same way in every run is
//! sampled at the same places in every run: its per-function counts are biased (phase
//! lock), not noisy. `scripts/eval-sampling-phase fixed 499 40` measured it with `perf
//! record` alone on `tests/fixtures/explain_mix.c`: `rises` and `falls` do the same work
//! yet got 10.1 and 7.9 ms per run, each with a standard deviation of about 1 ms against
//! Poisson's 4.5, and the ratios of the two builds read 1.14 and 0.98 where the truth is
//! 1.3 and 0.8; at 9973 Hz, or with each run's period drawn at random, they were right.
//! So each round draws its own period (see [`run_period_ns`]), the same for every command
//! of the round: the round's paired runs are weighed alike, and each command's samples
//! still split as its time does.

use super::Probe;
use perflab_model::{Run, RunProfile};
use perflab_profile::aggregate::{self, By};
use perflab_profile::record::{CallGraph, HeldRecording, RecordOptions};
use perflab_profile::symbolize::Symbolizer;
use rand::Rng;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Half `perflab profile`'s 997 Hz (prime too, so sampling does not lock step with periodic
/// work): on a CPU-bound program the probe with frame-pointer stacks cost +2.3 % CPU time
/// [1.8, 3.1] at 499 Hz against +4.3 % [3.6, 5.2] at 997 Hz (+3.6 % without stacks), so
/// the 3 % holds only at the lower rate; stacks cost nothing measurable there and
/// give the flame graph (scripts/profile-overhead.py, docs/profiling.md). The cost is the
/// same on both sides of a comparison; `--explain-frequency` trades it for samples.
pub const DEFAULT_FREQUENCY_HZ: u64 = 499;

/// What to sample.
#[derive(Debug, Clone)]
pub struct Sampling {
    /// The perf event sampled (`cpu-clock`, …).
    pub event: String,
    /// Samples per second per CPU.
    pub frequency_hz: u64,
    /// Also keep call stacks (frame pointers) for the flame graph.
    pub call_stacks: bool,
    /// The rate of the runs still to come when `compare --explain` raised it past the
    /// verdict (shared by every clone: the engine raises, the probes read).
    pub raised: RaisedRate,
    /// Seeds the periods the rounds draw: every command's probe draws the same sequence,
    /// so the k-th run of each (one round) samples at the same period.
    pub period_seed: u64,
}

/// The same sampling whatever the periods' seed (it only spreads the samples).
impl PartialEq for Sampling {
    fn eq(&self, other: &Sampling) -> bool {
        (&self.event, self.frequency_hz, self.call_stacks, &self.raised)
            == (&other.event, other.frequency_hz, other.call_stacks, &other.raised)
    }
}

impl Default for Sampling {
    fn default() -> Sampling {
        Sampling::new("cpu-clock", DEFAULT_FREQUENCY_HZ)
    }
}

/// How many times `--explain-frequency` the rounds past the verdict may sample at (3992
/// Hz by default). The probe's cost grows with the rate (+2.3 % CPU at 499 Hz, +4.3 % at
/// 997 Hz with stacks, docs/profiling.md), the same on both sides, so ratios are
/// unaffected, and the verdict was decided before; 4× (1996 Hz) left the short runs of
/// issue 39 (~25 samples per run at 499 Hz) undecided at the default 60 s budget on a
/// loaded machine in half of the trials.
pub const MAX_RAISE: u64 = 8;

impl Sampling {
    /// Sampling `event` at `frequency_hz`, with call stacks.
    pub fn new(event: &str, frequency_hz: u64) -> Sampling {
        Sampling {
            event: event.to_string(),
            frequency_hz,
            call_stacks: true,
            raised: RaisedRate::default(),
            period_seed: rand::random(),
        }
    }

    /// The rate the next run samples at.
    pub fn current_hz(&self) -> u64 {
        self.raised.hz.load(Ordering::Relaxed).max(self.frequency_hz)
    }

    /// The highest rate the runs may be raised to: [`MAX_RAISE`] × the asked rate,
    /// within the kernel's `perf_event_max_sample_rate` (which it lowers itself when
    /// sampling interrupts take too long) and perf's 100 kHz.
    pub fn ceiling_hz(&self) -> u64 {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(100_000);
        (self.frequency_hz * MAX_RAISE).min(kernel).min(100_000).max(self.frequency_hz)
    }

    /// Double the rate of the runs to come, up to [`Sampling::ceiling_hz`]: the new rate,
    /// or None when it is already there.
    pub fn raise(&self) -> Option<u64> {
        // A tracepoint or a uprobe is sampled at every event (its probe said so when it
        // parsed the event): there is no rate to raise.
        if self.raised.every_event.load(Ordering::Relaxed) {
            return None;
        }
        let (now, ceiling) = (self.current_hz(), self.ceiling_hz());
        let next = (now * 2).min(ceiling);
        (next > now).then(|| {
            self.raised.hz.store(next, Ordering::Relaxed);
            next
        })
    }
}

/// A sampling rate shared by every clone of a [`Sampling`].
#[derive(Debug, Clone, Default)]
pub struct RaisedRate {
    /// The raised rate (0: not raised).
    hz: Arc<AtomicU64>,
    /// Set by the probes when the event is sampled at every occurrence.
    every_event: Arc<AtomicBool>,
}

impl PartialEq for RaisedRate {
    fn eq(&self, other: &RaisedRate) -> bool {
        self.hz.load(Ordering::Relaxed) == other.hz.load(Ordering::Relaxed)
    }
}

/// One round's sampling period at `frequency_hz`, drawn uniformly from ½ to 1½ times the
/// mean period: the runs' samples then fall at different places of the program's work
/// (a fixed period repeats them; see the module's comment). Each sample weighs its run's
/// period, so a function's time stays its CPU time however the period was drawn. Not a
/// random phase at a fixed period, which would be exact from the first sample on: the
/// kernel starts a clock event's first period at exec with nothing to offset it, and
/// switching the period after the first sample races the run. What this leaves: the
/// first half period after exec is never sampled, and the next two are weighed 0.5 to 1.4
/// times (the dynamic loader's start-up, the same in both builds).
pub(crate) fn run_period_ns(frequency_hz: u64, rng: &mut impl Rng) -> u64 {
    let mean = 1e9 / frequency_hz.max(1) as f64;
    // The kernel's hrtimer floor is 10 µs.
    (rng.gen_range(0.5..1.5) * mean).round().max(10_000.0) as u64
}

/// Samples every run of one command.
pub(crate) struct SamplingProbe {
    options: RecordOptions,
    sampling: Sampling,
    /// Draws the runs' periods (see [`Sampling::period_seed`]).
    periods: rand::rngs::StdRng,
    argv: Vec<String>,
    running: Option<HeldRecording>,
    /// Kept across runs: each object is read and indexed once per experiment.
    symbolizer: Symbolizer,
}

impl SamplingProbe {
    pub fn new(sampling: &Sampling) -> Result<SamplingProbe, perflab_sys::perf::event::EventError> {
        let event = perflab_sys::perf::event::parse_one(&sampling.event)?;
        use perflab_sys::perf::event::EventKind;
        if matches!(event.kind, EventKind::Tracepoint(_) | EventKind::Uprobe(_)) {
            sampling.raised.every_event.store(true, Ordering::Relaxed);
        }
        let call_graph = if sampling.call_stacks { CallGraph::FramePointers } else { CallGraph::None };
        let options = RecordOptions {
            event: sampling.event.clone(),
            frequency_hz: sampling.frequency_hz,
            call_graph,
            ..RecordOptions::default()
        };
        Ok(SamplingProbe {
            options,
            sampling: sampling.clone(),
            periods: rand::SeedableRng::seed_from_u64(sampling.period_seed),
            argv: Vec::new(),
            running: None,
            symbolizer: Symbolizer::default(),
        })
    }
}

impl Probe for SamplingProbe {
    fn needs_gate(&self) -> bool {
        true
    }

    fn attach(&mut self, pid: libc::pid_t) -> anyhow::Result<()> {
        let mut options = self.options.clone();
        options.frequency_hz = self.sampling.current_hz();
        if perflab_profile::format::is_clock_event(&self.sampling.event) {
            // A clock's period is CPU time in nanoseconds: set as a period, each run draws its own.
            options.period = Some(run_period_ns(options.frequency_hz, &mut self.periods));
        }
        let recording = HeldRecording::open(pid, &self.argv, &options).map_err(|e| anyhow::anyhow!("{e}"))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Each run's period is drawn over a whole period's width around the asked one, so
    /// the runs' samples do not fall at the same places of a program's work.
    #[test]
    fn run_periods_spread_over_a_whole_period_around_the_asked_rate() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let periods: Vec<u64> = (0..4000).map(|_| run_period_ns(500, &mut rng)).collect();
        let (low, high) = (*periods.iter().min().unwrap(), *periods.iter().max().unwrap());
        assert!((1_000_000..1_020_000).contains(&low) && (2_980_000..=3_000_000).contains(&high), "{low} … {high}");
        let mean = periods.iter().sum::<u64>() as f64 / periods.len() as f64;
        assert!((mean / 2e6 - 1.0).abs() < 0.02, "mean period {mean} ns");
        // The kernel's floor: 1 MHz asked would be 0.5–1.5 µs.
        assert_eq!(run_period_ns(1_000_000, &mut rng), 10_000);
    }

    /// Every command's probe draws the same periods, run by run: the two runs of a round
    /// sample at the same period, and the next round at another.
    #[test]
    fn the_commands_of_a_round_share_its_period() {
        let sampling = Sampling::new("cpu-clock", 499);
        let draw = |probe: &mut SamplingProbe| run_period_ns(499, &mut probe.periods);
        let (mut a, mut b) = (SamplingProbe::new(&sampling).unwrap(), SamplingProbe::new(&sampling.clone()).unwrap());
        let rounds: Vec<(u64, u64)> = (0..20).map(|_| (draw(&mut a), draw(&mut b))).collect();
        assert!(rounds.iter().all(|(x, y)| x == y), "{rounds:?}");
        assert!(rounds.windows(2).any(|w| w[0].0 != w[1].0), "{rounds:?}");
    }

    /// Raising doubles the rate of every clone (the probes share it) up to 4× the asked
    /// rate, then says it cannot.
    #[test]
    fn raising_doubles_the_shared_rate_up_to_its_ceiling() {
        let sampling = Sampling::new("cpu-clock", 499);
        let probe_copy = sampling.clone();
        let ceiling = sampling.ceiling_hz();
        assert!((499..=499 * MAX_RAISE).contains(&ceiling));
        let mut rates = vec![probe_copy.current_hz()];
        while let Some(to) = sampling.raise() {
            rates.push(to);
            assert_eq!(probe_copy.current_hz(), to);
        }
        assert_eq!(rates.last(), Some(&ceiling));
        if ceiling == 499 * MAX_RAISE {
            assert_eq!(rates, vec![499, 998, 1996, 3992]);
        }
        assert_eq!(sampling.raise(), None);
        // An event sampled at every occurrence (its probe marks it): nothing to raise.
        let counted = Sampling::new("cpu-clock", 499);
        counted.raised.every_event.store(true, Ordering::Relaxed);
        assert_eq!((counted.raise(), counted.current_hz()), (None, 499));
    }
}
