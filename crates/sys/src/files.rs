//! Opening files that data names — the objects, debug files and source files a profile
//! refers to, perf maps — as regular files only, and without blocking: a FIFO named
//! there would make perflab wait forever for a writer, a device read without end.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Open `path` for reading if it is a regular file (checked on the opened file, so it
/// cannot change in between); opening never waits (O_NONBLOCK, cleared afterwards).
pub fn open_regular(path: impl AsRef<Path>) -> io::Result<File> {
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path.as_ref())?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    // SAFETY: fcntl on the descriptor we just opened.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    Ok(file)
}

/// The bytes of a regular file (see [`open_regular`]).
pub fn read_regular(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The text of a regular file (see [`open_regular`]).
pub fn read_regular_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    let mut text = String::new();
    open_regular(path)?.read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_open_and_a_fifo_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "text").unwrap();
        assert_eq!(read_regular_to_string(&file).unwrap(), "text");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(open_regular(&fifo).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert!(open_regular(dir.path()).is_err(), "a directory");
        assert!(open_regular("/dev/zero").is_err(), "a device");
    }
}
