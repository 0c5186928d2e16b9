//! The files a profile report is written as, each a [`Format`] sent to a file or to
//! stdout (`-`), in the spirit of hyperfine's exporters: every format implements
//! `ProfileExporter` in its own module — the `--json` report ([`super::json`]),
//! folded stacks (`super::folded`), the SVG flame graph (`super::flamegraph`) and the viewers'
//! formats: the Firefox Profiler (`super::firefox`), speedscope (`super::speedscope`)
//! and pprof (`super::pprof`).

use super::exporter::{ExportInput, ProfileExporter};
use crate::profile::flame::FlameOptions;
use perflab_profile::error::ProfileError;
use perflab_profile::format::Profile;
use perflab_profile::report::Report;
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
    /// The Firefox Profiler's processed format (JSON).
    Firefox,
    /// speedscope's file format (JSON).
    Speedscope,
    /// pprof's profile.proto, gzipped.
    Pprof,
}

impl Format {
    /// The exporter that writes it.
    pub fn exporter(self) -> &'static dyn ProfileExporter {
        match self {
            Format::Json => &super::json::Json,
            Format::Folded => &super::folded::Folded,
            Format::FlameGraph => &super::flamegraph::FlameGraph,
            Format::Firefox => &super::firefox::Firefox,
            Format::Speedscope => &super::speedscope::Speedscope,
            Format::Pprof => &super::pprof::Pprof,
        }
    }

    /// The option that asks for it.
    pub fn flag(self) -> &'static str {
        self.exporter().flag()
    }

    /// Whether it is made of call stacks (refused for a profile without them).
    pub fn needs_stacks(self) -> bool {
        self.exporter().needs_stacks()
    }
}

/// A format and where it goes (`-`: stdout).
#[derive(Debug, Clone, PartialEq)]
pub struct Destination {
    /// The format.
    pub format: Format,
    /// The file; `-` for standard output.
    pub path: PathBuf,
}

impl Destination {
    /// True when it goes to standard output.
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

/// The bytes of `format` for a report of `profile`; `title` heads the pictures, `flame`
/// says how flame graphs are drawn.
pub fn render(
    format: Format,
    profile: &Profile,
    report: &Report,
    title: &str,
    flame: &FlameOptions,
) -> Result<Vec<u8>, ProfileError> {
    format.exporter().encode(&ExportInput { profile, report, title, flame })
}
