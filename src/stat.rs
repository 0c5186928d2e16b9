//! `perflab stat`: runs one command N times (through the compare engine) and reports,
//! per metric, the median with its 95 % CI, the spread, derived metrics, and the
//! counters this machine cannot read with the reason — `perf stat -r` with statistics.

use crate::error::{Failure, EXIT_COMMAND_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::measure::{self, counters, Mode};
use crate::model::{metric, CommandResult, Experiment, StopReason, Summary};
use crate::render::color;
use crate::suite::Options;
use clap::Args;
use serde::Serialize;
use std::io::Write;

#[derive(Debug, Args, Clone)]
pub struct StatArgs {
    /// The command to measure, with its arguments.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// Measured runs (default: 10 in wall mode, 1 in instruction mode).
    #[arg(short = 'r', long = "repeat", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
    /// Run the command through `sh -c` (or `--shell=SHELL -c`).
    #[arg(long, value_name = "SHELL", num_args = 0..=1, require_equals = true, default_missing_value = "/bin/sh")]
    pub shell: Option<String>,
    #[command(flatten)]
    pub runner: crate::compare::RunnerArgs,
    #[command(flatten)]
    pub measure: measure::MeasureArgs,
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
            let summary =
                result.summary.get(name).cloned().unwrap_or_else(|| crate::stats::summary::summarize(&values));
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

/// A metric's value for the terminal: render's formats, plus nanosecond clocks and rates.
pub fn format_metric(name: &str, value: f64) -> String {
    match metric::unit(name) {
        "ns" => crate::render::format_seconds(value * 1e-9),
        "%" => format!("{value:.2} %"),
        _ => crate::render::format_value(name, value),
    }
}

/// The spread column: exact, or the scaled MAD relative to the median.
fn spread(m: &StatMetric) -> String {
    let Some(s) = &m.summary else { return String::new() };
    if m.exact {
        return if s.n > 1 { format!("exact ({} identical runs)", s.n) } else { "1 run".to_string() };
    }
    if s.median == 0.0 {
        return format!("MAD {}", format_metric(&m.name, s.mad));
    }
    format!("± {:.2} %", s.mad / s.median.abs() * 100.0)
}

/// The terminal table of `perflab stat`.
pub fn render_terminal(title: &str, runs: usize, metrics: &[StatMetric], notes: &[String]) -> String {
    let mut rows: Vec<[String; 5]> = Vec::new();
    for m in metrics.iter().filter(|m| m.supported) {
        let s = m.summary.as_ref().expect("supported metrics have a summary");
        let ci = match s.median_ci {
            Some((lo, hi)) if !m.exact => format!("[{}, {}]", format_metric(&m.name, lo), format_metric(&m.name, hi)),
            _ if m.exact => "exact".to_string(),
            _ => "needs ≥ 6 runs".to_string(),
        };
        let range = if m.exact {
            String::new()
        } else {
            format!("{} … {}", format_metric(&m.name, s.min), format_metric(&m.name, s.max))
        };
        let name = if m.scaled { format!("{} (scaled)", m.name) } else { m.name.clone() };
        rows.push([name, format_metric(&m.name, s.median), ci, spread(m), range]);
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
    if !rows.is_empty() {
        out += &color::dim(&line(header));
    }
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

/// `perflab stat`.
pub fn main(args: StatArgs) -> Result<i32, Failure> {
    let instructions = args.measure.mode == Mode::Instructions;
    let mut measure = args.measure.clone();
    if measure.events.is_empty() && !instructions {
        measure.events = counters::DEFAULT_STAT_EVENTS.map(String::from).to_vec();
    }
    let names = metric_names(&measure)?;
    // One argument is a command line to split like a shell; several are the argv itself
    // (or, with --shell, the words of the shell command).
    let text = match args.command.as_slice() {
        [single] => single.clone(),
        many if args.shell.is_some() => many.join(" "),
        many => shell_words::join(many),
    };
    let commands = crate::command::parse_commands(&[text], &[], args.shell.as_deref())?;
    crate::command::resolve_program(&commands[0].argv[0])?;
    let runs = args.runs.unwrap_or(if instructions { 1 } else { DEFAULT_RUNS });
    let plan = crate::compare::Plan {
        settings: crate::compare::settings(
            &Options {
                rounds: Some(runs),
                warmup: args.runner.warmup,
                min_rounds: Some(runs),
                max_rounds: Some(runs),
                max_time: Some(f64::INFINITY),
                timeout: args.runner.timeout,
                mode: Some(measure.mode),
                ..Options::default()
            },
            None,
        ),
        primary_metric: names[0].clone(),
        metrics: names.clone(),
        commands,
        show_output: args.runner.show_output,
        ignore_failure: false,
        measure,
    };
    let stdout_taken = args.runner.json.as_deref() == Some("-");
    let hidden = args.runner.no_progress || !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = crate::render::progress::ProgressDisplay::new(&plan.settings, hidden);
    let experiment = crate::compare::run_experiment(&plan, &mut progress);
    progress.finish();
    let experiment = experiment?;
    let metrics = match experiment.commands.first() {
        Some(result) => stat_metrics(result, &names),
        None => Vec::new(),
    };
    let mut notes = Vec::new();
    if let Some(scope) = experiment.environment.get("counter_scope") {
        notes.push(format!("counters: {scope} mode (see --counter-scope)"));
    }
    if instructions {
        notes.push("instruction mode: counts under valgrind cachegrind with fixed caches (docs/counters.md)".into());
    }
    let text = render_terminal(&plan.commands[0].command_line, experiment.rounds as usize, &metrics, &notes);
    if stdout_taken {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    for warning in &experiment.warnings {
        eprintln!("{}", color::yellow(&format!("warning: {warning}")));
    }
    if let Some(path) = &args.runner.json {
        write_json(&StatReport { experiment: &experiment, metrics }, path)?;
    }
    Ok(match experiment.stop_reason {
        StopReason::Interrupted => {
            eprintln!("perflab: interrupted after {} runs; the results above cover them", experiment.rounds);
            EXIT_INTERRUPTED
        }
        StopReason::CommandFailed => {
            eprintln!("perflab: error: {}", experiment.failure.as_deref().unwrap_or("the command failed"));
            EXIT_COMMAND_FAILED
        }
        _ => EXIT_OK,
    })
}

fn write_json(report: &StatReport, path: &str) -> Result<(), Failure> {
    let mut out = crate::render::open_output(path)?;
    serde_json::to_writer_pretty(&mut out, report).map_err(|e| Failure::Other(e.into()))?;
    writeln!(out).and_then(|_| out.flush()).map_err(|e| crate::usage!("cannot write `{path}`: {e}"))
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
    fn formats_clocks_and_rates() {
        assert_eq!(format_metric("task-clock", 812_345.0), "812.3 µs");
        assert_eq!(format_metric("branch-miss-rate", 5.87), "5.87 %");
        assert_eq!(format_metric("instructions", 17123637.0), "17,123,637");
    }
}
