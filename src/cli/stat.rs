//! `perflab stat`: one command run N times through the experiment engine, reported per
//! metric (`render::stat`).

use super::args::{ExportArgs, HookArgs, MeasureArgs, OutputArgs, RunnerArgs};
use crate::analysis::stat::{stat_metrics, StatReport};
use crate::error::Failure;
use crate::experiment;
use crate::measure::{counters, Mode};
use crate::model::Settings;
use crate::plan::command::{command_text, parse_commands, resolve_program};
use crate::plan::{self, Compared, Plan};
use crate::render::stat::StatTerminal;
use crate::render::table::{self, Stream};
use crate::render::{self, color};
use clap::Args;

#[derive(Debug, Args, Clone)]
pub struct StatArgs {
    /// The command to measure, with its arguments.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// Measured runs (default: 10 in wall mode, 1 in instruction mode).
    #[arg(short = 'r', long = "rounds", visible_aliases = ["repeat", "runs"], value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
    /// Run the command through `sh -c` (or `--shell=SHELL -c`).
    #[arg(long, value_name = "SHELL", num_args = 0..=1, require_equals = true, default_missing_value = "/bin/sh")]
    pub shell: Option<String>,
    #[command(flatten)]
    pub runner: RunnerArgs,
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub hooks: HookArgs,
    #[command(flatten)]
    pub export: ExportArgs,
}

/// `perflab stat`.
pub fn main(args: StatArgs) -> Result<(), Failure> {
    let output = args.output.options()?;
    let mut measure = args.measure.options(&output);
    let instructions = measure.mode == Mode::Instructions;
    if measure.events.is_empty() && !instructions {
        measure.events = counters::DEFAULT_STAT_EVENTS.map(String::from).to_vec();
    }
    let names = plan::stat_metrics(&measure)?;
    let text = command_text(&args.command, args.shell.is_some());
    let commands = parse_commands(&[text], &[], args.shell.as_deref())?;
    resolve_program(&commands[0].argv[0])?;
    let options = plan::SettingsLayer {
        rounds: args.runs,
        warmup: args.runner.warmup,
        timeout: args.runner.timeout,
        mode: Some(measure.mode),
        input: args.hooks.input.clone(),
        ..output
    }
    .for_commands(1);
    let hooks = args.hooks.per_command(1)?;
    let settings = Settings { hooks, ..plan::settings(&options, None) };
    let plan =
        Plan::new(commands, settings, measure, Compared::fixed(names.clone())).showing_output(args.runner.show_output);
    let style = args.export.style;
    style.apply_colors();
    let outputs = args.export.outputs(args.runner.json.as_deref(), |r: &StatReport| &r.experiment)?;
    let mut progress = render::progress::ProgressDisplay::new(style.hides_progress(args.runner.progress_hidden()));
    let experiment = experiment::run(&plan, &mut progress)?;
    let metrics = match experiment.commands.first() {
        Some(result) => stat_metrics(result, &names),
        None => Vec::new(),
    };
    let mut notes = Vec::new();
    if let Some(scope) = experiment.environment.get("counter_scope") {
        notes.push(format!("counters: {scope} mode (see --counter-scope)"));
    }
    if instructions {
        notes.push("instruction mode: counts under valgrind cachegrind with fixed caches (docs/counters.md)".into());
    }
    let report = StatReport { experiment, metrics };
    let stream = if outputs.stdout_taken() { Stream::Stderr } else { Stream::Stdout };
    let terminal = StatTerminal { style: args.export.layout(table::width(stream)), notes };
    let written = outputs.write(&report, style.shows_report().then_some(&terminal as _));
    for warning in &report.experiment.warnings {
        eprintln!("{}", color::yellow(&format!("warning: {}", render::terminal::escape(&warning.message))));
    }
    written?;
    super::outcome(&report.experiment, "runs")
}
