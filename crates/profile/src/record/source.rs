//! The live event source: perf_event_open sampling events, one ring buffer per online
//! CPU and kind of event (the sampled event, and with `--off-cpu` context switches),
//! opened on a held child, on running threads or on every task, with the fallbacks an
//! unprivileged user needs (user-only samples, smaller rings); and the records drained
//! out of those rings.

use super::records::{self, Collect, Timed};
use super::{CallGraph, RecordOptions};
use crate::error::OpenError;
use crate::unwind;
use perf_event::data::parse::Parser;
use perf_event::events::Software;
use perf_event::{Builder, SampleFlag, Sampler};
use perflab_sys::perf::counters;
use perflab_sys::perf::event::{Event, EventKind};
use std::os::fd::{AsRawFd, RawFd};

/// Ring buffer sizes per CPU, tried in order. At 10 kHz a drain every 50 ms needs
/// ~25 KiB, so the first leaves ample headroom for bursts of mmap records from
/// dlopen-heavy programs; the smaller ones fit unprivileged mlock limits.
const RING_SIZES: [usize; 4] = [512 * 1024, 128 * 1024, 32 * 1024, 8 * 1024];
/// With `-g dwarf` every sample carries its stack copy (16 KiB by default: 16 MB/s per
/// busy CPU at 1 kHz), so start larger.
const DWARF_RING_SIZES: [usize; 6] = [4096 * 1024, 1024 * 1024, 512 * 1024, 128 * 1024, 32 * 1024, 8 * 1024];
/// Frames per call chain: perf's default (`perf_event_max_stack`).
pub(crate) const MAX_STACK: u16 = 127;

/// Whose events to open.
#[derive(Clone, Copy)]
pub(crate) enum Observe {
    /// A child held between fork and exec: sampling starts at its exec.
    Exec(i32),
    /// A running thread: sampling starts now; threads it creates later inherit it.
    Thread(i32),
    /// Every task (one CPU at a time).
    AllTasks,
}

/// One CPU's ring buffer for one kind of event, with the same event of further threads
/// redirected into it (PERF_EVENT_IOC_SET_OUTPUT): attaching to a process with many
/// threads costs one ring per CPU, not one per thread.
pub(crate) struct Ring {
    sampler: Sampler,
    redirected: Vec<perf_event::Counter>,
    cpu: usize,
    /// Whether this ring holds context-switch samples (off-CPU), not the sampled event.
    off_cpu: bool,
    /// The weight of a sample that carries no period of its own (`-c N`: see `configure`).
    fixed_period: u64,
    include_kernel: bool,
}

impl Ring {
    pub(crate) fn fd(&self) -> RawFd {
        self.sampler.as_raw_fd()
    }

    /// Copy out every record waiting in the ring buffer.
    pub(crate) fn drain_into(&mut self, records: &mut Vec<Timed>) {
        let config = self.sampler.config().clone();
        while let Some(record) = self.sampler.next_record() {
            let header = records::header_of(&record);
            let bytes = record.to_contiguous();
            let mut parser = Parser::new(bytes.as_ref(), config.clone());
            if header.type_ == perf_event_open_sys::bindings::PERF_RECORD_SWITCH {
                // perf-event-data 0.1.8 fails on a SWITCH record's empty body (it reads
                // "the rest" of nothing); all it carries is the sample id.
                if let Ok((_, meta)) = parser.parse_metadata_with_header(header) {
                    records.extend(records::switch(&meta));
                }
                continue;
            }
            // A record we cannot parse is skipped rather than aborting the whole recording.
            if let Ok(Some(record)) = parser
                .parse_record_with_header(Collect { off_cpu: self.off_cpu, fixed_period: self.fixed_period }, header)
            {
                records.push(record);
            }
        }
    }
}

/// The call-chain depth to ask for: the kernel refuses more than its
/// `perf_event_max_stack`.
fn max_stack() -> u16 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .ok()
        .and_then(|t| t.trim().parse::<u16>().ok())
        .map_or(MAX_STACK, |limit| limit.min(MAX_STACK))
}

fn configure(
    b: &mut Builder,
    opts: &RecordOptions,
    spec: Option<&Event>,
    off_cpu: bool,
    who: Observe,
    include_kernel: bool,
) {
    match who {
        Observe::Exec(pid) => b.observe_pid(pid).enabled(false).enable_on_exec(true).inherit(true),
        Observe::Thread(tid) => b.observe_pid(tid).enabled(true).inherit(true),
        Observe::AllTasks => b.any_pid().enabled(true),
    };
    let mut flags = SampleFlag::IP | SampleFlag::TID | SampleFlag::TIME;
    // A sample's own period is asked for except under `-c N`, as perf does: with
    // PERF_SAMPLE_PERIOD and a fixed period the kernel samples a software event at every
    // occurrence (kernel/events/core.c, perf_swevent_event), so `-e page-faults -c 100` took
    // 100 times the samples asked for. Such samples weigh N (`Ring::fixed_period`).
    if opts.period.is_none() || off_cpu {
        flags |= SampleFlag::PERIOD;
    }
    if opts.call_graph != CallGraph::None || off_cpu {
        flags |= SampleFlag::CALLCHAIN;
        b.sample_max_stack(max_stack());
    }
    if let CallGraph::Dwarf { stack_bytes } = opts.call_graph {
        // The kernel still walks kernel frames; user frames come from the copy.
        flags |= SampleFlag::REGS_USER | SampleFlag::STACK_USER;
        b.exclude_callchain_user(true).sample_regs_user(unwind::REGS_MASK).sample_stack_user(stack_bytes);
    }
    if off_cpu {
        // Every switch-out, with PERF_RECORD_SWITCH records for the switch-ins; the
        // mappings and task records come through the sampling rings.
        b.sample_period(1).context_switch(true);
    } else {
        // A tracepoint or a uprobe is sampled at every event by default, as perf does.
        let tracepoint = spec.is_some_and(|s| matches!(s.kind, EventKind::Tracepoint(_) | EventKind::Uprobe(_)));
        match opts.period.or(tracepoint.then_some(1)) {
            Some(period) => b.sample_period(period),
            None => b.sample_frequency(opts.frequency_hz),
        };
        b.mmap(true).mmap2(true).comm(true).comm_exec(true).task(true);
    }
    b.sample(flags).sample_id_all(true).exclude_kernel(!include_kernel).exclude_hv(true);
    if let Some(spec) = spec {
        // perf's :u/:k/:h and :p… (u/k/h override the kernel fallback's choice).
        spec.modifiers.apply(b, !include_kernel);
    }
}

/// Why an event could not be opened, as the one line the user sees.
fn open_failure(source: std::io::Error, opts: &RecordOptions, off_cpu: bool, who: Observe, cpu: usize) -> OpenError {
    let paranoid = counters::paranoid_level().map_or("unknown".into(), |l| l.to_string());
    let event = if off_cpu { "context-switches" } else { opts.event.as_str() }.to_string();
    match (source.raw_os_error(), who) {
        (Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV), _) => {
            OpenError::Unsupported { event, source }
        }
        (Some(libc::EACCES) | Some(libc::EPERM), _) if off_cpu => OpenError::OffCpuNotAllowed { paranoid, source },
        (Some(libc::EACCES) | Some(libc::EPERM), Observe::AllTasks) => {
            OpenError::AllCpusNotAllowed { paranoid, source }
        }
        (Some(libc::EACCES) | Some(libc::EPERM), Observe::Thread(tid)) => {
            OpenError::ThreadNotAllowed { tid, paranoid, source }
        }
        (Some(libc::EACCES) | Some(libc::EPERM), Observe::Exec(_)) => OpenError::NotAllowed { paranoid, source },
        _ => OpenError::Open { event, cpu, source },
    }
}

/// Open one kind of event for every observed task on every online CPU. A thread that
/// exits meanwhile is skipped (no ring at all when every observed thread is gone).
fn open_rings(observed: &[Observe], off_cpu: bool, opts: &RecordOptions) -> Result<Vec<Ring>, OpenError> {
    let spec = if off_cpu { None } else { Some(perflab_sys::perf::event::parse_one(&opts.event)?) };
    let event = spec.as_ref().map_or(EventKind::Software(Software::CONTEXT_SWITCHES), |s| s.kind);
    let mut rings = Vec::new();
    for cpu in perflab_sys::machine::online_cpu_ids() {
        let mut ring: Option<Ring> = None;
        for &who in observed {
            // `ring`: the size of the ring this event gets, None when it writes to another's.
            let open = |include_kernel: bool, ring: Option<usize>| -> std::io::Result<perf_event::Counter> {
                let mut b = Builder::new(event);
                b.one_cpu(cpu);
                configure(&mut b, opts, spec.as_ref(), off_cpu, who, include_kernel);
                if let Some(size) = ring {
                    // Wake up at a quarter full: headroom for bursts between drains.
                    b.wakeup_watermark(size / 4);
                }
                b.build()
            };
            let gone = |e: &std::io::Error| matches!(who, Observe::Thread(_)) && e.raw_os_error() == Some(libc::ESRCH);
            if let Some(ring) = &mut ring {
                match open(ring.include_kernel, None) {
                    Ok(counter) => {
                        redirect(&counter, ring)?;
                        ring.redirected.push(counter);
                    }
                    Err(e) if gone(&e) => {}
                    Err(e) => return Err(open_failure(e, opts, off_cpu, who, cpu)),
                }
                continue;
            }
            // Kernel samples need perf_event_paranoid < 2 or privileges: fall back to user
            // only (off-CPU samples are taken in the kernel: no fallback). Unprivileged
            // users may lock only perf_event_mlock_kb (516 KiB by default) of ring buffers
            // across all CPUs: fall back to smaller rings (drained more often).
            let mut result = Err(std::io::Error::from_raw_os_error(libc::EINVAL));
            let kernel_choices: &[bool] = if off_cpu { &[true] } else { &[true, false] };
            let dwarf = matches!(opts.call_graph, CallGraph::Dwarf { .. });
            let sizes: &[usize] = if dwarf { &DWARF_RING_SIZES } else { &RING_SIZES };
            'found: for &include_kernel in kernel_choices {
                for &size in sizes {
                    result = open(include_kernel, Some(size)).and_then(|c| {
                        let sampler = c.sampled(size)?;
                        Ok(Ring {
                            sampler,
                            redirected: Vec::new(),
                            cpu,
                            off_cpu,
                            fixed_period: opts.period.unwrap_or(1),
                            include_kernel,
                        })
                    });
                    match &result {
                        Ok(_) => break 'found,
                        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::ENOMEM)) => continue,
                        Err(e) if include_kernel && e.raw_os_error() == Some(libc::EACCES) => continue 'found,
                        Err(_) => break 'found,
                    }
                }
            }
            match result {
                Ok(r) => ring = Some(r),
                Err(e) if gone(&e) => {}
                Err(e) => return Err(open_failure(e, opts, off_cpu, who, cpu)),
            }
        }
        rings.extend(ring);
    }
    Ok(rings)
}

/// Send `counter`'s records into `ring`'s buffer.
fn redirect(counter: &perf_event::Counter, ring: &Ring) -> Result<(), OpenError> {
    // SAFETY: both descriptors are perf events on the same CPU that we own.
    if unsafe { perf_event_open_sys::ioctls::SET_OUTPUT(counter.as_raw_fd(), ring.sampler.as_raw_fd()) } < 0 {
        return Err(OpenError::Redirect(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The sampling rings and, with `--off-cpu`, the context-switch rings.
pub(crate) fn open_all(observed: &[Observe], opts: &RecordOptions) -> Result<Vec<Ring>, OpenError> {
    let mut rings = open_rings(observed, false, opts)?;
    if opts.off_cpu {
        rings.extend(open_rings(observed, true, opts)?);
    }
    Ok(rings)
}

/// Redirect newly opened rings (of threads found later) into the existing ones of the
/// same CPU and kind.
pub(crate) fn join_rings(rings: &mut Vec<Ring>, new_rings: Vec<Ring>) -> Result<(), OpenError> {
    if rings.is_empty() {
        *rings = new_rings;
        return Ok(());
    }
    for new in new_rings {
        let target =
            rings.iter_mut().find(|r| r.off_cpu == new.off_cpu && r.cpu == new.cpu).ok_or(OpenError::CpuOffline)?;
        let Ring { sampler, redirected, .. } = new;
        let counter = sampler.into_counter();
        redirect(&counter, target)?;
        target.redirected.push(counter);
        target.redirected.extend(redirected);
    }
    Ok(())
}
