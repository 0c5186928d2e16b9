//! Skipping a test that cannot run here, said and counted: libtest has no "skipped"
//! status, so a test that returns early would count as passed. [`skip`] writes one line
//! per skip to the file named by `PERFLAB_TEST_SKIPS` (set by scripts/test, which
//! subtracts the skips from the passes and lists them with their reasons in its summary
//! line) and says SKIPPED on stderr. Under `CI=true` a skip is a failure instead: CI has
//! every tool, service and permission the tests need (scripts/test installs them), so a
//! missing one there is a broken setup, never a reason to test less.

use std::io::Write;

/// The environment variable naming the file skips are appended to.
pub const SKIPS_ENV: &str = "PERFLAB_TEST_SKIPS";

/// True under `CI=true`.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The whole test cannot run here because of `reason`: the caller returns right after.
/// Panics under `CI=true`.
pub fn skip(reason: &str) {
    record("", reason);
}

/// A part of the test (`part`, e.g. "the PostgreSQL half") cannot run here; the rest of
/// the test still ran and counts as passed. Panics under `CI=true`.
pub fn skip_part(part: &str, reason: &str) {
    record(part, reason);
}

fn record(part: &str, reason: &str) {
    let what = if part.is_empty() { String::new() } else { format!("{part}: ") };
    assert!(!ci(), "CI=true: {what}{reason}");
    let test = test_name();
    eprintln!("SKIPPED {test}: {what}{reason}");
    let Some(path) = std::env::var_os(SKIPS_ENV) else { return };
    // One write per line (O_APPEND), so parallel tests' lines never interleave.
    let line = format!("{test}\t{}\t{}\n", if part.is_empty() { "whole" } else { part }, reason.replace('\t', " "));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{SKIPS_ENV}={}: {e}", path.to_string_lossy()));
    file.write_all(line.as_bytes()).unwrap_or_else(|e| panic!("{SKIPS_ENV}={}: {e}", path.to_string_lossy()));
}

/// `binary::test` as libtest names it: the test binary (this crate) and the thread name,
/// which libtest sets to the test's path (with one test thread the test may run on the
/// main thread: then only the binary is known).
fn test_name() -> String {
    let thread = std::thread::current();
    match thread.name() {
        Some(name) if name != "main" => format!("{}::{name}", env!("CARGO_CRATE_NAME")),
        _ => format!("{}::?", env!("CARGO_CRATE_NAME")),
    }
}
