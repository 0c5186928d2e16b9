//! `perflab history`: each benchmark's metric over labels (in stored order), per
//! machine, with sparklines, median and CI per label, the change from the previous label,
//! and the change points where a shift began. [`build`] is also what the HTML report
//! draws its history lines from.

pub mod controls;
pub mod matrix;
pub mod pair;
pub mod ratio;
pub mod sessions;

use crate::StoredExperiment;
use pair::MetricChoice;
use perflab_model::Machine;
use perflab_stats::changepoint::{ChangePointConfig, Detector};
use ratio::Ratio;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;

/// A metric's history, per machine (never mixed across machine fingerprints).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct History {
    /// The metric followed.
    pub metric: String,
    /// Why `metric` was followed when none was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric_note: Option<String>,
    /// The incomplete experiments (a run killed or stopped mid-way) left out of the
    /// pooled points, said ([`leave_out_incomplete`]); None when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
    /// One history per machine fingerprint.
    pub machines: Vec<MachineHistory>,
    /// Two labels compared on every machine side by side (when asked for, or when the
    /// results come from several machines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrix: Option<matrix::Matrix>,
}

/// Take the incomplete experiments (fewer runs than planned: killed, interrupted or
/// stopped by a failing command before the end) out of `experiments`, so no pooled point
/// or interval mixes them with complete ones; returns what was left out, said in one
/// line (with each one's successful runs of `metric_name`), or None. `history` and `report` do this unless `--include-incomplete`, and then
/// mark the points they are in as incomplete.
pub fn leave_out_incomplete(experiments: &mut Vec<StoredExperiment>, metric_name: &str) -> Option<String> {
    let mut left: Vec<String> = Vec::new();
    let mut count = 0;
    experiments.retain(|e| {
        if e.complete {
            return true;
        }
        count += 1;
        if left.len() < 3 {
            let runs = measured_values(e, metric_name).len();
            left.push(format!(
                "`{}` at `{}` ({runs} run{})",
                perflab_sys::text::escape(&e.benchmark),
                perflab_sys::text::escape(&e.label),
                if runs == 1 { "" } else { "s" }
            ));
        }
        false
    });
    (count > 0).then(|| {
        let more = if count > left.len() { format!(" and {} more", count - left.len()) } else { String::new() };
        format!(
            "left out {count} incomplete experiment{} (stopped before all its runs: killed, interrupted or a command failed): {}{more}; --include-incomplete pools {}, marked (incomplete)",
            if count == 1 { "" } else { "s" },
            left.join(", "),
            if count == 1 { "it" } else { "them" }
        )
    })
}

/// The metric's values of the successful runs of an experiment's measured (last)
/// command: what a label's point pools (from the lean read's sample, when it has one).
pub fn measured_values<'a>(e: &'a StoredExperiment, metric_name: &str) -> Cow<'a, [f64]> {
    match &e.sample {
        Some(sample) if &*sample.metric == metric_name => Cow::Borrowed(&sample.values),
        _ => Cow::Owned(e.experiment.commands.last().map_or_else(Vec::new, |measured| measured.values(metric_name))),
    }
}

/// The history of one machine.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MachineHistory {
    /// The machine's fingerprint.
    pub fingerprint: String,
    /// One line naming the machine (`Machine::describe`).
    pub description: String,
    /// The machine.
    pub machine: Machine,
    /// Its benchmarks, each over the labels.
    pub benchmarks: Vec<BenchmarkHistory>,
    /// Labels whose experiment found a build slower than its baseline build and stored
    /// why (`run --profile-changes`), in stored order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explained: Vec<ExplainedRegression>,
    /// The check of the newest label against its predecessor: the benchmarks it compares
    /// share the run's confidence, as `run`'s do (None when no benchmark has both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<StepFamily>,
}

/// The benchmarks of one machine whose history compares a label with the one before it:
/// a family, as the benchmarks of one `run --baseline` are (crates/suite's `family`:
/// Bonferroni), so that the chance of any false step anywhere in the check stays below
/// 1 − [`ratio::CONFIDENCE`] — not 5 % per benchmark.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepFamily {
    /// The label checked.
    pub label: String,
    /// Benchmarks that compare it with their previous label.
    pub size: usize,
    /// Each comparison's level: 1 − (1 − 0.95) / size.
    pub per_benchmark: f64,
}

/// Each of `size` comparisons' level so that all hold together at 95 %: suite::family's
/// rule, repeated here because the store sits below the suite crate.
pub fn family_level(size: usize) -> f64 {
    1.0 - (1.0 - ratio::CONFIDENCE) / size.max(1) as f64
}

/// A benchmark found slower than its baseline build under a label, with the stored
/// per-function explanation (its flame graph left out: the report draws it).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExplainedRegression {
    /// The benchmark's name.
    pub benchmark: String,
    /// The label it was measured under.
    pub label: String,
    /// The primary metric's comparison with its explanation (stacks left out).
    pub comparison: perflab_model::Comparison,
}

/// The regressions of `experiments` explained function by function.
fn explained_regressions(experiments: &[&StoredExperiment]) -> Vec<ExplainedRegression> {
    let mut out = Vec::new();
    for e in experiments {
        let slower = e.experiment.comparisons.iter().find(|c| {
            c.metric == e.experiment.primary_metric
                && c.verdict == perflab_model::Verdict::Slower
                && !c.below_threshold
                && c.explanation.is_some()
        });
        if let Some(c) = slower {
            let mut comparison = c.clone();
            if let Some(explanation) = comparison.explanation.as_mut() {
                explanation.stacks = None;
                explanation.stored_flame_graph = None;
            }
            out.push(ExplainedRegression { benchmark: e.benchmark.clone(), label: e.label.clone(), comparison });
        }
    }
    out
}

/// One benchmark's series over the labels.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BenchmarkHistory {
    /// The benchmark's name.
    pub name: String,
    /// One point per label, in stored label order.
    pub points: Vec<Point>,
    /// Where the series shifts, in label order.
    pub change_points: Vec<Shift>,
}

/// The metric of one benchmark under one label: all runs of the measured command
/// (the last command of each experiment) pooled.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Point {
    /// The label.
    pub label: String,
    /// Runs pooled.
    pub n: usize,
    /// Median of the metric over them.
    pub median: f64,
    /// 95 % distribution-free interval of the median (None for fewer than 6 runs).
    pub median_ci: Option<(f64, f64)>,
    /// True when some of these runs come from an experiment that did not finish.
    pub incomplete: bool,
    /// Sessions (experiments) the label's runs come from.
    pub sessions: usize,
    /// The share of the sessions' wall time their runs waited behind neighbours (their
    /// mean); ≥ 5 %: measured on a busy machine. None when not recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_share: Option<f64>,
    /// This label against the previous one: the pair's one record ([`pair::pair_comparison`]:
    /// paired rounds when both were measured in one session, else session against session
    /// with the machine's session-to-session noise); None for the first label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_previous: Option<Ratio>,
}

/// A shift in the series: where the runs of the labels from here on differ from those
/// before (see `stats::changepoint::detect_groups`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Shift {
    /// The first label after the shift.
    pub label: String,
    /// Its index in `points`.
    pub index: usize,
    /// Median of the runs before the shift.
    pub before: f64,
    /// Median of the runs after it.
    pub after: f64,
    /// after / before.
    pub ratio: f64,
    /// 95 % interval of the ratio.
    pub ratio_ci: (f64, f64),
    /// p-value of the test that found the shift.
    pub p_value: f64,
}

/// Whether [`build`] compares each label with the previous one (`Point::vs_previous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    /// Compare every label with the previous one.
    Compare,
    /// For a report that does not show them (100,000 comparisons saved).
    Skip,
}

/// The smallest relative span a chart or sparkline of a history draws (bottom to top, as
/// a fraction of the series' level): twice the ±2.8 % a 95 % interval between two sessions
/// spans at the session-to-session noise of this project's VM (σ ≈ 1 %,
/// docs/statistics.md), so a change inside that noise never fills the height.
pub const MIN_RELATIVE_SPAN: f64 = 0.056;

/// The history of exactly `metric` in `experiments` (as read from the store, oldest label
/// first).
pub fn build<'a>(
    experiments: impl IntoIterator<Item = &'a StoredExperiment>,
    metric_name: &str,
    steps: Steps,
) -> History {
    build_with(experiments, MetricChoice::Asked(metric_name), steps)
}

/// The history of the `choice`n metric (its medians), each label compared with the
/// previous one by the pair's one record.
pub fn build_with<'a>(
    experiments: impl IntoIterator<Item = &'a StoredExperiment>,
    choice: MetricChoice,
    steps: Steps,
) -> History {
    let metric_name = choice.name();
    // Runs pooled per (machine, benchmark, label), in first-seen order.
    struct Pool<'a> {
        label: &'a str,
        incomplete: bool,
        values: Vec<f64>,
    }
    /// A machine's first experiment (for its description) and its benchmarks' pools.
    type MachineGroup<'a> = (&'a StoredExperiment, Vec<(&'a str, Vec<Pool<'a>>)>);
    let mut groups: Vec<MachineGroup> = Vec::new();
    // Each machine's experiments, for its sessions.
    let mut members: Vec<Vec<&StoredExperiment>> = Vec::new();
    // Positions in `groups`, found by key: a report reads 100,000 experiments.
    let mut machine_at: HashMap<&str, usize> = HashMap::new();
    let mut benchmark_at: HashMap<(usize, &str), usize> = HashMap::new();
    let mut pool_at: HashMap<(usize, usize, &str), usize> = HashMap::new();
    // Each benchmark's experiments, for the pairs' records.
    let mut own: HashMap<(usize, usize), Vec<&StoredExperiment>> = HashMap::new();
    for e in experiments {
        let values = measured_values(e, metric_name);
        if values.is_empty() {
            continue;
        }
        let m = *machine_at.entry(&e.machine_fingerprint).or_insert_with(|| {
            groups.push((e, Vec::new()));
            members.push(Vec::new());
            groups.len() - 1
        });
        members[m].push(e);
        let benchmarks = &mut groups[m].1;
        let b = *benchmark_at.entry((m, &e.benchmark)).or_insert_with(|| {
            benchmarks.push((&e.benchmark, Vec::new()));
            benchmarks.len() - 1
        });
        own.entry((m, b)).or_default().push(e);
        let pools = &mut benchmarks[b].1;
        match pool_at.get(&(m, b, e.label.as_str())) {
            Some(&p) => {
                let pool = &mut pools[p];
                pool.incomplete |= !e.complete;
                pool.values.extend_from_slice(&values);
            }
            None => {
                pool_at.insert((m, b, &e.label), pools.len());
                pools.push(Pool { label: &e.label, incomplete: !e.complete, values: values.into_owned() });
            }
        }
    }
    let machines = groups
        .into_iter()
        .zip(members)
        .enumerate()
        .map(|(m, ((first, benchmarks), members))| {
            let explained = explained_regressions(&members);
            let mut seen = std::collections::HashSet::new();
            let mut labels: Vec<String> =
                members.iter().filter(|e| seen.insert(e.label.as_str())).map(|e| e.label.clone()).collect();
            let builds = pair::paired_builds(members.iter().copied(), &labels);
            labels.extend(builds);
            let benchmarks: Vec<(usize, (&str, Vec<Pool>))> = benchmarks.into_iter().enumerate().collect();
            let sessions = sessions::collect(members.iter().copied(), metric_name);
            let noise = sessions::MachineNoise::new(&sessions, ratio::SESSION_PRIOR);
            let by_name: HashMap<&str, &sessions::BenchmarkSessions> =
                sessions.iter().map(|b| (b.benchmark.as_str(), b)).collect();
            // Every step into a label is one check: its benchmarks are a family.
            let mut checked: HashMap<&str, usize> = HashMap::new();
            for (_, (_, pools)) in &benchmarks {
                for p in pools.iter().skip(1) {
                    *checked.entry(p.label).or_default() += 1;
                }
            }
            let newest = benchmarks
                .iter()
                .filter_map(|(_, (_, pools))| pools.last().filter(|_| pools.len() > 1))
                .max_by_key(|p| labels.iter().position(|l| l == p.label));
            let family = newest.filter(|_| steps == Steps::Compare).map(|p| {
                let size = checked.get(p.label).copied().unwrap_or(1);
                StepFamily { label: p.label.to_string(), size, per_benchmark: family_level(size) }
            });
            MachineHistory {
                fingerprint: first.machine_fingerprint.clone(),
                description: first.experiment.machine.describe(&first.machine_fingerprint),
                machine: first.experiment.machine.clone(),
                // A report's thousand benchmarks are independent; each thread keeps one
                // detector, so series of the same shape share the permutation null distributions.
                benchmarks: perflab_sys::parallel::map(&benchmarks, detector, |(b, (name, pools)), detector| {
                    let own_sessions = by_name.get(name).copied();
                    let label = |l: &str| own_sessions.and_then(|b| b.label(l));
                    let experiments = own.get(&(m, *b)).map_or(&[][..], Vec::as_slice);
                    let points: Vec<Point> = pools
                        .iter()
                        .enumerate()
                        .map(|(i, p)| {
                            let (median, median_ci) =
                                perflab_stats::summary::median_and_ci(&p.values, ratio::CONFIDENCE);
                            let vs_previous = i.checked_sub(1).filter(|_| steps == Steps::Compare).and_then(|prev| {
                                let (a, b) = (pools[prev].label, p.label);
                                pair::pair_comparison_at(
                                    experiments,
                                    &labels,
                                    a,
                                    b,
                                    choice,
                                    own_sessions.unwrap_or(&sessions::NO_SESSIONS),
                                    &noise.between(a, b),
                                    family_level(checked.get(b).copied().unwrap_or(1)),
                                )
                            });
                            Point {
                                label: p.label.to_string(),
                                n: p.values.len(),
                                median,
                                median_ci,
                                incomplete: p.incomplete,
                                sessions: label(p.label).map_or(0, |l| l.sessions.len()),
                                busy_share: label(p.label).and_then(|l| l.busy_share),
                                vs_previous,
                            }
                        })
                        .collect();
                    let groups: Vec<&[f64]> = pools.iter().map(|p| p.values.as_slice()).collect();
                    let change_points = shifts(detector, &groups, &points);
                    BenchmarkHistory { name: name.to_string(), points, change_points }
                }),
                explained,
                family,
            }
        })
        .collect();
    History { metric: metric_name.to_string(), metric_note: None, left_out: None, machines, matrix: None }
}

fn detector() -> Detector {
    Detector::new(ChangePointConfig::for_groups())
}

/// Change points between the labels' runs (`groups`, aligned with `points`).
fn shifts(detector: &mut Detector, groups: &[&[f64]], points: &[Point]) -> Vec<Shift> {
    detector
        .detect_groups(groups)
        .into_iter()
        .filter_map(|c| {
            Some(Shift {
                label: points.get(c.index)?.label.clone(),
                index: c.index,
                before: c.before,
                after: c.after,
                ratio: c.ratio,
                ratio_ci: c.ci,
                p_value: c.p_value,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{stored, tenfold_step};
    use perflab_model::ExitInfo;

    #[test]
    fn machines_are_kept_apart_and_labels_pooled() {
        let exps = vec![
            stored("v1", 1, "a", "h1", &[1.0, 2.0, 3.0]),
            stored("v1", 1, "a", "h1", &[4.0, 5.0]),
            stored("v1", 1, "a", "h2", &[9.0]),
            stored("v2", 2, "a", "h1", &[6.0]),
        ];
        let h = build(&exps, "wall_s", Steps::Compare);
        assert_eq!(h.machines.len(), 2);
        let a = &h.machines[0].benchmarks[0];
        assert_eq!(a.points.len(), 2);
        assert_eq!((a.points[0].label.as_str(), a.points[0].n, a.points[0].median), ("v1", 5, 3.0));
        assert_eq!(h.machines[1].benchmarks[0].points[0].median, 9.0);
    }

    #[test]
    fn failed_runs_are_left_out() {
        let mut failing = stored("v1", 1, "a", "h1", &[1.0, 2.0, 100.0]);
        failing.experiment.commands[1].runs[2].exit = ExitInfo { exit_code: Some(1), ..ExitInfo::default() };
        let h = build(&[failing], "wall_s", Steps::Compare);
        let point = &h.machines[0].benchmarks[0].points[0];
        assert_eq!((point.n, point.median), (2, 1.5));
    }

    #[test]
    fn a_step_is_reported_at_the_label_where_it_began() {
        let mut exps = Vec::new();
        for i in 0..16 {
            let level = if i < 9 { 1.0 } else { 1.3 };
            let jitter = ((i * 7919) % 13) as f64 / 1000.0;
            let walls: Vec<f64> = (0..7).map(|k| level + jitter + k as f64 * 1e-4).collect();
            exps.push(stored(&format!("v{i}"), i, "a", "h1", &walls));
        }
        let h = build(&exps, "wall_s", Steps::Compare);
        let shifts = &h.machines[0].benchmarks[0].change_points;
        assert_eq!(shifts.len(), 1, "{shifts:?}");
        assert_eq!(shifts[0].label, "v9");
        assert!((shifts[0].ratio - 1.3).abs() < 0.05, "{shifts:?}");
    }

    /// Issue 41: the check of a label against its predecessor is one family, as a
    /// `run`'s benchmarks are: with 20 benchmarks each step's interval between sessions
    /// is at 99.75 %, wider than one benchmark's 95 % on the same runs.
    #[test]
    fn a_labels_check_shares_the_confidence_among_its_benchmarks() {
        let walls =
            |level: f64, i: usize| -> Vec<f64> { (0..8).map(|k| level + 0.003 * ((i + k) % 5) as f64).collect() };
        let mut exps = Vec::new();
        for b in 0..20 {
            exps.push(stored("v1", 1, &format!("b{b:02}"), "h1", &walls(1.0, b)));
            exps.push(stored("v2", 2, &format!("b{b:02}"), "h1", &walls(1.01, b + 1)));
        }
        let h = build(&exps, "wall_s", Steps::Compare);
        let family = h.machines[0].family.clone().expect("a family");
        assert_eq!((family.label.as_str(), family.size), ("v2", 20));
        assert!((family.per_benchmark - 0.9975).abs() < 1e-12);
        let step = |h: &History| h.machines[0].benchmarks[0].points[1].vs_previous.clone().unwrap();
        let in_family = step(&h);
        assert!((in_family.confidence - 0.9975).abs() < 1e-12, "{in_family:?}");
        let alone = build(&exps[..2], "wall_s", Steps::Compare);
        let alone_step = step(&alone);
        assert_eq!(alone.machines[0].family.as_ref().map(|f| f.size), Some(1));
        assert!((alone_step.confidence - 0.95).abs() < 1e-12);
        assert!(
            in_family.ci_high / in_family.ci_low > alone_step.ci_high / alone_step.ci_low,
            "{in_family:?} vs {alone_step:?}"
        );
        assert_eq!(build(&exps, "wall_s", Steps::Skip).machines[0].family, None, "no steps, no check");
    }

    #[test]
    fn six_labels_of_eight_runs_show_a_tenfold_step_with_its_interval() {
        let h = build(&tenfold_step(), "wall_s", Steps::Compare);
        let bench = &h.machines[0].benchmarks[0];
        assert_eq!(bench.change_points.len(), 1, "{:?}", bench.change_points);
        assert_eq!(bench.change_points[0].label, "v5");
        let step = bench.points[4].vs_previous.as_ref().unwrap();
        assert!(step.significant() && step.ci_low <= step.ratio && step.ratio <= step.ci_high, "{step:?}");
        assert!((step.ratio - 0.0185 / 0.243).abs() < 0.002, "{step:?}");
        let quiet = bench.points[2].vs_previous.as_ref().unwrap();
        assert!(!quiet.significant(), "{quiet:?}");
        // Session against session: the interval carries the session noise (the prior's
        // ±1 % here, too few steps for the history's own), not the 8 runs' ±0.1 %.
        assert!(step.ci_high / step.ci_low > 1.04, "{step:?}");
        assert_eq!(step.method, ratio::CiMethod::Sessions);
    }
}
