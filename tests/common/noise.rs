//! The failure probability of a test that asserts what real measurements came out as:
//! computed, so that a margin is chosen, not hoped for.
//!
//! The noise is what this 2-core VM gave beside a CPU burner on each CPU (the worst case
//! of the machine a newcomer runs the tests on: other jobs building, the tests
//! themselves running in parallel): `scripts/noise-tails` ran A/A comparisons of the
//! spin fixture at three lengths and counted, per metric, the rounds whose paired log
//! ratio e = ln(second / first) strayed beyond each threshold
//! (`tests/data/noise_tails.json`). Nothing is assumed about the shape of the noise:
//!
//! * one round strays beyond x with probability at most [`Tail::p_beyond`]: the
//!   Clopper–Pearson upper bound (99.9 %) of the fraction measured beyond the largest
//!   measured threshold ≤ x — 0 of 600 rounds still counts as up to 1.15 %;
//! * an interval or estimate of n rounds lands on the wrong side only if enough rounds
//!   stray, however far: the fewest that can do it is found by giving the library's own
//!   interval ([`hl_interval`]) or estimate ([`hodges_lehmann`]) the worst case — the
//!   other rounds just on the right side, the strays at minus infinity;
//! * rounds stray independently: the chance that that many do is a binomial tail.
//!
//! A test states the bounds beside its assertions and asserts their sum is below
//! [`P_MAX`], 10⁻⁴ (that check depends on nothing measured: it fails only if someone
//! thins a margin).
//! Sampled profiles are the other case: [`split_tolerance`] (Hoeffding's inequality).

use perflab::stats::signed_rank::{hl_interval, hodges_lehmann};
use serde::Deserialize;
use statrs::distribution::{Beta, ContinuousCDF};

/// The most a test may fail by chance: the sum of its assertions' bounds stays below.
pub const P_MAX: f64 = 1e-4;

/// Confidence of the upper bounds on a round's chance to stray.
const BOUND_CONFIDENCE: f64 = 0.999;

#[derive(Deserialize)]
struct Measured {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    /// The spin fixture's loop count (its A/A cases).
    iterations: Option<u64>,
    /// The command of a benchmark timing itself (its A/A case).
    selftimed: Option<String>,
    /// What was measured on a PostgreSQL server (its A/A case).
    postgres: Option<String>,
    metrics: std::collections::BTreeMap<String, MetricTail>,
}

#[derive(Deserialize, Clone)]
struct MetricTail {
    n: u64,
    /// (threshold, rounds with |e| above it)
    beyond: Vec<(f64, u64)>,
}

/// How one metric's rounds strayed for commands of one length.
#[derive(Clone)]
pub struct Tail {
    what: String,
    measured: MetricTail,
}

/// The measured tail of `metric` (`wall_s`, `cpu_s` or `uncontended_s`) for a comparison
/// whose shorter command does at least `iterations` of the spin fixture's loop (or as
/// much CPU work): the longest measured length not above it — shorter runs stray more.
pub fn tail(metric: &str, iterations: u64) -> Tail {
    let case = measured()
        .cases
        .into_iter()
        .filter(|c| c.iterations.is_some_and(|n| n <= iterations))
        .max_by_key(|c| c.iterations)
        .unwrap_or_else(|| panic!("no measured noise for commands as short as {iterations} iterations"));
    let tail = case.metrics.get(metric).unwrap_or_else(|| panic!("no measured noise of {metric}")).clone();
    Tail { what: format!("{metric} of {}-iteration runs", case.iterations.unwrap()), measured: tail }
}

/// The measured tail of a self-timed `metric` (`iter_ns`, `iter_ns[first]`,
/// `iter_ns[steady]`) of tests/fixtures/iterations.c, run as `iterations 10 warm 200000`.
pub fn selftimed_tail(metric: &str) -> Tail {
    let case = measured().cases.into_iter().find(|c| c.selftimed.is_some()).expect("a self-timed case");
    let tail = case.metrics.get(metric).unwrap_or_else(|| panic!("no measured noise of {metric}")).clone();
    Tail { what: format!("{metric} of `{}`", case.selftimed.unwrap()), measured: tail }
}

/// The measured tail of `metric` of the PostgreSQL case whose description contains
/// `what` (`synchronous_commit on`, `synchronous_commit off`, `index range scan`): pgbench's
/// tps and EXPLAIN ANALYZE's execution time, measured on this machine's server.
pub fn postgres_tail(metric: &str, what: &str) -> Tail {
    let case = measured()
        .cases
        .into_iter()
        .find(|c| c.postgres.as_deref().is_some_and(|p| p.contains(what)))
        .unwrap_or_else(|| panic!("no PostgreSQL case `{what}` measured"));
    let tail = case.metrics.get(metric).unwrap_or_else(|| panic!("no measured noise of {metric}")).clone();
    Tail { what: format!("{metric} of {}", case.postgres.unwrap()), measured: tail }
}

fn measured() -> Measured {
    serde_json::from_str(include_str!("../data/noise_tails.json")).expect("noise_tails.json")
}

impl Tail {
    /// An upper bound on the chance that one round's |e| exceeds `x` (natural log).
    pub fn p_beyond(&self, x: f64) -> f64 {
        let (_, count) = self
            .measured
            .beyond
            .iter()
            .filter(|(threshold, _)| *threshold <= x)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .copied()
            .unwrap_or((0.0, self.measured.n));
        upper_bound(count, self.measured.n)
    }
}

impl std::fmt::Debug for Tail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} beside two CPU burners ({} rounds)", self.what, self.measured.n)
    }
}

/// Clopper–Pearson upper bound (99.9 %) of a rate seen `k` times in `n`.
pub fn upper_bound(k: u64, n: u64) -> f64 {
    if k >= n {
        return 1.0;
    }
    let alpha = 1.0 - BOUND_CONFIDENCE;
    if k == 0 {
        return 1.0 - alpha.powf(1.0 / n as f64);
    }
    Beta::new(k as f64 + 1.0, (n - k) as f64).unwrap().inverse_cdf(1.0 - alpha)
}

/// P(at least `m` of `n` independent rounds stray), each with chance `p`.
pub fn at_least(m: usize, n: usize, p: f64) -> f64 {
    if m == 0 {
        return 1.0;
    }
    // Σ_{j≥m} C(n,j) p^j (1−p)^(n−j), in logs (n is small; no cancellation).
    (m..=n)
        .map(|j| {
            let log_choose: f64 = (0..j).map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln()).sum();
            (log_choose + j as f64 * p.ln() + (n - j) as f64 * (1.0 - p).ln()).exp()
        })
        .sum::<f64>()
        .min(1.0)
}

/// k of the Wilcoxon interval of `n` rounds at `confidence` — it is [W₍k₎, W₍M+1−k₎] of
/// the M = n(n+1)/2 sorted Walsh averages — read off the library's own interval of
/// values whose Walsh averages are all distinct. None when no interval exists.
pub fn critical_k(n: usize, confidence: f64) -> Option<usize> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
    let d: Vec<f64> = (0..n).map(|_| rng.gen::<f64>()).collect();
    let low = hl_interval(&d, confidence)?.low;
    let mut walsh: Vec<f64> =
        (0..n).flat_map(|i| (i..n).map(move |j| (i, j))).map(|(i, j)| (d[i] + d[j]) / 2.0).collect();
    walsh.sort_by(f64::total_cmp);
    Some(walsh.partition_point(|w| *w < low) + 1)
}

/// Walsh averages that involve none of `m` chosen rounds of `n`.
fn untouched(n: usize, m: usize) -> usize {
    (n - m) * (n - m + 1) / 2
}

/// The fewest of `n` rounds that, strayed arbitrarily far, can bring the Wilcoxon
/// interval at `confidence` down to (or below) 0 while every other round is above 0 —
/// the k-th smallest Walsh average is then one that involves a stray. None when no
/// interval exists for `n` rounds at that confidence.
pub fn fewest_to_spoil_interval(n: usize, confidence: f64) -> Option<usize> {
    let k = critical_k(n, confidence)?;
    let total = n * (n + 1) / 2;
    (1..=n).find(|&m| k <= total - untouched(n, m))
}

/// The fewest of `n` rounds that, strayed arbitrarily far, can bring the interval's
/// *upper* limit down to 0 while every other round is above 0 — what deciding the wrong
/// way (`faster`, or `equivalent` within a 1 % threshold) takes: all but k − 1 of the
/// Walsh averages must involve a stray.
pub fn fewest_to_reverse_interval(n: usize, confidence: f64) -> Option<usize> {
    let k = critical_k(n, confidence)?;
    (1..=n).find(|&m| untouched(n, m) < k)
}

/// The fewest of `n` rounds that, strayed arbitrarily far, can move the Hodges–Lehmann
/// estimate off the others' value.
pub fn fewest_to_move_estimate(n: usize) -> usize {
    (1..=n)
        .find(|&m| {
            let d: Vec<f64> = (0..n).map(|i| if i < m { 1e9 } else { 0.0 }).collect();
            hodges_lehmann(&d) > 0.0
        })
        .unwrap()
}

/// An upper bound on P(the interval of `rounds` rounds at `confidence` is not wholly on
/// the side of 1 the true ratio is on), when the true log ratio's size is at least
/// `effect` for this metric and length.
pub fn p_interval_misses(tail: &Tail, rounds: usize, confidence: f64, effect: f64) -> f64 {
    match fewest_to_spoil_interval(rounds, confidence) {
        Some(m) => at_least(m, rounds, tail.p_beyond(effect)),
        None => 1.0,
    }
}

/// An upper bound on P(the Hodges–Lehmann estimate of `rounds` rounds lies more than
/// `margin` (log) from the truth).
pub fn p_estimate_off(tail: &Tail, rounds: usize, margin: f64) -> f64 {
    at_least(fewest_to_move_estimate(rounds), rounds, tail.p_beyond(margin))
}

/// The tolerance of a sampled split: a function's share of the samples that landed in a
/// set of functions differs from its share of their time by more than this with
/// probability at most [`P_MAX`] / 10 — Hoeffding's inequality, P(|p̂ − p| > t) ≤ 2e^(−2Nt²),
/// for N samples taken as independent draws. cpu-clock samples are taken every period
/// of the task's CPU time, so they scatter less than draws (twelve 540-sample profiles
/// of the 3:1 fixture beside two burners read 0.746–0.754 where draws would scatter
/// ±0.04): the bound is conservative. What a busy machine does add — samples of kernel
/// code at every preemption — lands outside the set and is not in N.
pub fn split_tolerance(samples: u64) -> f64 {
    ((2.0 / (P_MAX / 10.0)).ln() / (2.0 * samples as f64)).sqrt()
}

/// The looks of the default sequential design (perflab compare without `--rounds`: at
/// `first` (`--min-rounds`, 6 by default), then ×1.2: 8, 10, 12, 15, … rounds) up to
/// `until` rounds, each with an upper bound on
/// its interval's confidence: 1 − the α the front-loaded logarithmic spending (power 0.7,
/// perflab's `logarithmic_front`) adds since the previous
/// scheduled look, over the longest horizon perflab ever plans (`max_rounds`, 10,000 by
/// default). A look's nominal α is at least that increment — a look skipped because no
/// interval was attainable only leaves more for the next, and after a switch to
/// uncontended_s the next look spends exactly its increment — so every real look's
/// interval is at most this wide.
pub fn sequential_looks(first: u32, until: u32, max_rounds: u32) -> Vec<(u32, f64)> {
    sequential_looks_at(0.05, first, until, max_rounds)
}

/// [`sequential_looks`] with `alpha` for the comparison (5 % split over a Bonferroni family).
pub fn sequential_looks_at(alpha: f64, first: u32, until: u32, max_rounds: u32) -> Vec<(u32, f64)> {
    use perflab::stats::sequential::Spending;
    const GROWTH: f64 = 1.2; // perflab's GROUP_SEQUENTIAL_GROWTH, also the start's divisor
    let horizon = max_rounds as f64;
    // perflab's FRONT_POWER (crates/engine/src/plan/schedule.rs).
    let spending = Spending::LogPower { start: (first as f64 / GROWTH / horizon).min(0.5), power: 0.7 };
    let mut looks = Vec::new();
    let (mut previous, mut n) = (0.0, first);
    while n <= until {
        let spent = spending.spent(alpha, n as f64 / horizon);
        looks.push((n, 1.0 - (spent - previous)));
        previous = spent;
        n = ((n as f64 * GROWTH).ceil() as u32).max(n + 1);
    }
    looks
}

/// An upper bound on P(a comparison on the sequential design with its first look at
/// `first` rounds, of a change whose
/// true log ratio is at least `effect` on the metric it decides on, has not stopped on
/// the right verdict by the look at `by` rounds): its interval at that look spoiled, or
/// an earlier look's interval decided the wrong way (its upper limit below 1 + the 1 %
/// threshold). `tails`: every metric it may decide on (wall time, or the uncontended
/// time on a busy machine); the worst counts.
pub fn p_sequential_misses(first: u32, tails: &[&Tail], effect: f64, by: u32) -> f64 {
    p_sequential_misses_at(0.05, first, tails, effect, by)
}

/// [`p_sequential_misses`] for a comparison of a Bonferroni family (`alpha` its share).
pub fn p_sequential_misses_at(alpha: f64, first: u32, tails: &[&Tail], effect: f64, by: u32) -> f64 {
    let looks = sequential_looks_at(alpha, first, by, 10_000);
    let (last, confidence) = *looks.last().expect("at least the first look");
    let spoiled =
        tails.iter().map(|tail| p_interval_misses(tail, last as usize, confidence, effect)).fold(0.0, f64::max);
    spoiled + p_sequential_crosses(first, tails, effect - 0.01f64.ln_1p(), by)
}

/// An upper bound on P(any look up to `by` rounds of the default sequential design has
/// its whole interval beyond a point `margin` (log) past the true ratio — on the far
/// side of it): most of that look's rounds must stray past the point. Taken at the 95 %
/// level, the narrowest any look's interval gets (every look's boundary is at least the
/// fixed design's: its α is part of the 5 %).
pub fn p_sequential_crosses(first: u32, tails: &[&Tail], margin: f64, by: u32) -> f64 {
    let looks = sequential_looks(first, by, 10_000);
    tails
        .iter()
        .map(|tail| {
            looks
                .iter()
                .filter_map(|(n, _)| Some((*n as usize, fewest_to_reverse_interval(*n as usize, 0.95)?)))
                .map(|(n, m)| at_least(m, n, tail.p_beyond(margin)))
                .sum::<f64>()
        })
        .fold(0.0, f64::max)
}

/// Assert that `part` of `part + other` samples is `truth` within [`split_tolerance`]
/// (P(fail) ≤ 10⁻⁵ under the conservative model), and that the tolerance still means
/// something (at most ±0.1: enough samples were taken).
pub fn assert_split(part: u64, other: u64, truth: f64, what: &str) {
    let n = part + other;
    let tolerance = split_tolerance(n);
    assert!(tolerance <= 0.1, "{what}: {n} samples are too few to check a split (±{tolerance:.3})");
    let share = part as f64 / n as f64;
    assert!(
        (share - truth).abs() <= tolerance,
        "{what}: {share:.4} of {n} samples, expected {truth} ± {tolerance:.3} (P(fail) ≤ 1e-5 by Hoeffding)"
    );
}

/// An upper bound on P(at any look up to `by` rounds of the default sequential design
/// the Hodges–Lehmann estimate lies more than `margin` (log) from the truth).
pub fn p_sequential_estimate_off(first: u32, tails: &[&Tail], margin: f64, by: u32) -> f64 {
    let looks = sequential_looks(first, by, 10_000);
    tails
        .iter()
        .map(|tail| looks.iter().map(|(n, _)| p_estimate_off(tail, *n as usize, margin)).sum::<f64>())
        .fold(0.0, f64::max)
}
