//! How long a run was ready to run but waited for a CPU — the share of its wall time a
//! busy machine's neighbours took — and the run's time with that share removed.
//!
//! Two kernel sources, both read by the harness without privileges beyond its own
//! processes where possible:
//!
//! * the main thread's `/proc/PID/schedstat` (time on CPU, time waiting on a run queue),
//!   read when the command has exited but is not yet reaped: exact, in nanoseconds;
//! * the CPU pressure (`cpu.pressure`, "some" total) of a cgroup v2 holding nothing but
//!   the run's process tree: it covers every thread and child process, as the wall time
//!   during which at least one of them waited, but the kernel averages it over CPUs
//!   (within a few milliseconds per run here). Creating that cgroup needs root or a
//!   delegated cgroup; without one, runs with other threads or processes get no value.
//!
//! A run whose CPU time is all its main thread's (a single-threaded program: rusage's
//! user + system equals the thread's own on-CPU time) takes the exact figure; other runs
//! take the cgroup's.

use crate::model::{metric, CounterReading, Run};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A task's scheduler statistics (`/proc/PID/schedstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Schedstat {
    /// Time on a CPU.
    pub on_cpu: Duration,
    /// Time runnable but waiting on a run queue.
    pub waited: Duration,
}

/// The scheduler statistics of task `pid` (a zombie still has them).
pub fn schedstat(pid: libc::pid_t) -> io::Result<Schedstat> {
    parse_schedstat(&std::fs::read_to_string(format!("/proc/{pid}/schedstat"))?)
}

/// How long the calling thread has waited on a run queue so far.
pub fn own_thread_waited() -> Option<Duration> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok().and_then(|t| parse_schedstat(&t).ok()).map(|s| s.waited)
}

fn parse_schedstat(text: &str) -> io::Result<Schedstat> {
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>());
    match (fields.next(), fields.next()) {
        (Some(Ok(on_cpu)), Some(Ok(waited))) => {
            Ok(Schedstat { on_cpu: Duration::from_nanos(on_cpu), waited: Duration::from_nanos(waited) })
        }
        _ => Err(io::Error::new(io::ErrorKind::InvalidData, format!("unexpected schedstat `{}`", text.trim()))),
    }
}

/// A cgroup v2 of our own, with CPU pressure accounting, that the process creating it
/// has moved into: everything it starts afterwards is inside.
#[derive(Debug)]
pub struct PressureGroup {
    dir: PathBuf,
}

impl PressureGroup {
    /// Create `perflab-PID` below this process's cgroup v2 and move into it.
    pub fn join() -> Result<PressureGroup, String> {
        let mount = cgroup2_mount().ok_or("no cgroup v2 hierarchy is mounted")?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|t| t.lines().find_map(|l| l.strip_prefix("0::").map(str::to_string)))
            .ok_or("this process is in no cgroup v2")?;
        let parent = mount.join(own.trim_start_matches('/'));
        let dir = parent.join(format!("perflab-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create a cgroup in {}: {e}", parent.display()))?;
        let group = PressureGroup { dir };
        if let Err(e) = std::fs::write(group.dir.join("cgroup.procs"), "0") {
            group.remove();
            return Err(format!("cannot move into a new cgroup: {e}"));
        }
        if let Err(e) = group.stalled() {
            let why = format!("no CPU pressure accounting in {}: {e}", group.dir.display());
            group.leave();
            return Err(why);
        }
        Ok(group)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Total time any task of the group waited for a CPU since it was created.
    pub fn stalled(&self) -> io::Result<Duration> {
        let text = std::fs::read_to_string(self.dir.join("cpu.pressure"))?;
        text.lines()
            .find(|l| l.starts_with("some "))
            .and_then(|l| l.split_whitespace().find_map(|f| f.strip_prefix("total=")))
            .and_then(|t| t.parse::<u64>().ok())
            .map(Duration::from_micros)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no `some total=` in cpu.pressure"))
    }

    /// Move back to the cgroup it was created in and remove it (a cgroup with a
    /// process in it cannot be removed).
    pub fn leave(self) {
        if let Some(parent) = self.dir.parent() {
            let _ = std::fs::write(parent.join("cgroup.procs"), "0");
        }
        self.remove();
    }

    /// Remove the group; it must be empty by now.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn cgroup2_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // Fields: id parent major:minor root mount-point options [optional...] - fstype source super-options
    text.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mount_point = left.split_whitespace().nth(4)?;
        (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(mount_point))
    })
}

/// CPU time a run may have beyond its main thread's and still count as single-threaded:
/// rusage reports microseconds and rounds user/system separately.
fn single_task_slack(cpu: Duration) -> Duration {
    Duration::from_micros(500).max(cpu / 100)
}

/// Add `runq_wait_s` and `uncontended_s` to `run` from the main thread's statistics
/// (`main_thread`) plus the harness's own wait in the timed window (`harness_waited`)
/// or, for a run with other tasks that had a cgroup of its own (holding the harness
/// too), its CPU stall (`tree_stall`: the value, or why there is none).
pub fn add_readings(
    run: &mut Run,
    main_thread: Option<Schedstat>,
    harness_waited: Option<Duration>,
    tree_stall: Result<Duration, &str>,
) {
    let cpu = Duration::from_secs_f64((run.user_s + run.sys_s).max(0.0));
    let waited = match main_thread {
        None => Err("/proc/PID/schedstat was not readable (a kernel without CONFIG_SCHED_INFO?)".to_string()),
        Some(main) if cpu <= main.on_cpu + single_task_slack(cpu) => {
            Ok(main.waited + harness_waited.unwrap_or_default())
        }
        Some(main) => tree_stall.map_err(|why| {
            format!(
                "the command ran other threads or processes ({:.0} % of its CPU time), whose run-queue wait is \
                 only visible through a cgroup of its own: {why}",
                100.0 * (1.0 - main.on_cpu.as_secs_f64() / cpu.as_secs_f64().max(1e-12))
            )
        }),
    };
    let (wait, uncontended) = match waited {
        Ok(w) => {
            let w = w.as_secs_f64();
            (CounterReading::value(w, false), CounterReading::value((run.wall_s - w).max(0.0), false))
        }
        Err(why) => (CounterReading::unsupported(why.clone()), CounterReading::unsupported(why)),
    };
    run.counters.insert(metric::RUNQ_WAIT.to_string(), wait);
    run.counters.insert(metric::UNCONTENDED.to_string(), uncontended);
}

/// The share of wall time the runs spent waiting for a CPU (runs without a reading
/// are left out); `None` when no run has one.
pub fn busy_share<'a>(runs: impl IntoIterator<Item = &'a Run>) -> Option<f64> {
    let (mut waited, mut wall) = (0.0, 0.0);
    for run in runs {
        if let Some(w) = run.metric(metric::RUNQ_WAIT) {
            waited += w;
            wall += run.wall_s;
        }
    }
    (wall > 0.0).then(|| waited / wall)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(wall_s: f64, cpu_s: f64) -> Run {
        Run { wall_s, user_s: cpu_s, ..Default::default() }
    }

    fn stat(on_cpu_ms: u64, waited_ms: u64) -> Option<Schedstat> {
        Some(Schedstat { on_cpu: Duration::from_millis(on_cpu_ms), waited: Duration::from_millis(waited_ms) })
    }

    #[test]
    fn parses_the_kernels_three_fields() {
        let s = parse_schedstat("137588 3807589 2\n").unwrap();
        assert_eq!((s.on_cpu, s.waited), (Duration::from_nanos(137588), Duration::from_nanos(3807589)));
        assert!(parse_schedstat("garbage").is_err());
    }

    #[test]
    fn a_single_threaded_run_takes_its_main_threads_wait() {
        let mut r = run(0.134, 0.067);
        add_readings(&mut r, stat(67, 63), Some(Duration::from_millis(3)), Err("no cgroup"));
        assert_eq!(r.metric(metric::RUNQ_WAIT), Some(0.066), "the command's wait and the harness's");
        assert!((r.metric(metric::UNCONTENDED).unwrap() - 0.068).abs() < 1e-12);
    }

    #[test]
    fn a_run_with_other_tasks_needs_the_cgroup_and_says_why_without_one() {
        let mut r = run(0.2, 0.15);
        add_readings(&mut r, stat(50, 10), None, Ok(Duration::from_millis(40)));
        assert_eq!(r.metric(metric::RUNQ_WAIT), Some(0.04), "the tree's stall, not the main thread's");
        let mut r = run(0.2, 0.15);
        add_readings(&mut r, stat(50, 10), None, Err("cannot create a cgroup: permission denied"));
        let reading = &r.counters[metric::RUNQ_WAIT];
        assert!(!reading.supported && reading.value.is_none());
        let why = reading.reason.as_deref().unwrap();
        assert!(why.contains("67 % of its CPU time") && why.contains("permission denied"), "{why}");
        assert_eq!(r.metric(metric::UNCONTENDED), None, "never a guess");
    }

    #[test]
    fn busy_share_weighs_waits_by_wall_time() {
        let mut a = run(0.1, 0.05);
        add_readings(&mut a, stat(50, 50), None, Err(""));
        let mut b = run(0.1, 0.1);
        add_readings(&mut b, stat(100, 0), None, Err(""));
        assert_eq!(busy_share([&a, &b]), Some(0.25));
        assert_eq!(busy_share([&run(1.0, 1.0)]), None);
    }
}
