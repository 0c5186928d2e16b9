//! Per benchmark found slower, the functions that explain it and the differential
//! flame graph.

use super::*;

/// Per benchmark found slower: the functions that explain it, then the differential
/// flame graph. A regression is explained by its runs' samples (`sampled`) or, in older
/// stores, by one profile of each build (`one_profile`).
pub(super) struct ExplainedView<'a> {
    pub(super) benchmark: &'a str,
    pub(super) short: String,
    pub(super) candidate: &'a str,
    pub(super) baseline: &'a str,
    pub(super) ratio: String,
    pub(super) ci_low: String,
    pub(super) ci_high: String,
    pub(super) metric: &'a str,
    pub(super) warnings: &'a [String],
    pub(super) sampled: Option<SampledView<'a>>,
    pub(super) one_profile: Vec<ExplainedFunction<'a>>,
    /// The differential flame graph: self-contained SVG whose own names are escaped and
    /// whose script finds its own elements, so it is safe inline.
    pub(super) flame_graph: Option<String>,
}

/// The per-function explanation of a regression from every run's samples.
pub(super) struct SampledView<'a> {
    /// What the rows are: the method, the rounds and the intervals' level.
    pub(super) method: String,
    pub(super) story: String,
    pub(super) unit: &'a str,
    pub(super) rows: Vec<SampledFunction<'a>>,
    /// Rows not shown (they are in the stored explanation and `--json`).
    pub(super) more: usize,
}

pub(super) struct SampledFunction<'a> {
    pub(super) name: &'a str,
    pub(super) short: String,
    pub(super) object: &'a str,
    pub(super) baseline: f64,
    pub(super) candidate: f64,
    /// NaN when the baseline never ran the function (sorted last).
    pub(super) ratio: f64,
    pub(super) ratio_text: String,
    /// The ratio's interval, or "unbounded".
    pub(super) ratio_interval: String,
    /// The CSS class of the verdict (`slower`, `faster`, …; `small` beyond the threshold
    /// but too small to matter).
    pub(super) verdict_class: &'static str,
    pub(super) verdict: String,
    pub(super) contribution: f64,
    pub(super) contribution_text: String,
    pub(super) contribution_interval: String,
}

pub(super) struct ExplainedFunction<'a> {
    pub(super) name: &'a str,
    pub(super) short: String,
    pub(super) object: &'a str,
    pub(super) old_s: f64,
    pub(super) new_s: f64,
    pub(super) change_s: f64,
    pub(super) contribution: f64,
}

/// A value per run with 3 significant digits (at least 0 decimals).
pub(super) fn per_run(x: f64) -> String {
    let digits = if x == 0.0 { 0 } else { (2 - x.abs().log10().floor() as i32).clamp(0, 6) as usize };
    format!("{x:.digits$}")
}

pub(super) fn signed_per_run(x: f64) -> String {
    if x >= 0.0 {
        format!("+{}", per_run(x))
    } else {
        per_run(x)
    }
}

pub(super) fn sampled_function(f: &perflab_model::FunctionChange) -> SampledFunction<'_> {
    let verdict_class = match f.verdict {
        _ if f.below_threshold => "small",
        Verdict::Slower => "slower",
        Verdict::Faster => "faster",
        Verdict::Equivalent => "equivalent",
        _ => "inconclusive",
    };
    let verdict = if f.below_threshold {
        format!("{} (too small to matter)", f.verdict.as_str())
    } else {
        f.verdict.as_str().to_string()
    };
    let c = &f.contribution;
    let interval = |low: Option<f64>, high: Option<f64>, each: fn(f64) -> String| match (low, high) {
        (Some(lo), Some(hi)) if lo == hi => "exact".to_string(),
        (Some(lo), Some(hi)) => format!("[{}, {}]", each(lo), each(hi)),
        _ => "unbounded".to_string(),
    };
    SampledFunction {
        name: &f.name,
        short: truncate(&f.name, NAME_CHARS).into_owned(),
        object: &f.object,
        baseline: f.baseline_per_run,
        candidate: f.candidate_per_run,
        ratio: f.ratio.unwrap_or(f64::NAN),
        ratio_text: f.ratio.map_or_else(|| "new".to_string(), |r| format!("×{r:.3}")),
        ratio_interval: match f.ratio {
            Some(_) => interval(f.ci_low, f.ci_high, |r| format!("{r:.3}")),
            None => String::new(),
        },
        verdict_class,
        verdict,
        contribution: c.estimate,
        contribution_text: signed_per_run(c.estimate),
        contribution_interval: interval(c.low, c.high, signed_per_run),
    }
}

impl<'a> ExplainedView<'a> {
    pub(super) fn of(x: &'a Explained) -> ExplainedView<'a> {
        let c = &x.comparison;
        let view = |candidate: &'a str, baseline: &'a str, warnings: &'a [String]| ExplainedView {
            benchmark: &x.benchmark,
            short: truncate(&x.benchmark, NAME_CHARS).into_owned(),
            candidate,
            baseline,
            ratio: format_ratio(c.ratio),
            ci_low: format_ratio(c.ci_low),
            ci_high: format_ratio(c.ci_high),
            metric: &c.metric,
            warnings,
            sampled: None,
            one_profile: Vec::new(),
            flame_graph: None,
        };
        match &x.why {
            Why::Sampled(e) => ExplainedView {
                sampled: Some(SampledView {
                    method: format!(
                        "{} samples of every measured run of both builds in {} rounds ({:.0} and {:.0} per run); \
                         each function's interval at {:.2} % ({:.0} % for the {} tested together)",
                        e.event,
                        e.rounds,
                        e.samples_per_run.0,
                        e.samples_per_run.1,
                        e.function_level * 100.0,
                        e.confidence * 100.0,
                        e.tested
                    ),
                    story: crate::explain::story(c, e),
                    unit: &e.unit,
                    rows: e.functions.iter().take(PROFILE_ROWS).map(sampled_function).collect(),
                    more: e.functions.len().saturating_sub(PROFILE_ROWS),
                }),
                flame_graph: crate::explain::flame_graph(e),
                ..view(&e.candidate, &e.baseline, &e.warnings)
            },
            Why::OneProfile(change) => ExplainedView {
                one_profile: change
                    .functions
                    .iter()
                    .take(PROFILE_ROWS)
                    .map(|f| ExplainedFunction {
                        name: &f.name,
                        short: truncate(&f.name, NAME_CHARS).into_owned(),
                        object: &f.object,
                        old_s: f.old_s,
                        new_s: f.new_s,
                        change_s: f.change_s,
                        contribution: f.contribution,
                    })
                    .collect(),
                flame_graph: change.flame_graph.clone(),
                ..view(&change.candidate, &change.baseline, &change.warnings)
            },
        }
    }
}
