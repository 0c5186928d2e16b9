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
//! one round's log ratio, R the pair's rounds. A pair costs F + R·c (F: building it and
//! its warm-up round; c: one round), so the variance of the mean after a time T is
//! (B + W/R)(F + R·c)/T, least at R* = √(W·F ÷ (B·c)) — few rounds when layouts dominate
//! (more layouts, fewer rounds each), many when they do not or builds are dear. B and W
//! are estimated from the pairs so far (B = var(d) − mean W/R, W from each pair's rounds
//! by their scaled MAD); the first two pairs get [`FIRST_ROUNDS`]. Guarding against a B̂
//! too small from few pairs (the costly mistake: too many rounds on too few layouts,
//! where too few rounds only cost some efficiency): B is taken as at least half of
//! var(d), a pair gets at most twice the most rounds any pair had, and no more than let
//! the pairs up to the next look fit in what is left of `--max-time` (at least
//! [`MIN_ROUNDS`]). A pair that would pass `--max-time` gets the rounds that fit, if at
//! least [`MIN_ROUNDS`] do.

use crate::analysis::layouts::{layouts_to_decide, LAYOUTS_FACT, LAYOUT_DOMINATES, SPREAD_FACT, SPREAD_METRIC_FACT};
use crate::analysis::verdict;
use perflab_model::{
    AutoLayouts, AutoStop, Comparison, Experiment, LayoutAnalysis, LayoutContrast, LayoutLevel, LayoutPair,
    LayoutReading, LayoutVersion, Layouts, Settings, StopReason, Verdict, VersionLayouts,
};
use perflab_stats::signed_rank::{hl_interval, hodges_lehmann, wilcoxon_p};
use perflab_stats::summary::mad_scaled;
use std::collections::{BTreeMap, BTreeSet};

/// Rounds of each of the first two pairs (nothing is known yet of B and W).
pub const FIRST_ROUNDS: u32 = 10;
/// The fewest rounds a pair gets: a scaled MAD of fewer rounds says little about W.
pub const MIN_ROUNDS: u32 = 5;
/// The most rounds a pair gets (layouts without any measurable effect): beyond this the
/// next pair's layouts are worth more than its rounds whatever B is.
pub const MAX_ROUNDS: u32 = 60;
/// The default layouts budget, per version (`--max-layouts`).
pub const DEFAULT_MAX_LAYOUTS: usize = 64;
/// Pairs measured when the interval is looked at (then every 1.5× more).
const FIRST_LOOKS: [usize; 6] = [8, 12, 16, 24, 32, 48];
/// Variance of the Hodges–Lehmann location of R normal values: (π/3)·σ²/R (its
/// efficiency against the mean is 3/π).
const HL_VARIANCE_FACTOR: f64 = std::f64::consts::FRAC_PI_3;

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
    /// Layout `index` (from 0) of both versions, measured in `rounds` rounds.
    fn run_pair(&mut self, index: usize, rounds: u32) -> Result<PairRun, Self::Error>;
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
}

impl PairStats {
    /// The variance of its log ratio that its own runs explain: (π/3)·W/R.
    fn within(&self) -> f64 {
        HL_VARIANCE_FACTOR * self.round_variance / self.rounds.max(1) as f64
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
    /// Mean seconds of one round.
    pub round_s: f64,
    /// The rounds the next pair gets.
    pub next_rounds: u32,
}

/// B, W, the costs and the rounds of the next pair from the pairs so far (see the module's
/// doc); `warmup` rounds are paid once per pair.
pub fn allocation(pairs: &[PairStats], warmup: u32) -> Allocation {
    let n = pairs.len() as f64;
    let mean = |f: &dyn Fn(&PairStats) -> f64| pairs.iter().map(f).sum::<f64>() / n;
    if pairs.is_empty() {
        return Allocation {
            between: f64::NAN,
            round_variance: f64::NAN,
            build_s: 0.0,
            round_s: 0.0,
            next_rounds: FIRST_ROUNDS,
        };
    }
    let round_variance = mean(&|p| p.round_variance);
    let build_s = mean(&|p| p.build_s);
    let round_s = mean(&|p| p.round_s);
    let var_d = if pairs.len() >= 2 {
        let d_mean = mean(&|p| p.log_ratio);
        pairs.iter().map(|p| (p.log_ratio - d_mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        f64::NAN
    };
    let between = (var_d - mean(&|p| p.within())).max(0.0);
    // What the rounds are chosen on: B̂, but at least half of var(d) (see the module's doc).
    let between_for_rounds = between.max(var_d / 2.0);
    let growth = 2 * pairs.iter().map(|p| p.rounds).max().unwrap_or(FIRST_ROUNDS).max(MIN_ROUNDS);
    let next_rounds = if pairs.len() < 2 {
        FIRST_ROUNDS
    } else if between_for_rounds <= 0.0 || round_s <= 0.0 {
        MAX_ROUNDS.min(growth)
    } else {
        let fixed = build_s + warmup as f64 * round_s;
        let best = (HL_VARIANCE_FACTOR * round_variance * fixed / (between_for_rounds * round_s)).sqrt();
        if best.is_finite() {
            (best.round() as u32).clamp(MIN_ROUNDS, MAX_ROUNDS.min(growth))
        } else {
            MAX_ROUNDS.min(growth)
        }
    };
    Allocation { between, round_variance, build_s, round_s, next_rounds }
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
    let measuring = (run.elapsed_s - run.build_s).max(0.0);
    let all_rounds = run.experiment.rounds + run.experiment.settings.warmup_rounds;
    PairStats {
        log_ratio: if logs.is_empty() { f64::NAN } else { hodges_lehmann(&logs) },
        round_variance: if logs.len() >= 2 { mad_scaled(&logs).powi(2) } else { f64::NAN },
        rounds,
        build_s: run.build_s,
        round_s: if all_rounds > 0 { measuring / all_rounds as f64 } else { 0.0 },
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
    let stop = loop {
        if stats.len() >= budget.max_layouts {
            break AutoStop::MaxLayouts;
        }
        let warmup = runs.first().map_or(0, |r| r.experiment.settings.warmup_rounds);
        let plan = allocation(&stats, warmup);
        let mut rounds = plan.next_rounds;
        if !stats.is_empty() && plan.round_s > 0.0 {
            let left = budget.max_time_s - spent;
            let rounds_in = |seconds: f64| (seconds - plan.build_s) / plan.round_s - warmup as f64;
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
        let run = match runner.run_pair(stats.len(), rounds) {
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
        }
    };
    let metric = metric.unwrap_or_else(|| perflab_model::metric::WALL.to_string());
    // Only an error before the first pair leaves no run: returned above.
    let settings = runs[0].experiment.settings.clone();
    let settings = &settings;
    // The last look: the one taken, or the next one taken where the budget ended.
    let comparison = match decided {
        Some((c, _)) => c,
        None => {
            let k = if next_look > 0 && stats.len() == look_at(next_look - 1) { next_look - 1 } else { next_look };
            judge(&stats, &metric, look_level(k, settings.confidence), settings)
        }
    };
    let mut experiment = combine(runs, &stats, comparison, stop, budget, settings, names, &metric, spent);
    if let Some(failure) = failure {
        experiment.stop_reason = StopReason::CommandFailed;
        experiment.failure = Some(failure);
    }
    Ok(experiment)
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
) -> Experiment {
    let allocation = allocation(stats, settings.warmup_rounds);
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
    let within: f64 =
        if stats.is_empty() { f64::NAN } else { stats.iter().map(|p| p.within()).sum::<f64>() / stats.len() as f64 };
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
            layouts_to_decide: within_layout_noise
                .then(|| layouts_to_decide(&comparison, settings.threshold, stats.len()))
                .flatten(),
        }],
        auto: Some(AutoLayouts {
            stop,
            max_time_s: budget.max_time_s,
            max_layouts: budget.max_layouts,
            between_variance: allocation.between,
            round_variance: allocation.round_variance,
            build_s_per_pair: allocation.build_s,
            round_s: allocation.round_s,
            next_rounds: allocation.next_rounds,
            ruled_out_beyond: (undecided && has_interval).then_some((comparison.ci_low, comparison.ci_high)),
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
    use crate::executor::simulated::{Noise, Simulated};
    use crate::experiment::{run_experiment, Quiet};
    use crate::measure::MeasureOptions;
    use crate::plan::{Compared, Plan};
    use perflab_model::{metric, CommandSpec};
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    /// Pairs on the simulated machine: every layout's true time is the version's ×
    /// exp(u), u ~ N(0, τ²) drawn per layout from `seed`; builds cost `build_s`.
    struct SimulatedPairs {
        rng: StdRng,
        tau: f64,
        ratio: f64,
        noise: Noise,
        build_s: f64,
        threshold: f64,
        asked: Vec<u32>,
    }

    impl SimulatedPairs {
        fn new(seed: u64, tau: f64, ratio: f64, sigma: f64) -> SimulatedPairs {
            SimulatedPairs {
                rng: StdRng::seed_from_u64(seed),
                tau,
                ratio,
                noise: Noise::gaussian(sigma),
                build_s: 0.5,
                threshold: Settings::default().threshold,
                asked: vec![],
            }
        }
    }

    impl PairRunner for SimulatedPairs {
        type Error = String;
        fn run_pair(&mut self, index: usize, rounds: u32) -> Result<PairRun, String> {
            self.asked.push(rounds);
            let unit = Normal::new(0.0, 1.0).unwrap();
            let (ua, ub) = (self.tau * unit.sample(&mut self.rng), self.tau * unit.sample(&mut self.rng));
            let commands = ["a", "b"]
                .iter()
                .enumerate()
                .map(|(v, name)| CommandSpec {
                    parameters: perflab_model::Layouts::parameters(name, (100 * v + index + 1) as u64),
                    ..CommandSpec::bare(&format!("{name}@L{}", index + 1))
                })
                .collect();
            let settings = Settings {
                seed: index as u64 + 1,
                fixed_rounds: Some(rounds),
                threshold: self.threshold,
                ..Settings::default()
            };
            let plan =
                Plan::new(commands, settings, MeasureOptions::default(), Compared::fixed(vec![metric::WALL.into()]));
            let times = vec![0.05 * ua.exp(), 0.05 * self.ratio * ub.exp()];
            let mut sim = Simulated::new(index as u64 + 7, times, self.noise.clone());
            let experiment = run_experiment(&plan, &mut sim, &mut Quiet).map_err(|e| e.to_string())?;
            let measured: f64 = experiment.commands.iter().flat_map(|c| c.runs.iter().map(|r| r.wall_s)).sum();
            Ok(PairRun { experiment, build_s: self.build_s, cached: 0, elapsed_s: self.build_s + measured })
        }
    }

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

    /// The rounds rule against values computed by hand: B = 2τ², W the round variance.
    #[test]
    fn rounds_per_pair_follow_where_the_variance_is() {
        let pair = |d: f64, w: f64, build: f64| PairStats {
            log_ratio: d,
            round_variance: w,
            rounds: 10,
            build_s: build,
            round_s: 0.1,
        };
        assert_eq!(allocation(&[], 1).next_rounds, FIRST_ROUNDS);
        assert_eq!(allocation(&[pair(0.0, 1e-4, 1.0)], 1).next_rounds, FIRST_ROUNDS);
        // Layouts dominate: d ±5 % apart, W = 10⁻⁴: B = 5·10⁻³ − (π/3)·10⁻⁵; fixed cost
        // 1 + 0.1 s, round 0.1 s: R* = √((π/3)·10⁻⁴·1.1/(B·0.1)) ≈ 0.48 → the floor.
        let dominated = allocation(&[pair(0.05, 1e-4, 1.0), pair(-0.05, 1e-4, 1.0)], 1);
        assert!((dominated.between - (0.005 - std::f64::consts::FRAC_PI_3 * 1e-5)).abs() < 1e-12, "{dominated:?}");
        assert_eq!(dominated.next_rounds, MIN_ROUNDS);
        // The runs' noise dominates (W = 10⁻², d only ±1 % apart) and builds are dear (5 s):
        // B̂ = 2·10⁻⁴ − (π/3)·10⁻³ < 0, taken as var(d)/2 = 10⁻⁴: R* = √((π/3)·10⁻²·5.1/
        // (10⁻⁴·0.1)) ≈ 231 → at most twice the most a pair had (10): 20.
        let noisy = allocation(&[pair(0.01, 1e-2, 5.0), pair(-0.01, 1e-2, 5.0)], 1);
        assert_eq!((noisy.between, noisy.next_rounds), (0.0, 20), "{noisy:?}");
        let long = PairStats { rounds: 50, ..pair(0.01, 1e-2, 5.0) };
        assert_eq!(allocation(&[long, long], 1).next_rounds, MAX_ROUNDS, "and never more than the most");
        // Identical pairs (var(d) = 0): nothing says layouts matter: the growth bound.
        assert_eq!(allocation(&[pair(0.01, 1e-2, 5.0), pair(0.01, 1e-2, 5.0)], 1).next_rounds, 20);
        // In between: B = 2·(0.02)² − (π/3)·10⁻⁴ ≈ 6.95·10⁻⁴, W = 10⁻³, fixed 2.1 s, round 0.1 s:
        // R* = √((π/3)·10⁻³·2.1/(6.95·10⁻⁴·0.1)) ≈ 5.6 → 6.
        let middle = allocation(&[pair(0.02, 1e-3, 2.0), pair(-0.02, 1e-3, 2.0)], 1);
        assert_eq!(middle.next_rounds, 6, "{middle:?}");
        // The same with builds from the cache (fixed cost one warm-up round): the floor.
        assert_eq!(allocation(&[pair(0.02, 1e-3, 0.0), pair(-0.02, 1e-3, 0.0)], 1).next_rounds, MIN_ROUNDS);
    }

    #[test]
    fn a_real_change_beyond_the_layouts_is_decided_with_more_layouts_and_few_rounds() {
        // Layouts move it ±2.5 %, the change is +3 %, the runs' own noise 1 %.
        let mut runner = SimulatedPairs::new(1, 0.025, 1.03, 0.01);
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
        // After the two first pairs, layouts dominate: fewer rounds, down to the floor.
        assert_eq!(&runner.asked[..2], [FIRST_ROUNDS, FIRST_ROUNDS]);
        assert!(runner.asked[2..].iter().all(|&r| r < FIRST_ROUNDS), "{:?}", runner.asked);
        assert_eq!(runner.asked.last(), Some(&MIN_ROUNDS), "{:?}", runner.asked);
        assert_eq!(auto.pairs.len(), look_at(FIRST_LOOKS.iter().position(|&n| n == auto.pairs.len()).unwrap()));
        assert_eq!(e.commands.len(), 2 * auto.pairs.len());
        let spread = e.layouts.as_ref().unwrap().spread;
        assert!((0.01..0.045).contains(&spread), "the pooled τ̂ near 2.5 %: {spread}");
        assert_eq!(e.environment[SPREAD_METRIC_FACT], metric::WALL);
    }

    #[test]
    fn the_same_source_runs_to_the_budget_and_says_what_is_ruled_out() {
        let mut runner = SimulatedPairs::new(2, 0.025, 1.0, 0.01);
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
        assert!(analysis.contrasts[0].layouts_to_decide.is_some_and(|n| n > auto.pairs.len()));
        // The layouts budget ends it the same way.
        let mut runner = SimulatedPairs::new(2, 0.025, 1.0, 0.01);
        let few = run(&mut runner, AutoBudget { max_time_s: 600.0, max_layouts: 10 }, ("a", "b")).unwrap();
        assert_eq!((few.stop_reason, few.layouts.unwrap().auto.unwrap().pairs.len()), (StopReason::MaxLayouts, 10));
    }

    #[test]
    fn without_a_layout_effect_pairs_get_many_rounds_and_no_change_is_said() {
        let mut runner = SimulatedPairs::new(3, 0.0, 1.0, 0.01);
        runner.threshold = 0.02;
        let e = run(&mut runner, budget(600.0), ("a", "b")).unwrap();
        assert_eq!(e.comparisons[0].verdict, Verdict::Equivalent, "{:?}", e.comparisons[0]);
        assert_eq!(e.layouts.as_ref().unwrap().contrasts[0].reading, Some(LayoutReading::NoChange));
        assert!(runner.asked[2..].iter().all(|&r| r > FIRST_ROUNDS), "{:?}", runner.asked);
    }

    #[test]
    fn a_runner_failing_first_is_an_error_and_later_stops_with_the_pairs_measured() {
        struct Failing(SimulatedPairs, usize);
        impl PairRunner for Failing {
            type Error = String;
            fn run_pair(&mut self, index: usize, rounds: u32) -> Result<PairRun, String> {
                if index == self.1 {
                    return Err(format!("building a@L{} failed", index + 1));
                }
                self.0.run_pair(index, rounds)
            }
        }
        let mut first = Failing(SimulatedPairs::new(4, 0.02, 1.0, 0.01), 0);
        assert_eq!(run(&mut first, budget(60.0), ("a", "b")).unwrap_err(), "building a@L1 failed");
        let mut later = Failing(SimulatedPairs::new(4, 0.02, 1.0, 0.01), 3);
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
