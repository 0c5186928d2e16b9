//! From stored experiments (or perflab JSON files) to [`ReportData`]: which runs belong
//! to which benchmark and label, the ratio and its interval per benchmark, history
//! points, counters and machines.

use super::{
    BenchmarkHistory, CiMethod, CounterRow, CounterTable, HistoryPoint, LabelComparison, MachineGroup,
    RelativeTime, ReportData,
};
use crate::error::Failure;
use crate::model::{metric, Comparison, Experiment, Run, StopReason, Verdict};
use crate::stats::changepoint::ChangePointConfig;
use crate::store::{self, StoredExperiment};
use crate::usage;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The confidence of every interval the report computes itself.
pub const CONFIDENCE: f64 = 0.95;
/// Equivalence margin used for independent comparisons when the experiments do not
/// record one.
const DEFAULT_THRESHOLD: f64 = 0.01;

/// One experiment with what it measured: each command's label.
#[derive(Debug, Clone)]
pub struct Source {
    pub benchmark: String,
    /// The label each command measured, aligned with `experiment.commands`; `None`
    /// for a command that belongs to no label (e.g. an unnamed baseline).
    pub command_labels: Vec<Option<String>>,
    pub machine_fingerprint: String,
    /// False when the experiment stopped early (interrupted, a command failed, the
    /// writer died): its completed runs still count.
    pub complete: bool,
    pub experiment: Experiment,
}

impl Source {
    /// A stored experiment: a command named after a stored label measured that label;
    /// otherwise the experiment's own label is the command named like it or, failing
    /// that, the last command (`compare` puts the baseline first).
    pub fn from_stored(stored: StoredExperiment, known_labels: &BTreeSet<&str>) -> Source {
        let names: Vec<&str> = stored.experiment.commands.iter().map(|c| c.name.as_str()).collect();
        let own = names.iter().position(|&n| n == stored.label).unwrap_or(names.len().saturating_sub(1));
        let command_labels = names
            .iter()
            .enumerate()
            .map(|(i, &name)| {
                if i == own {
                    Some(stored.label.clone())
                } else if known_labels.contains(name) {
                    Some(name.to_string())
                } else {
                    None
                }
            })
            .collect();
        Source {
            benchmark: stored.benchmark,
            command_labels,
            machine_fingerprint: stored.machine_fingerprint,
            complete: stored.complete && !stopped_early(&stored.experiment),
            experiment: stored.experiment,
        }
    }

    /// A perflab JSON result (`compare --json`): the file is one benchmark, named after
    /// the file, and each command is a label named after the command.
    pub fn from_json_file(path: &Path) -> Result<Source, Failure> {
        let text = std::fs::read_to_string(path).map_err(|e| usage!("cannot read {}: {e}", path.display()))?;
        let experiment: Experiment = serde_json::from_str(&text)
            .map_err(|e| usage!("{} is not a perflab JSON result: {e}", path.display()))?;
        let benchmark = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
        Ok(Source {
            benchmark,
            command_labels: experiment.commands.iter().map(|c| Some(c.name.clone())).collect(),
            machine_fingerprint: store::fingerprint(&experiment.machine),
            complete: !stopped_early(&experiment),
            experiment,
        })
    }

    fn label_of(&self, command_name: &str) -> Option<&str> {
        let idx = self.experiment.commands.iter().position(|c| c.name == command_name)?;
        self.command_labels.get(idx)?.as_deref()
    }
}

fn stopped_early(experiment: &Experiment) -> bool {
    matches!(experiment.stop_reason, StopReason::Interrupted | StopReason::CommandFailed)
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

/// Arrange `sources` for the page. `label_order` lists labels oldest first (labels
/// missing from it follow in order of appearance).
pub fn build(mut sources: Vec<Source>, label_order: &[String], options: &Options) -> Result<ReportData, Failure> {
    if let Some(wanted) = &options.machine {
        sources.retain(|s| s.machine_fingerprint.starts_with(wanted.as_str()) || s.experiment.machine.hostname == *wanted);
        if sources.is_empty() {
            return Err(usage!("no results from machine {wanted}"));
        }
    }
    if sources.is_empty() {
        return Err(usage!("no results to report: store some with `perflab run` or `perflab compare --save`, or pass --from FILE.json"));
    }
    check_one_machine(&sources)?;

    let labels = ordered_labels(&sources, label_order);
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

    let samples = Samples::collect(&sources, &options.metric);
    let mut notes = Vec::new();
    let incomplete = sources.iter().filter(|s| !s.complete).count();
    if incomplete > 0 {
        notes.push(format!("{incomplete} experiment(s) stopped early; their completed runs are included"));
    }

    let mut by_benchmark: BTreeMap<&str, Vec<&Source>> = BTreeMap::new();
    for s in &sources {
        by_benchmark.entry(s.benchmark.as_str()).or_default().push(s);
    }
    let mut comparisons = Vec::new();
    for label in &compared {
        let mut rows = Vec::new();
        let mut missing = Vec::new();
        for benchmark in &samples.benchmarks {
            let own = by_benchmark.get(benchmark.as_str()).map_or(&[][..], Vec::as_slice);
            match relative_time(own, &samples, benchmark, &reference, label, &options.metric) {
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

    let histories = samples
        .benchmarks
        .iter()
        .map(|benchmark| {
            let points: Vec<HistoryPoint> = labels
                .iter()
                .filter_map(|label| {
                    let values = samples.values(benchmark, label, &options.metric)?;
                    Some(HistoryPoint {
                        label: label.clone(),
                        median: crate::stats::summary::median(&values),
                        ci: crate::stats::summary::median_ci(&values, CONFIDENCE),
                        n: values.len(),
                    })
                })
                .collect();
            let medians: Vec<f64> = points.iter().map(|p| p.median).collect();
            BenchmarkHistory { benchmark: benchmark.clone(), change_points: crate::stats::changepoint::detect(&medians, &ChangePointConfig::default()), points }
        })
        .collect();

    let counter_labels: Vec<String> = std::iter::once(reference.clone()).chain(compared.iter().cloned()).collect();
    let counters = counter_table(&samples, &counter_labels, &options.metric);
    let machines = machine_groups(&sources, &labels);
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

fn check_one_machine(sources: &[Source]) -> Result<(), Failure> {
    let mut machines: BTreeMap<&str, &crate::model::Machine> = BTreeMap::new();
    for s in sources {
        machines.insert(&s.machine_fingerprint, &s.experiment.machine);
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

fn ordered_labels(sources: &[Source], label_order: &[String]) -> Vec<String> {
    let present: BTreeSet<&str> = sources.iter().flat_map(|s| s.command_labels.iter().flatten().map(String::as_str)).collect();
    let mut labels: Vec<String> = label_order.iter().filter(|l| present.contains(l.as_str())).cloned().collect();
    for s in sources {
        for l in s.command_labels.iter().flatten() {
            if !labels.contains(l) {
                labels.push(l.clone());
            }
        }
    }
    labels
}

fn abbreviate(names: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut text = names.iter().take(SHOWN).copied().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// Successful runs pooled per benchmark and label over all experiments.
struct Samples<'a> {
    benchmarks: BTreeSet<String>,
    runs: BTreeMap<(&'a str, &'a str), Vec<&'a Run>>,
}

impl<'a> Samples<'a> {
    fn collect(sources: &'a [Source], primary: &str) -> Samples<'a> {
        let mut runs: BTreeMap<(&str, &str), Vec<&Run>> = BTreeMap::new();
        let mut benchmarks = BTreeSet::new();
        for s in sources {
            for (command, label) in s.experiment.commands.iter().zip(&s.command_labels) {
                let Some(label) = label else { continue };
                let ok: Vec<&Run> = command.runs.iter().filter(|r| r.exit.success() && r.metric(primary).is_some()).collect();
                if !ok.is_empty() {
                    benchmarks.insert(s.benchmark.clone());
                    runs.entry((s.benchmark.as_str(), label.as_str())).or_default().extend(ok);
                }
            }
        }
        Samples { benchmarks, runs }
    }

    /// The metric's values for one benchmark and label (`None` when there are none).
    fn values(&self, benchmark: &str, label: &str, name: &str) -> Option<Vec<f64>> {
        let values: Vec<f64> = self.runs.get(&(benchmark, label))?.iter().filter_map(|r| r.metric(name)).filter(|v| v.is_finite()).collect();
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

/// The label/reference ratio for one benchmark, from `sources` (that benchmark's
/// experiments): the paired comparison of the latest experiment that ran both
/// interleaved, else an independent-samples interval.
fn relative_time(sources: &[&Source], samples: &Samples, benchmark: &str, reference: &str, label: &str, name: &str) -> Option<RelativeTime> {
    for s in sources.iter().rev() {
        for c in s.experiment.comparisons.iter().filter(|c| c.metric == name) {
            match (s.label_of(&c.baseline), s.label_of(&c.candidate)) {
                (Some(b), Some(k)) if b == reference && k == label => return Some(paired_row(benchmark, c, false)),
                (Some(b), Some(k)) if b == label && k == reference => return Some(paired_row(benchmark, c, true)),
                _ => {}
            }
        }
    }
    let base = samples.values(benchmark, reference, name)?;
    let cand = samples.values(benchmark, label, name)?;
    let threshold = sources
        .iter()
        .rev()
        .find(|s| s.command_labels.iter().flatten().any(|l| l == label))
        .map_or(DEFAULT_THRESHOLD, |s| s.experiment.settings.threshold);
    independent_row(benchmark, &base, &cand, threshold)
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
fn independent_row(benchmark: &str, base: &[f64], cand: &[f64], threshold: f64) -> Option<RelativeTime> {
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
        verdict: interval_verdict(lo, hi, threshold),
        method: CiMethod::Independent,
        n: base.len().min(cand.len()),
    })
}

/// A verdict from an interval of the ratio: a change when the interval excludes 1,
/// equivalence when it lies within ±`threshold`, else inconclusive.
fn interval_verdict(lo: f64, hi: f64, threshold: f64) -> Verdict {
    if lo > 1.0 {
        Verdict::Slower
    } else if hi < 1.0 {
        Verdict::Faster
    } else if lo >= 1.0 - threshold && hi <= 1.0 + threshold {
        Verdict::Equivalent
    } else {
        Verdict::Inconclusive
    }
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
fn machine_groups(sources: &[Source], labels: &[String]) -> Vec<MachineGroup> {
    let mut latest: BTreeMap<&str, &Experiment> = BTreeMap::new();
    for s in sources {
        for label in s.command_labels.iter().flatten() {
            latest.insert(label, &s.experiment);
        }
    }
    let mut groups: Vec<MachineGroup> = Vec::new();
    for label in labels {
        let Some(e) = latest.get(label.as_str()) else { continue };
        match groups.iter_mut().find(|g| g.machine == e.machine && g.perflab_version == e.perflab_version && g.environment == e.environment) {
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
            schema_version: crate::model::SCHEMA_VERSION,
            perflab_version: "0.1.0".into(),
            started_at: String::new(),
            machine: Machine { hostname: "h".into(), ..Machine::default() },
            settings: Settings {
                seed: 0,
                warmup_rounds: 0,
                min_rounds: 6,
                fixed_rounds: None,
                max_rounds: 8,
                max_time_s: 1.0,
                threshold: 0.01,
                confidence: 0.95,
                env_padding: false,
                mode: "wall".into(),
                timeout_s: None,
            },
            rounds: 8,
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
            warnings: vec![],
            environment: Default::default(),
        }
    }

    fn source(benchmark: &str, commands: &[(&str, f64)], comparisons: Vec<Comparison>) -> Source {
        Source {
            benchmark: benchmark.into(),
            command_labels: commands.iter().map(|(n, _)| Some(n.to_string())).collect(),
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
        let sources = vec![source("b", &[("old", 1.0)], vec![]), source("b", &[("mid", 1.0)], vec![]), source("b", &[("new", 1.5)], vec![])];
        let data = build(sources, &["old".into(), "mid".into(), "new".into()], &options()).unwrap();
        assert_eq!(data.reference, "old");
        assert_eq!(data.comparisons.len(), 1);
        let row = &data.comparisons[0].rows[0];
        assert_eq!((data.comparisons[0].label.as_str(), row.method, row.verdict), ("new", CiMethod::Independent, Verdict::Slower));
        assert!(row.ci_low <= 1.5 && 1.5 <= row.ci_high * 1.01, "{row:?}");
        assert_eq!(data.histories[0].points.len(), 3);
    }

    #[test]
    fn a_paired_comparison_run_the_other_way_round_is_inverted() {
        let c = Comparison {
            baseline: "new".into(),
            candidate: "old".into(),
            metric: metric::WALL.into(),
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
        let sources = vec![source("b", &[("new", 1.25), ("old", 1.0)], vec![c])];
        let opts = Options { reference: Some("old".into()), labels: vec!["new".into()], ..options() };
        let data = build(sources, &[], &opts).unwrap();
        let row = &data.comparisons[0].rows[0];
        assert_eq!((row.method, row.verdict, row.n), (CiMethod::Paired, Verdict::Slower, 8));
        assert!((row.ratio - 1.25).abs() < 1e-12);
        assert!((row.ci_low - 1.0 / 0.82).abs() < 1e-12 && (row.ci_high - 1.0 / 0.78).abs() < 1e-12);
    }

    #[test]
    fn history_marks_the_label_where_a_shift_began() {
        let labels: Vec<String> = (0..12).map(|i| format!("v{i:02}")).collect();
        let sources: Vec<Source> =
            labels.iter().enumerate().map(|(i, l)| source("b", &[(l, if i >= 6 { 1.3 } else { 1.0 } * (1.0 + 0.001 * (i % 2) as f64))], vec![])).collect();
        let data = build(sources, &labels, &options()).unwrap();
        let cps = &data.histories[0].change_points;
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(data.histories[0].points[cps[0].index].label, "v06");
        assert!(cps[0].ratio > 1.25 && cps[0].ratio < 1.35);
    }

    #[test]
    fn stored_experiments_map_commands_to_labels() {
        let known: BTreeSet<&str> = ["base", "feature"].into_iter().collect();
        let stored = |label: &str, commands: &[(&str, f64)]| StoredExperiment {
            id: 1,
            label: label.into(),
            label_order: 0,
            benchmark: "b".into(),
            git_commit: None,
            source: "run".into(),
            recorded_at: String::new(),
            machine_fingerprint: "fp".into(),
            complete: true,
            experiment: experiment(commands, vec![]),
        };
        // A command named after a stored label measured that label.
        let s = Source::from_stored(stored("feature", &[("base", 1.0), ("feature", 1.1)]), &known);
        assert_eq!(s.command_labels, vec![Some("base".to_string()), Some("feature".to_string())]);
        // Otherwise the last command is the experiment's label; an unnamed baseline is none.
        let s = Source::from_stored(stored("feature", &[("./old", 1.0), ("./new", 1.1)]), &known);
        assert_eq!(s.command_labels, vec![None, Some("feature".to_string())]);
    }

    #[test]
    fn verdicts_from_intervals() {
        assert_eq!(interval_verdict(1.02, 1.05, 0.01), Verdict::Slower);
        assert_eq!(interval_verdict(0.9, 0.95, 0.01), Verdict::Faster);
        assert_eq!(interval_verdict(0.995, 1.004, 0.01), Verdict::Equivalent);
        assert_eq!(interval_verdict(0.98, 1.03, 0.01), Verdict::Inconclusive);
    }
}
