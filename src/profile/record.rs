//! Sampling a command with perf_event_open: one sampling event per online CPU on the
//! child's pid (inherit + enable_on_exec, so threads and children are followed and
//! nothing before exec is sampled), mmap/comm/task tracking, ring buffers drained while
//! the command runs, and the records replayed in time order so that every sample is
//! normalised to (object, file offset) against the address space it was taken in.

use super::format::{FrameRef, ObjectRef, Profile, SampleCount, Space, StackCount, Task};
use crate::error::Failure;
use crate::spawn;
use crate::usage;
use perf_event::data::parse::Parser;
use perf_event::data::{self as pdata, RecordMetadata, Visitor};
use perf_event::events::{Event, Hardware, Software};
use perf_event::{Builder, SampleFlag, Sampler};
use std::collections::{BTreeMap, HashMap};
use std::os::fd::AsRawFd;

/// Ring buffer sizes per CPU, tried in order. At 10 kHz a drain every 50 ms needs
/// ~25 KiB, so the first leaves ample headroom for bursts of mmap records from
/// dlopen-heavy programs; the smaller ones fit unprivileged mlock limits.
const RING_SIZES: [usize; 4] = [512 * 1024, 128 * 1024, 32 * 1024, 8 * 1024];
const PERF_RECORD_MISC_COMM_EXEC: u16 = 1 << 13;
const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
const PERF_RECORD_MISC_KERNEL: u16 = 1;
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
    /// Record call chains (kernel frame-pointer unwinding).
    pub call_graph: bool,
    /// Send the program's stdout to stderr (when perflab's own report goes to stdout).
    pub stdout_to_stderr: bool,
}

/// What a recording produced; `interrupted` means the profile holds what was sampled
/// before Ctrl-C.
pub struct Recording {
    pub profile: Profile,
    pub interrupted: bool,
}

/// A record copied out of the ring buffer, kept until the run ends so records from all
/// CPUs can be merged by timestamp.
#[derive(Debug)]
enum RingRecord {
    Sample {
        pid: u32,
        tid: u32,
        ip: u64,
        period: u64,
        kernel: bool,
        /// The raw callchain with its context markers; empty without `-g`.
        chain: Vec<u64>,
    },
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
}

struct Collect;

impl<'a> Visitor<'a> for Collect {
    type Output = Option<(u64, RingRecord)>;

    fn visit_unimplemented(self, _: RecordMetadata) -> Self::Output {
        None
    }
    fn visit_sample(self, s: pdata::Sample<'a>, meta: RecordMetadata) -> Self::Output {
        let kernel = meta.misc() & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL;
        let ev = RingRecord::Sample {
            pid: s.pid()?,
            tid: s.tid()?,
            ip: s.ip()?,
            period: s.period().unwrap_or(1),
            kernel,
            chain: s.callchain().map(<[u64]>::to_vec).unwrap_or_default(),
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
}

/// The sampled event, chosen at run time (perf-event2's `Event` is not object safe).
#[derive(Clone, Copy)]
enum ChosenEvent {
    Software(Software),
    Hardware(Hardware),
}

impl Event for ChosenEvent {
    fn update_attrs(self, attr: &mut perf_event_open_sys::bindings::perf_event_attr) {
        match self {
            ChosenEvent::Software(e) => e.update_attrs(attr),
            ChosenEvent::Hardware(e) => e.update_attrs(attr),
        }
    }
}

fn event_for(name: &str) -> Result<ChosenEvent, Failure> {
    Ok(match name {
        "cpu-clock" => ChosenEvent::Software(Software::CPU_CLOCK),
        "task-clock" => ChosenEvent::Software(Software::TASK_CLOCK),
        "cycles" | "cpu-cycles" => ChosenEvent::Hardware(Hardware::CPU_CYCLES),
        "instructions" => ChosenEvent::Hardware(Hardware::INSTRUCTIONS),
        "cache-misses" => ChosenEvent::Hardware(Hardware::CACHE_MISSES),
        "branch-misses" => ChosenEvent::Hardware(Hardware::BRANCH_MISSES),
        other => {
            return Err(usage!(
            "unknown event `{other}` (use cpu-clock, task-clock, cycles, instructions, cache-misses or branch-misses)"
        ))
        }
    })
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

fn open_samplers(pid: i32, opts: &RecordOptions) -> Result<Vec<Sampler>, Failure> {
    let event = event_for(&opts.event)?;
    let mut flags = SampleFlag::IP | SampleFlag::TID | SampleFlag::TIME | SampleFlag::PERIOD;
    if opts.call_graph {
        flags |= SampleFlag::CALLCHAIN;
    }
    let max_stack = max_stack();
    let mut samplers = Vec::new();
    for cpu in online_cpus() {
        let open = |include_kernel: bool, ring: usize| -> std::io::Result<Sampler> {
            let mut b = Builder::new(event);
            b.observe_pid(pid)
                .one_cpu(cpu)
                .sample_frequency(opts.frequency_hz)
                .sample(flags)
                .mmap(true)
                .mmap2(true)
                .comm(true)
                .comm_exec(true)
                .task(true)
                .sample_id_all(true)
                .inherit(true)
                .enabled(false)
                .enable_on_exec(true)
                .exclude_kernel(!include_kernel)
                .exclude_hv(true)
                .wakeup_watermark(ring / 4);
            if opts.call_graph {
                b.sample_max_stack(max_stack);
            }
            b.build()?.sampled(ring)
        };
        // Kernel samples need perf_event_paranoid < 2 or privileges: fall back to user only.
        // Unprivileged users may lock only perf_event_mlock_kb (516 KiB by default) of
        // ring buffers across all CPUs: fall back to smaller rings (drained more often).
        let mut result = Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        'found: for include_kernel in [true, false] {
            for ring in RING_SIZES {
                result = open(include_kernel, ring);
                match &result {
                    Ok(_) => break 'found,
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::ENOMEM)) => continue,
                    Err(e) if include_kernel && e.raw_os_error() == Some(libc::EACCES) => continue 'found,
                    Err(_) => break 'found,
                }
            }
        }
        match result {
            Ok(s) => samplers.push(s),
            Err(e) => {
                return Err(match e.raw_os_error() {
                    Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => usage!(
                        "event `{}` is not supported on this machine ({e}); cpu-clock works without a hardware PMU",
                        opts.event
                    ),
                    Some(libc::EACCES) | Some(libc::EPERM) => usage!(
                        "not allowed to sample (perf_event_paranoid is {}); run as root or lower /proc/sys/kernel/perf_event_paranoid",
                        crate::measure::counters::paranoid_level().map_or("unknown".into(), |l| l.to_string())
                    ),
                    _ => usage!("cannot open event `{}` on CPU {cpu}: {e}", opts.event),
                })
            }
        }
    }
    Ok(samplers)
}

fn drain(samplers: &mut [Sampler], events: &mut Vec<(u64, RingRecord)>) {
    for sampler in samplers.iter_mut() {
        let config = sampler.config().clone();
        while let Some(record) = sampler.next_record() {
            let header = perf_event_open_sys::bindings::perf_event_header {
                type_: record.ty(),
                misc: record.misc(),
                size: (record.len() + std::mem::size_of::<perf_event_open_sys::bindings::perf_event_header>()) as u16,
            };
            let bytes = record.to_contiguous();
            let mut parser = Parser::new(bytes.as_ref(), config.clone());
            // A record we cannot parse is skipped rather than aborting the whole recording.
            if let Ok(Some(ev)) = parser.parse_record_with_header(Collect, header) {
                events.push(ev);
            }
        }
    }
}

/// Run the command under the sampler and build the profile.
pub fn record(opts: &RecordOptions) -> Result<Recording, Failure> {
    if opts.argv.is_empty() {
        return Err(usage!("no command to profile (put it after `--`)"));
    }
    if opts.frequency_hz == 0 || opts.frequency_hz > 100_000 {
        return Err(usage!("-F must be between 1 and 100000 Hz, got {}", opts.frequency_hz));
    }
    event_for(&opts.event)?;
    let program = crate::command::resolve_program(&opts.argv[0])?;
    let output = if opts.stdout_to_stderr { spawn::Output::StdoutToStderr } else { spawn::Output::Inherit };
    let prepared = spawn::Prepared::new(&program, &opts.argv, output).map_err(|e| usage!("{e}"))?;
    let interrupt = crate::interrupt::watcher();
    let started = chrono::Utc::now().to_rfc3339();
    // The child is held between fork and exec while the events are opened on its pid.
    let mut samplers = Vec::new();
    let mut open_failure = None;
    let mut gate = |pid: libc::pid_t| match open_samplers(pid, opts) {
        Ok(s) => {
            samplers = s;
            Ok(())
        }
        Err(failure) => {
            let message = failure.to_string();
            open_failure = Some(failure);
            Err(anyhow::anyhow!(message))
        }
    };
    let mut child = match spawn::start(&prepared, &spawn::Environment::inherited(), Some(&mut gate)) {
        Ok(child) => child,
        Err(spawn::SpawnError::Probe(e)) => return Err(open_failure.unwrap_or_else(|| usage!("{e:#}"))),
        Err(spawn::SpawnError::Interrupted) => {
            return Err(Failure::Interrupted("interrupted before the profiled command started".into()))
        }
        Err(spawn::SpawnError::Exec(e)) => return Err(usage!("{e}")),
    };
    let exec_time = std::time::Instant::now();
    let mut events = Vec::new();
    let mut interrupted = false;
    let pidfd = child.pidfd().map_err(|e| Failure::Other(anyhow::anyhow!("{e}")))?;
    // Sleep until the child exits, a ring buffer passes its watermark, Ctrl-C, or 50 ms
    // pass (so records below the watermark are drained promptly too).
    loop {
        let mut fds = vec![
            libc::pollfd { fd: pidfd, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: interrupt.fd(), events: libc::POLLIN, revents: 0 },
        ];
        fds.extend(samplers.iter().map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 }));
        // SAFETY: fds is a valid array for the duration of the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        drain(&mut samplers, &mut events);
        if interrupt.requested() {
            interrupted = true;
            break;
        }
        if fds[0].revents != 0 {
            break;
        }
    }
    // After an interrupt, wait() kills the command's process group and reaps it.
    let outcome = child.wait(None, interrupt);
    drain(&mut samplers, &mut events);
    let (duration_s, cpu_s, exit_code) = match &outcome {
        Ok(o) => (
            o.wall.as_secs_f64(),
            spawn::seconds(o.rusage.ru_utime) + spawn::seconds(o.rusage.ru_stime),
            o.exit.exit_code,
        ),
        // Interrupted: the group was killed and reaped without rusage.
        Err(_) => (exec_time.elapsed().as_secs_f64(), 0.0, None),
    };
    match outcome {
        Err(spawn::SpawnError::Exec(e)) => return Err(Failure::Other(anyhow::anyhow!(e))),
        Err(spawn::SpawnError::Probe(e)) => return Err(Failure::Other(e)),
        Err(spawn::SpawnError::Interrupted) | Ok(_) => {}
    }
    let mut profile = Profile {
        event: opts.event.clone(),
        frequency_hz: opts.frequency_hz,
        command: opts.argv.clone(),
        started,
        duration_s,
        cpu_s,
        exit_code,
        ..Profile::default()
    };
    replay(events, &mut profile, opts.call_graph);
    super::kernel::attach_symbols(&mut profile);
    Ok(Recording { profile, interrupted })
}

#[derive(Clone)]
struct Mapping {
    start: u64,
    end: u64,
    pgoff: u64,
    object: u32,
}

/// (space, object, offset) of an address in `pid`'s address space as it is now.
fn normalise(spaces: &HashMap<u32, BTreeMap<u64, Mapping>>, pid: u32, ip: u64, kernel: bool) -> FrameRef {
    if kernel {
        return FrameRef { space: Space::Kernel, object: None, offset: ip };
    }
    let mapping = spaces.get(&pid).and_then(|s| s.range(..=ip).next_back()).map(|(_, m)| m).filter(|m| ip < m.end);
    match mapping {
        Some(m) => FrameRef { space: Space::User, object: Some(m.object), offset: ip - m.start + m.pgoff },
        None => FrameRef { space: Space::Unmapped, object: None, offset: ip },
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
    for (_, ev) in events {
        match ev {
            RingRecord::Mmap { pid, start, len, pgoff, path } => {
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
                space.insert(start, Mapping { start, end, pgoff, object });
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
            RingRecord::Sample { pid, tid, ip, period, kernel, chain } => {
                tasks.entry((pid, tid)).or_default();
                live.entry(pid).or_default().insert(tid);
                let leaf = normalise(&spaces, pid, ip, kernel);
                let entry = counts.entry((pid, tid, leaf.space, leaf.object, leaf.offset)).or_default();
                entry.0 += 1;
                entry.1 += period;
                if call_graph {
                    let ids: Vec<u32> = std::iter::once(leaf)
                        .chain(callers(&chain).map(|(address, kernel)| normalise(&spaces, pid, address, kernel)))
                        .map(|frame| {
                            let next = frame_ids.len() as u32;
                            *frame_ids.entry(frame).or_insert(next)
                        })
                        .collect();
                    let entry = stacks.entry((pid, tid, ids)).or_default();
                    entry.0 += 1;
                    entry.1 += period;
                }
            }
        }
    }
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
    fn parses_cpu_lists() {
        assert!(!online_cpus().is_empty());
    }
}
