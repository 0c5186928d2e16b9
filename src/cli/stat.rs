//! `perflab stat`: one command run N times through the experiment engine, reported per
//! metric (`render::stat`).

use super::args::{HookArgs, MeasureArgs, OutputArgs, RunnerArgs};
use crate::error::Failure;
use crate::experiment;
use crate::measure::{counters, Mode};
use crate::model::Settings;
use crate::plan::{self, Plan};
use crate::render::stat::{render_terminal, stat_metrics, StatReport};
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
    #[command(flatten)]
    pub shell: super::args::ShellArgs,
    #[command(flatten)]
    pub runner: RunnerArgs,
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub hooks: HookArgs,
}

pub const DEFAULT_RUNS: u32 = 10;

/// `perflab stat`.
pub fn main(args: StatArgs) -> Result<(), Failure> {
    let output = args.output.options()?;
    let mut measure = args.measure.options(&output);
    let instructions = measure.mode == Mode::Instructions;
    if measure.events.is_empty() && !instructions {
        measure.events = counters::DEFAULT_STAT_EVENTS.map(String::from).to_vec();
    }
    let names = plan::stat_metrics(&measure)?;
    // One argument is a command line to split like a shell; several are the argv itself
    // (or, with --shell, the words of the shell command).
    let text = match args.command.as_slice() {
        [single] => single.clone(),
        many if args.shell.shell.is_some() => many.join(" "),
        many => shell_words::join(many),
    };
    let (commands, shell_reason) = crate::plan::command::parse_commands(&[text], &[], &args.shell.shell()?)?;
    if let Some(reason) = shell_reason {
        eprintln!("perflab: note: {}", crate::render::terminal::escape(&reason.note()));
    }
    crate::plan::command::resolve_program(&commands[0].argv[0])?;
    let runs = args.runs.unwrap_or(if instructions { 1 } else { DEFAULT_RUNS });
    let options = plan::SettingsLayer {
        rounds: Some(runs),
        warmup: args.runner.warmup,
        timeout: args.runner.timeout,
        mode: Some(measure.mode),
        input: args.hooks.input.clone(),
        ..output
    };
    let hooks = args.hooks.per_command(1)?;
    let plan = Plan {
        settings: Settings { hooks, ..plan::settings(&options, None) },
        primary_metric: names[0].clone(),
        auto_primary: false,
        metrics: names.clone(),
        commands,
        show_output: args.runner.show_output,
        ignore_failure: false,
        measure,
    };
    let stdout_taken = args.runner.json.as_deref() == Some("-");
    let mut progress = render::progress::ProgressDisplay::new(&plan.settings, args.runner.progress_hidden());
    let experiment = experiment::run(&plan, &mut progress);
    progress.finish();
    let experiment = experiment?;
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
    let mut text = render_terminal(&plan.commands[0].command_line, experiment.rounds as usize, &metrics, &notes);
    let profile = render::terminal::iteration_profile(&experiment);
    if !profile.is_empty() {
        text = format!("{text}\n{profile}");
    }
    if stdout_taken {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    for warning in &experiment.warnings {
        eprintln!("{}", color::yellow(&format!("warning: {warning}")));
    }
    if let Some(path) = &args.runner.json {
        render::json::write(path, &StatReport { experiment: &experiment, metrics })?;
    }
    super::outcome(&experiment, "runs")
}
