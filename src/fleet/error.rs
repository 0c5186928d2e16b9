//! What the fleet's own steps refuse — a `--machine` pattern, the agent's directory —
//! as a typed error; `error::Failure` maps it to an exit code once (bad input: 2). The
//! suite and the store keep their own errors. Kept apart from the modules that return
//! `Failure` so `error.rs` can name it without an import cycle.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum FleetError {
    #[error("--machine `{pattern}` is not a glob pattern: {source}")]
    BadPattern {
        pattern: String,
        #[source]
        source: globset::Error,
    },
    /// The agent's `--dir`.
    #[error("cannot work in {}: {source}", path.display())]
    WorkDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
