//! Runs an experiment's commands from a small helper process — the perflab binary
//! started again as a spawner — so that what the kernel reports about a run is the
//! command's own.
//!
//! Why a helper: Linux folds the peak RSS of the address space a process had *before*
//! `execve` into its `ru_maxrss`; after posix_spawn that address space is the spawner's
//! (after a fork, a copy of it). Spawned by perflab itself every command "used" at least
//! perflab's ~6 MiB. The helper drops its clean file-backed pages once started and
//! resets its own peak, so the floor is ~1 MiB, that of GNU time. It also moves into a
//! cgroup of its own when it can create one, so that cgroup's CPU pressure is the run's
//! process tree's (see `contention`).
//!
//! The helper runs the same spawn code as perflab would (posix_spawn, or the gated fork
//! while perflab attaches counters to the held child's pid) and times the same window;
//! messages travel over a SOCK_SEQPACKET socket, outside that window. A binary that
//! cannot serve as a helper (a program using the library, unit tests) runs commands
//! in-process: the same measurements, with its own footprint as the floor.

use crate::interrupt::{self, Interrupt};
use crate::spawn::contention::{self, CpuTimeSource, PressureGroup, TreeReading};
use crate::spawn::error::{LaunchError, NoCpuTime};
use crate::spawn::process::{self, Captures, Environment, Output, Prepared, SpawnError};
use perflab_model::Run;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Names the helper's end of the socket in its environment.
const FD_ENV: &str = "PERFLAB_SPAWNER_FD";
/// The descriptor number the helper finds its socket at.
const HELPER_FD: RawFd = 3;

/// Set by the perflab binary: it can serve as its own helper.
static BINARY_SERVES: AtomicBool = AtomicBool::new(false);

/// Called first thing by the perflab binary. When this process was started as a
/// helper, serve and return the exit code; otherwise remember that the binary can be
/// started as one.
pub fn serve_if_requested() -> Option<i32> {
    BINARY_SERVES.store(true, Ordering::SeqCst);
    let fd: RawFd = std::env::var(FD_ENV).ok()?.parse().ok()?;
    // Not passed on to the commands. Nothing else runs yet, so changing the
    // environment races with no one.
    std::env::remove_var(FD_ENV);
    // SAFETY: perflab handed us this descriptor when it started us; nothing else owns it.
    Some(serve(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// One command as the helper prepares it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CommandSetup {
    program: Vec<u8>,
    argv: Vec<String>,
    /// Where its stdout and stderr go.
    output: Output,
}

#[derive(Debug, Serialize, Deserialize)]
struct Setup {
    commands: Vec<CommandSetup>,
    /// The commands' stdin (`--input`), else /dev/null.
    input: Option<Vec<u8>>,
    timeout_s: Option<f64>,
    /// Leave what a run left behind in its process group (`--keep-children`).
    keep_children: bool,
}

#[derive(Debug, Serialize, Deserialize)]
enum Request {
    Run {
        command: usize,
        pad_bytes: Option<usize>,
        gated: bool,
    },
    /// Let the held child exec (its probes are attached).
    Release,
    /// Kill the held child: a probe could not be attached.
    Abort(String),
}

#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    Ready(Ready),
    SetupFailed(String),
    /// A gated run's child, held before exec.
    Held(libc::pid_t),
    Done(Run),
    Interrupted,
    ExecFailed(String),
    ProbeFailed(String),
}

/// What the helper reports once it is ready.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Ready {
    /// The helper's own peak RSS after shrinking: no run can report less.
    rss_floor_kib: Option<u64>,
    /// Where runs' run-queue wait comes from (for `Experiment.environment`).
    run_queue_source: String,
    /// The cgroup the helper lives in, which perflab removes once the helper has exited.
    cgroup: Option<PathBuf>,
    /// Each command's capture descriptors (stdout, stderr) in the helper, which perflab
    /// opens through /proc: output of any size is read in place, not sent as messages.
    captures: Vec<(Option<RawFd>, Option<RawFd>)>,
}

/// Starts the runs of one experiment's commands.
pub struct Spawner {
    inner: Inner,
}

enum Inner {
    Helper { socket: OwnedFd, pid: libc::pid_t, ready: Ready, captures: Vec<Captures> },
    InProcess { prepared: Vec<Prepared>, env: Environment, timeout: Option<Duration>, keep_children: bool },
}

impl Spawner {
    /// Prepare `commands` (program, argv and where the output goes, each) for repeated
    /// runs: in a helper when this binary can be one, else in this process.
    pub fn new(
        commands: &[(PathBuf, Vec<String>, Output)],
        input: Option<&Path>,
        timeout: Option<Duration>,
        keep_children: bool,
    ) -> Result<Spawner, LaunchError> {
        if !BINARY_SERVES.load(Ordering::SeqCst) {
            let prepared = commands
                .iter()
                .map(|(program, argv, output)| Prepared::with_input(program, argv, output, input))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Spawner {
                inner: Inner::InProcess { prepared, env: Environment::inherited(), timeout, keep_children },
            });
        }
        let setup = Setup {
            commands: commands
                .iter()
                .map(|(program, argv, output)| CommandSetup {
                    program: program.as_os_str().as_bytes().to_vec(),
                    argv: argv.clone(),
                    output: output.clone(),
                })
                .collect(),
            input: input.map(|p| p.as_os_str().as_bytes().to_vec()),
            timeout_s: timeout.map(|t| t.as_secs_f64()),
            keep_children,
        };
        let (socket, pid) = start_helper().map_err(LaunchError::Start)?;
        let mut spawner =
            Spawner { inner: Inner::Helper { socket, pid, ready: Ready::default(), captures: Vec::new() } };
        let Inner::Helper { socket, ready, captures, .. } = &mut spawner.inner else { unreachable!("just built") };
        send(socket.as_raw_fd(), &setup).map_err(LaunchError::Setup)?;
        match recv::<Reply>(socket.as_raw_fd()) {
            Ok(Some(Reply::Ready(r))) => *ready = r,
            Ok(Some(Reply::SetupFailed(why))) => return Err(LaunchError::HelperRefused(why)),
            other => return Err(LaunchError::NoReply(format!("{other:?}"))),
        }
        for (fds, (_, _, output)) in ready.captures.iter().zip(commands) {
            captures.push(Captures::open_in(pid, *fds, *output == Output::Capture).map_err(LaunchError::Captures)?);
        }
        interrupt::watcher().forward_to(pid);
        Ok(spawner)
    }

    /// Run `command` once with `pad_bytes` of environment padding. With `gate`, the
    /// child is held before exec while `gate(pid)` attaches probes to it.
    pub fn run(
        &mut self,
        command: usize,
        pad_bytes: Option<usize>,
        gate: Option<&mut dyn FnMut(libc::pid_t) -> anyhow::Result<()>>,
    ) -> Result<Run, SpawnError> {
        match &mut self.inner {
            Inner::InProcess { prepared, env, timeout, keep_children } => {
                env.pad(pad_bytes);
                measure(&prepared[command], env, *timeout, gate, interrupt::watcher(), None, !*keep_children)
            }
            Inner::Helper { socket, .. } => run_in_helper(socket.as_raw_fd(), command, pad_bytes, gate),
        }
    }

    fn captures(&self, command: usize) -> &Captures {
        match &self.inner {
            Inner::InProcess { prepared, .. } => prepared[command].captures(),
            Inner::Helper { captures, .. } => &captures[command],
        }
    }

    /// The last `lines` lines `command` wrote to stderr in its latest run.
    pub fn stderr_tail(&self, command: usize, lines: usize) -> String {
        self.captures(command).stderr_tail(lines)
    }

    /// The read ends of `command`'s stdout and stderr pipes (with [`Output::Capture`]),
    /// to be read while it runs (`executor::capture`).
    pub fn streams(&self, command: usize) -> io::Result<Option<(OwnedFd, OwnedFd)>> {
        self.captures(command).streams()
    }

    /// How runs are measured here, for `Experiment.environment`.
    pub fn facts(&self) -> BTreeMap<String, String> {
        let (floor, source) = match &self.inner {
            Inner::Helper { ready, .. } => (ready.rss_floor_kib, ready.run_queue_source.clone()),
            Inner::InProcess { .. } => (own_peak_rss_kib(), format!("{MAIN_THREAD} (runs in-process)")),
        };
        let mut facts = BTreeMap::from([("run_queue_wait".to_string(), source)]);
        if let Some(kib) = floor {
            facts.insert("max_rss_floor_kib".to_string(), kib.to_string());
        }
        facts
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        if let Inner::Helper { socket, pid, ready, .. } = &mut self.inner {
            interrupt::watcher().forward_to(0);
            // SAFETY: shutting down our end makes the helper read EOF and exit; then it
            // is reaped (it is our child).
            unsafe {
                libc::shutdown(socket.as_raw_fd(), libc::SHUT_RDWR);
                libc::waitpid(*pid, std::ptr::null_mut(), 0);
            }
            // The helper exits in its cgroup (see `serve`); reaped, it left it empty.
            if let Some(dir) = &ready.cgroup {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

const MAIN_THREAD: &str = "the main thread's /proc/PID/schedstat";

/// Start this binary as a helper, with its end of a socket pair at [`HELPER_FD`].
fn start_helper() -> io::Result<(OwnedFd, libc::pid_t)> {
    let (ours, theirs) = socket_pair()?;
    let theirs_raw = theirs.as_raw_fd();
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command.env(FD_ENV, HELPER_FD.to_string()).stdin(std::process::Stdio::null());
    // SAFETY: only dup2/fcntl, async-signal-safe, between fork and exec.
    unsafe {
        command.pre_exec(move || {
            // dup2 onto itself would keep close-on-exec set: clear it instead.
            let rc = if theirs_raw == HELPER_FD {
                libc::fcntl(HELPER_FD, libc::F_SETFD, 0)
            } else {
                libc::dup2(theirs_raw, HELPER_FD)
            };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn()?;
    drop(theirs);
    Ok((ours, child.id() as libc::pid_t))
}

fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// One message per packet; a peer that is gone is an error, not a signal.
fn send<T: Serialize>(fd: RawFd, message: &T) -> io::Result<()> {
    let bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
    loop {
        // SAFETY: sending from a live buffer of the given length.
        let rc = unsafe { libc::send(fd, bytes.as_ptr() as *const libc::c_void, bytes.len(), libc::MSG_NOSIGNAL) };
        if rc >= 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// The next message; `None` when the peer closed the socket.
fn recv<T: DeserializeOwned>(fd: RawFd) -> io::Result<Option<T>> {
    let size = retry_interrupted(|| {
        // SAFETY: with MSG_PEEK | MSG_TRUNC and no buffer, recv only reports the packet's size.
        unsafe { libc::recv(fd, std::ptr::null_mut(), 0, libc::MSG_PEEK | libc::MSG_TRUNC) }
    })?;
    let mut buffer = vec![0u8; size];
    // SAFETY: receiving into a buffer of exactly the packet's size.
    let got = retry_interrupted(|| unsafe { libc::recv(fd, buffer.as_mut_ptr() as *mut libc::c_void, size, 0) })?;
    if got == 0 {
        return Ok(None);
    }
    serde_json::from_slice(&buffer[..got]).map(Some).map_err(io::Error::other)
}

fn retry_interrupted(mut call: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let rc = call();
        if rc >= 0 {
            return Ok(rc as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// perflab's side of one run in the helper.
fn run_in_helper(
    fd: RawFd,
    command: usize,
    pad_bytes: Option<usize>,
    mut gate: Option<&mut dyn FnMut(libc::pid_t) -> anyhow::Result<()>>,
) -> Result<Run, SpawnError> {
    let lost = |err: io::Error| {
        if interrupt::watcher().requested() {
            SpawnError::Interrupted
        } else {
            SpawnError::Exec(format!("perflab's spawner process failed: {err}"))
        }
    };
    send(fd, &Request::Run { command, pad_bytes, gated: gate.is_some() }).map_err(lost)?;
    loop {
        let reply = recv::<Reply>(fd).map_err(lost)?;
        match reply {
            Some(Reply::Held(pid)) => {
                let attached = gate.as_mut().map_or(Ok(()), |gate| gate(pid));
                let answer = match &attached {
                    Ok(()) => Request::Release,
                    Err(err) => Request::Abort(format!("{err:#}")),
                };
                send(fd, &answer).map_err(lost)?;
            }
            Some(Reply::Done(run)) => return Ok(run),
            Some(Reply::Interrupted) => return Err(SpawnError::Interrupted),
            Some(Reply::ExecFailed(why)) => return Err(SpawnError::Exec(why)),
            Some(Reply::ProbeFailed(why)) => return Err(SpawnError::Probe(anyhow::anyhow!(why))),
            None => return Err(lost(io::Error::from(io::ErrorKind::UnexpectedEof))),
            Some(other) => return Err(lost(io::Error::other(format!("unexpected reply {other:?}")))),
        }
    }
}

/// Where runs' waits are read: the cgroup of the run's tree (when there is one) and the
/// machine's per-CPU busy time (to tell the tree's own waiting from a neighbour's).
struct Accounting<'a> {
    group: &'a PressureGroup,
    cpu_time: &'a Result<CpuTimeSource, NoCpuTime>,
}

/// A reading of the group and the machine before or after a run.
struct Snapshot {
    stalled: io::Result<Duration>,
    used: io::Result<Duration>,
    per_cpu: Result<Vec<Duration>, String>,
}

impl Accounting<'_> {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            stalled: self.group.stalled(),
            used: self.group.cpu_used(),
            per_cpu: match self.cpu_time {
                Ok(source) => source.read().map_err(|e| format!("reading {}: {e}", source.describe())),
                Err(why) => Err(why.to_string()),
            },
        }
    }

    /// What the tree did between `before` and now.
    fn reading(&self, before: Snapshot, outcome: &process::Finished) -> Option<TreeReading> {
        let after = self.snapshot();
        let stalled = after.stalled.ok()?.saturating_sub(before.stalled.ok()?);
        let others_on_its_cpus = (|| {
            if let Ok(source) = self.cpu_time {
                if let Some(why) = source.too_coarse_for(outcome.wall) {
                    return Err(why);
                }
            }
            let (before_cpus, after_cpus) = (before.per_cpu?, after.per_cpu?);
            let own = match (before.used, after.used) {
                (Ok(b), Ok(a)) => a.saturating_sub(b),
                _ => return Err("the cgroup's cpu.stat was not readable".to_string()),
            };
            let cpus = outcome.allowed_cpus.as_deref().ok_or("the command's CPU affinity was not readable")?;
            contention::others_on(cpus, &before_cpus, &after_cpus, own)
                // The snapshots bracket the timed window, so their busy time can include
                // neighbours' running just before and after it; within it, others can
                // have held these CPUs at most the wall time less the run's own share
                // (beside a burner per CPU a pinned ping-pong read 75 ms of "others" in a
                // 170 ms run that used 108 ms of CPU, uncontended_s below its CPU time).
                .map(|others| others.min(outcome.wall.saturating_sub(own / cpus.len() as u32)))
                .ok_or_else(|| "the per-CPU busy time does not cover the command's CPUs".to_string())
        })();
        Some(TreeReading { stalled, others_on_its_cpus })
    }
}

/// Run `prepared` once and measure it, with the run-queue wait of its main thread and,
/// when runs have a cgroup of their own, of the whole process tree and the part of it
/// neighbours caused.
fn measure(
    prepared: &Prepared,
    env: &Environment,
    timeout: Option<Duration>,
    gate: Option<&mut dyn FnMut(libc::pid_t) -> anyhow::Result<()>>,
    interrupt: &Interrupt,
    accounting: Option<&Accounting>,
    end_group: bool,
) -> Result<Run, SpawnError> {
    let before = accounting.map(Accounting::snapshot);
    let outcome = process::start(prepared, env, gate)?.ending_its_group(end_group).wait(timeout, interrupt)?;
    let mut run = outcome.run();
    let tree = accounting.zip(before).and_then(|(a, before)| a.reading(before, &outcome));
    contention::add_readings(&mut run, outcome.main_thread, outcome.harness_waited, tree.ok_or(NO_CGROUP));
    Ok(run)
}

const NO_CGROUP: &str = "runs have no cgroup of their own (that needs root or a delegated cgroup v2)";

/// The helper: prepare the commands, then run them on request until perflab hangs up.
fn serve(socket: OwnedFd) -> i32 {
    let fd = socket.as_raw_fd();
    // SAFETY: plain fcntl/prctl calls on our own descriptor and process.
    unsafe {
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        // If perflab dies, SIGTERM reaches our interrupt handler, which kills the command.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
    }
    let interrupt = interrupt::watcher();
    let Ok(Some(setup)) = recv::<Setup>(fd) else { return crate::exit::EXIT_USAGE };
    let prepared = setup
        .commands
        .iter()
        .map(|c| {
            let input = setup.input.as_deref().map(|p| Path::new(OsStr::from_bytes(p)));
            Prepared::with_input(Path::new(OsStr::from_bytes(&c.program)), &c.argv, &c.output, input)
        })
        .collect::<Result<Vec<_>, _>>();
    let prepared = match prepared {
        Ok(p) => p,
        Err(why) => {
            let _ = send(fd, &Reply::SetupFailed(why.to_string()));
            return crate::exit::EXIT_USAGE;
        }
    };
    let mut env = Environment::inherited();
    let timeout = setup.timeout_s.map(Duration::from_secs_f64);
    let group = PressureGroup::join();
    let cpu_time = CpuTimeSource::detect();
    let run_queue_source = match (&group, &cpu_time) {
        (Ok(g), Ok(source)) => format!(
            "{MAIN_THREAD}; for runs with other threads or processes, {}/cpu.pressure, the neighbours' part bounded by the CPU time others got on the run's CPUs ({})",
            g.dir().display(),
            source.describe()
        ),
        (Ok(g), Err(why)) => format!(
            "{MAIN_THREAD}; for runs with other threads or processes, {}/cpu.pressure, without the neighbours' part ({why})",
            g.dir().display()
        ),
        (Err(why), _) => format!("{MAIN_THREAD} (runs with other threads or processes have none: {why})"),
    };
    let ready = Ready {
        rss_floor_kib: fork_floor_kib(),
        run_queue_source,
        cgroup: group.as_ref().ok().map(|g| g.dir().to_path_buf()),
        captures: prepared.iter().map(|p| p.captures().raw_fds()).collect(),
    };
    if send(fd, &Reply::Ready(ready)).is_err() {
        return 0;
    }
    while let Ok(Some(request)) = recv::<Request>(fd) {
        let reply = match request {
            Request::Run { command, pad_bytes, gated } if command < prepared.len() => {
                env.pad(pad_bytes);
                // Every run is a fork of this small process held before exec, never a
                // vfork: a vfork child would share (and fold into its peak RSS) every page
                // of perflab's code this process ever touched. Probes attach meanwhile.
                let mut hold = |pid: libc::pid_t| -> anyhow::Result<()> {
                    if !gated {
                        return Ok(());
                    }
                    send(fd, &Reply::Held(pid))?;
                    match recv::<Request>(fd)? {
                        Some(Request::Release) => Ok(()),
                        Some(Request::Abort(why)) => Err(anyhow::anyhow!(why)),
                        other => Err(anyhow::anyhow!("perflab sent {other:?} instead of releasing the command")),
                    }
                };
                let accounting = group.as_ref().ok().map(|group| Accounting { group, cpu_time: &cpu_time });
                match measure(
                    &prepared[command],
                    &env,
                    timeout,
                    Some(&mut hold),
                    interrupt,
                    accounting.as_ref(),
                    !setup.keep_children,
                ) {
                    Ok(run) => Reply::Done(run),
                    Err(SpawnError::Interrupted) => Reply::Interrupted,
                    Err(SpawnError::Exec(why)) => Reply::ExecFailed(why),
                    Err(SpawnError::Probe(err)) => Reply::ProbeFailed(format!("{err:#}")),
                }
            }
            other => Reply::ExecFailed(format!("perflab's spawner process got a request it cannot serve: {other:?}")),
        };
        if send(fd, &reply).is_err() {
            break;
        }
    }
    // The group is left as it is: perflab removes it once it has reaped this process
    // (`Spawner`'s drop), when it is empty. Moving back out first took ~11 ms of every
    // experiment here (a migration waits for an RCU grace period), paid per pair by
    // `compare --layouts auto`.
    drop(group);
    0
}

/// The peak RSS every run starts from: that of a fork of this process which exits at
/// once (a run's child is such a fork until it execs).
fn fork_floor_kib() -> Option<u64> {
    // SAFETY: the child only calls _exit; the parent reaps it.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(0);
        }
        let mut usage: libc::rusage = std::mem::zeroed();
        let mut status = 0;
        (pid > 0 && libc::wait4(pid, &mut status, 0, &mut usage) == pid).then(|| usage.ru_maxrss.max(0) as u64)
    }
}

/// This process's peak RSS (VmHWM) in KiB.
fn own_peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()
}
