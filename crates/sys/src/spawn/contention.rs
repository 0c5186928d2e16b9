//! How long a run was ready to run but waited for a CPU, how much of that a task
//! outside the benchmark caused — the share of its wall time a busy machine's neighbours
//! took — and the run's time with that share removed.
//!
//! Two kernel sources of the wait, both read by the harness without privileges beyond
//! its own processes where possible:
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
//! user + system equals the thread's own on-CPU time) takes the exact figure, and all of
//! its wait is a neighbour's: no other task of the benchmark ran. Other runs take the
//! cgroup's, which also holds the benchmark's tasks waiting for *each other* (a pipe
//! ping-pong pinned to one CPU takes turns by design). Only a task outside the benchmark
//! can make it wait for a neighbour, and only while it runs on a CPU the benchmark may
//! use: so the neighbours' wait is at most the CPU time others got on the benchmark's
//! CPUs during the run (per-CPU busy time of the whole machine minus the cgroup's own),
//! averaged over those CPUs as the pressure figure is. The neighbours' wait of such a run
//! is the smaller of the two. Per-CPU busy time comes from the root `cpuacct` cgroup
//! (v1, nanoseconds), else `/proc/schedstat` (nanoseconds, needs CONFIG_SCHEDSTATS),
//! else `/proc/stat` (clock ticks: only for runs of at least `COARSE_TICKS` ticks);
//! without any, such runs get no value, with the reason.

use crate::spawn::error::{CgroupError, NoCpuTime};
use perflab_model::{metric, CounterReading, Run};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `environment` fact recording the share of an experiment's wall time its runs
/// waited for a CPU a neighbour held (written when the experiment finishes, read by
/// history and reports without the runs).
pub const BUSY_FACT: &str = "busy_share";

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
pub(crate) fn own_thread_waited() -> Option<Duration> {
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
    pub fn join() -> Result<PressureGroup, CgroupError> {
        let mount = cgroup2_mount().ok_or(CgroupError::NoHierarchy)?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|t| t.lines().find_map(|l| l.strip_prefix("0::").map(str::to_string)))
            .ok_or(CgroupError::NotInOne)?;
        let parent = mount.join(own.trim_start_matches('/'));
        let dir = parent.join(format!("perflab-{}", std::process::id()));
        if let Err(source) = std::fs::create_dir(&dir) {
            return Err(CgroupError::Create { parent, source });
        }
        let group = PressureGroup { dir };
        if let Err(e) = std::fs::write(group.dir.join("cgroup.procs"), "0") {
            group.remove();
            return Err(CgroupError::MoveIn(e));
        }
        if let Err(source) = group.stalled() {
            let dir = group.dir.clone();
            group.leave();
            return Err(CgroupError::NoPressure { dir, source });
        }
        Ok(group)
    }

    /// The group's directory in the cgroup v2 hierarchy.
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

    /// CPU time the group's tasks used since it was created (`cpu.stat`, a core file
    /// of every cgroup v2).
    pub(crate) fn cpu_used(&self) -> io::Result<Duration> {
        let text = std::fs::read_to_string(self.dir.join("cpu.stat"))?;
        text.lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_micros)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no `usage_usec` in cpu.stat"))
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

/// What a run's process tree did in its own cgroup during the run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TreeReading {
    /// Wall time during which at least one of its tasks waited for a CPU (the pressure
    /// figure, averaged over CPUs by the kernel).
    pub stalled: Duration,
    /// The CPU time tasks outside the cgroup got on the CPUs the benchmark may use,
    /// averaged over those CPUs: the most a neighbour can have delayed it; or why it
    /// is not known.
    pub(crate) others_on_its_cpus: Result<Duration, String>,
}

/// Add `runq_wait_s`, `neighbour_wait_s` and `uncontended_s` to `run` from the main
/// thread's statistics (`main_thread`) plus the harness's own wait in the timed window
/// (`harness_waited`) or, for a run with other tasks that had a cgroup of its own
/// (holding the harness too), the cgroup's reading (`tree`: the value, or why there is none).
pub(crate) fn add_readings(
    run: &mut Run,
    main_thread: Option<Schedstat>,
    harness_waited: Option<Duration>,
    tree: Result<TreeReading, &str>,
) {
    let cpu = Duration::from_secs_f64((run.user_s + run.sys_s).max(0.0));
    // (all of the wait, the neighbours' part of it)
    let waited: Result<(Duration, Result<Duration, String>), String> = match main_thread {
        None => Err("/proc/PID/schedstat was not readable (a kernel without CONFIG_SCHED_INFO?)".to_string()),
        Some(main) if cpu <= main.on_cpu + single_task_slack(cpu) => {
            // One task: nothing of the benchmark's own can have held its CPU. Nor can it
            // have waited longer than it was not running: read before and after the timed
            // window, the statistics can hold a few ms of waiting outside it (beside a
            // burner per CPU, runs of a 1 ms program read more wait than their wall time).
            let not_running = Duration::from_secs_f64((run.wall_s - cpu.as_secs_f64()).max(0.0));
            let all = (main.waited + harness_waited.unwrap_or_default()).min(not_running);
            Ok((all, Ok(all)))
        }
        Some(main) => match tree {
            Ok(tree) => {
                let neighbours = tree.others_on_its_cpus.map(|others| tree.stalled.min(others)).map_err(|why| {
                    format!("its tasks also wait for each other, and a neighbour's share cannot be told apart: {why}")
                });
                Ok((tree.stalled, neighbours))
            }
            Err(why) => Err(format!(
                "the command ran other threads or processes ({:.0} % of its CPU time), whose run-queue wait is \
                 only visible through a cgroup of its own: {why}",
                100.0 * (1.0 - main.on_cpu.as_secs_f64() / cpu.as_secs_f64().max(1e-12))
            )),
        },
    };
    let (wait, neighbours, uncontended) = match waited {
        Ok((all, Ok(neighbours))) => {
            let n = neighbours.as_secs_f64();
            (
                CounterReading::value(all.as_secs_f64(), false),
                CounterReading::value(n, false),
                CounterReading::value((run.wall_s - n).max(0.0), false),
            )
        }
        Ok((all, Err(why))) => (
            CounterReading::value(all.as_secs_f64(), false),
            CounterReading::unsupported(why.clone()),
            CounterReading::unsupported(why),
        ),
        Err(why) => (
            CounterReading::unsupported(why.clone()),
            CounterReading::unsupported(why.clone()),
            CounterReading::unsupported(why),
        ),
    };
    run.counters.insert(metric::RUNQ_WAIT.to_string(), wait);
    run.counters.insert(metric::NEIGHBOUR_WAIT.to_string(), neighbours);
    run.counters.insert(metric::UNCONTENDED.to_string(), uncontended);
}

/// The share of wall time the runs spent waiting for a CPU a neighbour held (runs
/// without a reading are left out; runs stored before `neighbour_wait_s` existed count
/// their whole run-queue wait); `None` when no run has one.
pub fn busy_share<'a>(runs: impl IntoIterator<Item = &'a Run>) -> Option<f64> {
    let (mut waited, mut wall) = (0.0, 0.0);
    for run in runs {
        if let Some(w) = neighbour_wait(run) {
            waited += w;
            wall += run.wall_s;
        }
    }
    (wall > 0.0).then(|| waited / wall)
}

/// A run's wait behind neighbours: `neighbour_wait_s`, or for a run recorded before it
/// existed (no reading at all) its run-queue wait, which then meant the same.
pub(crate) fn neighbour_wait(run: &Run) -> Option<f64> {
    match run.counters.get(metric::NEIGHBOUR_WAIT) {
        Some(reading) => reading.value,
        None => run.metric(metric::RUNQ_WAIT),
    }
}

/// Runs shorter than this many clock ticks cannot use `/proc/stat`'s per-CPU busy time:
/// its resolution is one tick (10 ms at the usual 100 Hz), an error of a few ticks.
pub(crate) const COARSE_TICKS: f64 = 50.0;

/// Where the machine's per-CPU busy time is read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CpuTimeSource {
    /// `cpuacct.usage_percpu` of the root cpuacct cgroup (v1), ns.
    Cpuacct(PathBuf),
    /// `/proc/schedstat`'s per-CPU run time (field 7 of `cpuN` lines), ns.
    Schedstat,
    /// `/proc/stat`'s per-CPU user + nice + system + irq + softirq, in clock ticks.
    ProcStat { tick: Duration },
}

impl CpuTimeSource {
    /// The most precise source this machine has, or why there is none.
    pub fn detect() -> Result<CpuTimeSource, NoCpuTime> {
        if let Some(root) = cgroup1_root("cpuacct") {
            let path = root.join("cpuacct.usage_percpu");
            if std::fs::read_to_string(&path).is_ok() {
                return Ok(CpuTimeSource::Cpuacct(path));
            }
        }
        if std::fs::read_to_string("/proc/schedstat").is_ok_and(|t| parse_schedstat_cpus(&t).is_some()) {
            return Ok(CpuTimeSource::Schedstat);
        }
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if hz > 0 && std::fs::read_to_string("/proc/stat").is_ok_and(|t| parse_proc_stat(&t).is_some()) {
            return Ok(CpuTimeSource::ProcStat { tick: Duration::from_secs_f64(1.0 / hz as f64) });
        }
        Err(NoCpuTime)
    }

    /// Each CPU's busy time so far (index = CPU number).
    pub fn read(&self) -> io::Result<Vec<Duration>> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "unexpected per-CPU time format");
        match self {
            CpuTimeSource::Cpuacct(path) => std::fs::read_to_string(path)?
                .split_whitespace()
                .map(|f| f.parse::<u64>().map(Duration::from_nanos).map_err(|_| bad()))
                .collect(),
            CpuTimeSource::Schedstat => {
                parse_schedstat_cpus(&std::fs::read_to_string("/proc/schedstat")?).ok_or_else(bad)
            }
            CpuTimeSource::ProcStat { tick } => Ok(parse_proc_stat(&std::fs::read_to_string("/proc/stat")?)
                .ok_or_else(bad)?
                .into_iter()
                .map(|ticks| *tick * ticks as u32)
                .collect()),
        }
    }

    /// Too coarse for a run of `wall`: why, or nothing.
    pub(crate) fn too_coarse_for(&self, wall: Duration) -> Option<String> {
        match self {
            CpuTimeSource::ProcStat { tick } if wall.as_secs_f64() < COARSE_TICKS * tick.as_secs_f64() => Some(format!(
                "per-CPU busy time here is in clock ticks of {:.0} ms (/proc/stat; no cpuacct cgroup or /proc/schedstat), too coarse for a {:.0} ms run",
                tick.as_secs_f64() * 1e3,
                wall.as_secs_f64() * 1e3
            )),
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            CpuTimeSource::Cpuacct(path) => path.display().to_string(),
            CpuTimeSource::Schedstat => "/proc/schedstat".into(),
            CpuTimeSource::ProcStat { .. } => "/proc/stat (clock ticks)".into(),
        }
    }
}

/// CPU time others got on `cpus` between two per-CPU readings, given the cgroup's own
/// CPU time `own` in between, averaged over those CPUs.
pub(crate) fn others_on(cpus: &[usize], before: &[Duration], after: &[Duration], own: Duration) -> Option<Duration> {
    if cpus.is_empty() {
        return None;
    }
    let mut busy = Duration::ZERO;
    for &cpu in cpus {
        busy += after.get(cpu)?.saturating_sub(*before.get(cpu)?);
    }
    Some(busy.saturating_sub(own) / cpus.len() as u32)
}

fn parse_schedstat_cpus(text: &str) -> Option<Vec<Duration>> {
    let cpus: Vec<Duration> = text
        .lines()
        .filter(|l| l.starts_with("cpu"))
        .map(|l| l.split_whitespace().nth(7).and_then(|f| f.parse::<u64>().ok()).map(Duration::from_nanos))
        .collect::<Option<_>>()?;
    (!cpus.is_empty()).then_some(cpus)
}

/// Busy ticks per CPU: user + nice + system + irq + softirq (not idle, iowait or steal).
fn parse_proc_stat(text: &str) -> Option<Vec<u64>> {
    let mut cpus = Vec::new();
    for line in text.lines() {
        // `cpu` alone is the sum over CPUs; `cpuN` is CPU N.
        let Some(rest) = line.strip_prefix("cpu").filter(|r| r.starts_with(|c: char| c.is_ascii_digit())) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let Some(Ok(index)) = fields.next().map(str::parse::<usize>) else { continue };
        let f: Vec<u64> = fields.map(|v| v.parse().ok()).collect::<Option<_>>()?;
        let busy = [0, 1, 2, 5, 6].iter().map(|&i| f.get(i).copied().unwrap_or(0)).sum();
        if cpus.len() <= index {
            cpus.resize(index + 1, 0);
        }
        cpus[index] = busy;
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// The root of the cgroup v1 hierarchy with `controller` (its mount point).
fn cgroup1_root(controller: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut left = left.split_whitespace();
        let root = left.nth(3)?;
        let mount_point = left.next()?;
        let mut right = right.split_whitespace();
        let (fstype, options) = (right.next()?, right.nth(1)?);
        (fstype == "cgroup" && root == "/" && options.split(',').any(|o| o == controller))
            .then(|| PathBuf::from(mount_point))
    })
}

/// The CPUs task `pid` may run on (a zombie still has its mask).
pub fn allowed_cpus(pid: libc::pid_t) -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some((0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
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
    fn a_single_threaded_run_takes_its_main_threads_wait_all_of_it_a_neighbours() {
        let mut r = run(0.134, 0.067);
        add_readings(&mut r, stat(67, 63), Some(Duration::from_millis(3)), Err("no cgroup"));
        assert_eq!(r.metric(metric::RUNQ_WAIT), Some(0.066), "the command's wait and the harness's");
        assert_eq!(r.metric(metric::NEIGHBOUR_WAIT), Some(0.066), "no other task of the benchmark ran");
        assert!((r.metric(metric::UNCONTENDED).unwrap() - 0.068).abs() < 1e-12);
    }

    fn tree(stalled_ms: u64, others_ms: Result<u64, &str>) -> Result<TreeReading, &'static str> {
        Ok(TreeReading {
            stalled: Duration::from_millis(stalled_ms),
            others_on_its_cpus: others_ms.map(Duration::from_millis).map_err(str::to_string),
        })
    }

    #[test]
    fn a_run_with_other_tasks_needs_the_cgroup_and_says_why_without_one() {
        let mut r = run(0.2, 0.15);
        add_readings(&mut r, stat(50, 10), None, tree(40, Ok(100)));
        assert_eq!(r.metric(metric::RUNQ_WAIT), Some(0.04), "the tree's stall, not the main thread's");
        assert_eq!(r.metric(metric::NEIGHBOUR_WAIT), Some(0.04), "others ran long enough to cause all of it");
        let mut r = run(0.2, 0.15);
        add_readings(&mut r, stat(50, 10), None, Err("cannot create a cgroup: permission denied"));
        let reading = &r.counters[metric::RUNQ_WAIT];
        assert!(!reading.supported && reading.value.is_none());
        let why = reading.reason.as_deref().unwrap();
        assert!(why.contains("67 % of its CPU time") && why.contains("permission denied"), "{why}");
        assert_eq!(r.metric(metric::UNCONTENDED), None, "never a guess");
    }

    #[test]
    fn tasks_waiting_for_each_other_are_not_a_neighbours_wait() {
        // A pinned ping-pong alone: 45 ms of its 100 ms waiting, for its own other half;
        // nothing else ran on its CPU (1 ms of kernel threads).
        let mut alone = run(0.1, 0.055);
        add_readings(&mut alone, stat(27, 20), None, tree(45, Ok(1)));
        assert_eq!(alone.metric(metric::RUNQ_WAIT), Some(0.045), "the wait is measured ...");
        assert_eq!(alone.metric(metric::NEIGHBOUR_WAIT), Some(0.001), "... and is its own");
        assert!((alone.metric(metric::UNCONTENDED).unwrap() - 0.099).abs() < 1e-12);
        // Beside a neighbour that took 80 ms of its CPU: that share is removed.
        let mut beside = run(0.18, 0.055);
        add_readings(&mut beside, stat(27, 60), None, tree(125, Ok(80)));
        assert_eq!(beside.metric(metric::NEIGHBOUR_WAIT), Some(0.08));
        assert!((beside.metric(metric::UNCONTENDED).unwrap() - 0.1).abs() < 1e-12);
        // Without per-CPU busy time the two cannot be told apart: the wait is kept, the
        // rest is not guessed.
        let mut unknown = run(0.1, 0.055);
        add_readings(&mut unknown, stat(27, 20), None, tree(45, Err("no per-CPU busy time")));
        assert_eq!(unknown.metric(metric::RUNQ_WAIT), Some(0.045));
        let why = unknown.counters[metric::NEIGHBOUR_WAIT].reason.clone().unwrap();
        assert!(why.contains("wait for each other") && why.contains("no per-CPU busy time"), "{why}");
        assert_eq!(unknown.metric(metric::UNCONTENDED), None);
    }

    #[test]
    fn others_time_is_the_machines_busy_time_on_the_runs_cpus_minus_its_own() {
        let ms = Duration::from_millis;
        let (before, after) = ([ms(1000), ms(2000)], [ms(1100), ms(2100)]);
        // Pinned to CPU 0, which was busy 100 ms, 55 of them the run's own.
        assert_eq!(others_on(&[0], &before, &after, ms(55)), Some(ms(45)));
        // On both CPUs: 200 ms busy, 55 own, averaged over the two.
        assert_eq!(others_on(&[0, 1], &before, &after, ms(55)), Some(ms(145) / 2));
        assert_eq!(others_on(&[0], &before, &after, ms(500)), Some(Duration::ZERO), "never negative");
        assert_eq!(others_on(&[5], &before, &after, ms(1)), None);
        assert_eq!(others_on(&[], &before, &after, ms(1)), None);
    }

    #[test]
    fn per_cpu_busy_time_is_parsed_from_each_source() {
        let stat = "cpu  190730 91 46083 141193 5326 0 888 8572 0 0\ncpu0 10 1 5 100 7 2 3 50 0 0\ncpu1 20 0 5 100 0 0 0 0 0 0\nintr 5\n";
        assert_eq!(parse_proc_stat(stat), Some(vec![10 + 1 + 5 + 2 + 3, 25]), "steal and iowait are not busy");
        let schedstat =
            "version 15\ntimestamp 1\ncpu0 0 0 0 0 0 0 123456 777 9\ndomain0 3 1 2\ncpu1 0 0 0 0 0 0 654321 1 1\n";
        assert_eq!(
            parse_schedstat_cpus(schedstat),
            Some(vec![Duration::from_nanos(123456), Duration::from_nanos(654321)])
        );
        let coarse = CpuTimeSource::ProcStat { tick: Duration::from_millis(10) };
        assert!(coarse.too_coarse_for(Duration::from_millis(100)).unwrap().contains("too coarse for a 100 ms run"));
        assert_eq!(coarse.too_coarse_for(Duration::from_secs(1)), None);
        // This machine has one of them.
        if let Ok(source) = CpuTimeSource::detect() {
            assert!(!source.read().unwrap().is_empty(), "{source:?}");
        }
    }

    #[test]
    fn busy_share_weighs_neighbours_waits_by_wall_time() {
        let mut a = run(0.1, 0.05);
        add_readings(&mut a, stat(50, 50), None, Err(""));
        let mut b = run(0.1, 0.1);
        add_readings(&mut b, stat(100, 0), None, Err(""));
        assert_eq!(busy_share([&a, &b]), Some(0.25));
        assert_eq!(busy_share([&run(1.0, 1.0)]), None);
        // A ping-pong's own waiting does not make the machine busy.
        let mut own = run(0.1, 0.055);
        add_readings(&mut own, stat(27, 20), None, tree(45, Ok(0)));
        assert_eq!(busy_share([&own]), Some(0.0));
        // A run stored before neighbour_wait_s: its run-queue wait meant the same.
        let mut old = run(0.1, 0.05);
        old.counters.insert(metric::RUNQ_WAIT.into(), CounterReading::value(0.05, false));
        assert_eq!(busy_share([&old]), Some(0.5));
    }
}
