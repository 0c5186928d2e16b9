//! The cost of uprobes to the runs they count: calibrated on this machine before the runs
//! (`perflab_sys::perf::uprobe_cost`), kept in the experiment's environment, and said
//! beside the results — every probed call traps into the kernel, so the times of a run
//! with probes are not the program's own.

use perflab_model::{Experiment, Warning, WarningKind};
use perflab_sys::perf::event::{EventKind, EventList};
use perflab_sys::perf::uprobe_cost::{self, Trap};
use std::collections::{BTreeMap, HashMap};

/// Environment key of a probe's calibrated cost (nanoseconds per probed call).
pub fn cost_key(metric: &str) -> String {
    format!("uprobe_cost_ns[{metric}]")
}

/// Environment key of how a probe's first instruction is trapped (what its cost depends on).
pub fn trap_key(metric: &str) -> String {
    format!("uprobe_trap[{metric}]")
}

/// True for a uprobe's metric name (`uprobe:…` or `uretprobe:…`).
pub fn is_probe_metric(name: &str) -> bool {
    name.starts_with("uprobe:") || name.starts_with("uretprobe:")
}

/// Per uprobe of `events`, what one call costs: its first instruction is read, and that
/// kind of trap (emulated or single-stepped, entry or return probe) calibrated once; a
/// cost that could not be measured is said instead.
pub fn facts(events: &EventList) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    let mut measured: HashMap<(bool, Trap), Result<f64, String>> = HashMap::new();
    for event in &events.events {
        let EventKind::Uprobe(probe) = event.kind else { continue };
        let value = match Trap::of_probe(&probe) {
            Ok(trap) => {
                facts.insert(trap_key(&event.name), trap.describe().to_string());
                let retprobe = probe.retprobe;
                match measured.entry((retprobe, trap)).or_insert_with(|| uprobe_cost::cost_per_call_ns(retprobe, trap))
                {
                    Ok(ns) => format!("{ns:.0}"),
                    Err(why) => format!("not measured: {why}"),
                }
            }
            Err(why) => format!("not measured: its first instruction could not be read: {why}"),
        };
        facts.insert(cost_key(&event.name), value);
    }
    facts
}

/// One warning per command whose runs counted probed calls: how many per run, what they
/// cost at each probe's calibrated rate, and which share of its median CPU time that is
/// (the traps are handled on the program's CPU time).
pub fn warnings(experiment: &Experiment) -> Vec<Warning> {
    let cost = |metric: &str| experiment.environment.get(&cost_key(metric)).and_then(|v| v.parse::<f64>().ok());
    let mut out = Vec::new();
    for command in &experiment.commands {
        let mut per_run: Vec<(f64, f64)> = Vec::new();
        let mut rates: BTreeMap<&str, Option<f64>> = BTreeMap::new();
        for run in &command.runs {
            let (mut calls, mut ns) = (0.0, 0.0);
            for (name, reading) in &run.counters {
                let (Some(value), true) = (reading.value, is_probe_metric(name)) else { continue };
                let each = *rates.entry(name.as_str()).or_insert_with(|| cost(name));
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
        let message = if let (Some(whom), true) = (experiment.environment.get("counted_in"), ns.is_finite()) {
            // The traps ran in other processes: the command's own CPU time is no yardstick.
            format!(
                "`{}`: the probes trapped {} calls per run (median) in {whom}; at the cost per call measured here before the runs that is ~{} of their CPU time per run, which the command's times include wherever it waits for them",
                command.name,
                perflab_model::units::group_thousands(calls as i64),
                perflab_model::units::format_seconds(ns / 1e9),
            )
        } else if ns.is_finite() {
            let share = ns / 1e9 / cpu.max(f64::MIN_POSITIVE) * 100.0;
            let share = if share > 100.0 {
                "about all of its median CPU time: the run is mostly probes".to_string()
            } else {
                format!("{share:.1} % of its median CPU time")
            };
            let rates: Vec<String> = rates
                .iter()
                .filter_map(|(name, ns)| {
                    let trap = experiment.environment.get(&trap_key(name)).map_or(String::new(), |t| format!(", {t}"));
                    ns.map(|ns| format!("{name} {:.1} µs{trap}", ns / 1e3))
                })
                .collect();
            format!(
                "`{}`: its probes trapped {} calls per run (median); at the cost per call measured here before the runs ({}) that is ~{} ({share}): times measured beside uprobes include their cost",
                command.name,
                perflab_model::units::group_thousands(calls as i64),
                rates.join("; "),
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

/// A probe that counted nothing in any run of any command: said, with where the calls
/// may be instead — otherwise 0 against 0 reads as "equivalent".
pub fn silent(experiment: &Experiment) -> Vec<Warning> {
    let mut names: Vec<&str> = Vec::new();
    for run in experiment.commands.iter().flat_map(|c| &c.runs) {
        for name in run.counters.keys().filter(|n| is_probe_metric(n)) {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    let counted_in = experiment.environment.get("counted_in");
    names
        .into_iter()
        .filter(|name| {
            let values: Vec<Option<f64>> = experiment
                .commands
                .iter()
                .flat_map(|c| &c.runs)
                .filter_map(|r| r.counters.get(*name))
                .map(|reading| reading.value)
                .collect();
            !values.is_empty() && values.iter().all(|v| *v == Some(0.0))
        })
        .map(|name| {
            let whom = counted_in.map_or_else(
                || "the measured commands and their children never called it. If the work runs in a server (a query sent by psql runs in a PostgreSQL backend, the postmaster's child, not psql's), count there: --count-in comm:NAME, --count-in pid:PID or --count-in system".to_string(),
                |whom| format!("it was counted in {whom}, which never called it during the runs"),
            );
            Warning::new(
                WarningKind::Scope,
                format!("`{name}` counted 0 in every run: {whom}; a verdict on it compares 0 with 0"),
            )
        })
        .collect()
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
        experiment.environment.insert(cost_key("uprobe:libc.so.6:malloc"), "2000".into());
        experiment.environment.insert(trap_key("uprobe:libc.so.6:malloc"), "first instruction emulated".into());
        experiment.environment.insert(cost_key("uretprobe:libc.so.6:free"), "3000".into());
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
            message.contains(
                "(uprobe:libc.so.6:malloc 2.0 µs, first instruction emulated; uretprobe:libc.so.6:free 3.0 µs)"
            ) && message.contains("~5.00 ms (5.0 %"),
            "{message}"
        );
        experiment.environment.insert(cost_key("uprobe:libc.so.6:malloc"), "not measured: not root".into());
        let unknown = &super::warnings(&experiment)[0].message;
        assert!(unknown.contains("whose cost could not be measured"), "{unknown}");
    }
}
