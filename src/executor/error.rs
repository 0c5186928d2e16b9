//! What can go wrong setting up the commands of a plan to run, as typed errors for the
//! executor area; `error::Failure` maps them to exit codes once. Kept apart from the
//! modules that return `Failure` so `error.rs` can name them without an import cycle.
//! (A run's own failures — `RunError`, `SpawnError` — are outcomes the engine records,
//! not failures of the command line.)

use crate::model::Run;
use std::path::PathBuf;
use thiserror::Error;

/// Why a run produced no measurement, or not all of it.
#[derive(Debug, Error)]
pub enum RunError {
    /// The user asked to stop; the running command was killed.
    #[error("interrupted")]
    Interrupted,
    /// The command could not be started or measured.
    #[error("{0}")]
    Failed(String),
    /// Something around the command failed — a hook, or reading what it printed. `run`
    /// holds the measured run when the command itself ran.
    #[error("{why}")]
    Incomplete { run: Option<Box<Run>>, why: String },
}

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

/// A plan's commands could not be made ready to run.
#[derive(Debug, Error)]
pub enum ExecutorError {
    /// A `--prepare`/`--conclude`/`--setup` hook (bad input).
    #[error("hook `{hook}`: {source}")]
    Hook {
        hook: String,
        #[source]
        source: PrepareError,
    },
    /// A command (bad input: its arguments, `--input`, `--output`).
    #[error("{command}: {source}")]
    Command {
        command: String,
        #[source]
        source: PrepareError,
    },
    /// A probe could not wrap a command's argv (bad input: a missing program).
    #[error("{command}: {cause:#}")]
    Probe { command: String, cause: anyhow::Error },
    /// The rest are the machine's, not the input's.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("cannot read the commands' output: {0}")]
    Streams(#[source] std::io::Error),
    #[error("cannot start the output reader: {0}")]
    OutputReader(#[source] std::io::Error),
    /// A command that could not even start in the first round (bad input).
    #[error("{command}: {source}")]
    CannotStart {
        command: String,
        #[source]
        source: RunError,
    },
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

/// `--cleanup` commands that failed (each subject's name and why); the experiment
/// records them as its failure.
#[derive(Debug, Error)]
#[error("{}", .0.iter().map(|(name, why)| format!("--cleanup of `{name}` failed: {why}")).collect::<Vec<_>>().join("; "))]
pub struct CleanupError(pub Vec<(String, crate::plan::error::ScriptError)>);
