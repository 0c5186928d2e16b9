//! The events of an allocation recording: on every online CPU, one ring for the calls
//! of every probed function (arguments, registers and the top of the user stack, or the
//! kernel's frame-pointer chain) and one for the returns of those that hand back a
//! block (the return value only), each probe's further events redirected into the
//! ring of its CPU; and the records drained out of them, told apart by event id.

use super::Probe;
use crate::record::records::{header_of, Collect, Record};
use perf_event::data::parse::Parser;
use perf_event::data::{self as pdata, RecordMetadata, Visitor};
use perf_event::{Builder, SampleFlag, Sampler};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, RawFd};

/// x86-64 perf_regs.h numbers: AX 0, CX 2, DX 3, SI 4, DI 5, BP 6, SP 7, IP 8; the kernel
/// writes the registers of the mask in bit order.
const CALL_REGS: u64 = (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8);
/// AX (the return value) and SP: the stack pointer after the return is the call's own
/// stack pointer at entry + 8, which tells a return from the calls whose returns were lost.
const RETURN_REGS: u64 = 1 | (1 << 7);
/// Ring sizes per CPU, tried in order (a probed call is a record of up to a few KiB with
/// its stack copy; the rings are drained every 20 ms or when a quarter full).
const RING_SIZES: [usize; 4] = [8 << 20, 2 << 20, 512 << 10, 64 << 10];
const RETURN_RING_SIZES: [usize; 4] = [1 << 20, 256 << 10, 64 << 10, 16 << 10];

/// How a call's callers are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stacks {
    /// The kernel's frame-pointer chain, with the return address read from the top of the
    /// stack (at a function's first instruction the caller has no frame of its own yet).
    FramePointers,
    /// A copy of the top `stack_bytes` of the user stack, unwound from DWARF CFI.
    Dwarf {
        /// Bytes copied per call, a multiple of 8 (the kernel's rule).
        stack_bytes: u32,
    },
}

/// One record of the recording.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    /// A call (or, `returned`, a return) of probe `probe`.
    Call {
        pid: u32,
        tid: u32,
        probe: usize,
        returned: bool,
        /// The first four arguments (calls) or the return value in `args[0]` (returns).
        args: [u64; 4],
        /// ip, sp, bp at the call, for unwinding (returns: the ip and sp after the return).
        regs: [u64; 3],
        stack: Vec<u8>,
        /// The kernel's call chain (frame-pointer mode).
        chain: Vec<u64>,
    },
    /// Mappings, tasks, losses: what the converter needs to place the calls.
    Other(Record),
}

/// A ring of one CPU and the events redirected into it.
pub(crate) struct Ring {
    sampler: Sampler,
    redirected: Vec<perf_event::Counter>,
    /// The probe of the ring's own event, then of each redirected one.
    probes: Vec<usize>,
    returns: bool,
}

impl Ring {
    /// The ring's events as counters, to be closed where the caller likes (the
    /// sampler's own event closes with the returned sampler's counter).
    pub(crate) fn into_counters(self) -> Vec<perf_event::Counter> {
        let mut all = self.redirected;
        all.push(self.sampler.into_counter());
        all
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.sampler.as_raw_fd()
    }

    /// Calls counted per probe on this CPU (every call, sampled or not; children's counts
    /// are in once they exited), added to `calls`.
    pub(crate) fn add_counts(&mut self, calls: &mut [u64]) {
        if self.returns {
            return;
        }
        let mut counters: Vec<&mut perf_event::Counter> = vec![&mut *self.sampler];
        counters.extend(self.redirected.iter_mut());
        for (counter, &probe) in counters.into_iter().zip(&self.probes) {
            if let (Ok(count), Some(slot)) = (counter.read(), calls.get_mut(probe)) {
                *slot += count;
            }
        }
    }

    /// Stop the ring's events from writing records (their breakpoints stay until they
    /// are closed): what is left to drain is then finite.
    pub(crate) fn disable(&mut self) {
        let _ = self.sampler.disable();
        for counter in &mut self.redirected {
            let _ = counter.disable();
        }
    }

    /// Copy out the records waiting in the ring, at most `limit` of them (a ring the
    /// probes refill as fast as it drains would otherwise never let go).
    pub(crate) fn drain_into(&mut self, ids: &HashMap<u64, (usize, bool)>, out: &mut Vec<(u64, Item)>, limit: usize) {
        let config = self.sampler.config().clone();
        for _ in 0..limit {
            let Some(record) = self.sampler.next_record() else { break };
            let header = header_of(&record);
            let bytes = record.to_contiguous();
            let mut parser = Parser::new(bytes.as_ref(), config.clone());
            // A record that does not parse is skipped, as the profiler's own source does.
            if let Ok(Some(item)) = parser.parse_record_with_header(Items { ids }, header) {
                out.push(item);
            }
        }
    }
}

struct Items<'i> {
    ids: &'i HashMap<u64, (usize, bool)>,
}

impl<'a> Visitor<'a> for Items<'_> {
    type Output = Option<(u64, Item)>;

    fn visit_unimplemented(self, _: RecordMetadata) -> Self::Output {
        None
    }
    fn visit_sample(self, s: pdata::Sample<'a>, _: RecordMetadata) -> Self::Output {
        let &(probe, returned) = self.ids.get(&s.id()?)?;
        let regs = s.regs_user().map(|r| r.regs.to_vec()).unwrap_or_default();
        let (args, ip_sp_bp) = if returned {
            let sp = regs.get(1).copied().unwrap_or(0);
            ([regs.first().copied().unwrap_or(0), 0, 0, 0], [s.ip().unwrap_or(0), sp, 0])
        } else {
            match regs.as_slice() {
                &[cx, dx, si, di, bp, sp, ip] => ([di, si, dx, cx], [ip, sp, bp]),
                _ => return None,
            }
        };
        let item = Item::Call {
            pid: s.pid()?,
            tid: s.tid()?,
            probe,
            returned,
            args,
            regs: ip_sp_bp,
            stack: s.stack_user().map(<[u8]>::to_vec).unwrap_or_default(),
            chain: s.callchain().map(<[u64]>::to_vec).unwrap_or_default(),
        };
        Some((s.time().unwrap_or(0), item))
    }
    fn visit_mmap2(self, m: pdata::Mmap2<'a>, meta: RecordMetadata) -> Self::Output {
        other(Collect::TASKS_AND_MAPPINGS.visit_mmap2(m, meta))
    }
    fn visit_comm(self, c: pdata::Comm<'a>, meta: RecordMetadata) -> Self::Output {
        other(Collect::TASKS_AND_MAPPINGS.visit_comm(c, meta))
    }
    fn visit_exit(self, e: pdata::Exit, meta: RecordMetadata) -> Self::Output {
        other(Collect::TASKS_AND_MAPPINGS.visit_exit(e, meta))
    }
    fn visit_fork(self, f: pdata::Fork, meta: RecordMetadata) -> Self::Output {
        other(Collect::TASKS_AND_MAPPINGS.visit_fork(f, meta))
    }
    fn visit_lost(self, l: pdata::Lost, meta: RecordMetadata) -> Self::Output {
        other(Collect::TASKS_AND_MAPPINGS.visit_lost(l, meta))
    }
}

fn other(record: Option<(u64, Record)>) -> Option<(u64, Item)> {
    record.map(|(time, r)| (time, Item::Other(r)))
}

/// The rings, and which probe (and whether its return) each event id stands for.
pub(crate) struct Opened {
    pub rings: Vec<Ring>,
    pub ids: HashMap<u64, (usize, bool)>,
}

/// Whose calls a recording's events watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watched {
    /// A child held before exec: counting starts at its exec.
    Exec(libc::pid_t),
    /// A running thread: counting starts now (threads it starts later inherit it).
    Thread(libc::pid_t),
}

/// Open the calls (and, `returns`, the returns of block-returning probes) of `probes`
/// on every task of `watched`, sampled every `every` calls: one ring per CPU and kind,
/// every further event redirected into it.
pub(crate) fn open(
    watched: &[Watched],
    probes: &[Probe],
    every: u64,
    stacks: Stacks,
    returns: bool,
) -> std::io::Result<Opened> {
    let mut opened = Opened { rings: Vec::new(), ids: HashMap::new() };
    let calls: Vec<(usize, &Probe)> = probes.iter().enumerate().collect();
    let returning: Vec<(usize, &Probe)> = calls.iter().copied().filter(|(_, p)| p.role.returns_block()).collect();
    for cpu in perflab_sys::machine::online_cpu_ids() {
        for (kind, returned) in [(&calls, false), (&returning, true)] {
            if returned && !returns {
                continue;
            }
            let mut ring: Option<Ring> = None;
            for &who in watched {
                ring = self::ring(who, cpu, kind, returned, every, stacks, &mut opened.ids, ring)?;
            }
            opened.rings.extend(ring);
        }
    }
    Ok(opened)
}

/// The events of `probes` on one task and CPU, redirected into `ring` (the first task's
/// ring of this CPU and kind) or, without one yet, into a new ring; the ring back.
#[allow(clippy::too_many_arguments)]
fn ring(
    who: Watched,
    cpu: usize,
    probes: &[(usize, &Probe)],
    returned: bool,
    every: u64,
    stacks: Stacks,
    ids: &mut HashMap<u64, (usize, bool)>,
    ring: Option<Ring>,
) -> std::io::Result<Option<Ring>> {
    let builder = |probe: &Probe, leader: bool| {
        let event = if returned { probe.returns } else { probe.calls };
        let mut b = Builder::new(event);
        match who {
            Watched::Exec(pid) => b.observe_pid(pid).enabled(false).enable_on_exec(true),
            Watched::Thread(tid) => b.observe_pid(tid).enabled(true),
        };
        b.one_cpu(cpu).inherit(true);
        b.sample_period(every).exclude_kernel(true).exclude_hv(true).sample_id_all(true);
        let mut flags = SampleFlag::IP | SampleFlag::TID | SampleFlag::TIME | SampleFlag::ID | SampleFlag::REGS_USER;
        if returned {
            b.sample_regs_user(RETURN_REGS);
        } else {
            b.sample_regs_user(CALL_REGS);
            flags |= SampleFlag::STACK_USER;
            match stacks {
                Stacks::FramePointers => {
                    // The return address at the top of the stack.
                    b.sample_stack_user(8);
                    flags |= SampleFlag::CALLCHAIN;
                    b.exclude_callchain_kernel(true).sample_max_stack(127);
                }
                Stacks::Dwarf { stack_bytes } => {
                    b.sample_stack_user(stack_bytes);
                }
            }
        }
        b.sample(flags);
        if leader && !returned {
            // Mappings and tasks, once per CPU and task, to place the calls.
            b.mmap(true).mmap2(true).comm(true).comm_exec(true).task(true);
        }
        b
    };
    let mut rest = probes;
    let mut ring = match ring {
        Some(ring) => ring,
        None => {
            let Some(((first_index, first), others)) = probes.split_first() else { return Ok(None) };
            rest = others;
            let (sampler, id) = open_ring(|| builder(first, true), returned)?;
            ids.insert(id, (*first_index, returned));
            Ring { sampler, redirected: Vec::new(), probes: vec![*first_index], returns: returned }
        }
    };
    for (i, &(index, probe)) in rest.iter().enumerate() {
        // A later task's first event carries its mappings and tasks.
        let leader = i == 0 && rest.len() == probes.len();
        let counter = match builder(probe, leader).build() {
            Ok(counter) => counter,
            // A thread that ended since it was listed has nothing left to watch.
            Err(e) if matches!(who, Watched::Thread(_)) && e.raw_os_error() == Some(libc::ESRCH) => break,
            Err(e) => return Err(e),
        };
        // SAFETY: both descriptors are perf events on the same CPU that we own.
        if unsafe { perf_event_open_sys::ioctls::SET_OUTPUT(counter.as_raw_fd(), ring.sampler.as_raw_fd()) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        ids.insert(counter.id(), (index, returned));
        ring.redirected.push(counter);
        ring.probes.push(index);
    }
    Ok(Some(ring))
}

/// A ring of the largest size the system allows, with its first event.
fn open_ring(builder: impl Fn() -> Builder<'static>, returned: bool) -> std::io::Result<(Sampler, u64)> {
    let sizes: &[usize] = if returned { &RETURN_RING_SIZES } else { &RING_SIZES };
    let mut result = Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    for &size in sizes {
        let mut b = builder();
        b.wakeup_watermark(size / 4);
        result = b.build().and_then(|c| {
            let id = c.id();
            c.sampled(size).map(|s| (s, id))
        });
        match &result {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::ENOMEM)) => continue,
            _ => break,
        }
    }
    result
}
