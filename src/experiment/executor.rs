//! Running one command once: the [`Executor`] the engine asks for every run, and
//! [`ProcessExecutor`], the real one (posix_spawn or a gated fork, wait4's rusage, and
//! the probes of `measure`). The engine decides what runs when; an executor only runs.

use super::plan::Plan;
use crate::command::resolve_program;
use crate::error::Failure;
use crate::interrupt;
use crate::measure::{build_probes, Probe};
use crate::model::{Machine, Run};
use crate::spawn::{Output, SpawnError};
use crate::spawner::Spawner;
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

/// The real executor: every run is a process on this machine.
pub struct ProcessExecutor {
    /// Each command's probes, by command index.
    probes: Vec<Vec<Box<dyn Probe>>>,
    spawner: Spawner,
    started: Instant,
    facts: BTreeMap<String, String>,
}

impl ProcessExecutor {
    /// Prepare every command of `plan` (programs resolved, probes built); fails before
    /// anything runs.
    pub fn new(plan: &Plan) -> Result<ProcessExecutor, Failure> {
        let mut probes = Vec::new();
        let mut commands = Vec::new();
        for spec in &plan.commands {
            let command_probes = build_probes(&plan.measure)?;
            let mut argv = spec.argv.clone();
            for probe in &command_probes {
                argv = probe.wrap(argv).map_err(|e| usage!("{}: {e:#}", spec.name))?;
            }
            let program = resolve_program(&argv[0])?;
            crate::spawn::Prepared::new(&program, &argv, Output::Discard).map_err(|e| usage!("{}: {e}", spec.name))?;
            commands.push((program, argv));
            probes.push(command_probes);
        }
        let output = if plan.show_output { Output::Inherit } else { Output::Discard };
        let timeout = plan.settings.timeout_s.map(Duration::from_secs_f64);
        let spawner = Spawner::new(&commands, output, timeout).map_err(|e| Failure::Other(anyhow::anyhow!(e)))?;
        let mut facts = crate::measure::environment_facts(&plan.measure, &plan.commands);
        facts.extend(spawner.facts());
        Ok(ProcessExecutor { probes, spawner, started: Instant::now(), facts })
    }
}

impl Executor for ProcessExecutor {
    fn run(&mut self, index: usize, pad_bytes: Option<usize>) -> Result<Run, RunError> {
        let probes = &mut self.probes[index];
        let result = if probes.iter().any(|p| p.needs_gate()) {
            let mut gate = |pid: libc::pid_t| -> anyhow::Result<()> {
                for probe in probes.iter_mut().filter(|p| p.needs_gate()) {
                    probe.attach(pid)?;
                }
                Ok(())
            };
            self.spawner.run(index, pad_bytes, Some(&mut gate))
        } else {
            self.spawner.run(index, pad_bytes, None)
        };
        let mut run = result.map_err(|e| match e {
            SpawnError::Interrupted => RunError::Interrupted,
            other => RunError::Failed(other.to_string()),
        })?;
        for probe in &mut self.probes[index] {
            probe.collect(&mut run).map_err(|e| RunError::Failed(SpawnError::Probe(e).to_string()))?;
        }
        Ok(run)
    }

    fn stderr_tail(&self, index: usize) -> String {
        self.spawner.stderr_tail(index, 5)
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
