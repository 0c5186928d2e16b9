//! The terminal rendering: per-command summaries, the comparison table, one verdict
//! line per candidate, and warnings.

use super::color::{bold, dim, green, red, yellow};
use crate::analysis::verdict::sentence;
use crate::model::{metric, Comparison, Experiment, StopReason, Verdict};
use crate::stats::summary;
use crate::units::{format_level, format_p, format_seconds, format_value};
use comfy_table::{presets, CellAlignment, Table};

pub use super::escape;

fn stop_text(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Decided => "every comparison decided",
        StopReason::FixedRounds => "fixed number of rounds",
        StopReason::MaxRounds => "--max-rounds reached",
        StopReason::MaxTime => "--max-time reached",
        StopReason::PlannedRounds => "the rounds planned for --max-time were run",
        StopReason::Interrupted => "interrupted",
        StopReason::CommandFailed => "a command failed",
    }
}

fn paint_verdict(c: &Comparison, text: &str) -> String {
    match c.verdict {
        Verdict::Slower if !c.below_threshold => red(text),
        Verdict::Faster if !c.below_threshold => green(text),
        Verdict::Inconclusive => yellow(text),
        _ => text.to_string(),
    }
}

fn new_table() -> Table {
    let mut table = Table::new();
    table.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    table.remove_style(comfy_table::TableComponent::HorizontalLines);
    table.remove_style(comfy_table::TableComponent::MiddleIntersections);
    table
}

/// The whole human-readable report.
pub fn render(e: &Experiment) -> String {
    let primary = e.primary_metric.as_str();
    let mut out = String::new();
    out.push_str(&format!(
        "{} {} rounds{} in {:.1} s — stopped: {} {}\n",
        bold("perflab"),
        e.rounds,
        if e.settings.warmup_rounds > 0 { format!(" (+{} warm-up)", e.settings.warmup_rounds) } else { String::new() },
        e.duration_s,
        stop_text(e.stop_reason),
        dim(&format!("(seed {})", e.settings.seed)),
    ));

    let mut table = new_table();
    let show_wall = primary == metric::WALL || e.commands.iter().any(|c| c.summary.contains_key(metric::WALL));
    let mut header = vec!["command".to_string()];
    if show_wall {
        header.extend(
            ["wall median ± MAD", "mean ± σ", "min … max", "cpu", "runq wait", "max RSS", "outliers"].map(String::from),
        );
    }
    if primary != metric::WALL {
        header.push(format!("{primary} (median)"));
    }
    table.set_header(header);
    for (i, c) in e.commands.iter().enumerate() {
        let name = escape(&c.name);
        let mut row = vec![if i == 0 { format!("{name} (baseline)") } else { name }];
        if show_wall {
            match c.summary.get(metric::WALL) {
                Some(w) => {
                    row.push(format!("{} ± {}", format_seconds(w.median), format_seconds(w.mad)));
                    row.push(format!("{} ± {}", format_seconds(w.mean), format_seconds(w.stddev)));
                    row.push(format!("{} … {}", format_seconds(w.min), format_seconds(w.max)));
                    row.push(c.summary.get(metric::CPU).map_or("-".into(), |s| format_seconds(s.median)));
                    row.push(c.summary.get(metric::RUNQ_WAIT).map_or("-".into(), |s| format_seconds(s.median)));
                    row.push(
                        c.summary.get(metric::MAX_RSS).map_or("-".into(), |s| format_value(metric::MAX_RSS, s.median)),
                    );
                    row.push(w.outliers.to_string());
                }
                None => row.extend(std::iter::repeat_n("-".to_string(), 7)),
            }
        }
        if primary != metric::WALL {
            row.push(c.summary.get(primary).map_or("-".into(), |s| format_value(primary, s.median)));
        }
        table.add_row(row);
    }
    out.push_str(&table.to_string());
    out.push('\n');
    out.push_str(&iteration_profile(e));

    if !e.comparisons.is_empty() {
        let mut table = new_table();
        let level = e.comparisons.first().map_or("95".into(), |c| format_level(c.confidence));
        table.set_header(vec![
            "candidate vs baseline".to_string(),
            "metric".into(),
            "ratio".into(),
            format!("{level} % CI"),
            "p".into(),
            "verdict".into(),
        ]);
        for c in &e.comparisons {
            let ci = if c.ci_high.is_finite() {
                format!("[{:.4}, {:.4}]", c.ci_low, c.ci_high)
            } else if c.n == 1 {
                "none: one run".into()
            } else {
                "too few rounds".into()
            };
            let mut verdict = c.verdict.as_str().to_string();
            if c.below_threshold {
                verdict.push_str(" (< threshold)");
            }
            table.add_row(vec![
                format!("{} vs {}", escape(&c.candidate), escape(&c.baseline)),
                c.metric.clone(),
                format!("{:.4}", c.ratio),
                ci,
                format_p(c.p_value),
                paint_verdict(c, &verdict),
            ]);
        }
        for col in 2..5 {
            if let Some(column) = table.column_mut(col) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        out.push_str(&table.to_string());
        out.push('\n');
        for c in e.comparisons.iter().filter(|c| c.metric == primary) {
            out.push_str(&bold(&paint_verdict(c, &escape(&sentence(c, e.settings.threshold, e.rounds)))));
            out.push('\n');
            for flag in c.flags.iter().filter(|f| !f.starts_with("exact")) {
                out.push_str(&format!("  note: {flag}\n"));
            }
        }
        for c in e.comparisons.iter().filter(|c| c.metric == primary) {
            if let Some(explanation) = &c.explanation {
                out.push('\n');
                out.push_str(&super::explain::table(explanation, EXPLAIN_ROWS));
                out.push_str(&bold(&super::explain::story(c, explanation)));
                out.push('\n');
                for w in &explanation.warnings {
                    out.push_str(&yellow(&format!("warning: {}\n", escape(w))));
                }
            }
        }
    }
    let unsupported = unsupported_counters(e);
    if !unsupported.is_empty() {
        out.push_str(&dim("not supported here:\n"));
        for (name, reason) in unsupported {
            out.push_str(&dim(&format!("  {name}: {reason}\n")));
        }
    }
    for w in &e.warnings {
        out.push_str(&yellow(&format!("warning: {}\n", escape(&w.message))));
    }
    out
}

/// Rows of an explanation shown in the terminal (the JSON has all).
const EXPLAIN_ROWS: usize = 15;

/// Iterations shown in a per-iteration profile before the last one.
const PROFILE_ITERATIONS: usize = 4;

/// For every metric the commands printed several times per run: each command's median
/// over runs of iteration 1, 2, …, the last, and first ÷ rest, so a slow first
/// iteration (or a warm-up) shows — one table per metric.
pub fn iteration_profile(e: &Experiment) -> String {
    let mut metrics: Vec<&String> = Vec::new();
    for run in e.commands.iter().flat_map(|c| &c.runs) {
        for (name, reading) in &run.counters {
            if reading.samples.len() > 1 && !metrics.contains(&name) {
                metrics.push(name);
            }
        }
    }
    let mut out = String::new();
    for name in metrics {
        let per_command: Vec<Vec<Vec<f64>>> = e
            .commands
            .iter()
            .map(|c| {
                let runs: Vec<&Vec<f64>> =
                    c.runs.iter().filter_map(|r| r.counters.get(name)).map(|r| &r.samples).collect();
                let longest = runs.iter().map(|s| s.len()).max().unwrap_or(0);
                (0..longest).map(|i| runs.iter().filter_map(|s| s.get(i).copied()).collect()).collect()
            })
            .collect();
        let longest = per_command.iter().map(Vec::len).max().unwrap_or(0);
        let shown: Vec<usize> = if longest <= PROFILE_ITERATIONS + 1 {
            (0..longest).collect()
        } else {
            (0..PROFILE_ITERATIONS).chain([longest - 1]).collect()
        };
        let mut table = new_table();
        let mut header = vec!["command".to_string()];
        for (k, &i) in shown.iter().enumerate() {
            let gap = if k > 0 && i > shown[k - 1] + 1 { "… " } else { "" };
            header.push(format!("{gap}#{}", i + 1));
        }
        header.push("first ÷ rest".into());
        table.set_header(header);
        for (c, iterations) in e.commands.iter().zip(&per_command) {
            let mut row = vec![escape(&c.name)];
            for &i in &shown {
                row.push(
                    iterations
                        .get(i)
                        .filter(|v| !v.is_empty())
                        .map_or("-".into(), |v| format_value(name, summary::median(v))),
                );
            }
            let rest: Vec<f64> = iterations.iter().skip(1).flatten().copied().collect();
            let ratio = match (iterations.first(), rest.is_empty()) {
                (Some(first), false) if !first.is_empty() => {
                    format!("{:.2}×", summary::median(first) / summary::median(&rest))
                }
                _ => "-".into(),
            };
            row.push(ratio);
            table.add_row(row);
        }
        out.push_str(&format!(
            "{name} per iteration (median over runs; a run's value is {}):\n",
            e.settings.iterations.describe()
        ));
        out.push_str(&table.to_string());
        out.push('\n');
    }
    out
}

/// Counters that could not be read, with the reason, from the first run that has them.
pub fn unsupported_counters(e: &Experiment) -> Vec<(String, String)> {
    let mut seen = std::collections::BTreeMap::new();
    for run in e.commands.iter().flat_map(|c| &c.runs) {
        for (name, reading) in &run.counters {
            if !reading.supported {
                seen.entry(name.clone()).or_insert_with(|| reading.reason.clone().unwrap_or_default());
            }
        }
    }
    seen.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::simulated::{Noise, Simulated};
    use crate::experiment::{run_experiment, Quiet};
    use crate::measure::MeasureOptions;
    use crate::model::{CommandSpec, Settings};
    use crate::plan::Plan;

    /// An experiment from the engine on a simulated machine: B is 10 % slower than A.
    fn experiment() -> Experiment {
        let plan = Plan {
            commands: ["A", "B\u{1b}[2J"]
                .iter()
                .map(|c| CommandSpec { name: c.to_string(), argv: vec![c.to_string()], command_line: c.to_string() })
                .collect(),
            settings: Settings { seed: 5, ..Settings::default() },
            metrics: vec![metric::WALL.into(), metric::CPU.into()],
            primary_metric: metric::WALL.into(),
            auto_primary: true,
            show_output: false,
            ignore_failure: false,
            measure: MeasureOptions::default(),
        };
        let mut machine = Simulated::new(5, vec![0.05, 0.055], Noise::gaussian(0.01));
        run_experiment(&plan, &mut machine, &mut Quiet).unwrap()
    }

    #[test]
    fn the_report_has_the_table_the_verdict_line_and_escaped_names() {
        crate::render::color::init("never");
        let e = experiment();
        let text = render(&e);
        let header = format!("perflab {} rounds (+1 warm-up)", e.rounds);
        assert!(text.starts_with(&header), "{text}");
        assert!(text.contains("stopped: every comparison decided (seed 5)"), "{text}");
        assert!(text.contains("A (baseline)") && text.contains("B\\u{1b}[2J"), "{text}");
        assert!(!text.contains('\u{1b}'), "no raw escape byte: {text:?}");
        let c = e.comparisons.iter().find(|c| c.metric == metric::WALL).unwrap();
        assert!(
            text.contains(&format!("{:.4}", c.ratio)) && text.contains(&format!("[{:.4}, {:.4}]", c.ci_low, c.ci_high))
        );
        assert!(text.contains("% slower than A ["), "the verdict sentence: {text}");
    }
}
