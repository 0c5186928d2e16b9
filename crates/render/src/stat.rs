//! The `perflab stat` table: per metric the median with its 95 % CI, the spread, and the
//! counters this machine cannot read with the reason — `perf stat -r` with statistics
//! (the numbers: `analysis::stat`).

use super::export::Exporter;
use super::style::Style;
use super::table::{Column, FitTable, Frame};
use super::terminal::escape;
use super::{color, OutputError};
use perflab_engine::analysis::stat::{StatMetric, StatReport};
use perflab_model::units::format_value;

/// The spread column: exact, or the scaled MAD relative to the median.
fn spread(m: &StatMetric, style: &Style) -> String {
    let Some(s) = &m.summary else { return String::new() };
    if m.exact {
        return if s.n > 1 { format!("exact ({} identical runs)", s.n) } else { "1 run".to_string() };
    }
    if s.median == 0.0 {
        return format!("MAD {}", style.value(&m.name, s.mad));
    }
    format!("± {:.2} %", s.mad / s.median.abs() * 100.0)
}

/// `perflab stat` on the terminal, laid out by a [`Style`], with notes under the table.
pub struct StatTerminal {
    /// Time unit and order of the metrics' values.
    pub style: Style,
    /// Lines printed under the table.
    pub notes: Vec<String>,
}

impl Exporter<StatReport> for StatTerminal {
    fn render(&self, report: &StatReport) -> Result<String, OutputError> {
        let e = &report.experiment;
        let title = e.commands.first().map_or("", |c| c.command_line.as_str());
        let mut text = render_terminal(title, e.rounds as usize, &report.metrics, &self.notes, &self.style);
        let profile = super::terminal::iteration_profile(e, self.style.width);
        if !profile.is_empty() {
            text = format!("{text}\n{profile}");
        }
        Ok(text)
    }
}

/// The terminal table of `perflab stat`. Too wide for the terminal, it leaves out min …
/// max, then the spread, then the interval (docs/output.md).
pub(crate) fn render_terminal(
    title: &str,
    runs: usize,
    metrics: &[StatMetric],
    notes: &[String],
    style: &Style,
) -> String {
    let mut table = FitTable::new(
        Frame::Plain,
        vec![
            Column::kept("metric"),
            Column::kept("median").right(),
            Column::droppable("95 % CI of median", 3),
            Column::droppable("spread (MAD)", 2),
            Column::droppable("min … max", 1),
        ],
    );
    let needed =
        perflab_stats::summary::min_values_for_median_ci(perflab_stats::summary::MEDIAN_CI_CONFIDENCE).unwrap_or(6);
    for m in metrics.iter().filter(|m| m.supported) {
        let Some(s) = m.summary.as_ref() else { continue };
        let ci = match s.median_ci {
            Some((lo, hi)) if !m.exact => format!("[{}, {}]", style.value(&m.name, lo), style.value(&m.name, hi)),
            _ if m.exact => "exact".to_string(),
            _ => format!("needs ≥ {needed} runs"),
        };
        let range = if m.exact {
            String::new()
        } else {
            format!("{} … {}", style.value(&m.name, s.min), style.value(&m.name, s.max))
        };
        let name = if m.scaled { format!("{} (scaled)", m.name) } else { m.name.clone() };
        table.row(vec![name, style.value(&m.name, s.median), ci, spread(m, style), range]);
    }
    let plural = if runs == 1 { "" } else { "s" };
    let mut out = format!("\n {} ({runs} run{plural}):\n\n", color::bold(&escape(title)));
    if !table.is_empty() {
        out += &table.render(style.width);
    }
    let unsupported: Vec<&StatMetric> = metrics.iter().filter(|m| !m.supported).collect();
    if !unsupported.is_empty() {
        out += "\n";
        let width = unsupported.iter().map(|m| m.name.len()).max().unwrap_or(0);
        for m in unsupported {
            let reason = m.reason.as_deref().unwrap_or("");
            out += &format!("  {:<width$}  {}  {}\n", m.name, color::yellow("<not supported>"), reason);
        }
    }
    for note in notes {
        out += &format!("\n {}\n", color::dim(note));
    }
    out
}

/// `stat -a/-p/-I` totals, perf stat's layout: one block per row (all CPUs, all threads,
/// or each thread), a count per event, unsupported counters with their reason.
pub fn render_live(title: &str, report: &perflab_engine::measure::live::LiveReport, notes: &[String]) -> String {
    let mut out = format!(
        "\n Counter totals for {title} ({:.2} s{}):\n\n",
        report.elapsed_s,
        if report.interrupted { ", interrupted" } else { "" }
    );
    let width = report.rows.iter().flat_map(|r| r.counters.keys()).map(|k| k.chars().count()).max().unwrap_or(0);
    for row in &report.rows {
        if report.rows.len() > 1 || row.thread {
            out.push_str(&format!("  {}\n", crate::escape(&row.label)));
        }
        for (name, reading) in &row.counters {
            let text = match reading.value {
                Some(v) => format!("{}{}", format_value(name, v), if reading.scaled { "  (scaled)" } else { "" }),
                None => color::dim(&format!("<not supported>  {}", reading.reason.as_deref().unwrap_or(""))),
            };
            out.push_str(&format!("  {name:<width$}  {text}\n"));
        }
    }
    for note in notes {
        out.push_str(&format!("\n {note}"));
    }
    out.push('\n');
    out
}

/// One `-I` interval: `seconds  [thread]  count  event` per line, as perf prints them.
pub fn render_interval(interval: &perflab_engine::measure::live::IntervalCounts) -> String {
    let mut out = String::new();
    for row in &interval.rows {
        let label = if interval.rows.len() > 1 || row.thread {
            format!("{:<16}  ", crate::escape(&row.label))
        } else {
            String::new()
        };
        for (name, reading) in &row.counters {
            let value = reading.value.map_or("<not supported>".to_string(), |v| format_value(name, v));
            out.push_str(&format!("{:>12.6}  {label}{value:>18}  {name}\n", interval.at_s));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_engine::analysis::stat::stat_metrics;
    use perflab_engine::fixtures::counter_result as result;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn terminal_lists_values_spread_and_unsupported_reasons() {
        let r = result(&[("cycles", None), ("page-faults", Some(70.0))], 8);
        let m = stat_metrics(&r, &names(&["wall_s", "page-faults", "instructions", "cycles"]));
        let text = render_terminal("./x", 8, &m, &[], &Style::default());
        assert!(text.contains("page-faults"), "{text}");
        assert!(text.contains("exact (8 identical runs)"), "{text}");
        assert!(text.contains("<not supported>") && text.contains("no hardware PMU"), "{text}");
        assert!(text.contains("± "), "{text}");
    }
}
