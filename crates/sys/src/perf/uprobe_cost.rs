//! What one probed call costs on this machine, measured on perflab itself before the runs:
//! every call of a probed function traps into the kernel (a breakpoint, the uprobe
//! handler, then the displaced instruction emulated or single-stepped out of line; a
//! return probe adds a second trap at the return), so times measured beside probes
//! include that cost, and the user is told how much. The displaced instruction sets most
//! of it: on this 2-core VM a probe on a `push`/`nop` costs ~0.8 µs, one on a `lea` or
//! `endbr64`, single-stepped, ~9.4 µs — so each probe's first instruction is read and
//! the matching kind is calibrated. No sampling period makes a probe cheaper: the trap
//! happens on every call, sampled or not.

use super::uprobe::{self, Uprobe};
use std::path::{Path, PathBuf};

/// How the kernel runs a probed function's first instruction after the breakpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trap {
    /// Emulated in the handler (x86-64: nops, `push` of a register, branches).
    Emulated,
    /// Copied out of line and single-stepped: a second exception per call.
    SingleStepped,
}

impl Trap {
    /// How the kernel handles the probed instruction, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Trap::Emulated => "first instruction emulated",
            Trap::SingleStepped => "first instruction single-stepped",
        }
    }

    /// The kind of trap for the instruction starting at `code` (x86-64). The emulated
    /// ones are those arch/x86/kernel/uprobes.c emulates (branch_setup_xol_ops,
    /// push_setup_xol_ops, and nops); nops and pushes were measured here, branches are
    /// from the kernel's source. Anything else (including `endbr64`) is single-stepped.
    pub fn of_code(code: &[u8]) -> Trap {
        let emulated = match code {
            [0x90, ..] | [0x0f, 0x1f, ..] | [0x66, 0x90, ..] | [0x66, 0x0f, 0x1f, ..] => true,
            [0x50..=0x57, ..] | [0x41, 0x50..=0x57, ..] => true,
            [0xe8 | 0xe9 | 0xeb, ..] | [0x70..=0x7f, ..] | [0x0f, 0x80..=0x8f, ..] => true,
            _ => false,
        };
        if emulated && cfg!(target_arch = "x86_64") {
            Trap::Emulated
        } else {
            Trap::SingleStepped
        }
    }

    /// The kind of trap of a placed probe, from the bytes at its file offset.
    pub fn of_probe(probe: &Uprobe) -> Result<Trap, String> {
        use std::io::{Read, Seek, SeekFrom};
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(probe.path.to_bytes()));
        let mut file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut code = [0u8; 4];
        file.seek(SeekFrom::Start(probe.file_offset))
            .and_then(|_| file.read_exact(&mut code))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Trap::of_code(&code))
    }
}

// Functions of perflab's own to probe: the calls are timed with and without a probe.
// On x86-64 one of each kind of trap, written in assembly so their first instruction is
// known whatever the compiler does.
#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".globl perflab_uprobe_calibration_emulated",
    ".type perflab_uprobe_calibration_emulated,@function",
    "perflab_uprobe_calibration_emulated:",
    "push %rbp",
    "lea 1(%rdi), %rax",
    "pop %rbp",
    "ret",
    ".globl perflab_uprobe_calibration_stepped",
    ".type perflab_uprobe_calibration_stepped,@function",
    "perflab_uprobe_calibration_stepped:",
    "lea 1(%rdi), %rax",
    "ret",
    options(att_syntax)
);

#[cfg(target_arch = "x86_64")]
extern "C" {
    fn perflab_uprobe_calibration_emulated(x: u64) -> u64;
    fn perflab_uprobe_calibration_stepped(x: u64) -> u64;
}

/// The calibration function of a kind of trap.
#[cfg(target_arch = "x86_64")]
fn calibration(trap: Trap) -> extern "C" fn(u64) -> u64 {
    extern "C" fn emulated(x: u64) -> u64 {
        // SAFETY: the assembly above adds 1 to its argument and touches nothing else.
        unsafe { perflab_uprobe_calibration_emulated(x) }
    }
    extern "C" fn stepped(x: u64) -> u64 {
        // SAFETY: as above.
        unsafe { perflab_uprobe_calibration_stepped(x) }
    }
    match trap {
        Trap::Emulated => emulated,
        Trap::SingleStepped => stepped,
    }
}

/// Where the probe goes: the assembly function itself, not the wrapper calling it.
#[cfg(target_arch = "x86_64")]
fn calibration_address(trap: Trap) -> u64 {
    match trap {
        Trap::Emulated => perflab_uprobe_calibration_emulated as *const () as usize as u64,
        Trap::SingleStepped => perflab_uprobe_calibration_stepped as *const () as usize as u64,
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
#[inline(never)]
pub extern "C" fn perflab_uprobe_calibration(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_add(1)
}

#[cfg(not(target_arch = "x86_64"))]
fn calibration(_: Trap) -> extern "C" fn(u64) -> u64 {
    perflab_uprobe_calibration
}

#[cfg(not(target_arch = "x86_64"))]
fn calibration_address(_: Trap) -> u64 {
    perflab_uprobe_calibration as *const () as usize as u64
}

/// Calls timed per trial: at 1–30 µs per probed call (bare metal to a busy VM) a trial
/// takes 1–30 ms.
const CALLS: u64 = 1_000;
const TRIALS: usize = 5;

/// CPU nanoseconds a probed call costs beyond an unprobed one (the cheapest of trials), for an
/// entry probe or (`retprobe`) a return probe, on a function whose first instruction is
/// trapped as `trap`; the reason when it cannot be measured (no uprobe PMU, not root).
pub fn cost_per_call_ns(retprobe: bool, trap: Trap) -> Result<f64, String> {
    let function = std::hint::black_box(calibration(trap));
    let (path, file_offset) = own_file_offset(calibration_address(trap))?;
    let probe = uprobe::at_file_offset(&path, file_offset, retprobe)?;
    // The thread's CPU time (user + kernel, where the trap is handled): time spent
    // waiting for a CPU on a busy machine is no part of a probe's cost.
    let time = |calls: u64| {
        let start = thread_cpu_ns();
        let mut acc = 0u64;
        for i in 0..calls {
            acc = acc.wrapping_add(function(i));
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
            for trap in [Trap::Emulated, Trap::SingleStepped] {
                match cost_per_call_ns(retprobe, trap) {
                    Ok(ns) => {
                        eprintln!("retprobe={retprobe}, {}: {ns:.0} ns per probed call", trap.describe());
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

    #[test]
    fn first_instructions_tell_the_kind_of_trap() {
        let emulated: [&[u8]; 6] =
            [&[0x55], &[0x41, 0x57], &[0x0f, 0x1f, 0x44, 0], &[0x90], &[0xe9, 0, 0, 0], &[0x74, 3]];
        for code in emulated {
            assert_eq!(Trap::of_code(code), Trap::Emulated, "{code:02x?}");
        }
        // endbr64, sub $0x18,%rsp, lea 1(%rdi),%rax, mov 0x2d11(%rip),%rax
        let stepped: [&[u8]; 4] =
            [&[0xf3, 0x0f, 0x1e, 0xfa], &[0x48, 0x83, 0xec, 0x18], &[0x48, 0x8d, 0x47, 0x01], &[0x48, 0x8b, 0x05]];
        for code in stepped {
            assert_eq!(Trap::of_code(code), Trap::SingleStepped, "{code:02x?}");
        }
        // The calibration functions are of the kind they stand for.
        for trap in [Trap::Emulated, Trap::SingleStepped] {
            // SAFETY: the first bytes of a function of this program, mapped readable.
            let code = unsafe { std::slice::from_raw_parts(calibration_address(trap) as *const u8, 4) };
            assert_eq!(Trap::of_code(code), trap, "{code:02x?}");
        }
    }
}
