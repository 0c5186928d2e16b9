//! Rendering: every kind of result as text, SVG or bytes — the library returns data, the
//! `perflab` binary picks a renderer here and sends what it returns to its destinations.
//!
//! Experiments: the terminal report ([`terminal`]) and its verdict sentence ([`verdict`]),
//! perflab's JSON ([`json`]), hyperfine's JSON and CSV ([`hyperfine`]), Markdown, AsciiDoc
//! and Org summaries ([`dialect`]), the per-run CSV as runs finish ([`csv`]), all in one
//! [`style`] (time unit, order); explanations ([`explain`]) and factorial designs
//! ([`design`]); the `stat` table ([`stat`]); `doctor` ([`doctor`]); suites, bisection and
//! the fleet's queue ([`suite`]); histories ([`history`]); profiles and their exports
//! ([`profile`]); the HTML report ([`report`]). Shared: [`table`] (terminal tables that
//! fit the terminal), [`color`], [`markup`] (escaping for HTML and SVG).
//!
//! May use every crate below it; prints nothing itself.

#![deny(missing_docs)]

pub mod color;
pub mod csv;
pub mod design;
pub mod dialect;
pub mod doctor;
pub mod explain;
pub mod export;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod history;
pub mod hyperfine;
pub mod json;
pub mod layouts;
pub mod markup;
pub mod pair;
pub mod profile;
pub mod report;
pub mod stat;
pub mod style;
pub mod suite;
pub mod suite_summary;
pub mod table;
pub mod terminal;
pub mod verdict;

use std::path::PathBuf;
use thiserror::Error;

/// An output that could not be made or written.
#[derive(Debug, Error)]
pub enum OutputError {
    /// A file cannot be written.
    #[error("cannot write `{}`: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The write error.
        #[source]
        source: std::io::Error,
    },
    /// The result cannot be encoded as JSON.
    #[error("cannot encode the result as JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// The CSV writer failed.
    #[error("cannot encode the result as CSV: {0}")]
    Csv(#[from] ::csv::Error),
    /// Two outputs were asked to write to the same place.
    #[error("{first} and {second} cannot both write to {place}")]
    Clash {
        /// The first output.
        first: String,
        /// The second.
        second: String,
        /// Where both would write.
        place: String,
    },
    /// Several outputs failed; each was tried.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<OutputError>),
}

impl OutputError {
    /// `Ok` when nothing failed, the one failure, or all of them.
    pub fn of_all(mut failures: Vec<OutputError>) -> Result<(), OutputError> {
        match failures.len() {
            0 => Ok(()),
            1 => Err(failures.remove(0)),
            _ => Err(OutputError::Several(failures)),
        }
    }
}

pub use perflab_sys::text::escape;

/// A message (a warning, a failure) as one terminal line: line breaks made clauses,
/// control characters escaped (see `perflab_sys::text::one_line`).
pub fn escape_line(text: &str) -> String {
    escape(&perflab_sys::text::one_line(text))
}
