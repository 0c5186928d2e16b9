//! `perflab doctor [CMD]`: what on this machine disturbs measurements, with the fixes;
//! given a command, an A/A calibration of its noise, stored with the machine fingerprint.

use super::args::{duration, percent, DbArgs};
use crate::doctor::{self, Finding, Status};
use crate::error::Failure;
use crate::experiment;
use crate::measure::MeasureOptions;
use crate::model::{Calibration, Experiment, Machine, Settings};
use crate::plan::{self, Plan};
use crate::render::color::{bold, dim, green, yellow};
use crate::render::terminal::escape;
use crate::units::format_seconds;
use crate::usage;
use clap::Args;
use serde::Serialize;

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
    #[command(flatten)]
    pub db: DbArgs,
}

/// What `doctor --json` writes.
#[derive(Debug, Serialize)]
struct Report<'a> {
    machine: &'a Machine,
    fingerprint: String,
    findings: &'a [Finding],
    #[serde(skip_serializing_if = "Option::is_none")]
    calibration: Option<&'a Calibration>,
}

/// Fewest measured rounds a calibration runs, whatever its duration: enough for a
/// robust σ of the paired ratio.
const MIN_CALIBRATION_ROUNDS: u32 = 12;

/// `perflab doctor`.
pub fn main(args: DoctorArgs) -> Result<(), Failure> {
    if args.effect <= 0.0 {
        return Err(usage!("--effect must be above 0 %"));
    }
    let plan = match args.command.as_slice() {
        [] => None,
        command => Some(calibration_plan(command, &args.shell.shell()?)?),
    };
    let machine = Machine::detect();
    let fingerprint = crate::store::fingerprint(&machine);
    let findings = doctor::check_machine();
    let to_stdout = args.json.as_deref() == Some("-");
    let mut out = String::new();
    out.push_str(&format!(
        "{} {}\n",
        bold("perflab doctor —"),
        escape(&crate::store::describe_machine(&fingerprint, &machine))
    ));
    out.push_str(&render_findings(&findings));
    emit(&out, to_stdout);

    let Some(plan) = plan else {
        return write_json(&args, &machine, &fingerprint, &findings, None);
    };
    let command_line = plan.commands[0].command_line.clone();
    let experiment = run_calibration(plan, args.calibrate_for)?;
    let calibration = doctor::calibrate(&experiment, &command_line);
    if let Some(c) = &calibration {
        emit(&render_calibration(c, &experiment, args.effect), to_stdout);
        if !args.no_save && experiment.stop_reason == crate::model::StopReason::FixedRounds {
            let mut store = args.db.open()?;
            store.save_calibration(&machine, c)?;
            eprintln!(
                "saved with the machine fingerprint in {}: `compare` warns when --threshold is finer than this machine resolves",
                store.location()
            );
        }
    }
    write_json(&args, &machine, &fingerprint, &findings, calibration.as_ref())?;
    super::outcome(&experiment, "rounds")?;
    if calibration.is_none() {
        return Err(Failure::CommandFailed("the calibration finished too few rounds to measure the noise".into()));
    }
    Ok(())
}

fn emit(text: &str, stdout_taken: bool) {
    if stdout_taken {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
}

fn write_json(
    args: &DoctorArgs,
    machine: &Machine,
    fingerprint: &str,
    findings: &[Finding],
    calibration: Option<&Calibration>,
) -> Result<(), Failure> {
    let Some(path) = &args.json else { return Ok(()) };
    let report = Report { machine, fingerprint: fingerprint.to_string(), findings, calibration };
    crate::render::json::write(path, &report)
}

/// An A/A plan for the command (checked before anything runs).
fn calibration_plan(command: &[String], shell: &crate::plan::command::Shell) -> Result<Plan, Failure> {
    let text = match command {
        [single] => single.clone(),
        many if matches!(shell, crate::plan::command::Shell::Always(_)) => many.join(" "),
        many => shell_words::join(many),
    };
    let (commands, shell_reason) = crate::plan::command::parse_commands(&[text.clone(), text], &[], shell)?;
    if let Some(reason) = shell_reason {
        eprintln!("perflab: note: {}", crate::render::terminal::escape(&reason.note()));
    }
    crate::plan::command::resolve_program(&commands[0].argv[0])?;
    let measure = MeasureOptions::default();
    let compared = plan::compared_metrics(&[], &measure)?;
    Ok(Plan {
        commands,
        settings: Settings::default(),
        metrics: compared.metrics,
        primary_metric: compared.primary,
        auto_primary: compared.auto_primary,
        show_output: false,
        ignore_failure: false,
        measure,
    })
}

/// One round to time the command, then as many interleaved A/A rounds as fit in
/// `seconds` (at least [`MIN_CALIBRATION_ROUNDS`]), all looked at once.
fn run_calibration(plan: Plan, seconds: f64) -> Result<Experiment, Failure> {
    let seed = rand::random();
    let probe = Plan {
        settings: Settings { seed, fixed_rounds: Some(1), max_rounds: 1, ..plan.settings.clone() },
        ..plan.clone()
    };
    let timed = experiment::run(&probe, &mut experiment::Quiet)?;
    super::outcome(&timed, "rounds")?;
    let round_s = timed.duration_s / (timed.rounds + timed.settings.warmup_rounds).max(1) as f64;
    let rounds = ((seconds / round_s.max(1e-6)) as u32).max(MIN_CALIBRATION_ROUNDS);
    eprintln!(
        "calibrating `{}`: {rounds} A/A rounds of {} (about {:.0} s)",
        escape(&plan.commands[0].command_line),
        format_seconds(round_s),
        rounds as f64 * round_s
    );
    let settings = Settings { seed, fixed_rounds: Some(rounds), max_rounds: rounds, ..plan.settings.clone() };
    let hidden = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = crate::render::progress::ProgressDisplay::new(&settings, hidden);
    let result = experiment::run(&Plan { settings, ..plan }, &mut progress);
    progress.finish();
    result
}

fn render_findings(findings: &[Finding]) -> String {
    let width = findings.iter().map(|f| f.check.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for f in findings {
        let status = match f.status {
            Status::Ok => green("ok  "),
            Status::Info => dim("info"),
            Status::Warn => yellow("warn"),
        };
        out.push_str(&format!(" {status}  {:width$}  {}\n", f.check, f.finding));
        if let Some(fix) = &f.fix {
            out.push_str(&format!("       {:width$}  {}\n", "", dim(&format!("fix: {fix}"))));
        }
    }
    out
}

fn render_calibration(c: &Calibration, e: &Experiment, effect: f64) -> String {
    let pct = |x: f64| format!("{:.2} %", x * 100.0);
    let mut out = format!(
        "\n{} `{}`: {} A/A rounds in {:.1} s ({} per round), on {}\n",
        bold("calibration of"),
        escape(&c.command_line),
        c.rounds,
        e.duration_s,
        format_seconds(c.round_s),
        c.metric
    );
    out.push_str(&format!("  round-to-round noise: {} (robust σ of the paired ratio)", pct(c.paired_sigma)));
    if let Some(busy) = c.busy_share {
        out.push_str(&format!("; runs waited for a CPU {:.0} % of their wall time", busy * 100.0));
    }
    out.push('\n');
    for r in &c.resolution {
        match (r.detectable_effect, r.equivalence_margin) {
            (Some(detect), Some(margin)) => out.push_str(&format!(
                "  within {:>2.0} s ({} rounds): detects {} (in 80 % of comparisons); confirms `equivalent` for --threshold ≥ {}\n",
                r.budget_s,
                r.rounds,
                pct(detect),
                pct(margin)
            )),
            _ => out.push_str(&format!("  within {:>2.0} s ({} rounds): too few rounds for any interval\n", r.budget_s, r.rounds)),
        }
    }
    match doctor::rounds_for_effect(c.paired_sigma, c.round_s, effect) {
        Some(n) => out.push_str(&format!(
            "  a {} effect needs {n} rounds ({:.1} s) with compare's defaults\n",
            pct(effect),
            n as f64 * c.round_s
        )),
        None => out.push_str(&format!(
            "  a {} effect needs more than compare's 60 s here: raise --max-time, lengthen the runs or quiet the machine\n",
            pct(effect)
        )),
    }
    for w in e.warnings.iter().filter(|w| w.kind == crate::model::WarningKind::Busy) {
        out.push_str(&format!("  {}\n", yellow(&escape(&w.message))));
    }
    out
}
