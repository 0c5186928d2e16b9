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
    NulByte { what: &'static str },
    /// A system call that makes a capture or a pipe failed (`call` names it).
    #[error("{call}: {source}")]
    System {
        call: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the pipe's reader: {0}")]
    DrainThread(#[source] std::io::Error),
    #[error("cannot write --output {}: {source}", path.display())]
    OutputFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open /dev/null: {0}")]
    DevNull(#[source] std::io::Error),
    #[error("cannot read --input {}: {source}", path.display())]
    Input {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--input {} is not a regular file", .0.display())]
    InputNotAFile(PathBuf),
}

/// The helper process commands are started from (`executor::launcher`) could not be
/// set up.
#[derive(Debug, Error)]
pub enum LaunchError {
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error("cannot start perflab's spawner process: {0}")]
    Start(#[source] std::io::Error),
    #[error("cannot set up perflab's spawner process: {0}")]
    Setup(#[source] std::io::Error),
    /// The helper could not prepare a command; its reason crossed the process boundary
    /// as text.
    #[error("{0}")]
    HelperRefused(String),
    /// The helper answered something else than ready (its reply, for the record).
    #[error("perflab's spawner process did not start: {0}")]
    NoReply(String),
    #[error("cannot read the spawner process's captures: {0}")]
    Captures(#[source] std::io::Error),
}

/// Why runs cannot get a cgroup of their own (their tree's run-queue wait then stays
/// unknown; said in the harness's description).
#[derive(Debug, Error)]
pub enum CgroupError {
    #[error("no cgroup v2 hierarchy is mounted")]
    NoHierarchy,
    #[error("this process is in no cgroup v2")]
    NotInOne,
    #[error("cannot create a cgroup in {}: {source}", parent.display())]
    Create {
        parent: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot move into a new cgroup: {0}")]
    MoveIn(#[source] std::io::Error),
    #[error("no CPU pressure accounting in {}: {source}", dir.display())]
    NoPressure {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// This machine shows no per-CPU busy time (neighbours' share of a wait stays unknown).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("no per-CPU busy time (no cpuacct cgroup, /proc/schedstat or /proc/stat)")]
pub struct NoCpuTime;
