//! Metric names measured by the harness for every run, and the one registry of what
//! every metric is: its unit, which way is better, and what it measures. Counter metrics
//! use perf's event names (`instructions`, `task-clock`, ...) or the instruction-mode
//! names; metrics a command reports itself are known by the conventions of [`info`].

use serde::{Deserialize, Serialize};

/// Wall-clock time of a run, seconds.
pub const WALL: &str = "wall_s";
/// CPU time (user + system) of a run, seconds.
pub const CPU: &str = "cpu_s";
/// CPU time in user mode, seconds.
pub const USER: &str = "user_s";
/// CPU time in the kernel, seconds.
pub const SYS: &str = "sys_s";
/// Peak resident set size, KiB.
pub const MAX_RSS: &str = "max_rss_kib";
/// Page faults served without I/O.
pub const MINOR_FAULTS: &str = "minor_faults";
/// Page faults that needed I/O.
pub const MAJOR_FAULTS: &str = "major_faults";
/// Context switches because the run waited.
pub const VOLUNTARY_CS: &str = "voluntary_cs";
/// Context switches because the run was preempted.
pub const INVOLUNTARY_CS: &str = "involuntary_cs";
/// Time the run was ready to run but waited for a CPU (see `contention`): behind
/// other programs, or behind its own tasks.
pub const RUNQ_WAIT: &str = "runq_wait_s";
/// The part of that wait a task outside the benchmark caused: a neighbour held the CPU.
pub const NEIGHBOUR_WAIT: &str = "neighbour_wait_s";
/// Wall time minus the neighbours' wait: the run with the neighbours' share removed.
pub const UNCONTENDED: &str = "uncontended_s";

/// Metrics compared by default, in display order.
pub const COMPARED: [&str; 3] = [WALL, CPU, MAX_RSS];
/// Every harness metric kept in a field of `Run`, in display order.
pub const ALL: [&str; 9] = [WALL, CPU, USER, SYS, MAX_RSS, MINOR_FAULTS, MAJOR_FAULTS, VOLUNTARY_CS, INVOLUNTARY_CS];
/// Harness metrics kept in `Run::counters` (a reading may be unsupported, with the
/// reason): how much a busy machine delayed each run.
pub const CONTENTION: [&str; 3] = [RUNQ_WAIT, NEIGHBOUR_WAIT, UNCONTENDED];

/// Where a metric's values come from: the one answer to "is this a harness metric?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Measured by the harness for every run and kept in a field of `Run` ([`ALL`]).
    Field,
    /// The harness's reading of how a busy machine delayed a run, kept in
    /// `Run::counters` ([`CONTENTION`]).
    Contention,
    /// Not the harness's own: a counter, a probe's count, a number the command printed.
    Measured,
}

impl Kind {
    /// Measured by perflab itself for every run, whatever the plan asks.
    pub fn is_harness(self) -> bool {
        self != Kind::Measured
    }
}

/// Which [`Kind`] of metric `name` is.
pub fn kind(name: &str) -> Kind {
    if ALL.contains(&name) {
        Kind::Field
    } else if CONTENTION.contains(&name) {
        Kind::Contention
    } else {
        Kind::Measured
    }
}

/// Which way a metric improves. Ratios are always candidate / baseline; this says
/// whether a ratio above 1 is worse (`lower`: times, counts) or better (`higher`:
/// throughput).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Lower is better (times, counts): a ratio above 1 is a regression.
    #[default]
    Lower,
    /// Higher is better (throughput): a ratio above 1 is an improvement.
    Higher,
}

impl Better {
    /// True for [`Better::Lower`].
    pub fn is_lower(&self) -> bool {
        *self == Better::Lower
    }
}

/// What a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// Unit shown next to its values (`s`, `ns`, `ms`, `KiB`, `%`, `tps`, `/s`, or none).
    pub unit: &'static str,
    /// Which way it improves.
    pub better: Better,
    /// One line saying what it measures.
    pub description: &'static str,
}

impl Info {
    /// True for a duration (its values are formatted as times, its changes as
    /// "faster"/"slower").
    pub fn is_time(&self) -> bool {
        to_seconds(self.unit).is_some()
    }
}

/// Seconds per unit for the time units.
pub fn to_seconds(unit: &str) -> Option<f64> {
    match unit {
        "s" => Some(1.0),
        "ms" => Some(1e-3),
        "µs" => Some(1e-6),
        "ns" => Some(1e-9),
        _ => None,
    }
}

/// What `name` is. Harness metrics, counters and instruction-mode counts are listed;
/// any other name is a metric a command reported itself, known by its name's ending:
/// `_s`, `_ms`, `_us`, `_ns` are times, `_per_s`, `tps` and `qps` rates (higher is
/// better); everything else is a lower-is-better number. An experiment can turn the
/// direction around (`Settings::metric_info`).
pub fn info(name: &str) -> Info {
    let lower = |unit, description| Info { unit, better: Better::Lower, description };
    let higher = |unit, description| Info { unit, better: Better::Higher, description };
    match name {
        WALL => lower("s", "wall-clock time of the run, from exec to exit"),
        CPU => lower("s", "user + system CPU time of the run"),
        USER => lower("s", "user CPU time of the run"),
        SYS => lower("s", "system CPU time of the run"),
        MAX_RSS => lower("KiB", "peak resident set size of the run's largest process (as GNU time reports it)"),
        MINOR_FAULTS => lower("", "minor page faults"),
        MAJOR_FAULTS => lower("", "major page faults"),
        VOLUNTARY_CS => lower("", "voluntary context switches (waits)"),
        INVOLUNTARY_CS => lower("", "involuntary context switches (preemptions)"),
        RUNQ_WAIT => lower("s", "time the run was ready to run but waited for a CPU (behind anything)"),
        NEIGHBOUR_WAIT => lower("s", "the part of the run-queue wait a task outside the benchmark caused"),
        UNCONTENDED => lower("s", "wall time minus the neighbours' wait: what the run took without them"),
        "task-clock" | "cpu-clock" => lower("ns", "CPU time counted by the kernel"),
        "estimated_cycles" => lower(
            "",
            "L1 hits + 5·LL hits + 35·RAM accesses + 15·mispredicted branches in cachegrind's simulation: a model, not a measurement",
        ),
        "branch-miss-rate" => lower("%", "branch misses per branch"),
        "cache-miss-rate" => lower("%", "cache misses per cache reference"),
        "L1-dcache-miss-rate" => lower("%", "L1 data cache load misses per load"),
        "LLC-miss-rate" => lower("%", "last-level cache load misses per load"),
        "ipc" => higher("", "instructions per cycle"),
        _ if name.starts_with("uprobe:") || name.starts_with("uretprobe:") => lower(
            "",
            "calls of a function, counted by a uprobe (each call traps into the kernel: times measured beside it include that cost)",
        ),
        // A group of iterations (`iter_ns[first]`) reads like its metric.
        _ if super::ITERATION_GROUPS.iter().any(|g| name.ends_with(&format!("[{g}]"))) => {
            info(&name[..name.rfind('[').expect("a group suffix")])
        }
        // perf's modifiers (`cycles:u`, `ipc:u`) keep the event's unit and direction.
        _ => match name.rsplit_once(':') {
            Some((base, mods))
                if !base.contains(':') && !mods.is_empty() && mods.chars().all(|c| "ukhp".contains(c)) =>
            {
                info(base)
            }
            _ => self_reported(name),
        },
    }
}

fn self_reported(name: &str) -> Info {
    const DESCRIPTION: &str = "reported by the command itself";
    let rate = Info { unit: "/s", better: Better::Higher, description: DESCRIPTION };
    let time = |unit| Info { unit, better: Better::Lower, description: DESCRIPTION };
    let lower = name.to_ascii_lowercase();
    if lower.ends_with("_per_s") {
        rate
    } else if lower == "tps" || lower == "qps" || lower.ends_with("_tps") || lower.ends_with("_qps") {
        Info { unit: if lower.ends_with("qps") { "qps" } else { "tps" }, ..rate }
    } else if lower.ends_with("_ns") {
        time("ns")
    } else if lower.ends_with("_us") {
        time("µs")
    } else if lower.ends_with("_ms") {
        time("ms")
    } else if lower.ends_with("_s") {
        time("s")
    } else {
        Info { unit: "", better: Better::Lower, description: "a count: a counter, or a number the command printed" }
    }
}

/// Unit shown next to a metric's values.
pub fn unit(name: &str) -> &'static str {
    info(name).unit
}
