//! What an experiment's runs say: per-command summaries, every metric's comparison at
//! the level of the final look (counters Bonferroni-corrected), the count-vs-time
//! cross-check, and warnings about the measurement itself.

pub(crate) mod copies;
pub(crate) mod crosscheck;
pub mod design;
pub mod explain;
pub mod layouts;
pub(crate) mod multiplicity;
pub mod noise;
pub(crate) mod printed;
pub mod stat;
pub mod verdict;

use crate::measure::Mode;
use crate::plan::Plan;
use perflab_model::units::format_value;
use perflab_model::{metric, CommandResult, Comparison, Experiment, Verdict, Warning, WarningKind};
use perflab_stats::{changepoint, summary};
use perflab_sys::spawn::contention;

/// Candidates are compared against the first command on every deciding metric; the
/// family-wise error rate is split evenly over those comparisons (Bonferroni), so the
/// level per comparison is 1 − α_look/(candidates · deciding metrics).
fn per_comparison_level(plan: &Plan, experiment: &Experiment, look_level: f64) -> f64 {
    let candidates = plan.candidates().max(1);
    let family = candidates * deciding_metrics(plan, experiment).len().max(1);
    1.0 - (1.0 - look_level) / family as f64
}

/// The metrics whose verdicts decide when to stop: the primary one, and with
/// `--iterations each` its iteration groups (`NAME[first]`, `NAME[steady]`), so that every
/// group gets its verdict.
pub(crate) fn deciding_metrics(plan: &Plan, experiment: &Experiment) -> Vec<String> {
    let primary = experiment.primary_metric.clone();
    let groups = plan.settings.iterations.group_names(&primary);
    let mut out = vec![primary];
    out.extend(groups.into_iter().filter(|g| plan.metrics.contains(g)));
    out
}

/// The deciding metrics' comparisons at a look of level `look_level`.
pub fn primary_comparisons(plan: &Plan, experiment: &Experiment, look_level: f64) -> Vec<Comparison> {
    let level = per_comparison_level(plan, experiment, look_level);
    if plan.layouts.is_some() {
        return deciding_metrics(plan, experiment)
            .iter()
            .flat_map(|metric| layouts::comparisons(plan, experiment, metric, level))
            .collect();
    }
    let base = &experiment.commands[0];
    let mut out = Vec::new();
    for cand in &experiment.commands[1..] {
        for metric in deciding_metrics(plan, experiment) {
            let estimator = noise::estimator_of(plan, experiment, &metric);
            out.push(verdict::compare_estimated(base, cand, &metric, level, &plan.settings, estimator));
        }
    }
    out
}

/// A machine where runs spend this share of their wall time waiting for a CPU a
/// neighbour held is busy: the neighbours' share of wall time would dominate the noise.
pub const BUSY_SHARE: f64 = 0.05;

/// When the machine became busy enough to decide on `uncontended_s`: the round of the
/// look that switched, and the share of wall time the runs since the previous look
/// waited behind neighbours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Switch {
    /// The round of the look that switched.
    pub round: u32,
    /// The first round of the runs the look examined.
    pub(crate) since_round: u32,
    /// Share of wall time the runs since the previous look waited behind neighbours (0–1).
    pub share: f64,
}

/// At a look after `rounds` rounds, the previous one at `previous` (0 for the first): with
/// `auto_primary`, switch from `wall_s` to `uncontended_s` when the runs since the
/// previous look — or all runs so far — waited behind neighbours for at least
/// [`BUSY_SHARE`] of their wall time. Only waits enter the choice, never an interval or
/// the compared values, so it cannot steer which metric looks decisive; a later switch
/// spends only what the earlier looks left of α (docs/statistics.md). Returns the switch
/// when this look made it.
pub(crate) fn examine_busy(plan: &Plan, experiment: &mut Experiment, previous: u32, rounds: u32) -> Option<Switch> {
    let switchable = plan.auto_primary
        && plan.commands.len() >= 2
        && plan.measure.mode != Mode::Instructions
        && experiment.primary_metric == metric::WALL;
    if !switchable {
        return None;
    }
    let runs = || experiment.commands.iter().flat_map(|c| &c.runs);
    if !runs().all(|r| r.metric(metric::UNCONTENDED).is_some()) {
        return None;
    }
    let recent = contention::busy_share(runs().filter(|r| r.round >= previous))?;
    let all = contention::busy_share(runs()).unwrap_or(0.0);
    if recent.max(all) < BUSY_SHARE {
        return None;
    }
    experiment.primary_metric = metric::UNCONTENDED.to_string();
    Some(Switch { round: rounds, since_round: previous, share: recent })
}

/// The warning about a busy machine at the end: which metric decided and why, from the
/// switch (if a look made one) and the share over all runs; none on a quiet machine.
pub(crate) fn busy_warning(plan: &Plan, experiment: &Experiment, switch: Option<Switch>) -> Option<Warning> {
    let runs = || experiment.commands.iter().flat_map(|c| &c.runs);
    let share = contention::busy_share(runs())?;
    let busy = format!("the machine was busy: {:.0} % of wall time was waiting for a CPU", share * 100.0);
    let message = match switch {
        Some(s) if s.since_round == 0 => {
            format!("{busy}; deciding on uncontended_s (wall time minus that wait; --metric wall_s decides on wall time)")
        }
        Some(s) => format!(
            "{busy}; deciding on uncontended_s from round {} on, when {:.0} % of the runs' wall time since round {} was (wall time minus that wait; the looks before decided on wall_s and spent their part of α, which uncontended_s does not spend again; --metric wall_s decides on wall time)",
            s.round,
            s.share * 100.0,
            s.since_round + 1
        ),
        None if share < BUSY_SHARE || plan.measure.mode == Mode::Instructions => return None,
        None if plan.commands.len() < 2 => format!("{busy} (uncontended_s is wall time without that wait)"),
        None if !plan.auto_primary => {
            let primary = &experiment.primary_metric;
            // Wall time gives way to uncontended time only when nobody chose; a metric the
            // commands print decides because they print it, whether or not it was named.
            let printed = !metric::kind(primary).is_harness()
                && (crate::measure::output_names(&plan.measure).contains(primary)
                    || crate::measure::output_names_discovered(&plan.measure));
            if printed {
                format!("{busy}; deciding on {primary}, which the commands print themselves: their own timings include that wait (--metric uncontended_s decides on wall time without it)")
            } else if primary == metric::UNCONTENDED {
                format!("{busy}; deciding on {primary} as asked")
            } else {
                format!("{busy}; deciding on {primary} as asked (--metric uncontended_s removes the wait)")
            }
        }
        None if !runs().all(|r| r.metric(metric::UNCONTENDED).is_some()) => {
            format!("{busy}; deciding on wall_s: some runs have no uncontended time (see `not supported here`)")
        }
        None => format!(
            "{busy}, after the last look; the verdict was decided on {} (--metric uncontended_s removes the wait)",
            experiment.primary_metric
        ),
    };
    Some(Warning::new(WarningKind::Busy, message))
}

/// Summaries, every metric's comparisons at the final level, and warnings.
pub fn finish(plan: &Plan, experiment: &mut Experiment, look_level: f64) {
    let level = per_comparison_level(plan, experiment, look_level);
    for command in &mut experiment.commands {
        for name in metric::ALL.iter().chain(&metric::CONTENTION).map(|s| s.to_string()).chain(plan.metrics.clone()) {
            let values: Vec<f64> = command.runs.iter().filter_map(|r| r.metric(&name)).collect();
            if !values.is_empty() {
                command.summary.insert(name, summary::summarize(&values));
            }
        }
    }
    let deciding = deciding_metrics(plan, experiment);
    let counters: Vec<String> =
        multiplicity::corrected_metrics(plan, experiment).into_iter().filter(|m| !deciding.contains(m)).collect();
    let secondary_level = multiplicity::secondary_confidence(look_level, plan.commands.len() - 1, counters.len());
    let mut compared = plan.metrics.clone();
    if !compared.contains(&experiment.primary_metric) {
        compared.insert(1.min(compared.len()), experiment.primary_metric.clone());
    }
    let estimators: Vec<_> = compared.iter().map(|name| noise::estimator_of(plan, experiment, name)).collect();
    if plan.layouts.is_some() {
        // Versions, not binaries, are compared: each across its layouts.
        for name in &compared {
            let level = if counters.contains(name) { secondary_level } else { level };
            let found = layouts::comparisons(plan, experiment, name, level);
            let shown =
                found.into_iter().filter(|c| c.verdict != Verdict::NotComparable || *name == experiment.primary_metric);
            experiment.comparisons.extend(shown);
        }
    } else if let Some((base, candidates)) = experiment.commands.split_first() {
        for cand in candidates {
            for (name, &estimator) in compared.iter().zip(&estimators) {
                let level = if counters.contains(name) { secondary_level } else { level };
                let c = verdict::compare_estimated(base, cand, name, level, &plan.settings, estimator);
                // A metric neither command has (a counter this machine cannot read) is
                // listed as unsupported, not as a comparison; the primary always shows.
                let anywhere = |r: &CommandResult| r.runs.iter().any(|run| run.metric(name).is_some());
                if c.verdict != Verdict::NotComparable
                    || *name == experiment.primary_metric
                    || anywhere(base)
                    || anywhere(cand)
                {
                    experiment.comparisons.push(c);
                }
            }
        }
    }
    crosscheck::cross_check(&mut experiment.comparisons);
    experiment.design = design::analyze(plan, experiment, look_level);
    experiment.layouts = layouts::analyze(plan, experiment, level);
    if let Some(analysis) = &experiment.layouts {
        experiment.environment.extend(layouts::facts(plan, analysis));
        experiment.warnings.extend(layouts::warnings(plan, analysis));
    }
    // How busy the machine was, for history and reports that compare sessions (read
    // back without the runs).
    if let Some(share) = contention::busy_share(experiment.commands.iter().flat_map(|c| &c.runs)) {
        experiment.environment.insert(contention::BUSY_FACT.to_string(), format!("{share:.4}"));
    }
    let client = client_cpu(plan, experiment);
    if plan.measure.explain.is_some() {
        explain_comparisons(plan, experiment, level);
    }
    experiment.warnings.extend(not_comparable_warnings(&experiment.comparisons));
    experiment.warnings.extend(warnings(plan, experiment));
    experiment.warnings.extend(client);
    experiment.warnings.extend(printed::several_matches(plan, experiment));
}

/// Failed runs that `--ignore-failure` kept: per command, how many and how they ended.
/// Their values are in the statistics. (Without it the first failure stops the
/// experiment and is its failure.)
fn failed_runs(experiment: &Experiment) -> Vec<Warning> {
    let mut out = Vec::new();
    for command in &experiment.commands {
        let failed: Vec<String> =
            command.runs.iter().filter(|r| !r.exit.success()).map(|r| r.exit.describe()).collect();
        if failed.is_empty() {
            continue;
        }
        let mut ends: Vec<(String, usize)> = Vec::new();
        for end in failed.iter() {
            match ends.iter_mut().find(|(e, _)| e == end) {
                Some((_, n)) => *n += 1,
                None => ends.push((end.clone(), 1)),
            }
        }
        let how = ends.iter().map(|(end, n)| format!("{end} ×{n}")).collect::<Vec<_>>().join(", ");
        out.push(Warning::new(
            WarningKind::Failures,
            format!(
                "`{}` failed in {} of {} runs ({how}); --ignore-failure kept them, and their values are in the statistics",
                command.name,
                failed.len(),
                command.runs.len()
            ),
        ));
    }
    out
}

/// Output formats of clients: their command measures the client, and a server's work is
/// elsewhere.
const CLIENT_FORMATS: [&str; 1] = ["pgbench"];

/// With a client's output parsed (a server A/B through pgbench), `cpu_s` is the client's
/// CPU time: say so, on the comparison and as a warning.
fn client_cpu(plan: &Plan, experiment: &mut Experiment) -> Option<Warning> {
    let client = plan
        .measure
        .output
        .iter()
        .map(|p| p.describe())
        .find(|d| CLIENT_FORMATS.contains(&d.as_str()))
        .or_else(|| printed::client_program(plan))?;
    let note = format!("the client's CPU time ({client}'s), not the server's");
    let mut compared = false;
    for c in experiment.comparisons.iter_mut().filter(|c| c.metric == metric::CPU) {
        c.flags.push(note.clone());
        compared = true;
    }
    compared.then(|| {
        Warning::new(
            WarningKind::Scope,
            format!(
                "cpu_s is {note}: the command measured is the client, and the server's CPU is not in it (measure the server with `perflab profile -p PID` or its own statistics)"
            ),
        )
    })
}

/// A warning for every comparison that gave no ratio, or skipped rounds to give one:
/// a dropped metric must never pass silently (a gate on it would pass).
fn not_comparable_warnings(comparisons: &[Comparison]) -> Vec<Warning> {
    comparisons
        .iter()
        .filter(|c| c.verdict == Verdict::NotComparable || c.flags.iter().any(|f| f.contains("rounds skipped")))
        .map(|c| {
            let why = c.flags.iter().find(|f| c.verdict == Verdict::NotComparable || f.contains("rounds skipped"));
            let what = if c.verdict == Verdict::NotComparable { "not comparable" } else { "compared on fewer rounds" };
            Warning::new(
                WarningKind::NotComparable,
                format!(
                    "{} of `{}` vs `{}` {what}: {}",
                    c.metric,
                    c.candidate,
                    c.baseline,
                    why.map_or("", String::as_str)
                ),
            )
        })
        .collect()
}

/// The explanation of every candidate at `level` (`compare --explain`): versions in
/// several layouts are explained as versions, each the mean of its layouts per round,
/// every row then also across layouts.
fn explanations(plan: &Plan, experiment: &Experiment, level: f64) -> Vec<(String, Option<perflab_model::Explanation>)> {
    let options = explain::Options {
        confidence: plan.settings.confidence,
        comparison_level: level,
        threshold: plan.settings.threshold,
    };
    let primary = &experiment.primary_metric;
    let merged = plan.layouts.as_ref().map(|l| explain::layouts::merged(l, &experiment.commands));
    let Some((base, candidates)) = merged.as_deref().unwrap_or(&experiment.commands).split_first() else {
        return Vec::new();
    };
    candidates
        .iter()
        .enumerate()
        .map(|(i, cand)| {
            let mut explanation = explain::explain(base, cand, primary, &options);
            if let (Some(layouts), Some(e)) = (&plan.layouts, &mut explanation) {
                explain::layouts::add_across_layouts(e, layouts, &experiment.commands, i + 1);
            }
            (cand.name.clone(), explanation)
        })
        .collect()
}

/// At a look after the verdict (`compare --explain`): the rows that carry a change but
/// are not decided yet, `candidate: function` when there are several candidates; and
/// those of them short of samples (with their samples per run).
pub(crate) fn undecided_explanations(plan: &Plan, experiment: &Experiment, level: f64) -> Undecided {
    let all = explanations(plan, experiment, level);
    let several = all.len() > 1;
    let label = |candidate: &str, name: String| if several { format!("{candidate}: {name}") } else { name };
    let mut undecided = Undecided::default();
    for (candidate, e) in &all {
        let Some(e) = e else { continue };
        undecided.rows.extend(explain::undecided_carriers(e).into_iter().map(|n| label(candidate, n)));
        undecided
            .short
            .extend(explain::carriers_short_of_samples(e).into_iter().map(|(n, s)| (label(candidate, n), s)));
    }
    undecided
}

/// See [`undecided_explanations`].
#[derive(Debug, Default)]
pub(crate) struct Undecided {
    pub rows: Vec<String>,
    pub short: Vec<(String, f64)>,
}

/// Each primary comparison explained function by function from its runs' samples
/// (`compare --explain`), at the comparison's level of the final look.
fn explain_comparisons(plan: &Plan, experiment: &mut Experiment, level: f64) {
    let primary = experiment.primary_metric.clone();
    let merged = plan.layouts.as_ref().map(|l| explain::layouts::merged(l, &experiment.commands));
    let Some((base, candidates)) = merged.as_deref().unwrap_or(&experiment.commands).split_first() else { return };
    let explanations = explanations(plan, experiment, level);
    for (candidate, explanation) in explanations {
        let comparison = experiment.comparisons.iter_mut().find(|c| c.metric == primary && c.candidate == candidate);
        match (comparison, explanation) {
            (Some(c), Some(mut e)) => {
                if let Some(cand) = candidates.iter().find(|c| c.name == candidate) {
                    let (baseline, candidate) = explain::mean_stacks(base, cand);
                    if !baseline.is_empty() || !candidate.is_empty() {
                        e.stacks = Some(perflab_model::MeanStacks { baseline, candidate });
                    }
                }
                c.explanation = Some(Box::new(e))
            }
            (_, None) => experiment.warnings.push(Warning::new(
                WarningKind::Other,
                format!("--explain: no round has samples of both `{}` and `{candidate}`", base.name),
            )),
            _ => {}
        }
    }
}

/// Process creation and exec cost ~0.1 ms (a static binary) to ~0.5 ms (a dynamic one)
/// here; runs of at least 20× that keep it under 5 % of what is measured.
const SHORT_RUN_S: f64 = 0.010;
/// Paired run-to-run spread (robust, of ln ratios) above which results need many rounds.
const NOISY_SPREAD: f64 = 0.05;

/// Warnings about the primary metric's runs: process creation dominating short ones
/// (unless the commands time themselves), shifts during the measurement, noise.
/// One warning per reason for the counters no run of any command could read (a
/// hardware event on a machine without a PMU): the table shows `<not supported>`, and the
/// warning says that the experiment went on without them.
fn unread_counters(experiment: &Experiment) -> Vec<Warning> {
    let runs = || experiment.commands.iter().flat_map(|c| &c.runs);
    let mut by_reason: std::collections::BTreeMap<String, Vec<&str>> = std::collections::BTreeMap::new();
    let mut names: Vec<&str> = runs().flat_map(|r| r.counters.keys().map(String::as_str)).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let mut readings = runs().filter_map(|r| r.counters.get(name));
        // A derived rate (`ipc`) is unread because an input is, and that input is named.
        if readings.clone().any(|reading| reading.supported) || perflab_sys::perf::counters::is_derived(name) {
            continue;
        }
        // An iteration's number was never a measurement to be read.
        if readings.clone().any(|r| r.reason.as_deref() == Some(crate::measure::output::INDEX_REASON)) {
            continue;
        }
        let reason = readings.find_map(|reading| reading.reason.clone()).unwrap_or_else(|| "no reason given".into());
        by_reason.entry(reason).or_default().push(name);
    }
    by_reason
        .into_iter()
        .map(|(reason, names)| {
            let names = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
            Warning::new(WarningKind::Unsupported, format!("{names} not counted, measured without: {reason}"))
        })
        .collect()
}

/// Printed metrics some run printed [`SAMPLES_KEPT`] or more values of: each run's value
/// is still made from all of them, but only the first are kept as its samples.
fn capped_samples(experiment: &Experiment) -> Vec<Warning> {
    use perflab_model::SAMPLES_KEPT;
    let mut names: Vec<&str> = Vec::new();
    for run in experiment.commands.iter().flat_map(|c| &c.runs) {
        for (name, reading) in &run.counters {
            if reading.samples.len() >= SAMPLES_KEPT && !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            Warning::new(
                WarningKind::Other,
                format!(
                    "`{name}`: runs printed {SAMPLES_KEPT} values or more; each run's value is made from every one, but only the first {SAMPLES_KEPT} are kept as its per-iteration samples (the iteration table and the stored samples stop there)"
                ),
            )
        })
        .collect()
}

fn warnings(plan: &Plan, experiment: &Experiment) -> Vec<Warning> {
    let mut out = if plan.ignore_failure { failed_runs(experiment) } else { Vec::new() };
    if let Some(fake) = experiment.environment.get("fake_pmu") {
        out.push(Warning::new(WarningKind::Other, format!("{fake}: not a measurement of this CPU")));
    }
    out.extend(unread_counters(experiment));
    out.extend(capped_samples(experiment));
    out.extend(crate::measure::probe_cost::warnings(experiment));
    out.extend(crate::measure::probe_cost::silent(experiment));
    if plan.measure.mode == Mode::Instructions {
        return out;
    }
    let primary = experiment.primary_metric.as_str();
    let self_timed = plan.printed_metrics().iter().any(|m| m == primary);
    let what = if primary == metric::WALL { "wall time" } else { primary };
    for command in &experiment.commands {
        let walls: Vec<f64> = command.runs.iter().map(|r| r.wall_s).collect();
        if walls.is_empty() {
            continue;
        }
        let median = summary::median(&walls);
        if median < SHORT_RUN_S && !self_timed {
            out.push(Warning::new(
                WarningKind::ShortRun,
                format!(
                    // In milliseconds, whatever the run's time: the threshold and the cost
                    // it is set by are milliseconds, and a table's `-u` unit must not meet a
                    // µs or s in the warnings that follow it.
                    "`{}` runs for only {:.2} ms: process creation and exec (~0.1–0.5 ms) are a sizeable part of that; measure a longer workload (≥ {} ms)",
                    command.name,
                    median * 1e3,
                    SHORT_RUN_S * 1e3
                ),
            ));
        }
        let values: Vec<f64> = command.runs.iter().filter_map(|r| r.metric(primary)).collect();
        let shifts = changepoint::detect(&values, &changepoint::ChangePointConfig::default());
        if let Some(largest) = shifts.iter().max_by(|a, b| a.ratio.ln().abs().total_cmp(&b.ratio.ln().abs())) {
            out.push(Warning::new(
                WarningKind::Unstable,
                format!(
                    "`{}` was not stable: its {what} shifted {} time{} during the measurement (largest {:+.1} % at run {}, median {} → {}); pairing within rounds absorbs slow drift, but a quieter machine narrows the interval",
                    command.name,
                    shifts.len(),
                    if shifts.len() == 1 { "" } else { "s" },
                    (largest.ratio - 1.0) * 100.0,
                    largest.index + 1,
                    format_value(primary, largest.before),
                    format_value(primary, largest.after)
                ),
            ));
        }
    }
    // Layouts of one version differ by design: their spread is reported by the layouts'
    // analysis, not as noise between binaries.
    let paired = if plan.layouts.is_some() { None } else { experiment.commands.split_first() };
    if let Some((base, candidates)) = paired {
        for cand in candidates {
            let (b, c) = verdict::pairs(base, cand, primary);
            let d: Vec<f64> =
                b.iter().zip(&c).filter(|(b, c)| **b > 0.0 && **c > 0.0).map(|(b, c)| (c / b).ln()).collect();
            if d.len() >= 6 {
                let spread = summary::mad_scaled(&d);
                if spread > NOISY_SPREAD {
                    out.push(Warning::new(
                        WarningKind::Noisy,
                        format!(
                            "noisy: `{}` vs `{}` varies by {:.1} % from round to round (robust σ of the paired ratio); expect wide intervals — quiet the machine or lengthen the runs",
                            cand.name,
                            base.name,
                            spread * 100.0
                        ),
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod busy_tests {
    use super::*;
    use crate::measure::output::Parser;
    use crate::measure::MeasureOptions;
    use crate::plan::Compared;
    use perflab_model::{CommandSpec, CounterReading, Run, Settings};

    /// Two commands whose every run waited 30 % of its wall time behind a neighbour.
    fn busy(plan_metrics: Compared, measure: MeasureOptions) -> (Plan, Experiment) {
        let commands: Vec<CommandSpec> =
            ["a", "b"].iter().map(|n| CommandSpec { name: n.to_string(), ..CommandSpec::default() }).collect();
        let plan = Plan::new(commands.clone(), Settings::default(), measure, plan_metrics);
        let runs = || {
            (0..4)
                .map(|_| {
                    let mut run = Run { wall_s: 0.1, ..Run::default() };
                    run.counters.insert(metric::NEIGHBOUR_WAIT.into(), CounterReading::value(0.03, false));
                    run
                })
                .collect()
        };
        let results =
            commands.iter().map(|c| CommandResult { name: c.name.clone(), runs: runs(), ..CommandResult::default() });
        let experiment = Experiment {
            commands: results.collect(),
            primary_metric: plan.primary_metric.clone(),
            ..Experiment::default()
        };
        (plan, experiment)
    }

    #[test]
    fn a_metric_the_commands_print_is_not_said_to_be_asked_for() {
        let parser = Parser::regex(r"t=(?<t_ms>[0-9.]+)").unwrap();
        let measure = MeasureOptions { output: vec![parser], ..MeasureOptions::default() };
        let compared = crate::plan::compared_metrics(&[], &measure).unwrap();
        let (plan, experiment) = busy(compared, measure);
        let message = busy_warning(&plan, &experiment, None).unwrap().message;
        assert_eq!(
            message,
            "the machine was busy: 30 % of wall time was waiting for a CPU; deciding on t_ms, which the commands print themselves: their own timings include that wait (--metric uncontended_s decides on wall time without it)"
        );
    }

    #[test]
    fn a_metric_named_with_metric_is_said_to_be_asked_for() {
        let compared = crate::plan::compared_metrics(&["cpu_s".into()], &MeasureOptions::default()).unwrap();
        let (plan, experiment) = busy(compared, MeasureOptions::default());
        let message = busy_warning(&plan, &experiment, None).unwrap().message;
        assert!(message.ends_with("deciding on cpu_s as asked (--metric uncontended_s removes the wait)"), "{message}");
    }
}
