//! One answer per pair: two labels (or a label and the baseline build it was measured
//! beside) of one benchmark on one machine are compared once, by the best method their
//! data allow — the paired rounds of an experiment that measured both interleaved
//! (`perflab run --baseline`, `compare --save`), else their separate sessions with the
//! machine's session-to-session noise — and every view prints that one record: `run`'s
//! line, `history`'s change from the previous label, the report's chart, counters,
//! geometric mean and builds × machines table.

use super::ratio::{self, Ratio, DEFAULT_THRESHOLD};
use super::sessions::BenchmarkSessions;
use crate::StoredExperiment;
use perflab_model::metric;
use perflab_model::{Comparison, Verdict};
use perflab_stats::sessions::SessionNoise;

/// Which metric a pair is compared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricChoice<'a> {
    /// Exactly this metric (`--metric`, or a row of the counters table).
    Asked(&'a str),
    /// None was asked for: a pair measured in one session is compared on the metric that
    /// session decided on (what `run` printed for it); pairs from separate sessions on
    /// this one (the metric the stored sessions decided on).
    Decided(&'a str),
}

impl<'a> MetricChoice<'a> {
    /// The metric of pairs from separate sessions (and of history's medians).
    pub fn name(self) -> &'a str {
        match self {
            MetricChoice::Asked(m) | MetricChoice::Decided(m) => m,
        }
    }
}

/// The label a command of a stored experiment measured: the measured (last) command is
/// the experiment's label, as in `perflab history`; another command named like a known
/// label or build (an interleaved baseline) measured that one.
pub(crate) fn label_of<'a>(e: &'a StoredExperiment, command_name: &'a str, labels: &[String]) -> Option<&'a str> {
    if e.experiment.commands.last().is_some_and(|c| c.name == command_name) {
        Some(&e.label)
    } else {
        labels.iter().any(|l| l == command_name).then_some(command_name)
    }
}

/// An experiment that measured `reference` and `label` interleaved, in paired rounds.
#[derive(Debug, Clone, Copy)]
pub struct PairedSession<'a> {
    /// The experiment.
    pub experiment: &'a StoredExperiment,
    /// The indices of the two commands in the experiment.
    pub reference: usize,
    /// The index of the label's command.
    pub label: usize,
    /// True when the experiment's baseline was `label` (its ratios are inverted).
    pub inverted: bool,
}

/// The latest experiment among `experiments` (one benchmark's, on one machine) that
/// compared `reference` and `label` in paired rounds; `labels` are the known labels and
/// builds (to recognise an interleaved baseline command).
pub fn paired_session<'a>(
    experiments: &[&'a StoredExperiment],
    labels: &[String],
    reference: &str,
    label: &str,
) -> Option<PairedSession<'a>> {
    // Only an experiment holding both sides (as its label or a command's name) can pair
    // them: checked first, as a report asks this of thousands of benchmarks.
    let holds =
        |e: &StoredExperiment, side: &str| e.label == side || e.experiment.commands.iter().any(|c| c.name == side);
    for e in experiments.iter().rev().filter(|e| holds(e, reference) && holds(e, label)) {
        for c in &e.experiment.comparisons {
            let inverted = match (label_of(e, &c.baseline, labels), label_of(e, &c.candidate, labels)) {
                (Some(b), Some(k)) if b == reference && k == label => false,
                (Some(b), Some(k)) if b == label && k == reference => true,
                _ => continue,
            };
            let index = |name: &str| e.experiment.commands.iter().position(|command| command.name == name);
            let (Some(b), Some(k)) = (index(&c.baseline), index(&c.candidate)) else { continue };
            let (reference, label) = if inverted { (k, b) } else { (b, k) };
            return Some(PairedSession { experiment: e, reference, label, inverted });
        }
    }
    None
}

impl<'a> PairedSession<'a> {
    /// The session's comparison of the pair on the metric `choice` asks for: the stored
    /// one, else (a metric the experiment did not compare, read with its runs) computed
    /// from its paired runs as the engine would have; None when neither gives a ratio.
    pub fn comparison(&self, choice: MetricChoice) -> Option<Ratio> {
        let e = &self.experiment.experiment;
        let metric = match choice {
            MetricChoice::Asked(m) => m,
            MetricChoice::Decided(m) => {
                if self.stored(&e.primary_metric).is_some() {
                    e.primary_metric.as_str()
                } else {
                    m
                }
            }
        };
        if let Some(c) = self.stored(metric) {
            return Some(ratio::paired(c, self.inverted));
        }
        let (baseline, candidate) =
            if self.inverted { (self.label, self.reference) } else { (self.reference, self.label) };
        let (baseline, candidate) = (e.commands.get(baseline)?, e.commands.get(candidate)?);
        if baseline.runs.is_empty() || candidate.runs.is_empty() {
            return None;
        }
        let c =
            perflab_engine::analysis::verdict::compare(baseline, candidate, metric, e.settings.confidence, &e.settings);
        if c.verdict == Verdict::NotComparable {
            return None;
        }
        let mut r = ratio::paired(&c, self.inverted);
        r.note = Some(format!(
            "{metric} was not among the metrics the session compared: its ratio comes from the session's paired runs, at {:.0} % for this row alone",
            e.settings.confidence * 100.0
        ));
        Some(r)
    }

    /// The stored comparison of the pair on `metric`, when it gave a ratio.
    fn stored(&self, metric: &str) -> Option<&'a Comparison> {
        let e = &self.experiment.experiment;
        let (baseline, candidate) =
            if self.inverted { (self.label, self.reference) } else { (self.reference, self.label) };
        let (baseline, candidate) = (&e.commands.get(baseline)?.name, &e.commands.get(candidate)?.name);
        e.comparisons.iter().find(|c| {
            c.metric == metric
                && c.verdict != Verdict::NotComparable
                && &c.baseline == baseline
                && &c.candidate == candidate
        })
    }

    /// The median of `metric` over the successful runs of the pair's two commands
    /// (reference, label), as the session measured them.
    pub fn medians(&self, metric: &str) -> (Option<f64>, Option<f64>) {
        let commands = &self.experiment.experiment.commands;
        let median = |i: usize| {
            let values: Vec<f64> = commands.get(i)?.values(metric).into_iter().filter(|v| v.is_finite()).collect();
            (!values.is_empty()).then(|| perflab_stats::summary::median(&values))
        };
        (median(self.reference), median(self.label))
    }
}

/// `label` ÷ `reference` for one benchmark on one machine, from its `experiments`: the
/// paired comparison of the latest experiment that measured both interleaved, else the
/// labels' sessions (`sessions`: this benchmark's) under the machine's session noise
/// `noise`. `labels` are the known labels and builds (to recognise an interleaved
/// baseline command). None when neither gives a ratio.
pub fn pair_comparison(
    experiments: &[&StoredExperiment],
    labels: &[String],
    reference: &str,
    label: &str,
    choice: MetricChoice,
    sessions: &BenchmarkSessions,
    noise: &SessionNoise,
) -> Option<Ratio> {
    pair_comparison_at(experiments, labels, reference, label, choice, sessions, noise, ratio::CONFIDENCE)
}

/// [`pair_comparison`] with a comparison between sessions at `confidence` (a family's
/// share). A paired session keeps the interval its run decided with (a `run` of a suite
/// decided at its own family's level).
#[allow(clippy::too_many_arguments)]
pub fn pair_comparison_at(
    experiments: &[&StoredExperiment],
    labels: &[String],
    reference: &str,
    label: &str,
    choice: MetricChoice,
    sessions: &BenchmarkSessions,
    noise: &SessionNoise,
    confidence: f64,
) -> Option<Ratio> {
    if let Some(found) = paired_session(experiments, labels, reference, label).and_then(|s| s.comparison(choice)) {
        return Some(found);
    }
    let metric = choice.name();
    let settings = experiments.iter().rev().find(|e| e.label == label).map(|e| &e.experiment.settings);
    let threshold = settings.map_or(DEFAULT_THRESHOLD, |s| s.threshold);
    let better = settings.map_or(metric::info(metric).better, |s| s.metric_info(metric).better);
    ratio::between_sessions_at(
        sessions.label(reference)?,
        sessions.label(label)?,
        metric,
        noise,
        threshold,
        better,
        confidence,
    )
}

/// The builds a stored experiment measured beside its label (the baseline commands of
/// interleaved experiments) that are not themselves stored labels, in order of first
/// appearance: `run --label new --baseline base` stores `base` only this way.
pub fn paired_builds<'a>(
    experiments: impl IntoIterator<Item = &'a StoredExperiment>,
    labels: &[String],
) -> Vec<String> {
    let known: std::collections::HashSet<&str> = labels.iter().map(String::as_str).collect();
    let mut builds: Vec<String> = Vec::new();
    for e in experiments {
        let commands = &e.experiment.commands;
        // An interleaved experiment's baseline is its first command, compared with the rest.
        let (Some(baseline), Some(measured)) = (commands.first(), commands.last()) else { continue };
        let compared =
            e.experiment.comparisons.iter().any(|c| c.baseline == baseline.name && c.candidate == measured.name);
        if commands.len() > 1 && compared && !known.contains(baseline.name.as_str()) && !builds.contains(&baseline.name)
        {
            builds.push(baseline.name.clone());
        }
    }
    builds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{interleaved, stored};
    use crate::history::sessions::{collect, MachineNoise};

    #[test]
    fn a_pair_measured_in_one_session_is_its_paired_comparison_whichever_way_it_is_asked() {
        let exps = [stored("v1", 1, "hot", "h", &[1.0; 8]), interleaved("v2", 2, "hot", "v1")];
        let refs: Vec<&StoredExperiment> = exps.iter().collect();
        let labels = vec!["v1".to_string(), "v2".to_string()];
        let sessions = collect(refs.iter().copied(), "uncontended_s");
        let noise = MachineNoise::new(&sessions, ratio::SESSION_PRIOR).between("v1", "v2");
        let none = BenchmarkSessions::default();
        // Asked for uncontended_s by the page, the pair answers on what its session decided.
        let r =
            pair_comparison(&refs, &labels, "v1", "v2", MetricChoice::Decided("uncontended_s"), &none, &noise).unwrap();
        assert_eq!(
            (r.metric.as_str(), r.method, r.ratio, r.verdict),
            ("wall_s", ratio::CiMethod::Paired, 1.2, Verdict::Slower)
        );
        let back = pair_comparison(&refs, &labels, "v2", "v1", MetricChoice::Asked("wall_s"), &none, &noise).unwrap();
        assert_eq!(
            (back.ratio, back.ci_low, back.ci_high, back.verdict),
            (1.0 / 1.2, 1.0 / 1.22, 1.0 / 1.18, Verdict::Faster)
        );
        // A metric the session did not compare comes from its paired runs, and says so.
        let cpu = pair_comparison(&refs, &labels, "v1", "v2", MetricChoice::Asked("cpu_s"), &none, &noise).unwrap();
        assert_eq!(cpu.method, ratio::CiMethod::Paired);
        assert!((cpu.ratio - 1.2).abs() < 1e-9 && cpu.note.as_deref().unwrap().contains("not among"), "{cpu:?}");
    }

    #[test]
    fn a_baseline_build_that_is_no_label_is_found_and_paired() {
        let exps = [interleaved("new", 1, "hot", "base")];
        let labels = vec!["new".to_string()];
        let builds = paired_builds(&exps, &labels);
        assert_eq!(builds, ["base"]);
        let known: Vec<String> = labels.iter().chain(&builds).cloned().collect();
        let refs: Vec<&StoredExperiment> = exps.iter().collect();
        let noise = MachineNoise::new(&[], ratio::SESSION_PRIOR).between("base", "new");
        let r = pair_comparison(
            &refs,
            &known,
            "base",
            "new",
            MetricChoice::Decided("wall_s"),
            &BenchmarkSessions::default(),
            &noise,
        )
        .unwrap();
        assert_eq!((r.method, r.ratio), (ratio::CiMethod::Paired, 1.2));
        let s = paired_session(&refs, &known, "base", "new").unwrap();
        let (b, n) = s.medians("wall_s");
        assert!((n.unwrap() / b.unwrap() - 1.2).abs() < 1e-9);
    }
}
