//! `perflab queue` (add, list and cancel fleet jobs) and `perflab agent` (run them on
//! this machine).

use super::args::{duration, DbArgs, SelectionArgs};
use crate::error::Failure;
use clap::Args;
use perflab_render::suite::summary_line;
use perflab_render::terminal::escape;
use perflab_suite as suite;
use perflab_suite::fleet::agent::{AgentOptions, Event};
use perflab_suite::fleet::{self as fleet, JobSpec};
use perflab_suite::runner::{Explanation, Outcome, SuiteObserver};
use perflab_suite::{Benchmark, Build};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct QueueArgs {
    /// The suite file (its text is stored with the job; agents resolve its path and the
    /// builds' relative paths in their own working directory).
    #[arg(long, value_name = "FILE", default_value = suite::DEFAULT_FILE)]
    pub suite: PathBuf,
    /// Label to store the results under.
    #[arg(short = 'l', long, value_name = "LABEL", required_unless_present_any = ["list", "cancel"])]
    pub label: Option<String>,
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// A commit for the builds' `prepare` commands (given to them as PERFLAB_COMMIT).
    #[arg(long, value_name = "REV")]
    pub commit: Option<String>,
    /// Only machines whose id, hostname or fingerprint matches this glob (repeat for
    /// several; default: every machine). Each matching machine runs the job once.
    #[arg(long = "machine", value_name = "PATTERN")]
    pub machines: Vec<String>,
    /// For every benchmark found slower than --baseline beyond the threshold, store why:
    /// every run of both builds is sampled (as `perflab run --profile-changes`).
    #[arg(long, requires = "baseline")]
    pub profile_changes: bool,
    /// List the jobs and each machine's state of them instead.
    #[arg(long, conflicts_with_all = ["label", "cancel"])]
    pub list: bool,
    /// Cancel a job: no machine claims it any more.
    #[arg(long, value_name = "JOB")]
    pub cancel: Option<i64>,
    /// With --list: write the queue as JSON (`-` for stdout).
    #[arg(long, value_name = "FILE", requires = "list")]
    pub json: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `perflab queue`.
pub fn main_queue(args: QueueArgs) -> Result<(), Failure> {
    if args.list {
        let status = fleet::status(&mut args.db.open_existing()?)?;
        if let Some(path) = &args.json {
            crate::output::write_json(path, &status)?;
            if path == "-" {
                return Ok(());
            }
        }
        crate::out!("{}", perflab_render::suite::queue_status(&status));
        return Ok(());
    }
    if let Some(job) = args.cancel {
        let mut store = args.db.open_existing_to_write()?;
        if !store.cancel_job(job)? {
            return Err(crate::usage!("no job {job} in {}", store.location()));
        }
        eprintln!("cancelled job {job}");
        return Ok(());
    }
    let spec = JobSpec {
        suite_path: args.suite.to_string_lossy().into_owned(),
        suite: fleet::read_suite(&args.suite)?,
        label: args.label.unwrap_or_default(),
        git_commit: args.commit,
        build: args.selection.build,
        baseline: args.selection.baseline,
        filter: args.selection.filter,
        machines: args.machines,
        profile_changes: args.profile_changes,
    };
    let mut store = args.db.open()?;
    let id = fleet::queue(&mut store, &spec)?;
    eprintln!(
        "queued job {id}: {} under label `{}` on {} ({})",
        args.suite.display(),
        escape(&spec.label),
        if spec.machines.is_empty() { "every machine".to_string() } else { spec.machines.join(", ") },
        store.location()
    );
    Ok(())
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Store results under this machine id (also PERFLAB_MACHINE_ID): look-alike machines
    /// stay apart, and one host can pose as several machines (for testing a fleet).
    #[arg(long, value_name = "ID")]
    pub machine_id: Option<String>,
    /// Working directory for suites and builds.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// How long a claimed job stays reserved without a heartbeat (renewed every third of
    /// it); a killed agent's job is claimable again after this.
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "5m")]
    pub lease: f64,
    /// Time between looks at the queue when there is nothing to do.
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "30s")]
    pub poll: f64,
    /// Run one job, then exit.
    #[arg(long)]
    pub once: bool,
    /// Exit when no job is waiting for this machine.
    #[arg(long)]
    pub exit_when_idle: bool,
    /// Let the commands' output through.
    #[arg(long)]
    pub show_output: bool,
    /// Run as root although every queued job's commands then run as root (an agent runs
    /// whatever anyone who may queue wrote: docs/fleet.md, "Trust").
    #[arg(long)]
    pub allow_root: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `perflab agent`.
pub fn main_agent(args: AgentArgs) -> Result<(), Failure> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 && !args.allow_root {
        return Err(crate::usage!(
            "refusing to run an agent as root: it runs every queued job's commands as its own user, so anyone who may queue would run commands as root; run it as an unprivileged user, or pass --allow-root"
        ));
    }
    let mut machine = perflab_sys::machine::detect();
    if let Some(id) = args.machine_id.filter(|id| !id.is_empty()) {
        machine.id = Some(id);
    }
    let options = AgentOptions {
        db: args.db.db,
        machine,
        dir: args.dir,
        lease_s: args.lease,
        poll_s: args.poll,
        once: args.once,
        exit_when_idle: args.exit_when_idle,
        show_output: args.show_output,
    };
    let events: fleet::agent::EventSink = std::sync::Arc::new(|event: &Event| eprintln!("{}", event_line(event)));
    Ok(fleet::agent::run(&options, &mut AgentLog, events)?)
}

/// An agent's log on stderr: a line per benchmark as it ends.
struct AgentLog;

impl SuiteObserver for AgentLog {
    fn preparing(&mut self, build: &Build) {
        eprintln!("preparing build `{}`", escape(&build.name));
    }
    fn started(&mut self, index: usize, total: usize, bench: &Benchmark) {
        eprintln!("[{}/{total}] {}", index + 1, escape(&bench.name));
    }
    fn finished(&mut self, bench: &Benchmark, outcome: &Outcome) {
        match outcome {
            Outcome::Measured(experiment) => eprintln!("{}", summary_line(&bench.name, experiment)),
            Outcome::Failed(message) => {
                eprintln!("  {}: {}", escape(&bench.name), escape(&perflab_store::url::mask(message)))
            }
        }
    }
    fn explained(&mut self, _bench: &Benchmark, explanation: &Explanation) {
        eprintln!("{}", perflab_render::suite::explanation(explanation));
    }
    fn note(&mut self, bench: &Benchmark, note: &str) {
        eprintln!("note: benchmark `{}`: {}", escape(&bench.name), escape(note));
    }
}

/// One line of the agent's log for `event`, database secrets hidden.
fn event_line(event: &Event) -> String {
    perflab_store::url::mask(&event_text(event))
}

fn event_text(event: &Event) -> String {
    let seconds = |s: f64| perflab_model::units::format_seconds(s);
    match event {
        Event::Started { agent, machine, store } => {
            format!("perflab agent {}: machine {}, queue in {}", escape(agent), escape(machine), escape(store))
        }
        Event::Claimed { job, attempt, suite, label } => format!(
            "perflab agent: job {job} (attempt {attempt}): suite {}, label `{}`",
            escape(suite),
            escape(label)
        ),
        Event::Resuming { completed, .. } => {
            format!("perflab agent: resuming: {completed} benchmark(s) were completed by an earlier attempt")
        }
        Event::Unavailable { why, attempt, retry_in_s } => format!(
            "perflab agent: database unavailable ({}); reconnecting in {} (attempt {attempt})",
            escape(why),
            seconds(*retry_in_s)
        ),
        Event::Reconnected { after_s, attempts } => {
            format!("perflab agent: reconnected to the database after {} ({attempts} attempt(s))", seconds(*after_s))
        }
        Event::ClaimKept { job, attempt } => format!(
            "perflab agent: job {job} is still this agent's (attempt {attempt}): lease renewed, going on (the benchmark in flight is measured again)"
        ),
        Event::ClaimLost { job, attempt } => format!(
            "perflab agent: job {job} was taken over by another agent while this one could not renew its lease (attempt {attempt}); leaving it to that agent"
        ),
        Event::HeartbeatFailed { job, why } => {
            format!("perflab agent: warning: renewing the lease on job {job} failed (retrying every beat): {}", escape(why))
        }
        Event::LeaseExpiredWhileRunning { job } => format!(
            "perflab agent: warning: the lease on job {job} expired while it ran and another agent took it over; raise --lease above the longest pause of this machine"
        ),
        Event::Done { job } => format!("perflab agent: job {job} done"),
        Event::Failed { job, why } => format!("perflab agent: job {job} failed: {}", escape(why)),
        Event::Idle => "perflab agent: no job for this machine; exiting".into(),
    }
}
