//! From stored experiments (or perflab JSON files) to [`ReportData`]: which runs belong
//! to which benchmark and label, the ratio and its interval per benchmark, counters and
//! machines. History points and change points come from [`perflab_store::history::build`], so
//! the page and `perflab history` always agree.

use super::error::ReportError;
use super::{
    CounterRow, CounterTable, Explained, LabelComparison, MachineGroup, MachinePage, RelativeTime, ReportData, Why,
};
use perflab_model::{metric, Comparison, Experiment, Run, StopReason, Verdict};
use perflab_store::history::{matrix, measured_values, ratio};
use perflab_store::StoredExperiment;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// perflab JSON results (`compare --json`) as stored experiments: each file is one
/// benchmark named after the file, each command one label named after the command
/// (labels ordered as they first appear). A candidate keeps the baseline command and
/// their comparison, so its paired interval is used.
pub fn from_json_files(paths: &[impl AsRef<Path>]) -> Result<Vec<StoredExperiment>, ReportError> {
    let mut out = Vec::new();
    let mut label_order: Vec<String> = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let text = perflab_sys::files::read_regular_to_string(path)
            .map_err(|source| ReportError::Read { path: path.to_path_buf(), source })?;
        let experiment: Experiment = serde_json::from_str(&text)
            .map_err(|source| ReportError::NotAResult { path: path.to_path_buf(), source })?;
        perflab_store::exchange::check_values(&experiment)
            .map_err(|source| ReportError::OutOfRange { path: path.to_path_buf(), source })?;
        let benchmark =
            path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
        let fingerprint = experiment.machine.fingerprint();
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
                sample: None,
                profile_change: None,
                experiment: Experiment { commands, comparisons, ..experiment.clone() },
            });
        }
    }
    Ok(out)
}

fn stopped_early(e: &StoredExperiment) -> bool {
    !e.complete || matches!(e.experiment.stop_reason, StopReason::Interrupted | StopReason::CommandFailed)
}

/// What to show.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub title: String,
    /// The label ratios are relative to; default: the first label.
    pub reference: Option<String>,
    /// Labels to compare with the reference; default: the last label.
    pub labels: Vec<String>,
    pub metric: String,
    /// Keep only results from this machine (fingerprint prefix or hostname).
    pub machine: Option<String>,
    /// Why `metric` was chosen when none was asked for (shown first among the notes).
    pub metric_note: Option<String>,
}

/// The reference label and the compared labels the options ask for among `labels`.
fn chosen_labels(labels: &[String], options: &Selection) -> Result<(String, Vec<String>), ReportError> {
    let reference = match &options.reference {
        Some(r) if labels.contains(r) => r.clone(),
        Some(r) => return Err(ReportError::NoReference { label: r.clone(), known: labels.join(", ") }.into()),
        None => labels[0].clone(),
    };
    let compared: Vec<String> = if options.labels.is_empty() {
        labels.last().filter(|l| **l != reference).cloned().into_iter().collect()
    } else {
        for l in &options.labels {
            if !labels.contains(l) {
                return Err(ReportError::NoLabel { label: l.clone(), known: labels.join(", ") }.into());
            }
        }
        options.labels.iter().filter(|l| **l != reference).cloned().collect()
    };
    Ok((reference, compared))
}

/// The experiments the report of `options` needs from `store`: the lean read of the
/// metric for every label (history, ratios), and in full for the reference and compared
/// labels (their counters table shows every other metric).
pub fn from_store(store: &mut perflab_store::Store, options: &Selection) -> Result<Vec<StoredExperiment>, ReportError> {
    let query = perflab_store::Query { machine: options.machine.clone(), ..Default::default() };
    let lean = store.metric_experiments(&query, &options.metric)?;
    let labels = ordered_labels(&lean.iter().collect::<Vec<_>>());
    if labels.is_empty() {
        return Ok(lean);
    }
    let (reference, compared) = chosen_labels(&labels, options)?;
    let mut detailed: HashMap<i64, StoredExperiment> = HashMap::new();
    for label in std::iter::once(reference).chain(compared) {
        let query = perflab_store::Query { label: Some(label), ..query.clone() };
        let mut changes: HashMap<i64, perflab_store::ProfileChange> =
            store.profile_changes(&query, false)?.into_iter().collect();
        for mut e in store.experiments(&query)? {
            e.profile_change = changes.remove(&e.id).map(Box::new);
            detailed.insert(e.id, e);
        }
    }
    Ok(lean.into_iter().map(|e| detailed.remove(&e.id).unwrap_or(e)).collect())
}

/// Arrange stored experiments (oldest label first, as the store returns them) for the page.
pub fn build(experiments: &[StoredExperiment], options: &Selection) -> Result<ReportData, ReportError> {
    let mut experiments: Vec<&StoredExperiment> = experiments.iter().collect();
    if let Some(wanted) = &options.machine {
        experiments
            .retain(|e| e.machine_fingerprint.starts_with(wanted.as_str()) || e.experiment.machine.hostname == *wanted);
        if experiments.is_empty() {
            return Err(ReportError::NoMachine(wanted.clone()).into());
        }
    }
    if experiments.is_empty() {
        return Err(ReportError::NothingToReport.into());
    }
    let labels = ordered_labels(&experiments);
    let (reference, compared) = chosen_labels(&labels, options)?;
    if !experiments.iter().any(|e| !measured_values(e, &options.metric).is_empty()) {
        return Err(ReportError::NoSuchMetric(options.metric.clone()).into());
    }
    let mut notes: Vec<String> = options.metric_note.iter().cloned().collect();
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
    // Machines in order of first appearance, never pooled.
    let mut fingerprints: Vec<&str> = Vec::new();
    for e in &experiments {
        if !fingerprints.contains(&e.machine_fingerprint.as_str()) {
            fingerprints.push(&e.machine_fingerprint);
        }
    }
    let several = fingerprints.len() > 1;
    let matrices = if several {
        compared.iter().map(|l| matrix::matrix(&experiments, &options.metric, &reference, l)).collect()
    } else {
        Vec::new()
    };
    let mut pages = Vec::new();
    for fingerprint in &fingerprints {
        let group: Vec<&StoredExperiment> =
            experiments.iter().copied().filter(|e| e.machine_fingerprint == *fingerprint).collect();
        let description = group[0].experiment.machine.describe(fingerprint);
        let prefix = if several { format!("{description}: ") } else { String::new() };
        match machine_page(&group, &reference, &compared, &options.metric, description, &mut notes, &prefix) {
            Some(page) => pages.push(page),
            None => notes.push(format!("{prefix}no successful run has the metric {}", options.metric)),
        }
    }
    Ok(ReportData {
        title: options.title.clone(),
        generated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        metric: options.metric.clone(),
        matrices,
        pages,
        notes,
    })
}

/// One machine's part of the page (None when none of its runs has the metric); what it
/// lacks goes to `notes`, each starting with `prefix`.
fn machine_page(
    experiments: &[&StoredExperiment],
    reference: &str,
    compared: &[String],
    metric: &str,
    description: String,
    notes: &mut Vec<String>,
    prefix: &str,
) -> Option<MachinePage> {
    let labels = ordered_labels(experiments);
    let shown: Vec<String> = std::iter::once(reference.to_string()).chain(compared.iter().cloned()).collect();
    let samples = Samples::collect(experiments, metric, &shown);
    if samples.benchmarks.is_empty() {
        return None;
    }
    let mut by_benchmark: HashMap<&str, Vec<&StoredExperiment>> = HashMap::new();
    for e in experiments {
        by_benchmark.entry(e.benchmark.as_str()).or_default().push(e);
    }
    let has = |l: &str| labels.iter().any(|x| x == l);
    // Every experiment is a session of its label; the machine's history sizes how much
    // sessions differ (history::sessions).
    let sessions = perflab_store::history::sessions::collect(experiments.iter().copied(), metric);
    let machine_noise = perflab_store::history::sessions::MachineNoise::new(&sessions, ratio::SESSION_PRIOR);
    let no_sessions = perflab_store::history::sessions::BenchmarkSessions::default();
    let mut comparisons = Vec::new();
    for label in compared.iter().filter(|l| has(reference) && has(l)) {
        let noise = machine_noise.between(reference, label);
        let mut rows = Vec::new();
        let mut missing = Vec::new();
        for &benchmark in &samples.benchmarks {
            let own = by_benchmark.get(benchmark).map_or(&[][..], Vec::as_slice);
            let benchmark_sessions = sessions.iter().find(|b| b.benchmark == benchmark).unwrap_or(&no_sessions);
            match ratio::between_labels(own, &labels, reference, label, metric, benchmark_sessions, &noise) {
                Some(change) => rows.push(RelativeTime { benchmark: benchmark.to_string(), change }),
                None => missing.push(benchmark),
            }
        }
        if !missing.is_empty() {
            notes.push(format!(
                "{prefix}{} benchmark(s) lack results for {reference} or {label} and are not in its chart: {}",
                missing.len(),
                abbreviate(&missing)
            ));
        }
        if rows.iter().any(|r| r.change.method == ratio::CiMethod::Sessions) {
            notes.push(format!(
                "{prefix}{label} and {reference} were measured in separate sessions: their intervals include the session-to-session noise of this machine, σ = {:.2} % ({})",
                noise.tau * 100.0,
                describe_noise(&noise)
            ));
        }
        for row in rows.iter().filter_map(|r| r.change.note.as_ref().map(|n| (&r.benchmark, n))) {
            notes.push(format!("{prefix}{}: {}", row.0, row.1));
        }
        comparisons.push(LabelComparison { label: label.clone(), rows });
    }
    for l in sessions.iter().flat_map(|b| &b.labels).filter(|l| l.busy() && shown.contains(&l.label)) {
        let note = format!(
            "{prefix}{} was measured on a busy machine: {:.0} % of its wall time was spent waiting for a CPU a neighbour held",
            l.label,
            l.busy_share.unwrap_or(0.0) * 100.0
        );
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
    for label in shown.iter().filter(|l| !has(l)) {
        notes.push(format!("{prefix}no results under label {label}"));
    }
    // One machine here, so the history has at most one.
    let histories =
        perflab_store::history::build(experiments.iter().copied(), metric, perflab_store::history::Steps::Skip)
            .machines
            .into_iter()
            .next()
            .map(|m| m.benchmarks)
            .unwrap_or_default();
    let explained = explained(experiments, &shown);
    let counter_labels: Vec<String> = shown.into_iter().filter(|l| has(l)).collect();
    let counters = counter_table(&samples, &counter_labels, metric);
    let machines = machine_groups(experiments, &labels);
    Some(MachinePage {
        description,
        reference: reference.to_string(),
        labels,
        comparisons,
        histories,
        counters,
        machines,
        explained,
    })
}

/// Where a machine's session noise came from, for a note.
fn describe_noise(noise: &perflab_stats::sessions::SessionNoise) -> String {
    let mut parts = Vec::new();
    if noise.replicate_df > 0.0 {
        parts.push(format!("repeated sessions, {:.0} df", noise.replicate_df));
    }
    if noise.step_df > 0.0 {
        parts.push(format!("the steps between its labels, {:.0} df", noise.step_df));
    }
    if noise.prior_df > 0.0 {
        parts.push(format!("a prior of {:.1} % worth {:.0} df", ratio::SESSION_PRIOR.tau * 100.0, noise.prior_df));
    }
    parts.join(", ")
}

/// The regressions of the `shown` labels' experiments (a label's experiment may have
/// compared it with a baseline build) that are explained — by their runs' samples, or in
/// older stores by one profile of each build — largest ratio first.
fn explained(experiments: &[&StoredExperiment], shown: &[String]) -> Vec<Explained> {
    let mut explained: Vec<Explained> = experiments
        .iter()
        .filter(|e| shown.contains(&e.label))
        .filter_map(|e| {
            let slower = |c: &&Comparison| {
                c.metric == e.experiment.primary_metric && c.verdict == Verdict::Slower && !c.below_threshold
            };
            let sampled = e.experiment.comparisons.iter().filter(slower).find_map(|c| {
                let explanation = c.explanation.clone()?;
                Some((c, Why::Sampled(explanation)))
            });
            let (comparison, why) = match sampled {
                Some(found) => found,
                None => {
                    let change = e.profile_change.as_ref()?;
                    let comparison = e.experiment.comparisons.iter().find(|c| {
                        c.metric == change.metric && c.baseline == change.baseline && c.candidate == change.candidate
                    })?;
                    (comparison, Why::OneProfile(change.clone()))
                }
            };
            Some(Explained {
                benchmark: e.benchmark.clone(),
                label: e.label.clone(),
                comparison: Comparison { explanation: None, ..comparison.clone() },
                why,
            })
        })
        .collect();
    explained.sort_by(|a, b| b.comparison.ratio.total_cmp(&a.comparison.ratio));
    explained
}

/// Labels by stored order (`label_order`), ties in order of appearance.
fn ordered_labels(experiments: &[&StoredExperiment]) -> Vec<String> {
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
    benchmarks: BTreeSet<&'a str>,
    runs: HashMap<(&'a str, &'a str), Vec<&'a Run>>,
}

impl<'a> Samples<'a> {
    /// Every benchmark with a successful run, and the runs of the `shown` labels.
    fn collect(experiments: &[&'a StoredExperiment], primary: &str, shown: &[String]) -> Samples<'a> {
        let mut runs: HashMap<(&str, &str), Vec<&Run>> = HashMap::new();
        let mut benchmarks = BTreeSet::new();
        let usable = |r: &Run| r.exit.success() && r.metric(primary).is_some();
        for e in experiments {
            let Some(command) = e.experiment.commands.last() else { continue };
            if measured_values(e, primary).is_empty() {
                continue;
            }
            benchmarks.insert(e.benchmark.as_str());
            // The shown labels were read in full (with every metric's runs).
            if shown.contains(&e.label) {
                runs.entry((e.benchmark.as_str(), e.label.as_str()))
                    .or_default()
                    .extend(command.runs.iter().filter(|r| usable(r)));
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

fn counter_table(samples: &Samples, labels: &[String], primary: &str) -> CounterTable {
    let mut rows = Vec::new();
    for benchmark in &samples.benchmarks {
        for name in samples.other_metrics(benchmark, labels, primary) {
            let values: Vec<Option<f64>> = labels
                .iter()
                .map(|l| samples.values(benchmark, l, &name).map(|v| perflab_stats::summary::median(&v)))
                .collect();
            if values.iter().any(Option::is_some) {
                rows.push(CounterRow { benchmark: benchmark.to_string(), metric: name, values });
            }
        }
    }
    CounterTable { labels: labels.to_vec(), rows }
}

/// Environment facts of one session's harness, not of the machine: the spawner's peak-RSS
/// floor, the cgroup it created (its path names its process id), how busy the machine
/// was. Labels that differ only in these ran on the same machine with the same setup.
const SESSION_FACTS: [&str; 3] = ["max_rss_floor_kib", "run_queue_wait", perflab_sys::spawn::contention::BUSY_FACT];

/// Labels grouped by the machine, perflab version and environment they ran with (the
/// environment without its per-session facts).
fn machine_groups(experiments: &[&StoredExperiment], labels: &[String]) -> Vec<MachineGroup> {
    let mut latest: BTreeMap<&str, &Experiment> = BTreeMap::new();
    for e in experiments {
        latest.insert(&e.label, &e.experiment);
    }
    let mut groups: Vec<MachineGroup> = Vec::new();
    for label in labels {
        let Some(e) = latest.get(label.as_str()) else { continue };
        let mut environment = e.environment.clone();
        environment.retain(|fact, _| !SESSION_FACTS.contains(&fact.as_str()));
        match groups
            .iter_mut()
            .find(|g| g.machine == e.machine && g.perflab_version == e.perflab_version && g.environment == environment)
        {
            Some(g) => g.labels.push(label.clone()),
            None => groups.push(MachineGroup {
                labels: vec![label.clone()],
                machine: e.machine.clone(),
                perflab_version: e.perflab_version.clone(),
                environment,
            }),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_model::{CommandResult, ExitInfo, Machine, Settings, Verdict};
    use perflab_store::history::ratio::CiMethod;

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
                    parameters: Default::default(),
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
            sample: None,
            profile_change: None,
            experiment: experiment(commands, comparisons),
        }
    }

    fn options() -> Selection {
        Selection { metric: metric::WALL.into(), ..Selection::default() }
    }

    #[test]
    fn defaults_compare_the_newest_label_with_the_oldest() {
        let experiments = vec![
            stored("old", 0, "b", &[("./bench", 1.0)], vec![]),
            stored("mid", 1, "b", &[("./bench", 1.0)], vec![]),
            stored("new", 2, "b", &[("./bench", 1.5)], vec![]),
        ];
        let data = build(&experiments, &options()).unwrap();
        assert_eq!((data.pages[0].reference.as_str(), data.pages[0].labels.len()), ("old", 3));
        assert_eq!(data.pages[0].comparisons.len(), 1);
        let row = &data.pages[0].comparisons[0].rows[0].change;
        assert_eq!(
            (data.pages[0].comparisons[0].label.as_str(), row.method, row.verdict),
            ("new", CiMethod::Sessions, Verdict::Slower)
        );
        assert!(row.ci_low <= 1.5 && 1.5 <= row.ci_high * 1.01, "{row:?}");
        assert_eq!(data.pages[0].histories[0].points.len(), 3);
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
            explanation: None,
        };
        // Stored under `old`: its measured (last) command is `old`, its baseline is the
        // command named after the stored label `new`.
        let experiments = vec![
            stored("new", 0, "b", &[("./bench", 1.25)], vec![]),
            stored("old", 1, "b", &[("new", 1.25), ("./old", 1.0)], vec![c]),
        ];
        let opts = Selection { reference: Some("old".into()), labels: vec!["new".into()], ..options() };
        let data = build(&experiments, &opts).unwrap();
        let row = &data.pages[0].comparisons[0].rows[0].change;
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
        let data = build(&experiments, &options()).unwrap();
        let cps = &data.pages[0].histories[0].change_points;
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
            explanation: None,
        };
        let path = dir.path().join("parse.json");
        std::fs::write(&path, serde_json::to_string(&experiment(&[("old", 1.0), ("new", 1.1)], vec![c])).unwrap())
            .unwrap();
        let experiments = from_json_files(&[&path]).unwrap();
        let labels: Vec<&str> = experiments.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["old", "new"]);
        assert!(experiments.iter().all(|e| e.benchmark == "parse"));
        assert_eq!(experiments[1].experiment.commands.len(), 2, "the candidate keeps its baseline");
        let data = build(&experiments, &options()).unwrap();
        assert_eq!(data.pages[0].comparisons[0].rows[0].change.method, CiMethod::Paired);
        assert_eq!(data.pages[0].histories[0].points.len(), 2);
    }
}
