//! Versions measured in several code layouts each (`--layouts N`): every version is
//! compared with the baseline version across its layouts, with an interval that counts
//! how much layouts of the same source differ (`perflab_stats::layouts`), judged by the
//! same rules as any comparison; and how much layout alone moves each version.

use super::verdict;
use crate::plan::Plan;
use perflab_model::units::format_percent;
use perflab_model::{
    Comparison, Experiment, LayoutAnalysis, LayoutContrast, LayoutLevel, LayoutReading, Layouts, Verdict,
    VersionLayouts, Warning, WarningKind,
};
use perflab_stats::layouts::{self as stats, LayoutFit};
use std::collections::{BTreeMap, BTreeSet};

/// A verdict left inconclusive is "within layout noise" when the layouts demonstrably
/// differ (an F test) and account for at least this share of its interval's variance:
/// more rounds would not decide it, and the difference is one relinking alone produces.
pub const LAYOUT_DOMINATES: f64 = 0.5;

/// The environment fact recording the layout σ a layout experiment measured (what a
/// comparison without layouts is later checked against, `store::layout_spreads`).
pub const SPREAD_FACT: &str = "layout_spread";
/// The metric that spread was measured on.
pub const SPREAD_METRIC_FACT: &str = "layout_spread_metric";

/// Layouts per version that would decide `c` at the spread that left it undecided: when
/// layouts dominate, the interval's half-width shrinks as 1/√L, so it leaves 1× behind
/// (a real change) at L·(h/|d|)² or fits within ±threshold (no change) at
/// L·(h/(T − |d|))², d the log ratio and h the half-width now; None past 1,024.
pub(crate) fn layouts_to_decide(c: &Comparison, threshold: f64, layouts: usize) -> Option<usize> {
    let (d, h) = (c.ratio.ln().abs(), (c.ci_high.ln() - c.ci_low.ln()) / 2.0);
    let t = (1.0 + threshold).ln();
    let scale = |gap: f64| (gap > 0.0).then(|| (layouts as f64 * (h / gap).powi(2)).ceil());
    let needed = [scale(d), scale(t - d)].into_iter().flatten().fold(f64::INFINITY, f64::min);
    (needed.is_finite() && needed <= 1024.0).then(|| (needed as usize).max(layouts + 1))
}

/// `values[v][k][r]`: `metric` of layout k of version v in round r, over the rounds in
/// which every layout's command has a value.
fn values(layouts: &Layouts, experiment: &Experiment, metric: &str) -> Vec<Vec<Vec<f64>>> {
    let by_round: Vec<BTreeMap<u32, f64>> = experiment
        .commands
        .iter()
        .map(|c| c.runs.iter().filter_map(|r| Some((r.round, r.metric(metric)?))).collect())
        .collect();
    let involved: Vec<usize> = layouts.versions.iter().flat_map(|v| v.commands.iter().copied()).collect();
    let mut rounds: Option<BTreeSet<u32>> = None;
    for &k in &involved {
        let have: BTreeSet<u32> = by_round.get(k).map(|m| m.keys().copied().collect()).unwrap_or_default();
        rounds = Some(match rounds {
            Some(r) => r.intersection(&have).copied().collect(),
            None => have,
        });
    }
    let rounds = rounds.unwrap_or_default();
    layouts
        .versions
        .iter()
        .map(|v| v.commands.iter().map(|&k| rounds.iter().map(|r| by_round[k][r]).collect()).collect())
        .collect()
}

/// Every candidate version against the baseline version on `metric`, at `level`.
pub fn comparisons(plan: &Plan, experiment: &Experiment, metric: &str, level: f64) -> Vec<Comparison> {
    let Some(layouts) = &plan.layouts else { return Vec::new() };
    let fit = stats::fit(&values(layouts, experiment, metric));
    let base = &layouts.versions[0];
    layouts.versions[1..]
        .iter()
        .enumerate()
        .map(|(i, cand)| {
            let named = |c: Comparison| Comparison { baseline: base.name.clone(), candidate: cand.name.clone(), ..c };
            let Some(fit) = &fit else {
                let reason = format!("no round has a value of {metric} from every layout");
                return named(Comparison {
                    verdict: Verdict::NotComparable,
                    ..verdict::judged(metric, f64::NAN, None, 1.0, 0, level, &plan.settings, vec![reason])
                });
            };
            named(judge(fit, 0, i + 1, metric, level, plan))
        })
        .collect()
}

/// The comparison of version `candidate` with version `baseline` of `fit`.
fn judge(fit: &LayoutFit, baseline: usize, candidate: usize, metric: &str, level: f64, plan: &Plan) -> Comparison {
    let layouts = (fit.locations[baseline].len(), fit.locations[candidate].len());
    let Some(c) = stats::contrast(fit, baseline, candidate, level) else {
        let why = format!("{} + {} layouts leave no degree of freedom for an interval", layouts.0, layouts.1);
        return verdict::judged(metric, f64::NAN, None, 1.0, fit.rounds, level, &plan.settings, vec![why]);
    };
    let ci = c.interval.map(|(lo, hi)| (lo.exp(), hi.exp()));
    let mut flags = vec![format!(
        "across layouts: {} + {} layouts in {} rounds; the interval counts how much layouts differ (Mann–Whitney on the layouts' levels, whatever their distribution)",
        layouts.0, layouts.1, fit.rounds
    )];
    if ci.is_none() {
        flags.push(format!(
            "{} + {} layouts cannot reach {:.1} % confidence whatever they measure: use at least 8 layouts (--layouts 8)",
            layouts.0,
            layouts.1,
            level * 100.0
        ));
    }
    if fit.skipped > 0 {
        flags.push(format!(
            "{} of {} rounds skipped: a layout had no positive {metric} there",
            fit.skipped,
            fit.rounds + fit.skipped
        ));
    }
    verdict::judged(metric, c.difference.exp(), ci, c.p_value, fit.rounds, level, &plan.settings, flags)
}

/// At a look: with layouts, true when every comparison of `latest` left undecided is one
/// whose interval more rounds cannot narrow — the layouts demonstrably differ and account
/// for at least [`ROUNDS_CANNOT_HELP`] of its variance (any number of rounds more would
/// narrow it by at most 5 %). Stopping then spends nothing: the looks' intervals are
/// valid whenever the experiment stops (docs/statistics.md, "Sequential stopping").
pub fn rounds_cannot_decide(plan: &Plan, experiment: &Experiment, latest: &[Comparison]) -> bool {
    let Some(layouts) = &plan.layouts else { return false };
    let undecided: Vec<&Comparison> = latest.iter().filter(|c| !c.verdict.is_decided()).collect();
    if undecided.is_empty() || undecided.iter().any(|c| c.verdict == Verdict::NotComparable) {
        return false;
    }
    undecided.iter().all(|c| {
        let Some(fit) = stats::fit(&values(layouts, experiment, &c.metric)) else { return false };
        let Some(v) = layouts.versions.iter().position(|v| v.name == c.candidate) else { return false };
        // The F test at the look's own level: asked at every look, at 95 % it would find
        // layouts that do not differ often enough to stop (and call a difference within
        // layout noise) in a quarter of experiments with no layout effect at all.
        fit.layouts_differ_at(c.look_confidence)
            && stats::contrast(&fit, 0, v, c.look_confidence).is_some_and(|x| x.layout_share >= ROUNDS_CANNOT_HELP)
    })
}

/// See [`rounds_cannot_decide`]: with the runs' own noise at most 10 % of the variance,
/// no number of rounds can bring the interval below √0.9 ≈ 95 % of its width.
pub const ROUNDS_CANNOT_HELP: f64 = 0.9;

/// The layouts' analysis on the primary metric, from the experiment's comparisons
/// (already judged at the final level); None without layouts or without a usable round.
pub fn analyze(plan: &Plan, experiment: &Experiment, level: f64) -> Option<LayoutAnalysis> {
    let layouts = plan.layouts.as_ref()?;
    let metric = experiment.primary_metric.clone();
    let fit = stats::fit(&values(layouts, experiment, &metric))?;
    let versions = layouts
        .versions
        .iter()
        .zip(&fit.locations)
        .enumerate()
        .map(|(v, (version, locations))| {
            let mean = locations.iter().sum::<f64>() / locations.len() as f64;
            VersionLayouts {
                name: version.name.clone(),
                spread: fit.spread(v),
                layouts: version
                    .commands
                    .iter()
                    .zip(&version.seeds)
                    .zip(locations)
                    .map(|((&k, &seed), m)| LayoutLevel {
                        command: experiment.commands[k].name.clone(),
                        seed,
                        relative: (m - mean).exp(),
                    })
                    .collect(),
            }
        })
        .collect();
    let contrasts = (1..layouts.versions.len())
        .filter_map(|v| {
            let c = stats::contrast(&fit, 0, v, level)?;
            let (baseline, candidate) = (layouts.versions[0].name.clone(), layouts.versions[v].name.clone());
            let compared = experiment
                .comparisons
                .iter()
                .find(|x| x.metric == metric && x.candidate == candidate && x.baseline == baseline);
            let verdict = compared.map(|x| x.verdict);
            // Too few layouts for any interval at this level is a reason of its own
            // (said in the comparison's notes), not the layouts' noise.
            let within_layout_noise = verdict == Some(Verdict::Inconclusive)
                && c.interval.is_some()
                && c.layout_share >= LAYOUT_DOMINATES
                && fit.layouts_differ();
            let reading = match verdict {
                _ if within_layout_noise => LayoutReading::NotYetToldFromLayout,
                Some(Verdict::Slower | Verdict::Faster) => LayoutReading::RealChange,
                Some(Verdict::Equivalent) => LayoutReading::NoChange,
                _ => LayoutReading::Undecided,
            };
            let per_version = layouts.versions[0].commands.len().min(layouts.versions[v].commands.len());
            let layouts_to_decide = compared
                .filter(|_| within_layout_noise)
                .and_then(|x| layouts_to_decide(x, experiment.settings.threshold, per_version));
            Some(LayoutContrast {
                within_layout_noise,
                reading: Some(reading),
                layouts_to_decide,
                baseline,
                candidate,
                df: c.df,
                layout_share: c.layout_share,
            })
        })
        .collect();
    Some(LayoutAnalysis {
        metric,
        rounds: fit.rounds,
        run_sigma: fit.run_sigma,
        spread: fit.pooled_spread(),
        versions,
        contrasts,
        auto: None,
    })
}

/// Facts kept with the experiment (and stored) so that a later comparison of the same
/// program without layouts can say how much layout alone moved it here.
pub fn facts(plan: &Plan, analysis: &LayoutAnalysis) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(json) = plan.layouts.as_ref().and_then(|l| serde_json::to_string(l).ok()) {
        out.push((LAYOUTS_FACT.to_string(), json));
    }
    if analysis.spread.is_finite() {
        out.push((SPREAD_FACT.to_string(), format!("{:.6}", analysis.spread)));
        out.push((SPREAD_METRIC_FACT.to_string(), analysis.metric.clone()));
    }
    out
}

/// Warnings of a layout experiment: too few layouts for a useful interval, and layouts
/// that moved the metric by more than the equivalence margin.
pub fn warnings(plan: &Plan, analysis: &LayoutAnalysis) -> Vec<Warning> {
    let mut out = Vec::new();
    if let Some(layouts) = &plan.layouts {
        let fewest = layouts.versions.iter().map(|v| v.commands.len()).min().unwrap_or(0);
        // Mann–Whitney on L + L layouts: 4 + 4 decide only by complete separation at a
        // single 95 % look (p = 2/70), never at the sequential looks' stricter levels.
        if fewest < 8 {
            out.push(Warning::new(
                WarningKind::Other,
                format!(
                    "only {fewest} layouts per version: the interval across layouts is wide (fewer than 4 + 4 cannot reach 95 %, 4 + 4 only when every layout of one version is faster than every one of the other); 8 layouts give a useful one"
                ),
            ));
        }
    }
    for v in analysis.versions.iter().filter(|v| v.spread > plan.settings.threshold) {
        out.push(Warning::new(
            WarningKind::Noisy,
            format!(
                "layouts of `{}` differ by ±{} % ({}), more than the ±{} % equivalence margin: where the linker put its code moves it that much, so a comparison of one build each could not be trusted at this margin",
                v.name,
                format_percent(v.spread * 100.0),
                analysis.metric,
                format_percent(plan.settings.threshold * 100.0)
            ),
        ));
    }
    out
}

/// The environment fact holding which commands were which version's layouts (JSON of
/// [`Layouts`]): the store keeps no command parameters, and history and the report read
/// the grouping back from it.
pub const LAYOUTS_FACT: &str = "layouts";

/// Two builds of one source differ by layout alone with σ √2·τ (two independent layout
/// draws); a difference within 1.96 of those σ is one layout alone produces 95 % of the time.
const LAYOUT_ONLY_Z: f64 = 1.96;

/// A difference below this many percent between two builds is the size code layout is
/// known to produce (Mytkowicz et al., ASPLOS 2009): said as a doubt when nothing was
/// measured on this machine.
const PUBLISHED_LAYOUT_EFFECT: f64 = 0.03;

/// How far apart (log ratio) two builds of one source can land by layout alone, at 95 %,
/// when layouts vary by σ `spread`: the difference of two layout draws, ±1.96·√2·σ.
pub fn relink_reach(spread: f64) -> f64 {
    LAYOUT_ONLY_Z * std::f64::consts::SQRT_2 * spread
}

/// For a comparison of one build per version (no layouts): for every `slower`/`faster`
/// verdict on the primary metric between two different programs, what is known about
/// layout — a doubt when the difference is within what relinking alone moves the program
/// on this machine, the reach it is beyond otherwise (from `known` spreads of earlier
/// layout experiments, the same program's latest when there is one, else the median of
/// other programs', said so), and when nothing was measured here, the general caveat with
/// how to check (`--layouts`), whatever the size of the difference.
pub fn spread_warnings(experiment: &Experiment, known: &[perflab_model::LayoutSpread]) -> Vec<Warning> {
    if experiment.layouts.is_some() || experiment.settings.mode == perflab_model::Mode::Instructions {
        return Vec::new();
    }
    let program = |name: &str| {
        experiment.commands.iter().find(|c| c.name == name).and_then(|c| c.argv.first()).map(|p| p.as_str())
    };
    let mut out = Vec::new();
    for c in experiment.comparisons.iter().filter(|c| c.metric == experiment.primary_metric) {
        if !matches!(c.verdict, Verdict::Slower | Verdict::Faster) {
            continue;
        }
        let (Some(base), Some(cand)) = (program(&c.baseline), program(&c.candidate)) else { continue };
        if base == cand {
            continue; // one program: layout does not differ between the two
        }
        let kind = perflab_model::LayoutSpread::program_kind(cand);
        let same: Vec<&perflab_model::LayoutSpread> =
            known.iter().filter(|k| k.program == kind && k.metric == c.metric).collect();
        let (spread, whose) = match same.last() {
            Some(k) => (
                k.spread,
                format!(
                    "layouts of `{kind}` vary by ±{} % on this machine (measured {} in `{}`)",
                    format_percent(k.spread * 100.0),
                    k.measured_at,
                    k.benchmark
                ),
            ),
            None => {
                let mut others: Vec<f64> = known.iter().filter(|k| k.metric == c.metric).map(|k| k.spread).collect();
                if others.is_empty() {
                    // Whatever the size: layout alone has moved programs here by 5.8 % and
                    // 21.7 % between builds of one source (an interpreter, docs/evaluation.md).
                    let size = if (c.ratio.ln()).abs() < PUBLISHED_LAYOUT_EFFECT.ln_1p() {
                        "a size code layout alone can produce between two builds (where the linker put functions and loops)"
                    } else {
                        "more than layout usually moves a program (a few %), though it has moved builds of one interpreter by 21.7 % here"
                    };
                    out.push(Warning::new(
                        WarningKind::Other,
                        format!(
                            "`{}` vs `{}` differs by {} %, {size}; no layout spread was measured on this machine yet: give the build command (`--build CMD` with `{{layout}}`: a pilot of two layouts each says how much layout moves it) or decide with `--layouts auto --build CMD` (docs/suites.md, \"Code layouts\")",
                            c.candidate,
                            c.baseline,
                            format_percent((c.ratio - 1.0) * 100.0)
                        ),
                    ));
                    continue;
                }
                others.sort_by(f64::total_cmp);
                let median = others[others.len() / 2];
                (median, format!("layouts of other programs vary by ±{} % on this machine (median of {} measured; none of `{kind}`)", format_percent(median * 100.0), others.len()))
            }
        };
        let limit = relink_reach(spread);
        let difference = format!(
            "`{}` is {} than `{}` by {} %",
            c.candidate,
            c.verdict.as_str(),
            c.baseline,
            format_percent((c.ratio - 1.0).abs() * 100.0)
        );
        let spread = format!(
            "{whose}, so two builds of one source differ by up to ±{} % (95 %)",
            format_percent(limit.exp_m1() * 100.0)
        );
        if c.ratio.ln().abs() <= limit {
            out.push(Warning::new(
                WarningKind::Noisy,
                format!(
                    "{difference}, within what relinking alone moves it: {spread}; decide with `--layouts auto --build CMD`, which adds layouts until it is known (docs/suites.md, \"Code layouts\")"
                ),
            ));
        } else {
            // Every build comparison gets an answer about layout, also when it is clear.
            out.push(Warning::new(
                WarningKind::Other,
                format!("{difference}, beyond what relinking alone moves it: {spread}"),
            ));
        }
    }
    out
}

/// A difference more than this many times the pilot's layout σ is far beyond any layout
/// effect the pilot allows: said in one short line.
const FAR_BEYOND_SPREADS: f64 = 10.0;

/// The one-sided 95 % upper bound of the layout σ from a pilot's layouts: the pooled
/// variance s² of the layouts' levels within versions on Σ(L_v − 1) degrees of freedom,
/// s·√(df / χ²₀.₀₅(df)) — the runs' own noise left in (it only raises the bound). With 2 +
/// 2 layouts (2 df) it is 4.4·s: a pilot bounds the spread only loosely. NaN without a
/// degree of freedom.
pub fn pilot_upper_spread(pilot: &LayoutAnalysis) -> f64 {
    let (mut squares, mut df) = (0.0, 0usize);
    for v in &pilot.versions {
        let logs: Vec<f64> = v.layouts.iter().map(|l| l.relative.ln()).filter(|x| x.is_finite()).collect();
        if logs.len() >= 2 {
            let mean = logs.iter().sum::<f64>() / logs.len() as f64;
            squares += logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
            df += logs.len() - 1;
        }
    }
    stats::sigma_upper_bound(squares, df, 0.95)
}

/// What a pilot of two layouts per version (`pilot`, an experiment with layouts) says of
/// each comparison of `experiment` (one build per version): the spread it measured, and
/// whether the difference is beyond what relinking alone moves the program — said
/// whatever the size, in one short line when the difference is more than
/// [`FAR_BEYOND_SPREADS`] times the spread and beyond its upper bound's reach.
pub fn pilot_warnings(experiment: &Experiment, pilot: &Experiment) -> Vec<Warning> {
    let Some(analysis) = &pilot.layouts else {
        return vec![Warning::new(
            WarningKind::Other,
            "the layout pilot measured nothing usable (no round with a value from every layout): build each version several times with `--layouts auto` to know how much layout moves it",
        )];
    };
    let (spread, upper) = (analysis.spread, pilot_upper_spread(analysis));
    let program = |name: &str| {
        experiment.commands.iter().find(|c| c.name == name).and_then(|c| c.argv.first()).map(|p| p.as_str())
    };
    let head = format!(
        "layout pilot (2 layouts of each version, {} rounds): layouts move `{{kind}}` by ±{} % (at most ±{} % at 95 % from so few)",
        analysis.rounds,
        format_percent(spread * 100.0),
        format_percent(upper * 100.0)
    );
    let mut out = Vec::new();
    for c in experiment.comparisons.iter().filter(|c| c.metric == experiment.primary_metric) {
        let (Some(base), Some(cand)) = (program(&c.baseline), program(&c.candidate)) else { continue };
        if base == cand || !c.ratio.is_finite() {
            continue;
        }
        let head = head.replace("{kind}", &perflab_model::LayoutSpread::program_kind(cand));
        let d = c.ratio.ln().abs();
        let size = format!("{} %", format_percent((c.ratio - 1.0) * 100.0));
        let (reach, reach_upper) = (relink_reach(spread), relink_reach(upper));
        let recipe = "decide with `--layouts auto` and the same --build (layouts added until it is known)";
        let pair = format!("`{}` vs `{}`: {size}", c.candidate, c.baseline);
        let (within, bound) = (format_percent(reach.exp_m1() * 100.0), format_percent(reach_upper.exp_m1() * 100.0));
        let (kind, message) = if d > reach_upper && d > FAR_BEYOND_SPREADS * spread {
            (WarningKind::Other, format!("{head}; {pair}, far beyond that"))
        } else if d > reach_upper {
            (
                WarningKind::Other,
                format!("{head}; {pair}, beyond what relinking alone moves it (two builds of one source differ by up to ±{within} %, ±{bound} % at the bound)"),
            )
        } else if d > reach {
            (
                WarningKind::Noisy,
                format!("{head}; {pair}, beyond the ±{within} % two builds of one source differ by at that spread but not beyond the ±{bound} % its bound allows: {recipe}"),
            )
        } else {
            (
                WarningKind::Noisy,
                format!("{head}; {pair}, within what relinking alone moves it (two builds of one source differ by up to ±{within} %): it may be layout, not the change; {recipe}"),
            )
        };
        out.push(Warning::new(kind, message));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::simulated::{Noise, Simulated};
    use crate::experiment::{run_experiment, Quiet};
    use crate::measure::MeasureOptions;
    use crate::plan::Compared;
    use perflab_model::{metric, CommandSpec, LayoutVersion, Settings};

    /// Versions `a` and `b` in `per` layouts each, commands `a@L1`, …, `b@L1`, ….
    pub(crate) fn plan(per: usize, settings: Settings) -> Plan {
        let mut commands = Vec::new();
        let mut versions = Vec::new();
        for (v, name) in ["a", "b"].iter().enumerate() {
            let seeds: Vec<u64> = (0..per as u64).map(|k| 100 * v as u64 + k + 1).collect();
            versions.push(LayoutVersion {
                name: name.to_string(),
                commands: (v * per..(v + 1) * per).collect(),
                seeds: seeds.clone(),
            });
            for (k, seed) in seeds.iter().enumerate() {
                commands.push(CommandSpec {
                    parameters: Layouts::parameters(name, *seed),
                    ..CommandSpec::bare(&format!("{name}@L{}", k + 1))
                });
            }
        }
        Plan::new(commands, settings, MeasureOptions::default(), Compared::fixed(vec![metric::WALL.into()]))
            .with_layouts(Some(Layouts { versions }))
    }

    /// True times: `base` × exp(layout effect) for the given effects of each version.
    fn times(base: [f64; 2], effects: [&[f64]; 2]) -> Vec<f64> {
        (0..2).flat_map(|v| effects[v].iter().map(move |u| base[v] * u.exp())).collect()
    }

    #[test]
    fn versions_are_compared_across_their_layouts_not_command_by_command() {
        // Layouts of the same source differ by up to ±3 %; b is 10 % slower than a.
        let plan = plan(4, Settings { seed: 3, fixed_rounds: Some(20), ..Settings::default() });
        let effects: [&[f64]; 2] = [&[0.0, 0.03, -0.03, 0.01], &[-0.01, 0.02, 0.0, -0.02]];
        let mut sim = Simulated::new(3, times([0.05, 0.055], effects), Noise::gaussian(0.005));
        let e = run_experiment(&plan, &mut sim, &mut Quiet).unwrap();
        let wall: Vec<&Comparison> = e.comparisons.iter().filter(|c| c.metric == metric::WALL).collect();
        assert_eq!(wall.len(), 1, "one comparison: b against a");
        let c = wall[0];
        assert_eq!((c.baseline.as_str(), c.candidate.as_str(), c.verdict), ("a", "b", Verdict::Slower));
        assert!(c.ci_low <= 1.1 && 1.1 <= c.ci_high, "{c:?}");
        assert!(c.flags[0].starts_with("across layouts: 4 + 4 layouts in 20 rounds"), "{:?}", c.flags);
        let a = e.layouts.as_ref().expect("a layout analysis");
        assert_eq!(a.versions[0].layouts.len(), 4);
        assert_eq!(a.versions[1].layouts[2].seed, 103);
        // The a@L2 binary is 3 % above a's average layout (0.0025 above the mean of effects).
        assert!((a.versions[0].layouts[1].relative - (0.03f64 - 0.0025).exp()).abs() < 0.01, "{a:?}");
        assert!((a.spread - 0.021).abs() < 0.008, "σ of the effects ≈ 2.1 %: {}", a.spread);
        assert_eq!(e.environment[SPREAD_METRIC_FACT], metric::WALL);
    }

    #[test]
    fn an_unchanged_source_whose_layouts_differ_is_within_layout_noise() {
        // The same source in both versions, but one draw of layouts made b's 2 % slower
        // on average: a comparison of one binary each would call it slower.
        let plan = plan(4, Settings { seed: 4, fixed_rounds: Some(30), ..Settings::default() });
        let effects: [&[f64]; 2] = [&[-0.03, 0.01, 0.0, -0.01], &[0.0, 0.03, -0.02, 0.04]];
        let mut sim = Simulated::new(4, times([0.05, 0.05], effects), Noise::gaussian(0.005));
        let e = run_experiment(&plan, &mut sim, &mut Quiet).unwrap();
        let c = e.comparisons.iter().find(|c| c.metric == metric::WALL).unwrap();
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
        let contrast = &e.layouts.as_ref().unwrap().contrasts[0];
        assert!(contrast.within_layout_noise && contrast.layout_share > 0.9, "{contrast:?}");
        // The first layouts alone: a paired comparison of a@L1 and b@L1 says slower.
        let one = verdict::compare(&e.commands[0], &e.commands[4], metric::WALL, 0.95, &plan.settings);
        assert_eq!(one.verdict, Verdict::Slower);
    }

    #[test]
    fn too_few_layouts_for_an_interval_are_said_and_not_called_layout_noise() {
        // 3 + 3 layouts with a real spread: Mann–Whitney cannot reach 95 % (P(U = 0) =
        // 1/20), so there is no interval, whatever the runs say — inconclusive for that
        // reason, not "within layout noise".
        let plan = plan(3, Settings { seed: 5, fixed_rounds: Some(20), ..Settings::default() });
        let effects: [&[f64]; 2] = [&[-0.03, 0.01, 0.0], &[0.0, 0.03, -0.02]];
        let mut sim = Simulated::new(5, times([0.05, 0.05], effects), Noise::gaussian(0.005));
        let e = run_experiment(&plan, &mut sim, &mut Quiet).unwrap();
        let c = e.comparisons.iter().find(|c| c.metric == metric::WALL).unwrap();
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
        assert!(c.flags.iter().any(|f| f.contains("3 + 3 layouts cannot reach 95.0 % confidence")), "{:?}", c.flags);
        assert!(!e.layouts.as_ref().unwrap().contrasts[0].within_layout_noise);
    }

    /// A command of `program` with no runs.
    fn command(name: &str, program: &str) -> perflab_model::CommandResult {
        perflab_model::CommandResult {
            name: name.into(),
            argv: vec![program.into()],
            command_line: program.into(),
            parameters: Default::default(),
            runs: vec![],
            summary: Default::default(),
        }
    }

    #[test]
    fn a_verdict_within_the_measured_layout_spread_is_doubted() {
        let mut e = perflab_model::Experiment::default();
        e.commands = vec![command("master", "/b/master/prog"), command("v3", "/b/v3/prog")];
        let mut c = Comparison::example_slower("master", "v3");
        (c.ratio, c.ci_low, c.ci_high) = (1.011, 1.003, 1.019);
        e.comparisons = vec![c];
        let spread = |program: &str, spread: f64| perflab_model::LayoutSpread {
            benchmark: "loop".into(),
            program: program.into(),
            metric: metric::WALL.into(),
            spread,
            measured_at: "2026-11-26T03:00:00Z".into(),
        };
        // prog's layouts vary by ±0.9 %: two builds differ by up to ±2.5 %; 1.1 % is within.
        let w = spread_warnings(&e, &[spread("other", 0.001), spread("prog", 0.009)]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].message.contains("`v3` is slower than `master` by 1.1 %, within what relinking alone moves it: layouts of `prog` vary by ±0.90 %"), "{}", w[0].message);
        assert!(w[0].message.contains("up to ±2.5 % (95 %)") && w[0].message.contains("--layouts auto --build CMD"));
        // Measured tighter than that: no doubt, but the answer about layout all the same.
        let clear = spread_warnings(&e, &[spread("prog", 0.002)]);
        assert!(
            clear[0].message.contains("beyond what relinking alone moves it: layouts of `prog` vary by ±0.20 %"),
            "{clear:?}"
        );
        // Another program's only: its median, said so.
        let other = spread_warnings(&e, &[spread("cc1", 0.01)]);
        assert!(other[0].message.contains("layouts of other programs vary by ±1.0 %"), "{other:?}");
        // Nothing measured: a doubt about a small difference, with the way to check.
        let none = spread_warnings(&e, &[]);
        assert!(none[0].message.contains("no layout spread was measured on this machine yet"), "{none:?}");
        // … and about a large one too: every build comparison gets its answer.
        e.comparisons[0].ratio = 1.19;
        let large = spread_warnings(&e, &[]);
        assert!(
            large[0].message.contains("differs by 19.0 %, more than layout usually moves")
                && large[0].message.contains("`--build CMD` with `{layout}`: a pilot")
                && large[0].message.contains("--layouts auto"),
            "{large:?}"
        );
        // One program on both sides (an interpreter): layout does not enter.
        e.commands[1].argv[0] = "/b/master/prog".into();
        assert!(spread_warnings(&e, &[spread("prog", 0.009)]).is_empty());
    }

    /// The pilot's line against figures computed by hand. Two versions of two layouts,
    /// levels ±1 % around each version's mean: s² = 4·(0.01)²/2 = 2·10⁻⁴ on 2 df, the
    /// upper bound √(4·10⁻⁴/χ²₀.₀₅(2) = 0.1026) = 6.24 %; a spread of 1.2 % reaches
    /// ±(e^(1.96·√2·1.2 %) − 1) = ±3.4 % between two builds, the bound ±18.9 %.
    #[test]
    fn the_pilot_says_the_spread_and_where_the_difference_lies() {
        let mut e = perflab_model::Experiment::default();
        e.commands = vec![command("master", "/b/m-11/prog"), command("v3", "/b/v3-21/prog")];
        let mut c = Comparison::example_slower("master", "v3");
        c.ratio = 1.25;
        e.comparisons = vec![c];
        let level = |l: &str, r: f64| LayoutLevel { command: l.into(), seed: 1, relative: r };
        let version = |name: &str| VersionLayouts {
            name: name.into(),
            spread: 0.012,
            layouts: vec![level("a", 0.01f64.exp()), level("b", (-0.01f64).exp())],
        };
        let pilot = perflab_model::Experiment {
            layouts: Some(LayoutAnalysis {
                metric: metric::WALL.into(),
                rounds: 10,
                run_sigma: 0.01,
                spread: 0.012,
                versions: vec![version("master"), version("v3")],
                contrasts: vec![],
                auto: None,
            }),
            ..Default::default()
        };
        assert!((pilot_upper_spread(pilot.layouts.as_ref().unwrap()) - 0.0624).abs() < 0.0005);
        let far = pilot_warnings(&e, &pilot);
        assert_eq!(far.len(), 1);
        assert_eq!(
            far[0].message,
            "layout pilot (2 layouts of each version, 10 rounds): layouts move `prog` by ±1.2 % (at most ±6.2 % at 95 % from so few); `v3` vs `master`: 25.0 %, far beyond that"
        );
        // 2 %: within what relinking moves it at the estimate (±3.3 %): a doubt, with the recipe.
        e.comparisons[0].ratio = 1.02;
        let within = &pilot_warnings(&e, &pilot)[0];
        assert_eq!(within.kind, WarningKind::Noisy);
        assert!(
            within.message.contains(
                "2.0 %, within what relinking alone moves it (two builds of one source differ by up to ±3.4 %)"
            ) && within.message.contains("--layouts auto"),
            "{}",
            within.message
        );
        // 5 %: beyond the estimate's reach, not beyond the bound's (±18.9 %).
        e.comparisons[0].ratio = 1.05;
        let between = &pilot_warnings(&e, &pilot)[0];
        assert!(
            between.message.contains(
                "beyond the ±3.4 % two builds of one source differ by at that spread but not beyond the ±18.9 %"
            ),
            "{}",
            between.message
        );
        // A pilot without a usable round says so.
        assert!(pilot_warnings(&e, &perflab_model::Experiment::default())[0]
            .message
            .contains("measured nothing usable"));
    }

    #[test]
    fn the_schedule_counts_versions_not_layouts() {
        let plan = plan(8, Settings::default());
        assert_eq!((plan.commands.len(), plan.candidates()), (16, 1));
    }
}
