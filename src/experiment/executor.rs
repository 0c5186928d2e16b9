//! Running one command once: the [`Executor`] the engine asks for every run, and
//! [`ProcessExecutor`], the real one (posix_spawn or a gated fork, wait4's rusage, and
//! the probes of `measure`). The engine decides what runs when; an executor only runs.

use super::plan::Plan;
use crate::command::resolve_program;
use crate::error::Failure;
use crate::interrupt;
use crate::measure::{build_probes, Probe};
use crate::model::{Machine, Run};
use crate::spawn::{self, Output, Prepared, SpawnError};
use crate::usage;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Why a run produced no measurement.
#[derive(Debug)]
pub enum RunError {
    /// The user asked to stop; the running command was killed.
    Interrupted,
    /// The command could not be started or measured.
    Failed(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Interrupted => write!(f, "interrupted"),
            RunError::Failed(why) => write!(f, "{why}"),
        }
    }
}

/// Runs the commands of one plan, one run at a time.
pub trait Executor {
    /// Run command `index` once with `pad_bytes` of environment padding (`None`: no
    /// padding variable). The engine fills in the run's round and position.
    fn run(&mut self, index: usize, pad_bytes: Option<usize>) -> Result<Run, RunError>;
    /// The last lines command `index` wrote to stderr in its latest run, to explain a failure.
    fn stderr_tail(&self, _index: usize) -> String {
        String::new()
    }
    /// Time since the executor was created (the experiment's clock).
    fn elapsed(&self) -> Duration;
    /// True once the user asked to stop.
    fn interrupted(&self) -> bool;
    /// The machine the runs happen on.
    fn machine(&self) -> Machine;
    /// Facts about the environment that can shift the results (tool versions, ...).
    fn environment_facts(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

/// One command, ready to run repeatedly.
struct Subject {
    prepared: Prepared,
    probes: Vec<Box<dyn Probe>>,
}

/// The real executor: every run is a process on this machine.
pub struct ProcessExecutor {
    subjects: Vec<Subject>,
    env: spawn::Environment,
    timeout: Option<Duration>,
    started: Instant,
    facts: BTreeMap<String, String>,
}

impl ProcessExecutor {
    /// Prepare every command of `plan` (programs resolved, probes built); fails before
    /// anything runs.
    pub fn new(plan: &Plan) -> Result<ProcessExecutor, Failure> {
        let subjects = plan
            .commands
            .iter()
            .map(|spec| {
                let probes = build_probes(&plan.measure)?;
                let mut argv = spec.argv.clone();
                for probe in &probes {
                    argv = probe.wrap(argv).map_err(|e| usage!("{}: {e:#}", spec.name))?;
                }
                let program = resolve_program(&argv[0])?;
                let prepared =
                    Prepared::new(&program, &argv, if plan.show_output { Output::Inherit } else { Output::Discard })
                        .map_err(|e| usage!("{}: {e}", spec.name))?;
                Ok(Subject { prepared, probes })
            })
            .collect::<Result<Vec<_>, Failure>>()?;
        Ok(ProcessExecutor {
            subjects,
            env: spawn::Environment::inherited(),
            timeout: plan.settings.timeout_s.map(Duration::from_secs_f64),
            started: Instant::now(),
            facts: crate::measure::environment_facts(&plan.measure, &plan.commands),
        })
    }
}

impl Executor for ProcessExecutor {
    fn run(&mut self, index: usize, pad_bytes: Option<usize>) -> Result<Run, RunError> {
        self.env.pad(pad_bytes);
        let subject = &mut self.subjects[index];
        let watcher = interrupt::watcher();
        let started = if subject.probes.iter().any(|p| p.needs_gate()) {
            let probes = &mut subject.probes;
            let mut gate = |pid: libc::pid_t| -> anyhow::Result<()> {
                for probe in probes.iter_mut().filter(|p| p.needs_gate()) {
                    probe.attach(pid)?;
                }
                Ok(())
            };
            spawn::start(&subject.prepared, &self.env, Some(&mut gate))
        } else {
            spawn::start(&subject.prepared, &self.env, None)
        };
        let outcome = started.and_then(|child| child.wait(self.timeout, watcher)).map_err(|e| match e {
            SpawnError::Interrupted => RunError::Interrupted,
            other => RunError::Failed(other.to_string()),
        })?;
        let mut run = outcome.run();
        for probe in &mut subject.probes {
            probe.collect(&mut run).map_err(|e| RunError::Failed(SpawnError::Probe(e).to_string()))?;
        }
        Ok(run)
    }

    fn stderr_tail(&self, index: usize) -> String {
        self.subjects[index].prepared.stderr_tail(5)
    }

    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn interrupted(&self) -> bool {
        interrupt::watcher().requested()
    }

    fn machine(&self) -> Machine {
        Machine::detect()
    }

    fn environment_facts(&self) -> BTreeMap<String, String> {
        self.facts.clone()
    }
}
