//! The one way a [`Plan`] is built — by `compare`, `stat`, a suite's benchmark (and so
//! `run`, `bisect` and the fleet's agents) and `doctor`'s calibration: the command lines
//! split (or handed to a shell) and named, their programs resolved, the layered options
//! checked and turned into settings, the compared metrics chosen, and the plan made.
//! Callers say what was asked; the order of the checks, and so which bad input is
//! reported first, is the same for every command.

use super::{check, compared_metrics, settings, Compared, OutputSink, Plan, PlanError, SettingsLayer};
use crate::measure::MeasureOptions;
use perflab_model::{Design, Hooks, Settings};
use perflab_sys::command::{parse_commands, resolve_program, Shell, ShellReason};
use std::collections::BTreeMap;

/// What an experiment is asked to do, before anything is checked.
#[derive(Debug, Clone, Default)]
pub struct PlanRequest {
    /// The command lines, after any template was filled in.
    pub texts: Vec<String>,
    /// Names for the first commands (the rest are named after their text).
    pub names: Vec<String>,
    /// How the command lines are run: split into words, or through a shell.
    pub shell: Shell,
    /// The parameters each command was made from (`-L`/`-P`), one map per command.
    pub parameters: Vec<BTreeMap<String, String>>,
    /// Hooks per command (empty: none).
    pub hooks: Vec<Hooks>,
    /// Settings asked for, layered (command line over benchmark over suite over defaults).
    pub options: SettingsLayer,
    /// The schedule's seed (None: a random one).
    pub seed: Option<u64>,
    /// What to measure per run.
    pub measure: MeasureOptions,
    /// Metrics asked for by name (`--metric`); empty: the defaults.
    pub metrics: Vec<String>,
    /// The metrics to compare, when the command decides them itself (`stat`).
    pub fixed_metrics: Option<Vec<String>>,
    /// Look the programs up now (false when a build still has to make them: a suite
    /// resolves them once its builds are prepared).
    pub resolve_programs: bool,
    /// Show the commands' output instead of discarding it.
    pub show_output: bool,
    /// Leave what a run left running in its process group (`--keep-children`).
    pub keep_children: bool,
    /// Keep going past failing runs (`--ignore-failure`).
    pub ignore_failure: bool,
    /// Where each command's output goes (`--output`); empty: per `show_output`.
    pub output_sinks: Vec<OutputSink>,
    /// The commands as builds of a factorial design, when they are.
    pub design: Option<Design>,
    /// The commands are the layouts of versions (`--layouts N`): versions are compared.
    pub layouts: Option<perflab_model::Layouts>,
}

impl PlanRequest {
    /// `texts` run through `shell`, everything else as by default; programs are resolved.
    pub fn new(texts: Vec<String>, shell: Shell) -> PlanRequest {
        PlanRequest { texts, shell, resolve_programs: true, ..PlanRequest::default() }
    }

    /// Check everything and make the plan; also why its commands run through a shell
    /// nobody asked for (for the caller to say). `adjust` sees the settings last (a
    /// command's own flags: `--confidence`, `--no-env-padding`).
    pub fn build_with(
        self,
        adjust: impl FnOnce(Settings) -> Settings,
    ) -> Result<(Plan, Option<ShellReason>), PlanError> {
        let (mut commands, shell_reason) = parse_commands(&self.texts, &self.names, &self.shell)?;
        for (spec, parameters) in commands.iter_mut().zip(self.parameters) {
            spec.parameters = parameters;
        }
        if self.resolve_programs {
            for spec in &commands {
                resolve_program(&spec.argv[0])?;
            }
        }
        // One version in several layouts has no comparison to stop on: measured as one command.
        let compared_commands = match &self.layouts {
            Some(l) if l.versions.len() == 1 => 1,
            _ => commands.len(),
        };
        let options = self.options.for_commands(compared_commands);
        check(&options)?;
        let compared = match self.fixed_metrics {
            Some(metrics) => Compared::fixed(metrics),
            None => compared_metrics(&self.metrics, &self.measure)?,
        };
        let hooks = if self.hooks.iter().all(Hooks::is_empty) { Vec::new() } else { self.hooks };
        let settings = adjust(Settings { hooks, ..settings(&options, self.seed) });
        let plan = Plan::new(commands, settings, self.measure, compared)
            .showing_output(self.show_output)
            .keeping_children(self.keep_children)
            .ignoring_failure(self.ignore_failure)
            .sending_output(self.output_sinks)
            .with_design(self.design)
            .with_layouts(self.layouts);
        Ok((plan, shell_reason))
    }

    /// [`PlanRequest::build_with`] with the settings as the options make them.
    pub fn build(self) -> Result<(Plan, Option<ShellReason>), PlanError> {
        self.build_with(|settings| settings)
    }
}
