//! What can go wrong opening, reading and writing the history database and importing
//! results into it, as typed errors; the `perflab` binary maps them to exit codes (all
//! of it is bad input or an unusable database: 2).

use std::path::PathBuf;
use thiserror::Error;

/// Why a SQLite database could not be opened.
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
    /// A file of results that cannot be imported.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// The database failed a request or could not be reached; the backend's own error
    /// stays in the chain (an agent tells an outage from a bug by it).
    #[error(transparent)]
    Database(#[from] anyhow::Error),
}

impl StoreError {
    /// True when the database could not be reached or stopped answering (a restart, a
    /// partition, a time-out), so that trying again later may work.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Database(e) if unavailable(e))
    }

    /// The error and its causes on one line (the database's own error kept in it).
    pub fn line(&self) -> String {
        match self {
            StoreError::Database(e) => perflab_sys::text::chain_line(e.chain()),
            other => other.to_string(),
        }
    }
}

/// True when the database's error `e` (anywhere in its chain) says it could not be
/// reached or stopped answering, rather than that the request was wrong.
pub fn unavailable(e: &anyhow::Error) -> bool {
    super::postgres::is_unavailable(e)
}

/// True when the database's error `e` came from a write fenced by a fleet claim that
/// another agent took over.
pub fn claim_lost(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<super::fence::ClaimLost>())
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
