//! What a recording samples when it does not start a command: running processes
//! (`-p PID[,PID…]`, every thread) or every CPU (`-a`). The kernel reports mappings and
//! names only for what happens after the events are opened, so the address spaces and
//! thread names that already exist are read from /proc, as `perf record -p` does.

use super::error::ProfileError;
use std::os::fd::{FromRawFd, OwnedFd};

/// An executable mapping of a running process, from /proc/PID/maps.
#[derive(Debug, Clone, PartialEq)]
pub struct ExistingMapping {
    /// Process id.
    pub pid: u32,
    /// Start address.
    pub start: u64,
    /// Length, bytes.
    pub len: u64,
    pub(crate) pgoff: u64,
    /// The mapped file, as /proc/PID/maps names it.
    pub path: String,
}

/// A thread that exists when recording starts, with its name.
#[derive(Debug, Clone, PartialEq)]
pub struct ExistingThread {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Its command name (`comm`).
    pub comm: String,
}

/// Parse `-p 12,34`.
pub fn parse_pids(text: &str) -> Result<Vec<u32>, ProfileError> {
    let pids: Result<Vec<u32>, ProfileError> = text
        .split(',')
        .map(str::trim)
        .map(|p| p.parse::<u32>().ok().filter(|&p| p > 0).ok_or_else(|| ProfileError::NotAPid(p.to_string())))
        .collect();
    let mut pids = pids?;
    pids.sort_unstable();
    pids.dedup();
    Ok(pids)
}

/// The threads of `pid` now (they come and go: callers re-read after opening events).
pub fn threads(pid: u32) -> Result<Vec<u32>, ProfileError> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ProfileError::NoProcess(pid),
        _ => ProfileError::ListThreads { pid, source },
    })?;
    let mut tids: Vec<u32> = dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Every process id in /proc.
pub(crate) fn all_pids() -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

/// Executable mappings and thread names of running processes; processes that exit
/// while being read are skipped.
pub fn existing(pids: &[u32]) -> (Vec<ExistingMapping>, Vec<ExistingThread>) {
    let mut mappings = Vec::new();
    let mut threads_seen = Vec::new();
    for &pid in pids {
        if let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            mappings.extend(parse_maps(pid, &maps));
        }
        for tid in threads(pid).unwrap_or_default() {
            if let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")) {
                threads_seen.push(ExistingThread { pid, tid, comm: comm.trim_end_matches('\n').to_string() });
            }
        }
    }
    (mappings, threads_seen)
}

/// `START-END PERMS OFFSET DEV INODE PATH` lines; only executable ones, as the kernel's
/// MMAP2 records (without mmap_data) describe.
pub(crate) fn parse_maps(pid: u32, maps: &str) -> Vec<ExistingMapping> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(6, ' ');
            let (range, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
            let path = fields.nth(2).map(str::trim).unwrap_or("");
            if perms.as_bytes().get(2) != Some(&b'x') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?;
            let pgoff = u64::from_str_radix(offset, 16).ok()?;
            let path = if path.is_empty() { "//anon".to_string() } else { path.to_string() };
            Some(ExistingMapping { pid, start, len: end.checked_sub(start)?, pgoff, path })
        })
        .collect()
}

/// User + system CPU seconds a process has used so far (all its threads, dead ones
/// included), from /proc/PID/stat; None once it is gone.
pub(crate) fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields start after the last `)`.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    Some(ticks as f64 / hz as f64)
}

/// A descriptor that becomes readable when the process exits.
pub fn pidfd(pid: u32) -> Result<OwnedFd, ProfileError> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        let source = std::io::Error::last_os_error();
        return Err(match source.raw_os_error() {
            Some(libc::ESRCH) => ProfileError::NoProcess(pid),
            _ => ProfileError::WatchProcess { pid, source },
        });
    }
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_lists_parse_and_reject_garbage() {
        assert_eq!(parse_pids("34,12, 12").unwrap(), [12, 34]);
        assert_eq!(parse_pids("7").unwrap(), [7]);
        assert!(parse_pids("12,x").unwrap_err().to_string().contains("`x`"));
        assert!(parse_pids("0").is_err() && parse_pids("").is_err());
    }

    #[test]
    fn maps_keep_executable_mappings_with_their_paths() {
        let maps = "\
55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 123 /usr/bin/my prog
55d0c0a02000-55d0c0a05000 r-xp 00002000 fd:01 123 /usr/bin/my prog
7f0000000000-7f0000001000 r-xp 00000000 00:00 0 
7ffd1b1f3000-7ffd1b1f5000 r-xp 00000000 00:00 0                          [vdso]
";
        let m = parse_maps(9, maps);
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[0],
            ExistingMapping {
                pid: 9,
                start: 0x55d0c0a02000,
                len: 0x3000,
                pgoff: 0x2000,
                path: "/usr/bin/my prog".into()
            }
        );
        assert_eq!(m[1].path, "//anon");
        assert_eq!(m[2].path, "[vdso]");
    }

    #[test]
    fn this_process_is_readable() {
        let me = std::process::id();
        assert!(threads(me).unwrap().contains(&me));
        let (mappings, threads) = existing(&[me]);
        assert!(mappings
            .iter()
            .any(|m| m.path.ends_with(std::env::current_exe().unwrap().file_name().unwrap().to_str().unwrap())));
        assert!(threads.iter().any(|t| t.tid == me));
        assert!(cpu_seconds(me).is_some());
        assert!(all_pids().contains(&me));
        assert!(threads_of_missing_process_is_a_usage_error());
    }

    fn threads_of_missing_process_is_a_usage_error() -> bool {
        matches!(threads(u32::MAX / 2), Err(e @ ProfileError::NoProcess(_)) if e.to_string().contains("no process"))
    }
}
