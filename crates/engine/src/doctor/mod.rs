//! What on this machine disturbs measurements, each with its fix, and — given a command —
//! how much its round-to-round noise lets perflab resolve in a given time.
//!
//! The checks read /proc and /sys only (a second of sampling for steal time and busy
//! neighbours). The calibration is an A/A experiment of the command (the engine's
//! randomized interleaved rounds, the same command twice): its paired noise, turned into
//! the smallest effect a comparison can detect and the smallest `--threshold` it can
//! confirm within 10, 30 or 60 s under the sequential design `compare` uses.

pub mod calibration;

use crate::plan::schedule::LookSchedule;
use perflab_model::{Calibration, Experiment, Machine, Resolution, Settings};
use perflab_stats::summary;
use serde::Serialize;
use std::fs;
use std::time::Duration;

/// What `perflab doctor` found (and writes with `--json`): the machine, every check and,
/// given a command, its calibration.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The machine checked.
    pub machine: Machine,
    /// Its fingerprint.
    pub fingerprint: String,
    /// Every check's finding, in the order run.
    pub findings: Vec<Finding>,
    /// The command's calibration, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// How a finding affects measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to do.
    Ok,
    /// Worth knowing; perflab's design copes with it.
    Info,
    /// Adds noise or bias; the fix is given.
    Warn,
}

/// One check of the machine.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// What was checked (a short name).
    pub check: &'static str,
    /// How it affects measurements.
    pub status: Status,
    /// What was found, one line.
    pub finding: String,
    /// How to fix it, when there is something to fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn finding(check: &'static str, status: Status, finding: impl Into<String>, fix: Option<&str>) -> Finding {
    Finding { check, status, finding: finding.into(), fix: fix.map(str::to_string) }
}

fn read(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|t| t.trim().to_string())
}

/// Every check, in the order a reader should fix them. Takes about a second (it samples
/// steal time and the other processes' CPU use).
pub fn check_machine() -> Vec<Finding> {
    let sample = Sample::take(Duration::from_millis(1000));
    vec![
        governor(),
        boost(),
        smt(),
        virtualization(&sample),
        neighbours(&sample),
        perf_events(),
        transparent_hugepages(),
        aslr(),
        affinity(),
        run_queue_source(),
    ]
}

fn governor() -> Finding {
    let governors: Vec<String> = (0..perflab_sys::machine::online_cpus())
        .filter_map(|cpu| read(&format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")))
        .collect();
    match governors.iter().find(|g| *g != "performance") {
        _ if governors.is_empty() => finding(
            "frequency governor",
            Status::Info,
            "not exposed (no cpufreq; on a virtual machine the host sets it)",
            None,
        ),
        None => finding("frequency governor", Status::Ok, "performance on every CPU", None),
        Some(other) => finding(
            "frequency governor",
            Status::Warn,
            format!("`{other}`: the clock follows the load, so a run's speed depends on what ran before it"),
            Some("sudo cpupower frequency-set -g performance"),
        ),
    }
}

fn boost() -> Finding {
    let boost = read("/sys/devices/system/cpu/cpufreq/boost")
        .map(|b| b == "1")
        .or_else(|| read("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|b| b == "0"));
    match boost {
        None => finding("turbo boost", Status::Info, "not exposed (no cpufreq boost control here)", None),
        Some(false) => finding("turbo boost", Status::Ok, "off", None),
        Some(true) => finding(
            "turbo boost",
            Status::Warn,
            "on: the clock rises and falls with temperature and the other cores' load",
            Some(
                "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost (Intel: echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo)",
            ),
        ),
    }
}

fn smt() -> Finding {
    let siblings = read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list").unwrap_or_default();
    let shared = siblings.contains(',') || siblings.contains('-');
    match read("/sys/devices/system/cpu/smt/active").as_deref() {
        Some("1") | None if shared => finding(
            "SMT siblings",
            Status::Warn,
            format!("on (CPU 0 shares its core with {siblings}): a sibling's work slows a run by up to ~30 %"),
            Some("echo off | sudo tee /sys/devices/system/cpu/smt/control, or keep the sibling idle (taskset)"),
        ),
        _ => finding("SMT siblings", Status::Ok, "no CPU shares its core", None),
    }
}

/// CPU time per state across the machine, and per process, over an interval.
struct Sample {
    /// Steal as a share of all CPU time in the interval (None without /proc/stat).
    steal_share: Option<f64>,
    /// Processes that used the most CPU in the interval: (share of one CPU, pid, name).
    busiest: Vec<(f64, i32, String)>,
}

impl Sample {
    fn take(interval: Duration) -> Sample {
        let before = (cpu_totals(), process_ticks());
        std::thread::sleep(interval);
        let after = (cpu_totals(), process_ticks());
        let steal_share = match (before.0, after.0) {
            (Some((total0, steal0)), Some((total1, steal1))) if total1 > total0 => {
                Some((steal1 - steal0) as f64 / (total1 - total0) as f64)
            }
            _ => None,
        };
        let ticks_per_second = clock_ticks_per_second();
        let own = std::process::id() as i32;
        let mut busiest: Vec<(f64, i32, String)> = after
            .1
            .iter()
            .filter(|(pid, _)| **pid != own)
            .filter_map(|(pid, (ticks, name))| {
                let used = ticks.checked_sub(before.1.get(pid)?.0)?;
                Some((used as f64 / ticks_per_second / interval.as_secs_f64(), *pid, name.clone()))
            })
            .filter(|(share, _, _)| *share >= 0.05)
            .collect();
        busiest.sort_by(|a, b| b.0.total_cmp(&a.0));
        busiest.truncate(3);
        Sample { steal_share, busiest }
    }
}

/// (all CPU time, steal time) in ticks from /proc/stat's `cpu` line.
fn cpu_totals() -> Option<(u64, u64)> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal guest guest_nice; guests are in user.
    let total = fields.iter().take(8).sum();
    Some((total, *fields.get(7)?))
}

/// utime + stime ticks and the name of every process.
fn process_ticks() -> std::collections::HashMap<i32, (u64, String)> {
    let Ok(entries) = fs::read_dir("/proc") else { return Default::default() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The name is in parentheses and may contain spaces: split after the last ')'.
            let (head, tail) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_string();
            let fields: Vec<&str> = tail.split_whitespace().collect();
            // Fields after the name start at 3 (state); utime and stime are 14 and 15.
            let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
            Some((pid, (ticks, name)))
        })
        .collect()
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn virtualization(sample: &Sample) -> Finding {
    let machine = perflab_sys::machine::detect();
    let steal = sample.steal_share.unwrap_or(0.0);
    match machine.virtualization {
        None => finding("virtualization", Status::Ok, "bare metal", None),
        Some(hypervisor) if steal >= 0.02 => finding(
            "virtualization",
            Status::Warn,
            format!(
                "a virtual machine ({hypervisor}); the host took {:.0} % of the CPU time in the last second (steal)",
                steal * 100.0
            ),
            Some("a dedicated (not burstable or shared-core) instance, or bare metal; noise from the host is neither run-queue wait nor CPU time"),
        ),
        Some(hypervisor) => finding(
            "virtualization",
            Status::Info,
            format!("a virtual machine ({hypervisor}); no steal time in the last second"),
            None,
        ),
    }
}

fn neighbours(sample: &Sample) -> Finding {
    let cpus = perflab_sys::machine::online_cpus().max(1) as f64;
    let load = read("/proc/loadavg").and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok()).unwrap_or(0.0);
    let pressure = read("/proc/pressure/cpu")
        .and_then(|p| p.lines().next()?.split_whitespace().find_map(|f| f.strip_prefix("avg10="))?.parse::<f64>().ok());
    let busy: Vec<String> = sample
        .busiest
        .iter()
        .map(|(share, pid, name)| format!("{} (pid {pid}) {:.0} %", perflab_sys::text::escape(name), share * 100.0))
        .collect();
    let mut text = format!("load {load:.1} on {cpus} CPUs");
    if let Some(p) = pressure {
        text.push_str(&format!("; tasks waited for a CPU {p:.0} % of the last 10 s"));
    }
    if !busy.is_empty() {
        text.push_str(&format!("; busiest: {}", busy.join(", ")));
    }
    if load > 0.5 * cpus || pressure.is_some_and(|p| p >= 10.0) || sample.busiest.iter().any(|b| b.0 >= 0.25) {
        finding(
            "busy neighbours",
            Status::Warn,
            text,
            Some("stop them or measure elsewhere; meanwhile `compare` removes the wait from the verdict's time (uncontended_s)"),
        )
    } else {
        finding("busy neighbours", Status::Ok, text, None)
    }
}

fn perf_events() -> Finding {
    let paranoid = perflab_sys::perf::counters::paranoid_level();
    let pmu = perflab_sys::machine::detect().pmu;
    let level = paranoid.map_or("unknown".to_string(), |l| l.to_string());
    match (pmu, paranoid) {
        (false, _) => finding(
            "perf events",
            Status::Info,
            format!("no hardware PMU (cycles, instructions, cache misses cannot be counted); perf_event_paranoid {level}; software counters and cpu-clock sampling work"),
            Some("on a VM, enable a virtual PMU (KVM: -cpu host,pmu=on); `--mode instructions` counts exactly without one"),
        ),
        (true, Some(l)) if l > 1 => finding(
            "perf events",
            Status::Warn,
            format!("perf_event_paranoid {l}: counters count user mode only"),
            Some("sudo sysctl kernel.perf_event_paranoid=1 (or grant CAP_PERFMON)"),
        ),
        _ => finding("perf events", Status::Ok, format!("a PMU; perf_event_paranoid {level}"), None),
    }
}

fn transparent_hugepages() -> Finding {
    let setting = read("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let chosen = setting.split_whitespace().find(|w| w.starts_with('[')).unwrap_or("").trim_matches(['[', ']']);
    match chosen {
        "always" => finding(
            "transparent huge pages",
            Status::Warn,
            "always: page faults may compact memory (millisecond stalls) and a run's TLB reach depends on what it got",
            Some("echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled"),
        ),
        "" => finding("transparent huge pages", Status::Info, "not available", None),
        other => finding("transparent huge pages", Status::Ok, other.to_string(), None),
    }
}

fn aslr() -> Finding {
    match read("/proc/sys/kernel/randomize_va_space").as_deref() {
        Some("0") => finding(
            "address-space randomization",
            Status::Info,
            "off: every run gets the same layout, so a layout's luck is never averaged out",
            Some("sudo sysctl kernel.randomize_va_space=2 (perflab's rounds and environment padding then average layouts)"),
        ),
        Some(level) => finding(
            "address-space randomization",
            Status::Ok,
            format!("on ({level}); perflab's interleaved rounds and environment padding average layouts out"),
            None,
        ),
        None => finding("address-space randomization", Status::Info, "unknown", None),
    }
}

fn affinity() -> Finding {
    let allowed = perflab_sys::machine::allowed_cpus();
    let online = perflab_sys::machine::online_cpus();
    let isolated = read("/sys/devices/system/cpu/isolated").unwrap_or_default();
    if !isolated.is_empty() {
        return finding(
            "CPU isolation",
            Status::Ok,
            format!("CPUs {isolated} are isolated; perflab may use {allowed} of {online} (run it there: taskset -c {isolated})"),
            None,
        );
    }
    finding(
        "CPU isolation",
        Status::Info,
        format!("no isolated CPUs; perflab and its commands may run on {allowed} of {online} CPUs"),
        Some("for the quietest runs: boot with isolcpus=N nohz_full=N and run under taskset -c N"),
    )
}

fn run_queue_source() -> Finding {
    match perflab_sys::spawn::contention::PressureGroup::join() {
        Ok(group) => {
            let dir = group.dir().display().to_string();
            group.leave();
            finding(
                "run-queue wait",
                Status::Ok,
                format!("measured per run: the main thread's schedstat, and a cgroup's CPU pressure for commands with threads or children (e.g. {dir})"),
                None,
            )
        }
        Err(why) => finding(
            "run-queue wait",
            Status::Info,
            format!("measured for single-threaded commands only (their main thread's schedstat): {why}"),
            Some("run as root or in a delegated cgroup v2 (systemd-run --user --scope -p Delegate=yes perflab …)"),
        ),
    }
}

/// The time budgets a calibration reports what can be resolved in.
const BUDGETS_S: [f64; 3] = [10.0, 30.0, 60.0];

/// Asymptotic standard error of the Hodges–Lehmann estimate of paired log ratios with
/// robust σ `sigma` over `n` rounds: σ √(π/3) / √n (normal-theory efficiency of the
/// signed-rank procedure).
fn hodges_lehmann_se(sigma: f64, n: f64) -> f64 {
    sigma * (std::f64::consts::PI / 3.0).sqrt() / n.sqrt()
}

/// z of the last look `compare` would take at round `rounds` of an experiment whose
/// horizon is `horizon` rounds (its default design, one candidate).
fn look_z(rounds: u32, horizon: u32) -> Option<f64> {
    let settings = Settings::default();
    let mut looks = LookSchedule::sequential(settings.looks, settings.confidence, 1, settings.min_rounds);
    let mut last = None;
    for n in 1..=rounds {
        if looks.is_look(n) {
            if let Some(level) = looks.take_look(n, horizon) {
                last = Some(level);
            }
        }
    }
    last.map(perflab_stats::normal_quantile_two_sided)
}

/// z for 80 % power.
const POWER_Z: f64 = 0.8416;

/// What a comparison of this noise can resolve in `budget_s` seconds of rounds.
pub fn resolution(paired_sigma: f64, round_s: f64, budget_s: f64) -> Resolution {
    let rounds = (budget_s / round_s.max(1e-9)).floor().clamp(0.0, u32::MAX as f64) as u32;
    let z = look_z(rounds, rounds);
    let se = hodges_lehmann_se(paired_sigma, rounds.max(1) as f64);
    Resolution {
        budget_s,
        rounds,
        equivalence_margin: z.map(|z| (z * se).exp() - 1.0),
        detectable_effect: z.map(|z| ((z + POWER_Z) * se).exp() - 1.0),
    }
}

/// Rounds and seconds `compare` (defaults: a 60 s horizon) needs to detect `effect`
/// (a fraction) in 80 % of experiments; None when 60 s are not enough.
pub fn rounds_for_effect(paired_sigma: f64, round_s: f64, effect: f64) -> Option<u32> {
    let horizon = (Settings::default().max_time_s / round_s.max(1e-9)).floor() as u32;
    let target = (1.0 + effect).ln();
    let settings = Settings::default();
    let mut looks = LookSchedule::sequential(settings.looks, settings.confidence, 1, settings.min_rounds);
    (1..=horizon).find(|&n| {
        looks.is_look(n)
            && looks.take_look(n, horizon).is_some_and(|level| {
                (perflab_stats::normal_quantile_two_sided(level) + POWER_Z) * hodges_lehmann_se(paired_sigma, n as f64)
                    <= target
            })
    })
}

/// The calibration an A/A experiment of one command measured: its paired noise on the
/// metric `compare` would decide on, and what that resolves in 10, 30 and 60 s.
pub fn calibrate(experiment: &Experiment, command_line: &str) -> Option<Calibration> {
    let [first, second] = experiment.commands.as_slice() else { return None };
    let metric = experiment.primary_metric.clone();
    let (a, b) = crate::analysis::verdict::pairs(first, second, &metric);
    let d: Vec<f64> = a.iter().zip(&b).filter(|(x, y)| **x > 0.0 && **y > 0.0).map(|(x, y)| (y / x).ln()).collect();
    if d.len() < 6 {
        return None;
    }
    let paired_sigma = summary::mad_scaled(&d);
    let round_s = experiment.duration_s / (experiment.rounds + experiment.settings.warmup_rounds).max(1) as f64;
    Some(Calibration {
        measured_at: experiment.started_at.clone(),
        command_line: command_line.to_string(),
        metric,
        rounds: experiment.rounds,
        round_s,
        paired_sigma,
        busy_share: perflab_sys::spawn::contention::busy_share(experiment.commands.iter().flat_map(|c| &c.runs)),
        resolution: BUDGETS_S.iter().map(|&budget| resolution(paired_sigma, round_s, budget)).collect(),
    })
}

/// The warning `compare` gives when `threshold` is finer than this machine resolved
/// within `max_time_s` in its latest calibration; None when it can resolve it.
pub fn threshold_warning(calibration: &Calibration, threshold: f64, max_time_s: f64) -> Option<String> {
    let r = resolution(calibration.paired_sigma, calibration.round_s, max_time_s);
    let margin = r.equivalence_margin?;
    (threshold < margin).then(|| {
        format!(
            "--threshold {:.2} % is finer than this machine resolved within {:.0} s when `perflab doctor` calibrated `{}` ({}; paired noise {:.1} %): expect ±{:.2} %, so `equivalent` is unlikely — raise --threshold or --max-time",
            threshold * 100.0,
            max_time_s,
            perflab_sys::text::escape(&calibration.command_line),
            calibration.measured_at,
            calibration.paired_sigma * 100.0,
            margin * 100.0
        )
    })
}
