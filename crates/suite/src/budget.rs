//! One budget for a whole suite run (`run --budget 10m`): the benchmarks' experiments run
//! at once, their rounds interleaved one at a time, on a clock they share, so that every
//! benchmark gets its share of the deadline and a decided benchmark stops and leaves its
//! rounds to the undecided ones.
//!
//! Each benchmark is still the engine's own experiment (warm-up, looks, group-sequential
//! boundaries, verdict), unchanged: its deadline is the suite's, its clock the suite's
//! (so the pace it plans its horizon and its promise with is seconds of *suite* time per
//! round of its own — the share it gets while the others run), and it stops at the
//! deadline with what it ruled out (`learned`). The engine's loop runs to its end once
//! started, so each experiment runs on a thread of its own; the threads take turns —
//! exactly one runs a command at any time, as when benchmarks run one after another —
//! passing the turn after each round (round-robin over the benchmarks still running).
//! A thread waits for its next turn inside the round's `round_finished` callback, before
//! the engine checks the limits, so a benchmark whose turn comes after the deadline stops
//! there without another round. Ending takes time too (each undecided benchmark's final
//! analysis, its store, its cleanup): on the real clock the rounds stop early by a
//! reserve for that — the benchmarks still running × the longest any benchmark's ending
//! took so far, or four times a turn's usual work between runs if longer (see
//! [`EndingGuess`]) — so that the run ends by the deadline; what is left past it (the
//! round in flight, a reserve too small) is said as the overshoot.

use perflab_engine::executor::{error::CleanupError, Executor, RunError};
use perflab_engine::experiment::{run_experiment, ExperimentError, Observer, Progress};
use perflab_engine::plan::Plan;
use perflab_model::{Experiment, Machine, Promise, Run};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Rounds a benchmark runs without a promise before the plan is said without it (the
/// engine promises at its first look that can decide, 10–14 rounds under a family).
const PILOT_ROUNDS_AT_MOST: u32 = 60;

/// The reserve for the endings is this many times the longest seen: an ending's final
/// analysis grows with the rounds, and the ones measured first ended after fewer rounds.
const RESERVE_MARGIN: f64 = 1.5;

/// Before any benchmark ended, its ending is guessed from its turns' work between runs
/// (a look): an ending analyses every metric and what the rounds ruled out, about this
/// many looks' work (on a loaded machine a guess from the lone benchmark without
/// `{build}` that ended first was 4× too short: 8 s past a 20 s budget).
const LOOK_TO_ENDING: f64 = 4.0;

/// How long a benchmark's ending takes, as the reserve for the endings counts it: the
/// longest ending seen, or [`LOOK_TO_ENDING`] times the 90th percentile of a turn's work
/// between runs if that is longer (before any ended, it is all there is). A quantile,
/// not the longest: one stall of 0.7 s between two rounds (the machine's, not the
/// analysis's) once held back 52 s of a 4-minute budget for endings that took 1–2 s.
#[derive(Debug)]
struct EndingGuess {
    /// A turn's work between runs, microseconds.
    between: hdrhistogram::Histogram<u64>,
    longest_ending_s: f64,
}

impl EndingGuess {
    fn new() -> EndingGuess {
        // 1 µs to an hour at 2 significant digits: a few kB whatever the rounds.
        let between = hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("valid constant bounds");
        EndingGuess { between, longest_ending_s: 0.0 }
    }

    /// A turn's work between its runs took `seconds`.
    fn between_runs(&mut self, seconds: f64) {
        self.between.saturating_record((seconds.max(0.0) * 1e6) as u64);
    }

    /// A benchmark's ending took `seconds`.
    fn ended(&mut self, seconds: f64) {
        self.longest_ending_s = self.longest_ending_s.max(seconds);
    }

    /// The seconds one ending is counted as.
    fn ending_s(&self) -> f64 {
        let usual = if self.between.is_empty() { 0.0 } else { self.between.value_at_quantile(0.9) as f64 / 1e6 };
        (LOOK_TO_ENDING * usual).max(self.longest_ending_s)
    }
}

/// The clock the interleaved experiments share.
#[derive(Debug, Clone)]
pub enum Clock {
    /// Wall time since the suite run started.
    Real(Instant),
    /// The sum of the executors' own clocks (simulated machines in tests): deterministic.
    Virtual(Arc<Mutex<Duration>>),
}

impl Clock {
    /// A clock reading zero now.
    pub fn real() -> Clock {
        Clock::Real(Instant::now())
    }

    /// Time since the suite started.
    pub fn now(&self) -> Duration {
        match self {
            Clock::Real(start) => start.elapsed(),
            Clock::Virtual(shared) => *shared.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }
}

/// Seconds the rounds stop before the deadline on the real clock (an f64's bits), for the
/// endings of the benchmarks still running (see the module's doc).
#[derive(Debug, Clone, Default)]
struct Reserve(Arc<AtomicU64>);

impl Reserve {
    fn get(&self) -> Duration {
        Duration::from_secs_f64(f64::from_bits(self.0.load(Ordering::SeqCst)))
    }
    fn set(&self, seconds: f64) {
        self.0.store(seconds.max(0.0).to_bits(), Ordering::SeqCst);
    }
}

/// Makes a benchmark's executor, on its own thread at its first turn (a real executor
/// starts a helper process, and is not sent between threads).
pub type MakeExecutor = Box<dyn FnOnce(&Plan) -> Result<Box<dyn Executor>, ExperimentError> + Send>;

/// One benchmark to interleave: its plan and how to run it.
pub struct Entry {
    /// The engine's plan (its deadline and budget set to the suite's).
    pub plan: Plan,
    /// Its executor.
    pub make: MakeExecutor,
}

/// What the budget promised after the pilot: for each benchmark still running, what its
/// share of the deadline can resolve at the noise of its first rounds.
#[derive(Debug, Clone)]
pub struct BudgetPlan {
    /// The whole suite's deadline, seconds.
    pub budget_s: f64,
    /// Suite time when the plan was made (the pilot: every benchmark to its first look).
    pub at_s: f64,
    /// Per benchmark index still running: its share.
    pub shares: BTreeMap<usize, Share>,
}

/// What one benchmark's share of the budget promises.
#[derive(Debug, Clone)]
pub struct Share {
    /// What its rounds by the deadline can resolve at the noise of its first rounds, or
    /// None (no look could promise anything within [`PILOT_ROUNDS_AT_MOST`] rounds).
    pub promise: Option<Promise>,
    /// Its equivalence margin (a fraction), which the promise is read against.
    pub threshold: f64,
}

/// How the budget was used, said at the end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetUse {
    /// The deadline, seconds.
    pub budget_s: f64,
    /// Suite time at the end.
    pub used_s: f64,
    /// Benchmarks that ended before the deadline (decided, or their rounds spent).
    pub ended_before: usize,
    /// Benchmarks the deadline stopped.
    pub stopped_at_deadline: usize,
    /// The largest reserve the rounds kept before the deadline for the benchmarks'
    /// endings, seconds (0 on a virtual clock).
    pub reserve_s: f64,
}

impl BudgetUse {
    /// Seconds past the deadline (0 when within it): the round in flight at the deadline
    /// and the final analyses.
    pub fn overshoot_s(&self) -> f64 {
        (self.used_s - self.budget_s).max(0.0)
    }
}

/// Hears the interleaved experiments, always on the calling thread and between runs.
pub trait BudgetObserver {
    /// A measured run of benchmark `bench` ended (store it now, as `run` does).
    fn run_finished(&mut self, _bench: usize, _command: usize, _run: &Run) {}
    /// A round of `bench` ended.
    fn round_finished(&mut self, _bench: usize, _progress: &Progress) {}
    /// The pilot is over: what each benchmark's share can resolve.
    fn planned(&mut self, _plan: &BudgetPlan) {}
    /// `bench` ended: its experiment (its `duration_s` the time of its own runs), or why
    /// it could not run.
    fn finished(&mut self, _bench: usize, _result: Result<Experiment, String>) {}
}

/// Run `entries` interleaved against `budget_s` seconds of `clock`, returning how the
/// budget was used. Every entry's plan must carry the deadline (`max_time_s`) and
/// `budget_s` already (see [`with_deadline`]).
pub fn interleave(entries: Vec<Entry>, clock: Clock, budget_s: f64, observer: &mut dyn BudgetObserver) -> BudgetUse {
    let total = entries.len();
    let reserve = Reserve::default();
    let (events_tx, events) = channel::<(usize, Event)>();
    let mut turns: Vec<Sender<()>> = Vec::with_capacity(total);
    let mut threads = Vec::with_capacity(total);
    let mut compares = Vec::with_capacity(total);
    let thresholds: Vec<f64> = entries.iter().map(|e| e.plan.settings.threshold).collect();
    for (index, entry) in entries.into_iter().enumerate() {
        let (turn_tx, turn) = channel::<()>();
        turns.push(turn_tx);
        compares.push(entry.plan.candidates() > 0);
        let events_tx = events_tx.clone();
        let clock = clock.clone();
        let reserve = reserve.clone();
        threads.push(std::thread::spawn(move || worker(index, entry, clock, reserve, events_tx, turn)));
    }
    drop(events_tx);
    let mut queue: VecDeque<usize> = (0..total).collect();
    let mut promises: BTreeMap<usize, Option<Promise>> = BTreeMap::new();
    let mut rounds = vec![0u32; total];
    let mut ended = vec![false; total];
    let mut planned = false;
    let mut use_ = BudgetUse { budget_s, used_s: 0.0, ended_before: 0, stopped_at_deadline: 0, reserve_s: 0.0 };
    // The reserve for endings (on the real clock only: simulated analyses take no
    // simulated time).
    let mut ending = EndingGuess::new();
    let mut turn_given = Instant::now();
    let real = matches!(clock, Clock::Real(_));
    let give_turn = |queue: &mut VecDeque<usize>, turns: &[Sender<()>]| {
        // A worker gone (it panicked) has sent its end already: skip it.
        while let Some(next) = queue.pop_front() {
            if turns[next].send(()).is_ok() {
                return true;
            }
        }
        false
    };
    if !give_turn(&mut queue, &turns) {
        return use_;
    }
    while let Ok((bench, event)) = events.recv() {
        match event {
            Event::Run(command, run) => {
                observer.run_finished(bench, command, &run);
                let _ = turns[bench].send(());
            }
            Event::Promised(promise) => {
                promises.insert(bench, Some(promise));
                let _ = turns[bench].send(());
            }
            Event::Round(progress, runs) => {
                if real {
                    ending.between_runs(turn_given.elapsed().saturating_sub(runs).as_secs_f64());
                }
                rounds[bench] = progress.rounds;
                observer.round_finished(bench, &progress);
                // The turn passes after every round, to the next benchmark still running.
                queue.push_back(bench);
                if real {
                    let running = ended.iter().filter(|e| !**e).count();
                    let reserved = RESERVE_MARGIN * running as f64 * ending.ending_s();
                    reserve.set(reserved);
                    use_.reserve_s = use_.reserve_s.max(reserved);
                }
                turn_given = Instant::now();
                if !give_turn(&mut queue, &turns) {
                    break;
                }
            }
            Event::Done(result) => {
                ended[bench] = true;
                let at_deadline = matches!(&result, Ok(e) if e.stop_reason == perflab_model::StopReason::MaxTime);
                if at_deadline {
                    use_.stopped_at_deadline += 1;
                } else {
                    use_.ended_before += 1;
                }
                observer.finished(bench, result);
                if real {
                    // An ending: the final analysis on the worker, the store and the
                    // cleanup here.
                    ending.ended(turn_given.elapsed().as_secs_f64());
                    reserve.set(RESERVE_MARGIN * ended.iter().filter(|e| !**e).count() as f64 * ending.ending_s());
                }
                turn_given = Instant::now();
                if queue.is_empty() || !give_turn(&mut queue, &turns) {
                    break;
                }
            }
        }
        if !planned {
            // The pilot ends when every comparing benchmark still running has promised
            // (or ran long enough without), so the plan is said once, before most rounds.
            let pending = (0..total)
                .any(|b| compares[b] && !ended[b] && !promises.contains_key(&b) && rounds[b] < PILOT_ROUNDS_AT_MOST);
            if !pending {
                planned = true;
                let plan = BudgetPlan {
                    budget_s,
                    at_s: clock.now().as_secs_f64(),
                    shares: (0..total)
                        .filter(|&b| compares[b] && !ended[b])
                        .map(|b| (b, Share { promise: promises.get(&b).cloned().flatten(), threshold: thresholds[b] }))
                        .collect(),
                };
                // Every benchmark ended in the pilot: there is nothing left to plan.
                if !plan.shares.is_empty() {
                    observer.planned(&plan);
                }
            }
        }
    }
    drop(turns);
    for thread in threads {
        let _ = thread.join();
    }
    use_.used_s = clock.now().as_secs_f64();
    use_
}

/// `plan` bound by the suite's deadline: its rounds stop at `budget_s` of the suite's
/// clock, and it promises at its first look what its share can resolve. A fixed number
/// of rounds (a suite file's `rounds`) is bounded by the deadline too.
pub fn with_deadline(mut plan: Plan, budget_s: f64) -> Plan {
    plan.settings.max_time_s = budget_s;
    plan.settings.budget_s = Some(budget_s);
    plan.settings.max_time_bounds_fixed_rounds = true;
    plan
}

/// What a worker tells the scheduler; it then waits for its turn again (except `Done`).
enum Event {
    Run(usize, Box<Run>),
    /// A round ended; with the time the benchmark's runs took in this turn.
    Round(Progress, Duration),
    Promised(Promise),
    Done(Result<Experiment, String>),
}

/// One benchmark's thread: waits for its first turn, runs its experiment through the
/// relay, and says how it ended.
fn worker(
    index: usize,
    entry: Entry,
    clock: Clock,
    reserve: Reserve,
    events: Sender<(usize, Event)>,
    turn: Receiver<()>,
) {
    if turn.recv().is_err() {
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let turn_runs = Arc::new(AtomicU64::new(0));
    let mut relay = Relay { index, events: events.clone(), turn, stop: stop.clone(), turn_runs: turn_runs.clone() };
    let Entry { plan, make } = entry;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let inner = make(&plan).map_err(|e| e.to_string())?;
        let mut gate = Gate { inner, clock, reserve, own: Duration::ZERO, turn_runs, stop };
        let mut experiment = run_experiment(&plan, &mut gate, &mut relay).map_err(|e| e.to_string())?;
        // The engine read the suite's clock: its own time is that of its runs.
        experiment.duration_s = gate.own.as_secs_f64();
        Ok(experiment)
    }));
    let result = outcome.unwrap_or_else(|_| Err("the benchmark's experiment panicked".to_string()));
    let _ = events.send((index, Event::Done(result)));
}

/// The engine's observer on a worker's thread: every callback goes to the scheduler, and
/// the worker waits for the reply — at once for a run (stored between runs, as `run`
/// stores them) and a promise, at its next turn for a round.
struct Relay {
    index: usize,
    events: Sender<(usize, Event)>,
    turn: Receiver<()>,
    /// Set when the scheduler is gone: the executor then reads as interrupted.
    stop: Arc<AtomicBool>,
    /// Nanoseconds the runs of the current turn took (the gate adds, a round takes).
    turn_runs: Arc<AtomicU64>,
}

impl Relay {
    fn call(&mut self, event: Event) {
        if self.events.send((self.index, event)).is_err() || self.turn.recv().is_err() {
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}

impl Observer for Relay {
    fn run_finished(&mut self, command: usize, run: &Run) -> anyhow::Result<()> {
        self.call(Event::Run(command, Box::new(run.clone())));
        Ok(())
    }

    fn round_finished(&mut self, progress: &Progress) {
        let runs = Duration::from_nanos(self.turn_runs.swap(0, Ordering::SeqCst));
        self.call(Event::Round(progress.clone(), runs));
    }

    fn promised(&mut self, promise: &Promise) {
        self.call(Event::Promised(promise.clone()));
    }
}

/// A benchmark's executor on the suite's clock: the engine's limits and pace read the
/// time since the suite started; the time of the benchmark's own runs is kept apart.
struct Gate {
    inner: Box<dyn Executor>,
    clock: Clock,
    reserve: Reserve,
    own: Duration,
    turn_runs: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Gate {
    /// Runs `f` on the inner executor, counting its time as the benchmark's own (and, on
    /// a virtual clock, advancing the suite's by it).
    fn timed<T>(&mut self, f: impl FnOnce(&mut dyn Executor) -> T) -> T {
        let before = self.inner.elapsed();
        let started = Instant::now();
        let result = f(self.inner.as_mut());
        let spent = match &self.clock {
            Clock::Real(_) => started.elapsed(),
            Clock::Virtual(shared) => {
                let spent = self.inner.elapsed().saturating_sub(before);
                *shared.lock().unwrap_or_else(|p| p.into_inner()) += spent;
                spent
            }
        };
        self.own += spent;
        self.turn_runs.fetch_add(spent.as_nanos() as u64, Ordering::SeqCst);
        result
    }
}

impl Executor for Gate {
    fn run(&mut self, index: usize, pad_bytes: Option<usize>) -> Result<Run, RunError> {
        self.timed(|e| e.run(index, pad_bytes))
    }
    fn stderr_tail(&self, index: usize) -> String {
        self.inner.stderr_tail(index)
    }
    fn setup(&mut self) -> Result<(), RunError> {
        self.timed(|e| e.setup())
    }
    fn cleanup(&mut self) -> Result<(), CleanupError> {
        self.timed(|e| e.cleanup())
    }
    fn printed_metrics(&self) -> Vec<String> {
        self.inner.printed_metrics()
    }
    /// The suite's clock, ahead by the reserve: the engine's deadline comes that much
    /// early, leaving the time for the endings.
    fn elapsed(&self) -> Duration {
        self.clock.now() + self.reserve.get()
    }
    fn set_aside(&self) -> Duration {
        self.reserve.get()
    }
    fn interrupted(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.inner.interrupted()
    }
    fn machine(&self) -> Machine {
        self.inner.machine()
    }
    fn environment_facts(&self) -> BTreeMap<String, String> {
        self.inner.environment_facts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stall_between_rounds_does_not_set_the_reserve_but_an_ending_does() {
        let mut guess = EndingGuess::new();
        assert_eq!(guess.ending_s(), 0.0, "nothing seen, nothing reserved");
        for _ in 0..99 {
            guess.between_runs(0.010);
        }
        guess.between_runs(0.7);
        // 4 × the usual 10 ms (to the histogram's 2 digits), not 4 × 0.7 s.
        assert!((guess.ending_s() - 0.040).abs() < 0.001, "{}", guess.ending_s());
        guess.ended(1.5);
        assert_eq!(guess.ending_s(), 1.5, "an ending seen counts as it took");
        // Turns that usually take long are counted so even after a short ending.
        for _ in 0..1000 {
            guess.between_runs(0.5);
        }
        assert!((guess.ending_s() - 2.0).abs() < 0.02, "{}", guess.ending_s());
        guess.between_runs(-1.0);
        guess.between_runs(1e9);
        assert!(guess.ending_s().is_finite());
    }
    use perflab_engine::executor::simulated::{Noise, Simulated};
    use perflab_engine::measure::MeasureOptions;
    use perflab_engine::plan::Compared;
    use perflab_model::{metric, CommandSpec, Settings, StopReason, Verdict};

    /// A benchmark of base and pr on the simulated machine: pr takes `ratio` × base's 20 ms.
    fn entry(seed: u64, ratio: f64, sigma: f64, confidence: f64, budget_s: f64) -> Entry {
        let plan = Plan::new(
            vec![CommandSpec::bare("base"), CommandSpec::bare("pr")],
            Settings { seed, confidence, ..Settings::default() },
            MeasureOptions::default(),
            Compared::fixed(vec![metric::WALL.into()]),
        );
        let make: MakeExecutor = Box::new(move |_: &Plan| {
            Ok(Box::new(Simulated::new(seed, vec![0.02, 0.02 * ratio], Noise::gaussian(sigma))) as Box<dyn Executor>)
        });
        Entry { plan: with_deadline(plan, budget_s), make }
    }

    /// Keeps what the scheduler said, in order.
    #[derive(Default)]
    struct Heard {
        /// (benchmark, measured rounds) of every round, in the order they ran.
        rounds: Vec<(usize, u32)>,
        plan: Option<BudgetPlan>,
        /// Suite rounds run when the plan was said.
        planned_after: usize,
        ended: Vec<(usize, Experiment)>,
        runs: usize,
    }

    impl BudgetObserver for Heard {
        fn run_finished(&mut self, _bench: usize, _command: usize, _run: &Run) {
            self.runs += 1;
        }
        fn round_finished(&mut self, bench: usize, progress: &Progress) {
            self.rounds.push((bench, progress.rounds));
        }
        fn planned(&mut self, plan: &BudgetPlan) {
            self.plan = Some(plan.clone());
            self.planned_after = self.rounds.len();
        }
        fn finished(&mut self, bench: usize, result: Result<Experiment, String>) {
            self.ended.push((bench, result.expect("simulated runs")));
        }
    }

    fn run(entries: Vec<Entry>, budget_s: f64) -> (BudgetUse, Heard) {
        let clock = Clock::Virtual(Arc::new(Mutex::new(Duration::ZERO)));
        let mut heard = Heard::default();
        let used = interleave(entries, clock, budget_s, &mut heard);
        (used, heard)
    }

    fn verdict(e: &Experiment) -> Verdict {
        e.comparisons.iter().find(|c| c.metric == metric::WALL).expect("a wall comparison").verdict
    }

    /// Rounds go round-robin, one at a time, to the benchmarks still running; a decided
    /// benchmark stops and the others go on; every run of the interleaved experiments is
    /// heard once.
    #[test]
    fn rounds_interleave_and_a_decided_benchmark_stops() {
        let level = crate::family::benchmark_confidence(0.95, 3);
        // A clear +10 % change decides early; two unchanged benchmarks with more noise go on.
        let entries = vec![
            entry(1, 1.10, 0.005, level, 600.0),
            entry(2, 1.0, 0.01, level, 600.0),
            entry(3, 1.0, 0.01, level, 600.0),
        ];
        let (used, heard) = run(entries, 600.0);
        assert_eq!(heard.ended.len(), 3);
        // The first rounds alternate: benchmark 0, 1, 2, 0, 1, 2 … (warm-up rounds included).
        let first: Vec<usize> = heard.rounds.iter().take(6).map(|&(b, _)| b).collect();
        assert_eq!(first, [0, 1, 2, 0, 1, 2]);
        let (changed_at, changed) =
            heard.ended.iter().enumerate().find(|(_, (b, _))| *b == 0).map(|(i, (_, e))| (i, e)).unwrap();
        assert_eq!(verdict(changed), Verdict::Slower);
        assert_eq!(changed.stop_reason, StopReason::Decided);
        assert_eq!(changed_at, 0, "the clear change ends first");
        // After it ended, none of its rounds ran: the others' rounds followed one another.
        let last_of_changed = heard.rounds.iter().rposition(|&(b, _)| b == 0).unwrap();
        assert!(heard.rounds[last_of_changed + 1..].iter().all(|&(b, _)| b != 0));
        let others: Vec<u32> = heard.ended.iter().filter(|(b, _)| *b != 0).map(|(_, e)| e.rounds).collect();
        assert!(others.iter().all(|&n| n > changed.rounds), "{others:?} vs {}", changed.rounds);
        let runs: usize = heard.ended.iter().map(|(_, e)| e.commands.iter().map(|c| c.runs.len()).sum::<usize>()).sum();
        assert_eq!(heard.runs, runs, "every measured run is heard once");
        assert_eq!((used.ended_before, used.stopped_at_deadline), (3, 0));
        assert!(used.used_s < 600.0);
    }

    /// The deadline stops every benchmark still running without another round: the suite
    /// overshoots by at most the round in flight, and each undecided benchmark says what
    /// its rounds ruled out.
    #[test]
    fn the_deadline_stops_the_undecided_with_what_they_ruled_out() {
        let budget = 6.0;
        let level = crate::family::benchmark_confidence(0.95, 4);
        // Noise too large to decide ±1 % in 6 s of 40 ms rounds shared by four.
        let entries: Vec<Entry> = (0..4).map(|i| entry(10 + i, 1.0, 0.08, level, budget)).collect();
        let (used, heard) = run(entries, budget);
        assert_eq!(used.stopped_at_deadline, 4, "{used:?}");
        let round_s = 0.04 * 1.3; // two runs of 20 ms and the simulated machine's noise
        assert!(used.used_s >= budget && used.overshoot_s() <= round_s, "{used:?}");
        for (_, e) in &heard.ended {
            assert_eq!(e.stop_reason, StopReason::MaxTime);
            assert_eq!(verdict(e), Verdict::Inconclusive);
            let learned = e.learned.first().expect("an undecided comparison says what it ruled out");
            assert!(learned.down > 0.0 && learned.up > 0.0 && learned.up.is_finite(), "{learned:?}");
            // Its own time is its runs', a quarter of the suite's or so, not the suite's.
            assert!(e.duration_s < budget / 2.0, "{}", e.duration_s);
        }
        // Equal shares: the four ran within one round of each other.
        let counts: Vec<u32> = heard.ended.iter().map(|(_, e)| e.rounds).collect();
        let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(hi - lo <= 1, "{counts:?}");
    }

    /// After the pilot (every benchmark to its first look, interleaved) the plan says what
    /// each share can resolve; the promise is made on the suite's pace, so a benchmark
    /// sharing the budget with three others is promised about a quarter of the rounds it
    /// would get alone.
    #[test]
    fn the_plan_is_said_after_the_pilot_with_each_share() {
        let budget = 20.0;
        let level = crate::family::benchmark_confidence(0.95, 4);
        let (_, heard) = run((0..4).map(|i| entry(20 + i, 1.0, 0.03, level, budget)).collect(), budget);
        let plan = heard.plan.expect("a plan");
        assert_eq!(plan.shares.len(), 4);
        assert!(plan.at_s < budget / 4.0, "the pilot is short: {}", plan.at_s);
        assert!(heard.planned_after < heard.rounds.len() / 5, "said before most rounds");
        let (_, alone) = run(vec![entry(20, 1.0, 0.03, level, budget)], budget);
        let alone = alone.plan.unwrap().shares[&0].promise.clone().unwrap();
        for share in plan.shares.values() {
            let p = share.promise.clone().expect("a promise");
            assert_eq!(share.threshold, 0.01);
            let share = p.rounds as f64 / alone.rounds as f64;
            assert!((0.18..0.35).contains(&share), "{} of {} rounds", p.rounds, alone.rounds);
            assert!(p.resolution > alone.resolution, "a share resolves less than the whole budget");
        }
    }
}
