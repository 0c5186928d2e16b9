//! The `perflab stat` table: per metric the median with its 95 % CI, the spread, and the
//! counters this machine cannot read with the reason — `perf stat -r` with statistics.

use super::export::Exporter;
use super::style::Style;
use super::table::{Column, FitTable, Frame};
use super::terminal::escape;
use super::{color, OutputError};
use crate::model::{metric, CommandResult, Experiment, Summary};
use serde::Serialize;

/// One metric of `perflab stat`, as printed and as written to JSON.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StatMetric {
    /// perf's event name, a derived metric, a harness or an instruction-mode metric.
    pub name: String,
    pub supported: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// True when any run's count was scaled for multiplexing.
    pub scaled: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub unit: &'static str,
    /// What the metric measures (the registry's one line).
    pub description: &'static str,
    /// The median over runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// True when every run gave the identical value.
    pub exact: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
}

/// The stat JSON document: the experiment plus the per-metric table.
#[derive(Debug, Serialize)]
pub struct StatReport {
    #[serde(flatten)]
    pub experiment: Experiment,
    pub metrics: Vec<StatMetric>,
}

/// The per-metric table of one command's runs, for `names` in order. A counter is
/// unsupported when no run could read it; its reason is the first run's.
pub fn stat_metrics(result: &CommandResult, names: &[String]) -> Vec<StatMetric> {
    names
        .iter()
        .map(|name| {
            let readings: Vec<_> = result.runs.iter().filter_map(|r| r.counters.get(name)).collect();
            let values: Vec<f64> = result.runs.iter().filter_map(|r| r.metric(name)).collect();
            let metric::Info { unit, description, .. } = metric::info(name);
            if values.is_empty() {
                let reason = readings
                    .iter()
                    .find_map(|c| c.reason.clone())
                    .unwrap_or_else(|| if result.runs.is_empty() { "no runs finished" } else { "not measured" }.into());
                return StatMetric {
                    name: name.clone(),
                    supported: false,
                    reason: Some(reason),
                    scaled: false,
                    unit,
                    description,
                    value: None,
                    exact: false,
                    summary: None,
                };
            }
            let summary =
                result.summary.get(name).cloned().unwrap_or_else(|| crate::stats::summary::summarize(&values));
            StatMetric {
                name: name.clone(),
                supported: true,
                reason: None,
                scaled: readings.iter().any(|c| c.scaled),
                unit,
                description,
                value: Some(summary.median),
                exact: values.iter().all(|v| *v == values[0]),
                summary: Some(summary),
            }
        })
        .collect()
}

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
    pub style: Style,
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
pub fn render_terminal(title: &str, runs: usize, metrics: &[StatMetric], notes: &[String], style: &Style) -> String {
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
        crate::stats::summary::min_values_for_median_ci(crate::stats::summary::MEDIAN_CI_CONFIDENCE).unwrap_or(6);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CounterReading, Run};
    use std::collections::BTreeMap;

    fn result(values: &[(&str, Option<f64>)], runs: usize) -> CommandResult {
        let runs = (0..runs)
            .map(|i| {
                let mut counters = BTreeMap::new();
                for (name, value) in values {
                    let reading = match value {
                        Some(v) => CounterReading::value(v + i as f64, name.starts_with("scaled")),
                        None => CounterReading::unsupported("no hardware PMU (virtualized?)"),
                    };
                    counters.insert(name.to_string(), reading);
                }
                counters.insert("instructions".into(), CounterReading::value(1000.0, false));
                Run { round: i as u32, wall_s: 0.01 * (i + 1) as f64, counters, ..Default::default() }
            })
            .collect();
        CommandResult {
            name: "x".into(),
            argv: vec!["x".into()],
            command_line: "x".into(),
            parameters: Default::default(),
            runs,
            summary: BTreeMap::new(),
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn unsupported_counters_keep_their_reason_and_no_value() {
        let r = result(&[("cycles", None), ("task-clock", Some(5e6))], 8);
        let m = stat_metrics(&r, &names(&["task-clock", "cycles"]));
        assert!(m[0].supported && m[0].value.is_some() && m[0].summary.as_ref().unwrap().n == 8);
        assert_eq!(m[0].unit, "ns");
        assert!(!m[1].supported && m[1].value.is_none() && m[1].summary.is_none());
        assert_eq!(m[1].reason.as_deref(), Some("no hardware PMU (virtualized?)"));
        let json = serde_json::to_value(&m[1]).unwrap();
        assert_eq!(json["name"], "cycles");
        assert_eq!(json["supported"], false);
        assert!(json.get("value").is_none());
    }

    #[test]
    fn identical_runs_are_exact_and_scaling_is_reported() {
        let r = result(&[("scaled-thing", Some(10.0))], 3);
        let m = stat_metrics(&r, &names(&["instructions", "scaled-thing", "wall_s"]));
        assert!(m[0].exact && m[0].value == Some(1000.0));
        assert!(!m[1].exact && m[1].scaled);
        assert!(!m[2].exact && m[2].supported);
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
