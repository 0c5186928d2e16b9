//! Running one command once: the [`Executor`] the engine asks for every run, and
//! `ProcessExecutor`, the real one (posix_spawn or a gated fork, wait4's rusage, the
//! probes of `measure`, the metrics a command prints, and the hooks around each run).
//! The engine decides what runs when; an executor only runs.

pub mod capture;
use perflab_sys::spawn::{launcher, process};
pub mod error;
pub mod replay;
pub mod simulated;

use crate::measure::build_probes;
use crate::measure::output::{self, Parser};
use crate::plan::{OutputSink, Plan};
use capture::OutputReader;
use error::{CleanupError, ExecutorError};
use launcher::Spawner;
use perflab_model::{Iterations, Machine, Run};
use perflab_sys::command::resolve_program;
use perflab_sys::interrupt;
use perflab_sys::perf::Probe;
use process::{Output, Prepared, SpawnError};
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

pub use error::RunError;

/// Runs the commands of one plan, one run at a time.
pub trait Executor {
    /// Run command `index` once with `pad_bytes` of environment padding (`None`: no
    /// padding variable). The engine fills in the run's round and position.
    fn run(&mut self, index: usize, pad_bytes: Option<usize>) -> Result<Run, RunError>;
    /// The last lines command `index` wrote to stderr in its latest run, to explain a failure.
    fn stderr_tail(&self, _index: usize) -> String {
        String::new()
    }
    /// Called once before the first round (`--setup`).
    fn setup(&mut self) -> Result<(), RunError> {
        Ok(())
    }
    /// Called once after the last round, whatever ended the experiment (`--cleanup`);
    /// the error says what failed.
    fn cleanup(&mut self) -> Result<(), CleanupError> {
        Ok(())
    }
    /// The metrics the baseline printed about itself in its first run that printed any,
    /// in its output's order (empty when it printed none yet).
    fn printed_metrics(&self) -> Vec<String> {
        Vec::new()
    }
    /// Time since the executor was created (the experiment's clock).
    fn elapsed(&self) -> Duration;
    /// The part of [`elapsed`](Executor::elapsed) that is time set aside, not spent: a
    /// suite's reserve for its benchmarks' endings under `--budget`, which moves the
    /// deadline closer. The pace of the rounds leaves it out: counted as time the rounds
    /// took, a reserve of 50 s set up in the first 5 s made a round look ten times as
    /// dear, and every benchmark planned 57 rounds of a 4-minute budget and stopped
    /// there after 21 s.
    fn set_aside(&self) -> Duration {
        Duration::ZERO
    }
    /// True once the user asked to stop.
    fn interrupted(&self) -> bool;
    /// The machine the runs happen on.
    fn machine(&self) -> Machine;
    /// Facts about the environment that can shift the results (tool versions, ...).
    fn environment_facts(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

/// One command's probes and hooks (the command itself is prepared in the spawner).
struct Subject {
    name: String,
    probes: Vec<Box<dyn Probe>>,
    /// `--prepare`, `--conclude` and `--setup`, ready to run like the command.
    prepare: Option<Hook>,
    conclude: Option<Hook>,
    setup: Option<Hook>,
    cleanup: Option<String>,
}

/// A shell command run around the measured one.
struct Hook {
    text: String,
    prepared: Prepared,
}

impl Hook {
    fn new(text: &str, output: Output) -> Result<Hook, ExecutorError> {
        let argv = ["/bin/sh".to_string(), "-c".to_string(), text.to_string()];
        let prepared = Prepared::new(Path::new("/bin/sh"), &argv, output)
            .map_err(|source| ExecutorError::Hook { hook: text.to_string(), source })?;
        Ok(Hook { text: text.to_string(), prepared })
    }

    /// Run it to the end (in its own process group, killed by an interrupt or the
    /// timeout); an error says how it failed.
    fn run(&self, what: &str, env: &process::Environment, timeout: Option<Duration>) -> Result<(), RunError> {
        let outcome = process::start(&self.prepared, env, None)
            .and_then(|child| child.wait(timeout, interrupt::watcher()))
            .map_err(|e| match e {
                SpawnError::Interrupted => RunError::Interrupted,
                other => RunError::Incomplete { run: None, why: format!("{what} `{}`: {other}", self.text) },
            })?;
        if outcome.exit.success() {
            return Ok(());
        }
        let mut why = format!("{what} `{}` {}", self.text, outcome.exit.describe());
        let stderr = self.prepared.stderr_tail(5);
        if !stderr.is_empty() {
            why.push_str(&format!("; its last stderr lines:\n{stderr}"));
        }
        Err(RunError::Incomplete { run: None, why })
    }
}

/// The real executor: every run is a process on this machine.
pub(crate) struct ProcessExecutor {
    /// Each command's probes and hooks, by command index.
    subjects: Vec<Subject>,
    spawner: Spawner,
    /// The hooks' environment (padded like the runs').
    env: process::Environment,
    timeout: Option<Duration>,
    started: Instant,
    facts: BTreeMap<String, String>,
    parsers: Vec<Parser>,
    iterations: Iterations,
    /// Let the commands' output through (`--show-output`).
    show_output: bool,
    /// Reads the output of runs whose metrics are printed, while they run.
    reader: Option<OutputReader>,
    /// Each command's stdout and stderr pipes (read ends), when the reader reads them.
    streams: Vec<Option<(OwnedFd, OwnedFd)>>,
    /// Each command's last stderr lines, from the reader.
    streamed_tails: Vec<String>,
    /// What the baseline printed first (see [`Executor::printed_metrics`]).
    baseline_printed: Vec<String>,
}

impl ProcessExecutor {
    /// Prepare every command of `plan` (programs resolved, probes built, hooks and
    /// input opened); fails before anything runs.
    pub fn new(plan: &Plan) -> Result<ProcessExecutor, ExecutorError> {
        let parsers = plan.measure.output.clone();
        // Output is captured only when metrics are read from it: the other runs keep the
        // cheaper /dev/null, or go where `--output` sends them.
        let output_of = |i: usize| -> Output {
            if !parsers.is_empty() {
                return Output::Capture;
            }
            match plan.output_sinks.get(i) {
                Some(OutputSink::Null) => Output::Discard,
                Some(OutputSink::Pipe) => Output::Pipe,
                Some(OutputSink::Inherit) => Output::Inherit,
                Some(OutputSink::File(path)) => Output::File(path.clone()),
                None if plan.show_output => Output::Inherit,
                None => Output::Discard,
            }
        };
        let hook_output = if plan.show_output { Output::Inherit } else { Output::Discard };
        let input = plan.settings.input.as_deref().map(Path::new);
        let mut commands = Vec::new();
        let mut subjects = Vec::new();
        for (i, spec) in plan.commands.iter().enumerate() {
            let probes = build_probes(&plan.measure, &spec.argv)?;
            let mut argv = spec.argv.clone();
            for probe in &probes {
                argv = probe.wrap(argv).map_err(|cause| ExecutorError::Probe { command: spec.name.clone(), cause })?;
            }
            let program = resolve_program(&argv[0])?;
            // Checked here for a one-line usage error; the spawner prepares its own copy.
            let output = output_of(i);
            Prepared::with_input(&program, &argv, &output, input)
                .map_err(|source| ExecutorError::Command { command: spec.name.clone(), source })?;
            commands.push((program, argv, output));
            let hooks = plan.settings.hooks.get(i).cloned().unwrap_or_default();
            let hook = |text: &Option<String>| text.as_deref().map(|t| Hook::new(t, hook_output.clone())).transpose();
            subjects.push(Subject {
                name: spec.name.clone(),
                probes,
                prepare: hook(&hooks.prepare)?,
                conclude: hook(&hooks.conclude)?,
                setup: hook(&hooks.setup)?,
                cleanup: hooks.cleanup,
            });
        }
        let timeout = plan.settings.timeout_s.map(Duration::from_secs_f64);
        let spawner = Spawner::new(&commands, input, timeout, plan.keep_children).map_err(ExecutorError::from)?;
        let mut facts = crate::measure::environment_facts(&plan.measure, &plan.commands);
        facts.extend(spawner.facts());
        let streams = (0..commands.len())
            .map(|i| spawner.streams(i))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(ExecutorError::Streams)?;
        // Every command's output is captured exactly when metrics are read from it.
        let reader = if !parsers.is_empty() {
            Some(OutputReader::start(parsers.clone(), plan.show_output).map_err(ExecutorError::OutputReader)?)
        } else {
            None
        };
        Ok(ProcessExecutor {
            subjects,
            spawner,
            env: process::Environment::inherited(),
            timeout,
            started: Instant::now(),
            facts,
            parsers,
            iterations: plan.settings.iterations,
            show_output: plan.show_output,
            reader,
            streamed_tails: vec![String::new(); streams.len()],
            streams,
            baseline_printed: Vec::new(),
        })
    }

    /// Record the metrics the run of `index` printed (as the reader parsed them) in `run`.
    fn record_output(
        &mut self,
        index: usize,
        printed: Result<Vec<output::Samples>, output::ParseError>,
        run: &mut Run,
    ) -> Result<(), output::ParseError> {
        let found = output::record_metrics(&self.parsers, printed?, self.iterations, run);
        if index == 0 && self.baseline_printed.is_empty() {
            self.baseline_printed = found;
        }
        Ok(())
    }
}

impl Executor for ProcessExecutor {
    fn run(&mut self, index: usize, pad_bytes: Option<usize>) -> Result<Run, RunError> {
        self.env.pad(pad_bytes);
        if let Some(hook) = &self.subjects[index].prepare {
            hook.run("--prepare", &self.env, self.timeout)?;
        }
        let streaming = self.reader.as_ref().zip(self.streams[index].as_ref());
        if let Some((reader, (stdout, stderr))) = streaming {
            reader.begin(stdout, stderr);
        }
        let probes = &mut self.subjects[index].probes;
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
        // Whatever became of the run, the reader reads its output to the end.
        let printed = streaming.map(|(reader, _)| reader.end());
        if let Some(printed) = &printed {
            self.streamed_tails[index] = printed.stderr_lines(5);
        }
        let mut run = result.map_err(|e| match e {
            SpawnError::Interrupted => RunError::Interrupted,
            other => RunError::Failed(other.to_string()),
        })?;
        for probe in &mut self.subjects[index].probes {
            probe.collect(&mut run).map_err(|e| RunError::Failed(SpawnError::Probe(e).to_string()))?;
        }
        let incomplete = |run: Run, why: String| RunError::Incomplete { run: Some(Box::new(run)), why };
        if let Some(printed) = printed {
            if let Err(why) = self.record_output(index, printed.samples, &mut run) {
                return Err(incomplete(run, why.to_string()));
            }
        }
        if let Some(hook) = &self.subjects[index].conclude {
            if let Err(err) = hook.run("--conclude", &self.env, self.timeout) {
                return Err(match err {
                    RunError::Incomplete { why, .. } => incomplete(run, why),
                    other => other,
                });
            }
        }
        Ok(run)
    }

    fn setup(&mut self) -> Result<(), RunError> {
        for subject in &self.subjects {
            if let Some(hook) = &subject.setup {
                hook.run(&format!("--setup of `{}`", subject.name), &self.env, self.timeout)?;
            }
        }
        Ok(())
    }

    /// Runs every cleanup even after an interrupt — when the harness's spawner kills
    /// whatever it starts — so it uses a plain blocking child in perflab's own process
    /// group (a second Ctrl-C reaches it). Its output is discarded unless shown, like
    /// the other hooks' (stdout may carry the JSON report).
    fn cleanup(&mut self) -> Result<(), CleanupError> {
        let mut failures = Vec::new();
        for subject in &self.subjects {
            let Some(text) = &subject.cleanup else { continue };
            if let Err(e) = perflab_sys::command::run_shell(text, None, self.show_output) {
                failures.push((subject.name.clone(), e));
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(CleanupError(failures))
        }
    }

    fn printed_metrics(&self) -> Vec<String> {
        self.baseline_printed.clone()
    }

    fn stderr_tail(&self, index: usize) -> String {
        if self.reader.is_some() {
            return self.streamed_tails[index].clone();
        }
        self.spawner.stderr_tail(index, 5)
    }

    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn interrupted(&self) -> bool {
        interrupt::watcher().requested()
    }

    fn machine(&self) -> Machine {
        perflab_sys::machine::detect()
    }

    fn environment_facts(&self) -> BTreeMap<String, String> {
        self.facts.clone()
    }
}
