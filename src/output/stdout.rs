//! The one way perflab writes to its standard output. Rust's `print!` panics when stdout
//! fails (`> /dev/full`, a pipe whose reader left, as in `| head -1`); here the first
//! failure is kept, later writes are skipped, and the command goes on — a suite runs its
//! other benchmarks, files are still written — until `cli::main` turns the failure into
//! one line and its exit code (see [`crate::error`]).
//!
//! SIGPIPE stays ignored (Rust's default) so that a closed pipe is an error to handle,
//! not a death before the result files are written.

use std::io::{self, Write};
use std::sync::Mutex;

/// The first write failure, if any.
static FAILURE: Mutex<Option<io::Error>> = Mutex::new(None);

/// Write `text` to stdout unless an earlier write failed; a failure is kept for
/// [`take_failure`]. Returns whether stdout still takes output.
pub fn write(text: &str) -> bool {
    write_bytes(text.as_bytes())
}

/// [`write()`] for bytes.
pub fn write_bytes(bytes: &[u8]) -> bool {
    let mut failure = FAILURE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if failure.is_some() {
        return false;
    }
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Ok(()) => true,
        Err(e) => {
            *failure = Some(e);
            false
        }
    }
}

/// True once a write to stdout failed (a live view stops then: nobody reads it).
pub fn failed() -> bool {
    FAILURE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).is_some()
}

/// The first failure, taken (called once, by `cli::main`, after the command finished).
pub fn take_failure() -> Option<io::Error> {
    FAILURE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
}

/// A [`Write`] over [`write()`], for writers that stream to stdout (the per-run CSV):
/// it never fails, so a broken stdout cannot stop an experiment.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_bytes(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `print!` that never panics (see the module).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::stdout::write(&format!($($arg)*)) };
}

/// `println!` that never panics (see the module).
#[macro_export]
macro_rules! outln {
    () => { $crate::output::stdout::write("\n") };
    ($($arg:tt)*) => { $crate::output::stdout::write(&format!("{}\n", format!($($arg)*))) };
}
