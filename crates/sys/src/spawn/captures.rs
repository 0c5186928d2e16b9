//! Where a run's output goes besides its terminal: memory files holding stderr (its tail
//! explains a failure), pipes read while the command runs (metrics it prints), and a
//! pipe a thread drains for programs that notice /dev/null.

use super::error::PrepareError;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The write end of a pipe whose read end a thread drains and discards: a reader that
/// never blocks the command. The thread ends when the last write end (ours, dropped
/// with the command) closes.
pub(super) struct DrainedPipe {
    pub(super) write: OwnedFd,
}

impl DrainedPipe {
    pub(super) fn new() -> Result<DrainedPipe, PrepareError> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors, which we then own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(PrepareError::System { call: "pipe", source: io::Error::last_os_error() });
        }
        // SAFETY: fresh descriptors from pipe2.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        std::thread::Builder::new()
            .name("perflab-drain".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let mut read = std::fs::File::from(read);
                let _ = io::copy(&mut read, &mut io::sink());
            })
            .map_err(PrepareError::DrainThread)?;
        Ok(DrainedPipe { write })
    }
}

pub(super) fn memfd(name: &std::ffi::CStr) -> Result<OwnedFd, PrepareError> {
    // SAFETY: memfd_create with a valid NUL-terminated name.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(PrepareError::System { call: "memfd_create", source: io::Error::last_os_error() });
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Truncate and rewind a capture before a run.
pub(super) fn reset(fd: &OwnedFd) {
    // SAFETY: valid descriptor; truncating and rewinding a memfd cannot fail harmfully.
    unsafe {
        libc::ftruncate(fd.as_raw_fd(), 0);
        libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_SET);
    }
}

/// The bytes of a capture from `start` on (positioned reads: the descriptor's offset
/// may be shared with a writer).
pub(super) fn read_from(fd: &OwnedFd, start: u64) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let Ok(file) = fd.try_clone().map(std::fs::File::from) else { return Vec::new() };
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let mut offset = start;
    while let Ok(n) = file.read_at(&mut chunk, offset) {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        offset += n as u64;
    }
    buf
}

/// Where a command's stdout and stderr are captured (each `None` when that stream is
/// not captured): memory files read after the run (stderr alone, for the tail that
/// explains a failure), or, with `Output::Capture`, pipes read while the command runs
/// (`executor::capture`), so that output of any size costs no memory.
pub struct Captures {
    /// The child's stdout: the read end of its pipe with [`Output::Capture`].
    pub(super) stdout: Option<OwnedFd>,
    /// The child's stderr: a memory file, or the read end of its pipe.
    pub(super) stderr: Option<OwnedFd>,
    /// The pipes' write ends (given to the child), in the process that made them.
    pub(super) write_ends: Option<(OwnedFd, OwnedFd)>,
    /// Pipes, not memory files.
    pub(super) streamed: bool,
}

/// A pipe, both ends close-on-exec, with room for `size` bytes where the kernel allows
/// (a command's burst of output then waits less for the reader).
pub(super) fn pipe(size: libc::c_int) -> Result<(OwnedFd, OwnedFd), PrepareError> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the two descriptors; F_SETPIPE_SZ may fail (a limit) harmlessly.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(PrepareError::System { call: "pipe", source: io::Error::last_os_error() });
        }
        libc::fcntl(fds[1], libc::F_SETPIPE_SZ, size);
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// The capture pipes' size: /proc/sys/fs/pipe-max-size's default.
pub(super) const PIPE_SIZE: libc::c_int = 1 << 20;

impl Captures {
    /// The raw descriptors, to be opened by another process with [`Captures::open_in`].
    pub(crate) fn raw_fds(&self) -> (Option<RawFd>, Option<RawFd>) {
        (self.stdout.as_ref().map(|f| f.as_raw_fd()), self.stderr.as_ref().map(|f| f.as_raw_fd()))
    }

    /// The captures process `pid` holds at `fds` (from its [`Captures::raw_fds`]), opened
    /// here through /proc: the same memory files, read after each of its runs, or the
    /// same pipes (`streamed`), read while they run.
    pub(crate) fn open_in(
        pid: libc::pid_t,
        fds: (Option<RawFd>, Option<RawFd>),
        streamed: bool,
    ) -> io::Result<Captures> {
        let open = |fd: Option<RawFd>| -> io::Result<Option<OwnedFd>> {
            fd.map(|fd| std::fs::File::open(format!("/proc/{pid}/fd/{fd}")).map(OwnedFd::from)).transpose()
        };
        Ok(Captures { stdout: open(fds.0)?, stderr: open(fds.1)?, write_ends: None, streamed })
    }

    /// The read ends of the stdout and stderr pipes (`None` unless streamed), new
    /// descriptors of this process.
    pub fn streams(&self) -> io::Result<Option<(OwnedFd, OwnedFd)>> {
        match (&self.stdout, &self.stderr) {
            (Some(out), Some(err)) if self.streamed => Ok(Some((out.try_clone()?, err.try_clone()?))),
            _ => Ok(None),
        }
    }

    /// The last `max_lines` lines the last run wrote to stderr (empty with --show-output,
    /// and when streamed: the reader keeps the tail then).
    pub fn stderr_tail(&self, max_lines: usize) -> String {
        let Some(fd) = self.stderr.as_ref().filter(|_| !self.streamed) else { return String::new() };
        // SAFETY: fstat on a valid descriptor only reads its size.
        let len = unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            if libc::fstat(fd.as_raw_fd(), &mut stat) == 0 {
                stat.st_size.max(0) as u64
            } else {
                0
            }
        };
        let text = String::from_utf8_lossy(&read_from(fd, len.saturating_sub(8192))).into_owned();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(max_lines)..].join("\n")
    }

    pub(super) fn reset(&self) {
        if self.streamed {
            return;
        }
        for fd in [&self.stderr, &self.stdout].into_iter().flatten() {
            reset(fd);
        }
    }
}
