//! `perflab agent`: the loop on each benchmark machine — claim the oldest job meant for
//! this machine, keep its lease alive from a second connection while the suite runs,
//! record how it ended, and wait for more. A job an earlier attempt left half done (its
//! agent was killed and the lease expired) resumes: benchmarks that attempt completed on
//! this machine are not measured again, and the one it left incomplete is measured anew
//! and replaces it.
//!
//! The agent outlives its database: when the server restarts, goes away or stops
//! answering (a partition; every statement has a time-out), the agent reconnects with
//! exponential backoff and jitter, then keeps its claim if it is still its own (renewing
//! the lease) and goes on with the job — or, when another agent took the job over
//! meanwhile, leaves it to that one. Its writes are fenced by the claim, so a job never
//! gets results from two attempts. What happens is told through [`Event`]s.

use super::error::FleetError;
use super::{selects, Job};
use crate::runner::{run_suite, Explanation, Outcome, RunOptions, SuiteObserver};
use crate::{Benchmark, Build};
use perflab_model::{Machine, StopReason};
use perflab_store::fleet::{Claim, JobEnd};
use perflab_store::Store;
use rand::Rng;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The store (URL or path; None: `$PERFLAB_DB` or the default), opened a second time
    /// for the lease's heartbeat.
    pub db: Option<String>,
    /// The machine results are stored under (its id may be set to pose as another machine).
    pub machine: Machine,
    /// The working directory: suite paths and relative build paths are resolved here.
    pub dir: PathBuf,
    /// Seconds a claim stays valid without a heartbeat; renewed every third of it.
    pub lease_s: f64,
    /// Seconds between looks at the queue when it has nothing for this machine.
    pub poll_s: f64,
    /// Run one job, then exit.
    pub once: bool,
    /// Exit when no job is claimable instead of waiting.
    pub exit_when_idle: bool,
    /// Show the benchmarked commands' output instead of discarding it.
    pub show_output: bool,
}

/// What an agent tells its operator; `cli` renders each as one line.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The agent started.
    Started {
        /// The agent's name.
        agent: String,
        /// The machine it runs on, as the fleet names it.
        machine: String,
        /// The store it works from, as its location reads.
        store: String,
    },
    /// A job was claimed for this machine.
    Claimed {
        /// The job's id.
        job: i64,
        /// The attempt number of this claim.
        attempt: i64,
        /// The job's suite file.
        suite: String,
        /// The label its results are stored under.
        label: String,
    },
    /// A claimed job goes on where an earlier attempt stopped.
    Resuming {
        /// The job's id.
        job: i64,
        /// Benchmarks an earlier attempt already stored (not run again).
        completed: usize,
    },
    /// The database could not be reached or stopped answering; the next try is in `retry_in_s`.
    Unavailable {
        /// The database's error, one line.
        why: String,
        /// Tries so far.
        attempt: u32,
        /// Seconds until the next try.
        retry_in_s: f64,
    },
    /// The database answers again.
    Reconnected {
        /// Seconds the outage lasted.
        after_s: f64,
        /// Tries it took.
        attempts: u32,
    },
    /// After an outage during a job, its claim was still this agent's: the lease is renewed
    /// and the job goes on (its benchmark in flight is measured again).
    ClaimKept {
        /// The job's id.
        job: i64,
        /// The attempt number.
        attempt: i64,
    },
    /// Another agent took the job over (this one's lease ran out): it is left to that one.
    ClaimLost {
        /// The job's id.
        job: i64,
        /// This agent's attempt number.
        attempt: i64,
    },
    /// Renewing the job's lease failed.
    HeartbeatFailed {
        /// The job's id.
        job: i64,
        /// The error, one line.
        why: String,
    },
    /// The job's lease ran out while it ran: its end could not be recorded as this agent's.
    LeaseExpiredWhileRunning {
        /// The job's id.
        job: i64,
    },
    /// The job finished and its results are stored.
    Done {
        /// The job's id.
        job: i64,
    },
    /// The job failed.
    Failed {
        /// The job's id.
        job: i64,
        /// Why, one line.
        why: String,
    },
    /// No job is claimable for this machine, and the agent exits (`--exit-when-idle`).
    Idle,
}

/// Where events go: shared with the heartbeat's thread.
pub type EventSink = Arc<dyn Fn(&Event) + Send + Sync>;

/// First and longest wait between reconnection attempts.
const BACKOFF_FIRST_S: f64 = 0.5;
const BACKOFF_MAX_S: f64 = 15.0;

/// Exponential backoff with "equal jitter" (half the delay fixed, half random), so a
/// fleet whose database restarted does not reconnect in lockstep.
struct Backoff {
    next_s: f64,
    attempts: u32,
    started: Instant,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff { next_s: BACKOFF_FIRST_S, attempts: 0, started: Instant::now() }
    }

    fn next_wait_s(&mut self) -> f64 {
        let base = self.next_s;
        self.next_s = (self.next_s * 2.0).min(BACKOFF_MAX_S);
        self.attempts += 1;
        base / 2.0 + rand::thread_rng().gen_range(0.0..=base / 2.0)
    }
}

/// A failure with its causes, on one line.
fn describe(failure: &FleetError) -> String {
    match failure.database() {
        Some(e) => format!("{e:#}"),
        None => failure.to_string(),
    }
}

/// Open the store again after `failure` made it unusable, waiting with backoff while the
/// database is unavailable. Another kind of failure, or an interrupt, ends the wait.
fn reconnect(db: Option<&str>, failure: impl Into<FleetError>, events: &EventSink) -> Result<Store, FleetError> {
    let mut backoff = Backoff::new();
    let mut why = failure.into();
    loop {
        if !why.is_unavailable() {
            return Err(why);
        }
        let wait = backoff.next_wait_s();
        events(&Event::Unavailable { why: describe(&why), attempt: backoff.attempts, retry_in_s: wait });
        if !idle(wait) {
            return Err(FleetError::Interrupted("agent stopped while the database was unavailable".into()));
        }
        match Store::open(db) {
            Ok(store) => {
                events(&Event::Reconnected {
                    after_s: backoff.started.elapsed().as_secs_f64(),
                    attempts: backoff.attempts,
                });
                return Ok(store);
            }
            Err(e) => why = e.into(),
        }
    }
}

/// Run the agent until interrupted (or idle with `exit_when_idle`, or after one job with
/// `once`). `observer` hears about every benchmark, `events` about the rest.
pub fn run(options: &AgentOptions, observer: &mut dyn SuiteObserver, events: EventSink) -> Result<(), FleetError> {
    std::env::set_current_dir(&options.dir)
        .map_err(|source| FleetError::WorkDir { path: options.dir.clone(), source })?;
    // A database that is down or restarting when the agent starts is waited for like
    // any outage (each attempt is logged); a wrong URL or password ends it at once.
    let mut store = match Store::open(options.db.as_deref()) {
        Ok(store) => store,
        Err(e) => reconnect(options.db.as_deref(), e, &events)?,
    };
    let fingerprint = options.machine.fingerprint();
    let machine_id = loop {
        match store.register_machine(&options.machine) {
            Ok(id) => break id,
            Err(e) => store = reconnect(options.db.as_deref(), e, &events)?,
        }
    };
    let agent = format!("{}:{}", options.machine.hostname, std::process::id());
    events(&Event::Started {
        agent: agent.clone(),
        machine: options.machine.describe(&fingerprint),
        store: store.location().to_string(),
    });
    let interrupt = perflab_sys::interrupt::watcher();
    loop {
        if interrupt.requested() {
            return Err(FleetError::Interrupted("agent stopped between jobs".into()));
        }
        let next = match next_job(&mut store, machine_id, &fingerprint, &agent, options) {
            Ok(next) => next,
            Err(e) => {
                store = reconnect(options.db.as_deref(), e, &events)?;
                continue;
            }
        };
        match next {
            Some((job, claim)) => {
                work(&mut store, &job, &claim, &fingerprint, options, observer, &events)?;
                if options.once {
                    return Ok(());
                }
            }
            None if options.exit_when_idle => {
                events(&Event::Idle);
                return Ok(());
            }
            None => {
                idle(options.poll_s);
            }
        }
    }
}

/// The oldest open job meant for this machine, claimed; None when there is none.
fn next_job(
    store: &mut Store,
    machine_id: i64,
    fingerprint: &str,
    agent: &str,
    options: &AgentOptions,
) -> Result<Option<(Job, Claim)>, FleetError> {
    store
        .open_jobs(machine_id)?
        .into_iter()
        .filter(|job| selects(&job.spec.machines, fingerprint, &options.machine))
        .find_map(|job| match store.claim(job.id, machine_id, agent, options.lease_s) {
            Ok(Some(claim)) => Some(Ok((job, claim))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        })
        .transpose()
        .map_err(FleetError::from)
}

/// Sleep `seconds`, waking early for an interrupt; false when interrupted.
fn idle(seconds: f64) -> bool {
    let interrupt = perflab_sys::interrupt::watcher();
    let end = Instant::now() + Duration::from_secs_f64(seconds.max(0.0));
    while !interrupt.requested() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50).min(end.saturating_duration_since(Instant::now())));
    }
    !interrupt.requested()
}

/// Run one claimed job and record how it ended. Outages of the database are waited out;
/// a claim lost meanwhile leaves the job to the agent that took it.
fn work(
    store: &mut Store,
    job: &Job,
    claim: &Claim,
    fingerprint: &str,
    options: &AgentOptions,
    observer: &mut dyn SuiteObserver,
    events: &EventSink,
) -> Result<(), FleetError> {
    events(&Event::Claimed {
        job: job.id,
        attempt: claim.attempt,
        suite: job.spec.suite_path.clone(),
        label: job.spec.label.clone(),
    });
    // Set while no other thread runs (the previous heartbeat was joined): what the
    // suite's prepare, setup and cleanup commands can use.
    std::env::set_var("PERFLAB_JOB", job.id.to_string());
    std::env::set_var("PERFLAB_LABEL", &job.spec.label);
    match &job.spec.git_commit {
        Some(commit) => std::env::set_var("PERFLAB_COMMIT", commit),
        None => std::env::remove_var("PERFLAB_COMMIT"),
    }
    if let Some(id) = &options.machine.id {
        std::env::set_var(perflab_sys::machine::MACHINE_ID_ENV, id);
    }
    let heartbeat = Heartbeat::start(options.db.clone(), claim.clone(), options.lease_s, events.clone());
    let result = loop {
        let result = execute(store, job, claim, fingerprint, options, observer, events);
        match result {
            Err(e) if e.is_unavailable() => match keep_claim(store, claim, options, e, events) {
                Ok(true) => continue,
                Ok(false) => {
                    heartbeat.stop();
                    return Ok(());
                }
                Err(e) => break Err(e),
            },
            Err(e) if e.is_claim_lost() => {
                heartbeat.stop();
                events(&Event::ClaimLost { job: job.id, attempt: claim.attempt });
                return Ok(());
            }
            other => break other,
        }
    };
    let lease_kept = heartbeat.stop();
    let (end, message) = match &result {
        Ok(failed) if failed.is_empty() => (JobEnd::Done, None),
        Ok(failed) => (JobEnd::Failed, Some(format!("{} benchmark(s) failed: {}", failed.len(), failed.join(", ")))),
        Err(FleetError::Interrupted(why)) => {
            let _ = store.release(claim, "agent interrupted");
            return Err(FleetError::Interrupted(format!("{why}; job {} is queued again", job.id)));
        }
        Err(e) if e.is_system() => {
            // The store or the system failed, not the job: give it back and stop.
            let _ = store.release(claim, "agent error");
            return result.map(|_| ());
        }
        // As the command line would print it.
        Err(failure) => (JobEnd::Failed, Some(format!("perflab: error: {failure}"))),
    };
    let recorded = finish_claim(store, claim, end, message.as_deref(), options, events)?;
    if !(recorded && lease_kept) {
        events(&Event::LeaseExpiredWhileRunning { job: job.id });
    }
    events(&match message {
        Some(why) => Event::Failed { job: job.id, why },
        None => Event::Done { job: job.id },
    });
    Ok(())
}

/// After `failure` (the database became unavailable during a job): reconnect, then renew
/// the claim. True when it is still this attempt's (go on with the job), false when
/// another agent took it over.
fn keep_claim(
    store: &mut Store,
    claim: &Claim,
    options: &AgentOptions,
    failure: FleetError,
    events: &EventSink,
) -> Result<bool, FleetError> {
    let mut failure = failure;
    loop {
        *store = reconnect(options.db.as_deref(), failure, events)?;
        match store.renew(claim, options.lease_s) {
            Ok(true) => {
                events(&Event::ClaimKept { job: claim.job, attempt: claim.attempt });
                return Ok(true);
            }
            Ok(false) => {
                events(&Event::ClaimLost { job: claim.job, attempt: claim.attempt });
                return Ok(false);
            }
            Err(e) => failure = e.into(),
        }
    }
}

/// Record how the job ended, across outages; false when the claim was no longer this
/// attempt's. A retry after an outage may find its own earlier write committed (the
/// answer was lost): the claim then already reads as this attempt's end.
fn finish_claim(
    store: &mut Store,
    claim: &Claim,
    end: JobEnd,
    message: Option<&str>,
    options: &AgentOptions,
    events: &EventSink,
) -> Result<bool, FleetError> {
    let mut retried = false;
    loop {
        match store.finish_claim(claim, end, message) {
            Ok(true) => return Ok(true),
            Ok(false) if retried => return Ok(store.claim_ended(claim, end)?),
            Ok(false) => return Ok(false),
            Err(e) => {
                *store = reconnect(options.db.as_deref(), e, events)?;
                retried = true;
            }
        }
    }
}

/// Run the job's suite; returns the benchmarks that failed.
fn execute(
    store: &mut Store,
    job: &Job,
    claim: &Claim,
    fingerprint: &str,
    options: &AgentOptions,
    observer: &mut dyn SuiteObserver,
    events: &EventSink,
) -> Result<Vec<String>, FleetError> {
    let suite = crate::parse(&job.spec.suite, &options.dir.join(&job.spec.suite_path))?;
    let selected = suite.select(job.spec.filter.as_deref())?;
    let (candidate, baseline) =
        suite.builds(job.spec.build.as_deref(), job.spec.baseline.as_deref(), Some(&job.spec.label))?;
    let source = format!("fleet:{}", job.id);
    let done = store.completed_benchmarks(&source, &job.spec.label, fingerprint)?;
    let todo: Vec<&Benchmark> = selected.into_iter().filter(|b| !done.contains(&b.name)).collect();
    if !done.is_empty() {
        events(&Event::Resuming { job: job.id, completed: done.len() });
    }
    let mut failed = Vec::new();
    if todo.is_empty() {
        return Ok(failed);
    }
    let run = RunOptions {
        source: Some(source),
        machine: Some(options.machine.clone()),
        show_output: options.show_output,
        profile_changes: job.spec.profile_changes,
        fence: Some(claim.clone()),
        ..RunOptions::default()
    };
    let mut tally = Tally { inner: observer, failed: &mut failed };
    run_suite(&todo, &job.spec.label, (candidate, baseline), &run, store, &mut tally)?;
    if perflab_sys::interrupt::watcher().requested() {
        return Err(FleetError::Interrupted("agent interrupted during the job".into()));
    }
    Ok(failed)
}

/// Passes a suite's events on, noting the benchmarks that failed.
struct Tally<'a> {
    inner: &'a mut dyn SuiteObserver,
    failed: &'a mut Vec<String>,
}

impl SuiteObserver for Tally<'_> {
    fn preparing(&mut self, build: &Build) {
        self.inner.preparing(build);
    }
    fn started(&mut self, index: usize, total: usize, bench: &Benchmark) {
        self.inner.started(index, total, bench);
    }
    fn experiment(&mut self) -> Option<&mut dyn perflab_engine::experiment::Observer> {
        self.inner.experiment()
    }
    fn finished(&mut self, bench: &Benchmark, outcome: &Outcome) {
        let bad = match outcome {
            Outcome::Measured(e) => e.stop_reason == StopReason::CommandFailed,
            Outcome::Failed(_) => true,
        };
        if bad {
            self.failed.push(bench.name.clone());
        }
        self.inner.finished(bench, outcome);
    }
    fn cleanup_failed(&mut self, bench: &Benchmark, why: &str) {
        self.inner.cleanup_failed(bench, why);
    }
    fn explained(&mut self, bench: &Benchmark, explanation: &Explanation) {
        self.inner.explained(bench, explanation);
    }
    fn note(&mut self, bench: &Benchmark, note: &str) {
        self.inner.note(bench, note);
    }
}

/// Renews a claim's lease every third of it from its own connection, until stopped;
/// reconnects (on its next beat) when the database went away.
struct Heartbeat {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<bool>,
}

impl Heartbeat {
    fn start(db: Option<String>, claim: Claim, lease_s: f64, events: EventSink) -> Heartbeat {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let every = Duration::from_secs_f64((lease_s / 3.0).max(0.05));
            let mut store: Option<Store> = None;
            // Told once per outage, not at every beat.
            let mut failing = false;
            loop {
                match stopped.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => return true,
                }
                let beat = match store.as_mut() {
                    Some(store) => store.renew(&claim, lease_s),
                    None => Store::open(db.as_deref()).and_then(|mut opened| {
                        let renewed = opened.renew(&claim, lease_s);
                        store = Some(opened);
                        renewed
                    }),
                };
                match beat {
                    Ok(true) => failing = false,
                    Ok(false) => return false,
                    Err(e) => {
                        let e = FleetError::from(e);
                        if e.is_unavailable() {
                            store = None;
                        }
                        if !failing {
                            events(&Event::HeartbeatFailed { job: claim.job, why: describe(&e) });
                        }
                        failing = true;
                    }
                }
            }
        });
        Heartbeat { stop, thread }
    }

    /// Stop renewing; false when the lease was lost meanwhile.
    fn stop(self) -> bool {
        drop(self.stop);
        self.thread.join().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap_with_jitter_within_half() {
        let mut b = Backoff::new();
        let mut base = BACKOFF_FIRST_S;
        for _ in 0..12 {
            let wait = b.next_wait_s();
            assert!(wait >= base / 2.0 && wait <= base, "{wait} for a base of {base}");
            base = (base * 2.0).min(BACKOFF_MAX_S);
        }
        assert_eq!(b.attempts, 12);
        assert_eq!(b.next_s, BACKOFF_MAX_S);
    }
}
