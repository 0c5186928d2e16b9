//! Following blocks through a recording: the calls of the probed functions and their
//! returns, in time order, become allocations (with their bytes and call stacks),
//! frees matched to them, and the blocks still live at the end. A call made while the
//! same thread is inside another probed function (glibc's realloc(NULL, n) calling
//! malloc) is the allocator's own business: counted as nested, never twice.
//!
//! Whether a thread is still inside a call is read from stack pointers, not only from
//! the order of records: a return can be missing (a call under way when the probes were
//! placed has a recorded entry but no return probe yet; a record the kernel dropped), and
//! taking every later call for a nested one would then count nothing more for the rest
//! of the recording. A call nested in another runs deeper on the stack (a lower stack
//! pointer, stacks growing down on every target we read); a call above a pending call's
//! stack pointer means that call has returned unseen. At the *same* stack pointer a call
//! is either tail-called from the pending one (glibc's realloc jumps to malloc, and its
//! return address is then the return probe's trampoline) or made after it returned
//! unseen: the return address tells them apart when it is the pending call's own.

use crate::allocations::Role;
use std::collections::HashMap;

/// One probed call or return, in time order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Call<T> {
    /// A call of probe `probe` with its first four arguments, its stack pointer and return
    /// address at entry (0: unknown) and what locates it (its call stack).
    Entry { pid: u32, tid: u32, probe: usize, args: [u64; 4], sp: u64, ret: u64, site: T },
    /// A return of probe `probe` with its return value and the stack pointer after it
    /// (the call's own at entry + 8; 0: unknown).
    Return { tid: u32, probe: usize, value: u64, sp: u64 },
}

/// An allocation the program made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Allocation<T> {
    pub time: u64,
    pub pid: u32,
    pub tid: u32,
    pub probe: usize,
    pub bytes: u64,
    pub site: T,
    /// Still allocated at the end (only meaningful when blocks were tracked).
    pub live: bool,
}

/// What the calls add up to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Paired<T> {
    pub allocations: Vec<Allocation<T>>,
    /// Per probe: (calls from the program, bytes requested, nested calls).
    pub per_probe: Vec<(u64, u64, u64)>,
    pub frees: u64,
    pub freed_bytes: u64,
    pub unmatched_frees: u64,
    /// Calls whose return was never recorded: their blocks are counted, not followed.
    pub unreturned: u64,
}

/// The return address a call pushes: what separates its entry's stack pointer from the
/// one after its return.
const RETURN_ADDRESS_BYTES: u64 = 8;

struct Pending {
    probe: usize,
    args: [u64; 4],
    sp: u64,
    ret: u64,
    /// The allocation this call made (not for nested calls and frees).
    allocation: Option<usize>,
}

/// Pair `calls` (sorted by time) of probes with `roles`. `tracked`: the returns were
/// recorded too, so blocks can be followed to their frees.
pub(crate) fn pair<T>(calls: Vec<(u64, Call<T>)>, roles: &[Role], tracked: bool) -> Paired<T> {
    let mut out = Paired {
        allocations: Vec::new(),
        per_probe: vec![(0, 0, 0); roles.len()],
        frees: 0,
        freed_bytes: 0,
        unmatched_frees: 0,
        unreturned: 0,
    };
    let mut pending: HashMap<u32, Vec<Pending>> = HashMap::new();
    // Address → (allocation, bytes) of every block believed allocated now.
    let mut live: HashMap<u64, (usize, u64)> = HashMap::new();
    for (time, call) in calls {
        match call {
            Call::Entry { pid, tid, probe, args, sp, ret, site } => {
                let Some(&role) = roles.get(probe) else { continue };
                let inside = pending.entry(tid).or_default();
                let returned_unseen =
                    |p: &Pending| sp != 0 && p.sp != 0 && (p.sp < sp || (p.sp == sp && ret != 0 && p.ret == ret));
                let still_inside = inside.iter().position(returned_unseen).unwrap_or(inside.len());
                out.unreturned += (inside.len() - still_inside) as u64;
                inside.truncate(still_inside);
                if tracked && !inside.is_empty() {
                    out.per_probe[probe].2 += 1;
                    inside.push(Pending { probe, args, sp, ret, allocation: None });
                    continue;
                }
                let bytes = role.bytes(&args);
                out.per_probe[probe].0 += 1;
                out.per_probe[probe].1 += bytes;
                let allocation = match role {
                    Role::Free | Role::CustomFree { .. } => {
                        // A free returns nothing to wait for: release the block now.
                        if let Some(address) = role.released(&args) {
                            release(&mut live, &mut out, address);
                        }
                        continue;
                    }
                    // realloc(p, 0) frees p and allocates nothing.
                    Role::Realloc if bytes == 0 && args[0] != 0 => None,
                    _ => {
                        out.allocations.push(Allocation { time, pid, tid, probe, bytes, site, live: false });
                        Some(out.allocations.len() - 1)
                    }
                };
                if tracked {
                    inside.push(Pending { probe, args, sp, ret, allocation });
                }
            }
            Call::Return { tid, probe, value, sp } => {
                let Some(inside) = pending.get_mut(&tid) else { continue };
                // The innermost pending call of this probe that this return leaves (calls
                // above it lost their returns: a longjmp, or records the kernel dropped).
                let returns_here =
                    |p: &Pending| p.probe == probe && (sp == 0 || p.sp == 0 || p.sp + RETURN_ADDRESS_BYTES == sp);
                let Some(at) = inside.iter().rposition(returns_here) else {
                    // Its entry was not recorded; calls deeper than it have returned too.
                    let still_inside =
                        inside.iter().position(|p| sp != 0 && p.sp != 0 && p.sp < sp).unwrap_or(inside.len());
                    out.unreturned += (inside.len() - still_inside) as u64;
                    inside.truncate(still_inside);
                    continue;
                };
                let call = inside.swap_remove(at);
                out.unreturned += (inside.len() - at) as u64;
                inside.truncate(at);
                let Some(&role) = roles.get(probe) else { continue };
                if call.allocation.is_none() && !(role == Role::Realloc && call.args[0] != 0) {
                    continue; // nested, or a call that made nothing
                }
                if role == Role::Realloc {
                    // The old block is gone when the new one came back, or when asked for 0 bytes.
                    if let Some(old) = role.released(&call.args).filter(|_| value != 0 || call.args[1] == 0) {
                        release(&mut live, &mut out, old);
                    }
                }
                if let (Some(index), true) = (call.allocation, value != 0 && role.returns_block()) {
                    if let Some((previous, _)) = live.insert(value, (index, out.allocations[index].bytes)) {
                        // The same address handed out twice: its free was not seen.
                        out.allocations[previous].live = false;
                    }
                    out.allocations[index].live = true;
                }
            }
        }
    }
    out
}

fn release<T>(live: &mut HashMap<u64, (usize, u64)>, out: &mut Paired<T>, address: u64) {
    match live.remove(&address) {
        Some((index, bytes)) => {
            out.allocations[index].live = false;
            out.frees += 1;
            out.freed_bytes += bytes;
        }
        None => out.unmatched_frees += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLES: [Role; 4] = [Role::Alloc, Role::Calloc, Role::Realloc, Role::Free];
    const MALLOC: usize = 0;
    const CALLOC: usize = 1;
    const REALLOC: usize = 2;
    const FREE: usize = 3;

    fn entry(probe: usize, args: [u64; 4], site: &'static str) -> Call<&'static str> {
        Call::Entry { pid: 1, tid: 1, probe, args, sp: 0, ret: 0, site }
    }

    fn ret(probe: usize, value: u64) -> Call<&'static str> {
        Call::Return { tid: 1, probe, value, sp: 0 }
    }

    fn timed(calls: Vec<Call<&'static str>>) -> Vec<(u64, Call<&'static str>)> {
        calls.into_iter().enumerate().map(|(t, c)| (t as u64, c)).collect()
    }

    #[test]
    fn blocks_are_followed_from_allocation_to_free() {
        let calls = timed(vec![
            entry(MALLOC, [100, 0, 0, 0], "a"),
            ret(MALLOC, 0x1000),
            entry(CALLOC, [4, 8, 0, 0], "b"),
            ret(CALLOC, 0x2000),
            entry(FREE, [0x1000, 0, 0, 0], "c"),
            entry(FREE, [0, 0, 0, 0], "c"),
            entry(FREE, [0x9999, 0, 0, 0], "c"),
        ]);
        let paired = pair(calls, &ROLES, true);
        assert_eq!(paired.per_probe, vec![(1, 100, 0), (1, 32, 0), (0, 0, 0), (3, 0, 0)]);
        let live: Vec<(&str, u64, bool)> = paired.allocations.iter().map(|a| (a.site, a.bytes, a.live)).collect();
        assert_eq!(live, vec![("a", 100, false), ("b", 32, true)]);
        assert_eq!((paired.frees, paired.freed_bytes, paired.unmatched_frees), (1, 100, 1));
    }

    /// glibc's realloc(NULL, n) calls malloc inside: the nested call is not counted twice;
    /// a moving realloc releases the old block, realloc(p, 0) frees it.
    #[test]
    fn nested_calls_count_once_and_realloc_moves_blocks() {
        let calls = timed(vec![
            entry(REALLOC, [0, 64, 0, 0], "grow"),
            entry(MALLOC, [64, 0, 0, 0], "inside"),
            ret(MALLOC, 0x1000),
            ret(REALLOC, 0x1000),
            entry(REALLOC, [0x1000, 128, 0, 0], "grow"),
            ret(REALLOC, 0x3000),
            entry(REALLOC, [0x3000, 0, 0, 0], "shrink"),
            entry(FREE, [0x3000, 0, 0, 0], "inside"),
            ret(REALLOC, 0),
        ]);
        let paired = pair(calls, &ROLES, true);
        assert_eq!(paired.per_probe[MALLOC], (0, 0, 1), "the nested malloc");
        assert_eq!(paired.per_probe[REALLOC], (3, 192, 0));
        assert_eq!(paired.per_probe[FREE], (0, 0, 1), "realloc's own free is nested");
        assert_eq!(paired.allocations.len(), 2, "realloc(p, 0) allocates nothing");
        assert!(paired.allocations.iter().all(|a| !a.live), "{:?}", paired.allocations);
        assert_eq!((paired.frees, paired.freed_bytes, paired.unmatched_frees), (2, 64 + 128, 0));
    }

    #[test]
    fn without_returns_every_call_counts_and_nothing_is_followed() {
        let calls = timed(vec![
            entry(REALLOC, [0, 64, 0, 0], "grow"),
            entry(MALLOC, [64, 0, 0, 0], "inside"),
            entry(FREE, [0x1000, 0, 0, 0], "x"),
        ]);
        let paired = pair(calls, &ROLES, false);
        assert_eq!(paired.per_probe[MALLOC], (1, 64, 0), "nesting is unknown without returns");
        assert!(paired.allocations.iter().all(|a| !a.live));
        assert_eq!(paired.unmatched_frees, 1);
    }

    /// Threads are apart: one thread's pending call does not make another's nested.
    #[test]
    fn threads_nest_separately() {
        let calls = vec![
            (0, Call::Entry { pid: 1, tid: 1, probe: MALLOC, args: [8, 0, 0, 0], sp: 0, ret: 0, site: "t1" }),
            (1, Call::Entry { pid: 1, tid: 2, probe: MALLOC, args: [16, 0, 0, 0], sp: 0, ret: 0, site: "t2" }),
            (2, Call::Return { tid: 2, probe: MALLOC, value: 0x20, sp: 0 }),
            (3, Call::Return { tid: 1, probe: MALLOC, value: 0x10, sp: 0 }),
        ];
        let paired = pair(calls, &ROLES, true);
        assert_eq!(paired.per_probe[MALLOC], (2, 24, 0));
        assert!(paired.allocations.iter().all(|a| a.live));
    }

    /// `call` at `stack_pointer`, an entry returning to 0x401000 + its site's length.
    fn at(call: Call<&'static str>, stack_pointer: u64) -> Call<&'static str> {
        match call {
            Call::Entry { pid, tid, probe, args, site, .. } => {
                Call::Entry { pid, tid, probe, args, sp: stack_pointer, ret: 0x401000 + site.len() as u64, site }
            }
            Call::Return { tid, probe, value, .. } => Call::Return { tid, probe, value, sp: stack_pointer },
        }
    }

    /// Seen attached to a running loop of malloc/free: the first malloc's return was never
    /// recorded (it was under way when the probes were placed), and every later call was
    /// taken for one nested in it: "1 allocation calls and 0 frees" for ~40,000 calls.
    #[test]
    fn a_call_whose_return_was_never_recorded_does_not_swallow_the_calls_after_it() {
        const SP: u64 = 0x7ff0_0000;
        let mut calls = vec![at(entry(MALLOC, [64, 0, 0, 0], "loop"), SP)];
        for block in 1..=3u64 {
            calls.push(at(entry(MALLOC, [64, 0, 0, 0], "loop"), SP));
            calls.push(at(ret(MALLOC, block * 0x1000), SP + 8));
            calls.push(at(entry(FREE, [block * 0x1000, 0, 0, 0], "loop"), SP));
        }
        let paired = pair(timed(calls), &ROLES, true);
        assert_eq!(paired.per_probe[MALLOC], (4, 4 * 64, 0), "every malloc counts; none is nested");
        assert_eq!(paired.per_probe[FREE].0, 3);
        assert_eq!((paired.frees, paired.unmatched_frees, paired.unreturned), (3, 0, 1));
        assert!(paired.allocations.iter().all(|a| !a.live));
    }

    /// A call deeper on the stack is still nested; a return finds its own call by its
    /// stack pointer even when a deeper call of the same function lost its return.
    #[test]
    fn stack_pointers_tell_nested_calls_from_returns_that_were_lost() {
        const OUTER: u64 = 0x7ff0_0000;
        let calls = timed(vec![
            at(entry(REALLOC, [0, 64, 0, 0], "grow"), OUTER),
            at(entry(REALLOC, [0, 32, 0, 0], "inside"), OUTER - 0x100),
            // The nested realloc's return was lost; the outer one returns.
            at(ret(REALLOC, 0x1000), OUTER + 8),
            at(entry(FREE, [0x1000, 0, 0, 0], "done"), OUTER),
        ]);
        let paired = pair(calls, &ROLES, true);
        assert_eq!(paired.per_probe[REALLOC], (1, 64, 1), "the deeper call is nested");
        assert_eq!((paired.frees, paired.freed_bytes, paired.unreturned), (1, 64, 1));
    }

    /// glibc's realloc(NULL, n) may jump to malloc: the nested call runs at the outer
    /// call's stack pointer, its return address the return probe's trampoline.
    #[test]
    fn a_tail_call_at_the_same_stack_pointer_is_nested() {
        const SP: u64 = 0x7ff0_0000;
        let tail_called = Call::Entry {
            pid: 1,
            tid: 1,
            probe: MALLOC,
            args: [64, 0, 0, 0],
            sp: SP,
            ret: 0x7fff_f000,
            site: "[uprobes]",
        };
        let calls = timed(vec![
            at(entry(REALLOC, [0, 64, 0, 0], "grow"), SP),
            tail_called,
            at(ret(MALLOC, 0x1000), SP + 8),
            at(ret(REALLOC, 0x1000), SP + 8),
            at(entry(FREE, [0x1000, 0, 0, 0], "grow"), SP),
        ]);
        let paired = pair(calls, &ROLES, true);
        assert_eq!(paired.per_probe[MALLOC], (0, 0, 1), "the tail-called malloc is nested");
        assert_eq!(paired.per_probe[REALLOC], (1, 64, 0));
        assert_eq!((paired.frees, paired.unreturned), (1, 0));
    }
}
