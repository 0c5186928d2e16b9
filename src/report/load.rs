//! From stored experiments (or perflab JSON files) to [`ReportData`]: which runs belong
//! to which benchmark and label, the ratio and its interval per benchmark, counters and
//! machines. History points and change points come from [`crate::history::build`], so
//! the page and `perflab history` always agree.

use super::{CiMethod, CounterRow, CounterTable, LabelComparison, MachineGroup, RelativeTime, ReportData};
use crate::error::Failure;
use crate::model::{metric, Comparison, Experiment, Run, StopReason, Verdict};
use crate::store::{self, StoredExperiment};
use crate::usage;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The confidence of every interval the report computes itself.
pub const CONFIDENCE: f64 = 0.95;
/// Equivalence margin used for independent comparisons when the experiments do not
/// record one.
const DEFAULT_THRESHOLD: f64 = 0.01;

/// perflab JSON results (`compare --json`) as stored experiments: each file is one
/// benchmark named after the file, each command one label named after the command
/// (labels ordered as they first appear). A candidate keeps the baseline command and
/// their comparison, so its paired interval is used.
pub fn from_json_files(paths: &[impl AsRef<Path>]) -> Result<Vec<StoredExperiment>, Failure> {
    let mut out = Vec::new();
    let mut label_order: Vec<String> = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| usage!("cannot read {}: {e}", path.display()))?;
        let experiment: Experiment =
            serde_json::from_str(&text).map_err(|e| usage!("{} is not a perflab JSON result: {e}", path.display()))?;
        crate::store::exchange::check_values(&experiment).map_err(|why| usage!("{}: {why}", path.display()))?;
        let benchmark =
            path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
        let fingerprint = store::fingerprint(&experiment.machine);
        for (i, command) in experiment.commands.iter().enumerate() {
            let order = label_order.iter().position(|l| *l == command.name).unwrap_or_else(|| {
                label_order.push(command.name.clone());
                label_order.len() - 1
            });
            let baseline = &experiment.commands[0];
            let comparisons: Vec<Comparison> = experiment
                .comparisons
                .iter()
                .filter(|c| i > 0 && c.baseline == baseline.name && c.candidate == command.name)
                .cloned()
                .collect();
            let commands =
                if comparisons.is_empty() { vec![command.clone()] } else { vec![baseline.clone(), command.clone()] };
            out.push(StoredExperiment {
                id: 0,
                label: command.name.clone(),
                label_order: order as i64,
                benchmark: benchmark.clone(),
                git_commit: None,
                source: "json".into(),
                recorded_at: String::new(),
                machine_fingerprint: fingerprint.clone(),
                complete: true,
                experiment: Experiment { commands, comparisons, ..experiment.clone() },
            });
        }
    }
    Ok(out)
}

fn stopped_early(e: &StoredExperiment) -> bool {
    !e.complete || matches!(e.experiment.stop_reason, StopReason::Interrupted | StopReason::CommandFailed)
}

/// The label a command of a stored experiment measured: the measured (last) command is
/// the experiment's label, as in `perflab history`; another command named like a stored
/// label (an interleaved baseline) measured that label.
fn label_of<'a>(e: &'a StoredExperiment, command_name: &'a str, labels: &[String]) -> Option<&'a str> {
    if e.experiment.commands.last().is_some_and(|c| c.name == command_name) {
        Some(&e.label)
    } else {
        labels.iter().any(|l| l == command_name).then_some(command_name)
    }
}

/// What to show.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub title: String,
    /// The label ratios are relative to; default: the first label.
    pub reference: Option<String>,
    /// Labels to compare with the reference; default: the last label.
    pub labels: Vec<String>,
    pub metric: String,
    /// Keep only results from this machine (fingerprint prefix or hostname).
    pub machine: Option<String>,
}

/// Arrange stored experiments (oldest label first, as the store returns them) for the page.
pub fn build(mut experiments: Vec<StoredExperiment>, options: &Options) -> Result<ReportData, Failure> {
    if let Some(wanted) = &options.machine {
        experiments
            .retain(|e| e.machine_fingerprint.starts_with(wanted.as_str()) || e.experiment.machine.hostname == *wanted);
        if experiments.is_empty() {
            return Err(usage!("no results from machine {wanted}"));
        }
    }
    if experiments.is_empty() {
        return Err(usage!(
            "no results to report: store some with `perflab run` or `perflab compare --save`, or pass --from FILE.json"
        ));
    }
    check_one_machine(&experiments)?;

    let labels = ordered_labels(&experiments);
    let reference = match &options.reference {
        Some(r) if labels.contains(r) => r.clone(),
        Some(r) => return Err(usage!("reference label {r} has no results (labels: {})", labels.join(", "))),
        None => labels[0].clone(),
    };
    let compared: Vec<String> = if options.labels.is_empty() {
        labels.last().filter(|l| **l != reference).cloned().into_iter().collect()
    } else {
        for l in &options.labels {
            if !labels.contains(l) {
                return Err(usage!("label {l} has no results (labels: {})", labels.join(", ")));
            }
        }
        options.labels.iter().filter(|l| **l != reference).cloned().collect()
    };

    let samples = Samples::collect(&experiments, &options.metric);
    if samples.benchmarks.is_empty() {
        return Err(usage!(
            "no successful run has the metric {} (try wall_s, cpu_s, max_rss_kib or a recorded counter)",
            options.metric
        ));
    }
    let mut notes = Vec::new();
    let info = experiments
        .last()
        .map_or(metric::info(&options.metric), |e| e.experiment.settings.metric_info(&options.metric));
    if info.better == metric::Better::Higher {
        notes.push(format!(
            "higher {} is better: a ratio above 1× is an improvement, counted as faster",
            options.metric
        ));
    }
    let incomplete = experiments.iter().filter(|e| stopped_early(e)).count();
    if incomplete > 0 {
        notes.push(format!("{incomplete} experiment(s) stopped early; their completed runs are included"));
    }

    let mut by_benchmark: BTreeMap<&str, Vec<&StoredExperiment>> = BTreeMap::new();
    for e in &experiments {
        by_benchmark.entry(e.benchmark.as_str()).or_default().push(e);
    }
    let mut comparisons = Vec::new();
    for label in &compared {
        let mut rows = Vec::new();
        let mut missing = Vec::new();
        for benchmark in &samples.benchmarks {
            let own = by_benchmark.get(benchmark.as_str()).map_or(&[][..], Vec::as_slice);
            match relative_time(own, &samples, &labels, benchmark, &reference, label, &options.metric) {
                Some(row) => rows.push(row),
                None => missing.push(benchmark.as_str()),
            }
        }
        if !missing.is_empty() {
            notes.push(format!(
                "{} benchmark(s) lack results for {reference} or {label} (or too few runs for a 95 % interval, about 4 each) and are not in its chart: {}",
                missing.len(),
                abbreviate(&missing)
            ));
        }
        comparisons.push(LabelComparison { label: label.clone(), rows });
    }

    // One machine is left (checked above), so the history has at most one.
    let histories = crate::history::build(&experiments, &options.metric)
        .machines
        .into_iter()
        .next()
        .map(|m| m.benchmarks)
        .unwrap_or_default();
    let counter_labels: Vec<String> = std::iter::once(reference.clone()).chain(compared.iter().cloned()).collect();
    let counters = counter_table(&samples, &counter_labels, &options.metric);
    let machines = machine_groups(&experiments, &labels);
    Ok(ReportData {
        title: options.title.clone(),
        generated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        metric: options.metric.clone(),
        reference,
        labels,
        comparisons,
        histories,
        counters,
        machines,
        notes,
    })
}

fn check_one_machine(experiments: &[StoredExperiment]) -> Result<(), Failure> {
    let mut machines: BTreeMap<&str, &crate::model::Machine> = BTreeMap::new();
    for e in experiments {
        machines.insert(&e.machine_fingerprint, &e.experiment.machine);
    }
    if machines.len() > 1 {
        let list: Vec<String> = machines.iter().map(|(fp, m)| store::describe_machine(fp, m)).collect();
        return Err(usage!(
            "the results come from {} machines, which are never mixed in one report: {}; choose one with --machine FINGERPRINT|HOSTNAME",
            machines.len(),
            list.join("; ")
        ));
    }
    Ok(())
}

/// Labels by stored order (`label_order`), ties in order of appearance.
fn ordered_labels(experiments: &[StoredExperiment]) -> Vec<String> {
    let mut first: Vec<(i64, usize, &str)> = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, e) in experiments.iter().enumerate() {
        if seen.insert(e.label.as_str()) {
            first.push((e.label_order, i, &e.label));
        }
    }
    first.sort();
    first.into_iter().map(|(_, _, l)| l.to_string()).collect()
}

fn abbreviate(names: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut text = names.iter().take(SHOWN).copied().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// Successful runs of each experiment's measured (last) command, pooled per benchmark
/// and label — the runs `perflab history` summarizes.
struct Samples<'a> {
    benchmarks: BTreeSet<String>,
    runs: BTreeMap<(&'a str, &'a str), Vec<&'a Run>>,
}

impl<'a> Samples<'a> {
    fn collect(experiments: &'a [StoredExperiment], primary: &str) -> Samples<'a> {
        let mut runs: BTreeMap<(&str, &str), Vec<&Run>> = BTreeMap::new();
        let mut benchmarks = BTreeSet::new();
        for e in experiments {
            let Some(command) = e.experiment.commands.last() else { continue };
            let ok: Vec<&Run> =
                command.runs.iter().filter(|r| r.exit.success() && r.metric(primary).is_some()).collect();
            if !ok.is_empty() {
                benchmarks.insert(e.benchmark.clone());
                runs.entry((e.benchmark.as_str(), e.label.as_str())).or_default().extend(ok);
            }
        }
        Samples { benchmarks, runs }
    }
    /// The metric's values for one benchmark and label (`None` when there are none).
    fn values(&self, benchmark: &str, label: &str, name: &str) -> Option<Vec<f64>> {
        let values: Vec<f64> = self
            .runs
            .get(&(benchmark, label))?
            .iter()
            .filter_map(|r| r.metric(name))
            .filter(|v| v.is_finite())
            .collect();
        (!values.is_empty()).then_some(values)
    }

    /// Counter and harness metrics (other than the primary one) measured for a benchmark.
    fn other_metrics(&self, benchmark: &str, labels: &[String], primary: &str) -> Vec<String> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        for label in labels {
            for run in self.runs.get(&(benchmark, label.as_str())).into_iter().flatten() {
                names.extend(run.counters.iter().filter(|(_, c)| c.value.is_some()).map(|(n, _)| n.clone()));
            }
        }
        metric::COMPARED.iter().map(|m| m.to_string()).chain(names).filter(|m| m != primary).collect()
    }
}

/// The label/reference ratio for one benchmark, from `experiments` (that benchmark's):
/// the paired comparison of the latest experiment that ran both interleaved, else an
/// independent-samples interval.
fn relative_time(
    experiments: &[&StoredExperiment],
    samples: &Samples,
    labels: &[String],
    benchmark: &str,
    reference: &str,
    label: &str,
    name: &str,
) -> Option<RelativeTime> {
    for e in experiments.iter().rev() {
        for c in e.experiment.comparisons.iter().filter(|c| c.metric == name) {
            match (label_of(e, &c.baseline, labels), label_of(e, &c.candidate, labels)) {
                (Some(b), Some(k)) if b == reference && k == label => return Some(paired_row(benchmark, c, false)),
                (Some(b), Some(k)) if b == label && k == reference => return Some(paired_row(benchmark, c, true)),
                _ => {}
            }
        }
    }
    let base = samples.values(benchmark, reference, name)?;
    let cand = samples.values(benchmark, label, name)?;
    let settings = experiments.iter().rev().find(|e| e.label == label).map(|e| &e.experiment.settings);
    let threshold = settings.map_or(DEFAULT_THRESHOLD, |s| s.threshold);
    let better = settings.map_or(metric::info(name).better, |s| s.metric_info(name).better);
    independent_row(benchmark, &base, &cand, threshold, better)
}

fn paired_row(benchmark: &str, c: &Comparison, inverted: bool) -> RelativeTime {
    let (ratio, ci_low, ci_high, verdict) = if inverted {
        let flipped = match c.verdict {
            Verdict::Faster => Verdict::Slower,
            Verdict::Slower => Verdict::Faster,
            v => v,
        };
        (1.0 / c.ratio, 1.0 / c.ci_high, 1.0 / c.ci_low, flipped)
    } else {
        (c.ratio, c.ci_low, c.ci_high, c.verdict)
    };
    RelativeTime {
        benchmark: benchmark.to_string(),
        ratio,
        ci_low,
        ci_high,
        confidence: c.confidence,
        p_value: Some(c.p_value),
        verdict,
        method: CiMethod::Paired,
        n: c.n,
    }
}

/// Ratio of locations from separately measured runs: the Hodges–Lehmann shift of the
/// log values and its Mann–Whitney interval, exponentiated.
fn independent_row(
    benchmark: &str,
    base: &[f64],
    cand: &[f64],
    threshold: f64,
    better: metric::Better,
) -> Option<RelativeTime> {
    if base.iter().chain(cand).any(|&v| v <= 0.0) {
        return None;
    }
    let ln_base: Vec<f64> = base.iter().map(|v| v.ln()).collect();
    let ln_cand: Vec<f64> = cand.iter().map(|v| v.ln()).collect();
    let interval = crate::stats::rank_sum::shift_interval(&ln_base, &ln_cand, CONFIDENCE)?;
    let shift = crate::stats::rank_sum::hodges_lehmann_shift(&ln_base, &ln_cand);
    let (lo, hi) = (interval.low.exp(), interval.high.exp());
    Some(RelativeTime {
        benchmark: benchmark.to_string(),
        ratio: shift.exp(),
        ci_low: lo,
        ci_high: hi,
        confidence: interval.achieved_confidence,
        p_value: Some(crate::stats::rank_sum::mann_whitney(&ln_base, &ln_cand).p_value),
        verdict: crate::verdict::classify(lo, hi, threshold, better).0,
        method: CiMethod::Independent,
        n: base.len().min(cand.len()),
    })
}

fn counter_table(samples: &Samples, labels: &[String], primary: &str) -> CounterTable {
    let mut rows = Vec::new();
    for benchmark in &samples.benchmarks {
        for name in samples.other_metrics(benchmark, labels, primary) {
            let values: Vec<Option<f64>> = labels
                .iter()
                .map(|l| samples.values(benchmark, l, &name).map(|v| crate::stats::summary::median(&v)))
                .collect();
            if values.iter().any(Option::is_some) {
                rows.push(CounterRow { benchmark: benchmark.clone(), metric: name, values });
            }
        }
    }
    CounterTable { labels: labels.to_vec(), rows }
}

/// Labels grouped by the machine, perflab version and environment they ran with.
fn machine_groups(experiments: &[StoredExperiment], labels: &[String]) -> Vec<MachineGroup> {
    let mut latest: BTreeMap<&str, &Experiment> = BTreeMap::new();
    for e in experiments {
        latest.insert(&e.label, &e.experiment);
    }
    let mut groups: Vec<MachineGroup> = Vec::new();
    for label in labels {
        let Some(e) = latest.get(label.as_str()) else { continue };
        match groups.iter_mut().find(|g| {
            g.machine == e.machine && g.perflab_version == e.perflab_version && g.environment == e.environment
        }) {
            Some(g) => g.labels.push(label.clone()),
            None => groups.push(MachineGroup {
                labels: vec![label.clone()],
                machine: e.machine.clone(),
                perflab_version: e.perflab_version.clone(),
                environment: e.environment.clone(),
            }),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CommandResult, ExitInfo, Machine, Settings};

    fn runs(level: f64) -> Vec<Run> {
        (0..8)
            .map(|i| Run {
                round: i,
                wall_s: level * (1.0 + 0.002 * (i % 3) as f64),
                exit: ExitInfo { exit_code: Some(0), signal: None, timed_out: false },
                ..Run::default()
            })
            .collect()
    }

    fn experiment(commands: &[(&str, f64)], comparisons: Vec<Comparison>) -> Experiment {
        Experiment {
            perflab_version: "0.1.0".into(),
            machine: Machine { hostname: "h".into(), ..Machine::default() },
            settings: Settings {
                warmup_rounds: 0,
                max_rounds: 8,
                max_time_s: 1.0,
                env_padding: false,
                ..Default::default()
            },
            rounds: 8,
            duration_s: 1.0,
            stop_reason: StopReason::FixedRounds,
            commands: commands
                .iter()
                .map(|(name, level)| CommandResult {
                    name: name.to_string(),
                    argv: vec![],
                    command_line: String::new(),
                    runs: runs(*level),
                    summary: Default::default(),
                })
                .collect(),
            comparisons,
            ..Experiment::default()
        }
    }

    fn stored(
        label: &str,
        order: i64,
        benchmark: &str,
        commands: &[(&str, f64)],
        comparisons: Vec<Comparison>,
    ) -> StoredExperiment {
        StoredExperiment {
            id: 0,
            label: label.into(),
            label_order: order,
            benchmark: benchmark.into(),
            git_commit: None,
            source: "test".into(),
            recorded_at: String::new(),
            machine_fingerprint: "fp".into(),
            complete: true,
            experiment: experiment(commands, comparisons),
        }
    }

    fn options() -> Options {
        Options { metric: metric::WALL.into(), ..Options::default() }
    }

    #[test]
    fn defaults_compare_the_newest_label_with_the_oldest() {
        let experiments = vec![
            stored("old", 0, "b", &[("./bench", 1.0)], vec![]),
            stored("mid", 1, "b", &[("./bench", 1.0)], vec![]),
            stored("new", 2, "b", &[("./bench", 1.5)], vec![]),
        ];
        let data = build(experiments, &options()).unwrap();
        assert_eq!((data.reference.as_str(), data.labels.len()), ("old", 3));
        assert_eq!(data.comparisons.len(), 1);
        let row = &data.comparisons[0].rows[0];
        assert_eq!(
            (data.comparisons[0].label.as_str(), row.method, row.verdict),
            ("new", CiMethod::Independent, Verdict::Slower)
        );
        assert!(row.ci_low <= 1.5 && 1.5 <= row.ci_high * 1.01, "{row:?}");
        assert_eq!(data.histories[0].points.len(), 3);
    }

    #[test]
    fn a_paired_comparison_run_the_other_way_round_is_inverted() {
        let c = Comparison {
            baseline: "new".into(),
            candidate: "./old".into(),
            metric: metric::WALL.into(),
            better: Default::default(),
            ratio: 0.8,
            ci_low: 0.78,
            ci_high: 0.82,
            confidence: 0.95,
            look_confidence: 0.99,
            p_value: 0.001,
            verdict: Verdict::Faster,
            below_threshold: false,
            n: 8,
            flags: vec![],
        };
        // Stored under `old`: its measured (last) command is `old`, its baseline is the
        // command named after the stored label `new`.
        let experiments = vec![
            stored("new", 0, "b", &[("./bench", 1.25)], vec![]),
            stored("old", 1, "b", &[("new", 1.25), ("./old", 1.0)], vec![c]),
        ];
        let opts = Options { reference: Some("old".into()), labels: vec!["new".into()], ..options() };
        let data = build(experiments, &opts).unwrap();
        let row = &data.comparisons[0].rows[0];
        assert_eq!((row.method, row.verdict, row.n), (CiMethod::Paired, Verdict::Slower, 8));
        assert!((row.ratio - 1.25).abs() < 1e-12);
        assert!((row.ci_low - 1.0 / 0.82).abs() < 1e-12 && (row.ci_high - 1.0 / 0.78).abs() < 1e-12);
    }

    #[test]
    fn history_marks_the_label_where_a_shift_began() {
        let experiments: Vec<StoredExperiment> = (0..12)
            .map(|i| {
                let level = if i >= 6 { 1.3 } else { 1.0 } * (1.0 + 0.001 * (i % 2) as f64);
                stored(&format!("v{i:02}"), i, "b", &[("./bench", level)], vec![])
            })
            .collect();
        let data = build(experiments, &options()).unwrap();
        let cps = &data.histories[0].change_points;
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].label, "v06");
        assert!(cps[0].ratio > 1.25 && cps[0].ratio < 1.35);
    }

    #[test]
    fn json_results_become_one_benchmark_with_a_label_per_command() {
        let dir = tempfile::tempdir().unwrap();
        let c = Comparison {
            baseline: "old".into(),
            candidate: "new".into(),
            metric: metric::WALL.into(),
            better: Default::default(),
            ratio: 1.1,
            ci_low: 1.05,
            ci_high: 1.15,
            confidence: 0.95,
            look_confidence: 0.99,
            p_value: 0.01,
            verdict: Verdict::Slower,
            below_threshold: false,
            n: 8,
            flags: vec![],
        };
        let path = dir.path().join("parse.json");
        std::fs::write(&path, serde_json::to_string(&experiment(&[("old", 1.0), ("new", 1.1)], vec![c])).unwrap())
            .unwrap();
        let experiments = from_json_files(&[&path]).unwrap();
        let labels: Vec<&str> = experiments.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["old", "new"]);
        assert!(experiments.iter().all(|e| e.benchmark == "parse"));
        assert_eq!(experiments[1].experiment.commands.len(), 2, "the candidate keeps its baseline");
        let data = build(experiments, &options()).unwrap();
        assert_eq!(data.comparisons[0].rows[0].method, CiMethod::Paired);
        assert_eq!(data.histories[0].points.len(), 2);
    }
}
