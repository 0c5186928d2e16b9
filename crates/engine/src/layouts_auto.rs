//! `compare --layouts auto`: two versions compared across as many code layouts as the
//! answer needs — a pair of new layouts (one of each version) at a time, each pair
//! measured in its own block of interleaved rounds, until the verdict is decided or the
//! budget (time, layouts) ends; the rounds each pair gets are chosen from how much of the
//! uncertainty is between layouts and how much within one (docs/statistics.md, "Layouts
//! chosen by the data").
//!
//! **Why pairs.** With `--layouts N` every layout runs in every round, so the round's
//! shared part cancels across all of them; a layout added later missed the earlier rounds.
//! A pair measured in its own rounds needs nothing from the others: its log ratio
//! d_s = HL over its rounds of ln(candidate/baseline) is μ + (u_b − u_a) + e_s, and the
//! pairs are independent draws. u_b − u_a, the difference of two draws from one layout
//! distribution, is **symmetric** about 0 whatever that distribution's shape (a hot loop
//! straddling a line or not is bimodal; the difference of two such draws is symmetric),
//! so the Wilcoxon signed-rank interval on the d_s is exact under no change — the
//! property the Mann–Whitney interval of `--layouts N` was chosen for.
//!
//! **Looks.** The interval is looked at after 8, 12, 16, 24, 32, 48, … pairs, look k
//! (from 1) at level 1 − α/(k(k+1)) (the union bound: valid however the looks depend on
//! each other, as `--layouts N`'s looks); a budget that ends between looks takes the next
//! look there. Fewer than 7 pairs cannot reach the first look's 97.5 % (2/2⁶ > 2.5 %).
//!
//! **Rounds per pair.** var(d_s) = B + W/R: B = 2τ² from the layouts, W the variance of
//! one round's log ratio, R the pair's rounds. A pair costs F + R·c (F: building it, its
//! setting up and any warm-up round; c: one round), so the variance of the mean after a
//! time T is (B + W/R)(F + R·c)/T, least at R* = √(W·F ÷ (B·c)) — few rounds when
//! layouts dominate (more layouts, fewer rounds each: down to one), many when they do not
//! or builds are dear. B and W are estimated from the pairs so far (B = var(d) − mean
//! W/R, W from each pair of two or more rounds by their scaled MAD, pooled for a pair of
//! one); the first two pairs get [`FIRST_ROUNDS`]. Guarding against a B̂ too small from
//! few pairs (the costly mistake: too many rounds on too few layouts, where too few
//! rounds only cost some efficiency): B is taken as at least half of var(d), a pair gets
//! at most twice the most rounds any pair had, and no more than let the pairs up to the
//! next look fit in what is left of `--max-time` (at least [`MIN_ROUNDS`]). A pair that
//! would pass `--max-time` gets the rounds that fit, if at least [`MIN_ROUNDS`] do.
//!
//! **Warm-up.** Only the first pair takes the settings' warm-up rounds (unless the runner
//! was told to warm every pair): each later pair follows one that just ran, and a freshly
//! linked program's first run measured the same as its later ones (docs/statistics.md),
//! so its warm-up round would cost as much as a measured one and say nothing.
//!
//! **What the budget can decide.** At every look left undecided the pairs so far project
//! how many more would decide: the first later look whose interval, at its level and the
//! spread seen, would be narrower than the estimate's distance from 1 (a real change) or
//! from ±threshold (no change), and what those pairs cost at this pace. When that is past
//! the budget it is said at once ([`PairRunner::note`]) and kept in the JSON; the layouts
//! go on, narrowing what is ruled out.

use crate::analysis::layouts::{LAYOUTS_FACT, LAYOUT_DOMINATES, SPREAD_FACT, SPREAD_METRIC_FACT};
use crate::analysis::verdict;
use perflab_model::{
    AutoLayouts, AutoProjection, AutoStop, BudgetReach, Comparison, Experiment, LayoutAnalysis, LayoutContrast,
    LayoutLevel, LayoutPair, LayoutReading, LayoutVersion, Layouts, Settings, StopReason, Verdict, VersionLayouts,
};
use perflab_stats::signed_rank::{hl_interval, hodges_lehmann, wilcoxon_p};
use perflab_stats::summary::mad_scaled;
use std::collections::{BTreeMap, BTreeSet};

/// Rounds of each of the first two pairs (nothing is known yet of B and W).
pub const FIRST_ROUNDS: u32 = 10;
/// The fewest rounds a pair gets: when layouts dominate, one round of a new pair buys
/// more certainty than a second round of the same pair (W then comes from the pairs of
/// two or more rounds).
pub const MIN_ROUNDS: u32 = 1;
/// The most rounds a pair gets (layouts without any measurable effect): beyond this the
/// next pair's layouts are worth more than its rounds whatever B is.
pub const MAX_ROUNDS: u32 = 60;
/// The default layouts budget, per version (`--max-layouts`): high enough that
/// `--max-time` ends a run (a pair of one round costs well under a second here; 64, the
/// first default, ended runs at 53 s of 120), low enough to bound the programs on disk.
pub const DEFAULT_MAX_LAYOUTS: usize = 500;
/// Pairs measured when the interval is looked at (then every 1.5× more).
const FIRST_LOOKS: [usize; 6] = [8, 12, 16, 24, 32, 48];
/// Variance of the Hodges–Lehmann location of R normal values: (π/3)·σ²/R (its
/// efficiency against the mean is 3/π); of one or two values it is their mean (σ²/R).
const HL_VARIANCE_FACTOR: f64 = std::f64::consts::FRAC_PI_3;
/// The most pairs a projection looks for: beyond, "more than this" is said.
pub const MAX_PROJECTED_PAIRS: usize = 100_000;

/// The factor of W/R in the variance of a pair's HL location of R rounds.
fn hl_factor(rounds: u32) -> f64 {
    if rounds <= 2 {
        1.0
    } else {
        HL_VARIANCE_FACTOR
    }
}

/// The pairs measured when look `k` (from 0) is taken.
pub fn look_at(k: usize) -> usize {
    match FIRST_LOOKS.get(k) {
        Some(&n) => n,
        None => {
            let mut n = FIRST_LOOKS[FIRST_LOOKS.len() - 1];
            for _ in FIRST_LOOKS.len()..=k {
                n += n / 2;
            }
            n
        }
    }
}

/// The confidence level of look `k` (from 0) at family confidence `confidence`:
/// 1 − α/((k+1)(k+2)), which sums to at most α over every look.
pub fn look_level(k: usize, confidence: f64) -> f64 {
    1.0 - (1.0 - confidence) / ((k + 1) * (k + 2)) as f64
}

/// One pair, measured: the runner's answer to [`PairRunner::run_pair`].
#[derive(Debug, Clone)]
pub struct PairRun {
    /// Its two commands (baseline layout, then candidate layout) in interleaved rounds;
    /// each command's parameters carry its version and seed (`Layouts::parameters`).
    pub experiment: Experiment,
    /// Seconds spent building its layouts (0 when both came from the cache).
    pub build_s: f64,
    /// Layouts taken from the cache (0, 1 or 2).
    pub cached: usize,
    /// Seconds the pair took, builds included.
    pub elapsed_s: f64,
}

/// Builds and measures pairs of layouts: the real one builds (or takes from the cache)
/// and runs processes; tests simulate both.
pub trait PairRunner {
    /// What stops the whole experiment (a build that fails, a command that cannot start).
    type Error: std::fmt::Display;
    /// Layout `index` (from 0) of both versions, measured in `rounds` rounds, after the
    /// settings' warm-up rounds when `warm_up` (the first pair; see the module's doc).
    fn run_pair(&mut self, index: usize, rounds: u32, warm_up: bool) -> Result<PairRun, Self::Error>;
    /// A line for the user while the pairs go on (what the budget cannot decide).
    fn note(&mut self, _text: &str) {}
}

/// When to stop adding layouts without a verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoBudget {
    /// Seconds for everything, builds included (`--max-time`).
    pub max_time_s: f64,
    /// Layouts per version (`--max-layouts`).
    pub max_layouts: usize,
}

/// One pair's measurement, reduced to what the decision needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairStats {
    /// HL of the rounds' ln(candidate/baseline).
    pub log_ratio: f64,
    /// Variance of one round's log ratio (scaled MAD squared).
    pub round_variance: f64,
    /// Rounds with a value from both.
    pub rounds: u32,
    /// Seconds of its builds.
    pub build_s: f64,
    /// Seconds of one of its rounds (its measuring time ÷ its rounds, warm-up included).
    pub round_s: f64,
    /// Seconds of the pair outside its builds and rounds (planning, starting the
    /// measurement, the cache's keys): paid once per pair, like a build.
    pub overhead_s: f64,
    /// Its warm-up rounds.
    pub warmup_rounds: u32,
}

impl PairStats {
    /// The variance of its log ratio that its own runs explain: (π/3)·W/R, W its own when
    /// it has two rounds or more, else `pooled`.
    fn within(&self, pooled: f64) -> f64 {
        let w = if self.round_variance.is_finite() { self.round_variance } else { pooled };
        hl_factor(self.rounds) * w / self.rounds.max(1) as f64
    }
}

/// W pooled over the pairs that measured it (two rounds or more); NaN when none did.
fn pooled_round_variance(pairs: &[PairStats]) -> f64 {
    let measured: Vec<f64> = pairs.iter().map(|p| p.round_variance).filter(|w| w.is_finite()).collect();
    if measured.is_empty() {
        f64::NAN
    } else {
        measured.iter().sum::<f64>() / measured.len() as f64
    }
}

/// What the pairs say about where the uncertainty lies and what a pair costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Allocation {
    /// B: the variance of a pair's log ratio from layouts (2τ²); NaN with < 2 pairs.
    pub between: f64,
    /// W: the variance of one round's log ratio.
    pub round_variance: f64,
    /// Mean seconds of building a pair.
    pub build_s: f64,
    /// Mean seconds of a pair outside its builds and rounds.
    pub overhead_s: f64,
    /// Mean seconds of one round.
    pub round_s: f64,
    /// The warm-up rounds the next pair takes (the last pair's).
    pub warmup_rounds: u32,
    /// The rounds the next pair gets.
    pub next_rounds: u32,
}

impl Allocation {
    /// What the next pair costs before its first measured round: builds, overhead and
    /// warm-up.
    pub fn fixed_s(&self) -> f64 {
        self.build_s + self.overhead_s + self.warmup_rounds as f64 * self.round_s
    }

    /// Seconds of the next pair with `rounds` rounds.
    pub fn pair_s(&self, rounds: u32) -> f64 {
        self.fixed_s() + rounds as f64 * self.round_s
    }
}

/// B, W, the costs and the rounds of the next pair from the pairs so far (see the module's
/// doc).
pub fn allocation(pairs: &[PairStats]) -> Allocation {
    let n = pairs.len() as f64;
    let mean = |f: &dyn Fn(&PairStats) -> f64| pairs.iter().map(f).sum::<f64>() / n;
    let Some(last) = pairs.last() else {
        return Allocation {
            between: f64::NAN,
            round_variance: f64::NAN,
            build_s: 0.0,
            overhead_s: 0.0,
            round_s: 0.0,
            warmup_rounds: 0,
            next_rounds: FIRST_ROUNDS,
        };
    };
    let round_variance = pooled_round_variance(pairs);
    let build_s = mean(&|p| p.build_s);
    let overhead_s = mean(&|p| p.overhead_s);
    let round_s = mean(&|p| p.round_s);
    let var_d = if pairs.len() >= 2 {
        let d_mean = mean(&|p| p.log_ratio);
        pairs.iter().map(|p| (p.log_ratio - d_mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        f64::NAN
    };
    let between = (var_d - mean(&|p| p.within(round_variance))).max(0.0);
    // What the rounds are chosen on: B̂, but at least half of var(d) (see the module's doc).
    let between_for_rounds = between.max(var_d / 2.0);
    let growth = 2 * pairs.iter().map(|p| p.rounds).max().unwrap_or(FIRST_ROUNDS).max(MIN_ROUNDS);
    let mut allocation = Allocation {
        between,
        round_variance,
        build_s,
        overhead_s,
        round_s,
        // The first pair's warm-up is not the next pair's: the second pair's is.
        warmup_rounds: if pairs.len() >= 2 { last.warmup_rounds } else { 0 },
        next_rounds: FIRST_ROUNDS,
    };
    allocation.next_rounds = if pairs.len() < 2 {
        FIRST_ROUNDS
    } else if between_for_rounds <= 0.0 || round_s <= 0.0 || !round_variance.is_finite() {
        MAX_ROUNDS.min(growth)
    } else {
        let best = (HL_VARIANCE_FACTOR * round_variance * allocation.fixed_s() / (between_for_rounds * round_s)).sqrt();
        if best.is_finite() {
            (best.round() as u32).clamp(MIN_ROUNDS, MAX_ROUNDS.min(growth))
        } else {
            MAX_ROUNDS.min(growth)
        }
    };
    allocation
}

/// How many pairs would decide, from the pairs so far, and what they would cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projection {
    /// Pairs (layouts of each version) in all at the look that would decide; None past
    /// [`MAX_PROJECTED_PAIRS`].
    pub pairs: Option<usize>,
    /// Seconds the pairs still to measure would take at this pace (the rounds the rule
    /// gives them); None with `pairs`.
    pub seconds: Option<f64>,
}

/// The first look from `next_look` on whose interval would decide if the pairs went on as
/// they have: its half-width z·s_d·√(π/3)/√n (the signed-rank HL interval of n pairs of
/// standard deviation s_d, at the look's level) under the distance of the estimate from
/// 1 (a real change) or from the nearer edge of ±`threshold` (no change). A point
/// projection: about even odds of deciding there when the estimate is the truth.
pub fn project(
    pairs: &[PairStats],
    allocation: &Allocation,
    next_look: usize,
    confidence: f64,
    threshold: f64,
) -> Projection {
    let none = Projection { pairs: None, seconds: None };
    let d: Vec<f64> = pairs.iter().map(|p| p.log_ratio).filter(|x| x.is_finite()).collect();
    if d.len() < 2 {
        return none;
    }
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let estimate = hodges_lehmann(&d);
    let gaps = [estimate.abs(), (1.0 + threshold).ln() - estimate, estimate - (1.0 - threshold).ln()];
    let reach = gaps[0].max(gaps[1].min(gaps[2]));
    if reach <= 0.0 || !sd.is_finite() {
        return none;
    }
    let mut k = next_look;
    loop {
        let at = look_at(k);
        if at > MAX_PROJECTED_PAIRS {
            return none;
        }
        let z = perflab_stats::normal_quantile_two_sided(look_level(k, confidence));
        if at >= d.len() && z * sd * HL_VARIANCE_FACTOR.sqrt() / (at as f64).sqrt() <= reach {
            let more = (at - d.len()) as f64;
            return Projection { pairs: Some(at), seconds: Some(more * allocation.pair_s(allocation.next_rounds)) };
        }
        k += 1;
    }
}

/// The comparison of the candidate with the baseline across `pairs`, at `level`: the
/// HL estimate of the pairs' log ratios with the signed-rank interval.
pub fn judge(pairs: &[PairStats], metric: &str, level: f64, settings: &Settings) -> Comparison {
    let d: Vec<f64> = pairs.iter().map(|p| p.log_ratio).filter(|x| x.is_finite()).collect();
    let interval = hl_interval(&d, level);
    let rounds: u32 = pairs.iter().map(|p| p.rounds).sum();
    let mut flags = vec![format!(
        "across layouts chosen by the data: {} pairs of layouts (one of each version per pair, in its own rounds), {rounds} rounds in all; the interval is the signed-rank one on the pairs' ratios, which counts how much layouts differ",
        d.len()
    )];
    if interval.is_none() {
        flags.push(format!(
            "{} pairs of layouts cannot reach {:.2} % confidence whatever they measure (8 pairs reach the first look's 97.5 %)",
            d.len(),
            level * 100.0
        ));
    }
    verdict::judged(
        metric,
        hodges_lehmann(&d).exp(),
        interval.map(|i| (i.low.exp(), i.high.exp())),
        wilcoxon_p(&d).0,
        d.len(),
        level,
        settings,
        flags,
    )
}

/// One pair's statistics on `metric` from its experiment.
pub fn pair_stats(run: &PairRun, metric: &str) -> PairStats {
    let by_round = |k: usize| -> BTreeMap<u32, f64> {
        run.experiment.commands.get(k).map_or_else(BTreeMap::new, |c| {
            c.runs
                .iter()
                .filter_map(|r| Some((r.round, r.metric(metric)?)))
                .filter(|(_, v)| v.is_finite() && *v > 0.0)
                .collect()
        })
    };
    let (a, b) = (by_round(0), by_round(1));
    let logs: Vec<f64> = a.iter().filter_map(|(r, x)| Some(b.get(r)?.ln() - x.ln())).collect();
    let rounds = logs.len() as u32;
    let outside_builds = (run.elapsed_s - run.build_s).max(0.0);
    // The rounds' own time (the experiment's clock runs from its first round); what else
    // the pair took is paid once per pair.
    let measuring = run.experiment.duration_s.clamp(0.0, outside_builds);
    let warmup_rounds = run.experiment.settings.warmup_rounds;
    let all_rounds = run.experiment.rounds + warmup_rounds;
    PairStats {
        log_ratio: if logs.is_empty() { f64::NAN } else { hodges_lehmann(&logs) },
        round_variance: if logs.len() >= 2 { mad_scaled(&logs).powi(2) } else { f64::NAN },
        rounds,
        build_s: run.build_s,
        round_s: if all_rounds > 0 { measuring / all_rounds as f64 } else { 0.0 },
        overhead_s: outside_builds - measuring,
        warmup_rounds,
    }
}

/// Compare two versions across layouts chosen by the data: pairs from `runner` until the
/// verdict is decided or `budget` ends; `names` are the versions' (baseline first). The
/// settings (threshold, confidence, warm-up, the metric's direction) are the first pair's.
/// The experiment returned holds every pair's runs, the one comparison, and the layouts'
/// analysis with [`AutoLayouts`]. Errors of the runner before the first pair are returned;
/// after it, the pairs measured are judged, and the experiment ends `command_failed` with
/// the error as its failure (the exit code of a failed command).
pub fn run<R: PairRunner>(runner: &mut R, budget: AutoBudget, names: (&str, &str)) -> Result<Experiment, R::Error> {
    let mut runs: Vec<PairRun> = Vec::new();
    let mut stats: Vec<PairStats> = Vec::new();
    let mut metric: Option<String> = None;
    let mut spent = 0.0;
    let mut next_look = 0;
    let mut decided: Option<(Comparison, usize)> = None;
    let mut failure: Option<String> = None;
    // When the budget was first seen not to decide, and what it could still tell then.
    let mut said: Option<BudgetReach> = None;
    let stop = loop {
        if stats.len() >= budget.max_layouts {
            break AutoStop::MaxLayouts;
        }
        let plan = allocation(&stats);
        let mut rounds = plan.next_rounds;
        if !stats.is_empty() && plan.round_s > 0.0 {
            let left = budget.max_time_s - spent;
            let rounds_in = |seconds: f64| (seconds - plan.fixed_s()) / plan.round_s;
            // The rounds that fit in what is left of --max-time, if enough do.
            let fit = rounds_in(left).floor();
            if fit < MIN_ROUNDS as f64 {
                break AutoStop::MaxTime;
            }
            // No more than let the pairs up to the next look fit too.
            let to_look = look_at(next_look).saturating_sub(stats.len()).max(1) as f64;
            let look_fit = rounds_in(left / to_look).floor().max(MIN_ROUNDS as f64);
            rounds = rounds.min(fit.min(look_fit).min(u32::MAX as f64) as u32);
        }
        let run = match runner.run_pair(stats.len(), rounds, runs.is_empty()) {
            Ok(run) => run,
            Err(e) if runs.is_empty() => return Err(e),
            Err(e) => {
                failure = Some(format!("layout pair {}: {e}", stats.len() + 1));
                break AutoStop::Stopped;
            }
        };
        spent += run.elapsed_s;
        let m = metric.get_or_insert_with(|| run.experiment.primary_metric.clone()).clone();
        let interrupted = matches!(run.experiment.stop_reason, StopReason::Interrupted | StopReason::CommandFailed);
        let s = pair_stats(&run, &m);
        runs.push(run);
        if s.log_ratio.is_finite() {
            stats.push(s);
        }
        if interrupted {
            break AutoStop::Stopped;
        }
        if stats.len() == look_at(next_look) {
            let settings = &runs[0].experiment.settings;
            let c = judge(&stats, &m, look_level(next_look, settings.confidence), settings);
            next_look += 1;
            if c.verdict.is_decided() {
                decided = Some((c, next_look - 1));
                break AutoStop::Decided;
            }
            // Undecided: what would decide, and whether the budget can pay for it.
            let p = project(&stats, &allocation(&stats), next_look, settings.confidence, settings.threshold);
            let left = budget.max_time_s - spent;
            let beyond = match (p.pairs, p.seconds) {
                (Some(n), Some(t)) => t > left || n > budget.max_layouts,
                _ => true,
            };
            if beyond && said.is_none() {
                let a = allocation(&stats);
                if let Some((budget_layouts, resolves, resolves_90)) =
                    budget_reach(&stats, &a, next_look, settings.confidence, left, budget.max_layouts)
                {
                    let reach =
                        BudgetReach { at_pairs: stats.len(), at_s: spent, budget_layouts, resolves, resolves_90 };
                    runner.note(&projection_note(&stats, &p, &reach, left));
                    said = Some(reach);
                }
            }
        }
    };
    let metric = metric.unwrap_or_else(|| perflab_model::metric::WALL.to_string());
    // Only an error before the first pair leaves no run: returned above.
    let settings = runs[0].experiment.settings.clone();
    let settings = &settings;
    // The last look: the one taken, or the next one taken where the budget ended.
    let (comparison, projection) = match decided {
        Some((c, _)) => (c, None),
        None => {
            let k = if next_look > 0 && stats.len() == look_at(next_look - 1) { next_look - 1 } else { next_look };
            let c = judge(&stats, &metric, look_level(k, settings.confidence), settings);
            let p = project(&stats, &allocation(&stats), k + 1, settings.confidence, settings.threshold);
            let projection = AutoProjection { layouts: p.pairs, seconds: p.seconds, beyond_budget: said };
            (c, (stats.len() >= 2).then_some(projection))
        }
    };
    let mut experiment = combine(runs, &stats, comparison, stop, budget, settings, names, &metric, spent, projection);
    if let Some(failure) = failure {
        experiment.stop_reason = StopReason::CommandFailed;
        experiment.failure = Some(failure);
    }
    Ok(experiment)
}

/// What the budget can still tell from layout, seen after `pairs` with `left_s` seconds and
/// `max_layouts` layouts left to it: the pairs it would measure in all at this pace, and
/// the smallest change their interval (at the look where the budget would end) leaves 1
/// behind at even odds — z·s_d·√(π/3)/√N — and at 90 % odds, (z + z₀.₉₀)·s_d·√(π/3)/√N.
pub fn budget_reach(
    pairs: &[PairStats],
    allocation: &Allocation,
    next_look: usize,
    confidence: f64,
    left_s: f64,
    max_layouts: usize,
) -> Option<(usize, f64, f64)> {
    let d: Vec<f64> = pairs.iter().map(|p| p.log_ratio).filter(|x| x.is_finite()).collect();
    if d.len() < 2 {
        return None;
    }
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let per_pair = allocation.pair_s(allocation.next_rounds);
    let more = if per_pair > 0.0 { (left_s.max(0.0) / per_pair).floor() as usize } else { 0 };
    let total = (d.len() + more).min(max_layouts.max(d.len()));
    // The budget ends at (or takes) the first look at or past its pairs.
    let k = (next_look..).find(|&k| look_at(k) >= total).unwrap_or(next_look);
    let z = perflab_stats::normal_quantile_two_sided(look_level(k, confidence));
    let z90 = perflab_stats::normal_quantile_two_sided(0.8);
    let scale = sd * HL_VARIANCE_FACTOR.sqrt() / (total as f64).sqrt();
    Some((total, (z * scale).exp() - 1.0, ((z + z90) * scale).exp() - 1.0))
}

/// What is said when a look projects past the budget: the spread and the estimate so far,
/// the layouts and seconds that would decide at that estimate, and what the rest of the
/// budget can still tell from layout (the estimate after few pairs is rough: a real
/// change may still be found, and this says how large it must be).
fn projection_note(stats: &[PairStats], p: &Projection, reach: &BudgetReach, left_s: f64) -> String {
    let a = allocation(stats);
    let d: Vec<f64> = stats.iter().map(|s| s.log_ratio).collect();
    let needed = match (p.pairs, p.seconds) {
        (Some(n), Some(t)) => {
            format!("about {} more layouts of each version (≈ {t:.0} s) would decide", n - stats.len())
        }
        _ => format!("no number of layouts up to {MAX_PROJECTED_PAIRS} would decide"),
    };
    format!(
        "after {} pairs of layouts ({:.0} s): layouts vary by ±{:.1} % and the change reads {:+.1} %; at that estimate {needed}, past the budget ({left_s:.0} s left); the budget's {} layouts of each version can tell a change from layout beyond about ±{:.1} % (at 90 % odds beyond ±{:.1} %): the layouts go on",
        stats.len(),
        reach.at_s,
        (a.between / 2.0).sqrt() * 100.0,
        (hodges_lehmann(&d).exp() - 1.0) * 100.0,
        reach.budget_layouts,
        reach.resolves * 100.0,
        reach.resolves_90 * 100.0
    )
}

/// Every pair's runs in one experiment, with the comparison and the layouts' analysis.
#[allow(clippy::too_many_arguments)]
fn combine(
    runs: Vec<PairRun>,
    stats: &[PairStats],
    comparison: Comparison,
    stop: AutoStop,
    budget: AutoBudget,
    settings: &Settings,
    names: (&str, &str),
    metric: &str,
    spent: f64,
    projection: Option<AutoProjection>,
) -> Experiment {
    let allocation = allocation(stats);
    let mut experiment = runs.first().map(|r| r.experiment.clone()).unwrap_or_default();
    experiment.commands.clear();
    experiment.warnings.clear();
    experiment.settings = Settings { max_time_s: budget.max_time_s, fixed_rounds: None, ..settings.clone() };
    let mut versions = [
        LayoutVersion { name: names.0.to_string(), commands: vec![], seeds: vec![] },
        LayoutVersion { name: names.1.to_string(), commands: vec![], seeds: vec![] },
    ];
    let mut pairs = Vec::new();
    let mut seen_warnings = BTreeSet::new();
    let mut round_offset = 0;
    let mut cached = 0;
    for run in &runs {
        let e = &run.experiment;
        let seed_of = |k: usize| -> u64 {
            e.commands
                .get(k)
                .and_then(|c| c.parameters.get(perflab_model::LAYOUT_PARAMETER))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0)
        };
        let s = pair_stats(run, metric);
        pairs.push(LayoutPair {
            baseline_seed: seed_of(0),
            candidate_seed: seed_of(1),
            rounds: s.rounds,
            ratio: s.log_ratio.exp(),
            build_s: run.build_s,
            elapsed_s: run.elapsed_s,
            warmup_rounds: s.warmup_rounds,
        });
        cached += run.cached;
        for (k, command) in e.commands.iter().take(2).enumerate() {
            let mut command = command.clone();
            for r in &mut command.runs {
                r.round += round_offset;
            }
            versions[k].commands.push(experiment.commands.len());
            versions[k].seeds.push(seed_of(k));
            experiment.commands.push(command);
        }
        round_offset += e.commands.iter().flat_map(|c| c.runs.iter().map(|r| r.round + 1)).max().unwrap_or(0);
        // One warning of each kind of text: a busy machine is said once, with the first
        // pair's figures, not once per pair.
        for w in &e.warnings {
            let shape: String = w.message.chars().filter(|c| !c.is_ascii_digit()).collect();
            if seen_warnings.insert(shape) {
                experiment.warnings.push(w.clone());
            }
        }
    }
    experiment.rounds = stats.iter().map(|p| p.rounds).sum();
    experiment.duration_s = spent;
    experiment.primary_metric = metric.to_string();
    experiment.stop_reason = match stop {
        AutoStop::Decided => StopReason::Decided,
        AutoStop::MaxTime => StopReason::MaxTime,
        AutoStop::MaxLayouts => StopReason::MaxLayouts,
        AutoStop::Stopped => runs.last().map_or(StopReason::Interrupted, |r| r.experiment.stop_reason),
    };
    let comparison = Comparison { baseline: names.0.to_string(), candidate: names.1.to_string(), ..comparison };
    let within: f64 = if stats.is_empty() {
        f64::NAN
    } else {
        stats.iter().map(|p| p.within(allocation.round_variance)).sum::<f64>() / stats.len() as f64
    };
    let layout_share = if allocation.between.is_finite() && allocation.between + within > 0.0 {
        allocation.between / (allocation.between + within)
    } else {
        0.0
    };
    let has_interval = comparison.ci_high.is_finite() && comparison.ci_low > 0.0;
    let undecided = comparison.verdict == Verdict::Inconclusive;
    let within_layout_noise = undecided && has_interval && layout_share >= LAYOUT_DOMINATES;
    let reading = match comparison.verdict {
        _ if within_layout_noise => LayoutReading::NotYetToldFromLayout,
        Verdict::Slower | Verdict::Faster => LayoutReading::RealChange,
        Verdict::Equivalent => LayoutReading::NoChange,
        _ => LayoutReading::Undecided,
    };
    let spread = (allocation.between / 2.0).sqrt();
    let layouts = Layouts { versions: versions.to_vec() };
    let analysis = LayoutAnalysis {
        metric: metric.to_string(),
        rounds: experiment.rounds as usize,
        run_sigma: (allocation.round_variance / 2.0).sqrt(),
        spread,
        versions: layouts
            .versions
            .iter()
            .map(|v| VersionLayouts {
                name: v.name.clone(),
                // Pairs measure the two versions' layout variances together: pooled.
                spread,
                layouts: v
                    .commands
                    .iter()
                    .zip(&v.seeds)
                    .map(|(&k, &seed)| LayoutLevel {
                        command: experiment.commands[k].name.clone(),
                        seed,
                        // A layout is measured against its pair only: no level of its own.
                        relative: f64::NAN,
                    })
                    .collect(),
            })
            .collect(),
        contrasts: vec![LayoutContrast {
            baseline: names.0.to_string(),
            candidate: names.1.to_string(),
            df: stats.len().saturating_sub(1) as f64,
            layout_share,
            within_layout_noise,
            reading: Some(reading),
            // The projection at the looks' own levels (`project`).
            layouts_to_decide: within_layout_noise.then(|| projection.and_then(|p| p.layouts)).flatten(),
        }],
        auto: Some(AutoLayouts {
            stop,
            max_time_s: budget.max_time_s,
            max_layouts: budget.max_layouts,
            between_variance: allocation.between,
            round_variance: allocation.round_variance,
            build_s_per_pair: allocation.build_s,
            overhead_s_per_pair: allocation.overhead_s,
            round_s: allocation.round_s,
            next_rounds: allocation.next_rounds,
            ruled_out_beyond: (undecided && has_interval).then_some((comparison.ci_low, comparison.ci_high)),
            projection,
            cached,
            pairs,
        }),
    };
    if let Ok(json) = serde_json::to_string(&layouts) {
        experiment.environment.insert(LAYOUTS_FACT.to_string(), json);
    }
    if spread.is_finite() {
        experiment.environment.insert(SPREAD_FACT.to_string(), format!("{spread:.6}"));
        experiment.environment.insert(SPREAD_METRIC_FACT.to_string(), metric.to_string());
    }
    experiment.comparisons = vec![comparison];
    experiment.layouts = Some(analysis);
    experiment
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layouts_auto_simulated::{LayoutEffect, SimulatedPairs};
    use perflab_model::metric;

    fn budget(max_time_s: f64) -> AutoBudget {
        AutoBudget { max_time_s, max_layouts: DEFAULT_MAX_LAYOUTS }
    }

    #[test]
    fn looks_are_spaced_and_spend_alpha_by_the_union_bound() {
        let looks: Vec<usize> = (0..9).map(look_at).collect();
        assert_eq!(looks, [8, 12, 16, 24, 32, 48, 72, 108, 162]);
        assert!((look_level(0, 0.95) - 0.975).abs() < 1e-12);
        assert!((look_level(2, 0.95) - (1.0 - 0.05 / 12.0)).abs() < 1e-12);
        let spent: f64 = (0..1000).map(|k| 1.0 - look_level(k, 0.95)).sum();
        assert!(spent <= 0.05, "{spent}");
        // 7 pairs can reach the first look's level (2/2⁷ < 2.5 %), 6 cannot.
        assert!(hl_interval(&[1.0; 7], look_level(0, 0.95)).is_some());
        assert!(hl_interval(&[1.0; 6], look_level(0, 0.95)).is_none());
    }

    /// A pair of 10 rounds of 0.1 s, with a warm-up round and no overhead.
    fn pair(d: f64, w: f64, build: f64) -> PairStats {
        PairStats {
            log_ratio: d,
            round_variance: w,
            rounds: 10,
            build_s: build,
            round_s: 0.1,
            overhead_s: 0.0,
            warmup_rounds: 1,
        }
    }

    /// The rounds rule against values computed by hand: B = 2τ², W the round variance.
    #[test]
    fn rounds_per_pair_follow_where_the_variance_is() {
        assert_eq!(allocation(&[]).next_rounds, FIRST_ROUNDS);
        assert_eq!(allocation(&[pair(0.0, 1e-4, 1.0)]).next_rounds, FIRST_ROUNDS);
        // Layouts dominate: d ±5 % apart, W = 10⁻⁴: B = 5·10⁻³ − (π/3)·10⁻⁵; fixed cost
        // 1 + 0.1 s, round 0.1 s: R* = √((π/3)·10⁻⁴·1.1/(B·0.1)) ≈ 0.48 → one round.
        let dominated = allocation(&[pair(0.05, 1e-4, 1.0), pair(-0.05, 1e-4, 1.0)]);
        assert!((dominated.between - (0.005 - std::f64::consts::FRAC_PI_3 * 1e-5)).abs() < 1e-12, "{dominated:?}");
        assert_eq!((dominated.next_rounds, MIN_ROUNDS), (1, 1));
        // The runs' noise dominates (W = 10⁻², d only ±1 % apart) and builds are dear (5 s):
        // B̂ = 2·10⁻⁴ − (π/3)·10⁻³ < 0, taken as var(d)/2 = 10⁻⁴: R* = √((π/3)·10⁻²·5.1/
        // (10⁻⁴·0.1)) ≈ 231 → at most twice the most a pair had (10): 20.
        let noisy = allocation(&[pair(0.01, 1e-2, 5.0), pair(-0.01, 1e-2, 5.0)]);
        assert_eq!((noisy.between, noisy.next_rounds), (0.0, 20), "{noisy:?}");
        let long = PairStats { rounds: 50, ..pair(0.01, 1e-2, 5.0) };
        assert_eq!(allocation(&[long, long]).next_rounds, MAX_ROUNDS, "and never more than the most");
        // Identical pairs (var(d) = 0): nothing says layouts matter: the growth bound.
        assert_eq!(allocation(&[pair(0.01, 1e-2, 5.0), pair(0.01, 1e-2, 5.0)]).next_rounds, 20);
        // In between: B = 2·(0.02)² − (π/3)·10⁻⁴ ≈ 6.95·10⁻⁴, W = 10⁻³, fixed 2.1 s, round 0.1 s:
        // R* = √((π/3)·10⁻³·2.1/(6.95·10⁻⁴·0.1)) ≈ 5.6 → 6.
        let middle = allocation(&[pair(0.02, 1e-3, 2.0), pair(-0.02, 1e-3, 2.0)]);
        assert_eq!(middle.next_rounds, 6, "{middle:?}");
        // The same with builds from the cache (fixed cost one warm-up round): R* ≈ 1.2 → 1.
        assert_eq!(allocation(&[pair(0.02, 1e-3, 0.0), pair(-0.02, 1e-3, 0.0)]).next_rounds, 1);
        // A pair's overhead is paid like its build; without a warm-up round, 1 s of build
        // and 1 s of overhead are a fixed 2 s: R* = √((π/3)·10⁻³·2/(6.95·10⁻⁴·0.1)) ≈ 5.5 → 5.
        let cold = |d: f64| PairStats { overhead_s: 1.0, warmup_rounds: 0, ..pair(d, 1e-3, 1.0) };
        let overhead = allocation(&[cold(0.02), cold(-0.02)]);
        assert_eq!((overhead.fixed_s(), overhead.next_rounds), (2.0, 5), "{overhead:?}");
        // A pair of one round has no W of its own: the pooled W stands for it (W/1).
        let one = PairStats { rounds: 1, round_variance: f64::NAN, ..pair(0.02, 0.0, 2.0) };
        let mixed = allocation(&[pair(0.02, 1e-3, 2.0), pair(-0.02, 1e-3, 2.0), one]);
        let var_d = {
            let d = [0.02, -0.02, 0.02];
            let m = d.iter().sum::<f64>() / 3.0;
            d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0
        };
        let within = (2.0 * std::f64::consts::FRAC_PI_3 * 1e-4 + 1e-3) / 3.0;
        assert_eq!(mixed.round_variance, 1e-3);
        assert!((mixed.between - (var_d - within)).abs() < 1e-15, "{mixed:?}");
    }

    /// The projection against a hand computation: 8 pairs at +3 % ± 4 % (alternating):
    /// s_d = 0.04·√(8/7), HL = 0.03; a look of n pairs at z decides when z·s_d·√(π/3)/√n ≤
    /// 0.03, n ≥ 2.13·z²: look 2 (12 pairs, z 2.64) needs 14.8, look 3 (16, z 2.87) 17.5,
    /// look 4 (24, z 3.02) 19.4: 24 pairs, 16 more at the next pair's cost.
    #[test]
    fn the_projection_is_the_first_look_that_would_decide_at_this_spread() {
        let pairs: Vec<PairStats> =
            (0..8).map(|i| pair(0.03 + if i % 2 == 0 { 0.04 } else { -0.04 }, 1e-4, 1.0)).collect();
        let a = allocation(&pairs);
        let p = project(&pairs, &a, 1, 0.95, 0.01);
        assert_eq!(p.pairs, Some(24), "{p:?}");
        assert!((p.seconds.unwrap() - 16.0 * a.pair_s(a.next_rounds)).abs() < 1e-9, "{p:?}");
        // Already past the looks that would: the next one on.
        assert_eq!(project(&pairs, &a, 4, 0.95, 0.01).pairs, Some(32));
        // An estimate of exactly 0 within a threshold of 0: nothing would decide.
        let flat: Vec<PairStats> = (0..8).map(|i| pair(if i % 2 == 0 { 0.04 } else { -0.04 }, 1e-4, 1.0)).collect();
        assert_eq!(project(&flat, &allocation(&flat), 1, 0.95, 0.0), Projection { pairs: None, seconds: None });
    }

    #[test]
    fn a_real_change_beyond_the_layouts_is_decided_with_more_layouts_and_few_rounds() {
        // Layouts move it ±2.5 %, the change is +3 %, the runs' own noise 1 %.
        let mut runner = SimulatedPairs::new(1, LayoutEffect::Normal(0.025), 1.03, 0.01);
        let e = run(&mut runner, budget(600.0), ("a", "b")).unwrap();
        let c = &e.comparisons[0];
        let auto = e.layouts.as_ref().unwrap().auto.as_ref().unwrap();
        assert_eq!(
            (c.verdict, auto.stop, e.stop_reason),
            (Verdict::Slower, AutoStop::Decided, StopReason::Decided),
            "{c:?}"
        );
        assert!(c.ci_low > 1.0 && c.ci_low <= 1.03 && 1.03 <= c.ci_high, "{c:?}");
        assert_eq!(e.layouts.as_ref().unwrap().contrasts[0].reading, Some(LayoutReading::RealChange));
        // Only the first pair warms up; after the two first pairs, layouts dominate: fewer
        // rounds, down to one or two.
        assert_eq!(&runner.asked[..2], [(FIRST_ROUNDS, true), (FIRST_ROUNDS, false)]);
        assert!(runner.asked[2..].iter().all(|&(r, warm)| r < FIRST_ROUNDS && !warm), "{:?}", runner.asked);
        assert!(runner.asked.last().is_some_and(|&(r, _)| r <= 2), "{:?}", runner.asked);
        assert_eq!(auto.pairs.iter().map(|p| p.warmup_rounds).sum::<u32>(), 1);
        assert_eq!(auto.pairs.len(), look_at(FIRST_LOOKS.iter().position(|&n| n == auto.pairs.len()).unwrap()));
        assert_eq!(e.commands.len(), 2 * auto.pairs.len());
        let spread = e.layouts.as_ref().unwrap().spread;
        assert!((0.01..0.045).contains(&spread), "the pooled τ̂ near 2.5 %: {spread}");
        assert_eq!(e.environment[SPREAD_METRIC_FACT], metric::WALL);
        assert!(auto.projection.is_none(), "decided: nothing projected");
    }

    /// An A/A pair whose budget cannot decide: it is said at the first look that projects
    /// past the budget, the layouts go on to the budget, and the JSON keeps the projection.
    #[test]
    fn the_same_source_runs_to_the_budget_and_says_early_what_would_decide() {
        let mut runner = SimulatedPairs::new(2, LayoutEffect::Normal(0.025), 1.0, 0.01);
        let e = run(&mut runner, budget(40.0), ("a", "b")).unwrap();
        let c = &e.comparisons[0];
        let analysis = e.layouts.as_ref().unwrap();
        let auto = analysis.auto.as_ref().unwrap();
        assert_eq!(
            (c.verdict, auto.stop, e.stop_reason),
            (Verdict::Inconclusive, AutoStop::MaxTime, StopReason::MaxTime)
        );
        assert!(e.duration_s <= 40.0, "{}", e.duration_s);
        let (lo, hi) = auto.ruled_out_beyond.expect("an interval after 8 pairs and more");
        assert!(lo < 1.0 && 1.0 < hi && (lo, hi) == (c.ci_low, c.ci_high), "{lo} {hi}");
        assert_eq!(analysis.contrasts[0].reading, Some(LayoutReading::NotYetToldFromLayout));
        let projection = auto.projection.expect("undecided: a projection");
        let reach = projection.beyond_budget.expect("the budget was seen not to decide");
        assert!(
            reach.at_pairs < auto.pairs.len() && look_at(0) <= reach.at_pairs,
            "said at a look before the end: {reach:?}"
        );
        assert!(reach.at_s < e.duration_s && reach.budget_layouts >= auto.pairs.len(), "{reach:?}");
        // A budget that ends near its projection: the pairs it measured, ± the last few.
        assert!(reach.budget_layouts <= auto.pairs.len() + 8, "{reach:?} for {}", auto.pairs.len());
        assert!(0.0 < reach.resolves && reach.resolves < reach.resolves_90, "{reach:?}");
        assert_eq!(runner.notes.len(), 1, "said once: {:?}", runner.notes);
        let note = &runner.notes[0];
        assert!(note.starts_with(&format!("after {} pairs of layouts (", reach.at_pairs)), "{note}");
        assert!(note.contains(" would decide, past the budget (") && note.ends_with("): the layouts go on"), "{note}");
        let layouts = projection.layouts.expect("a number of layouts");
        assert!(layouts > auto.pairs.len() && projection.seconds.is_some_and(|t| t > 0.0), "{projection:?}");
        assert_eq!(analysis.contrasts[0].layouts_to_decide, Some(layouts));
        // The layouts budget ends it the same way.
        let mut runner = SimulatedPairs::new(2, LayoutEffect::Normal(0.025), 1.0, 0.01);
        let few = run(&mut runner, AutoBudget { max_time_s: 600.0, max_layouts: 10 }, ("a", "b")).unwrap();
        assert_eq!((few.stop_reason, few.layouts.unwrap().auto.unwrap().pairs.len()), (StopReason::MaxLayouts, 10));
    }

    #[test]
    fn without_a_layout_effect_pairs_get_many_rounds_and_no_change_is_said() {
        let mut runner = SimulatedPairs::new(3, LayoutEffect::Normal(0.0), 1.0, 0.01);
        runner.threshold = 0.02;
        let e = run(&mut runner, budget(600.0), ("a", "b")).unwrap();
        assert_eq!(e.comparisons[0].verdict, Verdict::Equivalent, "{:?}", e.comparisons[0]);
        assert_eq!(e.layouts.as_ref().unwrap().contrasts[0].reading, Some(LayoutReading::NoChange));
        assert!(runner.asked[2..].iter().all(|&(r, _)| r > FIRST_ROUNDS), "{:?}", runner.asked);
    }

    #[test]
    fn a_runner_failing_first_is_an_error_and_later_stops_with_the_pairs_measured() {
        struct Failing(SimulatedPairs, usize);
        impl PairRunner for Failing {
            type Error = String;
            fn run_pair(&mut self, index: usize, rounds: u32, warm_up: bool) -> Result<PairRun, String> {
                if index == self.1 {
                    return Err(format!("building a@L{} failed", index + 1));
                }
                self.0.run_pair(index, rounds, warm_up)
            }
        }
        let pairs = || SimulatedPairs::new(4, LayoutEffect::Normal(0.02), 1.0, 0.01);
        let mut first = Failing(pairs(), 0);
        assert_eq!(run(&mut first, budget(60.0), ("a", "b")).unwrap_err(), "building a@L1 failed");
        let mut later = Failing(pairs(), 3);
        let e = run(&mut later, budget(60.0), ("a", "b")).unwrap();
        let auto = e.layouts.as_ref().unwrap().auto.as_ref().unwrap();
        assert_eq!((auto.stop, auto.pairs.len()), (AutoStop::Stopped, 3));
        assert_eq!(
            (e.stop_reason, e.failure.as_deref()),
            (StopReason::CommandFailed, Some("layout pair 4: building a@L4 failed"))
        );
        assert_eq!(e.comparisons[0].verdict, Verdict::Inconclusive, "3 pairs cannot reach any look");
    }
}
