//! What can go wrong reading, reporting and exporting profiles, as one typed error for
//! the profile area; `error::Failure` maps it to an exit code once (bad input: 2).

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ProfileError {
    /// `--callers`/`--callees`/`--symbol` named a function no stack or row has.
    #[error("no function named `{name}` in the {place} (names as in the function column)")]
    NoSuchFunction { name: String, place: &'static str },
    /// An output that needs call stacks, for a profile without them.
    #[error("{path} has no call stacks for {flag} (recorded without `-g`, or no samples)")]
    NoStacks { path: PathBuf, flag: &'static str },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A perf.data file the parser rejects.
    #[error("{path} is not a readable perf.data file: {source}")]
    PerfData {
        path: PathBuf,
        #[source]
        source: linux_perf_data::Error,
    },
    /// A perf.data file that parses but holds nothing perflab can use.
    #[error("{path}: {why}")]
    PerfDataContent { path: PathBuf, why: String },
    /// A bad option value (a filter, a sort key, an event selection).
    #[error("{0}")]
    Option(String),
    /// A sample filter (`--comm`, `--pid`, `--tid`, `--dso`, `--symbol`) that keeps nothing.
    #[error("{path}: no samples match {filter} (of {of} samples)")]
    NothingSelected { path: PathBuf, filter: String, of: u64 },
    /// An exporter could not encode the profile.
    #[error("cannot write the {format} export: {why}")]
    Export { format: &'static str, why: String },
    /// A failure from code that still reports `Failure` directly.
    #[error(transparent)]
    Failure(#[from] crate::error::Failure),
}

impl From<ProfileError> for crate::error::Failure {
    fn from(e: ProfileError) -> crate::error::Failure {
        use crate::error::Failure;
        match e {
            ProfileError::Failure(f) => f,
            // Output that could not be written keeps its cause chain.
            e @ (ProfileError::Write { .. } | ProfileError::Export { .. }) => Failure::Other(anyhow::Error::new(e)),
            bad_input => Failure::Usage(bad_input.to_string()),
        }
    }
}
