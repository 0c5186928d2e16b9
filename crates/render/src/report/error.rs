//! What stops `perflab report` from making its page, as one typed error; the `perflab`
//! binary maps it to an exit code (all of it is bad input, an unreadable store or an
//! unwritable `--out`: 2).

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ReportError {
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--out {} is not a file name", .0.display())]
    NotAFileName(PathBuf),
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a perflab JSON result: {source}", path.display())]
    NotAResult {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: {source}", path.display())]
    OutOfRange {
        path: PathBuf,
        #[source]
        source: perflab_store::error::OutOfRange,
    },
    #[error("reference label {label} has no results (labels: {known})")]
    NoReference { label: String, known: String },
    #[error("label {label} has no results (labels: {known})")]
    NoLabel { label: String, known: String },
    #[error("no results from machine {0}")]
    NoMachine(String),
    #[error(
        "no results to report: store some with `perflab run` or `perflab compare --save`, or pass --from FILE.json"
    )]
    NothingToReport,
    #[error("no successful run has the metric {0} (try wall_s, cpu_s, max_rss_kib or a recorded counter)")]
    NoSuchMetric(String),
    /// The history store.
    #[error(transparent)]
    Store(#[from] perflab_store::error::StoreError),
}
