//! Change points in a sequence: drift within one command's runs (wall times in run order,
//! one value per point) and shifts over a benchmark's history (the runs of each label, one
//! group per label, split only between labels).
//!
//! Method: binary segmentation (Scott & Knott 1974; Vostrikova 1981) with a rank-based
//! two-sample statistic — the standardized Mann–Whitney / Pettitt statistic (Pettitt 1979)
//! maximized over the allowed split points — calibrated by a seeded permutation test, on
//! ln(values). Ranks make it immune to the heavy tails of timing data (a single 2× run moves
//! a rank by at most n), the permutation test gives the stated false-positive rate for any
//! distribution without a penalty to tune, and after ranking each permutation costs O(n).
//! Each accepted change point is then located by a least-absolute-deviations step fit
//! between its neighbours, and its size and interval come from the Hodges–Lehmann shift
//! between the adjacent final segments (`rank_sum`).
//!
//! Groups (labels) add one condition. Permuting runs across labels assumes labels add no
//! noise of their own; a label measured on a quieter or busier day breaks that, and the run
//! test alone would then call every label-to-label wobble a shift. So a split between groups
//! must also pass a label-level test: Student's t on the groups' medians, Bonferroni-corrected
//! over the candidate splits, which holds its level when labels do differ. The run test is
//! exact when they do not; requiring both keeps the false-alarm rate at ≈ `alpha` either way,
//! while the runs' precision lets two labels of ≥ 6 runs on each side show a clear step.
//!
//! Under pure noise only the first test can report anything, so the chance of a false
//! change point in a series is ≈ `alpha`. Deterministic for a given seed: the permutations
//! depend only on the segment's shape, so a [`Detector`] reuses the null distribution of
//! every shape it has seen (many benchmarks with the same run counts cost one).

use super::rank_sum::{hodges_lehmann_shift, shift_interval, shift_with_interval};
use super::ranks::midranks;
use super::student::{pooled_t, PooledT};
use super::summary::median;
use super::Interval;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::HashMap;

/// How [`detect`] and [`Detector`] look for change points; [`Default`] suits one value per
/// point, [`ChangePointConfig::for_groups`] a history of labels.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePointConfig {
    /// Significance level of each segment's tests.
    pub alpha: f64,
    /// Fewest points (for groups: fewest groups) in a segment. The values per segment are
    /// raised when needed so that adjacent segments always have a ratio interval at
    /// `confidence` (4 at 95 %).
    pub(crate) min_segment: usize,
    /// Shifts whose estimated ratio lies within ±this fraction of 1, or whose interval
    /// contains 1, are not reported (their segments are merged).
    pub(crate) min_relative_change: f64,
    /// Confidence of each change point's ratio interval.
    pub confidence: f64,
    /// Permutations per test (the p-value's resolution is 1/(permutations + 1)).
    pub(crate) permutations: usize,
    /// Seed of the permutations: the same seed and input give the same change points.
    pub seed: u64,
}

impl Default for ChangePointConfig {
    fn default() -> Self {
        ChangePointConfig {
            alpha: 0.01,
            min_segment: 5,
            min_relative_change: 0.01,
            confidence: 0.95,
            permutations: 999,
            seed: 0x5eed,
        }
    }
}

impl ChangePointConfig {
    /// The defaults for groups: segments of at least two labels.
    pub fn for_groups() -> ChangePointConfig {
        ChangePointConfig { min_segment: 2, ..ChangePointConfig::default() }
    }

    /// Fewest groups (labels) a change point between groups needs on each side: a step
    /// closer to either end of a history cannot be tested yet, and is said so.
    pub fn min_groups_per_side(&self) -> usize {
        self.min_segment.max(1)
    }
}

/// A shift found between two adjacent segments of the input.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    /// First index (into the input: a point, or a group) of the new segment.
    pub index: usize,
    /// Median of the segment before (over all its values).
    pub before: f64,
    /// Median of the segment after.
    pub after: f64,
    /// after / before as the Hodges–Lehmann estimate exp(median of ln(after_j) − ln(before_i));
    /// close to the ratio of the medians but with an interval.
    pub ratio: f64,
    /// Interval of `ratio` at `ChangePointConfig::confidence`: distribution-free over the
    /// values; for groups widened to cover the label-level t interval too.
    pub ci: (f64, f64),
    /// p-value of the test that found this split: the permutation p, or for groups the
    /// larger of it and the corrected label-level p.
    pub p_value: f64,
}

/// Change points of `values` (one value per point), in index order. Values that are not
/// finite and positive are ignored (indices still refer to the input). Empty when there
/// are too few values to split or nothing is significant.
pub fn detect(values: &[f64], config: &ChangePointConfig) -> Vec<ChangePoint> {
    Detector::new(config.clone()).detect(values)
}

/// Change points between `groups` (e.g. the runs of each label, in label order), splitting
/// only between groups; `index` is the first group of the new segment. Values that are not
/// finite and positive are ignored, and a group left empty is skipped.
pub fn detect_groups<G: AsRef<[f64]>>(groups: &[G], config: &ChangePointConfig) -> Vec<ChangePoint> {
    Detector::new(config.clone()).detect_groups(groups)
}

/// Change-point detection that remembers the permutation null distribution of each
/// segment shape it has tested (for values without ties), so detection over many series
/// of the same shape — a report's benchmarks, each with 10 runs per label — tests each
/// shape's permutations once. Results are identical to a fresh detector's.
pub struct Detector {
    config: ChangePointConfig,
    /// Sorted max statistics of the permutations, by (values in the segment, allowed splits).
    nulls: HashMap<(usize, Vec<usize>), Vec<f64>>,
}

/// A series as consecutive groups of ln(values): group g is `logs[starts[g]..starts[g + 1]]`
/// and came from input position `index[g]`.
struct Layout {
    logs: Vec<f64>,
    starts: Vec<usize>,
    index: Vec<usize>,
    /// Fewest groups and fewest values in a segment.
    min_groups: usize,
    min_values: usize,
    /// Whether splits must also pass the label-level test (groups of several values).
    label_check: bool,
    /// Each group's median (for the label-level test; empty without it).
    medians: Vec<f64>,
}

impl Layout {
    fn groups(&self) -> usize {
        self.starts.len() - 1
    }

    /// The values of groups `a..b`.
    fn span(&self, a: usize, b: usize) -> &[f64] {
        &self.logs[self.starts[a]..self.starts[b]]
    }

    /// Group boundaries k in (a, b) leaving enough groups and values on both sides.
    fn candidates(&self, a: usize, b: usize) -> Vec<usize> {
        let (s, g, v) = (&self.starts, self.min_groups.max(1), self.min_values);
        (a + g..=b.saturating_sub(g)).filter(|&k| s[k] - s[a] >= v && s[b] - s[k] >= v).collect()
    }

    /// Student's t on the medians of groups `a..k` against those of `k..b`.
    fn label_test(&self, a: usize, k: usize, b: usize) -> Option<PooledT> {
        pooled_t(&self.medians[a..k], &self.medians[k..b])
    }
}

impl Detector {
    /// A detector with no null distributions cached yet.
    pub fn new(config: ChangePointConfig) -> Detector {
        Detector { config, nulls: HashMap::new() }
    }

    /// See [`detect`].
    pub fn detect(&mut self, values: &[f64]) -> Vec<ChangePoint> {
        let (index, logs): (Vec<usize>, Vec<f64>) =
            values.iter().enumerate().filter(|(_, v)| v.is_finite() && **v > 0.0).map(|(i, v)| (i, v.ln())).unzip();
        let min = effective_min_segment(&self.config);
        let starts = (0..=logs.len()).collect();
        self.run(Layout {
            logs,
            starts,
            index,
            min_groups: min,
            min_values: min,
            label_check: false,
            medians: Vec::new(),
        })
    }

    /// See [`detect_groups`].
    pub fn detect_groups<G: AsRef<[f64]>>(&mut self, groups: &[G]) -> Vec<ChangePoint> {
        let (mut logs, mut starts, mut index) = (Vec::new(), Vec::new(), Vec::new());
        for (i, group) in groups.iter().enumerate() {
            let before = logs.len();
            logs.extend(group.as_ref().iter().filter(|v| v.is_finite() && **v > 0.0).map(|v| v.ln()));
            if logs.len() > before {
                starts.push(before);
                index.push(i);
            }
        }
        starts.push(logs.len());
        let (min_groups, min_values) = (self.config.min_segment.max(1), effective_min_segment(&self.config));
        let medians = starts.windows(2).map(|w| median(&logs[w[0]..w[1]])).collect();
        self.run(Layout { logs, starts, index, min_groups, min_values, label_check: true, medians })
    }

    fn run(&mut self, layout: Layout) -> Vec<ChangePoint> {
        let mut splits: Vec<(usize, f64)> = Vec::new();
        let mut pending = vec![(0, layout.groups())];
        while let Some((a, b)) = pending.pop() {
            if let Some((k, p_value)) = self.best_split(&layout, a, b) {
                splits.push((k, p_value));
                pending.push((a, k));
                pending.push((k, b));
            }
        }
        splits.sort_by_key(|s| s.0);
        refine_locations(&layout, &mut splits);
        let shifts = drop_weak_changes(&layout, &mut splits, &self.config);
        let confidence = self.config.confidence;
        splits
            .iter()
            .zip(shifts)
            .enumerate()
            .map(|(i, (&(k, p_value), (shift, interval)))| {
                let a = if i == 0 { 0 } else { splits[i - 1].0 };
                let b = splits.get(i + 1).map_or(layout.groups(), |s| s.0);
                let (mut low, mut high) = (interval.low, interval.high);
                if layout.label_check {
                    if let Some((lo, hi)) = layout.label_test(a, k, b).and_then(|t| t.interval(confidence)) {
                        (low, high) = (low.min(lo), high.max(hi));
                    }
                }
                ChangePoint {
                    index: layout.index[k],
                    before: median(layout.span(a, k)).exp(),
                    after: median(layout.span(k, b)).exp(),
                    ratio: shift.exp(),
                    ci: (low.exp(), high.exp()),
                    p_value,
                }
            })
            .collect()
    }

    /// The split of groups `a..b` maximizing the standardized rank-sum statistic, when it is
    /// significant: (group boundary, p-value).
    fn best_split(&mut self, layout: &Layout, a: usize, b: usize) -> Option<(usize, f64)> {
        let boundaries = layout.candidates(a, b);
        if boundaries.is_empty() {
            return None;
        }
        let segment = layout.span(a, b);
        let taus: Vec<usize> = boundaries.iter().map(|&k| layout.starts[k] - layout.starts[a]).collect();
        let (ranks, tie_term) = midranks(segment);
        let n = segment.len() as f64;
        let scale = ((n + 1.0) - tie_term / (n * (n - 1.0))) / 12.0;
        if scale.is_nan() || scale <= 0.0 {
            return None;
        }
        let (observed, best) = max_statistic(&ranks, &taus, scale);
        let mut split = boundaries[best];
        let mut p_value = 0.0;
        if layout.label_check {
            // The run statistic's argmax need not be the step: beside an 8.7× step after
            // label 4 of 6, a fourth label a few % below the first three ranks the split
            // after label 3 higher, and the label test of that split (a slow label among
            // the fast ones) fails — the step was lost in 1 series of 10. So every split
            // is judged at the label level, Bonferroni-corrected over all of them (the
            // smallest corrected p holds the level), and the strongest one by the run
            // statistic among those that pass is taken; the permutation test of the run
            // statistic's maximum still guards the runs.
            let statistics = statistics(&ranks, &taus, scale);
            let corrected = |k: usize| {
                let p = layout.label_test(a, k, b)?.p_value * boundaries.len() as f64;
                (!p.is_nan() && p <= self.config.alpha).then_some(p.min(1.0))
            };
            let (chosen, corrected_p) = boundaries
                .iter()
                .zip(&statistics)
                .filter_map(|(&k, &z)| Some((k, z, corrected(k)?)))
                .max_by(|x, y| x.1.total_cmp(&y.1))
                .map(|(k, _, p)| (k, p))?;
            split = chosen;
            p_value = corrected_p;
        }
        let permutation_p = self.permutation_p(&ranks, tie_term == 0.0, &taus, scale, observed)?;
        Some((split, p_value.max(permutation_p)))
    }

    /// The permutation p-value of `observed` (the max statistic over `taus`) when it is at
    /// most alpha: rejects iff (1 + exceedances)/(1 + B) ≤ alpha, stopping as soon as that is
    /// out of reach.
    fn permutation_p(&mut self, ranks: &[f64], untied: bool, taus: &[usize], scale: f64, observed: f64) -> Option<f64> {
        let permutations = self.config.permutations.max(1);
        let allowed = (self.config.alpha * (permutations + 1) as f64 - 1.0).floor();
        if allowed.is_nan() || allowed < 0.0 {
            return None;
        }
        let threshold = observed * (1.0 - 1e-12);
        let decide = |exceedances: usize| {
            (exceedances as f64 <= allowed).then(|| (1 + exceedances) as f64 / (1 + permutations) as f64)
        };
        let key = (ranks.len(), taus.to_vec());
        if untied {
            if let Some(null) = self.nulls.get(&key) {
                return decide(null.len() - null.partition_point(|&z| z < threshold));
            }
        }
        // Start from the sorted ranks so the permutations depend on the shape only.
        let mut shuffled = ranks.to_vec();
        shuffled.sort_by(f64::total_cmp);
        let mut rng = StdRng::seed_from_u64(self.config.seed ^ shape_hash(ranks.len(), taus));
        let mut null = Vec::with_capacity(if untied { permutations } else { 0 });
        let mut exceedances = 0usize;
        for _ in 0..permutations {
            shuffled.shuffle(&mut rng);
            let z = max_statistic(&shuffled, taus, scale).0;
            if z >= threshold {
                exceedances += 1;
                if exceedances as f64 > allowed {
                    return None;
                }
            }
            if untied {
                null.push(z);
            }
        }
        if untied {
            null.sort_by(f64::total_cmp);
            self.nulls.insert(key, null);
        }
        decide(exceedances)
    }
}

/// FNV-1a over a segment's shape: a seed that does not depend on where the segment lies.
fn shape_hash(n: usize, taus: &[usize]) -> u64 {
    std::iter::once(n)
        .chain(taus.iter().copied())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, v| (h ^ v as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The configured minimum segment, raised to the smallest m for which two segments of m
/// points have a distribution-free interval: 1/C(2m, m) ≤ (1 − confidence)/2.
fn effective_min_segment(config: &ChangePointConfig) -> usize {
    // An invalid confidence yields no interval at any size; the search stops at a size where
    // valid levels up to 0.999999 have one, and drop_weak_changes then reports nothing.
    let confidence = config.confidence.clamp(0.5, 0.999_999);
    let mut m = config.min_segment.max(1);
    while m < 16 && shift_interval(&vec![0.0; m], &vec![1.0; m], confidence).is_none() {
        m += 1;
    }
    m
}

/// Moves each change point to the allowed split of the span between its neighbours that
/// minimizes Σ|x − median| over both sides (the least-absolute-deviations fit of a step, the
/// maximum likelihood location under Laplace noise). The rank statistic is the better
/// *detector* but its standardization pulls the argmax around; this cost localizes more
/// sharply (±2 points in 96–98 % of series with a 10 % shift in 2 % noise, against 89 %
/// without).
fn refine_locations(layout: &Layout, splits: &mut [(usize, f64)]) {
    for i in 0..splits.len() {
        let a = if i == 0 { 0 } else { splits[i - 1].0 };
        let b = splits.get(i + 1).map_or(layout.groups(), |s| s.0);
        let span = layout.span(a, b);
        let before = prefix_absolute_deviations(span.iter().copied());
        let after = prefix_absolute_deviations(span.iter().rev().copied());
        let best = layout
            .candidates(a, b)
            .into_iter()
            .map(|k| {
                let tau = layout.starts[k] - layout.starts[a];
                (before[tau] + after[span.len() - tau], k)
            })
            .min_by(|x, y| x.0.total_cmp(&y.0));
        if let Some((_, k)) = best {
            splits[i].0 = k;
        }
    }
}

/// An f64 ordered by `total_cmp`, for heaps.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ordered(f64);

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Σ|x − median| of every prefix of `values` (entry i: of the first i), in O(n log n): the
/// lower half in a max-heap and the upper half in a min-heap, with their sums (any point
/// between the two middle values minimizes the sum, so the lower middle one serves).
fn prefix_absolute_deviations(values: impl Iterator<Item = f64>) -> Vec<f64> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut lower: BinaryHeap<Ordered> = BinaryHeap::new();
    let mut upper: BinaryHeap<Reverse<Ordered>> = BinaryHeap::new();
    let (mut sum_lower, mut sum_upper) = (0.0, 0.0);
    let mut out = vec![0.0];
    for x in values {
        if lower.peek().is_none_or(|m| x <= m.0) {
            lower.push(Ordered(x));
            sum_lower += x;
        } else {
            upper.push(Reverse(Ordered(x)));
            sum_upper += x;
        }
        if lower.len() > upper.len() + 1 {
            if let Some(Ordered(v)) = lower.pop() {
                sum_lower -= v;
                sum_upper += v;
                upper.push(Reverse(Ordered(v)));
            }
        } else if upper.len() > lower.len() {
            if let Some(Reverse(Ordered(v))) = upper.pop() {
                sum_upper -= v;
                sum_lower += v;
                lower.push(Ordered(v));
            }
        }
        let m = lower.peek().map_or(0.0, |m| m.0);
        out.push(m * lower.len() as f64 - sum_lower + sum_upper - m * upper.len() as f64);
    }
    out
}

/// Removes, smallest first, change points whose shift between adjacent segments is within
/// ±`min_relative_change` or whose interval contains no change (the tests judged the best
/// split of a wider span; after locating and merging, the adjacent segments must still
/// differ — for groups, at the label level too), merging their segments. Returns the kept
/// change points' Hodges–Lehmann shifts (of the logs) with their intervals.
fn drop_weak_changes(
    layout: &Layout,
    splits: &mut Vec<(usize, f64)>,
    config: &ChangePointConfig,
) -> Vec<(f64, Interval)> {
    let threshold = (1.0 + config.min_relative_change).ln();
    loop {
        let mut kept = Vec::with_capacity(splits.len());
        let mut weakest: Option<(usize, f64)> = None;
        for i in 0..splits.len() {
            let a = if i == 0 { 0 } else { splits[i - 1].0 };
            let k = splits[i].0;
            let b = splits.get(i + 1).map_or(layout.groups(), |s| s.0);
            let estimate = shift_with_interval(layout.span(a, k), layout.span(k, b), config.confidence);
            let size = match &estimate {
                Some((shift, _)) => shift.abs(),
                None => hodges_lehmann_shift(layout.span(a, k), layout.span(k, b)).abs(),
            };
            let excludes_zero = estimate.as_ref().is_some_and(|(_, ci)| ci.low > 0.0 || ci.high < 0.0);
            let labels_differ =
                !layout.label_check || layout.label_test(a, k, b).is_some_and(|t| t.p_value <= config.alpha);
            match estimate {
                Some(estimate) if size >= threshold && excludes_zero && labels_differ => kept.push(estimate),
                _ if weakest.is_none_or(|(_, smallest)| size < smallest) => weakest = Some((i, size)),
                _ => {}
            }
        }
        match weakest {
            Some((i, _)) => {
                splits.remove(i);
            }
            None => return kept,
        }
    }
}

/// |R(τ) − τ(n+1)/2| / sd(τ) for every τ in `taus` (increasing), as [`max_statistic`]
/// maximizes it.
fn statistics(ranks: &[f64], taus: &[usize], scale: f64) -> Vec<f64> {
    let n = ranks.len() as f64;
    let half = (n + 1.0) / 2.0;
    let mut prefix = 0.0;
    let mut out = Vec::with_capacity(taus.len());
    for (i, r) in ranks.iter().enumerate() {
        let Some(&tau) = taus.get(out.len()) else { break };
        prefix += r;
        if i + 1 == tau {
            let t = tau as f64;
            out.push((prefix - t * half).abs() / (t * (n - t) * scale).sqrt());
        }
    }
    out
}

/// max over τ in `taus` (increasing) of |R(τ) − τ(n+1)/2| / sd(τ), where R(τ) is the rank
/// sum of the first τ values and sd(τ)² = τ(n − τ)·scale under exchangeability; with the
/// index of the maximizing τ.
fn max_statistic(ranks: &[f64], taus: &[usize], scale: f64) -> (f64, usize) {
    let n = ranks.len() as f64;
    let half = (n + 1.0) / 2.0;
    let mut prefix = 0.0;
    let mut best = (f64::NEG_INFINITY, 0);
    let mut next = 0;
    for (i, r) in ranks.iter().enumerate() {
        let Some(&tau) = taus.get(next) else { break };
        prefix += r;
        if i + 1 == tau {
            let t = tau as f64;
            let z = (prefix - t * half).abs() / (t * (n - t) * scale).sqrt();
            if z > best.0 {
                best = (z, next);
            }
            next += 1;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::super::synthetic::{history, series, Noise};
    use super::*;

    /// Robust σ of the heavy-tailed test noise: σ·T₂ at σ = 2 % (as these tests were
    /// first calibrated) has a robust σ of 2 % × 0.6745 / 0.8165.
    const HEAVY_SIGMA: f64 = 0.0165;

    #[test]
    fn single_shift_is_located_and_sized() {
        for (seed, n, at, factor, kind) in [
            (1, 100, 40, 1.2, Noise::gaussian(0.02)),
            (2, 60, 45, 0.8, Noise::gaussian(0.02)),
            (3, 200, 120, 1.25, Noise::heavy_tailed(HEAVY_SIGMA)),
            (4, 1000, 300, 2.0, Noise::heavy_tailed(HEAVY_SIGMA)),
            (5, 30, 15, 1.5, Noise::heavy_tailed(HEAVY_SIGMA)),
        ] {
            let values = series(seed, n, &[(at, factor)], &kind);
            let found = detect(&values, &ChangePointConfig::default());
            assert_eq!(found.len(), 1, "seed {seed}: {found:?}");
            let cp = &found[0];
            assert!(cp.index.abs_diff(at) <= 2, "seed {seed}: at {} not {at}", cp.index);
            assert!(cp.ci.0 <= factor && factor <= cp.ci.1, "seed {seed}: {cp:?}");
            assert!(cp.ci.0 <= cp.ratio && cp.ratio <= cp.ci.1);
            assert!(cp.p_value <= 0.01);
        }
    }

    #[test]
    fn two_shifts_and_a_temporary_phase_are_found() {
        let values = series(11, 150, &[(50, 1.3), (100, 0.9)], &Noise::heavy_tailed(HEAVY_SIGMA));
        let found = detect(&values, &ChangePointConfig::default());
        let at: Vec<usize> = found.iter().map(|c| c.index).collect();
        assert_eq!(at.len(), 2, "{found:?}");
        assert!(at[0].abs_diff(50) <= 2 && at[1].abs_diff(100) <= 2, "{at:?}");

        // Host contention: a 2× phase of 40 runs in the middle of 300.
        let values = series(12, 300, &[(130, 2.0), (170, 0.5)], &Noise::heavy_tailed(HEAVY_SIGMA));
        let at: Vec<usize> = detect(&values, &ChangePointConfig::default()).iter().map(|c| c.index).collect();
        assert_eq!(at.len(), 2, "{at:?} {:?}", detect(&values, &ChangePointConfig::default()));
        assert!(at[0].abs_diff(130) <= 2 && at[1].abs_diff(170) <= 2, "{at:?}");
    }

    #[test]
    fn moderate_shifts_are_located_and_covered_in_most_series() {
        // A 10 % shift in noise with σ ≈ 2 % (heavy-tailed: plus spikes and t₂ tails),
        // at a random position of a 100-point series.
        for kind in [Noise::gaussian(0.02), Noise::heavy_tailed(HEAVY_SIGMA)] {
            let (mut located, mut covered) = (0, 0);
            let trials = 200;
            for seed in 0..trials {
                let at = 10 + (seed as usize * 13) % 80;
                let values = series(1000 + seed, 100, &[(at, 1.1)], &kind);
                if let [cp] = detect(&values, &ChangePointConfig::default()).as_slice() {
                    located += usize::from(cp.index.abs_diff(at) <= 2);
                    covered += usize::from(cp.ci.0 <= 1.1 && 1.1 <= cp.ci.1);
                }
            }
            let (located, covered) = (located as f64 / trials as f64, covered as f64 / trials as f64);
            eprintln!("located {located}, covered {covered}");
            assert!(located >= 0.9, "located within ±2 in {located}");
            // Nominal 95 %; selecting the split that maximizes the difference biases the
            // estimate a little (scripts/changepoint-eval measures ≈ 93 %).
            assert!(covered >= 0.88, "interval covered the shift in {covered}");
        }
    }

    #[test]
    fn pure_noise_rarely_reports_a_change_point() {
        let mut with_change = 0;
        let mut total = 0;
        for kind in [Noise::gaussian(0.02), Noise::heavy_tailed(HEAVY_SIGMA)] {
            for seed in 0..150u64 {
                let n = 20 + (seed as usize * 37) % 181;
                let values = series(seed + 7_000, n, &[], &kind);
                total += 1;
                if !detect(&values, &ChangePointConfig::default()).is_empty() {
                    with_change += 1;
                }
            }
        }
        let rate = with_change as f64 / total as f64;
        eprintln!("{with_change} of {total} noise series had a change point");
        assert!(rate <= 0.05, "{with_change} of {total} noise series had a change point");
    }

    #[test]
    fn small_and_degenerate_inputs() {
        let config = ChangePointConfig::default();
        assert!(detect(&[], &config).is_empty());
        assert!(detect(&[1.0; 5], &config).is_empty());
        assert!(detect(&[1.0; 100], &config).is_empty());
        let mut values = series(9, 40, &[(20, 3.0)], &Noise::gaussian(0.02));
        values[3] = f64::NAN;
        values[25] = -1.0;
        let found = detect(&values, &config);
        assert_eq!(found.len(), 1);
        assert!(found[0].index.abs_diff(20) <= 2);
    }

    #[test]
    fn small_shifts_below_the_threshold_are_not_reported() {
        let values = series(21, 400, &[(200, 1.004)], &Noise::gaussian(0.02));
        let config = ChangePointConfig { min_relative_change: 0.01, ..Default::default() };
        assert!(detect(&values, &config).is_empty());
    }

    #[test]
    fn prefix_absolute_deviations_match_the_direct_sums() {
        let values = series(5, 57, &[(20, 1.5)], &Noise::heavy_tailed(HEAVY_SIGMA));
        let prefix = prefix_absolute_deviations(values.iter().copied());
        for (i, got) in prefix.iter().enumerate() {
            let m = median(&values[..i]);
            let direct: f64 = values[..i].iter().map(|x| (x - m).abs()).sum();
            assert!((got - if i == 0 { 0.0 } else { direct }).abs() < 1e-12, "prefix {i}: {got} vs {direct}");
        }
    }

    #[test]
    fn min_segment_is_raised_until_an_interval_exists() {
        let config = ChangePointConfig { min_segment: 1, ..Default::default() };
        assert_eq!(effective_min_segment(&config), 4);
    }

    #[test]
    fn invalid_settings_report_nothing_and_do_not_hang() {
        let values = series(9, 40, &[(20, 3.0)], &Noise::gaussian(0.02));
        for confidence in [0.0, 1.0, f64::NAN] {
            let config = ChangePointConfig { confidence, ..Default::default() };
            assert!(detect(&values, &config).is_empty(), "{confidence}");
        }
        let config = ChangePointConfig { alpha: 0.0, ..Default::default() };
        assert!(detect(&values, &config).is_empty());
    }

    #[test]
    fn a_step_between_two_labels_of_six_runs_on_each_side_is_found() {
        for (seed, factor) in [(1, 1.3), (2, 0.6), (3, 2.0)] {
            let groups = history(seed, 4, 6, &[(2, factor)], &Noise::heavy_tailed(HEAVY_SIGMA), 0.0);
            let found = detect_groups(&groups, &ChangePointConfig::for_groups());
            assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), [2], "seed {seed}: {found:?}");
            let cp = &found[0];
            assert!(cp.ci.0 <= factor && factor <= cp.ci.1 && cp.p_value <= 0.01, "{cp:?}");
        }
    }

    #[test]
    fn the_issue_history_of_six_labels_shows_its_step() {
        // v1..v6 with 8 runs each; a locked xchg replaced by a mov at v5: 243 ms → 18.5 ms.
        let groups: Vec<Vec<f64>> = (0..6)
            .map(|l| {
                let level = if l < 4 { 0.243 } else { 0.0185 };
                (0..8).map(|r| level * (1.0 + 0.004 * ((l * 5 + r * 3) % 7) as f64)).collect()
            })
            .collect();
        assert!(detect(&groups.iter().map(|g| median(g)).collect::<Vec<_>>(), &ChangePointConfig::default()).is_empty());
        let found = detect_groups(&groups, &ChangePointConfig::for_groups());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 4);
        assert!((found[0].ratio - 0.0185 / 0.243).abs() < 0.003, "{found:?}");
    }

    /// Issue #39: six labels of 8 runs with an 8.7× step after the fourth were found 10
    /// times in 11: when the fourth label sat a few % below the first three, the run
    /// statistic preferred the split after the third, whose label test failed, and the
    /// series said "no change point" beside a row marked changed. Every position of the
    /// fourth label, and label effects up to 5 % with heavy-tailed runs, now find it.
    #[test]
    fn a_step_far_beyond_the_noise_is_found_wherever_the_label_before_it_lies() {
        let config = ChangePointConfig::for_groups();
        for offset in [-0.05, -0.03, -0.01, 0.0, 0.01, 0.03, 0.05] {
            let groups: Vec<Vec<f64>> = (0..6)
                .map(|l| {
                    let level = match l {
                        0..=2 => 0.243,
                        3 => 0.243 * (1.0 + offset),
                        _ => 0.243 / 8.7,
                    };
                    (0..8).map(|r| level * (1.0 + 0.002 * ((l * 5 + r * 3) % 7) as f64)).collect()
                })
                .collect();
            let found = detect_groups(&groups, &config);
            assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), [4], "offset {offset}: {found:?}");
        }
        let mut detector = Detector::new(config);
        for seed in 0..300 {
            let label_sigma = [0.0, 0.01, 0.03, 0.05][seed as usize % 4];
            let groups =
                history(seed + 90_000, 6, 8, &[(4, 1.0 / 8.7)], &Noise::heavy_tailed(HEAVY_SIGMA), label_sigma);
            let found = detector.detect_groups(&groups);
            // A label effect of 5 % may show as a shift of its own beside the step.
            assert!(found.iter().any(|c| c.index == 4 && (0.09..0.14).contains(&c.ratio)), "seed {seed}: {found:?}");
        }
    }

    #[test]
    fn grouped_noise_rarely_reports_a_change_point_even_when_labels_differ() {
        // Label effects of 0 (runs exchangeable), 1 % and 3 % (as large as the run noise and
        // beyond): the run test alone would flag most of the latter.
        for label_sigma in [0.0, 0.01, 0.03] {
            let mut with_change = 0;
            let trials = 150;
            for seed in 0..trials {
                let labels = 4 + (seed as usize * 7) % 37;
                let kind = if seed % 2 == 0 { Noise::gaussian(0.02) } else { Noise::heavy_tailed(HEAVY_SIGMA) };
                let groups = history(seed + 50_000, labels, 6 + seed as usize % 7, &[], &kind, label_sigma);
                with_change += usize::from(!detect_groups(&groups, &ChangePointConfig::for_groups()).is_empty());
            }
            assert!(with_change as f64 / trials as f64 <= 0.04, "label σ {label_sigma}: {with_change} of {trials}");
        }
    }

    #[test]
    fn a_detector_reusing_null_distributions_agrees_with_fresh_ones() {
        let config = ChangePointConfig::for_groups();
        let mut shared = Detector::new(config.clone());
        for seed in 0..12 {
            let shifts: &[(usize, f64)] = if seed % 3 == 0 { &[] } else { &[(3 + seed as usize % 5, 1.1)] };
            let groups = history(seed, 12, 10, shifts, &Noise::heavy_tailed(HEAVY_SIGMA), 0.0);
            assert_eq!(shared.detect_groups(&groups), detect_groups(&groups, &config), "seed {seed}");
        }
        assert!(!shared.nulls.is_empty());
    }

    #[test]
    fn groups_with_ties_and_empty_groups() {
        // Exact counts: every run of a label identical; a label without usable values.
        let mut groups: Vec<Vec<f64>> = (0..8).map(|l| vec![if l < 5 { 1000.0 } else { 1100.0 }; 6]).collect();
        groups.insert(2, vec![f64::NAN, -1.0]);
        let found = detect_groups(&groups, &ChangePointConfig::for_groups());
        assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), [6], "{found:?}");
        assert!(detect_groups::<Vec<f64>>(&[], &ChangePointConfig::for_groups()).is_empty());
        assert!(detect_groups(&[vec![1.0; 50]], &ChangePointConfig::for_groups()).is_empty());
    }
}
