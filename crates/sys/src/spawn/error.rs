//! What can go wrong preparing a command to run repeatedly, starting the helper process
//! runs start from, and reading the machine's per-CPU time, as typed errors.

use std::path::PathBuf;
use thiserror::Error;

/// A command that cannot be prepared for repeated runs: a bad argument or file, or a
/// resource the machine refused.
#[derive(Debug, Error)]
pub enum PrepareError {
    /// `what`: "program path", "an argument".
    #[error("{what} contains a NUL byte")]
    NulByte {
        /// What contains it.
        what: &'static str,
    },
    /// A system call that makes a capture or a pipe failed (`call` names it).
    #[error("{call}: {source}")]
    System {
        /// The system call.
        call: &'static str,
        /// Its error.
        #[source]
        source: std::io::Error,
    },
    /// The thread draining a capture pipe could not be started.
    #[error("cannot start the pipe's reader: {0}")]
    DrainThread(#[source] std::io::Error),
    /// The `--output` file cannot be created or written.
    #[error("cannot write --output {}: {source}", path.display())]
    OutputFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `/dev/null` cannot be opened (a broken container).
    #[error("cannot open /dev/null: {0}")]
    DevNull(#[source] std::io::Error),
    /// The `--input` file cannot be opened.
    #[error("cannot read --input {}: {source}", path.display())]
    Input {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The `--input` path is not a regular file (every run must read it from the start).
    #[error("--input {} is not a regular file", .0.display())]
    InputNotAFile(PathBuf),
}

/// The helper process commands are started from (`executor::launcher`) could not be
/// set up.
#[derive(Debug, Error)]
pub enum LaunchError {
    /// A command could not be prepared.
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// The spawner process could not be started.
    #[error("cannot start perflab's spawner process: {0}")]
    Start(#[source] std::io::Error),
    /// The commands could not be sent to the spawner process.
    #[error("cannot set up perflab's spawner process: {0}")]
    Setup(#[source] std::io::Error),
    /// The helper could not prepare a command; its reason crossed the process boundary
    /// as text.
    #[error("{0}")]
    HelperRefused(String),
    /// The helper answered something else than ready (its reply, for the record).
    #[error("perflab's spawner process did not start: {0}")]
    NoReply(String),
    /// The output the spawner captured cannot be read back.
    #[error("cannot read the spawner process's captures: {0}")]
    Captures(#[source] std::io::Error),
}

/// Why runs cannot get a cgroup of their own (their tree's run-queue wait then stays
/// unknown; said in the harness's description).
#[derive(Debug, Error)]
pub enum CgroupError {
    /// No cgroup v2 filesystem is mounted.
    #[error("no cgroup v2 hierarchy is mounted")]
    NoHierarchy,
    /// /proc/self/cgroup names no cgroup v2 (only v1 controllers).
    #[error("this process is in no cgroup v2")]
    NotInOne,
    /// The cgroup directory cannot be created (no delegation, read-only).
    #[error("cannot create a cgroup in {}: {source}", parent.display())]
    Create {
        /// Where it was to be created.
        parent: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// This process cannot be moved into the new cgroup.
    #[error("cannot move into a new cgroup: {0}")]
    MoveIn(#[source] std::io::Error),
    /// The new cgroup has no readable `cpu.pressure` (PSI disabled).
    #[error("no CPU pressure accounting in {}: {source}", dir.display())]
    NoPressure {
        /// The cgroup's directory.
        dir: PathBuf,
        /// The read error.
        #[source]
        source: std::io::Error,
    },
}

/// This machine shows no per-CPU busy time (neighbours' share of a wait stays unknown).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("no per-CPU busy time (no cpuacct cgroup, /proc/schedstat or /proc/stat)")]
pub struct NoCpuTime;
