//! `perflab doctor CMD`'s experiment: the command against itself (A/A) in interleaved
//! rounds — one round to time it, then as many as fit in the time asked for — whose
//! paired noise [`super::calibrate`] turns into what the machine can resolve.

use crate::experiment::{self, ExperimentError, Observer};

use crate::plan::{Plan, PlanRequest};
use perflab_model::{Experiment, Settings};
use perflab_sys::command::{Shell, ShellReason};

/// Fewest measured rounds a calibration runs, whatever its duration: enough for a
/// robust σ of the paired ratio.
pub(crate) const MIN_ROUNDS: u32 = 12;

/// An A/A plan for `command_line` (checked before anything runs), and why it goes
/// through a shell when it does (for the caller to say).
pub fn plan(command_line: &str, shell: &Shell) -> Result<(Plan, Option<ShellReason>), crate::plan::error::PlanError> {
    let text = command_line.to_string();
    let (plan, shell_reason) = PlanRequest::new(vec![text.clone(), text], shell.clone()).build()?;
    Ok((plan.with_settings(Settings::default()), shell_reason))
}

/// One round to time the command, then as many interleaved A/A rounds as fit in
/// `seconds` (at least `MIN_ROUNDS`), all looked at once. `planned(rounds, round_s)`
/// hears how many rounds of how long follow; `observer` watches them.
pub fn run(
    plan: &Plan,
    seconds: f64,
    planned: &mut dyn FnMut(u32, f64),
    observer: &mut dyn Observer,
) -> Result<Experiment, ExperimentError> {
    let seed = rand::random();
    let probe = plan.with_settings(Settings { seed, fixed_rounds: Some(1), max_rounds: 1, ..plan.settings.clone() });
    let timed = experiment::run(&probe, &mut experiment::Quiet)?;
    if timed.stop_reason == perflab_model::StopReason::Interrupted
        || timed.stop_reason == perflab_model::StopReason::CommandFailed
    {
        return Ok(timed);
    }
    let round_s = timed.duration_s / (timed.rounds + timed.settings.warmup_rounds).max(1) as f64;
    let rounds = ((seconds / round_s.max(1e-6)) as u32).max(MIN_ROUNDS);
    planned(rounds, round_s);
    let settings = Settings { seed, fixed_rounds: Some(rounds), max_rounds: rounds, ..plan.settings.clone() };
    experiment::run(&plan.with_settings(settings), observer)
}
