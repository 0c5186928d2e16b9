//! The experiment loop: warm-up, then randomized interleaved rounds through an
//! [`Executor`], looks at the primary metric on the planned schedule, and a stop as soon
//! as every candidate has a verdict (or a limit, a failure or an interrupt ends it).

use super::analysis::{finish, primary_comparisons};
use super::executor::{Executor, RunError};
use super::observer::{Observer, Progress};
use super::plan::Plan;
use super::schedule::{LookSchedule, RoundPlanner};
use crate::error::Failure;
use crate::model::{CommandResult, Experiment, StopReason};
use crate::usage;

/// Run the experiment described by `plan`. Returns the experiment also when it stopped
/// early (interrupt, failing command): callers save what was measured and pick the
/// outcome from `stop_reason`. Fails only before the first run (a command that cannot
/// start at all) or when an observer cannot record a run.
pub fn run_experiment(
    plan: &Plan,
    executor: &mut dyn Executor,
    observer: &mut dyn Observer,
) -> Result<Experiment, Failure> {
    let settings = &plan.settings;
    let mut experiment = Experiment {
        started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        machine: executor.machine(),
        settings: settings.clone(),
        commands: plan
            .commands
            .iter()
            .map(|c| CommandResult {
                name: c.name.clone(),
                argv: c.argv.clone(),
                command_line: c.command_line.clone(),
                runs: Vec::new(),
                summary: Default::default(),
            })
            .collect(),
        environment: executor.environment_facts(),
        ..Experiment::default()
    };
    let mut planner = RoundPlanner::new(settings.seed, plan.commands.len(), settings.env_padding);
    let mut looks = match settings.fixed_rounds {
        Some(n) => LookSchedule::fixed(settings.confidence, n),
        None => LookSchedule::sequential(settings.confidence, settings.min_rounds),
    };
    // The round count and level of the last look, reused when the experiment ends on it.
    let mut last_look: Option<(u32, f64)> = None;
    let mut warmups_left = settings.warmup_rounds;
    let mut measured: u32 = 0;

    let stop_reason = 'rounds: loop {
        if executor.interrupted() {
            break StopReason::Interrupted;
        }
        let warmup = warmups_left > 0;
        let first_round = measured == 0 && warmups_left == settings.warmup_rounds;
        let round = planner.next_round();
        for (position, &index) in round.order.iter().enumerate() {
            let mut run = match executor.run(index, round.pad_bytes) {
                Ok(run) => run,
                Err(RunError::Interrupted) => break 'rounds StopReason::Interrupted,
                // A command that cannot even start in the first round is bad input.
                Err(err) if first_round => return Err(usage!("{}: {err}", plan.commands[index].name)),
                Err(err) => {
                    experiment.failure = Some(format!("{}: {err}", plan.commands[index].name));
                    break 'rounds StopReason::CommandFailed;
                }
            };
            run.round = measured;
            run.position = position as u32;
            run.env_pad_bytes = round.pad_bytes.unwrap_or(0) as u32;
            let failure = (!run.exit.success() && !plan.ignore_failure).then(|| {
                let stderr = executor.stderr_tail(index);
                let mut message = format!("`{}` {}", plan.commands[index].name, run.exit.describe());
                if !stderr.is_empty() {
                    message.push_str(&format!("; its last stderr lines:\n{stderr}"));
                }
                message
            });
            if !warmup {
                observer.run_finished(index, &run).map_err(Failure::Other)?;
                experiment.commands[index].runs.push(run);
            }
            if let Some(message) = failure {
                experiment.failure = Some(message);
                break 'rounds StopReason::CommandFailed;
            }
        }
        if warmup {
            warmups_left -= 1;
            observer.round_finished(&Progress { rounds: 0, warmup: true, elapsed: executor.elapsed(), latest: vec![] });
            continue;
        }
        measured += 1;
        experiment.rounds = measured;
        let mut latest = Vec::new();
        if looks.is_look(measured) {
            if let Some(level) = looks.take_look(measured) {
                last_look = Some((measured, level));
                latest = primary_comparisons(plan, &experiment, level);
                if latest.iter().all(|c| c.verdict.is_decided())
                    && !latest.is_empty()
                    && settings.fixed_rounds.is_none()
                {
                    break StopReason::Decided;
                }
            }
        }
        observer.round_finished(&Progress { rounds: measured, warmup: false, elapsed: executor.elapsed(), latest });
        if settings.fixed_rounds.is_some_and(|n| measured >= n) {
            break StopReason::FixedRounds;
        }
        if measured >= settings.max_rounds {
            break StopReason::MaxRounds;
        }
        if settings.fixed_rounds.is_none() && executor.elapsed().as_secs_f64() >= settings.max_time_s {
            break StopReason::MaxTime;
        }
    };
    experiment.stop_reason = stop_reason;
    experiment.duration_s = executor.elapsed().as_secs_f64();
    let level = match last_look {
        Some((rounds, level)) if rounds == measured => level,
        _ => looks.final_look(),
    };
    finish(plan, &mut experiment, level);
    Ok(experiment)
}
