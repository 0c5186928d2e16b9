//! The cost of uprobes to the runs they count: calibrated on this machine before the runs
//! (`perflab_sys::perf::uprobe_cost`), kept in the experiment's environment, and said
//! beside the results — every probed call traps into the kernel, so the times of a run
//! with probes are not the program's own.

use perflab_model::{Experiment, Warning, WarningKind};
use perflab_sys::perf::event::{EventKind, EventList};
use perflab_sys::perf::uprobe_cost;
use std::collections::BTreeMap;

/// Environment keys of the calibrated costs (nanoseconds per probed call).
pub const ENTRY_COST: &str = "uprobe_cost_ns";
pub const RETURN_COST: &str = "uretprobe_cost_ns";

/// True for a uprobe's metric name (`uprobe:…` or `uretprobe:…`).
pub fn is_probe_metric(name: &str) -> bool {
    name.starts_with("uprobe:") || name.starts_with("uretprobe:")
}

/// The calibrated cost of the kinds of probe in `events` (none without uprobes); a cost
/// that could not be measured is said instead.
pub fn facts(events: &EventList) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    let probes: Vec<bool> = events
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Uprobe(probe) => Some(probe.config != 0),
            _ => None,
        })
        .collect();
    for (retprobe, key) in [(false, ENTRY_COST), (true, RETURN_COST)] {
        if !probes.contains(&retprobe) {
            continue;
        }
        let value = match uprobe_cost::cost_per_call_ns(retprobe) {
            Ok(ns) => format!("{ns:.0}"),
            Err(why) => format!("not measured: {why}"),
        };
        facts.insert(key.to_string(), value);
    }
    facts
}

/// One warning per command whose runs counted probed calls: how many per run, what they
/// cost at the calibrated rate, and which share of its median CPU time that is (the
/// traps are handled on the program's CPU time).
pub fn warnings(experiment: &Experiment) -> Vec<Warning> {
    let cost = |key: &str| experiment.environment.get(key).and_then(|v| v.parse::<f64>().ok());
    let (entry, ret) = (cost(ENTRY_COST), cost(RETURN_COST));
    let mut out = Vec::new();
    for command in &experiment.commands {
        let mut per_run: Vec<(f64, f64)> = Vec::new();
        for run in &command.runs {
            let (mut calls, mut ns) = (0.0, 0.0);
            for (name, reading) in &run.counters {
                let (Some(value), true) = (reading.value, is_probe_metric(name)) else { continue };
                let each = if name.starts_with("uretprobe:") { ret } else { entry };
                calls += value;
                ns += value * each.unwrap_or(f64::NAN);
            }
            per_run.push((calls, ns));
        }
        if per_run.is_empty() || per_run.iter().all(|(calls, _)| *calls == 0.0) {
            continue;
        }
        let calls = perflab_stats::summary::median(&per_run.iter().map(|p| p.0).collect::<Vec<_>>());
        let ns = perflab_stats::summary::median(&per_run.iter().map(|p| p.1).collect::<Vec<_>>());
        let cpu = perflab_stats::summary::median(&command.runs.iter().map(|r| r.user_s + r.sys_s).collect::<Vec<_>>());
        let message = if ns.is_finite() {
            let share = ns / 1e9 / cpu.max(f64::MIN_POSITIVE) * 100.0;
            let share = if share > 100.0 {
                "about all of its median CPU time: the run is mostly probes".to_string()
            } else {
                format!("{share:.1} % of its median CPU time")
            };
            format!(
                "`{}`: its probes trapped {} calls per run (median); at the {} per call measured here before the runs (a rough rate: a trap's cost depends on the instruction probed) that is ~{} ({share}): times measured beside uprobes include their cost",
                command.name,
                perflab_model::units::group_thousands(calls as i64),
                describe_costs(entry, ret),
                perflab_model::units::format_seconds(ns / 1e9),
            )
        } else {
            format!(
                "`{}`: its probes trapped {} calls per run (median), each a trap into the kernel whose cost could not be measured here: times measured beside uprobes include it",
                command.name,
                perflab_model::units::group_thousands(calls as i64)
            )
        };
        out.push(Warning::new(WarningKind::Scope, message));
    }
    out
}

fn describe_costs(entry: Option<f64>, ret: Option<f64>) -> String {
    let us = |ns: f64| format!("{:.1} µs", ns / 1e3);
    match (entry, ret) {
        (Some(e), Some(r)) => format!("{} (entry) and {} (return probe)", us(e), us(r)),
        (Some(e), None) => us(e),
        (None, Some(r)) => format!("{} (return probe)", us(r)),
        (None, None) => "unknown cost".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_model::{CommandResult, CounterReading, Run};

    fn run(cpu_s: f64, calls: f64, returns: f64) -> Run {
        let mut run = Run { user_s: cpu_s, ..Run::default() };
        run.counters.insert("uprobe:libc.so.6:malloc".into(), CounterReading::value(calls, false));
        run.counters.insert("uretprobe:libc.so.6:free".into(), CounterReading::value(returns, false));
        run.counters.insert("page-faults".into(), CounterReading::value(1e6, false));
        run
    }

    #[test]
    fn the_cost_of_the_probed_calls_is_said_per_command() {
        let mut experiment = Experiment::default();
        experiment.environment.insert(ENTRY_COST.into(), "2000".into());
        experiment.environment.insert(RETURN_COST.into(), "3000".into());
        experiment.commands = vec![
            CommandResult { name: "a".into(), runs: vec![run(0.1, 1000.0, 1000.0); 3], ..CommandResult::default() },
            CommandResult { name: "b".into(), runs: vec![run(0.1, 0.0, 0.0); 3], ..CommandResult::default() },
        ];
        let warnings = warnings(&experiment);
        assert_eq!(warnings.len(), 1, "no probed call, no warning: {warnings:?}");
        let message = &warnings[0].message;
        // 1000 × 2 µs + 1000 × 3 µs = 5 ms of 100 ms CPU time; page faults are no probe.
        assert!(message.starts_with("`a`: its probes trapped 2,000 calls per run"), "{message}");
        assert!(
            message.contains("2.0 µs (entry) and 3.0 µs (return probe)") && message.contains("~5.00 ms (5.0 %"),
            "{message}"
        );
        experiment.environment.remove(ENTRY_COST);
        let unknown = &super::warnings(&experiment)[0].message;
        assert!(unknown.contains("whose cost could not be measured"), "{unknown}");
    }
}
