//! `perflab agent`: the loop on each benchmark machine — claim the oldest job meant for
//! this machine, keep its lease alive from a second connection while the suite runs,
//! record how it ended, and wait for more. A job an earlier attempt left half done (its
//! agent was killed and the lease expired) resumes: benchmarks that attempt completed on
//! this machine are not measured again.

use super::{selects, Job};
use crate::error::Failure;
use crate::model::{Machine, StopReason};
use crate::store::fleet::{Claim, JobEnd};
use crate::store::{self, Store};
use crate::suite::runner::{run_suite, Explanation, Outcome, RunOptions, SuiteObserver};
use crate::suite::{self, Benchmark, Build};
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

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
    pub show_output: bool,
}

/// Run the agent until interrupted (or idle with `exit_when_idle`, or after one job with
/// `once`). `observer` hears about every benchmark.
pub fn run(options: &AgentOptions, observer: &mut dyn SuiteObserver) -> Result<(), Failure> {
    std::env::set_current_dir(&options.dir)
        .map_err(|e| crate::usage!("cannot work in {}: {e}", options.dir.display()))?;
    let mut store = Store::open(options.db.as_deref())?;
    let fingerprint = store::fingerprint(&options.machine);
    let machine_id = store.register_machine(&options.machine)?;
    let agent = format!("{}:{}", options.machine.hostname, std::process::id());
    eprintln!(
        "perflab agent {agent}: machine {}, queue in {}",
        crate::render::terminal::escape(&store::describe_machine(&fingerprint, &options.machine)),
        store.location()
    );
    let interrupt = crate::interrupt::watcher();
    loop {
        if interrupt.requested() {
            return Err(Failure::Interrupted("agent stopped between jobs".into()));
        }
        let next = store
            .open_jobs(machine_id)?
            .into_iter()
            .filter(|job| selects(&job.spec.machines, &fingerprint, &options.machine))
            .find_map(|job| match store.claim(job.id, machine_id, &agent, options.lease_s) {
                Ok(Some(claim)) => Some(Ok((job, claim))),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            })
            .transpose()?;
        match next {
            Some((job, claim)) => {
                work(&mut store, &job, &claim, &fingerprint, options, observer)?;
                if options.once {
                    return Ok(());
                }
            }
            None if options.exit_when_idle => {
                eprintln!("perflab agent {agent}: no job for this machine; exiting");
                return Ok(());
            }
            None => idle(options.poll_s),
        }
    }
}

/// Sleep `seconds`, waking early for an interrupt.
fn idle(seconds: f64) {
    let interrupt = crate::interrupt::watcher();
    let end = std::time::Instant::now() + Duration::from_secs_f64(seconds.max(0.0));
    while !interrupt.requested() && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50).min(end.saturating_duration_since(std::time::Instant::now())));
    }
}

/// Run one claimed job and record how it ended.
fn work(
    store: &mut Store,
    job: &Job,
    claim: &Claim,
    fingerprint: &str,
    options: &AgentOptions,
    observer: &mut dyn SuiteObserver,
) -> Result<(), Failure> {
    eprintln!(
        "perflab agent: job {} (attempt {}): suite {}, label `{}`",
        job.id,
        claim.attempt,
        crate::render::terminal::escape(&job.spec.suite_path),
        crate::render::terminal::escape(&job.spec.label)
    );
    // Set while no other thread runs (the previous heartbeat was joined): what the
    // suite's prepare, setup and cleanup commands can use.
    std::env::set_var("PERFLAB_JOB", job.id.to_string());
    std::env::set_var("PERFLAB_LABEL", &job.spec.label);
    match &job.spec.git_commit {
        Some(commit) => std::env::set_var("PERFLAB_COMMIT", commit),
        None => std::env::remove_var("PERFLAB_COMMIT"),
    }
    if let Some(id) = &options.machine.id {
        std::env::set_var(crate::machine::MACHINE_ID_ENV, id);
    }
    let heartbeat = Heartbeat::start(options.db.clone(), claim.clone(), options.lease_s);
    let result = execute(store, job, fingerprint, options, observer);
    let lease_kept = heartbeat.stop();
    let (end, message) = match &result {
        Ok(failed) if failed.is_empty() => (JobEnd::Done, None),
        Ok(failed) => (JobEnd::Failed, Some(format!("{} benchmark(s) failed: {}", failed.len(), failed.join(", ")))),
        Err(Failure::Interrupted(why)) => {
            store.release(claim, "agent interrupted")?;
            return Err(Failure::Interrupted(format!("{why}; job {} is queued again", job.id)));
        }
        Err(Failure::Other(_)) => {
            // The store or the system failed, not the job: give it back and stop.
            let _ = store.release(claim, "agent error");
            return result.map(|_| ());
        }
        Err(failure) => (JobEnd::Failed, Some(failure.line())),
    };
    let recorded = store.finish_claim(claim, end, message.as_deref())?;
    if !(recorded && lease_kept) {
        eprintln!(
            "perflab agent: warning: the lease on job {} expired while it ran and another agent took it over; \
             raise --lease above the longest pause of this machine",
            job.id
        );
    }
    match message {
        Some(m) => eprintln!("perflab agent: job {} failed: {m}", job.id),
        None => eprintln!("perflab agent: job {} done", job.id),
    }
    Ok(())
}

/// Run the job's suite; returns the benchmarks that failed.
fn execute(
    store: &mut Store,
    job: &Job,
    fingerprint: &str,
    options: &AgentOptions,
    observer: &mut dyn SuiteObserver,
) -> Result<Vec<String>, Failure> {
    let suite = suite::parse(&job.spec.suite, &options.dir.join(&job.spec.suite_path))?;
    let selected = suite.select(job.spec.filter.as_deref())?;
    let (candidate, baseline) =
        suite.builds(job.spec.build.as_deref(), job.spec.baseline.as_deref(), Some(&job.spec.label))?;
    let source = format!("fleet:{}", job.id);
    let done = store.completed_benchmarks(&source, &job.spec.label, fingerprint)?;
    let todo: Vec<&Benchmark> = selected.into_iter().filter(|b| !done.contains(&b.name)).collect();
    if !done.is_empty() {
        eprintln!("perflab agent: resuming: {} benchmark(s) were completed by an earlier attempt", done.len());
    }
    let mut failed = Vec::new();
    if todo.is_empty() {
        return Ok(failed);
    }
    let run = RunOptions {
        source: Some(source),
        machine: Some(options.machine.clone()),
        show_output: options.show_output,
        ..RunOptions::default()
    };
    let mut tally = Tally { inner: observer, failed: &mut failed };
    run_suite(&todo, &job.spec.label, (candidate, baseline), &run, store, &mut tally)?;
    if crate::interrupt::watcher().requested() {
        return Err(Failure::Interrupted("agent interrupted during the job".into()));
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
    fn experiment(&mut self) -> Option<&mut dyn crate::experiment::Observer> {
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
}

/// Renews a claim's lease every third of it from its own connection, until stopped.
struct Heartbeat {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<bool>,
}

impl Heartbeat {
    fn start(db: Option<String>, claim: Claim, lease_s: f64) -> Heartbeat {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut store = match Store::open(db.as_deref()) {
                Ok(store) => store,
                Err(e) => {
                    eprintln!("perflab agent: warning: no heartbeat connection: {}", e.line());
                    return true;
                }
            };
            let every = Duration::from_secs_f64((lease_s / 3.0).max(0.05));
            loop {
                match stopped.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => match store.renew(&claim, lease_s) {
                        Ok(true) => {}
                        Ok(false) => return false,
                        Err(e) => eprintln!("perflab agent: warning: renewing the lease failed: {}", e.line()),
                    },
                    _ => return true,
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
