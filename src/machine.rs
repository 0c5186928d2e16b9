//! The machine fingerprint recorded with every experiment, so results from different
//! machines are never mixed silently.

use crate::model::Machine;
use std::fs;

/// CPUs online on this machine.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        1
    }
}

/// CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Machine {
    /// Read the fingerprint of the machine we run on (best effort, never fails).
    pub fn detect() -> Machine {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        };
        let cpu_model = field("model name").unwrap_or_else(|| "unknown".into());
        let hypervisor = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| l.split_whitespace().any(|f| f == "hypervisor"));
        let virtualization = if hypervisor {
            Some(
                fs::read_to_string("/sys/class/dmi/id/sys_vendor")
                    .map(|v| v.trim().to_string())
                    .ok()
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| "hypervisor".into()),
            )
        } else {
            None
        };
        Machine {
            hostname: fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string(),
            cpu_model,
            cores: allowed_cpus(),
            kernel: fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string(),
            governor: fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                .ok()
                .map(|g| g.trim().to_string()),
            // A PMU shows up as the "cpu" event source (core PMU on x86).
            pmu: std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
                || std::path::Path::new("/sys/bus/event_source/devices/cpu_core").exists(),
            virtualization,
        }
    }
}
