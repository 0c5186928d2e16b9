//! From paired runs to a verdict: pair the runs of a candidate and the baseline by
//! round, estimate the ratio and its interval, and classify it as faster, slower,
//! equivalent or inconclusive against the equivalence threshold.

use perflab_model::metric::Better;
use perflab_model::{CommandResult, Comparison, Estimator, Settings, Verdict, ESTIMATED_BY};
use perflab_stats::estimator;
use perflab_stats::signed_rank::{self, PairedEstimate};
use std::collections::BTreeMap;

/// Classify an interval of the ratio candidate/baseline of a metric that improves in
/// the direction `better`.
///
/// For a lower-is-better metric `slower` when the whole interval lies above 1, `faster`
/// when below 1 (the other way round for a higher-is-better one; marked
/// `below_threshold` when it also lies within ±threshold), `equivalent` when it lies
/// within ±threshold, `inconclusive` otherwise.
pub fn classify(ci_low: f64, ci_high: f64, threshold: f64, better: Better) -> (Verdict, bool) {
    let within = ci_low >= 1.0 - threshold && ci_high <= 1.0 + threshold;
    let (larger, smaller) = match better {
        Better::Lower => (Verdict::Slower, Verdict::Faster),
        Better::Higher => (Verdict::Faster, Verdict::Slower),
    };
    if ci_low > 1.0 {
        (larger, within)
    } else if ci_high < 1.0 {
        (smaller, within)
    } else if within {
        (Verdict::Equivalent, false)
    } else {
        (Verdict::Inconclusive, false)
    }
}

/// The paired values of one metric: (baseline, candidate) for every round both ran.
pub fn pairs(baseline: &CommandResult, candidate: &CommandResult, metric: &str) -> (Vec<f64>, Vec<f64>) {
    let by_round: BTreeMap<u32, f64> =
        baseline.runs.iter().filter_map(|r| r.metric(metric).map(|v| (r.round, v))).collect();
    candidate.runs.iter().filter_map(|r| Some((*by_round.get(&r.round)?, r.metric(metric)?))).unzip()
}

/// A ratio with its interval at `level` (None: too few rounds for one yet) judged against
/// the settings' threshold in the metric's direction; the commands' names are left empty
/// for the caller.
#[allow(clippy::too_many_arguments)] // the fields of one comparison, each named once here
pub fn judged(
    metric: &str,
    ratio: f64,
    ci: Option<(f64, f64)>,
    p_value: f64,
    n: usize,
    level: f64,
    settings: &Settings,
    flags: Vec<String>,
) -> Comparison {
    let better = settings.metric_info(metric).better;
    let (verdict, below_threshold, (ci_low, ci_high)) = match ci {
        Some((lo, hi)) => {
            let (v, b) = classify(lo, hi, settings.threshold, better);
            (v, b, (lo, hi))
        }
        None => (Verdict::Inconclusive, false, (0.0, f64::INFINITY)),
    };
    Comparison {
        baseline: String::new(),
        candidate: String::new(),
        metric: metric.to_string(),
        better,
        ratio,
        ci_low,
        ci_high,
        confidence: settings.confidence,
        look_confidence: level,
        p_value,
        verdict,
        below_threshold,
        n,
        flags,
        explanation: None,
    }
}

/// Compare `candidate` with `baseline` on `metric` with an interval at `level` (the
/// per-look level; the settings' confidence is the family-wise one reported with it,
/// their threshold the equivalence margin, their metric info the direction). A metric
/// that gives no ratio (missing on a side, ≤ 0 in every paired round) is
/// [`Verdict::NotComparable`] with the reason as its first flag.
pub fn compare(
    baseline: &CommandResult,
    candidate: &CommandResult,
    metric: &str,
    level: f64,
    settings: &Settings,
) -> Comparison {
    compare_estimated(baseline, candidate, metric, level, settings, Estimator::HodgesLehmann)
}

/// [`compare`] with the ratio and interval of `estimator` (Hodges–Lehmann is
/// [`compare`]); any other is named in a flag.
pub fn compare_estimated(
    baseline: &CommandResult,
    candidate: &CommandResult,
    metric: &str,
    level: f64,
    settings: &Settings,
    estimator: Estimator,
) -> Comparison {
    let better = settings.metric_info(metric).better;
    let (base, cand) = pairs(baseline, candidate, metric);
    let comparison = |ratio: f64, ci: Option<(f64, f64)>, p_value: f64, n: usize, flags: Vec<String>| Comparison {
        baseline: baseline.name.clone(),
        candidate: candidate.name.clone(),
        ..judged(metric, ratio, ci, p_value, n, level, settings, flags)
    };
    let not_comparable = |reason: String| Comparison {
        verdict: Verdict::NotComparable,
        ..comparison(f64::NAN, None, 1.0, 0, vec![reason])
    };
    if base.is_empty() {
        return not_comparable(missing_reason(baseline, candidate, metric));
    }
    let deterministic = settings.mode == perflab_model::Mode::Instructions;
    if base.len() == 1 {
        // One run each shows no spread, so there is no interval. Counts under cachegrind
        // repeat exactly (a fixed environment; see docs/counters.md), so their ratio
        // decides; a timing from one run cannot.
        let ratio = ratio_of(base[0], cand[0]);
        let ((verdict, below_threshold), flag) = if deterministic && ratio.is_finite() {
            (classify(ratio, ratio, settings.threshold, better), ONE_RUN_COUNTS)
        } else {
            ((Verdict::Inconclusive, false), ONE_RUN_TIMES)
        };
        return Comparison {
            verdict,
            below_threshold,
            ..comparison(ratio, None, if ratio == 1.0 { 1.0 } else { f64::NAN }, 1, vec![flag.into()])
        };
    }
    if let Some((ratio, flag)) = exact_ratio(&base, &cand) {
        // Every run of each side gave the same value (deterministic counts, constant
        // RSS, a counter that stayed 0): the ratio is known exactly and needs no interval.
        let p = if ratio == 1.0 { 1.0 } else { 0.0 };
        return comparison(ratio, Some((ratio, ratio)), p, base.len(), vec![flag.into()]);
    }
    let est = paired(&base, &cand, level, estimator);
    if est.n == 0 {
        return not_comparable(non_positive_reason(baseline, &base, candidate, &cand, metric));
    }
    let mut flags = Vec::new();
    if estimator != Estimator::HodgesLehmann {
        flags.push(format!("{ESTIMATED_BY}{} (`estimation` says why)", estimator.describe()));
    }
    if est.skipped > 0 {
        flags.push(format!(
            "{} of {} rounds skipped: {metric} ≤ 0 on a side (a ratio needs positive values)",
            est.skipped,
            base.len()
        ));
    }
    comparison(est.ratio, est.ci, est.p_value, est.n, flags)
}

/// The paired estimate of `estimator` on the per-round log ratios.
fn paired(base: &[f64], cand: &[f64], level: f64, estimator: Estimator) -> PairedEstimate {
    if estimator == Estimator::HodgesLehmann {
        return signed_rank::paired(base, cand, level);
    }
    let d = log_ratios(base, cand);
    let l = estimator::locate(&d, estimator, level);
    PairedEstimate {
        n: d.len(),
        skipped: base.len().min(cand.len()) - d.len(),
        ratio: l.estimate.exp(),
        ci: l.interval.map(|i| (i.low.exp(), i.high.exp())),
        achieved_confidence: l.interval.map_or(0.0, |i| i.achieved_confidence),
        p_value: l.p_value,
    }
}

/// ln(cand/base) of the pairs where both are positive and finite.
pub fn log_ratios(base: &[f64], cand: &[f64]) -> Vec<f64> {
    let usable = |x: f64| x.is_finite() && x > 0.0;
    base.iter().zip(cand).filter(|(&b, &c)| usable(b) && usable(c)).map(|(&b, &c)| c.ln() - b.ln()).collect()
}

/// Why no round has `metric` from both commands.
fn missing_reason(baseline: &CommandResult, candidate: &CommandResult, metric: &str) -> String {
    let has = |c: &CommandResult| c.runs.iter().any(|r| r.metric(metric).is_some());
    match (has(baseline), has(candidate)) {
        (false, false) => format!("neither command has a value of {metric}"),
        (false, true) => format!("`{}` has no value of {metric}", baseline.name),
        (true, false) => format!("`{}` has no value of {metric}", candidate.name),
        (true, true) => format!("no round has a value of {metric} from both commands"),
    }
}

/// Why every paired round of `metric` was unusable for a ratio.
fn non_positive_reason(
    baseline: &CommandResult,
    base: &[f64],
    candidate: &CommandResult,
    cand: &[f64],
    metric: &str,
) -> String {
    let unusable = |v: &[f64]| v.iter().filter(|x| !(x.is_finite() && **x > 0.0)).count();
    let (b, c) = (unusable(base), unusable(cand));
    let n = base.len();
    let side = |name: &str, k: usize| {
        if k == n {
            format!("`{name}` has {metric} ≤ 0 in every round")
        } else {
            format!("`{name}` has {metric} ≤ 0 in {k} of {n} rounds")
        }
    };
    let what = match (b, c) {
        (_, 0) => side(&baseline.name, b),
        (0, _) => side(&candidate.name, c),
        _ => format!("{} and {}", side(&baseline.name, b), side(&candidate.name, c)),
    };
    format!("{what}: a ratio needs positive values on both sides")
}

/// The flag of a comparison from one run of each command, by kind of metric.
pub const ONE_RUN_COUNTS: &str =
    "one run each: no interval; cachegrind's counts repeat exactly in a fixed environment, so the ratio is exact (-r 3 checks it)";
pub(crate) const ONE_RUN_TIMES: &str =
    "one run each: no interval and no verdict (a single run cannot show its own spread)";
/// The flag of a comparison whose every run repeated one value.
pub(crate) const EXACT: &str = "exact: every run repeated the same value";
/// The flag of a comparison whose every run on both sides was 0.
pub const ALL_ZERO: &str = "exact: 0 in every run of both";

/// `cand / base`, 1 for 0 / 0 (equal), NaN when only the baseline is 0.
fn ratio_of(base: f64, cand: f64) -> f64 {
    if base != 0.0 {
        cand / base
    } else if cand == 0.0 {
        1.0
    } else {
        f64::NAN
    }
}

/// The exact ratio, and its flag, when both sides are constant and finite: positive
/// (deterministic counts) or both 0 (a counter that never fired is equal to another
/// that never fired, not dropped).
fn exact_ratio(base: &[f64], cand: &[f64]) -> Option<(f64, &'static str)> {
    let constant = |v: &[f64]| v.iter().all(|x| *x == v[0]) && v[0].is_finite();
    if !(constant(base) && constant(cand)) {
        return None;
    }
    match (base[0], cand[0]) {
        (b, c) if b == 0.0 && c == 0.0 => Some((1.0, ALL_ZERO)),
        (b, c) if b > 0.0 && c > 0.0 => Some((c / b, EXACT)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_model::Run;

    fn result(name: &str, walls: &[f64]) -> CommandResult {
        CommandResult {
            name: name.into(),
            argv: vec![],
            command_line: name.into(),
            parameters: Default::default(),
            runs: walls
                .iter()
                .enumerate()
                .map(|(i, w)| Run { round: i as u32, wall_s: *w, ..Default::default() })
                .collect(),
            summary: Default::default(),
        }
    }

    fn settings() -> Settings {
        Settings::default()
    }

    #[test]
    fn classification_follows_the_interval() {
        let lower = Better::Lower;
        assert_eq!(classify(1.02, 1.03, 0.01, lower), (Verdict::Slower, false));
        assert_eq!(classify(1.002, 1.008, 0.01, lower), (Verdict::Slower, true));
        assert_eq!(classify(0.95, 0.97, 0.01, lower), (Verdict::Faster, false));
        assert_eq!(classify(0.995, 1.004, 0.01, lower), (Verdict::Equivalent, false));
        assert_eq!(classify(0.98, 1.02, 0.01, lower), (Verdict::Inconclusive, false));
    }

    #[test]
    fn pairs_by_round_and_skips_unmatched_rounds() {
        let a = result("A", &[1.0, 2.0, 3.0]);
        let mut b = result("B", &[10.0, 20.0, 30.0]);
        b.runs.remove(1);
        assert_eq!(pairs(&a, &b, "wall_s"), (vec![1.0, 3.0], vec![10.0, 30.0]));
    }

    fn counts(name: &str, values: &[f64]) -> CommandResult {
        let mut r = result(name, &[]);
        r.runs = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut run = Run { round: i as u32, wall_s: 1.0, ..Default::default() };
                run.counters.insert("context-switches".into(), perflab_model::CounterReading::value(*v, false));
                run
            })
            .collect();
        r
    }

    #[test]
    fn constant_values_give_an_exact_ratio() {
        let c = compare(&result("A", &[100.0, 100.0]), &result("B", &[102.0, 102.0]), "wall_s", 0.95, &settings());
        assert_eq!((c.ci_low, c.ci_high, c.verdict, c.below_threshold), (1.02, 1.02, Verdict::Slower, false));
        let same = compare(&result("A", &[5.0, 5.0]), &result("B", &[5.0, 5.0]), "wall_s", 0.95, &settings());
        assert_eq!(same.verdict, Verdict::Equivalent);
    }

    #[test]
    fn a_counter_identical_or_zero_in_every_run_is_equivalent_not_dropped() {
        // Six rounds at the Bonferroni-corrected level of a secondary metric: no Wilcoxon
        // interval exists, but identical values need none.
        let level = 0.999;
        let c = compare(&counts("A", &[7.0; 6]), &counts("B", &[7.0; 6]), "context-switches", level, &settings());
        assert_eq!((c.verdict, c.ratio, c.flags.as_slice()), (Verdict::Equivalent, 1.0, &[EXACT.to_string()][..]));
        let zero = compare(&counts("A", &[0.0; 6]), &counts("B", &[0.0; 6]), "context-switches", level, &settings());
        assert_eq!((zero.verdict, zero.ratio, zero.ci_low, zero.ci_high), (Verdict::Equivalent, 1.0, 1.0, 1.0));
        assert_eq!(zero.flags, [ALL_ZERO]);
    }

    #[test]
    fn another_estimator_gives_its_own_interval_and_says_so() {
        // 30 rounds: most agree to 0.1 %, five are off by ±20 % (a change of phase).
        let base: Vec<f64> = (0..30).map(|i| 1.0 + 0.001 * ((i * 7 % 11) as f64 - 5.0)).collect();
        let cand: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let wobble = 1.0 + 0.002 * ((i * 5 % 13) as f64 - 6.0) / 6.0;
                let phase = if i % 6 != 0 {
                    1.0
                } else if i % 12 == 0 {
                    1.2
                } else {
                    0.8
                };
                b * 1.02 * wobble * phase
            })
            .collect();
        let (a, b) = (result("A", &base), result("B", &cand));
        let hl = compare(&a, &b, "wall_s", 0.95, &settings());
        let median = compare_estimated(&a, &b, "wall_s", 0.95, &settings(), Estimator::Median);
        assert!(hl.flags.is_empty(), "{:?}", hl.flags);
        assert_eq!(
            median.flags,
            [format!("{ESTIMATED_BY}the median with the sign-test interval (`estimation` says why)")]
        );
        // Both cover the 2 % change, each with its own interval.
        for c in [&hl, &median] {
            assert!(c.ci_low <= 1.02 && 1.02 <= c.ci_high && c.verdict == Verdict::Slower, "{c:?}");
        }
        assert_ne!((median.ci_low, median.ci_high), (hl.ci_low, hl.ci_high));
        let trimmed = compare_estimated(&a, &b, "wall_s", 0.95, &settings(), Estimator::TrimmedMean);
        assert_eq!((trimmed.n, trimmed.verdict), (30, Verdict::Slower));
    }
}
