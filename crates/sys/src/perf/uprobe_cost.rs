//! What one probed call costs on this machine, measured on perflab itself before the runs:
//! every call of a probed function traps into the kernel (a breakpoint, the uprobe
//! handler, a single-step or emulation of the displaced instruction; a return probe adds
//! a second trap at the return), so times measured beside probes include that cost, and
//! the user is told how much. No sampling period makes a probe cheaper: the trap happens
//! on every call, sampled or not.

use super::uprobe;
use std::path::{Path, PathBuf};

/// A function of perflab's own to probe: the calls are timed with and without a probe.
#[no_mangle]
#[inline(never)]
pub extern "C" fn perflab_uprobe_calibration(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_add(1)
}

/// Calls timed per trial: at 1–30 µs per probed call (bare metal to a busy VM) a trial
/// takes 1–30 ms.
const CALLS: u64 = 1_000;
const TRIALS: usize = 5;

/// CPU nanoseconds a probed call costs beyond an unprobed one (the cheapest of trials), for an
/// entry probe or (`retprobe`) a return probe; the reason when it cannot be measured
/// (no uprobe PMU, not root).
pub fn cost_per_call_ns(retprobe: bool) -> Result<f64, String> {
    let function = perflab_uprobe_calibration as *const () as usize as u64;
    let (path, file_offset) = own_file_offset(function)?;
    let probe = uprobe::at_file_offset(&path, file_offset, retprobe, Path::new("/sys/bus/event_source/devices"))?;
    // The thread's CPU time (user + kernel, where the trap is handled): time spent
    // waiting for a CPU on a busy machine is no part of a probe's cost.
    let time = |calls: u64| {
        let start = thread_cpu_ns();
        let mut acc = 0u64;
        for i in 0..calls {
            acc = acc.wrapping_add(perflab_uprobe_calibration(i));
        }
        std::hint::black_box(acc);
        thread_cpu_ns() - start
    };
    // A probe traps even while its counter is disabled: each trial opens its own and
    // closes it, so the bare calls run with no breakpoint at all.
    let mut costs = Vec::with_capacity(TRIALS);
    for _ in 0..TRIALS {
        let bare = time(CALLS);
        let mut counter = perf_event::Builder::new(probe)
            .observe_self()
            .any_cpu()
            .build()
            .map_err(|e| format!("the calibration probe could not be opened: {e}"))?;
        counter.enable().map_err(|e| e.to_string())?;
        let probed = time(CALLS);
        counter.disable().map_err(|e| e.to_string())?;
        let hits = counter.read().map_err(|e| e.to_string())?;
        if hits != CALLS {
            return Err(format!("the calibration probe counted {hits} of {CALLS} calls"));
        }
        costs.push((probed - bare).max(0.0) / CALLS as f64);
    }
    // The cheapest trial: a busy machine (caches, interrupts) only adds to a trap's cost.
    Ok(costs.into_iter().fold(f64::INFINITY, f64::min))
}

fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill; this clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// perflab's own executable and the file offset of `address` in it, from /proc/self/maps.
fn own_file_offset(address: u64) -> Result<(PathBuf, u64), String> {
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|e| format!("/proc/self/maps: {e}"))?;
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [range, _perms, offset, _dev, _inode, path, ..] = fields.as_slice() else { continue };
        let Some((start, end)) = range.split_once('-') else { continue };
        let parse = |h: &str| u64::from_str_radix(h, 16).ok();
        let (Some(start), Some(end), Some(offset)) = (parse(start), parse(end), parse(offset)) else { continue };
        if (start..end).contains(&address) {
            return Ok((PathBuf::from(path), offset + (address - start)));
        }
    }
    Err("perflab's own code is in no file mapping".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figure is a measurement, not asserted beyond its sign: as root it is a cost
    /// (≥ 0, every call counted); elsewhere the reason is one line.
    #[test]
    fn the_cost_of_a_probed_call_is_measured_or_explained() {
        for retprobe in [false, true] {
            match cost_per_call_ns(retprobe) {
                Ok(ns) => {
                    eprintln!("retprobe={retprobe}: {ns:.0} ns per probed call");
                    assert!(ns >= 0.0 && ns.is_finite(), "{ns}")
                }
                Err(why) => {
                    eprintln!("SKIP: {why}");
                    assert!(!why.contains('\n'), "{why}");
                }
            }
        }
    }
}
