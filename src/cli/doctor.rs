//! `perflab doctor [CMD]`: its arguments, wired to the machine checks and the A/A
//! calibration of `perflab_engine::doctor`, the store, and `render::doctor`.

use super::args::{duration, percent, DbArgs};
use crate::error::Failure;
use crate::output::Outputs;
use crate::usage;
use clap::Args;
use perflab_engine::doctor::{self as doctor, calibration, Report};
use perflab_model::units::format_seconds;
use perflab_model::{Calibration, Machine, StopReason};
use perflab_render as render;
use perflab_render::export::Text;
use perflab_render::json::Json;
use perflab_render::terminal::escape;
use perflab_sys::command::command_text;

#[derive(Debug, Args, Clone)]
pub struct DoctorArgs {
    /// A command to calibrate: it runs against itself (A/A) in interleaved rounds, and
    /// its round-to-round noise is reported and stored.
    #[arg(num_args = 0.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// How long the calibration runs (e.g. 10s, 1m).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub calibrate_for: f64,
    /// The effect, in percent, whose rounds to report.
    #[arg(long, value_name = "PCT", default_value = "1", value_parser = percent)]
    pub effect: f64,
    #[command(flatten)]
    pub shell: super::args::ShellArgs,
    /// Do not store the calibration.
    #[arg(long)]
    pub no_save: bool,
    /// Write the findings (and the calibration) as JSON (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Write the calibration's runs as a noise trace (CSV, every run in execution order
    /// with its round, wall, CPU and run-queue wait, and the machine's load), the format
    /// of perflab's library of recorded noise (docs/statistics.md).
    #[arg(long, value_name = "FILE", requires = "command")]
    pub record_noise: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `perflab doctor`: the findings at once, then (given a command) the calibration,
/// stored, written to --json and shown.
pub fn main(args: DoctorArgs) -> Result<(), Failure> {
    if args.effect <= 0.0 {
        return Err(usage!("--effect must be above 0 %"));
    }
    let plan = match args.command.as_slice() {
        [] => None,
        words => {
            let shell = args.shell.shell()?;
            let through_shell = matches!(shell, perflab_sys::command::Shell::Always(_));
            let (plan, shell_reason) = calibration::plan(&command_text(words, through_shell), &shell)?;
            if let Some(reason) = shell_reason {
                eprintln!("perflab: note: {}", perflab_render::escape(&reason.note()));
            }
            Some(plan)
        }
    };
    if args.record_noise.as_deref() == Some("-") && args.json.as_deref() == Some("-") {
        return Err(usage!("--record-noise and --json cannot both write to stdout"));
    }
    let load_before = load_average();
    let mut outputs: Outputs<Report> = Outputs::new();
    if let Some(path) = &args.json {
        outputs.add("--json", path, Json)?;
    }
    let machine = perflab_sys::machine::detect();
    let mut report =
        Report { fingerprint: machine.fingerprint(), machine, findings: doctor::check_machine(), calibration: None };
    let findings = render::doctor::findings(&report);
    if outputs.stdout_taken() {
        eprint!("{findings}");
    } else {
        crate::output::stdout::write(&findings);
    }
    let Some(plan) = plan else { return Ok(outputs.write(&report, None)?) };
    let command_line = plan.commands[0].command_line.clone();
    let mut planned = |rounds: u32, round_s: f64| {
        eprintln!(
            "calibrating `{}`: {rounds} A/A rounds of {} (about {:.0} s)",
            escape(&command_line),
            format_seconds(round_s),
            rounds as f64 * round_s
        )
    };
    let hidden = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = crate::output::progress::ProgressDisplay::new(hidden);
    let experiment = calibration::run(&plan, args.calibrate_for, &mut planned, &mut progress)?;
    report.calibration = doctor::calibrate(&experiment, &command_line);
    let saved = match &report.calibration {
        Some(c) if !args.no_save && experiment.stop_reason == StopReason::FixedRounds => {
            save(&args.db, &report.machine, c)
        }
        _ => Ok(()),
    };
    if let Some(path) = &args.record_noise {
        let trace = perflab_engine::executor::replay::Trace::from_experiment("doctor", &experiment);
        let comments = vec![
            format!(
                "perflab noise trace: A/A runs of `{}` (perflab doctor --record-noise), in execution order",
                command_line.replace('\n', " ")
            ),
            format!("load: 1-min load average {load_before} before, {} after", load_average()),
        ];
        match trace {
            Some(trace) => {
                let csv = trace.to_csv(&comments);
                outputs.add("--record-noise", path, Text(move |_: &Report| csv.clone()))?;
            }
            None => eprintln!("perflab: --record-noise: the calibration ran too few rounds for a trace; none written"),
        }
    }
    let terminal = Text(|r: &Report| {
        r.calibration.as_ref().map_or(String::new(), |c| render::doctor::calibration(c, &experiment, args.effect))
    });
    outputs.write(&report, Some(&terminal))?;
    saved?;
    super::outcome(&experiment, "rounds")?;
    if report.calibration.is_none() {
        return Err(Failure::CommandFailed("the calibration finished too few rounds to measure the noise".into()));
    }
    Ok(())
}

/// The 1-minute load average, as /proc/loadavg says it ("unknown" where it cannot be read).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// Store the calibration with the machine fingerprint, and say where.
fn save(db: &DbArgs, machine: &Machine, calibration: &Calibration) -> Result<(), Failure> {
    let mut store = db.open()?;
    store.save_calibration(machine, calibration)?;
    eprintln!(
        "saved with the machine fingerprint in {}: `compare` warns when --threshold is finer than this machine resolves",
        store.location()
    );
    Ok(())
}
