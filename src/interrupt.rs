//! Ctrl-C and SIGTERM handling: a self-pipe that the spawner polls next to the child's
//! pidfd, so an interrupt wakes the harness at once without busy-waiting.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

pub struct Interrupt {
    flag: Arc<AtomicBool>,
    read_end: UnixStream,
}

static INSTANCE: OnceLock<Interrupt> = OnceLock::new();

/// Install the handlers once and return the shared watcher.
pub fn watcher() -> &'static Interrupt {
    INSTANCE.get_or_init(|| {
        let (read_end, write_end) = UnixStream::pair().expect("socketpair for signal handling");
        read_end.set_nonblocking(true).ok();
        write_end.set_nonblocking(true).ok();
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Registration only fails for forbidden signals; these two are allowed.
            let _ = signal_hook::flag::register(sig, flag.clone());
            let _ = signal_hook::low_level::pipe::register(sig, write_end.try_clone().expect("dup socket"));
        }
        Interrupt { flag, read_end }
    })
}

impl Interrupt {
    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
    /// A descriptor that becomes readable when a signal arrives.
    pub fn fd(&self) -> RawFd {
        self.read_end.as_raw_fd()
    }
}
