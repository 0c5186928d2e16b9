//! Versions measured in several code layouts (`--layouts N`) on the terminal: how much
//! layouts of each version differ, and per candidate whether its difference survives a
//! relink — "v3 vs master ×1.021 [0.987, 1.056]: within layout noise".

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

/// What the verdict means once layouts are counted, for a comparison across layouts.
pub fn judgement(analysis: &LayoutAnalysis, c: &Comparison) -> String {
    let within = analysis
        .contrasts
        .iter()
        .any(|x| x.candidate == c.candidate && x.baseline == c.baseline && x.within_layout_noise);
    match c.verdict {
        _ if within => "within layout noise".into(),
        Verdict::Slower | Verdict::Faster if c.below_threshold => {
            format!("{} beyond layout noise, but within the threshold", c.verdict.as_str())
        }
        Verdict::Slower | Verdict::Faster => format!("{} beyond layout noise", c.verdict.as_str()),
        Verdict::Equivalent => "equivalent across layouts".into(),
        Verdict::Inconclusive => "inconclusive (more rounds would narrow it)".into(),
        Verdict::NotComparable => "not comparable".into(),
    }
}

/// The lines under a layout experiment's verdicts: each version's layout spread, and per
/// candidate the comparison with what it means. Empty without layouts.
pub fn render(e: &Experiment) -> String {
    let Some(analysis) = &e.layouts else { return String::new() };
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
        out.push_str(&format!(
            "{} vs {} {} {}: {}\n",
            escape(&c.candidate),
            escape(&c.baseline),
            format_ratio(c.ratio),
            c.interval_text(3),
            judgement(analysis, c)
        ));
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

/// The short note for a suite's or bisection's line: `layouts ±1.4 %: within layout noise`.
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
            }],
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
        assert!(text.contains("v3 vs master 1.021× [0.987 – 1.056]: within layout noise"), "{text}");
        assert!(text.contains("layouts account for 93 %") && text.contains("--layouts 6"), "{text}");
        let decided = Comparison::example_slower("master", "v3");
        assert_eq!(note(&analysis(false), &decided), "layouts ±1.3 %: slower beyond layout noise");
        assert_eq!(render(&Experiment::default()), "");
    }
}
