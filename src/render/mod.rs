//! Output: the terminal table, JSON, Markdown and CSV renderings of an experiment, the
//! `stat` table, the progress display, and markup escaping for HTML and SVG.

pub mod color;
pub mod csv;
pub mod explain;
pub mod json;
pub mod markdown;
pub mod markup;
pub mod progress;
pub mod stat;
pub mod terminal;

use std::io::Write;
use std::path::Path;

/// Open an output destination: `-` is stdout, anything else a file (created/truncated).
pub fn open_output(path: impl AsRef<Path>) -> Result<Box<dyn Write>, crate::error::Failure> {
    let path = path.as_ref();
    if path == Path::new("-") {
        Ok(Box::new(std::io::stdout()))
    } else {
        let file = std::fs::File::create(path).map_err(|e| crate::usage!("cannot write `{}`: {e}", path.display()))?;
        Ok(Box::new(std::io::BufWriter::new(file)))
    }
}

/// Text from outside (command names, labels) made safe for a terminal: control
/// characters — a newline, an escape sequence — are shown as escapes, never acted on.
pub fn escape(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}
