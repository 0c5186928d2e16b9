//! What can go wrong loading a suite file, choosing its benchmarks and builds and running
//! them, and bisecting, as typed errors; the `perflab` binary maps them to exit codes.

use std::path::PathBuf;
use thiserror::Error;

/// A problem's cause, typed where a parser below gave one (a duration, a mode, an
/// output parser), else the sentence that says what was expected.
pub(crate) type Problem = Box<dyn std::error::Error + Send + Sync>;

/// What stops loading a suite file, choosing its benchmarks and builds, or running them.
#[derive(Debug, Error)]
pub enum SuiteError {
    /// `perflab run` without `--suite` in a directory without `perflab.toml`.
    #[error("no {} here: write one (see docs/suites.md) or pass --suite FILE", super::DEFAULT_FILE)]
    NoSuiteHere,
    /// The suite file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The suite file.
        path: PathBuf,
        /// The read error.
        #[source]
        source: std::io::Error,
    },
    /// Something wrong at a line of the file: `FILE:LINE: what is expected`.
    #[error("{file}:{line}: {problem}")]
    At {
        /// The suite file, as given.
        file: String,
        /// 1-based line of the problem.
        line: usize,
        /// What is wrong there.
        #[source]
        problem: Problem,
    },
    /// A benchmark's command uses `{build}` but no build was chosen.
    #[error("benchmark `{0}` uses {{build}}: define [builds] in the suite and pass --label or --build naming one")]
    NeedsBuild(String),
    /// `--filter` is not a valid regular expression.
    #[error("--filter `{pattern}` is not a regular expression: {why}")]
    BadFilter {
        /// The pattern, escaped for the terminal.
        pattern: String,
        /// The regex crate's reason, one line.
        why: String,
    },
    /// `--filter` matches no benchmark.
    #[error("no benchmark in {} matches --filter {filter}", path.display())]
    NothingSelected {
        /// The suite file.
        path: PathBuf,
        /// The pattern.
        filter: String,
    },
    /// `--build`/`--baseline` named a build a suite without `[builds]` does not have.
    #[error(
        "{flag} `{name}` is not a build: {} defines no [builds] (to compare with a stored label, use `perflab history` or `perflab report --reference`)",
        path.display()
    )]
    NoBuilds {
        /// The option that named it (`--build`, `--baseline`).
        flag: &'static str,
        /// The name given.
        name: String,
        /// The suite file.
        path: PathBuf,
    },
    /// `--build`/`--baseline` named a build the suite's `[builds]` does not have.
    #[error("{flag} `{name}` is not a build in {} (builds: {known})", path.display())]
    NoSuchBuild {
        /// The option that named it (`--build`, `--baseline`).
        flag: &'static str,
        /// The name given.
        name: String,
        /// The suite file.
        path: PathBuf,
        /// The builds the suite defines, for the message.
        known: String,
    },
    /// `--baseline` without a build to compare with it.
    #[error("--baseline needs a build to compare with: pass --build or a --label naming a build")]
    BaselineWithoutBuild,
    /// `--baseline` names the build being measured.
    #[error("--baseline and the measured build are both `{0}`")]
    SameBuild(String),
    /// A benchmark's commands, shell or metrics as the plan reads them.
    #[error("benchmark `{bench}`: {source}")]
    Benchmark {
        /// The benchmark's name.
        bench: String,
        /// What the plan found wrong.
        #[source]
        source: perflab_engine::plan::error::PlanError,
    },
    /// A build's prepare command failed (exit code 3, as a failing command).
    #[error("preparing build `{build}` failed: {source}")]
    PrepareBuild {
        /// The build's name.
        build: String,
        /// How its prepare command failed.
        #[source]
        source: perflab_engine::plan::error::ScriptError,
    },
    /// `--layouts N` for a build whose path and prepare command never name `{layout}`.
    #[error(
        "build `{0}` is to be built in several layouts, but neither its path nor its prepare command uses {{layout}} (see docs/suites.md, \"Code layouts\")"
    )]
    NoLayoutPlaceholder(String),
    /// Two layouts of one build produced the same program, byte for byte.
    #[error(
        "layouts `{first}` and `{second}` of build `{build}` built identical programs ({}): {{layout}} does not reach the linker (see docs/suites.md, \"Code layouts\")",
        path.display()
    )]
    SameLayout {
        /// The build whose layouts are the same.
        build: String,
        /// The first layout's name.
        first: String,
        /// The second layout's name.
        second: String,
        /// The program both built.
        path: PathBuf,
    },
    /// `--layouts` below 2.
    #[error("--layouts must be at least 2 (one layout per version is what a plain comparison measures), got {0}")]
    TooFewLayouts(u32),
    /// The store could not take the results.
    #[error(transparent)]
    Store(#[from] perflab_store::error::StoreError),
    /// `perflab run` measured every benchmark, but the store failed for some (a full
    /// disk): the first failure, and which were not stored.
    #[error(
        "{} of {total} benchmarks measured but not stored in the history ({}{}; their results are on the terminal and in --json): {}",
        .benchmarks.len(),
        .benchmarks.iter().take(5).map(|b| format!("`{b}`")).collect::<Vec<_>>().join(", "),
        if .benchmarks.len() > 5 { format!(" and {} more", .benchmarks.len() - 5) } else { String::new() },
        .first.line()
    )]
    NotStored {
        /// The benchmarks measured but not stored.
        benchmarks: Vec<String>,
        /// The benchmarks the run measured.
        total: usize,
        /// The store's first failure (boxed: it is the large variant).
        first: Box<perflab_store::error::StoreError>,
    },
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
            SuiteError::NotStored { first, .. } => match first.as_ref() {
                perflab_store::error::StoreError::Database(e) => Some(e),
                _ => None,
            },
            SuiteError::Experiment(perflab_engine::experiment::ExperimentError::Record(e)) => Some(e),
            _ => None,
        }
    }
}

/// What stops `perflab bisect` before or between its comparisons (a comparison's own
/// failures keep theirs).
#[derive(Debug, Error)]
pub enum BisectError {
    /// The `--repo` directory cannot be read.
    #[error("--repo {}: {source}", path.display())]
    Repo {
        /// The directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// `--repo` is not a git repository.
    #[error("{} is not a git repository", .0.display())]
    NotARepository(PathBuf),
    /// The suite has no benchmark of that name.
    #[error("no benchmark `{bench}` in {}", suite.display())]
    NoSuchBenchmark {
        /// The name given.
        bench: String,
        /// The suite file.
        suite: PathBuf,
    },
    /// The benchmark's command does not use `{build}`.
    #[error("benchmark `{0}` does not use {{build}}, so every commit would run the same program")]
    NoBuildPlaceholder(String),
    /// The good commit is not an ancestor of the bad one.
    #[error("--good {good} is not an ancestor of --bad {bad}")]
    NotAncestor {
        /// `--good`, as given.
        good: String,
        /// `--bad`, as given.
        bad: String,
    },
    /// `--good` and `--bad` resolve to the same commit.
    #[error("--good and --bad are the same commit")]
    SameCommit,
    /// Measured, the bad end is not slower than the good one: no regression to find.
    #[error("--bad {bad} is not slower than --good {good}: nothing to bisect")]
    NotSlower {
        /// `--good`, as given.
        good: String,
        /// `--bad`, as given.
        bad: String,
    },
    /// A revision that is no commit of the repository and no stored label with a commit.
    #[error("`{rev}` is neither a commit of {} nor a stored label with a commit", repo.display())]
    UnknownRevision {
        /// The revision, as given.
        rev: String,
        /// The repository.
        repo: PathBuf,
    },
    /// A stored label's commit is not in the repository.
    #[error("label `{rev}` was recorded at commit {commit}, which {} does not have", repo.display())]
    LabelCommitMissing {
        /// The label.
        rev: String,
        /// The commit it was recorded at.
        commit: String,
        /// The repository.
        repo: PathBuf,
    },
    /// A worktree directory for building commits cannot be created.
    #[error("cannot create {}: {source}", path.display())]
    Scratch {
        /// The directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// `git` cannot be started.
    #[error("cannot run git: {0}")]
    GitNotRunnable(#[source] std::io::Error),
    /// `first_line`: what git said first on stderr.
    #[error("git {args}: {first_line}")]
    Git {
        /// The git arguments.
        args: String,
        /// What git said first on stderr.
        first_line: String,
    },
    /// The user's build command failed for a commit (exit code 3, as a failing command).
    #[error("building {commit} failed: {source}")]
    BuildFailed {
        /// The commit.
        commit: String,
        /// How the build command failed.
        #[source]
        source: perflab_engine::plan::error::ScriptError,
    },
    /// A comparison ended without a verdict on the primary metric (a command failed).
    #[error("the comparison produced no verdict (did a command fail?)")]
    NoVerdict,
    /// The user interrupted the bisection.
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
