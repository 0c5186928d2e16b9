//! A recording's lifecycle: start the target (launch a held command, attach to running
//! processes, or every CPU) with the events open on it, poll until it ends, drain the
//! rings into records — unwinding each batch's stack copies with `-g dwarf` — and hand
//! them to the converter, at the end or window by window for a live view.

use super::capture::CodeCapture;
use super::converter::Converter;
use super::records::{Record, Timed};
use super::source::{self, Observe, Ring};
use super::unwinding::unwind_batch;
use super::{CallGraph, RecordOptions, Recording, RecordingMode};
use crate::error::ProfileError;
use crate::error::RecordError;
use crate::format::{DwarfStats, Profile, RecordTarget};
use crate::unwind::DwarfUnwinder;
use crate::{kernel, target};
use perflab_sys::interrupt::Interrupt;
use perflab_sys::spawn::process;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Why a recording stops (or that it goes on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Still recording.
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
    /// The profiled command (launch mode).
    child: Option<process::Child>,
    child_pidfd: Option<RawFd>,
    /// Attached processes still running, with their CPU time when recording began.
    watched: Vec<(u32, OwnedFd, Option<f64>)>,
    cpu_of_exited: f64,
    started: String,
    start: Instant,
    /// Records drained and not yet converted.
    records: Vec<Timed>,
    /// Mapping and task records already converted for a live view, kept so that later
    /// samples still resolve (samples are dropped once shown).
    history: Vec<Timed>,
    /// With `-g dwarf`: the unwinder (fed the mappings of every drained batch) and what
    /// it did.
    unwinder: Option<(DwarfUnwinder, DwarfStats)>,
    /// Copies of the runtime code (JIT, SBCL) that samples land in, taken while the
    /// processes run.
    capture: CodeCapture,
}

impl Session {
    /// Open the events on the target (starting the command, if that is the target).
    pub fn start(opts: &RecordOptions) -> Result<Session, ProfileError> {
        let mut opts = opts.clone();
        if opts.off_cpu && opts.call_graph == CallGraph::None {
            opts.call_graph = CallGraph::FramePointers;
        }
        opts.check()?;
        let unwinder = match opts.call_graph {
            CallGraph::Dwarf { stack_bytes } => Some((DwarfUnwinder::default(), DwarfStats::new(stack_bytes))),
            _ => None,
        };
        let mut session = Session {
            opts,
            rings: Vec::new(),
            child: None,
            child_pidfd: None,
            watched: Vec::new(),
            cpu_of_exited: 0.0,
            started: chrono::Utc::now().to_rfc3339(),
            start: Instant::now(),
            records: Vec::new(),
            history: Vec::new(),
            unwinder,
            capture: CodeCapture::default(),
        };
        match session.opts.mode.clone() {
            RecordingMode::Launch { argv, output } => session.launch(&argv, output)?,
            RecordingMode::Pids { pids, .. } => session.attach(&pids)?,
            RecordingMode::AllCpus { .. } => {
                session.rings = source::open_all(&[Observe::AllTasks], &session.opts)?;
                session.add_existing(&target::all_pids());
            }
        }
        session.start = Instant::now();
        Ok(session)
    }

    /// Start the command, held between fork and exec while the events are opened on it.
    fn launch(&mut self, argv: &[String], output: process::Output) -> Result<(), ProfileError> {
        let opts = &self.opts;
        let program = perflab_sys::command::resolve_program(&argv[0])?;
        let prepared = process::Prepared::new(&program, argv, output)?;
        let mut rings = Vec::new();
        let mut open_failure = None;
        let mut gate = |pid: libc::pid_t| match source::open_all(&[Observe::Exec(pid)], opts) {
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
            Err(process::SpawnError::Probe(e)) => {
                return Err(open_failure.map_or_else(|| RecordError::Gate(e).into(), ProfileError::from))
            }
            Err(process::SpawnError::Interrupted) => {
                return Err(ProfileError::Interrupted("interrupted before the profiled command started"))
            }
            Err(process::SpawnError::Exec(e)) => return Err(RecordError::Exec(e).into()),
        };
        self.child_pidfd = Some(child.pidfd().map_err(|e| ProfileError::System(anyhow::anyhow!("{e}")))?);
        self.child = Some(child);
        self.rings = rings;
        Ok(())
    }

    /// Open the events on every thread of the attached processes. Threads started
    /// before their creator's event was open do not inherit it: list again until no
    /// new thread appears.
    fn attach(&mut self, pids: &[u32]) -> Result<(), ProfileError> {
        for &pid in pids {
            self.watched.push((pid, target::pidfd(pid)?, target::cpu_seconds(pid)));
        }
        let mut opened: std::collections::HashSet<u32> = std::collections::HashSet::new();
        for _ in 0..10 {
            let mut new = Vec::new();
            for &pid in pids {
                new.extend(target::threads(pid).unwrap_or_default().into_iter().filter(|t| !opened.contains(t)));
            }
            if new.is_empty() {
                break;
            }
            let observed: Vec<Observe> = new.iter().map(|&t| Observe::Thread(t as i32)).collect();
            // Later threads join the first rings opened (one per CPU and kind).
            let rings = source::open_all(&observed, &self.opts)?;
            source::join_rings(&mut self.rings, rings)?;
            opened.extend(new);
        }
        if self.rings.is_empty() {
            return Err(RecordError::NoThreadLeft { pids: super::join(pids) }.into());
        }
        self.add_existing(pids);
        Ok(())
    }

    /// Mappings and thread names that existed before the events were opened, placed
    /// before every real record (time 0); the unwinder learns the mappings before the
    /// first drain.
    fn add_existing(&mut self, pids: &[u32]) {
        let (mappings, threads) = target::existing(pids);
        let before = self.records.len();
        for t in threads {
            self.records.push((0, Record::Comm { pid: t.pid, tid: t.tid, comm: t.comm, exec: false }));
        }
        for m in mappings {
            if let Some((unwinder, _)) = &mut self.unwinder {
                unwinder.mmap(m.pid, m.start, m.len, m.pgoff, &m.path);
            }
            self.records
                .push((0, Record::Mmap { pid: m.pid, start: m.start, len: m.len, pgoff: m.pgoff, path: m.path }));
        }
        self.capture.observe(&self.records[before..]);
    }

    /// Copy out every record waiting in the rings; with `-g dwarf`, unwind the new
    /// batch's stacks right away.
    fn drain(&mut self) {
        let before = self.records.len();
        for ring in &mut self.rings {
            ring.drain_into(&mut self.records);
        }
        // In time order, so each sample meets the mappings of its moment.
        self.records[before..].sort_by_key(|(time, _)| *time);
        if let Some((unwinder, stats)) = &mut self.unwinder {
            unwind_batch(unwinder, stats, &mut self.records[before..]);
        }
        self.capture.observe(&self.records[before..]);
    }

    /// Wait up to `timeout` for records, Ctrl-C or the target's end, and drain the rings.
    pub fn poll(&mut self, timeout: Duration, interrupt: &Interrupt) -> SessionState {
        let duration = self.opts.duration();
        let deadline = duration.map(|d| d.saturating_sub(self.start.elapsed()));
        let timeout = deadline.map_or(timeout, |left| left.min(timeout));
        let pollfd = |fd: RawFd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let mut fds = vec![pollfd(interrupt.fd())];
        fds.extend(self.child_pidfd.map(pollfd));
        fds.extend(self.watched.iter().map(|(_, fd, _)| pollfd(fd.as_raw_fd())));
        fds.extend(self.rings.iter().map(|r| pollfd(r.fd())));
        // SAFETY: fds is a valid array for the duration of the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout.as_millis() as i32) };
        self.drain();
        if interrupt.requested() {
            return SessionState::Interrupted;
        }
        let mut next = 1;
        if self.child_pidfd.is_some() {
            if fds[1].revents != 0 {
                return SessionState::TargetEnded;
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
                return SessionState::TargetEnded;
            }
        }
        if duration.is_some_and(|d| self.start.elapsed() >= d) {
            return SessionState::DurationElapsed;
        }
        SessionState::Running
    }

    /// Kill the command's process group if it is still running (a live view was quit).
    pub fn stop_command(&self) {
        if let Some(child) = &self.child {
            // SAFETY: signalling the process group of our own unreaped child.
            unsafe { libc::kill(-child.pid, libc::SIGKILL) };
        }
    }

    fn empty_profile(&self) -> Profile {
        let (target, command) = match &self.opts.mode {
            RecordingMode::Launch { argv, .. } => (RecordTarget::Command, argv.clone()),
            RecordingMode::Pids { pids, .. } => (RecordTarget::Pids(pids.clone()), Vec::new()),
            RecordingMode::AllCpus { .. } => (RecordTarget::AllCpus, Vec::new()),
        };
        Profile {
            event: self.opts.event.clone(),
            frequency_hz: if self.opts.period.is_some() { 0 } else { self.opts.frequency_hz },
            sample_period: self.opts.period,
            command,
            started: self.started.clone(),
            target,
            off_cpu_recorded: self.opts.off_cpu,
            ..Profile::default()
        }
    }

    fn call_graph(&self) -> bool {
        self.opts.call_graph != CallGraph::None
    }

    /// The samples (and losses) drained since the last call as a profile; mapping and
    /// task records are kept for the next call. For a live view.
    pub fn take_window(&mut self) -> Profile {
        let (samples, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.records)
            .into_iter()
            .partition(|(_, r)| matches!(r, Record::Sample { .. } | Record::Lost(_)));
        self.history.extend(others);
        let mut records = self.history.clone();
        records.extend(samples);
        let mut profile = self.empty_profile();
        profile.duration_s = self.start.elapsed().as_secs_f64();
        Converter::convert_classified(records, &mut profile, self.call_graph(), self.capture.classifier());
        profile
    }

    /// Stop recording (a command is waited for; after an interrupt its process group is
    /// killed) and build the profile.
    pub fn finish(mut self, ending: SessionState, interrupt: &Interrupt) -> Result<Recording, ProfileError> {
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
                    Err(process::SpawnError::Exec(e)) => return Err(ProfileError::System(anyhow::anyhow!(e))),
                    Err(process::SpawnError::Probe(e)) => return Err(ProfileError::System(e)),
                    Err(process::SpawnError::Interrupted) | Ok(_) => {}
                }
                ending == SessionState::Interrupted
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
                ending == SessionState::Interrupted && self.opts.duration().is_some()
            }
        };
        self.drain();
        drop(std::mem::take(&mut self.rings));
        let mut records = std::mem::take(&mut self.history);
        records.append(&mut self.records);
        // Naming code from a long perf map stops at a signal: what is named by then is kept.
        let signals = perflab_sys::interrupt::signals_received();
        Converter::convert_classified(records, &mut profile, self.call_graph(), self.capture.classifier());
        self.capture.attach(&mut profile);
        kernel::attach_symbols(&mut profile);
        profile.dwarf = self.unwinder.map(|(_, stats)| stats);
        let interrupted = interrupted || perflab_sys::interrupt::signals_received() != signals;
        Ok(Recording { profile, interrupted })
    }
}
