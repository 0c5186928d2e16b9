//! Sampling with perf_event_open: one sampling event per online CPU on a command's pid
//! (inherit + enable_on_exec, so threads and children are followed and nothing before
//! exec is sampled), on every thread of attached processes (`-p`) or on every task
//! (`-a`), with mmap/comm/task tracking and, with `--off-cpu`, context-switch samples in
//! rings of their own. A [`Session`] drains the ring buffers while the target runs (with
//! `-g dwarf` unwinding each batch's stack copies at once), and the records are replayed
//! in time order so that every sample is normalised to (object, file offset) against the
//! address space it was taken in.

use super::format::{
    DwarfStats, FrameRef, JitSymbol, ObjectRef, Profile, RecordTarget, SampleCount, Space, StackCount, Task,
};
use super::jitmap::{self, JitMap};
use super::target;
use super::unwind::{self, DwarfUnwinder, Unwinding, UserStack};
use crate::error::Failure;
use crate::executor::process;
use crate::measure::counters::{self, EventKind};
use crate::usage;
use perf_event::data::parse::Parser;
use perf_event::data::{self as pdata, RecordMetadata, Visitor};
use perf_event::events::Software;
use perf_event::{Builder, SampleFlag, Sampler};
use std::collections::{BTreeMap, HashMap};
use std::os::fd::AsRawFd;

/// Ring buffer sizes per CPU, tried in order. At 10 kHz a drain every 50 ms needs
/// ~25 KiB, so the first leaves ample headroom for bursts of mmap records from
/// dlopen-heavy programs; the smaller ones fit unprivileged mlock limits.
const RING_SIZES: [usize; 4] = [512 * 1024, 128 * 1024, 32 * 1024, 8 * 1024];
/// With `-g dwarf` every sample carries its stack copy (16 KiB by default: 16 MB/s per
/// busy CPU at 1 kHz), so start larger.
const DWARF_RING_SIZES: [usize; 6] = [4096 * 1024, 1024 * 1024, 512 * 1024, 128 * 1024, 32 * 1024, 8 * 1024];
const PERF_RECORD_MISC_COMM_EXEC: u16 = 1 << 13;
const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
const PERF_RECORD_MISC_KERNEL: u16 = 1;
const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;
const PERF_RECORD_MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
/// Callchain entries at or above this (PERF_CONTEXT_MAX = -4095) are context markers.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;
/// Frames per call chain: perf's default (`perf_event_max_stack`).
const MAX_STACK: u16 = 127;

#[derive(Debug, Clone, Default)]
pub struct RecordOptions {
    pub argv: Vec<String>,
    /// perf event name to sample (cpu-clock needs no PMU).
    pub event: String,
    pub frequency_hz: u64,
    /// Record call chains.
    pub call_graph: bool,
    /// How call chains are unwound (with `call_graph`).
    pub unwinding: Unwinding,
    /// Bytes of user stack copied per sample for DWARF unwinding.
    pub stack_bytes: u32,
    /// Send the program's stdout to stderr (when perflab's own report goes to stdout).
    pub stdout_to_stderr: bool,
    /// Send the program's stdout to /dev/null and keep its stderr (under a live view).
    pub discard_output: bool,
    /// Attach to these running processes (every thread, and the tasks they start)
    /// instead of running a command.
    pub pids: Vec<u32>,
    /// Sample every task on every CPU instead of running a command.
    pub all_cpus: bool,
    /// Stop after this long (`pids` and `all_cpus` only; a command runs to its end).
    pub duration: Option<std::time::Duration>,
    /// Also record where threads block and for how long (implies call stacks).
    pub off_cpu: bool,
}

impl RecordOptions {
    /// Whether user stacks are copied and unwound from DWARF CFI (`-g dwarf`), for the
    /// off-CPU samples too.
    fn dwarf(&self) -> bool {
        self.call_graph && self.unwinding == Unwinding::Dwarf
    }
}

/// What a recording produced; `interrupted` means the profile holds what was sampled
/// before Ctrl-C.
pub struct Recording {
    pub profile: Profile,
    pub interrupted: bool,
}

/// A record copied out of the ring buffer, kept until the run ends so records from all
/// CPUs can be merged by timestamp.
#[derive(Debug, Clone)]
enum RingRecord {
    Sample {
        pid: u32,
        tid: u32,
        ip: u64,
        period: u64,
        kernel: bool,
        /// The raw callchain with its context markers; empty without `-g`. With
        /// `-g dwarf` the kernel supplies only kernel frames, and the user frames
        /// unwound from the stack copy are appended after a `PERF_CONTEXT_USER` marker.
        chain: Vec<u64>,
    },
    /// A `Sample` or `SwitchedOut` with its user registers and stack copy (`-g dwarf`)
    /// until [`unwind_batch`] turns it into that record with the unwound frames.
    StackSample(Box<RingRecord>, UserStack),
    Mmap {
        pid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: String,
    },
    Comm {
        pid: u32,
        tid: u32,
        comm: String,
        exec: bool,
    },
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
    },
    /// A process (pid == tid) or thread exited.
    Exit {
        pid: u32,
        tid: u32,
    },
    Lost(u64),
    /// A thread leaving the CPU (a context-switch sample), with its call chain (like a
    /// `Sample`'s, user frames appended after unwinding with `-g dwarf`).
    SwitchedOut {
        pid: u32,
        tid: u32,
        ip: u64,
        chain: Vec<u64>,
    },
    /// PERF_RECORD_SWITCH(_CPU_WIDE) for the thread in its sample id: `out` when it
    /// leaves the CPU, `preempted` when it left still runnable.
    Switch {
        tid: u32,
        out: bool,
        preempted: bool,
    },
}

/// Turns ring records into [`RingRecord`]s; samples of an off-CPU ring are switch-outs.
struct Collect {
    off_cpu: bool,
}

impl<'a> Visitor<'a> for Collect {
    type Output = Option<(u64, RingRecord)>;

    fn visit_unimplemented(self, _: RecordMetadata) -> Self::Output {
        None
    }
    fn visit_sample(self, s: pdata::Sample<'a>, meta: RecordMetadata) -> Self::Output {
        let kernel = meta.misc() & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL;
        let chain = s.callchain().map(<[u64]>::to_vec).unwrap_or_default();
        let ev = if self.off_cpu {
            RingRecord::SwitchedOut { pid: s.pid()?, tid: s.tid()?, ip: s.ip()?, chain }
        } else {
            RingRecord::Sample {
                pid: s.pid()?,
                tid: s.tid()?,
                ip: s.ip()?,
                period: s.period().unwrap_or(1),
                kernel,
                chain,
            }
        };
        let ev = match s.regs_user().and_then(|r| UserStack::new(&r.regs, s.stack_user().unwrap_or_default())) {
            Some(stack) => RingRecord::StackSample(Box::new(ev), stack),
            None => ev,
        };
        Some((s.time().unwrap_or(0), ev))
    }
    fn visit_mmap2(self, m: pdata::Mmap2<'a>, meta: RecordMetadata) -> Self::Output {
        let path = String::from_utf8_lossy(&m.filename).into_owned();
        let ev = RingRecord::Mmap { pid: m.pid, start: m.addr, len: m.len, pgoff: m.pgoff, path };
        Some((meta.sample_id().time().unwrap_or(0), ev))
    }
    fn visit_comm(self, c: pdata::Comm<'a>, meta: RecordMetadata) -> Self::Output {
        let exec = meta.misc() & PERF_RECORD_MISC_COMM_EXEC != 0;
        let ev = RingRecord::Comm { pid: c.pid, tid: c.tid, comm: String::from_utf8_lossy(&c.comm).into_owned(), exec };
        Some((meta.sample_id().time().unwrap_or(0), ev))
    }
    fn visit_exit(self, e: pdata::Exit, _: RecordMetadata) -> Self::Output {
        Some((e.time, RingRecord::Exit { pid: e.pid, tid: e.tid }))
    }
    fn visit_fork(self, f: pdata::Fork, _: RecordMetadata) -> Self::Output {
        Some((f.time, RingRecord::Fork { pid: f.pid, ppid: f.ppid, tid: f.tid }))
    }
    fn visit_lost(self, l: pdata::Lost, meta: RecordMetadata) -> Self::Output {
        Some((meta.sample_id().time().unwrap_or(0), RingRecord::Lost(l.lost)))
    }
    fn visit_switch_cpu_wide(self, _: pdata::SwitchCpuWide, meta: RecordMetadata) -> Self::Output {
        switch(&meta)
    }
}

/// A switch record describes the task in its sample id (the one leaving or arriving).
fn switch(meta: &RecordMetadata) -> Option<(u64, RingRecord)> {
    let out = meta.misc() & PERF_RECORD_MISC_SWITCH_OUT != 0;
    let preempted = meta.misc() & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0;
    let id = meta.sample_id();
    Some((id.time()?, RingRecord::Switch { tid: id.tid()?, out, preempted }))
}

/// Online CPU ids from sysfs ("0-3,6").
fn online_cpus() -> Vec<usize> {
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
        cpus = (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
    }
    cpus
}

/// The call-chain depth to ask for: the kernel refuses more than its
/// `perf_event_max_stack`.
fn max_stack() -> u16 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .ok()
        .and_then(|t| t.trim().parse::<u16>().ok())
        .map_or(MAX_STACK, |limit| limit.min(MAX_STACK))
}

/// Whose events to open.
#[derive(Clone, Copy)]
enum Observe {
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
struct Ring {
    sampler: Sampler,
    redirected: Vec<perf_event::Counter>,
    cpu: usize,
    /// Whether this ring holds context-switch samples (off-CPU), not the sampled event.
    off_cpu: bool,
    include_kernel: bool,
}

fn configure(b: &mut Builder, opts: &RecordOptions, off_cpu: bool, who: Observe, include_kernel: bool) {
    match who {
        Observe::Exec(pid) => b.observe_pid(pid).enabled(false).enable_on_exec(true).inherit(true),
        Observe::Thread(tid) => b.observe_pid(tid).enabled(true).inherit(true),
        Observe::AllTasks => b.any_pid().enabled(true),
    };
    let mut flags = SampleFlag::IP | SampleFlag::TID | SampleFlag::TIME | SampleFlag::PERIOD;
    if opts.call_graph || off_cpu {
        flags |= SampleFlag::CALLCHAIN;
        b.sample_max_stack(max_stack());
    }
    if opts.dwarf() {
        // The kernel still walks kernel frames; user frames come from the copy.
        flags |= SampleFlag::REGS_USER | SampleFlag::STACK_USER;
        b.exclude_callchain_user(true).sample_regs_user(unwind::REGS_MASK).sample_stack_user(opts.stack_bytes);
    }
    if off_cpu {
        // Every switch-out, with PERF_RECORD_SWITCH records for the switch-ins; the
        // mappings and task records come through the sampling rings.
        b.sample_period(1).context_switch(true);
    } else {
        b.sample_frequency(opts.frequency_hz).mmap(true).mmap2(true).comm(true).comm_exec(true).task(true);
    }
    b.sample(flags).sample_id_all(true).exclude_kernel(!include_kernel).exclude_hv(true);
}

/// Why an event could not be opened, as the one line the user sees.
fn open_failure(e: &std::io::Error, opts: &RecordOptions, off_cpu: bool, who: Observe, cpu: usize) -> Failure {
    let paranoid = crate::measure::counters::paranoid_level().map_or("unknown".into(), |l| l.to_string());
    let event = if off_cpu { "context-switches" } else { opts.event.as_str() };
    match (e.raw_os_error(), who) {
        (Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV), _) => usage!(
            "event `{event}` is not supported on this machine ({e}); cpu-clock works without a hardware PMU"
        ),
        (Some(libc::EACCES) | Some(libc::EPERM), _) if off_cpu => usage!(
            "--off-cpu needs kernel samples (perf_event_paranoid is {paranoid}); run as root or set /proc/sys/kernel/perf_event_paranoid to 1"
        ),
        (Some(libc::EACCES) | Some(libc::EPERM), Observe::AllTasks) => usage!(
            "not allowed to sample every CPU (perf_event_paranoid is {paranoid}); -a needs root, CAP_PERFMON or perf_event_paranoid ≤ 0"
        ),
        (Some(libc::EACCES) | Some(libc::EPERM), Observe::Thread(tid)) => usage!(
            "not allowed to attach to thread {tid} (perf_event_paranoid is {paranoid}); another user's process needs root or CAP_PERFMON, your own needs perf_event_paranoid ≤ 2"
        ),
        (Some(libc::EACCES) | Some(libc::EPERM), Observe::Exec(_)) => usage!(
            "not allowed to sample (perf_event_paranoid is {paranoid}); run as root or lower /proc/sys/kernel/perf_event_paranoid"
        ),
        _ => usage!("cannot open event `{event}` on CPU {cpu}: {e}"),
    }
}

/// Open one kind of event for every observed task on every online CPU. A thread that
/// exits meanwhile is skipped (no ring at all when every observed thread is gone).
fn open_rings(observed: &[Observe], off_cpu: bool, opts: &RecordOptions) -> Result<Vec<Ring>, Failure> {
    let event =
        if off_cpu { EventKind::Software(Software::CONTEXT_SWITCHES) } else { counters::event(&opts.event)?.kind };
    let mut rings = Vec::new();
    for cpu in online_cpus() {
        let mut ring: Option<Ring> = None;
        for &who in observed {
            // `ring`: the size of the ring this event gets, None when it writes to another's.
            let open = |include_kernel: bool, ring: Option<usize>| -> std::io::Result<perf_event::Counter> {
                let mut b = Builder::new(event);
                b.one_cpu(cpu);
                configure(&mut b, opts, off_cpu, who, include_kernel);
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
                        // SAFETY: both descriptors are perf events on the same CPU that we own.
                        let redirected = unsafe {
                            perf_event_open_sys::ioctls::SET_OUTPUT(counter.as_raw_fd(), ring.sampler.as_raw_fd())
                        };
                        if redirected < 0 {
                            let e = std::io::Error::last_os_error();
                            return Err(usage!("cannot share a ring buffer between threads: {e}"));
                        }
                        ring.redirected.push(counter);
                    }
                    Err(e) if gone(&e) => {}
                    Err(e) => return Err(open_failure(&e, opts, off_cpu, who, cpu)),
                }
                continue;
            }
            // Kernel samples need perf_event_paranoid < 2 or privileges: fall back to user
            // only (off-CPU samples are taken in the kernel: no fallback). Unprivileged
            // users may lock only perf_event_mlock_kb (516 KiB by default) of ring buffers
            // across all CPUs: fall back to smaller rings (drained more often).
            let mut result = Err(std::io::Error::from_raw_os_error(libc::EINVAL));
            let kernel_choices: &[bool] = if off_cpu { &[true] } else { &[true, false] };
            let sizes: &[usize] = if opts.dwarf() { &DWARF_RING_SIZES } else { &RING_SIZES };
            'found: for &include_kernel in kernel_choices {
                for &size in sizes {
                    result = open(include_kernel, Some(size)).and_then(|c| {
                        let sampler = c.sampled(size)?;
                        Ok(Ring { sampler, redirected: Vec::new(), cpu, off_cpu, include_kernel })
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
                Err(e) => return Err(open_failure(&e, opts, off_cpu, who, cpu)),
            }
        }
        rings.extend(ring);
    }
    Ok(rings)
}

/// The sampling rings and, with `--off-cpu`, the context-switch rings.
fn open_all(observed: &[Observe], opts: &RecordOptions) -> Result<Vec<Ring>, Failure> {
    let mut rings = open_rings(observed, false, opts)?;
    if opts.off_cpu {
        rings.extend(open_rings(observed, true, opts)?);
    }
    Ok(rings)
}

/// Copy out every record waiting in the ring buffers; with `-g dwarf`, unwind the
/// new batch's stacks right away.
fn drain(rings: &mut [Ring], events: &mut Vec<(u64, RingRecord)>, unwinder: &mut Option<(DwarfUnwinder, DwarfStats)>) {
    let before = events.len();
    for ring in rings.iter_mut() {
        let config = ring.sampler.config().clone();
        while let Some(record) = ring.sampler.next_record() {
            let header = perf_event_open_sys::bindings::perf_event_header {
                type_: record.ty(),
                misc: record.misc(),
                size: (record.len() + std::mem::size_of::<perf_event_open_sys::bindings::perf_event_header>()) as u16,
            };
            let bytes = record.to_contiguous();
            let mut parser = Parser::new(bytes.as_ref(), config.clone());
            if header.type_ == perf_event_open_sys::bindings::PERF_RECORD_SWITCH {
                // perf-event-data 0.1.8 fails on a SWITCH record's empty body (it reads
                // "the rest" of nothing); all it carries is the sample id.
                if let Ok((_, meta)) = parser.parse_metadata_with_header(header) {
                    events.extend(switch(&meta));
                }
                continue;
            }
            // A record we cannot parse is skipped rather than aborting the whole recording.
            if let Ok(Some(ev)) = parser.parse_record_with_header(Collect { off_cpu: ring.off_cpu }, header) {
                events.push(ev);
            }
        }
    }
    if let Some((unwinder, stats)) = unwinder {
        unwind_batch(unwinder, stats, &mut events[before..]);
    }
}

/// How often records below the wake-up watermark are drained.
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Why a recording stops (or that it goes on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Running,
    /// The command exited, or every attached process did.
    TargetEnded,
    /// `--duration` passed.
    DurationElapsed,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// A recording in progress: the target, its open events and the records drained so far.
pub struct Session {
    opts: RecordOptions,
    rings: Vec<Ring>,
    /// The profiled command (command target).
    child: Option<process::Child>,
    child_pidfd: Option<std::os::fd::RawFd>,
    /// Attached processes still running, with their CPU time when recording began.
    watched: Vec<(u32, std::os::fd::OwnedFd, Option<f64>)>,
    cpu_of_exited: f64,
    started: String,
    start: std::time::Instant,
    /// Records drained and not yet replayed.
    events: Vec<(u64, RingRecord)>,
    /// Mapping and task records already replayed for a live view, kept so that later
    /// samples still resolve (samples are dropped once shown).
    history: Vec<(u64, RingRecord)>,
    /// With `-g dwarf`: the unwinder (fed the mappings of every drained batch) and what
    /// it did.
    unwinder: Option<(DwarfUnwinder, DwarfStats)>,
}

impl Session {
    /// Open the events on the target (starting the command, if that is the target).
    pub fn start(opts: &RecordOptions) -> Result<Session, Failure> {
        let mut opts = opts.clone();
        opts.call_graph |= opts.off_cpu;
        check_options(&opts)?;
        let started = chrono::Utc::now().to_rfc3339();
        let unwinder = opts.dwarf().then(|| (DwarfUnwinder::default(), DwarfStats::new(opts.stack_bytes)));
        let mut session = Session {
            opts,
            rings: Vec::new(),
            child: None,
            child_pidfd: None,
            watched: Vec::new(),
            cpu_of_exited: 0.0,
            started,
            start: std::time::Instant::now(),
            events: Vec::new(),
            history: Vec::new(),
            unwinder,
        };
        if session.opts.all_cpus {
            session.rings = open_all(&[Observe::AllTasks], &session.opts)?;
            session.add_existing(&target::all_pids());
        } else if !session.opts.pids.is_empty() {
            session.attach()?;
        } else {
            session.spawn()?;
        }
        session.start = std::time::Instant::now();
        Ok(session)
    }

    /// Start the command, held between fork and exec while the events are opened on it.
    fn spawn(&mut self) -> Result<(), Failure> {
        let opts = &self.opts;
        let program = crate::plan::command::resolve_program(&opts.argv[0])?;
        let output = match (opts.discard_output, opts.stdout_to_stderr) {
            (true, _) => process::Output::Discard,
            (false, true) => process::Output::StdoutToStderr,
            (false, false) => process::Output::Inherit,
        };
        let prepared = process::Prepared::new(&program, &opts.argv, output).map_err(|e| usage!("{e}"))?;
        let mut rings = Vec::new();
        let mut open_failure = None;
        let mut gate = |pid: libc::pid_t| match open_all(&[Observe::Exec(pid)], opts) {
            Ok(r) => {
                rings = r;
                Ok(())
            }
            Err(failure) => {
                let message = failure.to_string();
                open_failure = Some(failure);
                Err(anyhow::anyhow!(message))
            }
        };
        let mut child = match process::start(&prepared, &process::Environment::inherited(), Some(&mut gate)) {
            Ok(child) => child,
            Err(process::SpawnError::Probe(e)) => return Err(open_failure.unwrap_or_else(|| usage!("{e:#}"))),
            Err(process::SpawnError::Interrupted) => {
                return Err(Failure::Interrupted("interrupted before the profiled command started".into()))
            }
            Err(process::SpawnError::Exec(e)) => return Err(usage!("{e}")),
        };
        self.child_pidfd = Some(child.pidfd().map_err(|e| Failure::Other(anyhow::anyhow!("{e}")))?);
        self.child = Some(child);
        self.rings = rings;
        Ok(())
    }

    /// Open the events on every thread of the attached processes. Threads started
    /// before their creator's event was open do not inherit it: list again until no
    /// new thread appears.
    fn attach(&mut self) -> Result<(), Failure> {
        let pids = self.opts.pids.clone();
        for &pid in &pids {
            self.watched.push((pid, target::pidfd(pid)?, target::cpu_seconds(pid)));
        }
        let mut opened: std::collections::HashSet<u32> = std::collections::HashSet::new();
        for _ in 0..10 {
            let mut new = Vec::new();
            for &pid in &pids {
                new.extend(target::threads(pid).unwrap_or_default().into_iter().filter(|t| !opened.contains(t)));
            }
            if new.is_empty() {
                break;
            }
            let observed: Vec<Observe> = new.iter().map(|&t| Observe::Thread(t as i32)).collect();
            // Later threads join the first rings opened (one per CPU and kind).
            let rings = open_all(&observed, &self.opts)?;
            self.join_rings(rings)?;
            opened.extend(new);
        }
        if self.rings.is_empty() {
            return Err(usage!("no thread of PID {} is left to attach to", join(&pids)));
        }
        self.add_existing(&pids);
        Ok(())
    }

    /// Redirect newly opened rings into the existing ones of the same CPU and kind.
    fn join_rings(&mut self, rings: Vec<Ring>) -> Result<(), Failure> {
        if self.rings.is_empty() {
            self.rings = rings;
            return Ok(());
        }
        for new in rings {
            let target = self
                .rings
                .iter_mut()
                .find(|r| r.off_cpu == new.off_cpu && r.cpu == new.cpu)
                .ok_or_else(|| usage!("a CPU went offline while attaching"))?;
            let Ring { sampler, redirected, .. } = new;
            let counter = sampler.into_counter();
            // SAFETY: both descriptors are perf events on the same CPU that we own.
            if unsafe { perf_event_open_sys::ioctls::SET_OUTPUT(counter.as_raw_fd(), target.sampler.as_raw_fd()) } < 0 {
                let e = std::io::Error::last_os_error();
                return Err(usage!("cannot share a ring buffer between threads: {e}"));
            }
            target.redirected.push(counter);
            target.redirected.extend(redirected);
        }
        Ok(())
    }

    /// Mappings and thread names that existed before the events were opened, placed
    /// before every real record (time 0); the unwinder learns the mappings before the
    /// first drain.
    fn add_existing(&mut self, pids: &[u32]) {
        let (mappings, threads) = target::existing(pids);
        for t in threads {
            self.events.push((0, RingRecord::Comm { pid: t.pid, tid: t.tid, comm: t.comm, exec: false }));
        }
        for m in mappings {
            if let Some((unwinder, _)) = &mut self.unwinder {
                unwinder.mmap(m.pid, m.start, m.len, m.pgoff, &m.path);
            }
            self.events
                .push((0, RingRecord::Mmap { pid: m.pid, start: m.start, len: m.len, pgoff: m.pgoff, path: m.path }));
        }
    }

    /// Wait up to `timeout` for records, Ctrl-C or the target's end, and drain the rings.
    pub fn poll(&mut self, timeout: std::time::Duration, interrupt: &crate::interrupt::Interrupt) -> Progress {
        let deadline = self.opts.duration.map(|d| d.saturating_sub(self.start.elapsed()));
        let timeout = deadline.map_or(timeout, |left| left.min(timeout));
        let mut fds = vec![libc::pollfd { fd: interrupt.fd(), events: libc::POLLIN, revents: 0 }];
        fds.extend(self.child_pidfd.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }));
        fds.extend(self.watched.iter().map(|(_, fd, _)| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        fds.extend(self.rings.iter().map(|r| libc::pollfd {
            fd: r.sampler.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        // SAFETY: fds is a valid array for the duration of the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout.as_millis() as i32) };
        drain(&mut self.rings, &mut self.events, &mut self.unwinder);
        if interrupt.requested() {
            return Progress::Interrupted;
        }
        let mut next = 1;
        if self.child_pidfd.is_some() {
            if fds[1].revents != 0 {
                return Progress::TargetEnded;
            }
            next = 2;
        }
        let exited: Vec<bool> = fds[next..next + self.watched.len()].iter().map(|f| f.revents != 0).collect();
        if exited.iter().any(|&e| e) {
            let mut i = 0;
            let mut cpu_of_exited = 0.0;
            self.watched.retain(|(pid, _, before)| {
                i += 1;
                if exited[i - 1] {
                    // An exited process stays readable in /proc until its parent reaps it.
                    cpu_of_exited += target::cpu_seconds(*pid).zip(*before).map_or(0.0, |(now, b)| now - b);
                }
                !exited[i - 1]
            });
            self.cpu_of_exited += cpu_of_exited;
            if self.watched.is_empty() {
                return Progress::TargetEnded;
            }
        }
        if self.opts.duration.is_some_and(|d| self.start.elapsed() >= d) {
            return Progress::DurationElapsed;
        }
        Progress::Running
    }

    /// Kill the command's process group if it is still running (a live view was quit).
    pub fn stop_command(&self) {
        if let Some(child) = &self.child {
            // SAFETY: signalling the process group of our own unreaped child.
            unsafe { libc::kill(-child.pid, libc::SIGKILL) };
        }
    }

    fn empty_profile(&self) -> Profile {
        let target = if self.opts.all_cpus {
            RecordTarget::AllCpus
        } else if !self.opts.pids.is_empty() {
            RecordTarget::Pids(self.opts.pids.clone())
        } else {
            RecordTarget::Command
        };
        Profile {
            event: self.opts.event.clone(),
            frequency_hz: self.opts.frequency_hz,
            command: self.opts.argv.clone(),
            started: self.started.clone(),
            target,
            off_cpu_recorded: self.opts.off_cpu,
            ..Profile::default()
        }
    }

    /// The samples (and losses) drained since the last call as a profile; mapping and
    /// task records are kept for the next call. For a live view.
    pub fn take_window(&mut self) -> Profile {
        let (samples, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.events)
            .into_iter()
            .partition(|(_, r)| matches!(r, RingRecord::Sample { .. } | RingRecord::Lost(_)));
        self.history.extend(others);
        let mut events = self.history.clone();
        events.extend(samples);
        let mut profile = self.empty_profile();
        profile.duration_s = self.start.elapsed().as_secs_f64();
        replay(events, &mut profile, self.opts.call_graph);
        profile
    }

    /// Stop recording (a command is waited for; after an interrupt its process group is
    /// killed) and build the profile.
    pub fn finish(mut self, ending: Progress, interrupt: &crate::interrupt::Interrupt) -> Result<Recording, Failure> {
        let mut profile = self.empty_profile();
        let interrupted = match self.child.take() {
            Some(child) => {
                let outcome = child.wait(None, interrupt);
                match &outcome {
                    Ok(o) => {
                        profile.duration_s = o.wall.as_secs_f64();
                        profile.cpu_s = process::seconds(o.rusage.ru_utime) + process::seconds(o.rusage.ru_stime);
                        profile.exit_code = o.exit.exit_code;
                    }
                    // Interrupted: the group was killed and reaped without rusage.
                    Err(_) => profile.duration_s = self.start.elapsed().as_secs_f64(),
                }
                match outcome {
                    Err(process::SpawnError::Exec(e)) => return Err(Failure::Other(anyhow::anyhow!(e))),
                    Err(process::SpawnError::Probe(e)) => return Err(Failure::Other(e)),
                    Err(process::SpawnError::Interrupted) | Ok(_) => {}
                }
                ending == Progress::Interrupted
            }
            None => {
                profile.duration_s = self.start.elapsed().as_secs_f64();
                profile.cpu_s = self.cpu_of_exited
                    + self
                        .watched
                        .iter()
                        .filter_map(|(pid, _, before)| Some(target::cpu_seconds(*pid)? - (*before)?))
                        .sum::<f64>();
                // Without --duration, Ctrl-C is how an attached recording ends.
                ending == Progress::Interrupted && self.opts.duration.is_some()
            }
        };
        drain(&mut self.rings, &mut self.events, &mut self.unwinder);
        drop(std::mem::take(&mut self.rings));
        let mut events = std::mem::take(&mut self.history);
        events.append(&mut self.events);
        replay(events, &mut profile, self.opts.call_graph);
        super::kernel::attach_symbols(&mut profile);
        profile.dwarf = self.unwinder.map(|(_, stats)| stats);
        Ok(Recording { profile, interrupted })
    }
}

fn join(pids: &[u32]) -> String {
    pids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

fn check_options(opts: &RecordOptions) -> Result<(), Failure> {
    let targets = usize::from(!opts.argv.is_empty()) + usize::from(!opts.pids.is_empty()) + usize::from(opts.all_cpus);
    if targets == 0 {
        return Err(usage!("nothing to profile: put a command after `--`, or attach with -p PID or -a"));
    }
    if targets > 1 {
        return Err(usage!("profile one target: a command after `--`, -p PID or -a"));
    }
    if opts.duration.is_some() && !opts.argv.is_empty() {
        return Err(usage!("--duration is for -p and -a; a command is profiled until it exits"));
    }
    if opts.duration.is_some_and(|d| d.is_zero()) {
        return Err(usage!("--duration must be more than 0"));
    }
    if opts.frequency_hz == 0 || opts.frequency_hz > 100_000 {
        return Err(usage!("-F must be between 1 and 100000 Hz, got {}", opts.frequency_hz));
    }
    let dwarf = opts.dwarf();
    if dwarf && !cfg!(target_arch = "x86_64") {
        return Err(usage!("-g dwarf is implemented for x86-64 only; use -g fp"));
    }
    if dwarf && (opts.stack_bytes == 0 || opts.stack_bytes > unwind::MAX_STACK_BYTES || opts.stack_bytes % 8 != 0) {
        return Err(usage!(
            "--stack-size must be a multiple of 8 between 8 and {} bytes, got {}",
            unwind::MAX_STACK_BYTES,
            opts.stack_bytes
        ));
    }
    counters::event(&opts.event)?;
    Ok(())
}

/// Run the command (or attach) under the sampler until it ends and build the profile.
pub fn record(opts: &RecordOptions) -> Result<Recording, Failure> {
    let interrupt = crate::interrupt::watcher();
    let mut session = Session::start(opts)?;
    if opts.argv.is_empty() {
        let what = if opts.all_cpus { "every CPU".to_string() } else { format!("PID {}", join(&opts.pids)) };
        let until = match opts.duration {
            Some(d) => format!("for {}", crate::units::format_seconds(d.as_secs_f64())),
            None => "until Ctrl-C".to_string(),
        };
        eprintln!("perflab: sampling {what} {until}");
    }
    let ending = loop {
        match session.poll(POLL_INTERVAL, interrupt) {
            Progress::Running => {}
            ending => break ending,
        }
    };
    session.finish(ending, interrupt)
}

/// Unwind the user stacks of one batch of drained records, replaying the batch's
/// mapping changes in time order first so each sample sees the mappings of its moment;
/// the stack copies are dropped once unwound.
fn unwind_batch(unwinder: &mut DwarfUnwinder, stats: &mut DwarfStats, batch: &mut [(u64, RingRecord)]) {
    batch.sort_by_key(|(time, _)| *time);
    for (_, record) in batch {
        match record {
            RingRecord::Mmap { pid, start, len, pgoff, path } => unwinder.mmap(*pid, *start, *len, *pgoff, path),
            RingRecord::Comm { pid, exec: true, .. } => unwinder.exec(*pid),
            RingRecord::Fork { pid, ppid, .. } => unwinder.fork(*pid, *ppid),
            RingRecord::StackSample(..) => {
                // Take the record out to move the sample out of its box.
                if let RingRecord::StackSample(mut sample, stack) = std::mem::replace(record, RingRecord::Lost(0)) {
                    if let RingRecord::Sample { pid, chain, .. } | RingRecord::SwitchedOut { pid, chain, .. } =
                        sample.as_mut()
                    {
                        let unwound = unwinder.unwind(*pid, &stack, MAX_STACK as usize);
                        stats.count(unwound.truncated);
                        chain.push(PERF_CONTEXT_USER);
                        chain.extend(unwound.addresses);
                    }
                    *record = *sample;
                }
            }
            _ => {}
        }
    }
}

#[derive(Clone)]
struct Mapping {
    start: u64,
    end: u64,
    pgoff: u64,
    object: u32,
    /// Anonymous memory (JIT code): its addresses stay addresses.
    anonymous: bool,
}

/// (space, object, offset) of an address in `pid`'s address space as it is now.
fn normalise(spaces: &HashMap<u32, BTreeMap<u64, Mapping>>, pid: u32, ip: u64, kernel: bool) -> FrameRef {
    if kernel {
        return FrameRef { space: Space::Kernel, object: None, offset: ip };
    }
    let mapping = spaces.get(&pid).and_then(|s| s.range(..=ip).next_back()).map(|(_, m)| m).filter(|m| ip < m.end);
    match mapping {
        Some(m) if !m.anonymous => {
            FrameRef { space: Space::User, object: Some(m.object), offset: ip - m.start + m.pgoff }
        }
        _ => FrameRef { space: Space::Unmapped, object: None, offset: ip },
    }
}

/// The callers in a raw callchain, innermost first, as (address, in kernel). The chain
/// starts with the sampled IP itself, which is skipped. The first address of each
/// context (`PERF_CONTEXT_USER` after kernel frames: the interrupted user IP) is where
/// execution was; every other one is a return address, moved back by one byte into
/// the call instruction so it symbolizes to the caller even when the call is the
/// function's last instruction.
fn callers(chain: &[u64]) -> impl Iterator<Item = (u64, bool)> + '_ {
    let mut kernel = false;
    let mut first_in_context = true;
    let mut leaf_seen = false;
    chain.iter().filter_map(move |&entry| {
        if entry >= PERF_CONTEXT_MAX {
            match entry {
                PERF_CONTEXT_KERNEL => kernel = true,
                PERF_CONTEXT_USER => kernel = false,
                // Hypervisor and guest contexts are not sampled (exclude_hv).
                _ => {}
            }
            first_in_context = true;
            return None;
        }
        let exact = std::mem::replace(&mut first_in_context, false);
        if !std::mem::replace(&mut leaf_seen, true) {
            return None;
        }
        Some((if exact { entry } else { entry.wrapping_sub(1) }, kernel))
    })
}

/// Frame ids (leaf first) of a sampled location and its callers in `chain`, each
/// caller turned into a frame by `locate` (address, in kernel) and every frame numbered
/// once per profile.
fn stack_ids(
    frame_ids: &mut HashMap<FrameRef, u32>,
    leaf: FrameRef,
    chain: &[u64],
    mut locate: impl FnMut(u64, bool) -> FrameRef,
) -> Vec<u32> {
    std::iter::once(leaf)
        .chain(callers(chain).map(|(address, kernel)| locate(address, kernel)))
        .map(|frame| {
            let next = frame_ids.len() as u32;
            *frame_ids.entry(frame).or_insert(next)
        })
        .collect()
}

/// Replay the merged records: maintain each process's executable mappings and turn each
/// sample (and with `call_graph`, each frame of its call chain) into (object, file
/// offset) against the mappings live at that moment.
fn replay(mut events: Vec<(u64, RingRecord)>, profile: &mut Profile, call_graph: bool) {
    // Stable: records of one CPU with equal timestamps keep their ring order.
    events.sort_by_key(|(time, _)| *time);
    let mut spaces: HashMap<u32, BTreeMap<u64, Mapping>> = HashMap::new();
    let mut object_ids: HashMap<String, u32> = HashMap::new();
    let mut tasks: BTreeMap<(u32, u32), String> = BTreeMap::new();
    let mut live: HashMap<u32, std::collections::HashSet<u32>> = HashMap::new();
    // (pid, tid, space, object, offset) → (samples, summed period)
    type Key = (u32, u32, Space, Option<u32>, u64);
    let mut counts: HashMap<Key, (u64, u64)> = HashMap::new();
    let mut frame_ids: HashMap<FrameRef, u32> = HashMap::new();
    // (pid, tid, frame ids leaf first) → (samples, summed period)
    let mut stacks: HashMap<(u32, u32, Vec<u32>), (u64, u64)> = HashMap::new();
    let mut jit = JitObjects::default();
    let mut off_cpu = super::offcpu::Tracker::default();
    let end = events.last().map_or(0, |(time, _)| *time);
    for (time, ev) in events {
        match ev {
            RingRecord::Mmap { pid, start, len, pgoff, path } => {
                let anonymous = path.starts_with("//anon") || path.starts_with("[anon");
                let next = object_ids.len() as u32;
                let object = *object_ids.entry(path.clone()).or_insert_with(|| {
                    profile.objects.push(ObjectRef { path });
                    next
                });
                let end = start.saturating_add(len);
                let space = spaces.entry(pid).or_default();
                // A new mapping replaces whatever it overlaps (munmap + mmap, mprotect splits).
                let overlapping: Vec<u64> =
                    space.range(..end).filter(|(_, m)| m.end > start).map(|(&s, _)| s).collect();
                for s in overlapping {
                    space.remove(&s);
                }
                space.insert(start, Mapping { start, end, pgoff, object, anonymous });
            }
            RingRecord::Comm { pid, tid, comm, exec } => {
                if exec {
                    spaces.remove(&pid);
                }
                live.entry(pid).or_default().insert(tid);
                tasks.insert((pid, tid), comm);
            }
            // The address space dies with the process's last thread (the main thread may
            // exit first); a later process reusing the pid gets its own from FORK/MMAP2.
            RingRecord::Exit { pid, tid } => {
                off_cpu.exited(tid);
                let threads = live.entry(pid).or_default();
                threads.remove(&tid);
                if threads.is_empty() {
                    live.remove(&pid);
                    spaces.remove(&pid);
                }
            }
            RingRecord::Fork { pid, ppid, tid } => {
                if pid != ppid {
                    let inherited = spaces.get(&ppid).cloned().unwrap_or_default();
                    spaces.insert(pid, inherited);
                }
                live.entry(pid).or_default().insert(tid);
                let comm = tasks.get(&(ppid, ppid)).cloned().unwrap_or_default();
                tasks.entry((pid, tid)).or_insert(comm);
            }
            RingRecord::Lost(n) => profile.lost += n,
            // Never here: unwind_batch has turned each into the record it carries.
            RingRecord::StackSample(..) => {}
            RingRecord::Sample { pid, tid, ip, period, kernel, chain } => {
                tasks.entry((pid, tid)).or_default();
                live.entry(pid).or_default().insert(tid);
                // Normalised against the mappings live now; JIT code named from its perf map.
                let mut locate = |address, kernel| {
                    jit.attribute(pid, normalise(&spaces, pid, address, kernel), &mut object_ids, profile)
                };
                let leaf = locate(ip, kernel);
                let entry = counts.entry((pid, tid, leaf.space, leaf.object, leaf.offset)).or_default();
                entry.0 += 1;
                entry.1 += period;
                if call_graph {
                    let ids = stack_ids(&mut frame_ids, leaf, &chain, locate);
                    let entry = stacks.entry((pid, tid, ids)).or_default();
                    entry.0 += 1;
                    entry.1 += period;
                }
            }
            RingRecord::SwitchedOut { pid, tid, ip, chain } => {
                tasks.entry((pid, tid)).or_default();
                let mut locate = |address, kernel| {
                    jit.attribute(pid, normalise(&spaces, pid, address, kernel), &mut object_ids, profile)
                };
                let leaf = locate(ip, true);
                off_cpu.switched_out(time, pid, tid, stack_ids(&mut frame_ids, leaf, &chain, locate));
            }
            RingRecord::Switch { tid, out: true, preempted: true } => off_cpu.preempted(tid),
            RingRecord::Switch { out: true, .. } => {}
            RingRecord::Switch { tid, out: false, .. } => off_cpu.switched_in(time, tid),
        }
    }
    profile.off_cpu = off_cpu.finish(end);
    profile.tasks = tasks.into_iter().map(|((pid, tid), comm)| Task { pid, tid, comm }).collect();
    let mut samples: Vec<SampleCount> = counts
        .into_iter()
        .map(|((pid, tid, space, object, offset), (count, period))| SampleCount {
            pid,
            tid,
            space,
            object,
            offset,
            count,
            period,
        })
        .collect();
    samples.sort_by_key(|s| (s.pid, s.tid, s.space, s.object, s.offset));
    profile.samples = samples;
    let mut frames = vec![FrameRef { space: Space::Unmapped, object: None, offset: 0 }; frame_ids.len()];
    for (frame, id) in frame_ids {
        frames[id as usize] = frame;
    }
    profile.frames = frames;
    let mut stacks: Vec<StackCount> = stacks
        .into_iter()
        .map(|((pid, tid, frames), (count, period))| StackCount { pid, tid, frames, count, period })
        .collect();
    stacks.sort_by(|a, b| (a.pid, a.tid, &a.frames).cmp(&(b.pid, b.tid, &b.frames)));
    profile.stacks = stacks;
    profile.jit_symbols = jit.symbols(profile);
}

/// Code outside any file mapping in a process that wrote a perf map is attributed to
/// the map: its frames become (map object, address), named from the map.
#[derive(Default)]
struct JitObjects {
    /// Per pid: the perf map and its object index, None when the process has none.
    maps: HashMap<u32, Option<(JitMap, u32)>>,
}

impl JitObjects {
    fn attribute(
        &mut self,
        pid: u32,
        frame: FrameRef,
        object_ids: &mut HashMap<String, u32>,
        profile: &mut Profile,
    ) -> FrameRef {
        if frame.space != Space::Unmapped {
            return frame;
        }
        let map = self.maps.entry(pid).or_insert_with(|| {
            let map = JitMap::read(pid)?;
            let path = jitmap::map_path(pid).display().to_string();
            let next = object_ids.len() as u32;
            let object = *object_ids.entry(path.clone()).or_insert_with(|| {
                profile.objects.push(ObjectRef { path });
                next
            });
            Some((map, object))
        });
        match map {
            Some((_, object)) => FrameRef { space: Space::User, object: Some(*object), offset: frame.offset },
            None => frame,
        }
    }

    /// The symbols of every sampled JIT address, each once.
    fn symbols(&self, profile: &Profile) -> Vec<JitSymbol> {
        let by_object: HashMap<u32, &JitMap> = self.maps.values().flatten().map(|(map, o)| (*o, map)).collect();
        let addresses = profile
            .samples
            .iter()
            .map(|s| (s.object, s.offset))
            .chain(profile.frames.iter().map(|f| (f.object, f.offset)));
        let mut symbols: BTreeMap<(u32, u64), JitSymbol> = BTreeMap::new();
        for (object, address) in addresses {
            let Some((object, map)) = object.and_then(|o| Some((o, *by_object.get(&o)?))) else { continue };
            if let Some((start, size, name)) = map.lookup(address) {
                symbols.entry((object, start)).or_insert_with(|| JitSymbol {
                    object,
                    start,
                    size,
                    name: name.to_string(),
                });
            }
        }
        symbols.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Profile {
        Profile { event: "cpu-clock".into(), frequency_hz: 1000, ..Profile::default() }
    }

    #[test]
    fn samples_resolve_against_the_mappings_live_at_their_time() {
        let events = vec![
            (1, RingRecord::Comm { pid: 10, tid: 10, comm: "a".into(), exec: true }),
            (2, RingRecord::Mmap { pid: 10, start: 0x1000, len: 0x2000, pgoff: 0x3000, path: "/a".into() }),
            (3, RingRecord::Sample { pid: 10, tid: 10, ip: 0x1800, period: 5, kernel: false, chain: vec![] }),
            (4, RingRecord::Fork { pid: 11, ppid: 10, tid: 11 }),
            (5, RingRecord::Sample { pid: 11, tid: 11, ip: 0x1800, period: 5, kernel: false, chain: vec![] }),
            // The child execs: its old mappings are gone.
            (6, RingRecord::Comm { pid: 11, tid: 11, comm: "b".into(), exec: true }),
            (7, RingRecord::Sample { pid: 11, tid: 11, ip: 0x1800, period: 5, kernel: false, chain: vec![] }),
            (8, RingRecord::Sample { pid: 10, tid: 12, ip: 0xffff_0000, period: 5, kernel: true, chain: vec![] }),
            (9, RingRecord::Lost(3)),
            // The main thread exits first: thread 12 still uses the mappings.
            (10, RingRecord::Exit { pid: 10, tid: 10 }),
            (11, RingRecord::Sample { pid: 10, tid: 12, ip: 0x1900, period: 5, kernel: false, chain: vec![] }),
            (12, RingRecord::Exit { pid: 10, tid: 12 }),
            // A new process reusing pid 10 without a FORK seen has no mappings.
            (13, RingRecord::Sample { pid: 10, tid: 10, ip: 0x1a00, period: 5, kernel: false, chain: vec![] }),
        ];
        let mut p = empty();
        replay(events, &mut p, false);
        assert!(p.stacks.is_empty() && p.frames.is_empty());
        assert_eq!(p.objects.len(), 1);
        assert_eq!(p.lost, 3);
        let find = |pid, space| p.samples.iter().find(|s| s.pid == pid && s.space == space).unwrap();
        assert_eq!(find(10, Space::User).offset, 0x3800);
        assert!(p.samples.iter().any(|s| s.tid == 12 && s.offset == 0x3900 && s.space == Space::User));
        assert_eq!(find(10, Space::Unmapped).offset, 0x1a00);
        assert_eq!(find(11, Space::User).offset, 0x3800);
        assert_eq!(find(11, Space::Unmapped).offset, 0x1800);
        assert_eq!(find(10, Space::Kernel).tid, 12);
        assert_eq!(p.tasks.iter().map(|t| t.tid).collect::<Vec<_>>(), [10, 12, 11]);
    }

    #[test]
    fn call_chains_become_deduplicated_stacks_of_normalised_frames() {
        let (k, u) = (PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER);
        let sample =
            |ip, kernel, chain: Vec<u64>| RingRecord::Sample { pid: 10, tid: 10, ip, period: 2, kernel, chain };
        let events = vec![
            (1, RingRecord::Mmap { pid: 10, start: 0x1000, len: 0x2000, pgoff: 0, path: "/a".into() }),
            // User leaf 0x1800 called from 0x1205 (return address) called from 0x1105.
            (2, sample(0x1800, false, vec![u, 0x1800, 0x1205, 0x1105])),
            (3, sample(0x1800, false, vec![u, 0x1800, 0x1205, 0x1105])),
            // In the kernel: every kernel frame is kept (the callers as return address − 1);
            // the first user address is the interrupted IP (exact), the next a return address.
            (4, sample(0xffff_0010, true, vec![k, 0xffff_0010, 0xffff_0020, u, 0x1900, 0x1205, 0x9_0000])),
        ];
        let mut p = empty();
        replay(events, &mut p, true);
        assert_eq!(p.total_samples(), 3);
        let frames = |s: &StackCount| s.frames.iter().map(|&i| p.frames[i as usize]).collect::<Vec<_>>();
        let user = |offset| FrameRef { space: Space::User, object: Some(0), offset };
        assert_eq!(p.stacks.len(), 2);
        let by_count = |n| p.stacks.iter().find(|s| s.count == n).unwrap();
        assert_eq!(frames(by_count(2)), [user(0x800), user(0x204), user(0x104)]);
        assert_eq!(by_count(2).period, 4);
        assert_eq!(
            frames(by_count(1)),
            [
                FrameRef { space: Space::Kernel, object: None, offset: 0xffff_0010 },
                FrameRef { space: Space::Kernel, object: None, offset: 0xffff_001f },
                user(0x900),
                user(0x204),
                FrameRef { space: Space::Unmapped, object: None, offset: 0x8_ffff },
            ]
        );
    }

    #[test]
    fn stack_copies_of_samples_and_switch_outs_are_unwound_into_their_chains() {
        // A process the unwinder has no mappings for unwinds to its IP alone.
        let stack = UserStack { ip: 0x1800, sp: 0x7000, bp: 0, bytes: vec![0; 64] };
        let sample = RingRecord::Sample { pid: 10, tid: 10, ip: 0x1800, period: 1, kernel: false, chain: vec![] };
        let blocked = RingRecord::SwitchedOut {
            pid: 10,
            tid: 10,
            ip: 0xffff_0010,
            chain: vec![PERF_CONTEXT_KERNEL, 0xffff_0010],
        };
        let mut batch = vec![
            (2, RingRecord::StackSample(Box::new(blocked), stack.clone())),
            (1, RingRecord::StackSample(Box::new(sample), stack)),
        ];
        let mut stats = DwarfStats::new(64);
        unwind_batch(&mut DwarfUnwinder::default(), &mut stats, &mut batch);
        assert_eq!((stats.unwound, stats.truncated), (2, 2));
        assert!(matches!(&batch[0].1, RingRecord::Sample { chain, .. } if *chain == [PERF_CONTEXT_USER, 0x1800]));
        let kernel_then_user = [PERF_CONTEXT_KERNEL, 0xffff_0010, PERF_CONTEXT_USER, 0x1800];
        assert!(matches!(&batch[1].1, RingRecord::SwitchedOut { chain, .. } if *chain == kernel_then_user));
    }

    #[test]
    fn parses_cpu_lists() {
        assert!(!online_cpus().is_empty());
    }
}
