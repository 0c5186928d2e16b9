//! tracefs, where the kernel lists its tracepoints and takes dynamic events: found at its
//! usual mount points, and mounted there first when none is (as perf does; root only).

use std::path::{Path, PathBuf};

/// The usual mount points, in perf's order.
pub(crate) fn default_roots() -> Vec<PathBuf> {
    vec![PathBuf::from("/sys/kernel/tracing"), PathBuf::from("/sys/kernel/debug/tracing")]
}

/// The first of `roots` that has events; else, when `mount` and root, tracefs mounted at
/// the first one.
pub(crate) fn root(roots: &[PathBuf], mount: bool) -> Option<PathBuf> {
    let has_events = |p: &Path| p.join("events").is_dir();
    if let Some(found) = roots.iter().find(|p| has_events(p)) {
        return Some(found.clone());
    }
    let first = roots.first()?;
    // SAFETY: geteuid has no preconditions.
    if mount && unsafe { libc::geteuid() } == 0 && first.is_dir() {
        let target = std::ffi::CString::new(first.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: valid NUL-terminated strings; mounting tracefs is what perf does too.
        let mounted =
            unsafe { libc::mount(c"nodev".as_ptr(), target.as_ptr(), c"tracefs".as_ptr(), 0, std::ptr::null()) } == 0;
        if mounted && has_events(first) {
            return Some(first.clone());
        }
    }
    None
}
