//! Counting over a stretch of time rather than per measured run, as `perf stat -a`,
//! `-p PID`, `--per-thread` and `-I MS` do: counters opened on every CPU, on the threads
//! of running processes, or on one command, read at every interval (as deltas) and at
//! the end (as totals).

use super::counters::{add_derived, Counting, OpenSet, Target};
use perflab_model::{CounterReading, ExitInfo};
use perflab_sys::spawn::process::{self, Environment, Output, Prepared};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why live counting (`stat -a/-p/-I`) could not start or finish.
#[derive(Debug, Error)]
pub enum LiveError {
    /// `-p` names a process that does not exist or is not visible.
    #[error("process {0} does not exist (or is not visible to perflab)")]
    NoSuchProcess(libc::pid_t),
    /// The command could not be started.
    #[error("cannot start `{command}`: {why}")]
    Start {
        /// The command.
        command: String,
        /// Why, one line.
        why: String,
    },
    /// The command could not be prepared to run.
    #[error("cannot start `{command}`: {source}")]
    Prepare {
        /// The command.
        command: String,
        /// Why.
        #[source]
        source: crate::executor::error::PrepareError,
    },
    /// Waiting for the command failed (the error, one line).
    #[error("waiting for the command failed: {0}")]
    Wait(String),
    /// The command's program (not found, not executable).
    #[error(transparent)]
    Program(#[from] crate::plan::error::CommandError),
}

/// Whose events are counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whom {
    /// Every task on every online CPU (`-a`).
    AllCpus,
    /// The threads of running processes (`-p`), found in /proc when counting starts;
    /// threads they create later are counted with their parent thread.
    Pids(Vec<libc::pid_t>),
    /// Only the command (with `-I` and neither `-a` nor `-p`).
    Command,
}

/// What to count, for how long, and how to show it.
pub struct LiveOptions {
    /// Whose events are counted.
    pub whom: Whom,
    /// The command whose run is the counting period (perf's `sleep 5` idiom); None: until
    /// the processes exit or Ctrl-C.
    pub command: Option<Vec<String>>,
    /// One row per thread (`--per-thread`, with `-p`) instead of their sum.
    pub per_thread: bool,
    /// `-I`: print the counts every interval; None: once at the end.
    pub interval: Option<Duration>,
}

/// Counts of one row: all CPUs, all threads, or one thread (`comm-tid`, as perf names it).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `all CPUs`, `all threads` or the thread's `comm-tid`.
    pub label: String,
    /// True for a `--per-thread` row.
    pub thread: bool,
    /// The counts, by metric name.
    pub counters: BTreeMap<String, CounterReading>,
}

/// One `-I` interval: the counts since the previous one.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalCounts {
    /// Seconds since counting started, at the interval's end.
    pub at_s: f64,
    /// One row per thread with `--per-thread`, else one.
    pub rows: Vec<Row>,
}

/// The whole counting period.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveReport {
    /// Seconds counted.
    pub elapsed_s: f64,
    /// One row per thread with `--per-thread`, else one.
    pub rows: Vec<Row>,
    /// How the command ended, when there was one.
    pub exit: Option<ExitInfo>,
    /// True when Ctrl-C ended the counting.
    pub interrupted: bool,
}

struct Group {
    label: String,
    thread: bool,
    sets: Vec<OpenSet>,
}

/// Threads of `pid` as (tid, comm).
fn threads(pid: libc::pid_t) -> Result<Vec<(libc::pid_t, String)>, LiveError> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|_| LiveError::NoSuchProcess(pid))?;
    let mut out: Vec<(libc::pid_t, String)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .map(|tid: libc::pid_t| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap_or_default();
            (tid, comm.trim().to_string())
        })
        .collect();
    out.sort();
    Ok(out)
}

fn alive(pid: libc::pid_t) -> bool {
    // A zombie still has /proc/PID; its state says it is gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// Count as `options` say; `on_interval` receives every `-I` interval as it ends.
pub fn count(
    counting: &Counting,
    options: &LiveOptions,
    on_interval: &mut dyn FnMut(&IntervalCounts),
) -> Result<LiveReport, LiveError> {
    let interrupt = perflab_sys::interrupt::watcher();
    let mut groups: Vec<Group> = Vec::new();
    match &options.whom {
        Whom::AllCpus => groups.push(Group {
            label: "all CPUs".into(),
            thread: false,
            sets: perflab_sys::machine::online_cpu_ids()
                .into_iter()
                .map(|cpu| counting.open(Target::Cpu(cpu)))
                .collect(),
        }),
        Whom::Pids(pids) => {
            for &pid in pids {
                for (tid, comm) in threads(pid)? {
                    let set = counting.open(Target::Attach(tid));
                    if options.per_thread {
                        groups.push(Group { label: format!("{comm}-{tid}"), thread: true, sets: vec![set] });
                    } else {
                        match groups.first_mut() {
                            Some(g) => g.sets.push(set),
                            None => groups.push(Group { label: "all threads".into(), thread: false, sets: vec![set] }),
                        }
                    }
                }
            }
        }
        Whom::Command => {}
    }
    let started = Instant::now();
    let mut child = match &options.command {
        Some(argv) => {
            let program = perflab_sys::command::resolve_program(&argv[0])?;
            let prepared = Prepared::new(&program, argv, Output::Inherit)
                .map_err(|source| LiveError::Prepare { command: argv.join(" "), source })?;
            let mut opened: Option<OpenSet> = None;
            let mut gate = |pid: libc::pid_t| -> anyhow::Result<()> {
                if options.whom == Whom::Command {
                    opened = Some(counting.open(Target::Exec(pid)));
                }
                Ok(())
            };
            let child = process::start(&prepared, &Environment::inherited(), Some(&mut gate))
                .map_err(|e| LiveError::Start { command: argv.join(" "), why: e.to_string() })?;
            if let Some(set) = opened {
                groups.push(Group { label: argv.join(" "), thread: false, sets: vec![set] });
            }
            Some(child)
        }
        None => None,
    };
    let mut previous: Vec<BTreeMap<String, CounterReading>> = vec![BTreeMap::new(); groups.len()];
    let tick = options.interval.unwrap_or(Duration::from_millis(50));
    let mut next_interval = started + tick;
    let pids = match &options.whom {
        Whom::Pids(p) => p.clone(),
        _ => Vec::new(),
    };
    let mut interrupted = false;
    loop {
        let now = Instant::now();
        let wait = next_interval.saturating_duration_since(now).min(Duration::from_millis(50));
        let ended = match child.as_mut() {
            Some(c) => {
                let fd = c.pidfd().map_err(|e| LiveError::Wait(e.to_string()))?;
                poll_readable(&[fd, interrupt.fd()], wait);
                !alive(c.pid)
            }
            None => {
                poll_readable(&[interrupt.fd()], wait);
                !pids.is_empty() && pids.iter().all(|p| !alive(*p))
            }
        };
        if interrupt.requested() {
            interrupted = true;
        }
        if options.interval.is_some() && (Instant::now() >= next_interval || ended || interrupted) {
            let rows = read_rows(counting, &mut groups);
            let deltas = rows
                .iter()
                .zip(previous.iter())
                .map(|(row, before)| Row {
                    label: row.label.clone(),
                    thread: row.thread,
                    counters: delta(&row.counters, before),
                })
                .collect();
            on_interval(&IntervalCounts { at_s: started.elapsed().as_secs_f64(), rows: deltas });
            previous = rows.into_iter().map(|r| r.counters).collect();
            next_interval += tick;
        }
        if ended || interrupted {
            break;
        }
    }
    let rows = read_rows(counting, &mut groups);
    let elapsed_s = started.elapsed().as_secs_f64();
    let exit = match child {
        Some(c) => {
            let outcome = c.wait(None, interrupt).map_err(|e| LiveError::Wait(e.to_string()))?;
            Some(outcome.run().exit)
        }
        None => None,
    };
    Ok(LiveReport { elapsed_s, rows, exit, interrupted })
}

fn read_rows(counting: &Counting, groups: &mut [Group]) -> Vec<Row> {
    groups
        .iter_mut()
        .map(|g| {
            let mut counters = counting.read_sum(&mut g.sets);
            add_derived(&mut counters);
            Row { label: g.label.clone(), thread: g.thread, counters }
        })
        .collect()
}

/// What was counted since `before` (derived metrics recomputed from the deltas).
fn delta(
    now: &BTreeMap<String, CounterReading>,
    before: &BTreeMap<String, CounterReading>,
) -> BTreeMap<String, CounterReading> {
    let mut out: BTreeMap<String, CounterReading> = now
        .iter()
        .filter(|(name, _)| !super::counters::is_derived(name))
        .map(|(name, reading)| {
            let previous = before.get(name).and_then(|r| r.value).unwrap_or(0.0);
            let value = match reading.value {
                Some(v) => CounterReading::value((v - previous).max(0.0), reading.scaled),
                None => reading.clone(),
            };
            (name.clone(), value)
        })
        .collect();
    add_derived(&mut out);
    out
}

/// Sleep until one of `fds` is readable or `timeout` passes.
fn poll_readable(fds: &[std::os::fd::RawFd], timeout: Duration) {
    let mut polls: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: `polls` is a valid array of pollfd for the duration of the call.
    unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, timeout.as_millis() as i32) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_sys::perf::counters::{parse_events, PerfOpener, Scope};

    fn counting(events: &str) -> Counting {
        Counting::new(parse_events(&[events.to_string()]).unwrap(), Scope::Auto, Box::new(PerfOpener))
    }

    #[test]
    fn deltas_subtract_the_previous_reading_and_rederive() {
        let mut before = BTreeMap::new();
        before.insert("instructions".to_string(), CounterReading::value(100.0, false));
        before.insert("cycles".to_string(), CounterReading::value(100.0, false));
        let mut now = BTreeMap::new();
        now.insert("instructions".to_string(), CounterReading::value(400.0, false));
        now.insert("cycles".to_string(), CounterReading::value(300.0, false));
        now.insert("ipc".to_string(), CounterReading::value(4.0 / 3.0, false));
        let d = delta(&now, &before);
        assert_eq!(d["instructions"].value, Some(300.0));
        assert_eq!(d["ipc"].value, Some(1.5));
    }

    /// Software counting of a command with intervals: the intervals add up to the total.
    #[test]
    fn intervals_of_a_command_add_up_to_its_total() {
        let c = counting("task-clock,page-faults");
        let options = LiveOptions {
            whom: Whom::Command,
            command: Some(vec!["/bin/sh".into(), "-c".into(), "for i in 1 2 3; do sleep 0.05; done".into()]),
            per_thread: false,
            interval: Some(Duration::from_millis(40)),
        };
        let mut intervals = Vec::new();
        let report = count(&c, &options, &mut |i| intervals.push(i.clone())).unwrap();
        assert_eq!(report.exit.unwrap().exit_code, Some(0));
        assert!(intervals.len() >= 2, "{}", intervals.len());
        let summed: f64 = intervals.iter().map(|i| i.rows[0].counters["page-faults"].value.unwrap()).sum();
        assert_eq!(Some(summed), report.rows[0].counters["page-faults"].value);
        assert!(intervals.windows(2).all(|w| w[0].at_s < w[1].at_s));
    }

    /// `-p` on a running process, one row per thread; counting ends when it exits.
    #[test]
    fn attaching_counts_a_running_process_until_it_exits() {
        let mut sleeper = std::process::Command::new("/bin/sh")
            .args(["-c", "sleep 0.3; i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let pid = sleeper.id() as libc::pid_t;
        let c = counting("task-clock");
        let options = LiveOptions { whom: Whom::Pids(vec![pid]), command: None, per_thread: true, interval: None };
        let handle = std::thread::spawn(move || sleeper.wait());
        let report = count(&c, &options, &mut |_| {}).unwrap();
        handle.join().unwrap().unwrap();
        assert_eq!(report.rows.len(), 1, "one thread");
        assert!(report.rows[0].label.ends_with(&format!("-{pid}")), "{}", report.rows[0].label);
        assert!(report.rows[0].counters["task-clock"].value.unwrap() > 0.0);
        assert!(count(&c, &LiveOptions { whom: Whom::Pids(vec![-7]), ..options }, &mut |_| {}).is_err());
    }
}
