//! What can go wrong opening, reading and writing the history database and importing
//! results into it, as typed errors; the `perflab` binary maps them to exit codes (all
//! of it is bad input or an unusable database: 2).

use std::path::PathBuf;
use thiserror::Error;

/// Why a SQLite database could not be opened.
#[derive(Debug, Error)]
pub enum OpenError {
    /// The database's directory cannot be created.
    #[error("create {}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// SQLite refused write-ahead logging (a network filesystem); the mode it reported.
    #[error("could not switch to WAL journaling (got {0})")]
    NotWal(String),
    /// SQLite's own error.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// Opening a database (SQLite file or PostgreSQL URL) for this perflab.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The database (its location) cannot be written here.
    #[error("cannot store into database {0}: it is not writable here (read-only filesystem, file or directory)")]
    NotWritable(String),
    /// The SQLite database cannot be opened.
    #[error("cannot open database {path}{}: {source}", if *.read_only { " read-only" } else { "" })]
    Open {
        /// The database file.
        path: String,
        /// True when it was opened read-only.
        read_only: bool,
        /// Why.
        #[source]
        source: OpenError,
    },
    /// Reading or migrating the schema failed; `cause` is an anyhow chain (the backends'
    /// own errors with their context), printed on one line.
    #[error("database {location}: {cause:#}")]
    Schema {
        /// The database's location.
        location: String,
        /// The backend's error with its context.
        cause: anyhow::Error,
    },
    /// A path given as the database that is not one: a directory, a device, a FIFO, an
    /// empty file or a file that is not SQLite's (the path, and what it is instead).
    #[error("{path} is not a perflab history database: it is {what}; nothing was written to it")]
    NotAStore {
        /// The path.
        path: String,
        /// What it is instead (`an empty file`, `a FIFO`, …).
        what: String,
    },
    /// Reading from a database that does not exist (its location).
    #[error("no history database at {0}: store results with `perflab run` or `perflab compare --save` (or pass --db)")]
    Missing(String),
    #[error(
        "database {path} is at schema version {version}, this perflab reads version {wanted}; commands that only read never migrate it: store into it once (`perflab run`, `perflab import`) where it is writable"
    )]
    /// A database opened for reading whose schema this perflab would have to migrate.
    ReadOnlyAtOtherVersion {
        /// The database file.
        path: String,
        /// Its schema version.
        version: i64,
        /// The version this perflab reads.
        wanted: i64,
    },
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
    /// The file cannot be read.
    #[error("cannot read {file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// The read error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{file}: not JSON: {source}")]
    NotJson {
        /// The file.
        file: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The file looks like `kind` but does not parse as one.
    #[error("{file}: not a valid {kind}: {source}")]
    Invalid {
        /// The file.
        file: String,
        /// What it looks like (`hyperfine export`, …).
        kind: &'static str,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The file's results have no label of their own and `--label` was not given.
    #[error("{file} is a {kind} file: pass --label to name these results")]
    NeedsLabel {
        /// The file.
        file: String,
        /// What kind of file it is.
        kind: &'static str,
    },
    /// The file holds no results.
    #[error("{0}: the file holds no results")]
    Empty(String),
    /// A hyperfine result without per-run times (exported without them).
    #[error("{file}: result {index} (`{command}`) has no per-run `times`")]
    NoTimes {
        /// The file.
        file: String,
        /// The result's position (0-based).
        index: usize,
        /// Its command.
        command: String,
    },
    /// A hyperfine result with a negative or non-finite time.
    #[error("{file}: result {index} has an invalid time {time}")]
    BadTime {
        /// The file.
        file: String,
        /// The result's position (0-based).
        index: usize,
        /// The time, seconds.
        time: f64,
    },
    #[error(
        "{0}: expected hyperfine --export-json output (`results`), perflab compare/run --json output or a perflab export"
    )]
    /// The file is neither hyperfine's JSON, perflab's JSON nor a perflab export.
    UnknownFormat(String),
    /// A value in the file that no real run could have.
    #[error("{file}: {source}")]
    OutOfRange {
        /// The file.
        file: String,
        /// Which value, and why.
        #[source]
        source: OutOfRange,
    },
    /// A record whose values cannot be right, refused with where it is.
    #[error("{file}: record {record} (ending on line {line}): {source}")]
    Refused {
        /// The file.
        file: String,
        /// The record's position (1-based).
        record: usize,
        /// The line it ends on.
        line: u64,
        /// Which value, and why.
        #[source]
        source: OutOfRange,
    },
    /// Storing stopped (the store's own error is reported instead).
    #[error("storing stopped")]
    Stopped,
}
