//! Shared helpers for integration tests: fixture programs compiled from
//! `tests/fixtures/*.c` with the system C compiler, once per test binary run.
//!
//! A fixture may start with a line `// cflags: ...` giving extra compiler flags
//! (e.g. `-static`, `-lpthread`, `-nostdlib`). Output goes to
//! `target/fixtures/<name>`; a file lock keeps parallel test binaries from racing.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("fixtures");
    std::fs::create_dir_all(&dir).expect("create target/fixtures");
    dir
}

/// Compile `tests/fixtures/<name>.c` (if stale) and return the executable's path.
pub fn fixture(name: &str) -> PathBuf {
    fixture_with(name, &[])
}

/// Like [`fixture`], with extra flags; the output name gets a suffix per flag set.
pub fn fixture_with(name: &str, extra: &[&str]) -> PathBuf {
    let src = fixtures_dir().join(format!("{name}.c"));
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("read {}: {e}", src.display()));
    let mut flags: Vec<String> = vec!["-O2".into(), "-g".into()];
    if let Some(first) = text.lines().next() {
        if let Some(f) = first.strip_prefix("// cflags:") {
            flags.extend(f.split_whitespace().map(String::from));
        }
    }
    flags.extend(extra.iter().map(|s| s.to_string()));
    let suffix = if extra.is_empty() {
        String::new()
    } else {
        format!("-{}", extra.join("").replace(['-', '/', '=', ' ', '.'], ""))
    };
    let out = out_dir().join(format!("{name}{suffix}"));
    let lock_path = out_dir().join(format!(".{name}{suffix}.lock"));
    let lock = std::fs::File::create(&lock_path).expect("create lock");
    // SAFETY: flock on a valid descriptor we own.
    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
    let stale = match (std::fs::metadata(&out), std::fs::metadata(&src)) {
        (Ok(o), Ok(s)) => o.modified().unwrap() < s.modified().unwrap(),
        _ => true,
    };
    if stale {
        let tmp = out.with_extension("tmp");
        let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
        // Libraries (-l...) must follow the source file.
        let (libs, opts): (Vec<_>, Vec<_>) = flags.iter().partition(|f| f.starts_with("-l"));
        cmd.args(&opts).arg(&src).arg("-o").arg(&tmp).args(&libs);
        let status = cmd.status().expect("run the C compiler (install gcc)");
        assert!(status.success(), "compiling fixture {name} failed");
        std::fs::rename(&tmp, &out).unwrap();
    }
    out
}

pub mod cluster;
pub mod noise;
pub mod pg;
pub mod proxy;
pub mod skip;

pub use skip::{ci, skip, skip_part};

/// Chromium from Debian (`apt-get install chromium`), or None (nothing said: the caller
/// skips what needs it with [`skip`] or [`skip_part`]); under CI=true its absence fails.
pub fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|n| which::which(n).ok());
    assert!(found.is_some() || !ci(), "CI=true but chromium is not installed (apt-get install chromium)");
    found
}

/// Whether `program` is on PATH; when it is not, the whole test is skipped (said and
/// counted) with `install` as the hint, or fails under CI=true.
pub fn have(program: &str, install: &str) -> bool {
    let found = which::which(program).is_ok();
    if !found {
        skip(&format!("{program} is not installed ({install})"));
    }
    found
}

/// True when running as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn run_chromium(browser: &Path, profile: &Path, extra: &[&str], page: &Path) -> std::process::Output {
    std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium")
}

/// Samples of folded stacks (`root;…;leaf COUNT` lines) that end with `suffix`.
pub fn folded_ending_with(folded: &str, suffix: &[&str]) -> u64 {
    folded
        .lines()
        .filter_map(|line| {
            let (stack, count) = line.rsplit_once(' ')?;
            let frames: Vec<&str> = stack.split(';').collect();
            frames.ends_with(suffix).then(|| count.parse::<u64>().unwrap())
        })
        .sum()
}

/// True when valgrind is usable; else the test is skipped (fails under `CI=true`).
pub fn have_valgrind() -> bool {
    have("valgrind", "apt-get install valgrind")
}
