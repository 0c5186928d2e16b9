//! Running one command once and measuring it: wall time by CLOCK_MONOTONIC around
//! spawn → `wait4`, and the `rusage` of that very child (not RUSAGE_CHILDREN).
//!
//! Written on libc directly because no crate offers what a harness needs at once:
//! posix_spawn (vfork-speed) with a process group, signal defaults and fd actions;
//! a *gated* fork/exec that holds the child until probes are attached to its pid;
//! `wait4` rusage; and a wait that sleeps in the kernel while a command runs yet reacts
//! at once to an interrupt (whose handler kills the child's group) or a timeout (a
//! pidfd polled with a deadline, opened only then: it costs ~4 µs per run).

pub use super::captures::Captures;
use super::captures::{memfd, pipe, DrainedPipe, PIPE_SIZE};
use super::environment::null_terminated;
pub use super::environment::Environment;
use crate::interrupt::Interrupt;
use crate::spawn::contention::{self, Schedstat};
pub use crate::spawn::error::PrepareError;
use perflab_model::{ExitInfo, Run};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;
use std::time::{Duration, Instant};

/// Where a command's stdout and stderr go.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Output {
    /// stdout to /dev/null, stderr captured (its tail explains a failure).
    Discard,
    /// Both into pipes, read and parsed as they arrive (metrics the command prints; see
    /// `executor::capture`).
    Capture,
    /// Both to perflab's own (`--show-output`).
    Inherit,
    /// stdout to perflab's stderr, stderr inherited: perflab's stdout carries a report.
    StdoutToStderr,
    /// stdout into a pipe read and thrown away as it comes (hyperfine's `--output=pipe`:
    /// programs that notice /dev/null and skip their writing do write), stderr captured.
    Pipe,
    /// stdout appended to this file, created or truncated when the experiment starts
    /// (every run's output, in order), stderr captured.
    File(std::path::PathBuf),
}

/// Signals whose disposition the child must get back to default: Rust ignores SIGPIPE,
/// and our handlers for INT/TERM must not leak into the benchmarked program.
const RESET_SIGNALS: [libc::c_int; 7] =
    [libc::SIGPIPE, libc::SIGINT, libc::SIGTERM, libc::SIGQUIT, libc::SIGHUP, libc::SIGCHLD, libc::SIGXFSZ];

/// A program and its arguments, with everything posix_spawn needs built once, so a run
/// does no work beyond the spawn itself: a no-op command's measured time stays within
/// a few per cent of a bare `posix_spawn` + `wait4` (`scripts/eval-accuracy --overhead-only`).
pub struct Prepared {
    path: CString,
    /// Owns the strings `argv_pointers` points into.
    _argv: Vec<CString>,
    argv_pointers: Vec<*mut libc::c_char>,
    /// What the child's stdout and stderr are captured into.
    captures: Captures,
    /// The child's stdin: /dev/null, or the `--input` file (rewound before every run).
    /// Opened once here so the child only dup2()s it: no path lookup between fork and exec.
    stdin: OwnedFd,
    /// /dev/null, kept open for a discarded stdout.
    _devnull: OwnedFd,
    /// The pipe (`Output::Pipe`) or file (`Output::File`) stdout goes to, kept open.
    _sink: Option<Sink>,
    /// What goes to the child's descriptors 0, 1 and 2.
    redirect: Redirect,
    /// What posix_spawn does to the child: `redirect`, a process group, signal defaults.
    fast: SpawnAttributes,
}

/// Where stdout goes besides /dev/null, a capture or perflab's own.
enum Sink {
    Pipe(DrainedPipe),
    File(OwnedFd),
}

impl Sink {
    fn fd(&self) -> RawFd {
        match self {
            Sink::Pipe(pipe) => pipe.write.as_raw_fd(),
            Sink::File(file) => file.as_raw_fd(),
        }
    }
}

/// The descriptors dup2()ed onto the child's stdin, stdout and stderr (`None`: inherited).
#[derive(Debug, Clone, Copy)]
struct Redirect {
    stdin: RawFd,
    stdout: Option<RawFd>,
    stderr: Option<RawFd>,
}

/// posix_spawn's file actions and attributes for one [`Prepared`] command.
struct SpawnAttributes {
    actions: libc::posix_spawn_file_actions_t,
    attr: libc::posix_spawnattr_t,
}

impl SpawnAttributes {
    /// stdin (and stdout, stderr when hidden) redirected, a new process group, and the
    /// signal dispositions and mask of a freshly started program.
    fn new(redirect: Redirect) -> SpawnAttributes {
        // SAFETY: both structures are initialised by their init calls before any use and
        // destroyed exactly once, in Drop.
        unsafe {
            let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
            let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
            libc::posix_spawn_file_actions_init(&mut actions);
            libc::posix_spawnattr_init(&mut attr);
            libc::posix_spawn_file_actions_adddup2(&mut actions, redirect.stdin, 0);
            if let Some(fd) = redirect.stdout {
                libc::posix_spawn_file_actions_adddup2(&mut actions, fd, 1);
            }
            if let Some(fd) = redirect.stderr {
                libc::posix_spawn_file_actions_adddup2(&mut actions, fd, 2);
            }
            let mut defaults: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut defaults);
            for sig in RESET_SIGNALS {
                libc::sigaddset(&mut defaults, sig);
            }
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::posix_spawnattr_setsigdefault(&mut attr, &defaults);
            libc::posix_spawnattr_setsigmask(&mut attr, &empty);
            libc::posix_spawnattr_setpgroup(&mut attr, 0);
            libc::posix_spawnattr_setflags(
                &mut attr,
                (libc::POSIX_SPAWN_SETPGROUP | libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK)
                    as libc::c_short,
            );
            SpawnAttributes { actions, attr }
        }
    }
}

impl Drop for SpawnAttributes {
    fn drop(&mut self) {
        // SAFETY: initialised in new(), destroyed only here.
        unsafe {
            libc::posix_spawn_file_actions_destroy(&mut self.actions);
            libc::posix_spawnattr_destroy(&mut self.attr);
        }
    }
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// The resource usage wait4 returned for the child (and its waited-for descendants).
    pub rusage: libc::rusage,
    /// How it ended.
    pub exit: ExitInfo,
    /// The main thread's scheduler statistics, read after it exited and before it was
    /// reaped (None when the kernel does not provide them).
    pub(crate) main_thread: Option<Schedstat>,
    /// How long the harness itself waited for a CPU to wake up when the command ended:
    /// wall time the command's own figures miss.
    pub(crate) harness_waited: Option<Duration>,
    /// The CPUs the command's main process was allowed to run on when it exited (its
    /// affinity, as `taskset` or a cpuset left it).
    pub allowed_cpus: Option<Vec<usize>>,
}

/// Why a run did not produce an [`Finished`].
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The user pressed Ctrl-C (or sent SIGTERM); the child's group was killed.
    #[error("interrupted")]
    Interrupted,
    /// The program could not be started at all (the reason may have crossed from the
    /// spawner process as text).
    #[error("{0}")]
    Exec(String),
    /// A probe failed to attach to the held child.
    #[error("attaching a probe failed: {0:#}")]
    Probe(anyhow::Error),
}

fn cstring(bytes: &[u8], what: &'static str) -> Result<CString, PrepareError> {
    CString::new(bytes).map_err(|_| PrepareError::NulByte { what })
}

impl Prepared {
    /// Prepare `argv` (`argv[0]` is resolved to `program`) for repeated runs.
    pub fn new(program: &Path, argv: &[String], output: Output) -> Result<Prepared, PrepareError> {
        Prepared::with_input(program, argv, &output, None)
    }

    /// Like [`Prepared::new`], with stdin read from `input` (a regular file, read from
    /// its start in every run) instead of /dev/null.
    pub fn with_input(
        program: &Path,
        argv: &[String],
        output: &Output,
        input: Option<&Path>,
    ) -> Result<Prepared, PrepareError> {
        let path = cstring(program.as_os_str().as_bytes(), "program path")?;
        let argv = argv.iter().map(|a| cstring(a.as_bytes(), "an argument")).collect::<Result<Vec<_>, _>>()?;
        let captures = match output {
            Output::Capture => {
                let ((out_read, out_write), (err_read, err_write)) = (pipe(PIPE_SIZE)?, pipe(PIPE_SIZE)?);
                Captures {
                    stdout: Some(out_read),
                    stderr: Some(err_read),
                    write_ends: Some((out_write, err_write)),
                    streamed: true,
                }
            }
            Output::Discard | Output::Pipe | Output::File(_) => {
                Captures { stdout: None, stderr: Some(memfd(c"perflab-stderr")?), write_ends: None, streamed: false }
            }
            Output::Inherit | Output::StdoutToStderr => {
                Captures { stdout: None, stderr: None, write_ends: None, streamed: false }
            }
        };
        let sink = match output {
            Output::Pipe => Some(Sink::Pipe(DrainedPipe::new()?)),
            Output::File(file) => {
                // Emptied once, then appended to: commands sharing the file interleave
                // their runs instead of overwriting each other.
                let cannot = |source: io::Error| PrepareError::OutputFile { path: file.clone(), source };
                std::fs::File::create(file).map_err(cannot)?;
                let appending = std::fs::OpenOptions::new().append(true).open(file).map_err(cannot)?;
                Some(Sink::File(OwnedFd::from(appending)))
            }
            _ => None,
        };
        let devnull =
            std::fs::OpenOptions::new().read(true).write(true).open("/dev/null").map_err(PrepareError::DevNull)?;
        let devnull = OwnedFd::from(devnull);
        let stdin = match input {
            Some(file) => {
                // Every run reads it from the start: it must be a regular file (opening a
                // FIFO to find out would block).
                let opened = crate::files::open_regular(file).map_err(|source| match source.kind() {
                    std::io::ErrorKind::InvalidInput => PrepareError::InputNotAFile(file.to_path_buf()),
                    _ => PrepareError::Input { path: file.to_path_buf(), source },
                })?;
                OwnedFd::from(opened)
            }
            None => devnull.try_clone().map_err(|source| PrepareError::System { call: "dup /dev/null", source })?,
        };
        let written = captures.write_ends.as_ref().map(|(out, err)| (out.as_raw_fd(), err.as_raw_fd()));
        let redirect = Redirect {
            stdin: stdin.as_raw_fd(),
            stdout: match output {
                Output::Discard => Some(devnull.as_raw_fd()),
                Output::Capture => written.map(|(out, _)| out),
                Output::StdoutToStderr => Some(2),
                Output::Inherit => None,
                Output::Pipe | Output::File(_) => sink.as_ref().map(Sink::fd),
            },
            stderr: match written {
                Some((_, err)) => Some(err),
                None => captures.stderr.as_ref().map(|fd| fd.as_raw_fd()),
            },
        };
        let fast = SpawnAttributes::new(redirect);
        let argv_pointers = null_terminated(&argv);
        Ok(Prepared {
            path,
            _argv: argv,
            argv_pointers,
            captures,
            stdin,
            _devnull: devnull,
            _sink: sink,
            redirect,
            fast,
        })
    }

    /// The last `max_lines` lines the last run wrote to stderr (empty with --show-output).
    pub fn stderr_tail(&self, max_lines: usize) -> String {
        self.captures.stderr_tail(max_lines)
    }

    /// What the last run's output was captured into.
    pub fn captures(&self) -> &Captures {
        &self.captures
    }

    /// Empty the captures and rewind the input before a run.
    fn reset_for_run(&self) {
        self.captures.reset();
        // SAFETY: rewinding our own descriptor (/dev/null ignores it).
        unsafe { libc::lseek(self.stdin.as_raw_fd(), 0, libc::SEEK_SET) };
    }
}

/// A started child that has not been reaped yet.
pub struct Child {
    /// Its process id.
    pub pid: libc::pid_t,
    /// Opened only for waits that must wake on something else too (a timeout, the
    /// profiler's ring buffers): it costs ~4 µs per run.
    pidfd: Option<OwnedFd>,
    started: Instant,
    /// End the child's whole process group when it exits (see [`Child::ending_its_group`]).
    end_group: bool,
}

/// Start `prepared` with `env`. When `gate` is given the child is held between fork
/// and exec while `gate(pid)` runs (to attach counters), otherwise posix_spawn is used.
pub fn start(
    prepared: &Prepared,
    env: &Environment,
    gate: Option<&mut dyn FnMut(libc::pid_t) -> anyhow::Result<()>>,
) -> Result<Child, SpawnError> {
    prepared.reset_for_run();
    let (argv, envp) = (&prepared.argv_pointers, &env.pointers);
    let (pid, started) = match gate {
        None => spawn_fast(prepared, argv, envp)?,
        Some(gate) => spawn_gated(prepared, argv, envp, gate)?,
    };
    Ok(Child { pid, pidfd: None, started, end_group: false })
}

fn spawn_fast(
    prepared: &Prepared,
    argv: &[*mut libc::c_char],
    envp: &[*mut libc::c_char],
) -> Result<(libc::pid_t, Instant), SpawnError> {
    let mut pid: libc::pid_t = 0;
    let started = Instant::now();
    // SAFETY: the attributes were initialised in Prepared::new; every pointer passed
    // (path, argv, envp) outlives the call.
    let rc = unsafe {
        libc::posix_spawn(
            &mut pid,
            prepared.path.as_ptr(),
            &prepared.fast.actions,
            &prepared.fast.attr,
            argv.as_ptr(),
            envp.as_ptr(),
        )
    };
    if rc != 0 {
        return Err(SpawnError::Exec(format!(
            "cannot execute {}: {}",
            prepared.path.to_string_lossy(),
            io::Error::from_raw_os_error(rc)
        )));
    }
    Ok((pid, started))
}

fn pipe_cloexec() -> Result<(OwnedFd, OwnedFd), SpawnError> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SpawnError::Exec(format!("pipe2: {}", io::Error::last_os_error())));
    }
    // SAFETY: fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn spawn_gated(
    prepared: &Prepared,
    argv: &[*mut libc::c_char],
    envp: &[*mut libc::c_char],
    gate: &mut dyn FnMut(libc::pid_t) -> anyhow::Result<()>,
) -> Result<(libc::pid_t, Instant), SpawnError> {
    let (release_read, release_write) = pipe_cloexec()?;
    let (error_read, error_write) = pipe_cloexec()?;
    let redirect = prepared.redirect;
    let (parent_release, parent_error) = (release_write.as_raw_fd(), error_read.as_raw_fd());
    // SAFETY: after fork the child only calls async-signal-safe functions (close, setpgid,
    // dup2, sigaction, sigprocmask, read, execve, write, _exit) on data prepared before.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(SpawnError::Exec(format!("fork: {}", io::Error::last_os_error())));
    }
    if pid == 0 {
        unsafe {
            // The child's copies of the parent's ends would keep EOF from ever arriving.
            libc::close(parent_release);
            libc::close(parent_error);
            libc::setpgid(0, 0);
            libc::dup2(redirect.stdin, 0);
            if let Some(fd) = redirect.stdout {
                libc::dup2(fd, 1);
            }
            if let Some(fd) = redirect.stderr {
                libc::dup2(fd, 2);
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = libc::SIG_DFL;
            for sig in RESET_SIGNALS {
                libc::sigaction(sig, &action, ptr::null_mut());
            }
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, ptr::null_mut());
            let mut byte = 0u8;
            // Wait for the parent to attach probes; EOF (parent gone) means abort.
            if libc::read(release_read.as_raw_fd(), &mut byte as *mut u8 as *mut libc::c_void, 1) != 1 {
                libc::_exit(127);
            }
            libc::execve(
                prepared.path.as_ptr(),
                argv.as_ptr() as *const *const libc::c_char,
                envp.as_ptr() as *const *const libc::c_char,
            );
            let errno = *libc::__errno_location();
            libc::write(error_write.as_raw_fd(), &errno as *const i32 as *const libc::c_void, 4);
            libc::_exit(127);
        }
    }
    drop(release_read);
    drop(error_write);
    // Both sides set the group so it exists before anyone signals it.
    // SAFETY: pid is our child.
    unsafe { libc::setpgid(pid, pid) };
    if let Err(err) = gate(pid) {
        drop(release_write); // child reads EOF and exits
                             // SAFETY: reap our own child.
        unsafe { libc::waitpid(pid, ptr::null_mut(), 0) };
        return Err(SpawnError::Probe(err));
    }
    let started = Instant::now();
    // SAFETY: writing one byte to our pipe.
    unsafe { libc::write(release_write.as_raw_fd(), [1u8].as_ptr() as *const libc::c_void, 1) };
    drop(release_write);
    let mut errno = [0u8; 4];
    // Blocks until exec succeeds (CLOEXEC closes the pipe) or the child reports failure.
    // SAFETY: reading into a 4-byte buffer.
    let n = unsafe { libc::read(error_read.as_raw_fd(), errno.as_mut_ptr() as *mut libc::c_void, 4) };
    if n == 4 {
        // SAFETY: reap our own child.
        unsafe { libc::waitpid(pid, ptr::null_mut(), 0) };
        return Err(SpawnError::Exec(format!(
            "cannot execute {}: {}",
            prepared.path.to_string_lossy(),
            io::Error::from_raw_os_error(i32::from_ne_bytes(errno))
        )));
    }
    Ok((pid, started))
}

impl Child {
    /// A descriptor that becomes readable when the child exits.
    pub fn pidfd(&mut self) -> Result<RawFd, SpawnError> {
        if let Some(fd) = &self.pidfd {
            return Ok(fd.as_raw_fd());
        }
        // SAFETY: plain syscall; the child is not reaped yet, so its pid is still ours.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid, 0) } as RawFd;
        if raw < 0 {
            let err = io::Error::last_os_error();
            self.kill_group_and_reap();
            return Err(SpawnError::Exec(format!("pidfd_open failed ({err}); perflab needs Linux 5.3 or later")));
        }
        // SAFETY: a fresh descriptor we own.
        self.pidfd = Some(unsafe { OwnedFd::from_raw_fd(raw) });
        Ok(raw)
    }

    /// When the child exits, kill what is left of its process group (background
    /// children, a forgotten server): they would run beside, and write into, the next
    /// run. Measured commands do this unless `--keep-children`; hooks never (a
    /// `--prepare` may start a server on purpose).
    pub(crate) fn ending_its_group(mut self, end_group: bool) -> Child {
        self.end_group = end_group;
        self
    }

    /// Sleep until the child exits, the timeout passes, or an interrupt arrives; then
    /// read its main thread's scheduler statistics, reap it with `wait4` and return its
    /// measurements. Without a timeout the harness just blocks in `waitid` (an interrupt
    /// kills the child's group, which ends it).
    pub fn wait(mut self, timeout: Option<Duration>, interrupt: &Interrupt) -> Result<Finished, SpawnError> {
        // The harness sleeps from here until the command ends, so what it waits for a CPU
        // from now on is the wake-up after the exit: wall time the command's own
        // statistics miss, and never overlapping with its own wait.
        let harness_waited_before = contention::own_thread_waited();
        let timed_out = match timeout {
            Some(timeout) => self.sleep_until_exit(self.started + timeout, interrupt)?,
            None => false,
        };
        let guard = interrupt.kill_on_interrupt(self.pid);
        // Wait for the exit but leave the child a zombie: its /proc entry still holds the
        // main thread's run-queue wait, which reaping discards.
        let exited = loop {
            // SAFETY: siginfo is plain data; waitid only observes our own child.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let rc =
                unsafe { libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
            if rc >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break rc;
            }
        };
        let wall = self.started.elapsed();
        drop(guard);
        let harness_waited = harness_waited_before
            .zip(contention::own_thread_waited())
            .map(|(before, after)| after.saturating_sub(before));
        let main_thread = if exited == 0 { contention::schedstat(self.pid).ok() } else { None };
        let allowed_cpus = if exited == 0 { contention::allowed_cpus(self.pid) } else { None };
        if self.end_group && exited == 0 {
            // SAFETY: signalling our child's process group; the leader is a zombie until
            // reaped below, so the group id cannot have been reused.
            unsafe { libc::kill(-self.pid, libc::SIGKILL) };
        }
        let mut status = 0;
        // SAFETY: rusage is plain data; wait4 fills it for this child only.
        let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = loop {
            // SAFETY: reaping our own child, which has exited.
            let rc = unsafe { libc::wait4(self.pid, &mut status, 0, &mut rusage) };
            if rc >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break rc;
            }
        };
        if rc < 0 {
            return Err(SpawnError::Exec(format!("wait4: {}", io::Error::last_os_error())));
        }
        if interrupt.requested() {
            return Err(SpawnError::Interrupted);
        }
        let exit = if libc::WIFSIGNALED(status) && !timed_out {
            ExitInfo { exit_code: None, signal: Some(libc::WTERMSIG(status)), timed_out }
        } else if libc::WIFEXITED(status) {
            ExitInfo { exit_code: Some(libc::WEXITSTATUS(status)), signal: None, timed_out }
        } else {
            ExitInfo { exit_code: None, signal: None, timed_out }
        };
        Ok(Finished { wall, rusage, exit, main_thread, harness_waited, allowed_cpus })
    }

    /// Poll the pidfd until the child exits (false) or `deadline` passes, when the
    /// group is killed (true). An interrupt is left to the blocking wait that follows.
    fn sleep_until_exit(&mut self, deadline: Instant, interrupt: &Interrupt) -> Result<bool, SpawnError> {
        let pidfd = self.pidfd()?;
        loop {
            let mut fds = [
                libc::pollfd { fd: pidfd, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: interrupt.fd(), events: libc::POLLIN, revents: 0 },
            ];
            let wait_ms = deadline.saturating_duration_since(Instant::now()).as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: fds is a valid array of two pollfds.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, wait_ms) };
            if fds[0].revents != 0 || fds[1].revents != 0 || interrupt.requested() {
                return Ok(false);
            }
            if rc == 0 && Instant::now() >= deadline {
                // SAFETY: signalling our child's process group.
                unsafe { libc::kill(-self.pid, libc::SIGKILL) };
                return Ok(true);
            }
        }
    }

    /// Kill the whole process group and reap the leader.
    fn kill_group_and_reap(&self) {
        // SAFETY: signalling our child's process group and reaping our child.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, ptr::null_mut(), 0);
        }
    }
}

impl Finished {
    /// The run this outcome measured: wall time, and the rusage of that very child.
    pub fn run(&self) -> Run {
        let ru = &self.rusage;
        Run {
            wall_s: self.wall.as_secs_f64(),
            user_s: seconds(ru.ru_utime),
            sys_s: seconds(ru.ru_stime),
            // Linux reports ru_maxrss in KiB.
            max_rss_kib: ru.ru_maxrss.max(0) as u64,
            minor_faults: ru.ru_minflt.max(0) as u64,
            major_faults: ru.ru_majflt.max(0) as u64,
            voluntary_cs: ru.ru_nvcsw.max(0) as u64,
            involuntary_cs: ru.ru_nivcsw.max(0) as u64,
            exit: self.exit,
            ..Default::default()
        }
    }
}

/// Seconds from a `timeval`.
pub fn seconds(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        Environment::inherited()
    }

    fn prepared(args: &[&str], show: bool) -> Prepared {
        let program = crate::command::resolve_program(args[0]).unwrap();
        let output = if show { Output::Inherit } else { Output::Discard };
        Prepared::new(&program, &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(), output).unwrap()
    }

    #[test]
    fn reports_exit_codes_and_signals() {
        let w = crate::interrupt::watcher();
        let env = env();
        let ok = start(&prepared(&["true"], false), &env, None).unwrap().wait(None, w).unwrap();
        assert_eq!(ok.exit, ExitInfo { exit_code: Some(0), signal: None, timed_out: false });
        let fail = start(&prepared(&["sh", "-c", "exit 7"], false), &env, None).unwrap().wait(None, w).unwrap();
        assert_eq!(fail.exit.exit_code, Some(7));
        let killed =
            start(&prepared(&["sh", "-c", "kill -SEGV $$"], false), &env, None).unwrap().wait(None, w).unwrap();
        assert_eq!(killed.exit.signal, Some(libc::SIGSEGV));
    }

    #[test]
    fn timeout_kills_the_process_group() {
        let w = crate::interrupt::watcher();
        // The grandchild `sleep` shares the group and must die with it.
        let p = prepared(&["sh", "-c", "sleep 30 & sleep 30"], false);
        let out = start(&p, &env(), None).unwrap().wait(Some(Duration::from_millis(100)), w).unwrap();
        assert!(out.exit.timed_out);
        assert!(!out.exit.success());
    }

    #[test]
    fn captures_the_tail_of_stderr_per_run() {
        let w = crate::interrupt::watcher();
        let p = prepared(&["sh", "-c", "echo one >&2; echo two >&2; echo three >&2; exit 1"], false);
        start(&p, &env(), None).unwrap().wait(None, w).unwrap();
        assert_eq!(p.stderr_tail(2), "two\nthree");
        start(&p, &env(), None).unwrap().wait(None, w).unwrap();
        assert_eq!(p.stderr_tail(10), "one\ntwo\nthree", "capture is reset between runs");
    }

    /// What a pipe holds now.
    fn pending(fd: &OwnedFd) -> Vec<u8> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        // SAFETY: fcntl and read on a descriptor we own, into a live buffer.
        unsafe {
            let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
            loop {
                let n = libc::read(fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len());
                if n <= 0 {
                    return out;
                }
                out.extend_from_slice(&chunk[..n as usize]);
            }
        }
    }

    #[test]
    fn capture_streams_stdout_and_stderr_through_pipes_and_input_is_read_from_its_start() {
        let w = crate::interrupt::watcher();
        let input = std::env::temp_dir().join(format!("perflab-input-{}", std::process::id()));
        std::fs::write(&input, "line one\nline two\n").unwrap();
        let program = crate::command::resolve_program("sh").unwrap();
        let argv = ["sh", "-c", "cat; echo err >&2"].map(String::from);
        for gated in [false, true] {
            let p = Prepared::with_input(&program, &argv, &Output::Capture, Some(&input)).unwrap();
            for _ in 0..2 {
                let mut gate = |_pid: libc::pid_t| Ok(());
                let gate: Option<&mut dyn FnMut(libc::pid_t) -> anyhow::Result<()>> =
                    if gated { Some(&mut gate) } else { None };
                start(&p, &env(), gate).unwrap().wait(None, w).unwrap();
                let (stdout, stderr) = p.captures().streams().unwrap().expect("pipes");
                assert_eq!((pending(&stdout), pending(&stderr)), (b"line one\nline two\n".to_vec(), b"err\n".to_vec()));
            }
        }
        std::fs::remove_file(&input).ok();
        let err = Prepared::with_input(&program, &argv, &Output::Capture, Some(Path::new("/dev/stdin"))).err();
        assert!(err
            .map(|e| e.to_string())
            .is_some_and(|e| e.contains("not a regular file") || e.contains("cannot read")));
    }

    #[test]
    fn output_goes_to_a_drained_pipe_or_is_appended_to_a_file() {
        let w = crate::interrupt::watcher();
        let program = crate::command::resolve_program("sh").unwrap();
        // More than a pipe buffer holds: the run would block without a reader.
        let argv = ["sh", "-c", "head -c 1000000 /dev/zero; test -p /dev/stdout"].map(String::from);
        let piped = Prepared::with_input(&program, &argv, &Output::Pipe, None).unwrap();
        let run = start(&piped, &env(), None).unwrap().wait(Some(Duration::from_secs(20)), w).unwrap();
        assert!(run.exit.success() && !run.exit.timed_out, "{run:?}");
        let file = std::env::temp_dir().join(format!("perflab-output-{}", std::process::id()));
        std::fs::write(&file, "older\n").unwrap();
        let argv = ["sh", "-c", "echo run; echo err >&2"].map(String::from);
        let to_file = Prepared::with_input(&program, &argv, &Output::File(file.clone()), None).unwrap();
        for _ in 0..2 {
            start(&to_file, &env(), None).unwrap().wait(None, w).unwrap();
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "run\nrun\n", "emptied once, then appended");
        assert_eq!(to_file.stderr_tail(5), "err", "stderr is still kept to explain a failure");
        std::fs::remove_file(&file).ok();
    }

    #[test]
    fn passes_the_environment_padding_and_takes_it_away() {
        let w = crate::interrupt::watcher();
        // $0 carries perflab's own HOME, which the child must have inherited.
        let home = std::env::var("HOME").unwrap_or_default();
        let script = "test \"$PERFLAB_PAD\" = xxx && test \"$HOME\" = \"$0\"";
        let p = prepared(&["sh", "-c", script, &home], false);
        let mut env = env();
        env.pad(Some(3));
        assert_eq!(
            start(&p, &env, None).unwrap().wait(None, w).unwrap().exit.exit_code,
            Some(0),
            "padding and inherited variables"
        );
        env.pad(None);
        let unpadded = prepared(&["sh", "-c", "test -z \"${PERFLAB_PAD+set}\""], false);
        assert_eq!(
            start(&unpadded, &env, None).unwrap().wait(None, w).unwrap().exit.exit_code,
            Some(0),
            "no padding variable"
        );
    }

    #[test]
    fn gated_spawn_runs_the_gate_before_exec_and_reports_exec_failure() {
        let w = crate::interrupt::watcher();
        let p = prepared(&["sh", "-c", "exit 3"], false);
        let mut seen = 0;
        let mut gate = |pid: libc::pid_t| {
            seen = pid;
            Ok(())
        };
        let child = start(&p, &env(), Some(&mut gate)).unwrap();
        let pid = child.pid;
        assert_eq!(child.wait(None, w).unwrap().exit.exit_code, Some(3));
        assert_eq!(seen, pid);

        let dir = std::env::temp_dir().join(format!("perflab-noexec-{}", std::process::id()));
        std::fs::write(&dir, "#!/nonexistent/interpreter\n").unwrap();
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let bad = Prepared::new(&dir, &["x".into()], Output::Discard).unwrap();
        let mut gate = |_pid: libc::pid_t| Ok(());
        let err = start(&bad, &env(), Some(&mut gate)).err().expect("exec must fail");
        assert!(err.to_string().contains("cannot execute"), "{err}");
        let err = start(&bad, &env(), None).err().expect("exec must fail");
        assert!(err.to_string().contains("cannot execute"), "{err}");
        std::fs::remove_file(&dir).ok();
    }

    #[test]
    fn gate_failure_aborts_the_child() {
        let p = prepared(&["true"], false);
        let mut gate = |_pid: libc::pid_t| Err(anyhow::anyhow!("no counters"));
        let err = start(&p, &env(), Some(&mut gate)).err().unwrap();
        assert!(matches!(err, SpawnError::Probe(_)));
    }
}
