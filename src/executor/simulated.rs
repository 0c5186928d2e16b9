//! A simulated machine for the engine: runs whose times come from a seeded model of a
//! real one (a true time per command, per-run noise with heavy tails, a slowly drifting
//! machine speed shared by neighbouring runs, occasional stalls) on a simulated clock.
//!
//! It lets the engine's scheduling, stopping and outputs be tested deterministically
//! without processes, and the stopping rule be evaluated over thousands of experiments
//! in seconds (`examples/stopping_sim.rs`). The model is this project's reading of the
//! noise measured on its VM (docs/statistics.md), not a claim about any other machine.

use super::{Executor, RunError};
use crate::model::{metric, CounterReading, ExitInfo, Iterations, Machine, Run};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, StudentT};
use std::collections::BTreeMap;
use std::time::Duration;

/// The noise of a simulated machine, all in log space (0.01 ≈ 1 %).
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    /// Scale of each run's own noise.
    pub run_sigma: f64,
    /// Degrees of freedom of the run noise's Student t distribution (heavy tails:
    /// 3 is heavy, large is Gaussian).
    pub tail_df: f64,
    /// Per-run step of the random walk of the machine's speed, shared by runs close in time.
    pub drift_sigma: f64,
    /// Chance that a run is stalled (a neighbour took the CPU) ...
    pub stall_probability: f64,
    /// ... and how much longer a stalled run takes (×(1 + U(0, stall_factor))).
    pub stall_factor: f64,
    /// Share of wall time runs spend waiting for a CPU behind busy neighbours, on
    /// average: each run waits its own time × busy/(1 − busy) × U(0, 2), measured
    /// exactly (`neighbour_wait_s`, and in `runq_wait_s`), as the kernel does for a
    /// single-threaded program.
    pub busy: f64,
    /// The neighbours arrive once the simulated clock passes this many seconds (0: from
    /// the start): a first look that falls in a quiet spell.
    pub busy_after_s: f64,
    /// Share of each run's own time its tasks spend waiting for *each other* (a pinned
    /// ping-pong): in `runq_wait_s`, part of the run's true time, never a neighbour's.
    pub own_wait: f64,
}

impl Noise {
    /// No noise at all: every run takes its true time.
    pub fn none() -> Noise {
        Noise {
            run_sigma: 0.0,
            tail_df: 1e9,
            drift_sigma: 0.0,
            stall_probability: 0.0,
            stall_factor: 0.0,
            busy: 0.0,
            busy_after_s: 0.0,
            own_wait: 0.0,
        }
    }

    /// Gaussian run noise of robust σ `sigma` and nothing else.
    pub fn gaussian(sigma: f64) -> Noise {
        Noise { run_sigma: sigma, ..Noise::none() }
    }
}

/// A scripted event, to test how the engine handles it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// The `nth` run (0-based, counting every run) of `command` exits with `code`.
    Fails { command: usize, nth: usize, code: i32 },
    /// The `nth` run of `command` cannot be started.
    CannotStart { command: usize, nth: usize },
    /// The hook before the `nth` run of `command` fails (the run does not happen).
    HookFails { command: usize, nth: usize },
    /// The `nth` run of `command` prints nothing about itself.
    Silent { command: usize, nth: usize },
    /// The user interrupts once the clock passes this many seconds.
    InterruptAfter(f64),
}

/// An [`Executor`] on a simulated machine.
pub struct Simulated {
    rng: StdRng,
    /// True time of each command's run, in seconds.
    true_seconds: Vec<f64>,
    noise: Noise,
    events: Vec<Event>,
    /// Upper quartile of the run noise's t distribution, to scale it to a robust σ.
    t_quartile: f64,
    log_speed: f64,
    clock_s: f64,
    runs_of: Vec<usize>,
    /// A rate every run prints about itself (runs per second of its own time), with
    /// `iterations` samples; `None`: nothing is printed.
    printed: Option<(String, usize)>,
    /// How often the cleanup was called.
    pub cleanups: usize,
}

impl Simulated {
    /// Commands whose runs take `true_seconds` (one per command) on a machine with `noise`.
    pub fn new(seed: u64, true_seconds: Vec<f64>, noise: Noise) -> Simulated {
        let n = true_seconds.len();
        Simulated {
            rng: StdRng::seed_from_u64(seed),
            true_seconds,
            noise: noise.clone(),
            events: Vec::new(),
            t_quartile: student_t_quartile(noise.tail_df),
            log_speed: 0.0,
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
        let n = &self.noise;
        if n.drift_sigma > 0.0 {
            self.log_speed += Normal::new(0.0, n.drift_sigma).expect("finite σ").sample(&mut self.rng);
        }
        let run_noise = if n.run_sigma > 0.0 {
            let t: f64 = if n.tail_df > GAUSSIAN_DF {
                Normal::new(0.0, 1.0).expect("unit normal").sample(&mut self.rng)
            } else {
                StudentT::new(n.tail_df).expect("positive df").sample(&mut self.rng)
            };
            // Student t's scale is not its robust σ; 0.6745/q(0.75) keeps run_sigma the MAD-based σ.
            t * n.run_sigma * 0.6745 / self.t_quartile
        } else {
            0.0
        };
        let stall = if n.stall_probability > 0.0 && self.rng.gen_bool(n.stall_probability.min(1.0)) {
            (1.0 + self.rng.gen_range(0.0..=n.stall_factor.max(0.0))).ln()
        } else {
            0.0
        };
        self.true_seconds[index] * (self.log_speed + run_noise + stall).exp()
    }
}

/// Above this many degrees of freedom Student's t is the normal distribution to four digits.
const GAUSSIAN_DF: f64 = 1e4;

/// The upper quartile of Student's t with `df` degrees of freedom (0.6745 for the normal).
fn student_t_quartile(df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if df > GAUSSIAN_DF {
        return 0.6745;
    }
    StudentsT::new(0.0, 1.0, df).map(|t| t.inverse_cdf(0.75)).unwrap_or(0.6745)
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

    fn cleanup(&mut self) -> Result<(), String> {
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
