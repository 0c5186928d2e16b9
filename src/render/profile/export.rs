//! The files a profile report is written as, each a [`Format`] sent to a file or to
//! stdout (`-`), in the spirit of hyperfine's exporters: the `--json` report, folded
//! stacks, the SVG flame graph, and the viewers' own formats.

use crate::profile::error::ProfileError;
use crate::profile::flame;
use crate::profile::format::Profile;
use crate::profile::report::Report;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One output format of `profile` and `show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The report as JSON (docs/profiling.md).
    Json,
    /// Brendan Gregg's folded stacks.
    Folded,
    /// perflab's interactive SVG flame graph.
    FlameGraph,
}

impl Format {
    /// The option that asks for it.
    pub fn flag(self) -> &'static str {
        match self {
            Format::Json => "--json",
            Format::Folded => "--folded",
            Format::FlameGraph => "--flamegraph",
        }
    }

    /// Whether it is made of call stacks (refused for a profile without them).
    pub fn needs_stacks(self) -> bool {
        matches!(self, Format::Folded | Format::FlameGraph)
    }
}

/// A format and where it goes (`-`: stdout).
#[derive(Debug, Clone, PartialEq)]
pub struct Destination {
    pub format: Format,
    pub path: PathBuf,
}

impl Destination {
    pub fn to_stdout(&self) -> bool {
        self.path == Path::new("-")
    }
}

/// Two outputs to one file would overwrite each other; `-` (stdout) is for one of them.
pub fn check_distinct(destinations: &[Destination]) -> Result<(), ProfileError> {
    for (i, a) in destinations.iter().enumerate() {
        if let Some(b) = destinations[i + 1..].iter().find(|b| b.path == a.path) {
            return Err(ProfileError::Option(format!(
                "{} and {} cannot write to the same place ({})",
                a.format.flag(),
                b.format.flag(),
                a.path.display()
            )));
        }
    }
    Ok(())
}

/// The bytes of `format` for a report of `profile`; `title` heads the pictures.
pub fn render(format: Format, profile: &Profile, report: &Report, title: &str) -> Result<Vec<u8>, ProfileError> {
    Ok(match format {
        Format::Json => {
            let mut bytes = serde_json::to_vec_pretty(&report.flat)
                .map_err(|e| ProfileError::Export { format: "JSON", why: e.to_string() })?;
            bytes.push(b'\n');
            bytes
        }
        // A -g run without samples still gets its (empty) folded file.
        Format::Folded => report.graph.as_ref().map(|g| g.folded()).unwrap_or_default().into_bytes(),
        // Without samples there is nothing to draw; say so in the picture rather than fail.
        Format::FlameGraph => report
            .graph
            .as_ref()
            .and_then(|g| flame::call_graph_svg(profile, g, title))
            .unwrap_or_else(|| flame::empty_svg(title, "no samples"))
            .into_bytes(),
    })
}

/// Write bytes to a file or to stdout (`-`).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), ProfileError> {
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        // A closed pipe (`| head`) is the reader's choice, not an error worth a message.
        return match out.write_all(bytes).and_then(|_| out.flush()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(ProfileError::Write { path: path.to_path_buf(), source: e })
            }
            _ => Ok(()),
        };
    }
    std::fs::write(path, bytes).map_err(|e| ProfileError::Write { path: path.to_path_buf(), source: e })
}

/// Render and write every destination, in order.
pub fn write_all(
    destinations: &[Destination],
    profile: &Profile,
    report: &Report,
    title: &str,
) -> Result<(), ProfileError> {
    for d in destinations {
        write(&d.path, &render(d.format, profile, report, title)?)?;
    }
    Ok(())
}
