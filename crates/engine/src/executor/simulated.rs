//! A simulated machine for the engine: runs whose times come from a seeded model of a
//! real one (a true time per command, per-run noise with heavy tails, a slowly drifting
//! machine speed shared by neighbouring runs, occasional stalls) on a simulated clock.
//!
//! It lets the engine's scheduling, stopping and outputs be tested deterministically
//! without processes, and the stopping rule be evaluated over thousands of experiments
//! in seconds (`examples/stopping_sim.rs`). The model is this project's reading of the
//! noise measured on its VM (docs/statistics.md), not a claim about any other machine.

use super::{Executor, RunError};
use perflab_model::{metric, CounterReading, ExitInfo, Iterations, Machine, Run};
pub use perflab_stats::synthetic::Noise;
use perflab_stats::synthetic::NoiseSampler;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::time::Duration;

/// A scripted event, to test how the engine handles it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// The `nth` run (0-based, counting every run) of `command` exits with `code`.
    Fails {
        /// Index of the command in the plan.
        command: usize,
        /// Its run, 0-based.
        nth: usize,
        /// The exit code.
        code: i32,
    },
    /// The `nth` run of `command` cannot be started.
    CannotStart {
        /// Index of the command in the plan.
        command: usize,
        /// Its run, 0-based.
        nth: usize,
    },
    /// The hook before the `nth` run of `command` fails (the run does not happen).
    HookFails {
        /// Index of the command in the plan.
        command: usize,
        /// Its run, 0-based.
        nth: usize,
    },
    /// The `nth` run of `command` prints nothing about itself.
    Silent {
        /// Index of the command in the plan.
        command: usize,
        /// Its run, 0-based.
        nth: usize,
    },
    /// The user interrupts once the clock passes this many seconds.
    InterruptAfter(f64),
}

/// An [`Executor`] on a simulated machine.
pub struct Simulated {
    rng: StdRng,
    /// True time of each command's run, in seconds.
    true_seconds: Vec<f64>,
    noise: Noise,
    sampler: NoiseSampler,
    events: Vec<Event>,
    clock_s: f64,
    runs_of: Vec<usize>,
    /// A rate every run prints about itself (runs per second of its own time), with
    /// `iterations` samples; `None`: nothing is printed.
    printed: Option<(String, usize)>,
    /// How often the cleanup was called.
    pub(crate) cleanups: usize,
}

impl Simulated {
    /// Commands whose runs take `true_seconds` (one per command) on a machine with `noise`.
    pub fn new(seed: u64, true_seconds: Vec<f64>, noise: Noise) -> Simulated {
        let n = true_seconds.len();
        Simulated {
            rng: StdRng::seed_from_u64(seed),
            true_seconds,
            sampler: noise.sampler(),
            noise,
            events: Vec::new(),
            clock_s: 0.0,
            runs_of: vec![0; n],
            printed: None,
            cleanups: 0,
        }
    }

    /// Every run also prints `name`, its own rate (1 / its time), `iterations` times.
    pub fn printing(mut self, name: &str, iterations: usize) -> Simulated {
        self.printed = Some((name.to_string(), iterations));
        self
    }

    /// Add a scripted event.
    pub fn with(mut self, event: Event) -> Simulated {
        self.events.push(event);
        self
    }

    fn noisy_seconds(&mut self, index: usize) -> f64 {
        self.true_seconds[index] * self.sampler.factor(&mut self.rng)
    }
}

impl Executor for Simulated {
    fn run(&mut self, index: usize, _pad_bytes: Option<usize>) -> Result<Run, RunError> {
        let nth = self.runs_of[index];
        self.runs_of[index] += 1;
        if self.events.contains(&Event::CannotStart { command: index, nth }) {
            return Err(RunError::Failed("cannot execute: simulated".into()));
        }
        if self.events.contains(&Event::HookFails { command: index, nth }) {
            return Err(RunError::Incomplete { run: None, why: "--prepare `simulated` exited with code 1".into() });
        }
        let own = self.noisy_seconds(index);
        let busy = if self.clock_s >= self.noise.busy_after_s { self.noise.busy.clamp(0.0, 0.99) } else { 0.0 };
        let waited = if busy > 0.0 { own * busy / (1.0 - busy) * self.rng.gen_range(0.0..2.0) } else { 0.0 };
        let own_wait = own * self.noise.own_wait.clamp(0.0, 0.99);
        let wall = own + waited;
        self.clock_s += wall;
        let code = self
            .events
            .iter()
            .find_map(|e| match *e {
                Event::Fails { command, nth: at, code } if command == index && at == nth => Some(code),
                _ => None,
            })
            .unwrap_or(0);
        let counters = BTreeMap::from([
            (metric::RUNQ_WAIT.to_string(), CounterReading::value(own_wait + waited, false)),
            (metric::NEIGHBOUR_WAIT.to_string(), CounterReading::value(waited, false)),
            (metric::UNCONTENDED.to_string(), CounterReading::value(own, false)),
        ]);
        let on_cpu = own - own_wait;
        let mut run = Run {
            wall_s: wall,
            user_s: on_cpu * 0.98,
            sys_s: on_cpu * 0.01,
            max_rss_kib: 2048 + index as u64,
            exit: ExitInfo { exit_code: Some(code), signal: None, timed_out: false },
            counters,
            ..Run::default()
        };
        let silent = self.events.contains(&Event::Silent { command: index, nth });
        if let Some((name, iterations)) = self.printed.as_ref().filter(|_| !silent) {
            let reading = CounterReading::sampled(vec![1.0 / wall; *iterations], Iterations::All).expect("samples");
            run.counters.insert(name.clone(), reading);
        }
        Ok(run)
    }

    fn cleanup(&mut self) -> Result<(), crate::executor::error::CleanupError> {
        self.cleanups += 1;
        Ok(())
    }

    fn printed_metrics(&self) -> Vec<String> {
        match &self.printed {
            Some((name, _)) if self.runs_of[0] > 0 => vec![name.clone()],
            _ => Vec::new(),
        }
    }

    fn stderr_tail(&self, _index: usize) -> String {
        "simulated failure".into()
    }

    fn elapsed(&self) -> Duration {
        Duration::from_secs_f64(self.clock_s)
    }

    fn interrupted(&self) -> bool {
        self.events.iter().any(|e| matches!(*e, Event::InterruptAfter(at) if self.clock_s >= at))
    }

    fn machine(&self) -> Machine {
        Machine { hostname: "simulated".into(), cpu_model: "simulated".into(), cores: 1, ..Machine::default() }
    }
}
