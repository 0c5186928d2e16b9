//! Builds as a factorial design (`-L cc gcc,clang -L disp switch,threaded`): each
//! build's value, the main effect of every factor — a paired contrast per round, the
//! mean log value of level B minus level A across the other factors' levels — and, on
//! request, every pairwise ratio; intervals Bonferroni-corrected over their family.
//!
//! The interleaved rounds run every build once per round, so round r gives one
//! contrast d_r = mean over the other factors' levels c of ln(x\[B,c,r\] / x\[A,c,r\]);
//! the d_r are then treated like any paired log ratio (Hodges–Lehmann estimate, exact
//! signed-rank interval). Drift common to a round cancels, as in the pairwise verdicts.

use super::verdict;
use crate::plan::Plan;
use perflab_model::{Comparison, Design, DesignAnalysis, DesignCell, Experiment};
use perflab_stats::{signed_rank, summary};
use std::collections::BTreeMap;

/// The design's analysis on the primary metric at the final look's level (None without
/// a design or when its commands did not all run).
pub(crate) fn analyze(plan: &Plan, experiment: &Experiment, look_level: f64) -> Option<DesignAnalysis> {
    let design = plan.design.as_ref()?;
    if design.cells.len() != experiment.commands.len() {
        return None;
    }
    let metric = experiment.primary_metric.clone();
    let by_round: Vec<BTreeMap<u32, f64>> = experiment
        .commands
        .iter()
        .map(|c| c.runs.iter().filter_map(|r| Some((r.round, r.metric(&metric)?))).collect())
        .collect();
    let cells = experiment
        .commands
        .iter()
        .zip(&design.cells)
        .zip(&by_round)
        .map(|((c, levels), values)| DesignCell {
            command: c.name.clone(),
            levels: levels.iter().zip(&design.factors).map(|(&l, f)| f.levels[l].clone()).collect(),
            median: if values.is_empty() {
                f64::NAN
            } else {
                summary::median(&values.values().copied().collect::<Vec<_>>())
            },
        })
        .collect();
    let contrasts: usize = design.factors.iter().map(|f| f.levels.len() - 1).sum();
    let level = 1.0 - (1.0 - look_level) / contrasts.max(1) as f64;
    let mut effects = Vec::new();
    for (f, factor) in design.factors.iter().enumerate() {
        for to in 1..factor.levels.len() {
            let d = main_effect_contrasts(design, &by_round, f, 0, to);
            let mut c = contrast_comparison(&d, level, plan, &metric);
            c.baseline = format!("{}={}", factor.name, factor.levels[0]);
            c.candidate = format!("{}={}", factor.name, factor.levels[to]);
            let others: Vec<String> = design
                .factors
                .iter()
                .enumerate()
                .filter(|(g, _)| *g != f)
                .map(|(_, g)| format!("{}={}", g.name, g.levels.join(",")))
                .collect();
            c.flags.push(format!("main effect: mean over {}", others.join(" × ")));
            effects.push(c);
        }
    }
    let mut pairwise = Vec::new();
    if design.pairwise {
        let k = experiment.commands.len();
        let pairs = (k * (k - 1) / 2).max(1) as f64;
        let pair_level = 1.0 - (1.0 - look_level) / pairs;
        for i in 0..k {
            for j in i + 1..k {
                pairwise.push(verdict::compare(
                    &experiment.commands[i],
                    &experiment.commands[j],
                    &metric,
                    pair_level,
                    &plan.settings,
                ));
            }
        }
    }
    Some(DesignAnalysis { metric, factors: design.factors.clone(), cells, effects, pairwise })
}

/// d_r for every round in which each build needed ran: the mean over the other factors'
/// level combinations of ln(value at level `to`) − ln(value at level `from`) of factor `f`.
pub(crate) fn main_effect_contrasts(
    design: &Design,
    by_round: &[BTreeMap<u32, f64>],
    f: usize,
    from: usize,
    to: usize,
) -> Vec<f64> {
    // Pairs of commands that differ only in factor f: (at `from`, at `to`).
    let pairs: Vec<(usize, usize)> = design
        .cells
        .iter()
        .enumerate()
        .filter(|(_, cell)| cell[f] == from)
        .filter_map(|(a, cell)| {
            let b = design.cells.iter().position(|other| {
                other[f] == to && other.iter().zip(cell).enumerate().all(|(g, (x, y))| g == f || x == y)
            })?;
            Some((a, b))
        })
        .collect();
    if pairs.is_empty() {
        return Vec::new();
    }
    let rounds = by_round[pairs[0].0].keys();
    rounds
        .filter_map(|round| {
            let mut sum = 0.0;
            for &(a, b) in &pairs {
                let (x, y) = (*by_round[a].get(round)?, *by_round[b].get(round)?);
                if !(x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite()) {
                    return None;
                }
                sum += y.ln() - x.ln();
            }
            Some(sum / pairs.len() as f64)
        })
        .collect()
}

/// The ratio exp(HL(d)), its interval at `level` and verdict, as a comparison (names
/// filled in by the caller).
fn contrast_comparison(d: &[f64], level: f64, plan: &Plan, metric: &str) -> Comparison {
    let settings = &plan.settings;
    let exact = !d.is_empty() && d.iter().all(|x| *x == d[0]);
    let (ratio, ci, p_value) = if exact {
        let r = d[0].exp();
        (r, Some((r, r)), if d[0] == 0.0 { 1.0 } else { 0.0 })
    } else {
        let interval = signed_rank::hl_interval(d, level).map(|i| (i.low.exp(), i.high.exp()));
        (signed_rank::hodges_lehmann(d).exp(), interval, signed_rank::wilcoxon_p(d).0)
    };
    let flags = if exact { vec!["exact: every round gave the same contrast".into()] } else { Vec::new() };
    verdict::judged(metric, ratio, ci, p_value, d.len(), level, settings, flags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::simulated::{Noise, Simulated};
    use crate::experiment::{run_experiment, Quiet};
    use crate::measure::MeasureOptions;
    use crate::plan::Compared;
    use perflab_model::Verdict;
    use perflab_model::{metric, CommandSpec, Factor, Settings};

    /// cc ∈ {gcc, clang} × disp ∈ {switch, threaded}, first factor slowest.
    fn design(pairwise: bool) -> Design {
        Design {
            factors: vec![
                Factor { name: "cc".into(), levels: vec!["gcc".into(), "clang".into()] },
                Factor { name: "disp".into(), levels: vec!["switch".into(), "threaded".into()] },
            ],
            cells: vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]],
            pairwise,
        }
    }

    fn plan(rounds: u32, seed: u64, pairwise: bool) -> Plan {
        let command = CommandSpec::bare;
        Plan::new(
            ["gcc-switch", "gcc-threaded", "clang-switch", "clang-threaded"].map(command).to_vec(),
            Settings { seed, fixed_rounds: Some(rounds), warmup_rounds: 0, ..Settings::default() },
            MeasureOptions::default(),
            Compared::fixed(vec![metric::WALL.into()]),
        )
        .with_design(Some(design(pairwise)))
    }

    /// True times with an interaction: clang is 10 % faster with `switch` and 2 % with
    /// `threaded`; threaded is 20 % faster under gcc, 12.9 % under clang.
    const TIMES: [f64; 4] = [0.100, 0.080, 0.090, 0.0784];

    /// The true main effect: the geometric mean over the other factor's levels.
    fn true_effect(a: [usize; 2], b: [usize; 2]) -> f64 {
        (((TIMES[b[0]] / TIMES[a[0]]).ln() + (TIMES[b[1]] / TIMES[a[1]]).ln()) / 2.0).exp()
    }

    #[test]
    fn contrasts_average_over_the_other_factor_per_round() {
        let d = design(false);
        let rounds: Vec<BTreeMap<u32, f64>> =
            TIMES.iter().map(|t| [(0, *t), (1, t * 2.0), (2, *t)].into_iter().collect()).collect();
        let mut missing = rounds.clone();
        missing[3].remove(&2);
        let cc = main_effect_contrasts(&d, &rounds, 0, 0, 1);
        let want = true_effect([0, 1], [2, 3]).ln();
        assert_eq!(cc.len(), 3);
        assert!(cc.iter().all(|x| (x - want).abs() < 1e-12), "{cc:?} vs {want}");
        assert_eq!(main_effect_contrasts(&d, &missing, 0, 0, 1).len(), 2, "a round missing a build is dropped");
        let disp = main_effect_contrasts(&d, &rounds, 1, 0, 1);
        assert!((disp[0] - true_effect([0, 2], [1, 3]).ln()).abs() < 1e-12);
    }

    #[test]
    fn a_noiseless_design_gives_exact_effects_and_every_pair() {
        let plan = plan(6, 1, true);
        let mut sim = Simulated::new(1, TIMES.to_vec(), Noise::none());
        let e = run_experiment(&plan, &mut sim, &mut Quiet).unwrap();
        let a = e.design.as_ref().expect("a design analysis");
        assert_eq!(a.cells.len(), 4);
        assert_eq!(a.cells[3].levels, ["clang", "threaded"]);
        assert_eq!(a.effects.len(), 2);
        assert_eq!((a.effects[0].baseline.as_str(), a.effects[0].candidate.as_str()), ("cc=gcc", "cc=clang"));
        assert!((a.effects[0].ratio - true_effect([0, 1], [2, 3])).abs() < 1e-9);
        assert!((a.effects[1].ratio - true_effect([0, 2], [1, 3])).abs() < 1e-9);
        assert_eq!(a.effects[1].verdict, Verdict::Faster);
        assert_eq!(a.pairwise.len(), 6, "every pair of four builds");
        let clang_threaded_vs_gcc_threaded =
            a.pairwise.iter().find(|c| c.baseline == "gcc-threaded" && c.candidate == "clang-threaded").unwrap();
        assert!((clang_threaded_vs_gcc_threaded.ratio - 0.98).abs() < 1e-9);
    }

    /// Coverage of the main-effect interval on the simulated machine (heavy tails,
    /// drift, stalls): each contrast's interval is at 1 − 0.05/2, so both together cover
    /// in at least 95 % of experiments when the interval is right. 300 experiments of
    /// 12 rounds (examples/design_sim.rs runs more, at several sizes).
    #[test]
    fn main_effect_intervals_cover_the_true_effect_on_the_simulated_machine() {
        let noise = Noise::machine_like(0.03);
        let truth = [true_effect([0, 1], [2, 3]), true_effect([0, 2], [1, 3])];
        let experiments = 300;
        let mut both = 0;
        for seed in 0..experiments {
            let plan = plan(12, seed, false);
            let mut sim = Simulated::new(seed, TIMES.to_vec(), noise.clone());
            let e = run_experiment(&plan, &mut sim, &mut Quiet).unwrap();
            let effects = &e.design.unwrap().effects;
            if effects.iter().zip(truth).all(|(c, t)| c.ci_low <= t && t <= c.ci_high) {
                both += 1;
            }
        }
        let coverage = both as f64 / experiments as f64;
        // 95 % nominal; the binomial sd at 300 is 1.3 %, so 92 % is > 2 sd below.
        assert!(coverage >= 0.92, "simultaneous coverage {coverage}");
    }
}
