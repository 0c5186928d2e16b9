//! What allocation probes cost the processes they watch, said once a second while they
//! run: the trap time their counted calls imply, and the slowdown the processes' own CPU
//! times show against before the probes.

use super::Probe;
use perflab_sys::perf::uprobe::Uprobe;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the probes cost the processes they watch, said while they run: the calls
/// trapped per second, at the trap cost measured on this machine for each probe's kind
/// of trap; and, measured on the processes themselves, the share of their CPU time spent
/// in the kernel (where traps are charged) against that share before the probes went on.
pub(super) struct Overhead {
    /// Nanoseconds each call of each probe costs in traps (its entry, and its return
    /// when the probe has one).
    cost_ns: Vec<f64>,
    pids: Vec<u32>,
    /// Kernel CPU time per user CPU second of the processes before the probes (None
    /// when they used no CPU then).
    kernel_per_user: Option<f64>,
    last: std::time::Instant,
    last_calls: Vec<u64>,
    last_cpu: CpuTimes,
}

impl Overhead {
    /// Calibrate the trap costs on perflab's own functions, meanwhile reading what the
    /// processes `pids` do without probes.
    pub(super) fn new(probes: &[Probe], pids: &[u32]) -> Overhead {
        use perflab_sys::perf::uprobe_cost::{cost_per_call_ns, Trap};
        let before = cpu_times(pids);
        // One calibration per kind of trap (each takes ~0.5 s of probe set-up).
        let mut measured: HashMap<(bool, Trap), f64> = HashMap::new();
        let mut cost = |probe: &Uprobe| {
            let trap = Trap::of_probe(probe).unwrap_or(Trap::SingleStepped);
            *measured
                .entry((probe.retprobe, trap))
                .or_insert_with(|| cost_per_call_ns(probe.retprobe, trap).unwrap_or(f64::NAN))
        };
        // A call traps at its entry, and at its return when the probe follows blocks.
        let cost_ns = probes
            .iter()
            .map(|p| cost(&p.calls) + if p.role.returns_block() { cost(&p.returns) } else { 0.0 })
            .collect();
        let unprobed = cpu_times(pids).since(&before);
        let kernel_per_user = (unprobed.user > 0.0).then(|| unprobed.system / unprobed.user);
        let now = std::time::Instant::now();
        Overhead {
            cost_ns,
            pids: pids.to_vec(),
            kernel_per_user,
            last: now,
            last_calls: vec![0; probes.len()],
            last_cpu: CpuTimes::default(),
        }
    }

    /// Start the first second now (the probes are on).
    pub(super) fn start(&mut self) {
        self.last = std::time::Instant::now();
        self.last_cpu = cpu_times(&self.pids);
    }

    /// A line once a second: calls per second, their trap time, and the slowdown the
    /// processes' own CPU times show.
    pub(super) fn update(&mut self, seen: &[AtomicU64]) -> Option<String> {
        let elapsed = self.last.elapsed().as_secs_f64();
        if elapsed < 1.0 {
            return None;
        }
        let calls: Vec<u64> = seen.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let cpu = cpu_times(&self.pids);
        let used = cpu.since(&self.last_cpu);
        let (mut trapped, mut traps_s) = (0u64, 0.0);
        for ((now, then), cost) in calls.iter().zip(&self.last_calls).zip(&self.cost_ns) {
            trapped += now - then;
            traps_s += (now - then) as f64 * cost / 1e9;
        }
        self.last = std::time::Instant::now();
        self.last_calls = calls;
        self.last_cpu = cpu;
        let hits = perflab_model::units::group_thousands((trapped as f64 / elapsed).round() as i64);
        let traps = if traps_s.is_finite() {
            format!("≈ {:.0} ms of trap time per second (trap costs measured here)", traps_s / elapsed * 1e3)
        } else {
            "(each a trap into the kernel; its cost could not be measured here)".to_string()
        };
        Some(format!("perflab: {hits} probe hits/s {traps}{}", slowdown(used, self.kernel_per_user, elapsed)))
    }
}

/// What the processes' CPU times say of the probes' cost: the share of their CPU time in
/// the kernel against the share before the probes, and the slowdown that implies (their
/// own work is their user time, with the kernel time it brought before the probes).
fn slowdown(used: CpuTimes, kernel_per_user: Option<f64>, elapsed: f64) -> String {
    let total = used.user + used.system;
    if total < 2.0 * CpuTimes::tick() {
        // Read in clock ticks (and children's only once reaped): too few to say more.
        return String::new();
    }
    let share = |system: f64, user: f64| 100.0 * system / (system + user);
    let Some(ratio) = kernel_per_user else {
        return format!(
            "; the processes spent {:.0} % of their {:.0} ms of CPU per second in the kernel (they used no CPU before the probes to compare with)",
            share(used.system, used.user),
            total / elapsed * 1e3
        );
    };
    let before = share(ratio, 1.0);
    // Under one clock tick of user time, the slowdown is at least what one tick implies.
    let (user, bound) = if used.user < CpuTimes::tick() { (CpuTimes::tick(), "over ") } else { (used.user, "~") };
    let factor = total / (user * (1.0 + ratio));
    let said = if factor < 1.1 {
        "no measurable slowdown".to_string()
    } else {
        format!("they run {bound}{factor:.1}× slower while probed")
    };
    format!(
        "; the processes spent {:.0} % of their {:.0} ms of CPU per second in the kernel ({before:.0} % before the probes): {said}",
        share(used.system, used.user),
        total / elapsed * 1e3
    )
}

/// User and kernel CPU seconds of processes (with their reaped children), from /proc.
#[derive(Debug, Clone, Copy, Default)]
struct CpuTimes {
    user: f64,
    system: f64,
}

impl CpuTimes {
    /// One clock tick, the resolution /proc gives them in.
    fn tick() -> f64 {
        // SAFETY: sysconf has no preconditions.
        1.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
    }

    fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes { user: (self.user - earlier.user).max(0.0), system: (self.system - earlier.system).max(0.0) }
    }
}

fn cpu_times(pids: &[u32]) -> CpuTimes {
    let mut times = CpuTimes::default();
    for pid in pids {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some((_, after_name)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<f64> = after_name.split_whitespace().skip(11).take(4).filter_map(|f| f.parse().ok()).collect();
        // utime, stime, cutime, cstime: fields 14–17 (indices 11–14 after the name).
        if let [utime, stime, cutime, cstime] = fields[..] {
            times.user += (utime + cutime) * CpuTimes::tick();
            times.system += (stime + cstime) * CpuTimes::tick();
        }
    }
    times
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowdown_is_read_from_the_processes_kernel_time() {
        // 1 % kernel time before the probes; 0.1 s user and 0.9 s kernel in a second now:
        // their own work (0.1 s and the 1 ms of kernel time it brings) took 1 s.
        let line = slowdown(CpuTimes { user: 0.1, system: 0.9 }, Some(0.01), 1.0);
        assert!(line.contains("90 % of their 1000 ms of CPU per second in the kernel (1 % before"), "{line}");
        assert!(line.contains("they run ~9.9× slower"), "{line}");
        // Under one tick of user time the factor is a lower bound, said as one.
        let tick = CpuTimes::tick();
        let line = slowdown(CpuTimes { user: 0.0, system: 100.0 * tick }, Some(0.0), 1.0);
        assert!(line.contains("they run over 100.0× slower"), "{line}");
        let idle_before = slowdown(CpuTimes { user: 0.5, system: 0.5 }, None, 1.0);
        assert!(idle_before.contains("used no CPU before the probes"), "{idle_before}");
        assert_eq!(slowdown(CpuTimes { user: 0.0, system: tick }, Some(0.0), 1.0), "");
        let unmoved = slowdown(CpuTimes { user: 0.5, system: 0.05 }, Some(0.1), 1.0);
        assert!(unmoved.contains("no measurable slowdown"), "{unmoved}");
    }
}
