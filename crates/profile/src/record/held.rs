//! Sampling a child someone else starts and waits for — the experiment's spawner holds
//! every run before exec, so `compare --explain` samples the very runs it compares: the
//! events are opened on the held child (enable_on_exec + inherit, as for a launched
//! command), a thread drains the rings while the run goes on (the harness is blocked
//! waiting for it), and after the child was reaped the records become its profile.

use super::converter::Converter;
use super::records::Timed;
use super::source::{self, Observe, Ring};
use super::{CallGraph, RecordOptions, RecordingMode};
use crate::error::ProfileError;
use crate::format::{Profile, RecordTarget};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::thread::JoinHandle;

/// How often the drain thread empties rings below their wake-up watermark.
const DRAIN_INTERVAL_MS: i32 = 50;

/// The sampling of one held child, from its exec until [`HeldRecording::finish`].
pub struct HeldRecording {
    opts: RecordOptions,
    argv: Vec<String>,
    /// Written to once to stop the drain thread.
    stop: OwnedFd,
    drainer: Option<JoinHandle<Vec<Timed>>>,
}

impl HeldRecording {
    /// Open the events of `opts` (its event, frequency and call graph; the mode is
    /// ignored) on the held child `pid`, which will exec `argv`.
    pub fn open(pid: libc::pid_t, argv: &[String], opts: &RecordOptions) -> Result<HeldRecording, ProfileError> {
        let mut opts = opts.clone();
        opts.mode = RecordingMode::Launch { argv: argv.to_vec(), output: perflab_sys::spawn::process::Output::Discard };
        opts.off_cpu = false;
        if matches!(opts.call_graph, CallGraph::Dwarf { .. }) {
            // Unwinding needs the mappings of the run as it goes, which the drain thread
            // does not track; frame pointers or flat samples only.
            opts.call_graph = CallGraph::FramePointers;
        }
        opts.check()?;
        let rings = source::open_all(&[Observe::Exec(pid)], &opts)?;
        let (read, write) = stop_pipe().map_err(|e| ProfileError::System(anyhow::anyhow!("pipe: {e}")))?;
        let drainer = std::thread::Builder::new()
            .name("perflab-drain".into())
            .spawn(move || drain_until_stopped(rings, read))
            .map_err(|e| ProfileError::System(anyhow::anyhow!("starting the drain thread: {e}")))?;
        Ok(HeldRecording { opts, argv: argv.to_vec(), stop: write, drainer: Some(drainer) })
    }

    /// After the child was reaped: the rest of the records, as the run's profile.
    pub fn finish(mut self) -> Profile {
        // SAFETY: writing one byte from a valid buffer to our own pipe.
        unsafe { libc::write(self.stop.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        let records = self.drainer.take().and_then(|d| d.join().ok()).unwrap_or_default();
        let mut profile = Profile {
            event: self.opts.event.clone(),
            frequency_hz: self.opts.frequency_hz,
            command: self.argv.clone(),
            target: RecordTarget::Command,
            ..Profile::default()
        };
        Converter::convert(records, &mut profile, self.opts.call_graph != CallGraph::None);
        profile
    }
}

impl Drop for HeldRecording {
    fn drop(&mut self) {
        if let Some(drainer) = self.drainer.take() {
            // SAFETY: as in finish.
            unsafe { libc::write(self.stop.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
            let _ = drainer.join();
        }
    }
}

/// The pipe a drain thread polls to learn that its process is gone (read end, write end).
pub(crate) fn stop_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: a valid array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just created these descriptors; each is owned once.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Drain `rings` whenever one fills to its watermark or every [`DRAIN_INTERVAL_MS`],
/// until `stop` is readable; then drain once more (the child is gone: nothing follows).
fn drain_until_stopped(mut rings: Vec<Ring>, stop: OwnedFd) -> Vec<Timed> {
    let mut records = Vec::new();
    loop {
        let pollfd = |fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let mut fds = vec![pollfd(stop.as_raw_fd())];
        fds.extend(rings.iter().map(|r| pollfd(r.fd())));
        // SAFETY: fds is a valid array for the duration of the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, DRAIN_INTERVAL_MS) };
        for ring in &mut rings {
            ring.drain_into(&mut records);
        }
        if fds[0].revents != 0 {
            return records;
        }
    }
}
