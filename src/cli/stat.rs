//! `perflab stat`: one command run N times through the experiment engine, reported per
//! metric (`render::stat`).

use super::args::{ExportArgs, HookArgs, MeasureArgs, OutputArgs, RunnerArgs};
use crate::error::Failure;
use clap::Args;
use perflab_engine::analysis::stat::{stat_metrics, StatReport};
use perflab_engine::experiment;
use perflab_engine::measure::Mode;
use perflab_engine::plan::{self as plan, PlanRequest};
use perflab_render::stat::StatTerminal;
use perflab_render::table::{self, Stream};
use perflab_render::{self as render, color};
use perflab_sys::command::command_text;
use perflab_sys::perf::counters;

#[derive(Debug, Args, Clone)]
pub struct StatArgs {
    /// The command to measure, with its arguments (with -a or -p: the counting period,
    /// e.g. `sleep 5`; without one, until Ctrl-C or the processes end).
    #[arg(required_unless_present_any = ["all_cpus", "pid"], num_args = 1.., trailing_var_arg = true,
          allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// Count every task on every CPU (perf stat -a; needs root or perf_event_paranoid ≤ 0).
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "pid")]
    pub all_cpus: bool,
    /// Count running processes (comma-separated PIDs; all their threads).
    #[arg(short = 'p', long = "pid", value_delimiter = ',', value_name = "PID")]
    pub pid: Vec<i32>,
    /// With -p: one row per thread instead of their sum.
    #[arg(long, requires = "pid")]
    pub per_thread: bool,
    /// Print the counts of every interval of MS milliseconds as they happen (perf stat -I).
    #[arg(short = 'I', long = "interval-print", value_name = "MS", value_parser = clap::value_parser!(u64).range(10..))]
    pub interval: Option<u64>,
    /// Measured runs (default: 10 in wall mode, 1 in instruction mode).
    #[arg(short = 'r', long = "rounds", visible_aliases = ["repeat", "runs"], value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
    #[command(flatten)]
    pub shell: super::args::ShellArgs,
    /// Also count perf stat -d's detailed events: L1-dcache-loads, L1-dcache-load-misses,
    /// LLC-loads, LLC-load-misses (with their miss rates).
    #[arg(short = 'd', long = "detailed")]
    pub detailed: bool,
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
    if measure.events.is_empty() && measure.count_in != counters::CountIn::Command {
        // Else the default counters would be counted in those processes, unasked.
        return Err(crate::usage!(
            "--count-in {} scopes the -e counters, and none are given: add -e EVENTS",
            measure.count_in.spelling()
        ));
    }
    if measure.events.is_empty() && !instructions {
        measure.events = counters::DEFAULT_STAT_EVENTS.map(String::from).to_vec();
    }
    if args.detailed {
        if instructions {
            return Err(crate::usage!("-d counts perf events; instruction mode already reports cache misses"));
        }
        measure.events.extend(perflab_sys::perf::event::DETAILED.map(String::from));
    }
    if args.all_cpus || !args.pid.is_empty() || args.interval.is_some() {
        return live(&args, &measure);
    }
    let names = plan::stat_metrics(&measure)?;
    let text = command_text(&args.command, args.shell.shell.is_some());
    let request = PlanRequest {
        hooks: args.hooks.per_command(1)?,
        options: plan::SettingsLayer {
            rounds: args.runs,
            warmup: args.runner.warmup,
            timeout: args.runner.timeout,
            mode: Some(measure.mode),
            input: args.hooks.input.clone(),
            ..output
        },
        measure,
        fixed_metrics: Some(names.clone()),
        show_output: args.runner.show_output,
        keep_children: args.runner.keep_children,
        ..PlanRequest::new(vec![text], args.shell.shell()?)
    };
    let (plan, shell_reason) = request.build()?;
    if let Some(reason) = shell_reason {
        eprintln!("perflab: note: {}", perflab_render::escape(&reason.note()));
    }
    let style = args.export.style;
    style.apply_colors();
    let outputs = args.export.outputs(args.runner.json.as_deref(), |r: &StatReport| &r.experiment)?;
    let mut progress =
        crate::output::progress::ProgressDisplay::new(style.hides_progress(args.runner.progress_hidden()));
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
        eprintln!("{}", color::yellow(&format!("warning: {}", render::escape_line(&warning.message))));
    }
    written?;
    super::outcome(&report.experiment, "runs")
}

/// `stat -a`, `-p`, `-I`: one counting period, not repeated runs.
fn live(args: &StatArgs, measure: &perflab_engine::measure::MeasureOptions) -> Result<(), Failure> {
    use perflab_engine::measure::live::{self, LiveOptions, Whom};
    if measure.mode == Mode::Instructions {
        return Err(crate::usage!(
            "-a, -p and -I count with perf events; they cannot be combined with --mode instructions"
        ));
    }
    if measure.count_in != counters::CountIn::Command {
        return Err(crate::usage!(
            "--count-in scopes the counters of repeated runs; -a and -p already say whom to count"
        ));
    }
    if args.runs.is_some() {
        return Err(crate::usage!(
            "-a, -p and -I count one period (the command's run, or until Ctrl-C); -r does not apply"
        ));
    }
    if args.runner.json.is_some() {
        return Err(crate::usage!("--json is not written for -a, -p or -I yet (their counts are printed)"));
    }
    let whom = if args.all_cpus {
        Whom::AllCpus
    } else if !args.pid.is_empty() {
        Whom::Pids(args.pid.clone())
    } else {
        Whom::Command
    };
    let command = match args.command.as_slice() {
        [] => None,
        words => match args.shell.shell()? {
            perflab_sys::command::Shell::Always(mut shell) => {
                shell.extend(["-c".to_string(), words.join(" ")]);
                Some(shell)
            }
            _ if words.len() == 1 => {
                Some(shell_words::split(&words[0]).map_err(|e| crate::usage!("{}: {e}", words[0]))?)
            }
            _ => Some(words.to_vec()),
        },
    };
    let events = counters::parse_events(&measure.events)?;
    let counting = counters::Counting::new(events, measure.counter_scope, counters::system_opener());
    let options = LiveOptions {
        whom: whom.clone(),
        command: command.clone(),
        per_thread: args.per_thread,
        interval: args.interval.map(std::time::Duration::from_millis),
    };
    let report = live::count(&counting, &options, &mut |interval| {
        eprint!("{}", render::stat::render_interval(interval));
    })?;
    let title = match (&whom, &command) {
        (Whom::AllCpus, _) => "all CPUs (system-wide)".to_string(),
        (Whom::Pids(pids), _) => format!(
            "process{} {}",
            if pids.len() == 1 { "" } else { "es" },
            pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
        ),
        (Whom::Command, Some(argv)) => format!("'{}'", argv.join(" ")),
        (Whom::Command, None) => String::new(),
    };
    let mut notes = vec![format!("counters: {} mode (see --counter-scope)", measure.counter_scope.resolve().as_str())];
    if let Some(fake) = counters::fake_pmu_slots() {
        notes.push(color::yellow(&format!(
            "warning: {}: hardware counts are made up ({fake} counters)",
            counters::FAKE_PMU_ENV
        )));
    }
    print!("{}", render::stat::render_live(&title, &report, &notes));
    // The exit status is the command's, never that of a process counted with -p.
    let failed = command.as_ref().map(|argv| argv.join(" ")).unwrap_or(title);
    match report.exit {
        Some(exit) if !exit.success() => Err(Failure::CommandFailed(format!("`{failed}` {}", exit.describe()))),
        _ if report.interrupted => Err(Failure::Interrupted("interrupted; the counts so far are printed".into())),
        _ => Ok(()),
    }
}
