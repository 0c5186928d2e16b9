//! The builds × machines view: each benchmark's label ÷ reference ratio on every machine,
//! side by side and never pooled — whether a change holds on every CPU generation or only
//! on some (the same binary can lose 6 % to branch misses on one and nothing on another).

use super::pair::{self, MetricChoice};
use super::ratio::{self, Ratio};
use super::sessions::{self, BenchmarkSessions, MachineNoise};
use crate::StoredExperiment;
use perflab_model::Machine;
use perflab_stats::sessions::SessionNoise;
use serde::Serialize;
use std::collections::HashMap;

/// Two labels compared on every machine side by side: one row per benchmark.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Matrix {
    /// The metric compared.
    pub metric: String,
    /// The label compared against.
    pub reference: String,
    /// The label compared.
    pub label: String,
    /// One column per machine fingerprint, by name.
    pub machines: Vec<MachineColumn>,
    /// One row per benchmark.
    pub rows: Vec<MatrixRow>,
}

/// A machine's column of a [`Matrix`].
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MachineColumn {
    /// The machine's fingerprint.
    pub fingerprint: String,
    /// A short name for a column header: the machine id, else the hostname.
    pub name: String,
    /// One line naming the machine (`Machine::describe`).
    pub description: String,
    /// The machine.
    pub machine: Machine,
}

/// A benchmark's row of a [`Matrix`].
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MatrixRow {
    /// The benchmark's name.
    pub benchmark: String,
    /// label ÷ reference on each machine (aligned with [`Matrix::machines`]); None when
    /// that machine lacks either label or has too few runs for an interval.
    pub cells: Vec<Option<Ratio>>,
}

/// `label` ÷ `reference` of the `choice`n metric for every benchmark on every machine of
/// `experiments` (stored order, oldest label first): each cell the pair's one record
/// ([`pair::pair_comparison`]).
pub fn matrix(experiments: &[&StoredExperiment], choice: MetricChoice, reference: &str, label: &str) -> Matrix {
    let metric = choice.name();
    let mut labels: Vec<String> = Vec::new();
    let mut machines: Vec<MachineColumn> = Vec::new();
    let mut benchmarks: Vec<&str> = Vec::new();
    let mut by_cell: HashMap<(&str, &str), Vec<&StoredExperiment>> = HashMap::new();
    for e in experiments {
        if !labels.contains(&e.label) {
            labels.push(e.label.clone());
        }
        for build in pair::paired_builds([*e], &labels) {
            labels.push(build);
        }
        if !machines.iter().any(|m| m.fingerprint == e.machine_fingerprint) {
            let m = &e.experiment.machine;
            machines.push(MachineColumn {
                fingerprint: e.machine_fingerprint.clone(),
                name: m.id.clone().unwrap_or_else(|| m.hostname.clone()),
                description: m.describe(&e.machine_fingerprint),
                machine: m.clone(),
            });
        }
        let cell = by_cell.entry((&e.benchmark, &e.machine_fingerprint)).or_default();
        if cell.is_empty() && !benchmarks.contains(&e.benchmark.as_str()) {
            benchmarks.push(&e.benchmark);
        }
        cell.push(e);
    }
    // Two machines with the same id or hostname are told apart by their fingerprints.
    for i in 0..machines.len() {
        if machines.iter().filter(|m| m.name == machines[i].name).count() > 1 {
            machines[i].name = format!("{} [{}]", machines[i].name, &machines[i].fingerprint);
        }
    }
    machines.sort_by(|a, b| a.name.cmp(&b.name));
    // Each machine's sessions and its session noise between the two labels.
    let per_machine: Vec<(Vec<BenchmarkSessions>, SessionNoise)> = machines
        .iter()
        .map(|m| {
            let own = experiments.iter().copied().filter(|e| e.machine_fingerprint == m.fingerprint);
            let sessions = sessions::collect(own, metric);
            let noise = MachineNoise::new(&sessions, ratio::SESSION_PRIOR).between(reference, label);
            (sessions, noise)
        })
        .collect();
    let rows = benchmarks
        .iter()
        .map(|&benchmark| MatrixRow {
            benchmark: benchmark.to_string(),
            cells: machines
                .iter()
                .zip(&per_machine)
                .map(|(m, (sessions, noise))| {
                    let own = by_cell.get(&(benchmark, m.fingerprint.as_str()))?;
                    let sessions = sessions.iter().find(|b| b.benchmark == benchmark).unwrap_or(&sessions::NO_SESSIONS);
                    pair::pair_comparison(own, &labels, reference, label, choice, sessions, noise)
                })
                .collect(),
        })
        .collect();
    Matrix { metric: metric.to_string(), reference: reference.to_string(), label: label.to_string(), machines, rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{runs, stored};
    use perflab_model::Verdict;

    #[test]
    fn each_machine_gets_its_own_ratio_and_none_is_pooled() {
        // gcc54 ÷ gcc48: 10 % slower on "sandy", unchanged on "haswell"; "skylake" lacks gcc54.
        let exps = [
            stored("gcc48", 1, "vm_insns", "sandy", &runs(1.0)),
            stored("gcc48", 1, "vm_insns", "haswell", &runs(0.8)),
            stored("gcc48", 1, "vm_insns", "skylake", &runs(0.7)),
            stored("gcc54", 2, "vm_insns", "sandy", &runs(1.1)),
            stored("gcc54", 2, "vm_insns", "haswell", &runs(0.8)),
        ];
        let m = matrix(&exps.iter().collect::<Vec<_>>(), MetricChoice::Asked("wall_s"), "gcc48", "gcc54");
        let names: Vec<&str> = m.machines.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["haswell", "sandy", "skylake"]);
        let row = &m.rows[0];
        let (haswell, sandy) = (row.cells[0].as_ref().unwrap(), row.cells[1].as_ref().unwrap());
        assert!((sandy.ratio - 1.1).abs() < 1e-9 && sandy.verdict == Verdict::Slower, "{sandy:?}");
        // One session each: equal medians, but two sessions differ by the machine's
        // session noise (the prior, ±1 %), so no interval fits inside ±1 %.
        assert!((haswell.ratio - 1.0).abs() < 1e-9 && haswell.verdict == Verdict::Inconclusive, "{haswell:?}");
        assert!(haswell.ci_low < 0.99 && haswell.ci_high > 1.01, "{haswell:?}");
        assert_eq!(row.cells[2], None);
    }
}
