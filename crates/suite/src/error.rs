//! What can go wrong loading a suite file, choosing its benchmarks and builds and running
//! them, and bisecting, as typed errors; the `perflab` binary maps them to exit codes.

use std::path::PathBuf;
use thiserror::Error;

/// A problem's cause, typed where a parser below gave one (a duration, a mode, an
/// output parser), else the sentence that says what was expected.
pub(crate) type Problem = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Error)]
pub enum SuiteError {
    /// `perflab run` without `--suite` in a directory without `perflab.toml`.
    #[error("no {} here: write one (see docs/suites.md) or pass --suite FILE", super::DEFAULT_FILE)]
    NoSuiteHere,
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Something wrong at a line of the file: `FILE:LINE: what is expected`.
    #[error("{file}:{line}: {problem}")]
    At {
        file: String,
        line: usize,
        #[source]
        problem: Problem,
    },
    #[error("benchmark `{0}` uses {{build}}: define [builds] in the suite and pass --label or --build naming one")]
    NeedsBuild(String),
    #[error("--filter `{pattern}` is not a regular expression: {why}")]
    BadFilter { pattern: String, why: String },
    #[error("no benchmark in {} matches --filter {filter}", path.display())]
    NothingSelected { path: PathBuf, filter: String },
    /// `--build`/`--baseline` named a build a suite without `[builds]` does not have.
    #[error(
        "{flag} `{name}` is not a build: {} defines no [builds] (to compare with a stored label, use `perflab history` or `perflab report --reference`)",
        path.display()
    )]
    NoBuilds { flag: &'static str, name: String, path: PathBuf },
    #[error("{flag} `{name}` is not a build in {} (builds: {known})", path.display())]
    NoSuchBuild { flag: &'static str, name: String, path: PathBuf, known: String },
    #[error("--baseline needs a build to compare with: pass --build or a --label naming a build")]
    BaselineWithoutBuild,
    #[error("--baseline and the measured build are both `{0}`")]
    SameBuild(String),
    /// A benchmark's commands, shell or metrics as the plan reads them.
    #[error("benchmark `{bench}`: {source}")]
    Benchmark {
        bench: String,
        #[source]
        source: perflab_engine::plan::error::PlanError,
    },
    /// A build's prepare command failed (exit code 3, as a failing command).
    #[error("preparing build `{build}` failed: {source}")]
    PrepareBuild {
        build: String,
        #[source]
        source: perflab_engine::plan::error::ScriptError,
    },
    /// The store could not take the results.
    #[error(transparent)]
    Store(#[from] perflab_store::error::StoreError),
    /// A benchmark could not run at all.
    #[error(transparent)]
    Experiment(#[from] perflab_engine::experiment::ExperimentError),
}

impl SuiteError {
    /// The database's own error when the store failed a request (the suite stopped
    /// because of it): an agent tells an outage from a bug by it.
    pub fn database(&self) -> Option<&anyhow::Error> {
        match self {
            SuiteError::Store(perflab_store::error::StoreError::Database(e)) => Some(e),
            SuiteError::Experiment(perflab_engine::experiment::ExperimentError::Record(e)) => Some(e),
            _ => None,
        }
    }
}

/// What stops `perflab bisect` before or between its comparisons (a comparison's own
/// failures keep theirs).
#[derive(Debug, Error)]
pub enum BisectError {
    #[error("--repo {}: {source}", path.display())]
    Repo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a git repository", .0.display())]
    NotARepository(PathBuf),
    #[error("no benchmark `{bench}` in {}", suite.display())]
    NoSuchBenchmark { bench: String, suite: PathBuf },
    #[error("benchmark `{0}` does not use {{build}}, so every commit would run the same program")]
    NoBuildPlaceholder(String),
    #[error("--good {good} is not an ancestor of --bad {bad}")]
    NotAncestor { good: String, bad: String },
    #[error("--good and --bad are the same commit")]
    SameCommit,
    #[error("--bad {bad} is not slower than --good {good}: nothing to bisect")]
    NotSlower { good: String, bad: String },
    #[error("`{rev}` is neither a commit of {} nor a stored label with a commit", repo.display())]
    UnknownRevision { rev: String, repo: PathBuf },
    #[error("label `{rev}` was recorded at commit {commit}, which {} does not have", repo.display())]
    LabelCommitMissing { rev: String, commit: String, repo: PathBuf },
    #[error("cannot create {}: {source}", path.display())]
    Scratch {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot run git: {0}")]
    GitNotRunnable(#[source] std::io::Error),
    /// `first_line`: what git said first on stderr.
    #[error("git {args}: {first_line}")]
    Git { args: String, first_line: String },
    /// The user's build command failed for a commit (exit code 3, as a failing command).
    #[error("building {commit} failed: {source}")]
    BuildFailed {
        commit: String,
        #[source]
        source: perflab_engine::plan::error::ScriptError,
    },
    #[error("the comparison produced no verdict (did a command fail?)")]
    NoVerdict,
    #[error("interrupted; bisect stopped")]
    Interrupted,
    /// The suite file or the benchmark's plan.
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// The store holding labels' commits.
    #[error(transparent)]
    Store(#[from] perflab_store::error::StoreError),
    /// A comparison that could not run.
    #[error(transparent)]
    Experiment(#[from] perflab_engine::experiment::ExperimentError),
}
