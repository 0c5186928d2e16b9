//! From stored experiments (or perflab JSON files) to [`ReportData`]: which runs belong
//! to which benchmark and label, the ratio and its interval per benchmark, counters and
//! machines. History points and change points come from [`perflab_store::history::build`], so
//! the page and `perflab history` always agree.

use super::error::ReportError;
use super::{
    Control, CounterRow, CounterTable, Explained, LabelComparison, LayoutSpreadSeen, MachineGroup, MachinePage, Ratio,
    RelativeTime, ReportData, Why,
};
use perflab_model::{metric, Comparison, Experiment, Run, StopReason, Verdict};
use perflab_store::history::pair::{self, MetricChoice};
use perflab_store::history::sessions::{self, BenchmarkSessions, MachineNoise};
use perflab_store::history::{controls, matrix, measured_values, ratio};
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
    /// The page's title.
    pub title: String,
    /// The label ratios are relative to; default: the first label.
    pub reference: Option<String>,
    /// Labels to compare with the reference; default: the last label.
    pub labels: Vec<String>,
    /// The metric compared and plotted.
    pub metric: String,
    /// True when the user named `metric` (every pair is compared on it); otherwise a pair
    /// measured in one session is compared on the metric that session decided on.
    pub metric_asked: bool,
    /// Keep only results from this machine (fingerprint prefix or hostname).
    pub machine: Option<String>,
    /// Why `metric` was chosen when none was asked for (shown first among the notes).
    pub metric_note: Option<String>,
    /// The incomplete experiments left out of the page, said
    /// (`perflab_store::history::leave_out_incomplete`).
    pub left_out: Option<String>,
}

/// The reference label and the compared labels the options ask for among the stored
/// `labels` and the `builds` measured only beside them (`run --label new --baseline
/// base` stores `base` only as the baseline of `new`'s experiments). Without
/// `--reference` the oldest label is the reference — or, when only one label is
/// stored, the build it was measured beside, so its paired comparisons are shown.
fn chosen_labels(
    labels: &[String],
    builds: &[String],
    options: &Selection,
) -> Result<(String, Vec<String>), ReportError> {
    let known = |l: &String| labels.contains(l) || builds.contains(l);
    let listed = || labels.iter().chain(builds).cloned().collect::<Vec<_>>().join(", ");
    let reference = match &options.reference {
        Some(r) if known(r) => r.clone(),
        Some(r) => return Err(ReportError::NoReference { label: r.clone(), known: listed() }),
        None if labels.len() == 1 && !builds.is_empty() => builds[0].clone(),
        None => labels[0].clone(),
    };
    let compared: Vec<String> = if options.labels.is_empty() {
        labels.last().filter(|l| **l != reference).cloned().into_iter().collect()
    } else {
        for l in &options.labels {
            if !known(l) {
                return Err(ReportError::NoLabel { label: l.clone(), known: listed() });
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
    let builds = pair::paired_builds(&lean, &labels);
    let (reference, compared) = chosen_labels(&labels, &builds, options)?;
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
            return Err(ReportError::NoMachine(wanted.clone()));
        }
    }
    if experiments.is_empty() {
        return Err(ReportError::NothingToReport);
    }
    let labels = ordered_labels(&experiments);
    let builds = pair::paired_builds(experiments.iter().copied(), &labels);
    let (reference, compared) = chosen_labels(&labels, &builds, options)?;
    let choice = if options.metric_asked {
        MetricChoice::Asked(&options.metric)
    } else {
        MetricChoice::Decided(&options.metric)
    };
    if !experiments.iter().any(|e| !measured_values(e, &options.metric).is_empty()) {
        return Err(ReportError::NoSuchMetric(options.metric.clone()));
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
    notes.extend(options.left_out.iter().cloned());
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
        compared.iter().map(|l| matrix::matrix(&experiments, choice, &reference, l)).collect()
    } else {
        Vec::new()
    };
    let mut pages = Vec::new();
    for fingerprint in &fingerprints {
        let group: Vec<&StoredExperiment> =
            experiments.iter().copied().filter(|e| e.machine_fingerprint == *fingerprint).collect();
        let description = group[0].experiment.machine.describe(fingerprint);
        let prefix = if several { format!("{description}: ") } else { String::new() };
        match machine_page(&group, &reference, &compared, choice, description, &mut notes, &prefix) {
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
    choice: MetricChoice,
    description: String,
    notes: &mut Vec<String>,
    prefix: &str,
) -> Option<MachinePage> {
    let metric = choice.name();
    let labels = ordered_labels(experiments);
    // The stored labels and the builds measured only beside them: each pair's record
    // may come from a session that paired them.
    let mut known = labels.clone();
    known.extend(pair::paired_builds(experiments.iter().copied(), &labels));
    let shown: Vec<String> = std::iter::once(reference.to_string()).chain(compared.iter().cloned()).collect();
    let samples = Samples::collect(experiments, metric, &shown);
    if samples.benchmarks.is_empty() {
        return None;
    }
    let mut by_benchmark: HashMap<&str, Vec<&StoredExperiment>> = HashMap::new();
    for e in experiments {
        by_benchmark.entry(e.benchmark.as_str()).or_default().push(e);
    }
    let has = |l: &str| known.iter().any(|x| x == l);
    // Every experiment is a session of its label; the machine's history sizes how much
    // sessions differ (history::sessions).
    let sessions = sessions::collect(experiments.iter().copied(), metric);
    let machine_noise = MachineNoise::new(&sessions, ratio::SESSION_PRIOR);
    let mut comparisons = Vec::new();
    for label in compared.iter().filter(|l| has(reference) && has(l)) {
        let noise = machine_noise.between(reference, label);
        let mut rows = Vec::new();
        let mut controls = Vec::new();
        let mut missing = Vec::new();
        for &benchmark in &samples.benchmarks {
            let own = by_benchmark.get(benchmark).map_or(&[][..], Vec::as_slice);
            let benchmark_sessions =
                sessions.iter().find(|b| b.benchmark == benchmark).unwrap_or(&sessions::NO_SESSIONS);
            let record = pair::pair_comparison(own, &known, reference, label, choice, benchmark_sessions, &noise);
            if controls::same_command(own, reference, label) {
                let change = record.ok_or_else(|| {
                    format!("the same command for both; measured once, in {label}'s session: nothing to compare")
                });
                controls.push(Control { benchmark: benchmark.to_string(), change });
                continue;
            }
            match record {
                Some(change) => rows.push(RelativeTime {
                    benchmark: benchmark.to_string(),
                    change,
                    layout_spread: layout_spread(own, &[reference, label]),
                }),
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
        notes.extend(method_notes(&rows, &controls, reference, label, metric, &noise, prefix));
        for row in rows.iter().filter_map(|r| r.change.note.as_ref().map(|n| (&r.benchmark, n))) {
            notes.push(format!("{prefix}{}: {}", row.0, row.1));
        }
        if let Some(build) = paired_elsewhere(experiments, &known, reference, label) {
            notes.push(format!(
                "{prefix}{label} was measured beside {build} in one session (run --baseline): `--reference {build}` shows those paired comparisons"
            ));
        }
        comparisons.push(LabelComparison { label: label.clone(), rows, controls });
    }
    let busy = sessions.iter().flat_map(|b| b.labels.iter().map(move |l| (&b.benchmark, l)));
    for (benchmark, l) in busy.filter(|(_, l)| l.busy() && shown.contains(&l.label)) {
        let note = format!(
            "{prefix}{} was measured on a busy machine: {:.0} % of {benchmark}'s wall time was spent waiting for a CPU a neighbour held",
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
    let counters = counter_table(&samples, &by_benchmark, &known, reference, &comparisons, compared, metric);
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

/// What the notes say of how a label's ratios were made: sessions and their noise,
/// metrics other than the page's (a pair measured in one session answers on the metric
/// it decided on), and controls that moved.
fn method_notes(
    rows: &[RelativeTime],
    controls: &[Control],
    reference: &str,
    label: &str,
    metric: &str,
    noise: &perflab_stats::sessions::SessionNoise,
    prefix: &str,
) -> Vec<String> {
    let mut notes = Vec::new();
    let paired = rows.iter().filter(|r| r.change.method == ratio::CiMethod::Paired).count();
    let separate = rows.iter().filter(|r| r.change.method == ratio::CiMethod::Sessions).count()
        + controls.iter().filter(|c| c.change.as_ref().is_ok_and(|r| r.method == ratio::CiMethod::Sessions)).count();
    if separate > 0 {
        let paired = match paired {
            0 => String::new(),
            n => format!("; {n} ratio(s) are paired rounds of one session, without that noise"),
        };
        notes.push(format!(
            "{prefix}{label} and {reference} were measured in separate sessions for {separate} benchmark(s): their intervals include the session-to-session noise of this machine, σ = {:.2} % ({}){paired}",
            noise.tau * 100.0,
            describe_noise(noise)
        ));
    }
    let other: Vec<&str> = rows.iter().filter(|r| r.change.metric != metric).map(|r| r.benchmark.as_str()).collect();
    if !other.is_empty() {
        let metrics: BTreeSet<&str> =
            rows.iter().filter(|r| r.change.metric != metric).map(|r| r.change.metric.as_str()).collect();
        notes.push(format!(
            "{prefix}{label} vs {reference}: {} ratio(s) are on {}, the metric their session decided on (what `run` printed for them): {}; --metric {metric} compares every pair on {metric}",
            other.len(),
            metrics.into_iter().collect::<Vec<_>>().join(", "),
            abbreviate(&other)
        ));
    }
    let moved: Vec<String> = controls
        .iter()
        .filter_map(|c| {
            let r = c.change.as_ref().ok()?;
            (r.verdict == Verdict::Slower || r.verdict == Verdict::Faster).then(|| {
                format!(
                    "{} {} [{}, {}]",
                    c.benchmark,
                    super::svg::format_change(r.ratio),
                    super::svg::format_change(r.ci_low),
                    super::svg::format_change(r.ci_high)
                )
            })
        })
        .collect();
    if !moved.is_empty() {
        notes.push(format!(
            "{prefix}warning: controls moved between {reference} and {label} (the same command under both): {}; the sessions differ beyond their noise, and every ratio from separate sessions carries that difference (paired ones do not)",
            moved.join(", ")
        ));
    }
    notes
}

/// The build `label` was measured beside in one session when that is not `reference`
/// (the latest such), for a pointer to its paired comparisons.
fn paired_elsewhere<'a>(
    experiments: &[&'a StoredExperiment],
    known: &[String],
    reference: &str,
    label: &str,
) -> Option<&'a str> {
    experiments.iter().rev().filter(|e| e.label == label).find_map(|e| {
        let baseline = &e.experiment.commands.first()?.name;
        let paired = e.experiment.commands.len() > 1
            && baseline != reference
            && known.contains(baseline)
            && e.experiment.comparisons.iter().any(|c| &c.baseline == baseline);
        paired.then_some(baseline.as_str())
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

/// Every other measured metric per benchmark (the chart's metric left out), under the
/// reference and each compared label, with the pair's record on it: the session that
/// paired them (its stored comparison, or one computed from its paired runs), else
/// their sessions with this metric's session noise. A row without a ratio says why.
fn counter_table(
    samples: &Samples,
    by_benchmark: &HashMap<&str, Vec<&StoredExperiment>>,
    known: &[String],
    reference: &str,
    comparisons: &[LabelComparison],
    compared: &[String],
    primary: &str,
) -> CounterTable {
    let mut rows = Vec::new();
    let shown: Vec<String> = std::iter::once(reference.to_string()).chain(compared.iter().cloned()).collect();
    // The sessions of each metric, and the machine's noise between them, read once.
    let mut noise_of: HashMap<String, (Vec<BenchmarkSessions>, MachineNoise)> = HashMap::new();
    let chart_metric = |label: &str, benchmark: &str| {
        comparisons
            .iter()
            .find(|c| c.label == label)
            .and_then(|c| c.rows.iter().find(|r| r.benchmark == benchmark))
            .map_or(primary, |r| r.change.metric.as_str())
    };
    let is_control = |label: &str, benchmark: &str| {
        comparisons.iter().any(|c| c.label == label && c.controls.iter().any(|k| k.benchmark == benchmark))
    };
    for benchmark in &samples.benchmarks {
        let own = by_benchmark.get(benchmark).map_or(&[][..], Vec::as_slice);
        for name in samples.other_metrics(benchmark, &shown, primary) {
            if compared.is_empty() {
                let value = samples.values(benchmark, reference, &name).map(|v| perflab_stats::summary::median(&v));
                if value.is_some() {
                    rows.push(CounterRow {
                        benchmark: benchmark.to_string(),
                        metric: name.clone(),
                        label: None,
                        reference_value: value,
                        value: None,
                        change: Err("no label compared with the reference".into()),
                    });
                }
                continue;
            }
            for label in compared {
                if name == chart_metric(label, benchmark) {
                    continue;
                }
                let paired = pair::paired_session(own, known, reference, label);
                let (reference_value, value) = match &paired {
                    Some(session) => session.medians(&name),
                    None => {
                        let median =
                            |l: &str| samples.values(benchmark, l, &name).map(|v| perflab_stats::summary::median(&v));
                        (median(reference), median(label))
                    }
                };
                if reference_value.is_none() && value.is_none() {
                    continue;
                }
                let change = match paired.and_then(|s| s.comparison(MetricChoice::Asked(&name))) {
                    Some(r) => Ok(r),
                    None => {
                        let (metric_sessions, noise) = noise_of.entry(name.clone()).or_insert_with(|| {
                            let full = own_labels_experiments(by_benchmark, &shown);
                            let collected = sessions::collect(full, &name);
                            let noise = MachineNoise::new(&collected, ratio::SESSION_PRIOR);
                            (collected, noise)
                        });
                        let benchmark_sessions = metric_sessions
                            .iter()
                            .find(|b| &b.benchmark.as_str() == benchmark)
                            .unwrap_or(&sessions::NO_SESSIONS);
                        let threshold = own
                            .iter()
                            .rev()
                            .find(|e| e.label == *label)
                            .map_or(ratio::DEFAULT_THRESHOLD, |e| e.experiment.settings.threshold);
                        let better =
                            own.iter().rev().find(|e| e.label == *label).map_or(metric::info(&name).better, |e| {
                                e.experiment.settings.metric_info(&name).better
                            });
                        match (benchmark_sessions.label(reference), benchmark_sessions.label(label)) {
                            (Some(a), Some(b)) => {
                                let noise = noise.between(reference, label);
                                ratio::between_sessions(a, b, &name, &noise, threshold, better)
                                    .map(|r| withheld_without_own_noise(r, &noise))
                                    .ok_or_else(|| format!("no interval: {name} is not positive in the sessions of both"))
                            }
                            _ if is_control(label, benchmark) => Err(format!(
                                "a control (the same command for both): measured once, in {label}'s session; nothing to compare"
                            )),
                            _ if reference_value.is_none() => Err(format!("not measured under {reference}")),
                            _ if value.is_none() => Err(format!("not measured under {label}")),
                            (a, _) => {
                                let lacking = if a.is_none() { reference } else { label.as_str() };
                                if own.iter().any(|e| e.label == lacking) {
                                    Err(format!("no interval: {name} is not positive in {lacking}'s runs"))
                                } else {
                                    Err(format!(
                                        "no interval: not measured in one session with {reference}, and {lacking} has no session of its own"
                                    ))
                                }
                            }
                        }
                    }
                };
                rows.push(CounterRow {
                    benchmark: benchmark.to_string(),
                    metric: name.clone(),
                    label: Some(label.clone()),
                    reference_value,
                    value,
                    change,
                });
            }
        }
    }
    CounterTable { reference: reference.to_string(), rows }
}

/// A cross-session ratio of a metric other than time whose session-to-session noise
/// comes from the prior alone (no repeated sessions or other steps of it were read): the
/// prior was sized for wall time (docs/statistics.md), and a 1 ms sleep's CPU time or a
/// counter varies between sessions far more, so its verdict is withheld and the row
/// says why.
fn withheld_without_own_noise(mut r: Ratio, noise: &perflab_stats::sessions::SessionNoise) -> Ratio {
    let timed = [metric::WALL, metric::UNCONTENDED].contains(&r.metric.as_str());
    if !timed && noise.replicate_df == 0.0 && noise.step_df == 0.0 {
        r.verdict = Verdict::Inconclusive;
        r.note = Some(format!(
            "verdict withheld: how much {} varies between sessions on this machine is unknown (the interval assumes the prior's σ = {:.1} %, sized for wall time); measure both in one session (run --baseline) for a paired ratio",
            r.metric,
            ratio::SESSION_PRIOR.tau * 100.0
        ));
    }
    r
}

/// The experiments of the `shown` labels (read in full, with every metric's runs).
fn own_labels_experiments<'a>(
    by_benchmark: &HashMap<&str, Vec<&'a StoredExperiment>>,
    shown: &[String],
) -> Vec<&'a StoredExperiment> {
    let mut out: Vec<&StoredExperiment> =
        by_benchmark.values().flatten().copied().filter(|e| shown.contains(&e.label)).collect();
    // Sessions keep stored (label) order.
    out.sort_by_key(|e| (e.label_order, e.id));
    out
}

/// Environment facts of one session's harness, not of the machine: the spawner's peak-RSS
/// floor, the cgroup it created (its path names its process id), how busy the machine
/// was. Labels that differ only in these ran on the same machine with the same setup.
const SESSION_FACTS: [&str; 4] =
    ["max_rss_floor_kib", "run_queue_wait", perflab_sys::spawn::contention::BUSY_FACT, controls::USES_BUILD_FACT];

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

/// The layout spread of a benchmark's newest layout experiment under one of `labels`
/// (kept as a fact of the stored experiment, `analysis::layouts::SPREAD_FACT`).
fn layout_spread(own: &[&StoredExperiment], labels: &[&str]) -> Option<LayoutSpreadSeen> {
    use perflab_engine::analysis::layouts::{SPREAD_FACT, SPREAD_METRIC_FACT};
    own.iter()
        .filter(|e| labels.contains(&e.label.as_str()))
        .filter_map(|e| {
            let facts = &e.experiment.environment;
            let spread = facts.get(SPREAD_FACT)?.parse::<f64>().ok().filter(|s| s.is_finite())?;
            let metric = facts.get(SPREAD_METRIC_FACT).cloned().unwrap_or_default();
            Some((e.id, LayoutSpreadSeen { spread, metric, label: e.label.clone() }))
        })
        .max_by_key(|(id, _)| *id)
        .map(|(_, seen)| seen)
}

#[cfg(test)]
mod tests;
