//! The terminal rendering: per-command summaries, the comparison table, one verdict
//! line per candidate, and warnings.

use super::color::{bold, dim, green, red, yellow};
use crate::model::{metric, Comparison, Experiment, StopReason, Verdict};
use crate::units::{format_level, format_p, format_seconds, format_value};
use crate::verdict::sentence;
use comfy_table::{presets, CellAlignment, Table};

/// Text from outside (command names, labels) made safe for a terminal: control
/// characters — a newline, an escape sequence — are shown as escapes, never acted on.
pub fn escape(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

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
                None => row.extend(std::iter::repeat("-".to_string()).take(7)),
            }
        }
        if primary != metric::WALL {
            row.push(c.summary.get(primary).map_or("-".into(), |s| format_value(primary, s.median)));
        }
        table.add_row(row);
    }
    out.push_str(&table.to_string());
    out.push('\n');

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
