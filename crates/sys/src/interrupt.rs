//! Ctrl-C and SIGTERM handling. Two ways to wake a harness that waits for a child:
//! a self-pipe it can poll next to other descriptors (the profiler, runs with a
//! timeout), and, for the common blocking `wait4`, a handler that kills the process
//! group of the child being waited for, so `wait4` returns at once.
//!
//! The second exists for speed: opening a pidfd per run costs ~4 µs here, 3–4 % of a
//! no-op command's whole spawn-to-reap time.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;

/// The process's Ctrl-C/SIGTERM watcher (one, from [`watcher`]): whether an interrupt
/// arrived, and the read end of the self-pipe to poll for one.
pub struct Interrupt {
    read_end: UnixStream,
}

static INSTANCE: OnceLock<Interrupt> = OnceLock::new();
static REQUESTED: AtomicBool = AtomicBool::new(false);
/// How many SIGINT/SIGTERM arrived: long work after a first Ctrl-C (which may just end a
/// recording) stops at the next one.
static SIGNALS: AtomicU32 = AtomicU32::new(0);
/// The process group a blocking waiter waits for (0: none). One waiter at a time:
/// perflab runs one command at a time.
static WAITED_GROUP: AtomicI32 = AtomicI32::new(0);
/// A helper process that runs commands for us (see `spawner`) and gets SIGTERM when
/// we are interrupted, so it kills the command it waits for (0: none).
static FORWARD_TO: AtomicI32 = AtomicI32::new(0);

/// Install the handlers once and return the shared watcher.
pub fn watcher() -> &'static Interrupt {
    INSTANCE.get_or_init(|| {
        let (read_end, write_end) = UnixStream::pair().expect("socketpair for signal handling");
        read_end.set_nonblocking(true).ok();
        write_end.set_nonblocking(true).ok();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // SAFETY: the handler only touches atomics and calls kill(2), both
            // async-signal-safe. Registration only fails for forbidden signals.
            let _ = unsafe {
                signal_hook::low_level::register(sig, || {
                    REQUESTED.store(true, Ordering::SeqCst);
                    SIGNALS.fetch_add(1, Ordering::SeqCst);
                    kill_group(WAITED_GROUP.load(Ordering::SeqCst));
                    forward(FORWARD_TO.load(Ordering::SeqCst));
                })
            };
            let _ = signal_hook::low_level::pipe::register(sig, write_end.try_clone().expect("dup socket"));
        }
        Interrupt { read_end }
    })
}

/// SIGINT/SIGTERM received so far (0 when the handlers are not installed: then a signal
/// ends the process). Does not install the handlers.
pub fn signals_received() -> u32 {
    SIGNALS.load(Ordering::SeqCst)
}

fn kill_group(group: libc::pid_t) {
    if group > 0 {
        // SAFETY: signalling a process group perflab created.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
}

fn forward(pid: libc::pid_t) {
    if pid > 0 {
        // SAFETY: signalling the helper process perflab started.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
}

impl Interrupt {
    /// True once SIGINT or SIGTERM has arrived.
    pub fn requested(&self) -> bool {
        REQUESTED.load(Ordering::SeqCst)
    }

    /// A descriptor that becomes readable when a signal arrives.
    pub fn fd(&self) -> RawFd {
        self.read_end.as_raw_fd()
    }

    /// From now on an interrupt is passed on to process `pid` as SIGTERM (0: to nobody).
    pub(crate) fn forward_to(&self, pid: libc::pid_t) {
        FORWARD_TO.store(pid, Ordering::SeqCst);
        if pid > 0 && self.requested() {
            forward(pid);
        }
    }

    /// Until the guard is dropped, an interrupt SIGKILLs process group `group`.
    pub(crate) fn kill_on_interrupt(&self, group: libc::pid_t) -> KillOnInterrupt {
        WAITED_GROUP.store(group, Ordering::SeqCst);
        // A signal that came before the store found no group: the handler set the flag
        // first, so it is seen here. Either this load or the handler's sees the other.
        if self.requested() {
            kill_group(group);
        }
        KillOnInterrupt
    }
}

/// Returned by [`Interrupt::kill_on_interrupt`].
pub(crate) struct KillOnInterrupt;

impl Drop for KillOnInterrupt {
    fn drop(&mut self) {
        WAITED_GROUP.store(0, Ordering::SeqCst);
    }
}
