//! Versions measured in several code layouts (`--layouts N`) on the terminal: how much
//! layouts of each version differ, and per candidate whether its difference survives a
//! relink — "v3 vs master ×1.021 [0.987, 1.056]: cannot yet be told from layout: between
//! −1.3 % and +5.6 % (layouts included)", "a real change of +2.1 … +4.0 %, beyond what
//! layouts move", "no change beyond ±0.8 % (layouts included)".

use super::color::dim;
use super::escape;
use perflab_model::units::{format_percent, format_ratio};
use perflab_model::{Comparison, Experiment, LayoutAnalysis, Verdict};

/// `±1.4 %`: a layout σ (log scale) as a percentage.
pub fn spread_text(sigma: f64) -> String {
    if sigma.is_finite() {
        format!("±{} %", format_percent(sigma * 100.0))
    } else {
        "±? %".into()
    }
}

/// What the verdict means once layouts are counted, for a comparison across layouts:
/// a real change, no change, or not yet told from layout — never one phrase for two.
pub fn judgement(analysis: &LayoutAnalysis, c: &Comparison) -> String {
    let contrast = analysis.contrasts.iter().find(|x| x.candidate == c.candidate && x.baseline == c.baseline);
    let change = |r: f64| format!("{:+.1} %", (r - 1.0) * 100.0);
    let within = contrast.is_some_and(|x| x.within_layout_noise);
    match c.verdict {
        _ if within => {
            let recipe = |n: usize| match &analysis.auto {
                Some(auto) => match auto.projection.and_then(|p| p.seconds) {
                    // The whole run again at this pace: what it took, and the rest.
                    Some(more) => {
                        let spent: f64 = auto.pairs.iter().map(|p| p.elapsed_s).sum();
                        format!(
                            "≈ {more:.0} s more at this pace: --layouts auto --max-layouts {} --max-time {:.0}s",
                            n.max(auto.max_layouts),
                            (spent + more).ceil()
                        )
                    }
                    None => format!("--layouts auto --max-layouts {n}, and the --max-time they take"),
                },
                None => format!("--layouts {n}"),
            };
            let more = contrast
                .and_then(|x| x.layouts_to_decide)
                .map(|n| format!("; about {n} layouts per version would decide at this spread ({})", recipe(n)))
                .unwrap_or_default();
            format!(
                "cannot yet be told from layout: between {} and {} (layouts included){more}",
                change(c.ci_low),
                change(c.ci_high)
            )
        }
        Verdict::Slower | Verdict::Faster if c.below_threshold => format!(
            "a real change of {} … {}, beyond what layouts move, but within the threshold",
            change(c.ci_low),
            change(c.ci_high)
        ),
        Verdict::Slower | Verdict::Faster => {
            format!("a real change of {} … {}, beyond what layouts move", change(c.ci_low), change(c.ci_high))
        }
        Verdict::Equivalent => {
            let bound = (c.ci_high - 1.0).abs().max((1.0 - c.ci_low).abs()) * 100.0;
            format!("no change beyond ±{bound:.1} % (layouts included)")
        }
        Verdict::Inconclusive => "inconclusive (more rounds would narrow it)".into(),
        Verdict::NotComparable => "not comparable".into(),
    }
}

/// The lines under a layout experiment's verdicts: each version's layout spread, and per
/// candidate the comparison with what it means. Empty without layouts.
pub fn render(e: &Experiment) -> String {
    let Some(analysis) = &e.layouts else { return String::new() };
    if analysis.auto.is_some() {
        return render_auto(e, analysis);
    }
    let mut out = String::new();
    for v in &analysis.versions {
        let levels: Vec<f64> = v.layouts.iter().map(|l| l.relative).collect();
        let (lo, hi) = levels.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        out.push_str(&format!(
            "layouts of {} vary by {} ({} layouts from {} to {} of their mean {}, {} rounds)\n",
            escape(&v.name),
            spread_text(v.spread),
            v.layouts.len(),
            format_ratio(lo),
            format_ratio(hi),
            analysis.metric,
            analysis.rounds
        ));
    }
    for c in e.comparisons.iter().filter(|c| c.metric == analysis.metric) {
        out.push_str(&comparison_line(analysis, c));
        if let Some(x) = analysis.contrasts.iter().find(|x| x.candidate == c.candidate && x.within_layout_noise) {
            out.push_str(&dim(&format!(
                "  layouts account for {:.0} % of that interval's variance: more rounds cannot narrow it, more layouts can (--layouts {})\n",
                x.layout_share * 100.0,
                2 * analysis.versions.iter().map(|v| v.layouts.len()).max().unwrap_or(4)
            )));
        }
    }
    out
}

/// One comparison and what it means with the layouts counted.
fn comparison_line(analysis: &LayoutAnalysis, c: &Comparison) -> String {
    format!(
        "{} vs {} {} {}: {}\n",
        escape(&c.candidate),
        escape(&c.baseline),
        format_ratio(c.ratio),
        c.interval_text(3),
        judgement(analysis, c)
    )
}

/// `--layouts auto`: the spread the pairs measured, the comparison with what it means,
/// how the layouts were spent and, when the budget ended first, what is ruled out.
fn render_auto(e: &Experiment, analysis: &LayoutAnalysis) -> String {
    let Some(auto) = &analysis.auto else { return String::new() };
    let mut out = String::new();
    let pairs = auto.pairs.len();
    let rounds: Vec<u32> = auto.pairs.iter().map(|p| p.rounds).collect();
    let (fewest, most) = (rounds.iter().min().copied().unwrap_or(0), rounds.iter().max().copied().unwrap_or(0));
    let each = if fewest == most { format!("{most}") } else { format!("{fewest}–{most}") };
    out.push_str(&format!(
        "layouts vary by {} (both versions pooled: {pairs} pairs of layouts, each pair in its own {each} rounds, {} rounds in all)\n",
        spread_text(analysis.spread),
        analysis.rounds
    ));
    for c in e.comparisons.iter().filter(|c| c.metric == analysis.metric) {
        out.push_str(&comparison_line(analysis, c));
    }
    let share = analysis.contrasts.first().map_or(0.0, |x| x.layout_share);
    let cache = if auto.cached > 0 { format!(", {} from the layout cache", auto.cached) } else { String::new() };
    out.push_str(&dim(&format!(
        "  layouts: {pairs} of each version in {:.0} s{cache} (budget {:.0} s, {} layouts); layouts are {:.0} % of a pair's variance, so a pair got {} round{} at the end (more layouts, fewer rounds, when layouts dominate)\n",
        e.duration_s,
        auto.max_time_s,
        auto.max_layouts,
        share * 100.0,
        auto.next_rounds,
        if auto.next_rounds == 1 { "" } else { "s" }
    )));
    let decided = e.comparisons.iter().any(|c| c.metric == analysis.metric && c.verdict.is_decided());
    if decided {
        out.push_str(&format!("decided after {pairs} layouts of each version ({:.0} s)\n", e.duration_s));
    } else {
        let ruled_out = match auto.ruled_out_beyond {
            Some((lo, hi)) => format!(
                "ruled out: a change beyond {:+.1} % … {:+.1} % (layouts included)",
                (lo - 1.0) * 100.0,
                (hi - 1.0) * 100.0
            ),
            None => format!("nothing ruled out yet: {pairs} pairs of layouts cannot reach the level of a look (8 pairs are the first)"),
        };
        out.push_str(&format!(
            "{} after {pairs} layouts of each version, undecided: {ruled_out}\n",
            auto.stop.as_str()
        ));
        if let Some(reach) = auto.projection.and_then(|p| p.beyond_budget) {
            out.push_str(&dim(&format!(
                "  known after {} pairs ({:.0} s): the budget's {} layouts of each version could tell a change from layout beyond about ±{:.1} % (at 90 % odds ±{:.1} %)\n",
                reach.at_pairs,
                reach.at_s,
                reach.budget_layouts,
                reach.resolves * 100.0,
                reach.resolves_90 * 100.0
            )));
        }
    }
    out
}

/// The short note for a suite's or bisection's line: `layouts ±1.4 %: no change beyond ±0.8 % (layouts included)`.
pub fn note(analysis: &LayoutAnalysis, c: &Comparison) -> String {
    format!("layouts {}: {}", spread_text(analysis.spread), judgement(analysis, c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_model::{LayoutContrast, LayoutLevel, VersionLayouts};

    fn analysis(within: bool) -> LayoutAnalysis {
        let version = |name: &str, spread: f64| VersionLayouts {
            name: name.into(),
            spread,
            layouts: [0.98, 1.0, 1.02]
                .iter()
                .enumerate()
                .map(|(i, r)| LayoutLevel { command: format!("{name}@L{}", i + 1), seed: i as u64 + 1, relative: *r })
                .collect(),
        };
        LayoutAnalysis {
            metric: "wall_s".into(),
            rounds: 30,
            run_sigma: 0.01,
            spread: 0.013,
            versions: vec![version("master", 0.012), version("v3", 0.014)],
            contrasts: vec![LayoutContrast {
                baseline: "master".into(),
                candidate: "v3".into(),
                df: 4.0,
                layout_share: 0.93,
                within_layout_noise: within,
                reading: None,
                layouts_to_decide: within.then_some(12),
            }],
            auto: None,
        }
    }

    #[test]
    fn a_difference_layouts_explain_is_named_as_such() {
        crate::color::init("never");
        let mut c = Comparison::example_slower("master", "v3");
        (c.ratio, c.ci_low, c.ci_high, c.verdict) = (1.021, 0.987, 1.056, Verdict::Inconclusive);
        let e = Experiment { layouts: Some(analysis(true)), comparisons: vec![c.clone()], ..Experiment::default() };
        let text = render(&e);
        assert!(
            text.contains("layouts of v3 vary by ±1.4 % (3 layouts from 0.98× to 1.02× of their mean wall_s"),
            "{text}"
        );
        assert!(
            text.contains(
                "v3 vs master 1.021× [0.987 – 1.056]: cannot yet be told from layout: between -1.3 % and +5.6 % \
                 (layouts included); about 12 layouts per version would decide at this spread (--layouts 12)"
            ),
            "{text}"
        );
        assert!(text.contains("layouts account for 93 %") && text.contains("--layouts 6"), "{text}");
        let decided = Comparison::example_slower("master", "v3");
        let (low, high) = ((decided.ci_low - 1.0) * 100.0, (decided.ci_high - 1.0) * 100.0);
        assert_eq!(
            note(&analysis(false), &decided),
            format!("layouts ±1.3 %: a real change of {low:+.1} % … {high:+.1} %, beyond what layouts move")
        );
        let mut same = Comparison::example_slower("master", "v3");
        (same.ratio, same.ci_low, same.ci_high, same.verdict) = (1.001, 0.995, 1.004, Verdict::Equivalent);
        assert_eq!(note(&analysis(false), &same), "layouts ±1.3 %: no change beyond ±0.5 % (layouts included)");
        assert_eq!(render(&Experiment::default()), "");
    }

    /// `--layouts auto`: the pooled spread, the comparison's reading, how the layouts were
    /// spent and, undecided at the budget, what is ruled out.
    #[test]
    fn layouts_auto_says_what_was_decided_or_ruled_out() {
        crate::color::init("never");
        let pair = |rounds: u32| perflab_model::LayoutPair {
            baseline_seed: 1,
            candidate_seed: 2,
            rounds,
            ratio: 1.01,
            build_s: 0.2,
            elapsed_s: 1.0,
            warmup_rounds: 0,
        };
        let mut a = analysis(true);
        a.rounds = 62;
        a.spread = 0.024;
        a.contrasts[0].layouts_to_decide = Some(40);
        a.auto = Some(perflab_model::AutoLayouts {
            stop: perflab_model::AutoStop::MaxTime,
            max_time_s: 120.0,
            max_layouts: 64,
            between_variance: 0.001,
            round_variance: 0.0001,
            build_s_per_pair: 0.4,
            overhead_s_per_pair: 0.05,
            round_s: 0.1,
            next_rounds: 5,
            ruled_out_beyond: Some((0.981, 1.062)),
            projection: Some(perflab_model::AutoProjection {
                layouts: Some(40),
                seconds: Some(41.6),
                beyond_budget: Some(perflab_model::BudgetReach {
                    at_pairs: 8,
                    at_s: 7.2,
                    budget_layouts: 11,
                    resolves: 0.034,
                    resolves_90: 0.046,
                }),
            }),
            cached: 0,
            pairs: [10, 10, 6, 5, 5, 5, 5, 5, 5, 6].map(pair).to_vec(),
        });
        let mut c = Comparison::example_slower("master", "v3");
        (c.ratio, c.ci_low, c.ci_high, c.verdict) = (1.021, 0.981, 1.062, Verdict::Inconclusive);
        let e =
            Experiment { layouts: Some(a.clone()), comparisons: vec![c], duration_s: 118.0, ..Experiment::default() };
        let text = render(&e);
        assert!(text.contains("layouts vary by ±2.4 % (both versions pooled: 10 pairs of layouts, each pair in its own 5–10 rounds, 62 rounds in all)"), "{text}");
        assert!(text.contains("v3 vs master 1.021× [0.981 – 1.062]: cannot yet be told from layout: between -1.9 % and +6.2 % (layouts included); about 40 layouts per version would decide at this spread (≈ 42 s more at this pace: --layouts auto --max-layouts 64 --max-time 52s)"), "{text}");
        assert!(text.contains("layouts: 10 of each version in 118 s (budget 120 s, 64 layouts)"), "{text}");
        assert!(text.contains("--max-time reached after 10 layouts of each version, undecided: ruled out: a change beyond -1.9 % … +6.2 % (layouts included)"), "{text}");
        assert!(text.contains("  known after 8 pairs (7 s): the budget's 11 layouts of each version could tell a change from layout beyond about ±3.4 % (at 90 % odds ±4.6 %)"), "{text}");
        // Decided: said so, nothing about what is ruled out.
        let mut decided = a;
        decided.contrasts[0].within_layout_noise = false;
        if let Some(auto) = decided.auto.as_mut() {
            (auto.stop, auto.ruled_out_beyond, auto.projection) = (perflab_model::AutoStop::Decided, None, None);
        }
        let e = Experiment {
            layouts: Some(decided),
            comparisons: vec![Comparison::example_slower("master", "v3")],
            duration_s: 41.0,
            ..Experiment::default()
        };
        let text = render(&e);
        assert!(
            text.contains("decided after 10 layouts of each version (41 s)") && !text.contains("ruled out"),
            "{text}"
        );
        assert!(text.contains("a real change of"), "{text}");
    }
}
