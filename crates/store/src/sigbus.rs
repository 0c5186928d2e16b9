//! One line and exit 2 instead of a silent SIGBUS when a memory-mapped file changes
//! under perflab.
//!
//! SQLite keeps the WAL index of a database in a shared memory map of its `-shm` file
//! (the only way several processes can share it: sqlite.org/walformat.html). If another
//! process truncates that file, or its filesystem fails, the next access to the map
//! faults with SIGBUS, which kills the process without a word (exit 135). The
//! alternatives SQLite documents do not fit a store that several processes write at once:
//! `locking_mode=EXCLUSIVE` (a heap WAL index, no `-shm`) holds the database for the
//! connection's whole life, so a second `perflab run` or a `history` would wait for the
//! first run to end; a rollback journal has no shared memory but costs ~25× per commit
//! (1.4 ms vs 0.06 ms per run committed, measured here) and blocks writers behind
//! readers. So the map stays, and this handler turns the fault into the promised one
//! line and exit code: nothing can be recovered inside the faulting SQLite call, but
//! every transaction committed before is in the WAL file and is replayed when the
//! database is next opened (SQLite rebuilds the index from the WAL).
//!
//! Hand-written because no crate does this: the handler names the faulting file by
//! looking its address up in /proc/self/maps with only async-signal-safe calls (open,
//! read, write, _exit) and no allocation.

use std::sync::{Once, OnceLock};

static INSTALL: Once = Once::new();
/// The action before ours (Rust's runtime installs one to report stack overflows), put
/// back for a fault that is not in a mapped file.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Install the handler (once per process).
pub fn install() {
    INSTALL.call_once(|| {
        // SAFETY: sigaction with a zeroed struct, SA_SIGINFO and a handler of the
        // matching signature; the previous action is kept to be restored.
        unsafe {
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) != 0 {
                return;
            }
            let _ = PREVIOUS.set(previous);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
    });
}

/// Write all of `bytes` to stderr (async-signal-safe).
fn write_err(bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: write(2) from a valid buffer of the given length.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            return;
        }
        rest = &rest[n as usize..];
    }
}

/// Write `path` with control characters shown as `?` (a file name must not drive the
/// terminal).
fn write_path(path: &[u8]) {
    let mut chunk = [0u8; 256];
    for piece in path.chunks(chunk.len()) {
        for (slot, &byte) in chunk.iter_mut().zip(piece) {
            *slot = if byte < 0x20 || byte == 0x7f { b'?' } else { byte };
        }
        write_err(&chunk[..piece.len()]);
    }
}

extern "C" fn on_sigbus(_signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let address = unsafe { (*info).si_addr() } as usize;
    let mut line = [0u8; 4096];
    match mapped_file(address, &mut line) {
        Some(path) if path.ends_with(b"-shm") => {
            write_err(b"perflab: error: the database's WAL index ");
            write_path(path);
            write_err(
                b" was truncated or became unwritable while in use (SIGBUS); stopped: every run committed before is kept and the next open rebuilds the index\n",
            );
        }
        Some(path) => {
            write_err(b"perflab: error: ");
            write_path(path);
            write_err(b" was truncated or became unreadable while mapped in memory (SIGBUS); stopped\n");
        }
        None => {
            // Not a mapped file: put the previous action back and return; the faulting
            // instruction runs again and faults into it.
            if let Some(previous) = PREVIOUS.get() {
                // SAFETY: sigaction with an action read from the kernel before.
                unsafe { libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut()) };
                return;
            }
            write_err(b"perflab: error: a memory fault (SIGBUS); stopped\n");
        }
    }
    // SAFETY: _exit is async-signal-safe and ends the process at once.
    unsafe { libc::_exit(perflab_sys::exit::EXIT_USAGE) };
}

/// The path of the file mapped at `address`, from /proc/self/maps, using `line` as the
/// buffer (lines longer than it are cut).
fn mapped_file(address: usize, line: &mut [u8]) -> Option<&[u8]> {
    // SAFETY: open/read/close on a NUL-terminated path and stack buffers.
    let fd = unsafe { libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut chunk = [0u8; 1024];
    let mut len = 0;
    let mut found = None;
    'reading: loop {
        // SAFETY: read into a stack buffer of its length.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n <= 0 {
            break;
        }
        for &byte in &chunk[..n as usize] {
            if byte != b'\n' {
                if len < line.len() {
                    line[len] = byte;
                    len += 1;
                }
                continue;
            }
            if let Some(range) = path_if_contains(&line[..len], address) {
                found = Some(range);
                break 'reading;
            }
            len = 0;
        }
    }
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
    let (start, end) = found?;
    Some(&line[start..end])
}

/// For a maps line `START-END PERMS OFFSET DEV INODE PATH` whose range holds `address`,
/// the byte range of PATH (None for other lines and anonymous maps).
fn path_if_contains(line: &[u8], address: usize) -> Option<(usize, usize)> {
    let hex = |field: &[u8]| {
        field.iter().try_fold(0usize, |acc, &c| {
            let digit = (c as char).to_digit(16)? as usize;
            acc.checked_mul(16)?.checked_add(digit)
        })
    };
    let dash = line.iter().position(|&c| c == b'-')?;
    let space = line.iter().position(|&c| c == b' ')?;
    let (start, end) = (hex(&line[..dash])?, hex(line.get(dash + 1..space)?)?);
    if address < start || address >= end {
        return None;
    }
    // Skip five fields; the rest (after the padding) is the path.
    let mut index = 0;
    for _ in 0..5 {
        while index < line.len() && line[index] != b' ' {
            index += 1;
        }
        while index < line.len() && line[index] == b' ' {
            index += 1;
        }
    }
    (index < line.len()).then_some((index, line.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maps_line_gives_its_path_when_the_address_is_inside() {
        let line = b"7f00a000-7f00b000 rw-s 00000000 08:01 1234                       /tmp/x/h.db-shm";
        let (start, end) = path_if_contains(line, 0x7f00a010).unwrap();
        assert_eq!(&line[start..end], b"/tmp/x/h.db-shm");
        assert_eq!(path_if_contains(line, 0x7f00b000), None);
        assert_eq!(path_if_contains(b"7f00a000-7f00b000 rw-p 00000000 00:00 0 ", 0x7f00a010), None);
        assert_eq!(path_if_contains(b"garbage", 1), None);
    }

    #[test]
    fn this_process_maps_are_found() {
        // The address of a function lies in perflab's own text mapping.
        let address = a_maps_line_gives_its_path_when_the_address_is_inside as *const () as usize;
        let mut line = [0u8; 4096];
        let path = mapped_file(address, &mut line).expect("the test binary is mapped");
        assert!(std::str::from_utf8(path).unwrap().contains("perflab"), "{:?}", String::from_utf8_lossy(path));
    }
}
