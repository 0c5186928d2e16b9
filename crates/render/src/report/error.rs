//! What stops `perflab report` from making its page, as one typed error; the `perflab`
//! binary maps it to an exit code (all of it is bad input, an unreadable store or an
//! unwritable `--out`: 2).

use std::path::PathBuf;
use thiserror::Error;

/// What stops `perflab report`.
#[derive(Debug, Error)]
pub enum ReportError {
    /// The report file cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The write error.
        #[source]
        source: std::io::Error,
    },
    /// `--out` has no file name (it ends in `..`, or is `/`).
    #[error("--out {} is not a file name", .0.display())]
    NotAFileName(PathBuf),
    /// A `--from` file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The read error.
        #[source]
        source: std::io::Error,
    },
    /// A `--from` file is not perflab's JSON.
    #[error("{} is not a perflab JSON result: {source}", path.display())]
    NotAResult {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A `--from` file holds a value no real run could have.
    #[error("{}: {source}", path.display())]
    OutOfRange {
        /// The file.
        path: PathBuf,
        /// Which value, and why.
        #[source]
        source: perflab_store::error::OutOfRange,
    },
    /// `--reference` names a label without results.
    #[error("reference label {label} has no results (labels: {known})")]
    NoReference {
        /// The label given.
        label: String,
        /// The labels with results, for the message.
        known: String,
    },
    /// `--label` names a label without results.
    #[error("label {label} has no results (labels: {known})")]
    NoLabel {
        /// The label given.
        label: String,
        /// The labels with results, for the message.
        known: String,
    },
    /// `--machine` matches no machine with results.
    #[error("no results from machine {0}")]
    NoMachine(String),
    #[error(
        "no results to report: store some with `perflab run` or `perflab compare --save`, or pass --from FILE.json"
    )]
    /// The store (or the files) hold no results.
    NothingToReport,
    /// No successful run has the metric asked for.
    #[error("no successful run has the metric {0} (try wall_s, cpu_s, max_rss_kib or a recorded counter)")]
    NoSuchMetric(String),
    /// The history store.
    #[error(transparent)]
    Store(#[from] perflab_store::error::StoreError),
}
