//! Allocation profiles (`perflab profile --alloc`): every call of the malloc family —
//! malloc, calloc, realloc, free, aligned_alloc, memalign, posix_memalign, valloc,
//! pvalloc, and custom allocators by name — probed with the kernel's uprobes (no agent
//! in the process), with its size argument read from the registers and its call stack;
//! return probes read the block each call handed back, so frees are matched to their
//! allocations and the blocks still live at exit are known (leaks). C++'s operator new
//! and delete call malloc and free, whose probes see them (with `operator new` as the
//! caller), so they are not probed twice.
//!
//! The result is an ordinary [`Profile`] whose samples are the allocating calls by call
//! site (a sample's count is calls, its period bytes requested), so every view — show,
//! flame graphs, exports, diff — reads it, plus an [`AllocSummary`]: per function
//! totals, frees, and the live blocks' stacks. With `every` > 1 a sample is taken every
//! N-th call of each function (counts and bytes are then estimates, and blocks are not
//! followed); the probe still traps on every call.

mod overhead;
pub(crate) mod pairing;
pub mod preload;
pub mod source;
mod tail;
pub mod view;

use crate::allocations::LiveStack;
use crate::allocations::{AllocFunction, AllocSummary, Role};
use crate::format::{Profile, RecordTarget};
use crate::record::converter::Converter;
use crate::record::records::{Record, PERF_CONTEXT_USER};
use crate::unwind::{DwarfUnwinder, UserStack};
use overhead::Overhead;
use pairing::Call;
use perflab_sys::perf::uprobe::{self, Uprobe};
use perflab_sys::spawn::process;
use source::{Item, Stacks};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use thiserror::Error;

/// Bytes of user stack copied per call by default: a call site's callers rarely need
/// more, and at every call of a busy allocator the 16 KiB of `profile -g dwarf` filled
/// the rings faster than they drained.
pub const DEFAULT_STACK_BYTES: u32 = 4096;

/// The malloc family of the C library, as probed by default.
pub const FAMILY: [(&str, Role); 9] = [
    ("malloc", Role::Alloc),
    ("calloc", Role::Calloc),
    ("realloc", Role::Realloc),
    ("free", Role::Free),
    ("aligned_alloc", Role::Aligned),
    ("memalign", Role::Aligned),
    ("posix_memalign", Role::PosixMemalign),
    ("valloc", Role::Alloc),
    ("pvalloc", Role::Alloc),
];

/// Why `perflab profile --alloc` could not record. The binary counts it as bad input
/// (exit 2), except an interruption and [`Start`](AllocError::Start).
#[derive(Debug, Error)]
pub enum AllocError {
    /// A probe that cannot be placed (a usage error: exit 2), in uprobe's words.
    #[error("{0}")]
    Probe(String),
    /// An allocator or release function that is not OBJECT:FUNCTION[=ARG] with ARG from
    /// 1 to 4 (the spec as given).
    #[error("an allocator or release function is OBJECT:FUNCTION or OBJECT:FUNCTION=ARG (ARG: which argument, 1 to 4, holds the size or the block), got `{0}`")]
    Spec(String),
    /// `--alloc-every 0`.
    #[error("--alloc-every must be at least 1")]
    Every,
    /// Options that cannot be honoured together (a usage error), in a sentence.
    #[error("{0}")]
    Usage(String),
    /// Neither a command after `--` nor processes to attach to.
    #[error("nothing to profile: give a command after -- or -p PID")]
    NothingToProfile,
    /// A process to attach to that cannot be watched (gone, or not ours).
    #[error("{0}")]
    Attach(String),
    /// The probes' events could not be opened on the launched command (the system's
    /// error).
    #[error("the allocation probes could not be opened on the command: {0}")]
    Open(std::io::Error),
    /// The command's program (not found, not executable).
    #[error(transparent)]
    Command(#[from] perflab_sys::command::CommandError),
    /// The command could not be prepared, started or watched: the reason, one line.
    #[error("cannot start the command: {0}")]
    Start(String),
    /// The user interrupted before the command started.
    #[error("interrupted before the profiled command started")]
    Interrupted,
}

/// How `profile --alloc` sees a launched command's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Via {
    /// In-process where it can ([`preload`]), else uprobes, saying why.
    #[default]
    Auto,
    /// The in-process recorder, or an error saying why it cannot be used.
    Preload,
    /// Kernel uprobes on the allocator functions (exact across static programs and
    /// custom allocators; every call traps).
    Uprobes,
}

impl Via {
    /// The names `--alloc-via` takes.
    pub const NAMES: [&'static str; 3] = ["auto", "preload", "uprobes"];
}

impl std::str::FromStr for Via {
    type Err = String;
    fn from_str(s: &str) -> Result<Via, String> {
        match s {
            "auto" => Ok(Via::Auto),
            "preload" => Ok(Via::Preload),
            "uprobes" => Ok(Via::Uprobes),
            other => Err(format!("expected auto, preload or uprobes, found `{other}`")),
        }
    }
}

/// A custom allocator or release function (`--alloc-fn postgres:palloc`).
#[derive(Debug, Clone, PartialEq)]
pub struct Custom {
    /// The object defining the function, as given: a path, or a program on PATH or a
    /// library (`libc.so.6`) found by name.
    pub object: String,
    /// The function in that object, as a uprobe names it (a symbol, `func+0x10`, an
    /// address).
    pub function: String,
    /// [`Role::Custom`] with the argument holding the size, or [`Role::CustomFree`] with
    /// the one holding the block.
    pub role: Role,
}

impl Custom {
    /// `OBJECT:FUNCTION[=ARG]`: ARG (from 1) holds the size (`free`: the block); 1 by default.
    pub fn parse(spec: &str, free: bool) -> Result<Custom, AllocError> {
        let bad = || AllocError::Spec(spec.to_string());
        let (object, rest) = spec.split_once(':').ok_or_else(bad)?;
        let (function, arg) = match rest.rsplit_once('=') {
            Some((f, a)) => (f, a.parse::<u8>().ok().filter(|a| (1..=4).contains(a)).ok_or_else(bad)?),
            None => (rest, 1),
        };
        if object.is_empty() || function.is_empty() {
            return Err(bad());
        }
        let role = if free { Role::CustomFree { pointer_arg: arg - 1 } } else { Role::Custom { size_arg: arg - 1 } };
        Ok(Custom { object: object.to_string(), function: function.to_string(), role })
    }
}

/// What to record.
#[derive(Debug, Clone)]
pub struct AllocOptions {
    /// The command to run, program first.
    pub argv: Vec<String>,
    /// Where the command's stdout and stderr go.
    pub output: process::Output,
    /// A sample every N calls of each function (1: every call); uprobes only.
    pub every: u64,
    /// How the calls are seen: in-process or by uprobes.
    pub via: Via,
    /// Sample allocations by bytes, this mean gap (in-process recorder only).
    pub sample_bytes: Option<u64>,
    /// How each call's callers are found (uprobes).
    pub stacks: Stacks,
    /// `stacks` was asked for (-g, --stack-size): said when the in-process recorder,
    /// which unwinds its own way, leaves it unused.
    pub stacks_asked: bool,
    /// Allocators beside the C library's.
    pub custom: Vec<Custom>,
    /// Probe the C library's family too (off to see only custom allocators).
    pub libc: bool,
    /// Running processes to attach to instead of a command (`-p`): every thread, and
    /// the threads they start.
    pub pids: Vec<u32>,
    /// With `pids`: how long to record (None: until they exit or Ctrl-C).
    pub duration: Option<Duration>,
    /// With `pids`: told, about once a second, what the probes cost the processes.
    pub progress: Option<fn(&str)>,
}

/// One probed function with its two events.
pub(crate) struct Probe {
    pub name: String,
    pub object: String,
    pub role: Role,
    pub calls: Uprobe,
    pub returns: Uprobe,
}

/// The probes of `opts`, placed (and tried); what was left out, said in `notes`.
pub(crate) fn probes(opts: &AllocOptions, notes: &mut Vec<String>) -> Result<Vec<Probe>, AllocError> {
    let place = |object: &str, function: &str, ret: bool| {
        let kind = if ret { "uretprobe" } else { "uprobe" };
        // Tried on the keeper that holds it registered (uprobe.rs, `keep`): no grace period.
        match uprobe::parse(&format!("{kind}:{object}:{function}"), true) {
            Some((_, placed)) => placed,
            None => Err("not a probe".to_string()),
        }
    };
    let mut wanted: Vec<(String, String, Role, bool)> = Vec::new();
    if opts.libc {
        let libc = uprobe::find_object("libc.so.6").map_err(AllocError::Probe)?;
        let libc = libc.display().to_string();
        wanted.extend(FAMILY.iter().map(|(name, role)| (libc.clone(), name.to_string(), *role, false)));
    }
    wanted.extend(opts.custom.iter().map(|c| (c.object.clone(), c.function.clone(), c.role, true)));
    let mut out: Vec<Probe> = Vec::new();
    for (object, name, role, required) in wanted {
        let calls = match place(&object, &name, false) {
            Ok(probe) => probe,
            // The family differs between C libraries (pvalloc is gone from some).
            Err(why) if !required && name != "malloc" && why.contains("no function") => {
                notes.push(format!("{name} is not in {object}: not probed"));
                continue;
            }
            Err(why) => return Err(AllocError::Probe(format!("probe `uprobe:{object}:{name}`: {why}"))),
        };
        // Aliases (aligned_alloc is memalign in glibc) are one function: probed once.
        if let Some(same) = out.iter().find(|p| p.calls.path == calls.path && p.calls.file_offset == calls.file_offset)
        {
            notes.push(format!("{name} is {} (the same code): probed once", same.name));
            continue;
        }
        let returns = place(&object, &name, true)
            .map_err(|why| AllocError::Probe(format!("probe `uretprobe:{object}:{name}`: {why}")))?;
        let object = calls.path.to_string_lossy().into_owned();
        out.push(Probe { name, object, role, calls, returns });
    }
    Ok(out)
}

/// A finished allocation recording.
pub struct AllocRecording {
    /// The allocation profile, with its summary in `alloc`.
    pub profile: Profile,
    /// Why the command was not followed to its end, if it was not; the profile then
    /// holds the calls seen until then.
    pub unfinished: Option<Unfinished>,
}

/// Why an allocation recording ended before its command did.
#[derive(Debug, Clone, PartialEq)]
pub enum Unfinished {
    /// The user interrupted it (Ctrl-C).
    Interrupted,
    /// Waiting for the command failed (the system's reason, one line).
    WaitFailed(String),
}

/// How often the drain thread empties the rings below their wake-up watermark.
const POLL: Duration = Duration::from_millis(20);

/// How often the drain thread reads the probes' counters for the once-a-second overhead
/// line: a read per event per CPU, too many to repeat at every [`POLL`] with many processes.
const COUNT_EVERY: Duration = Duration::from_millis(250);

/// The probes of an [`AllocOptions`], placed once (symbols looked up, objects found) and
/// then attached to every process they watch: `profile --alloc`'s one command, or each
/// run of `compare --explain-alloc`.
pub struct AllocProbes {
    probes: Vec<Probe>,
    /// What was left out while placing them, said with every profile.
    notes: Vec<String>,
    every: u64,
    stacks: Stacks,
    /// Blocks are followed only when every call and its return are seen.
    tracked: bool,
}

impl AllocProbes {
    /// Place the probes `opts` asks for (its command is not used).
    pub fn place(opts: &AllocOptions) -> Result<AllocProbes, AllocError> {
        if opts.every == 0 {
            return Err(AllocError::Every);
        }
        let mut notes = Vec::new();
        let probes = probes(opts, &mut notes)?;
        Ok(AllocProbes { probes, notes, every: opts.every, stacks: opts.stacks, tracked: opts.every == 1 })
    }

    /// Open the probes on the child `pid`, held before its exec, and drain them on a
    /// thread of their own until [`AllocProbes::profile`].
    pub fn attach(&self, pid: libc::pid_t) -> std::io::Result<Watching> {
        self.watch(&[source::Watched::Exec(pid)], Vec::new())
    }

    /// Open the probes on every thread of the running processes `pids` (threads they
    /// start later inherit them), with the mappings they have now, and drain them on a
    /// thread of their own until [`AllocProbes::profile`].
    pub fn attach_running(&self, pids: &[u32]) -> std::io::Result<Watching> {
        let mut watched = Vec::new();
        for &pid in pids {
            let threads = crate::target::threads(pid).map_err(|e| std::io::Error::other(e.to_string()))?;
            watched.extend(threads.into_iter().map(|tid| source::Watched::Thread(tid as libc::pid_t)));
        }
        // What was mapped before the events opened, placed before every real record.
        let (mappings, threads) = crate::target::existing(pids);
        let mut known: Vec<(u64, Item)> = threads
            .into_iter()
            .map(|t| (0, Item::Other(Record::Comm { pid: t.pid, tid: t.tid, comm: t.comm, exec: false })))
            .collect();
        known.extend(mappings.into_iter().map(|m| {
            (0, Item::Other(Record::Mmap { pid: m.pid, start: m.start, len: m.len, pgoff: m.pgoff, path: m.path }))
        }));
        self.watch(&watched, known)
    }

    fn watch(&self, watched: &[source::Watched], known: Vec<(u64, Item)>) -> std::io::Result<Watching> {
        let opened = source::open(watched, &self.probes, self.every, self.stacks, self.tracked)?;
        let (read, write) = crate::record::stop_pipe()?;
        let stacks = self.stacks;
        let seen: std::sync::Arc<Vec<std::sync::atomic::AtomicU64>> =
            std::sync::Arc::new(self.probes.iter().map(|_| Default::default()).collect());
        let stopping = std::sync::Arc::new(AtomicBool::new(false));
        let (counter, stop_flag) = (seen.clone(), stopping.clone());
        let drainer = std::thread::Builder::new()
            .name("perflab-alloc-drain".into())
            .spawn(move || drain_until_stopped(opened, stacks, known, read, &stop_flag, &counter))?;
        Ok(Watching { stop: write, stopping, drainer: Some(drainer), seen })
    }

    /// The allocation profile of what `watching` saw, for a command run as `argv`.
    pub fn profile(&self, watching: Watching, argv: &[String]) -> Profile {
        let (items, counted) = watching.stop();
        let mut profile = Profile {
            event: "alloc-bytes".into(),
            frequency_hz: 0,
            sample_period: Some(self.every),
            command: argv.to_vec(),
            target: RecordTarget::Command,
            ..Profile::default()
        };
        build(&mut profile, items, &self.probes, &counted, self.tracked, self.every, self.notes.clone());
        profile
    }
}

/// The probes open on one process, drained by a thread until stopped.
pub struct Watching {
    /// Written to once to stop the drain thread.
    stop: OwnedFd,
    /// Set with the write: the drain thread leaves its unwinding for after the close.
    stopping: std::sync::Arc<AtomicBool>,
    drainer: Option<JoinHandle<Drained>>,
    /// Calls counted so far per probe by its counters (lost records included), read at
    /// every turn of the drain loop.
    seen: std::sync::Arc<Vec<std::sync::atomic::AtomicU64>>,
}

/// The records of a watched process (call sites unwound), and every call each probe
/// counted.
type Drained = (Vec<(u64, Item)>, Vec<u64>);

impl Watching {
    /// Stop draining (the process is gone: nothing follows) and take what was drained.
    fn stop(mut self) -> Drained {
        self.signal_stop();
        self.drainer.take().and_then(|d| d.join().ok()).unwrap_or_default()
    }

    fn signal_stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        // SAFETY: writing one byte from a valid buffer to our own pipe.
        unsafe { libc::write(self.stop.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        if let Some(drainer) = self.drainer.take() {
            self.signal_stop();
            let _ = drainer.join();
        }
    }
}

/// Records drained from a ring per turn of the drain loop: a turn also reads the counters
/// that say the overhead and looks for the stop.
const DRAIN_BATCH: usize = 4096;

/// Drain the rings whenever one fills to its watermark or every [`POLL`], unwinding each
/// batch while its stack copies are at hand, until `stop` is readable; then once more.
/// Stopping closes the events first and unwinds what is left after: the probes trap in the
/// watched processes until their events are closed, and unwinding a full ring's batch
/// takes seconds.
fn drain_until_stopped(
    mut opened: source::Opened,
    stacks: Stacks,
    known: Vec<(u64, Item)>,
    stop: OwnedFd,
    stopping: &AtomicBool,
    seen: &[std::sync::atomic::AtomicU64],
) -> Drained {
    let mut items: Vec<(u64, Item)> = known;
    let mut unwinding = Unwinding::new(stacks);
    let mut unwound = unwinding.batch(&mut items, stopping);
    let probes = opened.ids.values().map(|(probe, _)| probe + 1).max().unwrap_or(0);
    let count_calls = |opened: &mut source::Opened| {
        let mut counted = vec![0u64; probes];
        for ring in &mut opened.rings {
            ring.add_counts(&mut counted);
        }
        counted
    };
    let mut last_count = std::time::Instant::now() - COUNT_EVERY;
    loop {
        let pollfd = |fd: RawFd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let mut fds = vec![pollfd(stop.as_raw_fd())];
        fds.extend(opened.rings.iter().map(|r| pollfd(r.fd())));
        // SAFETY: fds is a valid array for the duration of the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, POLL.as_millis() as i32) };
        for ring in &mut opened.rings {
            ring.drain_into(&opened.ids, &mut items, DRAIN_BATCH);
        }
        if fds[0].revents != 0 || stopping.load(Ordering::Relaxed) {
            break;
        }
        if last_count.elapsed() >= COUNT_EVERY {
            last_count = std::time::Instant::now();
            for (slot, calls) in seen.iter().zip(count_calls(&mut opened)) {
                slot.store(calls, Ordering::Relaxed);
            }
        }
        unwound += unwinding.batch(&mut items[unwound..], stopping);
    }
    for ring in &mut opened.rings {
        ring.disable();
    }
    for ring in &mut opened.rings {
        ring.drain_into(&opened.ids, &mut items, usize::MAX);
    }
    let counted = count_calls(&mut opened);
    close_in_parallel(opened);
    unwinding.batch(&mut items[unwound..], &AtomicBool::new(false));
    (items, counted)
}

/// Close every event of `opened` at once (see [`source::Ring::into_counters`]): each close
/// still takes the kernel's filter update, and those of different probes overlap.
fn close_in_parallel(opened: source::Opened) {
    let counters: Vec<perf_event::Counter> = opened.rings.into_iter().flat_map(source::Ring::into_counters).collect();
    std::thread::scope(|scope| {
        for counter in counters {
            scope.spawn(move || drop(counter));
        }
    });
}

/// Run the command (or watch the processes) with the allocations recorded, and build its
/// allocation profile, saying which call sites hide behind a tail call.
pub fn record(opts: &AllocOptions, started: impl FnOnce()) -> Result<AllocRecording, AllocError> {
    let mut recording = record_any(opts, started)?;
    let hidden = tail::notes(&recording.profile, &mut crate::symbolize::Symbolizer::default());
    if let Some(summary) = recording.profile.alloc.as_mut() {
        summary.notes.extend(hidden);
    }
    Ok(recording)
}

fn record_any(opts: &AllocOptions, started: impl FnOnce()) -> Result<AllocRecording, AllocError> {
    if !opts.pids.is_empty() {
        return record_running(opts, started);
    }
    if opts.argv.is_empty() {
        return Err(AllocError::NothingToProfile);
    }
    let program = perflab_sys::command::resolve_program(&opts.argv[0])?;
    let not_in_process = match opts.via {
        Via::Uprobes => Some("--alloc-via uprobes".to_string()),
        _ if !opts.custom.is_empty() || !opts.libc => {
            Some("custom allocators (--alloc-fn, --free-fn) are seen by uprobes only".to_string())
        }
        _ => preload::unusable_for(&program),
    };
    let Some(why) = not_in_process else { return record_in_process(opts, &program, started) };
    if opts.via == Via::Preload {
        return Err(AllocError::Usage(format!("--alloc-via preload cannot be used: {why}")));
    }
    if opts.sample_bytes.is_some() {
        return Err(AllocError::Usage(format!(
            "--alloc-sample needs the in-process recorder, which cannot be used: {why}"
        )));
    }
    let mut recording = record_by_uprobes(opts, &program, started)?;
    if let (Some(summary), Via::Auto) = (&mut recording.profile.alloc, opts.via) {
        summary.notes.insert(0, format!("recorded with uprobes (every call traps into the kernel): {why}"));
    }
    Ok(recording)
}

/// The command run with the in-process recorder preloaded ([`preload`]).
fn record_in_process(
    opts: &AllocOptions,
    program: &std::path::Path,
    started: impl FnOnce(),
) -> Result<AllocRecording, AllocError> {
    let recorder = preload::Recorder::new(opts.sample_bytes)
        .map_err(|e| AllocError::Start(format!("cannot write the in-process recorder: {e}")))?;
    let mut env = process::Environment::inherited();
    for (name, value) in recorder.variables() {
        env.set(&name, &value);
    }
    let prepared = process::Prepared::new(program, &opts.argv, opts.output.clone())
        .map_err(|e| AllocError::Start(e.to_string()))?;
    let interrupt = perflab_sys::interrupt::watcher();
    let start = std::time::Instant::now();
    let started_at = chrono::Utc::now().to_rfc3339();
    let child = match process::start(&prepared, &env, None) {
        Ok(child) => child,
        Err(process::SpawnError::Interrupted) => return Err(AllocError::Interrupted),
        Err(e) => return Err(AllocError::Start(e.to_string())),
    };
    started();
    let outcome = child.wait(None, interrupt);
    let mut profile = recorder.profile(&opts.argv);
    profile.started = started_at;
    if let (true, Some(summary)) = (opts.stacks_asked, profile.alloc.as_mut()) {
        summary.notes.push(
            "-g and --stack-size choose how uprobes unwind: not used, the in-process recorder unwinds every call itself (from .eh_frame, with the C library's unwinder)".into(),
        );
    }
    let unfinished = finish(&mut profile, outcome, start);
    Ok(AllocRecording { profile, unfinished })
}

/// The durations and exit of a launched command's profile; why it was not followed to its
/// end, if it was not.
fn finish(
    profile: &mut Profile,
    outcome: Result<process::Finished, process::SpawnError>,
    start: std::time::Instant,
) -> Option<Unfinished> {
    match outcome {
        Ok(o) => {
            profile.duration_s = o.wall.as_secs_f64();
            profile.cpu_s = process::seconds(o.rusage.ru_utime) + process::seconds(o.rusage.ru_stime);
            profile.exit_code = o.exit.exit_code;
            None
        }
        Err(e) => {
            profile.duration_s = start.elapsed().as_secs_f64();
            Some(match e {
                process::SpawnError::Interrupted => Unfinished::Interrupted,
                other => Unfinished::WaitFailed(other.to_string()),
            })
        }
    }
}

/// The command run with the allocation probes on it.
fn record_by_uprobes(
    opts: &AllocOptions,
    program: &std::path::Path,
    started: impl FnOnce(),
) -> Result<AllocRecording, AllocError> {
    let probes = AllocProbes::place(opts)?;
    let prepared = process::Prepared::new(program, &opts.argv, opts.output.clone())
        .map_err(|e| AllocError::Start(e.to_string()))?;
    let mut watching = None;
    let mut open_error = None;
    let mut gate = |pid: libc::pid_t| match probes.attach(pid) {
        Ok(w) => {
            watching = Some(w);
            Ok(())
        }
        Err(e) => {
            let message = e.to_string();
            open_error = Some(e);
            Err(anyhow::anyhow!(message))
        }
    };
    let interrupt = perflab_sys::interrupt::watcher();
    let start = std::time::Instant::now();
    let started_at = chrono::Utc::now().to_rfc3339();
    let child = match process::start(&prepared, &process::Environment::inherited(), Some(&mut gate)) {
        Ok(child) => child,
        Err(process::SpawnError::Probe(e)) => {
            return Err(open_error.map_or_else(|| AllocError::Start(e.to_string()), AllocError::Open))
        }
        Err(process::SpawnError::Interrupted) => return Err(AllocError::Interrupted),
        Err(e) => return Err(AllocError::Start(e.to_string())),
    };
    let watching = watching.expect("the gate opened the probes");
    started();
    let outcome = child.wait(None, interrupt);
    let mut profile = probes.profile(watching, &opts.argv);
    profile.started = started_at;
    let unfinished = finish(&mut profile, outcome, start);
    Ok(AllocRecording { profile, unfinished })
}

/// Attach the probes to the running processes of `opts` until they all exit, its
/// duration passes or Ctrl-C (without a duration, how an attached recording ends).
fn record_running(opts: &AllocOptions, started: impl FnOnce()) -> Result<AllocRecording, AllocError> {
    let probes = AllocProbes::place(opts)?;
    let pidfds = opts
        .pids
        .iter()
        .map(|&pid| crate::target::pidfd(pid).map_err(|e| AllocError::Attach(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    // The first process's command line, to name the profile (read before it can end).
    let command: Vec<String> = std::fs::read(format!("/proc/{}/cmdline", opts.pids[0]))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    // Listed before the probes open: children started later are followed (inherited).
    let children: Vec<u32> = opts
        .pids
        .iter()
        .flat_map(|&pid| crate::notes::children_of(pid))
        .filter(|child| !opts.pids.contains(child))
        .collect();
    let interrupt = perflab_sys::interrupt::watcher();
    let started_at = chrono::Utc::now().to_rfc3339();
    // Calibrated before the probes go on: it times probed calls of perflab's own.
    let mut overhead = opts.progress.map(|tell| (tell, Overhead::new(&probes.probes, &opts.pids)));
    let watching = probes.attach_running(&opts.pids).map_err(AllocError::Open)?;
    let start = std::time::Instant::now();
    if let Some((_, overhead)) = overhead.as_mut() {
        overhead.start();
    }
    started();
    let mut exited = vec![false; pidfds.len()];
    let unfinished = loop {
        if let Some((tell, overhead)) = overhead.as_mut() {
            if let Some(line) = overhead.update(&watching.seen) {
                tell(&line);
            }
        }
        let left = opts.duration.map(|d| d.saturating_sub(start.elapsed()));
        if left == Some(Duration::ZERO) || exited.iter().all(|&e| e) {
            break None;
        }
        let pollfd = |fd: RawFd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let mut fds = vec![pollfd(interrupt.fd())];
        fds.extend(pidfds.iter().map(|fd| pollfd(fd.as_raw_fd())));
        let timeout = left.map_or(1000, |l| l.as_millis().clamp(1, 1000) as i32);
        // SAFETY: fds is a valid array for the duration of the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if interrupt.requested() {
            break opts.duration.is_some().then_some(Unfinished::Interrupted);
        }
        for (done, fd) in exited.iter_mut().zip(&fds[1..]) {
            *done |= fd.revents != 0;
        }
    };
    let duration_s = start.elapsed().as_secs_f64();
    let mut profile = probes.profile(watching, &command);
    profile.started = started_at;
    profile.duration_s = duration_s;
    profile.target = RecordTarget::Pids(opts.pids.clone());
    if let Some(summary) = &mut profile.alloc {
        summary.notes.push(
            "attached to running processes: \"live\" blocks are those allocated while recording and not freed before it ended, and frees of blocks allocated before it began count as unmatched".into(),
        );
        if !children.is_empty() {
            summary.notes.push(children_not_watched(&opts.pids, &children));
        }
    }
    Ok(AllocRecording { profile, unfinished })
}

/// Children running before the attach are not watched: the kernel passes events on only
/// to tasks created while they are open, and a server's work is usually its children's
/// (the postmaster's backends).
fn children_not_watched(pids: &[u32], children: &[u32]) -> String {
    let list = |ids: &[u32]| ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let shown = &children[..children.len().min(5)];
    let (parents, count) = (list(pids), children.len());
    let more = if count > shown.len() { ", …" } else { "" };
    let shown = list(shown).replace(',', ", ");
    format!(
        "PID {parents} had {count} child process(es) running when the probes were placed ({shown}{more}): their allocations are not recorded (only processes started while attached are followed) — attach to them too: -p {parents},$(pgrep -d, -P {parents})"
    )
}

/// Turns each call's registers and stack into its call site and callers (return
/// addresses, call site first), batch by batch while the rings drain, so stack copies
/// are not kept.
struct Unwinding {
    stacks: Stacks,
    unwinder: DwarfUnwinder,
}

impl Unwinding {
    fn new(stacks: Stacks) -> Unwinding {
        Unwinding { stacks, unwinder: DwarfUnwinder::default() }
    }

    /// Unwind `batch` in time order until `stop` is set (checked every few hundred
    /// records); how many of its records (sorted first) were done.
    fn batch(&mut self, batch: &mut [(u64, Item)], stop: &AtomicBool) -> usize {
        batch.sort_by_key(|(time, _)| *time);
        for (done, (_, item)) in batch.iter_mut().enumerate() {
            if done % 256 == 255 && stop.load(Ordering::Relaxed) {
                return done;
            }
            match item {
                Item::Other(Record::Mmap { pid, start, len, pgoff, path }) => {
                    self.unwinder.mmap(*pid, *start, *len, *pgoff, path)
                }
                Item::Other(Record::Comm { pid, exec: true, .. }) => self.unwinder.exec(*pid),
                Item::Other(Record::Fork { pid, ppid, .. }) => self.unwinder.fork(*pid, *ppid),
                Item::Call { returned: false, pid, regs, stack, chain, .. } => {
                    let bytes = std::mem::take(stack);
                    *chain = match self.stacks {
                        Stacks::Dwarf { .. } => {
                            let user = UserStack { ip: regs[0], sp: regs[1], bp: regs[2], bytes };
                            let unwound = self.unwinder.unwind(*pid, &user, 128);
                            unwound.addresses.into_iter().skip(1).collect()
                        }
                        Stacks::FramePointers => {
                            // [context, ip, callers of the caller…]: the caller itself is the
                            // return address on top of the stack.
                            let site = bytes.get(..8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")));
                            let callers =
                                chain.iter().copied().filter(|a| *a < crate::record::records::PERF_CONTEXT_MAX).skip(1);
                            site.into_iter().chain(callers).collect()
                        }
                    };
                }
                _ => {}
            }
        }
        batch.len()
    }
}

/// The profile of the recorded calls: allocations as samples by call site, the
/// summary, and the live blocks' stacks.
/// `counted`: every call of each probe as its counter saw it (sampled or not).
fn build(
    profile: &mut Profile,
    mut items: Vec<(u64, Item)>,
    probes: &[Probe],
    counted: &[u64],
    tracked: bool,
    every: u64,
    mut notes: Vec<String>,
) {
    items.sort_by_key(|(time, _)| *time);
    let mut others: Vec<(u64, Record)> = Vec::new();
    let mut calls: Vec<(u64, Call<Vec<u64>>)> = Vec::new();
    for (time, item) in items {
        match item {
            Item::Other(record) => others.push((time, record)),
            Item::Call { pid, tid, probe, returned: false, args, regs, chain, .. } => {
                let ret = chain.first().copied().unwrap_or(0);
                calls.push((time, Call::Entry { pid, tid, probe, args, sp: regs[1], ret, site: chain }))
            }
            Item::Call { tid, probe, returned: true, args, regs, .. } => {
                calls.push((time, Call::Return { tid, probe, value: args[0], sp: regs[1] }))
            }
        }
    }
    let roles: Vec<Role> = probes.iter().map(|p| p.role).collect();
    let paired = pairing::pair(calls, &roles, tracked);
    let sample = |a: &pairing::Allocation<Vec<u64>>| {
        // The call site is a return address: the call instruction is just before it.
        let site = a.site.first().copied().unwrap_or(0).wrapping_sub(1);
        let mut chain = vec![PERF_CONTEXT_USER, site];
        chain.extend(a.site.iter().skip(1));
        let period = a.bytes.saturating_mul(every);
        (a.time, Record::Sample { pid: a.pid, tid: a.tid, ip: site, period, kernel: false, chain })
    };
    let mut records = others.clone();
    records.extend(paired.allocations.iter().map(sample));
    Converter::convert(records, profile, true);
    // Sampled calls stand for `every` calls each.
    if every > 1 {
        for s in &mut profile.samples {
            s.count *= every;
        }
        for s in &mut profile.stacks {
            s.count *= every;
        }
    }
    let live = if tracked {
        let mut records = others;
        records.extend(paired.allocations.iter().filter(|a| a.live).map(sample));
        let mut live_profile = Profile::default();
        Converter::convert(records, &mut live_profile, true);
        remap(&live_profile, profile)
    } else {
        notes.push(format!(
            "a sample every {every} calls: the calls per function are counted exactly, but bytes and the split between call sites are estimates (each sample stands for {every} calls), and blocks are not followed to their frees"
        ));
        Vec::new()
    };
    let lost = profile.lost;
    if lost > 0 {
        notes.push(format!(
            "{lost} records were lost (the rings filled faster than perflab drained them; a smaller --stack-size helps; a launched command is recorded in-process, without rings): the calls per function are the probes' counters (exact), their bytes estimates from the calls seen, and the call sites miss the lost calls{}",
            if tracked { "; blocks whose free was lost look live" } else { "" }
        ));
    }
    let nested: u64 = paired.per_probe.iter().map(|p| p.2).sum();
    if nested > 0 {
        notes.push(format!(
            "{nested} calls made from inside a probed function (realloc(NULL, n) calling malloc, …) are counted once, as the outer call"
        ));
    }
    if tracked && paired.unreturned > 0 {
        notes.push(format!(
            "{} calls' returns were not recorded (a call under way when the probes were placed, or a record lost): they are counted, but their blocks are not followed to their frees",
            paired.unreturned
        ));
    }
    let functions = probes
        .iter()
        .zip(&paired.per_probe)
        .zip(counted)
        .map(|((p, &(calls, bytes, nested)), &exact)| {
            // Sampled, or records lost: the counter knows every call (nested ones too, when
            // they were told apart); the bytes scale with the mean of the calls seen.
            let exact = if tracked { exact.saturating_sub(nested) } else { exact };
            let (calls, bytes) = match every {
                1 if lost == 0 && exact <= calls => (calls, bytes),
                _ if calls == 0 => (exact, 0),
                _ => (exact, (bytes as f64 * exact as f64 / calls as f64).round() as u64),
            };
            AllocFunction { name: p.name.clone(), object: p.object.clone(), role: p.role, calls, bytes, nested }
        })
        .collect();
    // Records that never arrived though no loss was reported (seen once, attached to a
    // process on a machine at load 20: 1 record for ~40,000 counted calls): the counters
    // are believed, and the gap said.
    let unrecorded: u64 = paired.per_probe.iter().zip(counted).map(|(p, &exact)| exact.saturating_sub(p.0 + p.2)).sum();
    if every == 1 && lost == 0 && unrecorded > 0 {
        notes.push(format!(
            "{unrecorded} calls counted by the probes' counters left no record: the calls per function are the counters', their bytes estimates from the calls seen, and the frees, live blocks and call sites miss them"
        ));
    }
    if probes.iter().any(|p| p.role == Role::PosixMemalign)
        && paired.per_probe.iter().zip(probes).any(|(c, p)| p.role == Role::PosixMemalign && c.0 > 0)
    {
        notes.push("posix_memalign writes its block's address to memory, not a register: its blocks are counted but not followed (their frees count as unmatched)".into());
    }
    profile.alloc = Some(AllocSummary {
        every,
        functions,
        frees: paired.frees,
        freed_bytes: paired.freed_bytes,
        unmatched_frees: paired.unmatched_frees,
        tracked,
        live,
        notes,
        sample_bytes: None,
        site_bytes_sd: Vec::new(),
    });
}

/// The stacks of `live` over the frames of `profile` (both converted from the same
/// mappings, so objects agree by path).
fn remap(live: &Profile, profile: &Profile) -> Vec<LiveStack> {
    let key = |p: &Profile, f: &crate::format::FrameRef| {
        (f.space, f.object.and_then(|o| p.objects.get(o as usize)).map(|o| o.path.clone()), f.offset)
    };
    let index: HashMap<_, u32> = profile.frames.iter().enumerate().map(|(i, f)| (key(profile, f), i as u32)).collect();
    live.stacks
        .iter()
        .filter_map(|s| {
            let frames = s
                .frames
                .iter()
                .map(|&f| index.get(&key(live, live.frames.get(f as usize)?)).copied())
                .collect::<Option<Vec<u32>>>()?;
            Some(LiveStack { pid: s.pid, tid: s.tid, frames, count: s.count, period: s.period })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary survives the profile file, and files without it still read.
    #[test]
    fn the_summary_round_trips_through_the_profile_file() {
        let summary = AllocSummary {
            every: 1,
            functions: vec![AllocFunction {
                name: "malloc".into(),
                object: "/lib/libc.so.6".into(),
                role: Role::Alloc,
                calls: 3,
                bytes: 96,
                nested: 1,
            }],
            frees: 2,
            freed_bytes: 64,
            unmatched_frees: 0,
            tracked: true,
            live: vec![LiveStack { pid: 1, tid: 1, frames: vec![0], count: 1, period: 32 }],
            notes: vec!["a note".into()],
            sample_bytes: None,
            site_bytes_sd: Vec::new(),
        };
        let profile = Profile {
            event: "alloc-bytes".into(),
            sample_period: Some(1),
            frames: vec![crate::format::FrameRef { space: crate::format::Space::Unmapped, object: None, offset: 0x10 }],
            alloc: Some(summary.clone()),
            ..Profile::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.profile");
        profile.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""role":{"kind":"alloc"}"#), "{text}");
        assert_eq!(Profile::load(&path).unwrap().alloc, Some(summary.clone()));
        assert_eq!(
            (summary.live_blocks(), summary.live_bytes(), summary.allocations(), summary.allocated_bytes()),
            (1, 32, 3, 96)
        );
        // A live stack naming a frame the file does not have is refused, not followed.
        let mut broken = profile.clone();
        broken.alloc.as_mut().unwrap().live[0].frames = vec![7];
        broken.save(&path).unwrap();
        assert!(Profile::load(&path).unwrap_err().to_string().contains("frame"), "a dangling frame");
        let plain = Profile { event: "cpu-clock".into(), frequency_hz: 997, ..Profile::default() };
        plain.save(&path).unwrap();
        assert_eq!(Profile::load(&path).unwrap().alloc, None);
    }

    /// Records lost: the per-function calls come from the probes' counters (every call),
    /// less the nested calls told apart; the bytes are scaled from the calls seen; said.
    #[test]
    fn lost_records_leave_the_counted_calls_exact_and_say_so() {
        let uprobe = |file_offset| Uprobe { id: 9, retprobe: false, path: c"/lib/libc.so.6", file_offset };
        let probe = |name: &str, role, offset| Probe {
            name: name.into(),
            object: "/lib/libc.so.6".into(),
            role,
            calls: uprobe(offset),
            returns: uprobe(offset),
        };
        let probes = [probe("malloc", Role::Alloc, 0x10), probe("free", Role::Free, 0x20)];
        let call = |probe, returned, arg: u64| Item::Call {
            pid: 7,
            tid: 7,
            probe,
            returned,
            args: [arg, 0, 0, 0],
            regs: [0; 3],
            stack: vec![],
            chain: vec![0x401000],
        };
        // Two mallocs of 100 bytes seen (and returned), one freed; the rest was lost.
        let items = vec![
            (1, call(0, false, 100)),
            (2, call(0, true, 0xa000)),
            (3, call(0, false, 100)),
            (4, call(0, true, 0xb000)),
            (5, call(1, false, 0xa000)),
            (6, Item::Other(Record::Lost(8))),
        ];
        let mut profile = Profile::default();
        build(&mut profile, items, &probes, &[10, 4], true, 1, vec![]);
        let summary = profile.alloc.unwrap();
        let totals: Vec<(u64, u64)> = summary.functions.iter().map(|f| (f.calls, f.bytes)).collect();
        assert_eq!(totals, [(10, 1000), (4, 0)]);
        assert_eq!((summary.frees, summary.live_blocks(), summary.live_bytes()), (1, 1, 100));
        assert!(summary.notes.iter().any(|n| n.starts_with("8 records were lost") && n.contains("counters (exact)")));
    }

    #[test]
    fn custom_allocators_name_their_size_or_block_argument() {
        let palloc = Custom::parse("postgres:palloc", false).unwrap();
        assert_eq!(
            (palloc.object.as_str(), palloc.function.as_str(), palloc.role),
            ("postgres", "palloc", Role::Custom { size_arg: 0 })
        );
        let context = Custom::parse("postgres:MemoryContextAlloc=2", false).unwrap();
        assert_eq!(context.role, Role::Custom { size_arg: 1 });
        assert_eq!(Custom::parse("postgres:pfree", true).unwrap().role, Role::CustomFree { pointer_arg: 0 });
        for bad in ["palloc", "postgres:", ":palloc", "postgres:palloc=0", "postgres:palloc=9", "postgres:palloc=x"] {
            let err = Custom::parse(bad, false).unwrap_err().to_string();
            assert!(err.contains("OBJECT:FUNCTION"), "{bad}: {err}");
        }
    }
}
