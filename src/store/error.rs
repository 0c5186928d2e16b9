//! What can go wrong opening the history database and importing results into it, as
//! typed errors of the store area; `error::Failure` maps them to an exit code once (all
//! of it is bad input or an unusable database: 2). Kept apart from `store/mod.rs` so
//! `error.rs` can name them without importing the module that returns `Failure`.

use std::path::PathBuf;
use thiserror::Error;

/// Why a SQLite database could not be opened (here rather than in `sqlite.rs`, so this
/// file imports nothing that returns `Failure`).
#[derive(Debug, Error)]
pub enum OpenError {
    #[error("create {}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not switch to WAL journaling (got {0})")]
    NotWal(String),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// Opening a database (SQLite file or PostgreSQL URL) for this perflab.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot store into database {0}: it is not writable here (read-only filesystem, file or directory)")]
    NotWritable(String),
    #[error("cannot open database {path}{}: {source}", if *.read_only { " read-only" } else { "" })]
    Open {
        path: String,
        read_only: bool,
        #[source]
        source: OpenError,
    },
    /// Reading or migrating the schema failed; `cause` is an anyhow chain (the backends'
    /// own errors with their context), printed on one line.
    #[error("database {location}: {cause:#}")]
    Schema { location: String, cause: anyhow::Error },
    #[error("no history database at {0}: store results with `perflab run` or `perflab compare --save` (or pass --db)")]
    Missing(String),
    #[error(
        "database {path} is read-only and at schema version {version}, this perflab reads version {wanted}: open it once where it is writable to migrate it"
    )]
    ReadOnlyAtOtherVersion { path: String, version: i64, wanted: i64 },
}

/// A number in an imported or loaded result that no real run could have.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct OutOfRange(pub String);

/// Importing a file of results (`perflab import`, `report --from`).
#[derive(Debug, Error)]
pub enum ImportError {
    #[error("cannot read {file}: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: not JSON: {source}")]
    NotJson {
        file: String,
        #[source]
        source: serde_json::Error,
    },
    /// The file looks like `kind` but does not parse as one.
    #[error("{file}: not a valid {kind}: {source}")]
    Invalid {
        file: String,
        kind: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{file} is a {kind} file: pass --label to name these results")]
    NeedsLabel { file: String, kind: &'static str },
    #[error("{0}: the file holds no results")]
    Empty(String),
    #[error("{file}: result {index} (`{command}`) has no per-run `times`")]
    NoTimes { file: String, index: usize, command: String },
    #[error("{file}: result {index} has an invalid time {time}")]
    BadTime { file: String, index: usize, time: f64 },
    #[error(
        "{0}: expected hyperfine --export-json output (`results`), perflab compare/run --json output or a perflab export"
    )]
    UnknownFormat(String),
    #[error("{file}: {source}")]
    OutOfRange {
        file: String,
        #[source]
        source: OutOfRange,
    },
    /// A record whose values cannot be right, refused with where it is.
    #[error("{file}: record {record} (ending on line {line}): {source}")]
    Refused {
        file: String,
        record: usize,
        line: u64,
        #[source]
        source: OutOfRange,
    },
    /// Storing stopped (the store's own error is reported instead).
    #[error("storing stopped")]
    Stopped,
}
