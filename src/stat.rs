//! `perflab stat`: runs one command N times (through the compare engine) and reports,
//! per metric, the median with its 95 % CI, the spread, derived metrics, and the
//! counters this machine cannot read with the reason — `perf stat -r` with statistics.

use crate::error::Failure;
use crate::measure::{self, Mode};
use crate::model::{metric, CommandResult, Experiment, Summary};
use crate::render::color;
use clap::Args;
use serde::Serialize;

#[derive(Debug, Args, Clone)]
pub struct StatArgs {
    /// The command to measure, with its arguments.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// Measured runs (default: 10 in wall mode, 1 in instruction mode).
    #[arg(short = 'r', long = "repeat", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
    /// Warm-up runs, not counted (default: 1 in wall mode, 0 in instruction mode).
    #[arg(short = 'w', long, value_name = "N")]
    pub warmup: Option<u32>,
    /// Run the command through `sh -c` (or the shell given).
    #[arg(long, value_name = "SHELL", num_args = 0..=1, default_missing_value = "/bin/sh")]
    pub shell: Option<String>,
    /// Let the command's stdout and stderr through instead of discarding them.
    #[arg(long)]
    pub show_output: bool,
    /// Kill a run (its whole process group) after this long.
    #[arg(long, value_name = "DURATION", value_parser = crate::compare::parse_duration)]
    pub timeout: Option<f64>,
    /// Write the result as JSON (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    #[command(flatten)]
    pub measure: measure::MeasureArgs,
    /// Do not show the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

pub const DEFAULT_RUNS: u32 = 10;

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
pub struct StatReport<'a> {
    #[serde(flatten)]
    pub experiment: &'a Experiment,
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
            let unit = metric::unit(name);
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
                    value: None,
                    exact: false,
                    summary: None,
                };
            }
            let summary = result.summary.get(name).cloned().unwrap_or_else(|| crate::stats::summary::summarize(&values));
            StatMetric {
                name: name.clone(),
                supported: true,
                reason: None,
                scaled: readings.iter().any(|c| c.scaled),
                unit,
                value: Some(summary.median),
                exact: values.iter().all(|v| *v == values[0]),
                summary: Some(summary),
            }
        })
        .collect()
}

/// Format a value of a metric for the terminal: times with a unit, counts grouped.
pub fn format_value(value: f64, unit: &str) -> String {
    match unit {
        "s" => format_seconds(value),
        "ns" => format_seconds(value * 1e-9),
        "%" => format!("{value:.2} %"),
        "KiB" => format!("{} KiB", group_digits(value)),
        _ if value.fract() == 0.0 && value.abs() < 1e15 => group_digits(value),
        _ => format!("{value:.3}"),
    }
}

fn format_seconds(s: f64) -> String {
    let (scaled, unit) = match s.abs() {
        v if v >= 1.0 => (s, "s"),
        v if v >= 1e-3 => (s * 1e3, "ms"),
        v if v >= 1e-6 => (s * 1e6, "µs"),
        _ => (s * 1e9, "ns"),
    };
    format!("{scaled:.3} {unit}")
}

/// 17123637 → "17,123,637" (the way perf stat prints counts).
fn group_digits(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if value < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// The spread column: exact, or the scaled MAD relative to the median.
fn spread(m: &StatMetric) -> String {
    let Some(s) = &m.summary else { return String::new() };
    if m.exact {
        return if s.n > 1 { format!("exact ({} identical runs)", s.n) } else { "1 run".to_string() };
    }
    if s.median == 0.0 {
        return format!("MAD {}", format_value(s.mad, m.unit));
    }
    format!("± {:.2} %", s.mad / s.median.abs() * 100.0)
}

/// The terminal table of `perflab stat`.
pub fn render_terminal(title: &str, runs: usize, metrics: &[StatMetric], notes: &[String]) -> String {
    let mut rows: Vec<[String; 5]> = Vec::new();
    for m in metrics.iter().filter(|m| m.supported) {
        let s = m.summary.as_ref().expect("supported metrics have a summary");
        let ci = match s.median_ci {
            Some((lo, hi)) if !m.exact => format!("[{}, {}]", format_value(lo, m.unit), format_value(hi, m.unit)),
            _ if m.exact => "exact".to_string(),
            _ => "n < 6: none".to_string(),
        };
        let range = if m.exact {
            String::new()
        } else {
            format!("{} … {}", format_value(s.min, m.unit), format_value(s.max, m.unit))
        };
        let name = if m.scaled { format!("{} (scaled)", m.name) } else { m.name.clone() };
        rows.push([name, format_value(s.median, m.unit), ci, spread(m), range]);
    }
    let header = ["metric", "median", "95 % CI of median", "spread (MAD)", "min … max"];
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).chain([header[i].chars().count()]).max().unwrap_or(0))
        .collect();
    let line = |cells: [&str; 5]| {
        let mut text = format!("  {:<w$}", cells[0], w = widths[0]);
        text += &format!("  {:>w$}", cells[1], w = widths[1]);
        for (i, cell) in cells.iter().enumerate().skip(2) {
            text += &format!("  {:<w$}", cell, w = widths[i]);
        }
        text.trim_end().to_string() + "\n"
    };
    let plural = if runs == 1 { "" } else { "s" };
    let mut out = format!("\n {} ({runs} run{plural}):\n\n", color::bold(title));
    out += &color::dim(&line(header));
    for r in &rows {
        out += &line([&r[0], &r[1], &r[2], &r[3], &r[4]]);
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

/// Metrics `stat` reports for these options: harness metrics, then counters.
pub fn metric_names(args: &measure::MeasureArgs) -> Result<Vec<String>, Failure> {
    let mut names: Vec<String> = match args.mode {
        // Under valgrind, time and memory describe the simulator, not the program.
        Mode::Instructions => vec![metric::WALL.to_string()],
        Mode::Wall => [metric::WALL, metric::USER, metric::SYS, metric::MAX_RSS].map(String::from).to_vec(),
    };
    names.extend(measure::metric_names(args)?);
    Ok(names)
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
        let text = render_terminal("./x", 8, &m, &[]);
        assert!(text.contains("page-faults"), "{text}");
        assert!(text.contains("exact (8 identical runs)"), "{text}");
        assert!(text.contains("<not supported>") && text.contains("no hardware PMU"), "{text}");
        assert!(text.contains("± "), "{text}");
    }

    #[test]
    fn formats_counts_and_times_like_perf() {
        assert_eq!(format_value(17123637.0, ""), "17,123,637");
        assert_eq!(format_value(-1234.0, ""), "-1,234");
        assert_eq!(format_value(0.012345, "s"), "12.345 ms");
        assert_eq!(format_value(812_345.0, "ns"), "812.345 µs");
        assert_eq!(format_value(1.5, ""), "1.500");
        assert_eq!(format_value(5.87, "%"), "5.87 %");
    }
}
