//! The experiment loop: warm-up, then randomized interleaved rounds through an
//! [`Executor`], looks at the primary metric on the planned schedule, and a stop as soon
//! as every candidate has a verdict (or a limit, a failure or an interrupt ends it).

use super::error::ExperimentError;
use super::observer::{Observer, Progress};
use crate::analysis::{busy_warning, examine_busy, finish, noise, primary_comparisons, Switch};
use crate::executor::error::ExecutorError;
use crate::executor::{Executor, RunError};
use crate::plan::schedule::{LookSchedule, RoundPlanner};
use crate::plan::Plan;
use perflab_model::{CommandResult, Experiment, Mode, Run, StopReason};
use std::time::Duration;

/// The group-sequential horizon is planned this much beyond the rounds that fit in
/// `--max-time` at the first rounds' pace, so that later rounds a little faster than
/// those rarely exhaust it first (a limit reached before it spends what is left).
const HORIZON_MARGIN: f64 = 1.1;

/// Run the experiment described by `plan`. Returns the experiment also when it stopped
/// early (interrupt, failing command or hook): callers save what was measured and pick
/// the outcome from `stop_reason`. Fails only before the first run (a command that
/// cannot start at all) or when an observer cannot record a run. The setup hooks run
/// before the first round, the cleanup hooks after the last whatever ended it.
pub fn run_experiment(
    plan: &Plan,
    executor: &mut dyn Executor,
    observer: &mut dyn Observer,
) -> Result<Experiment, ExperimentError> {
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
                parameters: c.parameters.clone(),
                runs: Vec::new(),
                summary: Default::default(),
            })
            .collect(),
        environment: executor.environment_facts(),
        primary_metric: plan.primary_metric.clone(),
        estimation: Some(noise::initial(settings)),
        ..Experiment::default()
    };
    let candidates = plan.candidates();
    let mut looks = match settings.fixed_rounds {
        Some(n) => LookSchedule::fixed(settings.confidence, candidates, n),
        None => LookSchedule::sequential(settings.looks, settings.confidence, candidates, settings.min_rounds),
    };
    // The metrics printed by the commands may only be known after their first run.
    let mut plan = plan.clone();
    // The primary metric is examined at every look (see `examine_busy`).
    let mut busy = Busy::default();
    let mut past_verdict = PastVerdict::default();
    let outcome = match executor.setup() {
        Ok(()) => rounds(&mut plan, executor, observer, &mut experiment, &mut looks, &mut busy, &mut past_verdict),
        Err(RunError::Interrupted) => Ok((StopReason::Interrupted, None)),
        Err(err) => {
            experiment.failure = Some(err.to_string());
            Ok((StopReason::CommandFailed, None))
        }
    };
    let cleanup = executor.cleanup();
    let (mut stop_reason, last_look) = outcome?;
    if let Err(why) = cleanup {
        experiment.failure = Some(match experiment.failure.take() {
            Some(failure) => format!("{failure}; then {why}"),
            None => why.to_string(),
        });
        if stop_reason != StopReason::Interrupted {
            stop_reason = StopReason::CommandFailed;
        }
    }
    experiment.stop_reason = stop_reason;
    experiment.duration_s = executor.elapsed().as_secs_f64();
    if busy.looks == 0 {
        // No look happened (an interrupt, a failure): the final one is the first.
        let rounds = experiment.rounds;
        busy.switch = examine_busy(&plan, &mut experiment, 0, rounds);
    }
    let level = match last_look {
        Some((rounds, level)) if rounds == experiment.rounds => level,
        _ => looks.final_look(experiment.rounds),
    };
    finish(&plan, &mut experiment, level);
    experiment.warnings.extend(crate::analysis::copies::separate_copies(&plan));
    if let Some(note) = past_verdict.note(&plan, experiment.rounds) {
        for e in experiment.comparisons.iter_mut().filter_map(|c| c.explanation.as_deref_mut()) {
            e.warnings.insert(0, note.clone());
        }
    }
    if let Some(warning) = busy_warning(&plan, &experiment, busy.switch) {
        experiment.warnings.insert(0, warning);
    }
    // Whatever ended it, an undecided comparison says what the rounds did resolve.
    experiment.learned = noise::learned(&plan, &experiment);
    Ok(experiment)
}

/// What the looks found out about the machine so far.
#[derive(Debug, Default)]
struct Busy {
    looks: u32,
    /// The round of the latest look (0 before the first).
    previous_look: u32,
    switch: Option<Switch>,
}

/// `compare --explain` measures past the verdict until the rows that carry the change
/// are decided: the round the verdict came at, and the rows still undecided at the
/// latest look.
#[derive(Debug, Default)]
struct PastVerdict {
    decided_at: Option<u32>,
    undecided: Vec<String>,
    /// Each time the sampling rate was raised for the rounds to come.
    raised: Vec<Raise>,
}

/// The sampling rate raised after a round, and the rows short of samples that asked for it.
#[derive(Debug)]
struct Raise {
    after_round: u32,
    from: u64,
    to: u64,
    short: Vec<(String, f64)>,
}

impl Raise {
    fn describe(&self) -> String {
        let rows: Vec<String> = self.short.iter().map(|(name, samples)| format!("{name} {samples:.0}")).collect();
        format!(
            "from {} Hz to {} Hz after round {} (samples per run of the undecided rows: {})",
            self.from,
            self.to,
            self.after_round,
            rows.join(", ")
        )
    }
}

impl PastVerdict {
    /// The line the explanations carry when rounds were measured past the verdict.
    fn note(&self, plan: &Plan, rounds: u32) -> Option<String> {
        let at = self.decided_at?;
        let base = self.base_note(plan, rounds, at);
        // A raise after the last round sampled nothing.
        let raises: Vec<String> = self.raised.iter().filter(|r| r.after_round < rounds).map(Raise::describe).collect();
        if raises.is_empty() {
            return Some(base);
        }
        Some(format!(
            "{base}; the sampling rate was raised {} — functions' times are sums of their samples' periods, so rounds at different rates measure the same thing (the probe's CPU cost grows with the rate, the same on both sides; at most {}× --explain-frequency, within perf_event_max_sample_rate)",
            raises.join(", then "),
            crate::measure::sampling::MAX_RAISE
        ))
    }

    fn base_note(&self, plan: &Plan, rounds: u32, at: u32) -> String {
        if self.undecided.is_empty() {
            format!(
                "the verdict was decided at round {at}; {} more rounds were measured until the functions that carry the change were decided",
                rounds - at
            )
        } else {
            format!(
                "the verdict was decided at round {at}; the rounds went on to decide the functions that carry the change, but the budget (--max-rounds {}, --max-time {:.0} s) ended at round {rounds} with {} still inconclusive",
                plan.settings.max_rounds,
                plan.settings.max_time_s,
                self.undecided.join(", ")
            )
        }
    }
}

/// The rounds, until something stops them: why, and the round count and level of the
/// last look (reused when the experiment ends on it).
fn rounds(
    plan: &mut Plan,
    executor: &mut dyn Executor,
    observer: &mut dyn Observer,
    experiment: &mut Experiment,
    looks: &mut LookSchedule,
    busy: &mut Busy,
    past_verdict: &mut PastVerdict,
) -> Result<(StopReason, Option<(u32, f64)>), ExperimentError> {
    let settings = plan.settings.clone();
    let mut planner = RoundPlanner::new(settings.seed, plan.commands.len(), settings.env_padding);
    // When the measured rounds began, to plan how many fit in the limits.
    let mut measuring_since = None;
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
        let round_started = time_spent(executor);
        for (position, &index) in round.order.iter().enumerate() {
            let name = plan.commands[index].name.clone();
            let mut keep = |run: Box<Run>, experiment: &mut Experiment| -> Result<(), ExperimentError> {
                let run = Run {
                    round: measured,
                    position: position as u32,
                    env_pad_bytes: round.pad_bytes.unwrap_or(0) as u32,
                    ..*run
                };
                if !warmup {
                    observer.run_finished(index, &run).map_err(ExperimentError::Record)?;
                    experiment.commands[index].runs.push(run);
                }
                Ok(())
            };
            let run = match executor.run(index, round.pad_bytes) {
                Ok(run) => run,
                Err(RunError::Interrupted) => break 'rounds StopReason::Interrupted,
                Err(RunError::Incomplete { run, why }) => {
                    if let Some(run) = run {
                        keep(run, experiment)?;
                    }
                    experiment.failure = Some(format!("`{name}`: {why}"));
                    break 'rounds StopReason::CommandFailed;
                }
                // A command that cannot even start in the first round is bad input.
                Err(source) if first_round => {
                    return Err(ExecutorError::CannotStart { command: name.to_string(), source }.into())
                }
                Err(err) => {
                    experiment.failure = Some(format!("{name}: {err}"));
                    break 'rounds StopReason::CommandFailed;
                }
            };
            let failure = if !run.exit.success() {
                (!plan.ignore_failure).then(|| {
                    let stderr = executor.stderr_tail(index);
                    let mut message = format!("`{name}` {}", run.exit.describe());
                    if !stderr.is_empty() {
                        message.push_str(&format!("; its last stderr lines:\n{stderr}"));
                    }
                    message
                })
            } else {
                missing_printed_metric(plan, &name, &run)
            };
            keep(Box::new(run), experiment)?;
            if let Some(message) = failure {
                experiment.failure = Some(message);
                break 'rounds StopReason::CommandFailed;
            }
        }
        if first_round && plan.learns_metrics_from_output() {
            let printed = executor.printed_metrics();
            if printed.is_empty() {
                let expected = crate::measure::output::expected_output(&plan.measure.output);
                experiment.failure = Some(format!("`{}` printed no metric: {expected}", plan.commands[0].name));
                break StopReason::CommandFailed;
            }
            *plan = plan.with_printed_metrics(&printed);
            experiment.primary_metric = plan.primary_metric.clone();
        }
        if warmup {
            warmups_left -= 1;
            observer.round_finished(&Progress { rounds: 0, warmup: true, elapsed: executor.elapsed(), latest: vec![] });
            continue;
        }
        let since = *measuring_since.get_or_insert(round_started);
        measured += 1;
        experiment.rounds = measured;
        let mut latest = Vec::new();
        if looks.is_look(measured) {
            let mut metric_switched = false;
            if busy.switch.is_none() {
                if let Some(switch) = examine_busy(plan, experiment, busy.previous_look, measured) {
                    if busy.looks > 0 {
                        looks.restart_statistic();
                    }
                    busy.switch = Some(switch);
                    metric_switched = true;
                }
            }
            // From the pilot look on the rounds' shape chooses the estimator; a new one is
            // a new statistic, tested with what the earlier looks left of α.
            if let Some(chosen) = noise::choose_at_look(plan, experiment, measured, busy.previous_look, metric_switched)
            {
                let before = experiment.estimation.as_ref().map(|e| e.estimator);
                if before != Some(chosen.estimator) && busy.looks > 0 {
                    looks.restart_statistic();
                }
                experiment.estimation = Some(chosen);
            }
            busy.looks += 1;
            busy.previous_look = measured;
            let pace = time_spent(executor).saturating_sub(since).as_secs_f64() / measured as f64;
            let time_left = settings.max_time_s - executor.elapsed().as_secs_f64();
            let affordable = (measured as f64 + HORIZON_MARGIN * (time_left / pace.max(1e-9)).max(0.0))
                .min(settings.max_rounds as f64);
            if let Some(level) = looks.take_look(measured, affordable as u32) {
                last_look = Some((measured, level));
                latest = primary_comparisons(plan, experiment, level);
                if experiment.promise.is_none() {
                    let elapsed = executor.elapsed().as_secs_f64();
                    experiment.promise = noise::promise(plan, experiment, measured, pace, elapsed, &latest);
                    if let Some(promise) = &experiment.promise {
                        observer.promised(promise);
                    }
                }
            }
        }
        let decided =
            !latest.is_empty() && latest.iter().all(|c| c.verdict.is_decided()) && settings.fixed_rounds.is_none();
        let layout_limited = !decided
            && settings.fixed_rounds.is_none()
            && crate::analysis::layouts::rounds_cannot_decide(plan, experiment, &latest);
        // With --explain a decided verdict is not yet an explanation: measure on while a
        // row that carries the change is undecided (at the looks' levels, so its
        // intervals keep the design's guarantee), until the budget ends.
        let explaining = decided && plan.measure.explain.is_some() && !matches!(settings.mode, Mode::Instructions);
        if explaining {
            let level = last_look.map_or(settings.confidence, |(_, level)| level);
            let undecided = crate::analysis::undecided_explanations(plan, experiment, level);
            past_verdict.undecided = undecided.rows;
            if !past_verdict.undecided.is_empty() {
                past_verdict.decided_at.get_or_insert(measured);
            }
            // Rows short of samples gain more from a higher rate than from rounds alike.
            if let (Some(crate::measure::Explain::Samples(sampling)), false) =
                (&plan.measure.explain, undecided.short.is_empty())
            {
                let from = sampling.current_hz();
                if let Some(to) = sampling.raise() {
                    past_verdict.raised.push(Raise { after_round: measured, from, to, short: undecided.short });
                }
            }
        }
        let waiting = past_verdict.decided_at.is_some() && !past_verdict.undecided.is_empty();
        observer.round_finished(&Progress { rounds: measured, warmup: false, elapsed: executor.elapsed(), latest });
        if decided && !(explaining && waiting) {
            break StopReason::Decided;
        }
        // A budget that ends the rounds past the verdict leaves the verdict decided.
        let limit = if waiting { StopReason::Decided } else { StopReason::MaxRounds };
        if layout_limited {
            break StopReason::LayoutLimited;
        }
        if settings.fixed_rounds.is_some_and(|n| measured >= n) {
            break StopReason::FixedRounds;
        }
        if measured >= settings.max_rounds {
            break limit;
        }
        let time_limited = settings.fixed_rounds.is_none() || settings.max_time_bounds_fixed_rounds;
        if time_limited && executor.elapsed().as_secs_f64() >= settings.max_time_s {
            break if waiting { StopReason::Decided } else { StopReason::MaxTime };
        }
        if looks.planned_rounds_done(measured) {
            break if waiting { StopReason::Decided } else { StopReason::PlannedRounds };
        }
    };
    Ok((stop_reason, last_look))
}

/// The executor's clock without the time it set aside (see [`Executor::set_aside`]): what
/// the rounds' pace is measured on.
fn time_spent(executor: &dyn Executor) -> Duration {
    executor.elapsed().saturating_sub(executor.set_aside())
}

/// Why a successful run of `name` fails the experiment: it lacks a compared metric it
/// should have printed (never counted as a zero).
fn missing_printed_metric(plan: &Plan, name: &str, run: &Run) -> Option<String> {
    let missing = plan.printed_metrics().into_iter().find(|m| run.metric(m).is_none())?;
    let why = run.counters.get(&missing).and_then(|c| c.reason.clone());
    Some(match why {
        Some(why) => format!("`{name}` printed no value of `{missing}`: {why}"),
        None => format!("`{name}` printed no value of `{missing}`, which `{}` printed", plan.commands[0].name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::simulated::{Event, Noise, Simulated};
    use crate::experiment::observer::Quiet;
    use crate::measure::MeasureOptions;
    use crate::plan::Compared;
    use perflab_model::{metric, CommandSpec, Run, Settings, Verdict};

    fn plan(commands: usize, settings: Settings) -> Plan {
        let commands = (0..commands)
            .map(|i| CommandSpec {
                name: format!("c{i}"),
                argv: vec![format!("c{i}")],
                command_line: format!("c{i}"),
                ..CommandSpec::default()
            })
            .collect();
        let compared = Compared {
            metrics: vec![metric::WALL.into(), metric::CPU.into()],
            primary: metric::WALL.into(),
            auto_primary: true,
        };
        Plan::new(commands, Settings { seed: 11, ..settings }, MeasureOptions::default(), compared)
    }

    /// Records what the observer saw.
    #[derive(Default)]
    struct Log {
        runs: Vec<(usize, Run)>,
        rounds: Vec<(u32, bool)>,
    }

    impl Observer for Log {
        fn run_finished(&mut self, command: usize, run: &Run) -> anyhow::Result<()> {
            self.runs.push((command, run.clone()));
            Ok(())
        }
        fn round_finished(&mut self, progress: &Progress) {
            self.rounds.push((progress.rounds, progress.warmup));
        }
    }

    fn wall(e: &Experiment) -> &perflab_model::Comparison {
        e.comparisons.iter().find(|c| c.metric == metric::WALL).expect("a wall comparison")
    }

    /// The simulated machine's runs with the samples of the explanation's simulation:
    /// each round's pair of profiles drawn together (baseline for command 0).
    struct Sampled {
        machine: Simulated,
        profiles: crate::analysis::explain::simulate::Simulation,
        pending: [Option<Box<perflab_model::RunProfile>>; 2],
    }

    impl Executor for Sampled {
        fn run(&mut self, index: usize, pad_bytes: Option<usize>) -> Result<Run, RunError> {
            let mut run = self.machine.run(index, pad_bytes)?;
            if self.pending.iter().all(Option::is_none) {
                let (mut base, mut cand) = self.profiles.commands(1);
                self.pending = [base.runs[0].profile.take(), cand.runs[0].profile.take()];
            }
            run.profile = self.pending[index].take();
            Ok(run)
        }
        fn elapsed(&self) -> std::time::Duration {
            self.machine.elapsed()
        }
        fn interrupted(&self) -> bool {
            self.machine.interrupted()
        }
        fn machine(&self) -> perflab_model::Machine {
            self.machine.machine()
        }
    }

    /// Issue 39: the verdict on a 5 % slowdown comes early, the opposite changes of
    /// f_up (+30 %) and f_down (−20 %) need more rounds; `--explain` measures on until
    /// both are decided and says so, and the stop is still the verdict's.
    #[test]
    fn explain_measures_past_the_verdict_until_the_carrying_functions_are_decided() {
        use crate::analysis::explain::simulate::{Scenario, Simulation};
        let mut plan = plan(2, Settings { max_rounds: 200, ..Settings::default() });
        plan.measure.explain = Some(crate::measure::Explain::Samples(crate::measure::sampling::Sampling::default()));
        let run = |plan: &Plan| {
            let mut executor = Sampled {
                machine: Simulated::new(5, vec![0.70, 0.735], Noise::gaussian(0.005)),
                profiles: Simulation::new(Scenario::opposite_changes(), 3),
                pending: [None, None],
            };
            run_experiment(plan, &mut executor, &mut Quiet).unwrap()
        };
        let without = run(&Plan { measure: MeasureOptions::default(), ..plan.clone() });
        let e = run(&plan);
        assert_eq!(e.stop_reason, StopReason::Decided);
        assert_eq!(wall(&e).verdict, Verdict::Slower);
        assert!(e.rounds > without.rounds, "{} rounds with --explain, {} without", e.rounds, without.rounds);
        let explanation = wall(&e).explanation.as_deref().expect("an explanation");
        let verdict = |name: &str| explanation.functions.iter().find(|f| f.name == name).map(|f| f.verdict);
        assert_eq!((verdict("f_up"), verdict("f_down")), (Some(Verdict::Slower), Some(Verdict::Faster)));
        let note = &explanation.warnings[0];
        assert!(
            note.starts_with(&format!("the verdict was decided at round {}", without.rounds))
                && note.contains("more rounds were measured until the functions that carry the change were decided"),
            "{note}"
        );
    }

    /// When the budget ends first, the stop is the verdict's and the note names what is
    /// still undecided.
    #[test]
    fn the_budget_ends_the_rounds_past_the_verdict_and_says_so() {
        use crate::analysis::explain::simulate::{Scenario, Simulation};
        let mut plan = plan(2, Settings { max_rounds: 11, ..Settings::default() });
        plan.measure.explain = Some(crate::measure::Explain::Samples(crate::measure::sampling::Sampling::default()));
        let mut executor = Sampled {
            machine: Simulated::new(5, vec![0.70, 0.735], Noise::gaussian(0.005)),
            profiles: Simulation::new(Scenario::opposite_changes().shorter(10.0), 3),
            pending: [None, None],
        };
        let e = run_experiment(&plan, &mut executor, &mut Quiet).unwrap();
        assert_eq!((e.stop_reason, e.rounds), (StopReason::Decided, 11));
        let explanation = wall(&e).explanation.as_deref().expect("an explanation");
        let note = &explanation.warnings[0];
        assert!(note.contains("but the budget (--max-rounds 11") && note.contains("still inconclusive"), "{note}");
        // 70 samples per run: the undecided rows are short of samples, so the rounds past
        // the verdict sample faster — every probe built from the plan sees the new rate.
        let Some(crate::measure::Explain::Samples(sampling)) = &plan.measure.explain else { unreachable!() };
        assert!(sampling.current_hz() >= 998.min(sampling.ceiling_hz()));
        assert!(note.contains("the sampling rate was raised from 499 Hz to 998 Hz after round "), "{note}");
        assert!(!note.contains("after round 11"), "no round followed that raise: {note}");
    }

    #[test]
    fn identical_commands_without_noise_are_equivalent_at_the_first_attainable_look() {
        let plan = plan(2, Settings::default());
        let mut machine = Simulated::new(1, vec![0.05, 0.05], Noise::none());
        let mut log = Log::default();
        let e = run_experiment(&plan, &mut machine, &mut log).unwrap();
        assert_eq!(e.stop_reason, StopReason::Decided);
        // Looks come at 6, 8, 10, … rounds; the first spends too little α for a Wilcoxon
        // interval of 6 rounds (the smallest level 2/2⁶ is not reached); the front-loaded
        // spending gives the second, at 8, ≈ 0.0097 ≥ 2/2⁸ (the logarithmic design's
        // 0.0048 waited for 10).
        assert_eq!(e.rounds, 8);
        assert_eq!(wall(&e).verdict, Verdict::Equivalent);
        assert_eq!(wall(&e).ratio, 1.0);
        // One warm-up round is run and reported, never recorded.
        assert_eq!(log.rounds.first(), Some(&(0, true)));
        assert_eq!(log.rounds.iter().filter(|r| !r.1).map(|r| r.0).collect::<Vec<_>>(), (1..=8).collect::<Vec<_>>());
        assert_eq!(log.runs.len(), 16, "warm-up runs are not observed");
    }

    #[test]
    fn every_round_runs_each_command_once_in_random_order_with_shared_padding() {
        let plan = plan(3, Settings { fixed_rounds: Some(30), max_rounds: 30, ..Settings::default() });
        let mut machine = Simulated::new(2, vec![0.01, 0.01, 0.01], Noise::gaussian(0.01));
        let e = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
        assert_eq!((e.stop_reason, e.rounds), (StopReason::FixedRounds, 30));
        let mut orders = std::collections::HashSet::new();
        for round in 0..30 {
            let runs: Vec<&Run> = e.commands.iter().map(|c| &c.runs[round as usize]).collect();
            assert!(runs.iter().all(|r| r.round == round));
            let mut positions: Vec<u32> = runs.iter().map(|r| r.position).collect();
            orders.insert(positions.clone());
            positions.sort();
            assert_eq!(positions, [0, 1, 2]);
            assert!(runs.iter().all(|r| r.env_pad_bytes == runs[0].env_pad_bytes), "one padding per round");
        }
        assert!(orders.len() >= 5, "orders vary: {orders:?}");
    }

    #[test]
    fn a_ten_percent_slowdown_is_slower_and_the_interval_covers_it() {
        let plan = plan(2, Settings::default());
        let mut machine = Simulated::new(3, vec![0.05, 0.055], Noise::gaussian(0.01));
        let e = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
        let c = wall(&e);
        assert_eq!((e.stop_reason, c.verdict), (StopReason::Decided, Verdict::Slower));
        assert!(c.ci_low <= 1.1 && 1.1 <= c.ci_high, "{c:?}");
        assert_eq!(e.commands[0].summary[metric::WALL].n, e.rounds as usize);
    }

    #[test]
    fn a_failing_command_stops_the_experiment_and_keeps_what_was_measured() {
        let plan = plan(2, Settings::default());
        let mut machine =
            Simulated::new(4, vec![0.01, 0.01], Noise::none()).with(Event::Fails { command: 1, nth: 4, code: 7 });
        let e = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
        assert_eq!(e.stop_reason, StopReason::CommandFailed);
        let failure = e.failure.as_deref().unwrap();
        assert!(failure.contains("`c1` exited with code 7") && failure.contains("simulated failure"), "{failure}");
        // The 5th run of c1 is in measured round 4 (after one warm-up); it is kept.
        assert_eq!(e.commands[1].runs.len(), 4);
        assert_eq!(e.commands[1].runs.last().unwrap().exit.exit_code, Some(7));

        let tolerant = plan.ignoring_failure(true);
        let mut machine =
            Simulated::new(4, vec![0.01, 0.01], Noise::none()).with(Event::Fails { command: 1, nth: 4, code: 7 });
        let e = run_experiment(&tolerant, &mut machine, &mut Quiet).unwrap();
        assert_eq!((e.stop_reason, e.failure.as_deref()), (StopReason::Decided, None));
    }

    #[test]
    fn a_command_that_cannot_start_is_bad_input_only_in_the_first_round() {
        let plan = plan(2, Settings::default());
        let mut machine =
            Simulated::new(5, vec![0.01, 0.01], Noise::none()).with(Event::CannotStart { command: 1, nth: 0 });
        let err = run_experiment(&plan, &mut machine, &mut Quiet).unwrap_err();
        assert!(
            matches!(err, ExperimentError::Executor(crate::executor::error::ExecutorError::CannotStart { .. })),
            "bad input: {err:?}"
        );
        let mut machine =
            Simulated::new(5, vec![0.01, 0.01], Noise::none()).with(Event::CannotStart { command: 1, nth: 3 });
        let e = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
        assert_eq!(e.stop_reason, StopReason::CommandFailed);
        assert!(e.failure.unwrap().contains("cannot execute"));
    }

    #[test]
    fn max_time_given_with_fixed_rounds_holds_too() {
        // --rounds 2147483648 --max-time 2s: 0.1 s rounds of two commands stop after ~2 s.
        let both = Settings {
            fixed_rounds: Some(1 << 31),
            max_rounds: 1 << 31,
            max_time_s: 2.0,
            max_time_bounds_fixed_rounds: true,
            ..Settings::default()
        };
        let e = run_experiment(&plan(2, both), &mut Simulated::new(3, vec![0.05, 0.05], Noise::none()), &mut Quiet)
            .unwrap();
        assert_eq!(e.stop_reason, StopReason::MaxTime);
        assert!((2.0..2.3).contains(&e.duration_s), "{}", e.duration_s);
        // Without --max-time, exactly N rounds run however long they take.
        let exact = Settings { fixed_rounds: Some(30), max_rounds: 30, max_time_s: 1.0, ..Settings::default() };
        let e = run_experiment(&plan(2, exact), &mut Simulated::new(3, vec![0.05, 0.05], Noise::none()), &mut Quiet)
            .unwrap();
        assert_eq!((e.stop_reason, e.rounds), (StopReason::FixedRounds, 30));
    }

    /// A simulated machine whose clock runs ahead by a reserve set aside for later (a
    /// suite's `--budget` keeps one for its benchmarks' endings), growing to 50 s in the
    /// first few rounds.
    struct SetAside(Simulated);

    impl SetAside {
        fn reserve(&self) -> Duration {
            Duration::from_secs_f64((self.0.elapsed().as_secs_f64() * 100.0).min(50.0))
        }
    }

    impl Executor for SetAside {
        fn run(&mut self, index: usize, pad_bytes: Option<usize>) -> Result<Run, RunError> {
            self.0.run(index, pad_bytes)
        }
        fn elapsed(&self) -> Duration {
            self.0.elapsed() + self.reserve()
        }
        fn set_aside(&self) -> Duration {
            self.reserve()
        }
        fn interrupted(&self) -> bool {
            self.0.interrupted()
        }
        fn machine(&self) -> perflab_model::Machine {
            self.0.machine()
        }
    }

    #[test]
    fn time_set_aside_moves_the_deadline_but_not_the_pace() {
        // 10 ms runs too noisy to decide soon, 120 s: 50 s set aside leave ~70 s of rounds.
        // Counted as the rounds' time, the reserve made the first looks plan a horizon of a
        // few dozen rounds, and the experiment ended at 18 (768 when it is left out).
        let settings = Settings { max_time_s: 120.0, ..Settings::default() };
        let noisy = Noise { run_sigma: 0.2, ..Noise::none() };
        let mut machine = SetAside(Simulated::new(8, vec![0.01, 0.01], noisy));
        let e = run_experiment(&plan(2, settings), &mut machine, &mut Quiet).unwrap();
        assert!(e.rounds > 300, "{} rounds in the 70 s left, {:?}", e.rounds, e.stop_reason);
        assert!(machine.0.elapsed().as_secs_f64() <= 71.0, "{:?}", machine.0.elapsed());
    }

    #[test]
    fn limits_and_interrupts_end_the_experiment_with_everything_measured() {
        // Equal commands under heavy noise cannot be decided quickly: the time cap ends it.
        let noisy = Noise { run_sigma: 0.2, ..Noise::none() };
        let capped = plan(2, Settings { max_time_s: 5.0, ..Settings::default() });
        let mut machine = Simulated::new(6, vec![0.1, 0.1], noisy.clone());
        let e = run_experiment(&capped, &mut machine, &mut Quiet).unwrap();
        assert_eq!(e.stop_reason, StopReason::MaxTime);
        assert!((5.0..5.5).contains(&e.duration_s), "{}", e.duration_s);
        assert_eq!(e.commands[0].runs.len(), e.rounds as usize);
        assert!(!e.comparisons.is_empty(), "the final look still compares");

        let rounds = plan(2, Settings { max_rounds: 12, ..Settings::default() });
        let e = run_experiment(&rounds, &mut Simulated::new(6, vec![0.1, 0.1], noisy.clone()), &mut Quiet).unwrap();
        assert_eq!((e.stop_reason, e.rounds), (StopReason::MaxRounds, 12));

        let mut machine = Simulated::new(6, vec![0.1, 0.1], noisy).with(Event::InterruptAfter(1.0));
        let e = run_experiment(&rounds, &mut machine, &mut Quiet).unwrap();
        assert_eq!(e.stop_reason, StopReason::Interrupted);
        assert!(e.rounds >= 3 && e.commands[1].runs.len() == e.rounds as usize, "{}", e.rounds);
    }

    #[test]
    fn a_failing_hook_stops_even_the_first_round_as_a_failure_and_cleanup_still_runs() {
        let plan = plan(2, Settings::default());
        let mut machine =
            Simulated::new(7, vec![0.01, 0.01], Noise::none()).with(Event::HookFails { command: 1, nth: 0 });
        let e = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
        assert_eq!(e.stop_reason, StopReason::CommandFailed, "a hook is no bad input: exit 3, not 2");
        assert!(e.failure.unwrap().contains("`c1`: --prepare `simulated` exited with code 1"));
        assert_eq!(machine.cleanups, 1);
        let mut interrupted = Simulated::new(7, vec![0.1, 0.1], Noise::none()).with(Event::InterruptAfter(0.5));
        run_experiment(&plan, &mut interrupted, &mut Quiet).unwrap();
        assert_eq!(interrupted.cleanups, 1, "cleanup after an interrupt too");
    }

    #[test]
    fn metrics_printed_by_the_commands_are_learned_from_the_baseline_and_decide_in_their_direction() {
        let mut plan = plan(2, Settings::default());
        plan.measure.output = vec![crate::measure::output::Parser::JsonLines];
        // The candidate takes 10 % longer, so its printed rate is 10 % lower: worse.
        let mut machine = Simulated::new(8, vec![0.05, 0.055], Noise::gaussian(0.01)).printing("ops_per_s", 5);
        let e = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
        assert_eq!(e.primary_metric, "ops_per_s");
        let c = e.comparisons.iter().find(|c| c.metric == "ops_per_s").unwrap();
        assert_eq!((c.verdict, c.better), (Verdict::Slower, metric::Better::Higher));
        assert!(c.ci_low <= 1.0 / 1.1 && 1.0 / 1.1 <= c.ci_high, "{c:?}");
        assert_eq!(e.comparisons[0].metric, "ops_per_s", "compared first");
        assert_eq!(e.commands[0].runs[0].counters["ops_per_s"].samples.len(), 5);

        // A candidate that stops printing it fails the experiment, naming the metric;
        // the run is kept, without a value (never a zero).
        let mut silent = Simulated::new(8, vec![0.05, 0.05], Noise::none())
            .printing("ops_per_s", 1)
            .with(Event::Silent { command: 1, nth: 3 });
        let e = run_experiment(&plan, &mut silent, &mut Quiet).unwrap();
        assert_eq!(e.stop_reason, StopReason::CommandFailed);
        assert_eq!(e.failure.as_deref(), Some("`c1` printed no value of `ops_per_s`, which `c0` printed"));
        let last = e.commands[1].runs.last().unwrap();
        assert_eq!((e.commands[1].runs.len(), last.metric("ops_per_s")), (3, None));
    }

    #[test]
    fn a_busy_machine_decides_on_uncontended_time_and_says_why() {
        // Half of every run's wall time is spent waiting, at random: wall time is noisy,
        // the run's own time is not.
        let busy = Noise { busy: 0.5, ..Noise::gaussian(0.005) };
        let e = run_experiment(
            &plan(2, Settings::default()),
            &mut Simulated::new(12, vec![0.05, 0.0505], busy.clone()),
            &mut Quiet,
        )
        .unwrap();
        assert_eq!(e.primary_metric, metric::UNCONTENDED);
        let warning = e.warnings.iter().find(|w| w.kind == perflab_model::WarningKind::Busy).expect("a busy warning");
        assert!(
            warning.message.contains("% of wall time was waiting for a CPU; deciding on uncontended_s"),
            "{warning}"
        );
        let decided = e.comparisons.iter().find(|c| c.metric == metric::UNCONTENDED).unwrap();
        assert_eq!((e.stop_reason, decided.verdict), (StopReason::Decided, Verdict::Slower));
        assert!(decided.ci_low <= 1.01 && 1.01 <= decided.ci_high, "{decided:?}");

        let asked = Plan { auto_primary: false, ..plan(2, Settings { max_rounds: 20, ..Settings::default() }) };
        let e = run_experiment(&asked, &mut Simulated::new(12, vec![0.05, 0.0505], busy), &mut Quiet).unwrap();
        assert_eq!(e.primary_metric, metric::WALL, "a metric the user named is kept");
        assert!(e.warnings.iter().any(|w| w.message.contains("deciding on wall_s as asked")), "{:?}", e.warnings);

        let quiet = run_experiment(
            &plan(2, Settings::default()),
            &mut Simulated::new(12, vec![0.05, 0.05], Noise::gaussian(0.01)),
            &mut Quiet,
        )
        .unwrap();
        assert_eq!(quiet.primary_metric, metric::WALL);
        assert!(quiet.warnings.iter().all(|w| w.kind != perflab_model::WarningKind::Busy));
    }

    #[test]
    fn a_benchmark_waiting_for_its_own_tasks_is_not_a_busy_machine() {
        // A pinned ping-pong alone: 45 % of its time one half waits for the other.
        let pingpong = Noise { own_wait: 0.45, ..Noise::gaussian(0.005) };
        let e = run_experiment(
            &plan(2, Settings::default()),
            &mut Simulated::new(13, vec![0.1, 0.1], pingpong.clone()),
            &mut Quiet,
        )
        .unwrap();
        assert_eq!(e.primary_metric, metric::WALL);
        assert!(e.warnings.iter().all(|w| w.kind != perflab_model::WarningKind::Busy), "{:?}", e.warnings);
        assert_eq!((e.stop_reason, wall(&e).verdict), (StopReason::Decided, Verdict::Equivalent));
        let median = |m: &str| e.commands[0].summary[m].median;
        assert!(median(metric::RUNQ_WAIT) > 0.04, "the wait is measured");
        assert!((median(metric::UNCONTENDED) / median(metric::WALL) - 1.0).abs() < 0.05, "and not removed");

        // Beside a neighbour: its share is removed, the ping-pong's own waiting is not.
        let beside = Noise { busy: 0.5, ..pingpong };
        let e =
            run_experiment(&plan(2, Settings::default()), &mut Simulated::new(13, vec![0.1, 0.1], beside), &mut Quiet)
                .unwrap();
        assert_eq!(e.primary_metric, metric::UNCONTENDED);
        let median = |m: &str| e.commands[0].summary[m].median;
        assert!(median(metric::WALL) > 0.15, "neighbours doubled the wall time");
        assert!((median(metric::UNCONTENDED) / 0.1 - 1.0).abs() < 0.05, "{}", median(metric::UNCONTENDED));
        assert!(median(metric::RUNQ_WAIT) > median(metric::NEIGHBOUR_WAIT) + 0.04);
    }

    #[test]
    fn a_neighbour_arriving_after_the_first_look_switches_the_metric_at_a_later_look() {
        // Quiet for the first 1.5 s (about 7 rounds of 2 × 0.1 s), then a neighbour takes
        // half of the wall time at random: wall time cannot decide a 1 % change in 60 s.
        let late = Noise { busy: 0.5, busy_after_s: 1.5, ..Noise::gaussian(0.005) };
        let e =
            run_experiment(&plan(2, Settings::default()), &mut Simulated::new(14, vec![0.1, 0.101], late), &mut Quiet)
                .unwrap();
        assert_eq!(e.primary_metric, metric::UNCONTENDED);
        assert_eq!(e.stop_reason, StopReason::Decided, "not stuck on wall time until the cap");
        assert!(e.duration_s < 30.0, "{}", e.duration_s);
        let decided = e.comparisons.iter().find(|c| c.metric == metric::UNCONTENDED).unwrap();
        assert_eq!(decided.verdict, Verdict::Slower);
        assert!(decided.ci_low <= 1.01 && 1.01 <= decided.ci_high, "{decided:?}");
        let warning = e.warnings.iter().find(|w| w.kind == perflab_model::WarningKind::Busy).unwrap();
        assert!(warning.message.contains("deciding on uncontended_s from round 8 on"), "{warning}");
        assert!(warning.message.contains("does not spend again"), "{warning}");
    }

    #[test]
    fn the_same_seed_replays_the_same_experiment() {
        let plan = plan(2, Settings::default());
        let run = || {
            let mut machine = Simulated::new(9, vec![0.05, 0.0505], Noise::gaussian(0.02));
            let mut e = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
            e.started_at.clear();
            e
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn an_undecided_comparison_says_what_it_learned() {
        // 5 % run noise (7 % paired) in 5 s of 0.2 s rounds: far too little for ±1 %.
        let noisy = Noise { run_sigma: 0.05, ..Noise::none() };
        let capped = plan(2, Settings { max_time_s: 5.0, ..Settings::default() });
        let e = run_experiment(&capped, &mut Simulated::new(6, vec![0.1, 0.1], noisy), &mut Quiet).unwrap();
        let c = wall(&e);
        assert_eq!((e.stop_reason, c.verdict), (StopReason::MaxTime, Verdict::Inconclusive));
        let [learned] = e.learned.as_slice() else { panic!("{:?}", e.learned) };
        assert_eq!((learned.down, learned.up, learned.confidence), (1.0 - c.ci_low, c.ci_high - 1.0, 0.95));
        assert!((0.04..0.11).contains(&learned.paired_sigma), "{learned:?}");
        // (z + 0.84)² σ²/δ² with z ≈ 2.8 and σ ≈ 7 %: several hundred rounds, not 25.
        let n = learned.rounds_to_decide.unwrap();
        assert!(n > 10 * e.rounds && n < 5000, "{learned:?}");
        let pace = e.duration_s / (e.rounds + e.settings.warmup_rounds) as f64;
        assert!((learned.seconds_to_decide.unwrap() - n as f64 * pace).abs() < 1e-6);

        let decided = run_experiment(
            &plan(2, Settings::default()),
            &mut Simulated::new(1, vec![0.05, 0.05], Noise::none()),
            &mut Quiet,
        )
        .unwrap();
        assert!(decided.learned.is_empty(), "a verdict needs no consolation");
    }

    #[test]
    fn a_budget_says_once_what_it_can_resolve_after_the_first_look() {
        #[derive(Default)]
        struct Promises(Vec<perflab_model::Promise>);
        impl Observer for Promises {
            fn promised(&mut self, promise: &perflab_model::Promise) {
                self.0.push(promise.clone());
            }
        }
        let budget = plan(2, Settings { max_time_s: 20.0, budget_s: Some(20.0), ..Settings::default() });
        let mut heard = Promises::default();
        let machine = &mut Simulated::new(21, vec![0.05, 0.05], Noise::gaussian(0.01));
        let e = run_experiment(&budget, machine, &mut heard).unwrap();
        let [promise] = heard.0.as_slice() else { panic!("{:?}", heard.0) };
        assert_eq!(e.promise.as_ref(), Some(promise));
        // At the first look with an interval (8 rounds of 0.1 s): about 200 rounds fit in
        // 20 s, and 1.4 % paired noise gives ±(2.7 × 1.02 × 1.4 %/√200) ≈ ±0.3 % by then.
        assert_eq!(promise.after_rounds, 8);
        assert!((180..=210).contains(&promise.rounds), "{promise:?}");
        assert!((0.0008..0.006).contains(&promise.resolution), "{promise:?}");
        assert!(promise.detectable > promise.resolution);
        let none = run_experiment(&plan(2, Settings::default()), machine, &mut Quiet).unwrap();
        assert_eq!(none.promise, None, "no budget, no promise");

        // Heavy-tailed noise and a margin no experiment reaches: it runs to the deadline,
        // and its interval there is no wider than promised (read off the first look's
        // interval; a normal model of the robust σ promised 1.3–1.6× too narrow on real
        // runs, scripts/eval-budget). The promise errs wide: 10 rounds' signed-rank
        // interval is wider than its normal approximation (0.46× here, 0.4–0.8× on real
        // runs).
        let tight = Settings { max_time_s: 20.0, budget_s: Some(20.0), threshold: 0.0002, ..Settings::default() };
        let tails = Noise { run_sigma: 0.01, tail_df: 3.0, ..Noise::none() };
        let e = run_experiment(&plan(2, tight), &mut Simulated::new(5, vec![0.05, 0.05], tails), &mut Quiet).unwrap();
        let (c, promise) = (wall(&e), e.promise.clone().expect("a promise"));
        assert_eq!((e.stop_reason, c.verdict), (StopReason::MaxTime, Verdict::Inconclusive), "{c:?}");
        let half = (c.ci_high.ln() - c.ci_low.ln()) / 2.0;
        assert!((0.3..1.3).contains(&(half / promise.resolution)), "{half} against {promise:?}");
    }

    /// A machine alternating every 25 rounds between a quiet speed (0.2 % run noise) and
    /// a 20 % slower, noisy one (3 %): most rounds agree closely, the busy ones do not.
    fn two_speeds(rounds: usize) -> crate::executor::replay::Trace {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut normal = || -> f64 { (0..12).map(|_| rng.gen::<f64>()).sum::<f64>() - 6.0 };
        let runs = (0..2 * rounds)
            .map(|i| {
                let busy = (i / 2 / 25) % 2 == 1;
                let (speed, sigma) = if busy { (1.2, 0.03) } else { (1.0, 0.002) };
                let wall_s = 0.05 * speed * (sigma * normal()).exp();
                crate::executor::replay::TraceRun { round: (i / 2) as u32, wall_s, cpu_s: wall_s, runq_s: Some(0.0) }
            })
            .collect();
        crate::executor::replay::Trace { name: "two speeds".into(), header: vec![], runs, duration_s: None }
    }

    #[test]
    fn rounds_of_two_speeds_choose_the_median_from_the_pilot_look_on_and_decide_sooner() {
        use crate::executor::replay::Replay;
        let trace = std::sync::Arc::new(two_speeds(2000));
        let (mut piloted, mut median, mut adaptive_rounds, mut hl_rounds) = (0, 0, 0, 0);
        for seed in 1..=12 {
            let mut rounds = [0u32; 2];
            for (k, estimator) in [None, Some(perflab_model::Estimator::HodgesLehmann)].into_iter().enumerate() {
                let by_shape = estimator.is_none();
                let plan = plan(2, Settings { estimator, estimator_by_shape: by_shape, ..Settings::default() });
                let mut machine = Replay::with_blocks(trace.clone(), seed, vec![1.0, 1.0], 100);
                let e = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
                assert_eq!(wall(&e).verdict, Verdict::Equivalent, "seed {seed}, {estimator:?}");
                let how = e.estimation.as_ref().unwrap();
                if estimator.is_none() && e.rounds >= 22 {
                    // Looks at 6, 8, 10, 12, 15, 18, 22: the pilot is the first with ≥ 20
                    // rounds; later looks may choose again.
                    assert!(how.how == "shape" && how.from_round >= 22, "seed {seed}: {how:?}");
                    // 22 rounds within one phase show no mixture: Hodges–Lehmann stays.
                    if how.estimator == perflab_model::Estimator::Median {
                        assert!(wall(&e).flags.iter().any(|f| f.starts_with("estimated by the median")));
                        median += 1;
                    }
                } else if estimator.is_none() {
                    // Decided in a quiet spell before the pilot look: nothing to choose.
                    assert_eq!(how.how, "default");
                } else {
                    assert_eq!(how.how, "asked");
                }
                rounds[k] = e.rounds;
            }
            if rounds[0] >= 22 {
                piloted += 1;
                adaptive_rounds += rounds[0];
                hl_rounds += rounds[1];
            }
        }
        assert!(piloted >= 4 && median * 3 >= piloted * 2, "{median} of {piloted} chose the median at the pilot look");
        // Those that reached the pilot needed 80 % of Hodges–Lehmann's rounds (252 vs 317
        // with these seeds): the shape, not luck, since every seed replays the same runs.
        assert!(adaptive_rounds * 10 < hl_rounds * 9, "{adaptive_rounds} vs {hl_rounds} rounds");
    }
}
