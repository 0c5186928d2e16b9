//! Why a candidate differs, function by function (`compare --explain`): from the samples
//! of every compared run, each function's time per run in both commands, the ratio of the
//! means with Fieller's interval, a verdict, and its contribution to the total change in
//! time per run and as a share of it, all paired by round. Pure: runs in, an
//! [`Explanation`] out (docs/statistics.md, "Explanations").
//!
//! * **Values**: a function's time in a run is the sum of its samples' periods (self
//!   time). Means per run make contributions add up to the total exactly; ratios of the
//!   means survive functions absent from some runs (zero samples), which per-round log
//!   ratios do not.
//! * **Which functions**: those with at least `MIN_TOTAL_SAMPLES` samples over all the
//!   rounds in either command (so more rounds name smaller functions), at most
//!   `MAX_TESTED` of them, chosen by the pooled count (blind to the direction of any
//!   change); the rest are summed into one `[other functions]` row, tested like a
//!   function, so nothing escapes the total, and its largest members are named.
//! * **Every row an interval**: a sampled row whose values did not vary over the rounds
//!   gets the counts' resolution (±½ sample per run) instead of a zero-width interval; a
//!   row without one says why.
//! * **Multiplicity**: Bonferroni over the rows tested (and the candidates), at the level
//!   of the experiment's final look: every function's interval holds at once with the
//!   family's confidence, and a verdict read from an interval is the Bonferroni test.
//! * **Verdict**: `slower`/`faster` when the contribution's interval excludes 0 (the
//!   ratio's then excludes 1), marked below the threshold when it lies within ±threshold
//!   of the baseline's total; `equivalent` when it lies within that band; else
//!   `inconclusive`. A function's verdict is about what it did to the total, not about its
//!   own relative change, which a function of 0.1 % can never pin to ±1 %.

pub(crate) mod layouts;
pub mod simulate;

use perflab_model::{metric, Change, CommandResult, Explanation, FunctionChange, RunProfile, Verdict};
use perflab_stats::paired_means::{self, fieller, mean_difference, RatioInterval};
use std::collections::{BTreeMap, BTreeSet};

/// Functions with fewer samples than this over all the rounds of both commands (the
/// larger of the two sums) are summed into `[other functions]`. The cut-off is on the
/// rounds' total, not per run: 3 samples per run over 10 rounds (30) is as much evidence
/// as 30 in one run, and the paired t-interval over the rounds carries its noise. Below
/// 20 the Poisson noise alone puts a ratio's 99.7 % interval beyond ±100 %.
pub(crate) const MIN_TOTAL_SAMPLES: f64 = 20.0;
/// How many members of `[other functions]` are named (largest |change| first).
const OTHER_MEMBERS_NAMED: usize = 5;
/// At most this many functions get rows of their own (the family of the correction).
pub(crate) const MAX_TESTED: usize = 30;
/// The name of the row that sums every function without a row of its own.
pub(crate) const OTHER: &str = perflab_model::OTHER_FUNCTIONS;
/// The name of the total row.
pub(crate) const TOTAL: &str = "[total]";
/// Functions holding at least this share of the baseline's time are the ones whose
/// relative bounds the summary quotes ("no other function changed beyond ±4 %").
pub const HOT_SHARE: f64 = 0.05;
/// Power for [`FunctionChange::detectable`].
const POWER_Z: f64 = 0.841_621_233_572_914_3;
/// Below this many samples per run, per-function intervals are wide (a warning says so).
const FEW_SAMPLES_PER_RUN: f64 = 100.0;

/// The statistical settings of an explanation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The family-wise confidence (the experiment's).
    pub confidence: f64,
    /// The level of this comparison's interval at the final look (already corrected for
    /// the candidates): the functions share its α.
    pub comparison_level: f64,
    /// The equivalence margin, a fraction of the baseline's total.
    pub threshold: f64,
}

type Key = (String, String);

/// Per-round values of one row: baseline, candidate (in the explanation's unit) and
/// sample counts.
#[derive(Default, Clone)]
struct Series {
    base: Vec<f64>,
    cand: Vec<f64>,
    base_samples: Vec<f64>,
    cand_samples: Vec<f64>,
    counts: BTreeMap<String, (Vec<f64>, Vec<f64>)>,
}

impl Series {
    fn new(rounds: usize) -> Series {
        Series {
            base: vec![0.0; rounds],
            cand: vec![0.0; rounds],
            base_samples: vec![0.0; rounds],
            cand_samples: vec![0.0; rounds],
            counts: BTreeMap::new(),
        }
    }

    /// True when neither command's values varied over the rounds.
    fn steady(&self) -> bool {
        let constant = |v: &[f64]| v.iter().all(|x| *x == v[0]);
        constant(&self.base) && constant(&self.cand)
    }

    /// The value of one sample (the mean period, in the row's unit).
    fn per_sample(&self) -> f64 {
        let samples: f64 = self.base_samples.iter().chain(&self.cand_samples).sum();
        let values: f64 = self.base.iter().chain(&self.cand).sum();
        if samples > 0.0 {
            values / samples
        } else {
            0.0
        }
    }

    fn add(&mut self, other: &Series) {
        for (a, b) in [
            (&mut self.base, &other.base),
            (&mut self.cand, &other.cand),
            (&mut self.base_samples, &other.base_samples),
            (&mut self.cand_samples, &other.cand_samples),
        ] {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
    }
}

/// The runs of both commands that were sampled, paired by round, successful ones only.
fn paired_profiles<'a>(base: &'a CommandResult, cand: &'a CommandResult) -> Vec<(u32, &'a RunProfile, &'a RunProfile)> {
    let by_round: BTreeMap<u32, &RunProfile> =
        base.runs.iter().filter(|r| r.exit.success()).filter_map(|r| Some((r.round, r.profile.as_deref()?))).collect();
    cand.runs
        .iter()
        .filter(|r| r.exit.success())
        .filter_map(|r| Some((r.round, *by_round.get(&r.round)?, r.profile.as_deref()?)))
        .collect()
}

/// Explain `cand` against `base` from their runs' profiles (runs paired by round).
/// `primary` is the metric that decided the comparison, whose change the samples are
/// checked against. None when no round has samples of both.
pub fn explain(base: &CommandResult, cand: &CommandResult, primary: &str, options: &Options) -> Option<Explanation> {
    let pairs = paired_profiles(base, cand);
    let first = pairs.first()?.1;
    let rounds = pairs.len();
    let time = first.period_is_time;
    let exact = pairs.iter().all(|(_, a, b)| a.exact && b.exact);
    let scale = if time { 1e-6 } else { 1.0 };
    let unit = if time { "ms".to_string() } else { first.event.clone() };

    let mut rows: BTreeMap<Key, Series> = BTreeMap::new();
    for (i, (_, a, b)) in pairs.iter().enumerate() {
        for (profile, candidate) in [(a, false), (b, true)] {
            for (key, &(samples, period)) in &profile.functions {
                let row = rows.entry(key.clone()).or_insert_with(|| Series::new(rounds));
                let (values, counts) = if candidate {
                    (&mut row.cand, &mut row.cand_samples)
                } else {
                    (&mut row.base, &mut row.base_samples)
                };
                values[i] += period as f64 * scale;
                counts[i] += samples as f64;
            }
            for (name, per_function) in &profile.counts {
                for (key, &count) in per_function {
                    let row = rows.entry(key.clone()).or_insert_with(|| Series::new(rounds));
                    let (b, c) =
                        row.counts.entry(name.clone()).or_insert_with(|| (vec![0.0; rounds], vec![0.0; rounds]));
                    let values = if candidate { c } else { b };
                    values[i] += count as f64;
                }
            }
        }
    }
    let pooled =
        |s: &Series| (s.base_samples.iter().sum::<f64>() + s.cand_samples.iter().sum::<f64>()) / (2.0 * rounds as f64);
    let either_total = |s: &Series| s.base_samples.iter().sum::<f64>().max(s.cand_samples.iter().sum::<f64>());
    let mut keys: Vec<&Key> = rows.keys().collect();
    keys.sort_by(|a, b| pooled(&rows[*b]).total_cmp(&pooled(&rows[*a])).then_with(|| a.cmp(b)));
    // A uprobe's or an allocation probe's "samples" are every call of the probed
    // functions (period 1), not a rate's draws: few of them are a small count, not a wide
    // interval, so they need no minimum.
    let every_call = crate::measure::probe_cost::is_probe_metric(&first.event)
        || crate::measure::allocations::is_allocation_event(&first.event);
    // Exact counts need no correction and no minimum: every function is its own row.
    let min_samples = if exact || every_call { 0.0 } else { MIN_TOTAL_SAMPLES };
    let tested: BTreeSet<Key> = keys
        .iter()
        .filter(|k| either_total(&rows[**k]) >= min_samples && pooled(&rows[**k]) > 0.0)
        .take(if exact { usize::MAX } else { MAX_TESTED })
        .map(|k| (*k).clone())
        .collect();
    let mut other = Series::new(rounds);
    let mut total = Series::new(rounds);
    for (key, series) in &rows {
        total.add(series);
        if !tested.contains(key) {
            other.add(series);
        }
    }
    let has_other = other.base_samples.iter().chain(&other.cand_samples).any(|&s| s > 0.0);
    let mut other_members: Vec<perflab_model::OtherMember> = rows
        .iter()
        .filter(|(key, _)| !tested.contains(*key))
        .map(|(key, s)| perflab_model::OtherMember {
            name: key.0.clone(),
            baseline_samples: s.base_samples.iter().sum(),
            candidate_samples: s.cand_samples.iter().sum(),
        })
        .collect();
    other_members.sort_by(|a, b| {
        (b.candidate_samples - b.baseline_samples)
            .abs()
            .total_cmp(&(a.candidate_samples - a.baseline_samples).abs())
            .then_with(|| a.name.cmp(&b.name))
    });
    other_members.truncate(OTHER_MEMBERS_NAMED);
    let family = (tested.len() + usize::from(has_other)).max(1);
    let function_level = 1.0 - (1.0 - options.comparison_level) / family as f64;

    let baseline_total = paired_means::mean_difference(&total.base, &total.cand, options.comparison_level)?;
    let band = options.threshold * baseline_total.mean_a;
    let deterministic = Deterministic { exact, every_call };
    let total_change = row_change(TOTAL, "", &total, options.comparison_level, band, deterministic, None);
    let total_differences: Vec<f64> = total.base.iter().zip(&total.cand).map(|(a, b)| b - a).collect();
    let shares_of = total_change.contribution.excludes_zero().then_some(total_differences.as_slice());

    let mut functions: Vec<FunctionChange> = tested
        .iter()
        .map(|key| row_change(&key.0, &key.1, &rows[key], function_level, band, deterministic, shares_of))
        .collect();
    functions.sort_by(|a, b| {
        b.contribution.estimate.abs().total_cmp(&a.contribution.estimate.abs()).then_with(|| a.name.cmp(&b.name))
    });
    if has_other {
        functions.push(row_change(OTHER, "", &other, function_level, band, deterministic, shares_of));
    }

    let flagged = |f: &FunctionChange| matches!(f.verdict, Verdict::Slower | Verdict::Faster);
    let unflagged_within = functions
        .iter()
        .filter(|f| !flagged(f) && f.name != OTHER && f.baseline_per_run >= HOT_SHARE * baseline_total.mean_a)
        .filter_map(|f| Some((f.ci_low? - 1.0).abs().max((f.ci_high? - 1.0).abs())))
        .max_by(f64::total_cmp);
    let unflagged_contribution_within = functions
        .iter()
        .filter(|f| !flagged(f))
        .filter_map(|f| Some(f.contribution.low?.abs().max(f.contribution.high?.abs())))
        .max_by(f64::total_cmp);

    let samples_per_run = (
        total.base_samples.iter().sum::<f64>() / rounds as f64,
        total.cand_samples.iter().sum::<f64>() / rounds as f64,
    );
    let primary_change = primary_change(base, cand, primary, &pairs, time, options.comparison_level);
    let mut warnings = Vec::new();
    if !exact && !every_call && samples_per_run.0.min(samples_per_run.1) < FEW_SAMPLES_PER_RUN {
        warnings.push(format!(
            "only {:.0} samples per run: per-function intervals are wide (longer runs, more rounds or a higher sampling rate narrow them)",
            samples_per_run.0.min(samples_per_run.1)
        ));
    }
    if crate::measure::allocations::is_allocation_event(&first.event) {
        warnings.push(
            "every run of both commands carried the allocation probes (a trap into the kernel at every call of the malloc family and its return): the times compared include that cost; rows are call sites, the functions that called the allocator".into(),
        );
    }
    let steady: Vec<&str> = std::iter::once((TOTAL, &total))
        .chain(tested.iter().map(|k| (k.0.as_str(), &rows[k])))
        .chain(has_other.then_some((OTHER, &other)))
        .filter(|(_, s)| !exact && !every_call && rounds >= 2 && s.steady())
        .map(|(name, _)| name)
        .collect();
    if !steady.is_empty() {
        warnings.push(format!(
            "{} did not vary over the {rounds} rounds: {} intervals are the counts' resolution (±½ sample per run), not a measured spread",
            steady.join(", "),
            if steady.len() == 1 { "its" } else { "their" }
        ));
    }
    let lost: u64 = pairs.iter().map(|(_, a, b)| a.lost + b.lost).sum();
    if lost > 0 {
        warnings.push(format!("the kernel dropped {lost} sample records: the rounds that lost them count less"));
    }
    if let Some(p) = &primary_change {
        if let Some(note) = consistency(p, &total_change.contribution, primary, &unit) {
            warnings.push(note);
        }
    }
    Some(Explanation {
        baseline: base.name.clone(),
        candidate: cand.name.clone(),
        event: first.event.clone(),
        method: if exact { "exact" } else { "sampled" }.to_string(),
        unit,
        rounds,
        samples_per_run,
        confidence: options.confidence,
        function_level,
        tested: tested.len(),
        threshold: options.threshold,
        total: total_change,
        functions,
        unflagged_within,
        unflagged_contribution_within,
        primary_change,
        stacks: None,
        stored_flame_graph: None,
        other_members: if has_other { other_members } else { Vec::new() },
        warnings,
    })
}

/// What makes a row's values certain: exact counts (one cachegrind run), or a probe's
/// count of every call (certain when it did not vary over the rounds).
#[derive(Debug, Clone, Copy)]
struct Deterministic {
    exact: bool,
    every_call: bool,
}

/// The change of one row at `level`; `band` is ±threshold of the baseline total per run,
/// `total_differences` the per-round total changes to take shares of.
fn row_change(
    name: &str,
    object: &str,
    s: &Series,
    level: f64,
    band: f64,
    certain: Deterministic,
    total_differences: Option<&[f64]>,
) -> FunctionChange {
    let md = mean_difference(&s.base, &s.cand, level).expect("every row has its rounds");
    let ratio = (md.mean_a > 0.0).then(|| md.mean_b / md.mean_a);
    let point = |x: f64| Change { estimate: x, low: Some(x), high: Some(x) };
    let deterministic = certain.exact || (certain.every_call && s.steady());
    let n = md.n as f64;
    // A sampled row whose values did not vary still holds sampling noise the rounds did
    // not show: a count is known to ±½ sample (the timer's phase), so each mean has at
    // least the variance of a uniform ±½ sample over n runs.
    let resolution_se = s.per_sample() / (12.0 * n).sqrt();
    let t = paired_means::t_quantile(level, n - 1.0);
    let floored = !deterministic
        && !certain.every_call
        && t.is_some()
        && md.n >= 2
        && md.se < resolution_se * std::f64::consts::SQRT_2;
    let mut no_interval = None;
    let (contribution, ci) = if deterministic {
        (point(md.difference), ratio.map(|r| (r, r)))
    } else if floored {
        let t = t.expect("two rounds or more");
        let half = t * resolution_se * std::f64::consts::SQRT_2;
        let contribution =
            Change { estimate: md.difference, low: Some(md.difference - half), high: Some(md.difference + half) };
        let q = t * resolution_se;
        let ci = (md.mean_a - q > 0.0)
            .then(|| (((md.mean_b - q) / (md.mean_a + q)).max(0.0), (md.mean_b + q) / (md.mean_a - q)));
        (contribution, ci.filter(|_| ratio.is_some()))
    } else {
        let contribution =
            Change { estimate: md.difference, low: md.interval.map(|i| i.0), high: md.interval.map(|i| i.1) };
        let ci = match fieller(&s.cand, &s.base, level).and_then(|r| r.interval) {
            Some(RatioInterval::Bounded(lo, hi)) if ratio.is_some() => Some((lo.max(0.0), hi)),
            _ => None,
        };
        (contribution, ci)
    };
    if !deterministic {
        let samples: f64 = s.base_samples.iter().chain(&s.cand_samples).sum();
        no_interval = if md.n < 2 {
            Some(format!("one round: no interval from a single pair of runs ({samples:.0} samples)"))
        } else if contribution.low.is_none() {
            Some(format!("no interval at this level from {} rounds", md.n))
        } else if ratio.is_none() {
            Some("no ratio: the baseline never ran it (its contribution has an interval)".to_string())
        } else if ci.is_none() {
            Some(format!(
                "ratio unbounded: the baseline's {:.1} samples per run cannot be told from 0 (its contribution has an interval)",
                s.base_samples.iter().sum::<f64>() / n
            ))
        } else {
            None
        };
    }
    let (verdict, below_threshold) = match (contribution.low, contribution.high) {
        (Some(lo), Some(hi)) if lo > 0.0 => (Verdict::Slower, hi <= band),
        (Some(lo), Some(hi)) if hi < 0.0 => (Verdict::Faster, lo >= -band),
        (Some(lo), Some(hi)) if lo >= -band && hi <= band => (Verdict::Equivalent, false),
        _ => (Verdict::Inconclusive, false),
    };
    let share = total_differences.and_then(|total| {
        let d: Vec<f64> = s.base.iter().zip(&s.cand).map(|(a, b)| b - a).collect();
        let r = fieller(&d, total, level)?;
        match r.interval {
            _ if deterministic => Some(point(r.ratio)),
            Some(RatioInterval::Bounded(lo, hi)) => Some(Change { estimate: r.ratio, low: Some(lo), high: Some(hi) }),
            _ => Some(Change { estimate: r.ratio, low: None, high: None }),
        }
    });
    let se = if floored { resolution_se * std::f64::consts::SQRT_2 } else { md.se };
    let detectable = (!deterministic && md.mean_a > 0.0)
        .then(|| t.map(|t| (t + POWER_Z) * se / md.mean_a))
        .flatten()
        .filter(|d| d.is_finite());
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    FunctionChange {
        name: name.to_string(),
        object: object.to_string(),
        baseline_per_run: md.mean_a,
        candidate_per_run: md.mean_b,
        baseline_samples: mean(&s.base_samples),
        candidate_samples: mean(&s.cand_samples),
        ratio,
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        no_interval,
        verdict,
        below_threshold,
        contribution,
        share,
        detectable,
        p_value: if deterministic { f64::from(u8::from(md.difference == 0.0)) } else { md.p_value },
        counts: s.counts.iter().map(|(name, (b, c))| (name.clone(), (mean(b), mean(c)))).collect(),
        across_layouts: None,
    }
}

/// The rows that carry the change but are not decided yet: `inconclusive`, with an
/// estimated contribution of at least the threshold of the baseline's total (a row that
/// could move the total by the threshold on its own). `compare --explain` keeps
/// measuring past the verdict while there are any (and the budget lasts).
pub fn undecided_carriers(e: &Explanation) -> Vec<String> {
    undecided_carrier_rows(e).map(|f| f.name.clone()).collect()
}

fn undecided_carrier_rows(e: &Explanation) -> impl Iterator<Item = &FunctionChange> {
    let band = e.threshold * e.total.baseline_per_run;
    e.functions.iter().filter(move |f| f.verdict == Verdict::Inconclusive && f.contribution.estimate.abs() >= band)
}

/// Below this many samples per run (the larger side's mean), a row's sampling noise alone
/// is over 14 % of its time per run (Poisson: 1/√50): a higher sampling rate narrows
/// such a row where more rounds of the same runs narrow it only as √rounds.
pub const SHORT_OF_SAMPLES_PER_RUN: f64 = 50.0;

/// The undecided carriers (see [`undecided_carriers`]) short of samples: with fewer than
/// [`SHORT_OF_SAMPLES_PER_RUN`] per run; each with its samples per run.
pub fn carriers_short_of_samples(e: &Explanation) -> Vec<(String, f64)> {
    undecided_carrier_rows(e)
        .map(|f| (f.name.clone(), f.baseline_samples.max(f.candidate_samples)))
        .filter(|(_, samples)| *samples < SHORT_OF_SAMPLES_PER_RUN)
        .collect()
}

/// Each command's call stacks (folded) as mean time per run over the rounds both were
/// sampled in, for the explanation's flame graph: (baseline, candidate).
pub(crate) fn mean_stacks(
    base: &CommandResult,
    cand: &CommandResult,
) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
    let pairs = paired_profiles(base, cand);
    let mut sides = (BTreeMap::new(), BTreeMap::new());
    let n = pairs.len().max(1) as f64;
    for (_, a, b) in &pairs {
        for (profile, side) in [(a, &mut sides.0), (b, &mut sides.1)] {
            let scale = if profile.period_is_time { 1e-6 } else { 1.0 };
            for (stack, &(_, period)) in &profile.stacks {
                *side.entry(stack.clone()).or_insert(0.0) += period as f64 * scale / n;
            }
        }
    }
    sides
}

/// The primary metric's paired change per run, in the explanation's unit when both are
/// times.
fn primary_change(
    base: &CommandResult,
    cand: &CommandResult,
    primary: &str,
    pairs: &[(u32, &RunProfile, &RunProfile)],
    time: bool,
    level: f64,
) -> Option<Change> {
    let seconds = metric::to_seconds(metric::unit(primary))?;
    if !time {
        return None;
    }
    let value = |c: &CommandResult, round: u32| c.runs.iter().find(|r| r.round == round)?.metric(primary);
    let (a, b): (Vec<f64>, Vec<f64>) = pairs
        .iter()
        .filter_map(|(round, _, _)| Some((value(base, *round)? * seconds * 1e3, value(cand, *round)? * seconds * 1e3)))
        .unzip();
    let md = mean_difference(&a, &b, level)?;
    Some(Change { estimate: md.difference, low: md.interval.map(|i| i.0), high: md.interval.map(|i| i.1) })
}

/// A note when the samples do not account for the primary metric's change: their
/// intervals do not overlap (time off the CPU — sleeping, I/O, waiting for a CPU — is
/// in wall time but not in cpu-clock samples).
fn consistency(primary: &Change, sampled: &Change, metric: &str, unit: &str) -> Option<String> {
    let (pl, ph, sl, sh) = (primary.low?, primary.high?, sampled.low?, sampled.high?);
    if ph < sl || sh < pl {
        Some(format!(
            "the samples account for {:+.2} {unit}/run [{:+.2}, {:+.2}] of the {:+.2} {unit}/run [{:+.2}, {:+.2}] change in {metric}: the rest is time off the CPU (waiting, sleeping, I/O) or outside the sampled processes",
            sampled.estimate, sl, sh, primary.estimate, pl, ph
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::simulate::{Scenario, Simulation};
    use super::*;

    fn options() -> Options {
        Options { confidence: 0.95, comparison_level: 0.95, threshold: 0.01 }
    }

    #[test]
    fn contributions_add_up_to_the_total_and_shares_to_one() {
        let mut sim = Simulation::new(Scenario::opposite_changes(), 3);
        let (base, cand) = sim.commands(60);
        let e = explain(&base, &cand, metric::CPU, &options()).unwrap();
        assert!(e.total.contribution.excludes_zero(), "{:?}", e.total);
        let sum: f64 = e.functions.iter().map(|f| f.contribution.estimate).sum();
        assert!((sum - e.total.contribution.estimate).abs() < 1e-9 * e.total.baseline_per_run, "{sum} vs total");
        let shares: f64 = e.functions.iter().filter_map(|f| f.share.map(|s| s.estimate)).sum();
        assert!((shares - 1.0).abs() < 1e-9, "{shares}");
        // 60 rounds of 5 samples per run: every one of the 23 functions has a row, so
        // nothing is left for `[other functions]`.
        assert_eq!(e.tested, 23);
        assert!(e.functions.iter().all(|f| f.name != OTHER) && e.other_members.is_empty());
        assert!(e.function_level > 0.95, "{e:?}");
    }

    #[test]
    fn opposite_changes_are_found_with_their_signs_and_the_hot_function_is_not() {
        let mut sim = Simulation::new(Scenario::opposite_changes(), 11);
        let (base, cand) = sim.commands(40);
        let e = explain(&base, &cand, metric::CPU, &options()).unwrap();
        let row = |name: &str| e.functions.iter().find(|f| f.name == name).unwrap();
        assert_eq!(row("f_up").verdict, Verdict::Slower);
        assert_eq!(row("f_down").verdict, Verdict::Faster);
        assert!(!matches!(row("f_hot").verdict, Verdict::Slower | Verdict::Faster), "{:?}", row("f_hot"));
        let up = row("f_up");
        assert!(up.ci_low.unwrap() <= 1.3 && 1.3 <= up.ci_high.unwrap(), "{up:?}");
        assert!(e.unflagged_within.is_some());
    }

    /// Issue 39: `light` going from 3 to 6 samples per run gets a row of its own from
    /// the samples of all 10 rounds (30 → 60), with an interval.
    #[test]
    fn a_small_function_that_doubles_gets_a_row_from_all_rounds() {
        let (base, cand) = Simulation::new(Scenario::small_doubles(), 7).commands(10);
        let e = explain(&base, &cand, metric::CPU, &options()).unwrap();
        let light = e.functions.iter().find(|f| f.name == "light").expect("light has a row");
        assert!(light.baseline_samples < 5.0 && light.no_interval.is_none(), "{light:?}");
        let (lo, hi) = (light.ci_low.unwrap(), light.ci_high.unwrap());
        assert!(lo < 2.0 && 2.0 < hi, "{light:?}");
    }

    /// With 3 rounds the small functions stay in `[other functions]`, which names its
    /// largest members by change.
    #[test]
    fn other_functions_names_what_it_is_made_of() {
        let (base, cand) = Simulation::new(Scenario::small_doubles(), 7).commands(3);
        let e = explain(&base, &cand, metric::CPU, &options()).unwrap();
        assert_eq!(e.functions.last().unwrap().name, OTHER);
        assert!(e.functions.iter().all(|f| f.name != "light"));
        assert_eq!(e.other_members.len(), OTHER_MEMBERS_NAMED);
        let changes: Vec<f64> =
            e.other_members.iter().map(|m| (m.candidate_samples - m.baseline_samples).abs()).collect();
        assert!(changes.windows(2).all(|w| w[0] >= w[1]), "{:?}", e.other_members);
    }

    /// Sampled counts identical in every round (a steady loop under cpu-clock): every
    /// row still has an interval (the counts' resolution), never a bare point, and a
    /// warning says why.
    #[test]
    fn steady_sampled_rows_get_the_counts_resolution_not_a_point() {
        let run = |f: u64, g: u64, round: u32| {
            let mut p = RunProfile { event: "cpu-clock".into(), period_is_time: true, ..RunProfile::default() };
            p.functions.insert(("f".into(), "[command]".into()), (f, f * 1_003_009));
            p.functions.insert(("g".into(), "[command]".into()), (g, g * 1_003_009));
            perflab_model::Run {
                round,
                exit: perflab_model::ExitInfo { exit_code: Some(0), ..Default::default() },
                profile: Some(Box::new(p)),
                ..Default::default()
            }
        };
        let command = |name: &str, f: u64| CommandResult {
            name: name.into(),
            argv: vec![],
            command_line: name.into(),
            parameters: Default::default(),
            runs: (0..8).map(|round| run(f, 100, round)).collect(),
            summary: Default::default(),
        };
        let e = explain(&command("a", 140), &command("b", 170), metric::CPU, &options()).unwrap();
        for row in e.functions.iter().chain([&e.total]) {
            let (lo, hi) = (row.ci_low.unwrap(), row.ci_high.unwrap());
            assert!(lo < row.ratio.unwrap() && row.ratio.unwrap() < hi, "{row:?}");
            assert!(row.contribution.low.unwrap() < row.contribution.high.unwrap(), "{row:?}");
        }
        let f = e.functions.iter().find(|r| r.name == "f").unwrap();
        assert_eq!(f.verdict, Verdict::Slower);
        assert!(e.warnings.iter().any(|w| w.contains("did not vary over the 8 rounds")), "{:?}", e.warnings);
    }

    /// A row without an interval says why.
    #[test]
    fn a_single_round_has_no_interval_and_says_why() {
        let (base, cand) = Simulation::new(Scenario::opposite_changes(), 7).commands(1);
        let e = explain(&base, &cand, metric::CPU, &options()).unwrap();
        for row in e.functions.iter().chain([&e.total]) {
            assert!(row.ci_low.is_none(), "{row:?}");
            assert!(row.no_interval.as_deref().is_some_and(|w| w.starts_with("one round")), "{row:?}");
        }
    }

    /// The rows that keep `--explain` measuring: f_down undecided after few rounds at a
    /// strict level, none after many.
    #[test]
    fn undecided_carriers_are_the_inconclusive_rows_that_could_move_the_total() {
        let (base, cand) = Simulation::new(Scenario::opposite_changes().shorter(10.0), 3).commands(60);
        let strict = Options { comparison_level: 0.999, ..options() };
        let first = |c: &CommandResult, k: usize| CommandResult { runs: c.runs[..k].to_vec(), ..c.clone() };
        let early = explain(&first(&base, 6), &first(&cand, 6), metric::CPU, &strict).unwrap();
        let undecided = undecided_carriers(&early);
        assert!(!undecided.is_empty() && !undecided.contains(&"f_hot".to_string()), "{undecided:?}");
        for name in &undecided {
            let row = early.functions.iter().find(|f| &f.name == name).unwrap();
            assert_eq!(row.verdict, Verdict::Inconclusive);
        }
        let late = explain(&base, &cand, metric::CPU, &options()).unwrap();
        assert_eq!(undecided_carriers(&late), Vec::<String>::new(), "{:?}", late.functions);
    }

    #[test]
    fn a_new_function_has_no_ratio_but_a_contribution() {
        let mut scenario = Scenario::opposite_changes();
        scenario.functions.push(simulate::FunctionSpec {
            name: "f_new".into(),
            baseline_ms: 0.0,
            ratio: 1.0,
            added_ms: 20.0,
        });
        let (base, cand) = Simulation::new(scenario, 5).commands(30);
        let e = explain(&base, &cand, metric::CPU, &options()).unwrap();
        let new = e.functions.iter().find(|f| f.name == "f_new").unwrap();
        assert_eq!((new.ratio, new.ci_low, new.verdict), (None, None, Verdict::Slower));
        assert!(new.contribution.low.unwrap() > 0.0);
    }

    /// Calls counted by a uprobe (every call, identical in every round): a point change,
    /// and no warning about too few samples however few calls there are.
    #[test]
    fn probed_calls_are_counts_not_samples() {
        let run = |calls: u64| {
            let mut p = RunProfile { event: "uprobe:libc.so.6:malloc".into(), ..RunProfile::default() };
            p.functions.insert(("malloc".into(), "libc.so.6".into()), (calls, calls));
            perflab_model::Run {
                exit: perflab_model::ExitInfo { exit_code: Some(0), ..Default::default() },
                profile: Some(Box::new(p)),
                ..Default::default()
            }
        };
        let command = |name: &str, calls: u64| CommandResult {
            name: name.into(),
            argv: vec![],
            command_line: name.into(),
            parameters: Default::default(),
            runs: (0..6).map(|round| perflab_model::Run { round, ..run(calls) }).collect(),
            summary: Default::default(),
        };
        let e = explain(&command("pool", 1), &command("malloc", 501), metric::CPU, &options()).unwrap();
        assert!(e.warnings.is_empty(), "{:?}", e.warnings);
        let malloc = e.functions.iter().find(|f| f.name == "malloc").unwrap();
        assert_eq!((malloc.ratio, malloc.ci_low, malloc.ci_high), (Some(501.0), Some(501.0), Some(501.0)));
        assert_eq!((malloc.contribution.estimate, malloc.verdict), (500.0, Verdict::Slower));
    }

    #[test]
    fn exact_counts_need_no_interval() {
        let mut a = RunProfile { event: "instructions".into(), exact: true, ..RunProfile::default() };
        a.functions.insert(("f".into(), "[command]".into()), (1000, 1000));
        a.functions.insert(("g".into(), "[command]".into()), (500, 500));
        let mut b = a.clone();
        b.functions.insert(("f".into(), "[command]".into()), (1100, 1100));
        let run = |p: RunProfile| perflab_model::Run {
            exit: perflab_model::ExitInfo { exit_code: Some(0), ..Default::default() },
            profile: Some(Box::new(p)),
            ..Default::default()
        };
        let command = |name: &str, p: RunProfile| CommandResult {
            name: name.into(),
            argv: vec![],
            command_line: name.into(),
            parameters: Default::default(),
            runs: vec![run(p)],
            summary: Default::default(),
        };
        let e = explain(&command("a", a), &command("b", b), "instructions", &options()).unwrap();
        assert_eq!(e.method, "exact");
        let f = &e.functions[0];
        assert_eq!((f.name.as_str(), f.ratio, f.ci_low, f.verdict), ("f", Some(1.1), Some(1.1), Verdict::Slower));
        assert_eq!(e.functions[1].verdict, Verdict::Equivalent);
        assert_eq!(f.share.unwrap().estimate, 1.0);
    }
}
