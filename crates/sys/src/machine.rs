//! The machine fingerprint recorded with every experiment, so results from different
//! machines are never mixed silently: CPU model and microcode, core count, SMT, boost and
//! governor, memory, kernel, virtualization, PMU, hostname and an optional operator-given id.

use perflab_model::Machine;
use std::fs;
use std::path::Path;

/// Environment variable naming this machine (see [`Machine::id`]).
pub const MACHINE_ID_ENV: &str = "PERFLAB_MACHINE_ID";

/// A file's first line, trimmed; None when unreadable or empty.
fn read_line(path: impl AsRef<Path>) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    Some(text.lines().next()?.trim().to_string()).filter(|l| !l.is_empty())
}

/// `0`/`1` in a sysfs file as a flag.
fn read_flag(path: &str) -> Option<bool> {
    match read_line(path)?.as_str() {
        "1" | "on" => Some(true),
        "0" | "off" => Some(false),
        _ => None,
    }
}

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

/// The ids of the CPUs online, from sysfs ("0-3,6"); every CPU the process may use when
/// sysfs cannot be read. Recorders open one ring per id.
pub fn online_cpu_ids() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let mut ends = part.splitn(2, '-').map(|n| n.trim().parse::<usize>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), Some(Ok(b))) => cpus.extend(a..=b),
            (Some(Ok(a)), None) => cpus.push(a),
            _ => {}
        }
    }
    if cpus.is_empty() {
        cpus = (0..allowed_cpus()).collect();
    }
    cpus
}

/// CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Read the fingerprint of the machine we run on (best effort, never fails).
pub fn detect() -> Machine {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().is_some_and(|key| key.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let cpu_model = field("model name").unwrap_or_else(|| "unknown".into());
    let hypervisor = field("flags").is_some_and(|flags| flags.split_whitespace().any(|f| f == "hypervisor"));
    let virtualization =
        hypervisor.then(|| read_line("/sys/class/dmi/id/sys_vendor").unwrap_or_else(|| "hypervisor".into()));
    let memory_mib = fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let kib = m.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.trim().trim_end_matches("kB").trim();
        kib.parse::<u64>().ok().map(|k| k / 1024)
    });
    Machine {
        hostname: read_line("/proc/sys/kernel/hostname").unwrap_or_default(),
        cpu_model,
        cores: allowed_cpus(),
        kernel: read_line("/proc/sys/kernel/osrelease").unwrap_or_default(),
        governor: read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        // A PMU shows up as the "cpu" event source (core PMU on x86).
        pmu: Path::new("/sys/bus/event_source/devices/cpu").exists()
            || Path::new("/sys/bus/event_source/devices/cpu_core").exists(),
        virtualization,
        id: std::env::var(MACHINE_ID_ENV).ok().filter(|id| !id.is_empty()),
        microcode: field("microcode"),
        // acpi-cpufreq and amd-pstate say `boost`; intel_pstate says the opposite.
        boost: read_flag("/sys/devices/system/cpu/cpufreq/boost")
            .or_else(|| read_flag("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|off| !off)),
        smt: read_flag("/sys/devices/system/cpu/smt/active"),
        memory_mib,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_online_cpu_has_an_id() {
        let ids = online_cpu_ids();
        assert_eq!(ids.len(), online_cpus(), "{ids:?}");
    }

    #[test]
    fn this_machine_is_described_and_a_stored_older_record_keeps_its_fingerprint() {
        let m = crate::machine::detect();
        assert!(!m.cpu_model.is_empty() && m.cores >= 1 && !m.kernel.is_empty(), "{m:?}");
        assert!(m.memory_mib.is_some_and(|mib| mib > 0), "{m:?}");
        // A record written before the new fields existed reads back with them unset and
        // serializes to the same JSON, so its fingerprint is unchanged.
        let old =
            r#"{"hostname":"box","cpu_model":"EPYC","cores":2,"kernel":"6.1.0","pmu":false,"virtualization":"KVM"}"#;
        let machine: Machine = serde_json::from_str(old).unwrap();
        assert_eq!((machine.id.as_deref(), machine.microcode.as_deref(), machine.memory_mib), (None, None, None));
        assert_eq!(serde_json::to_string(&machine).unwrap(), old);
        // sha256 of that JSON, as every perflab before the new fields computed it.
        assert_eq!(machine.fingerprint(), "4ff393b3b7bc");
    }
}
