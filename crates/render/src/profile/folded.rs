//! `--folded FILE`: Brendan Gregg's folded stacks (`a;b;c weight`), read by
//! flamegraph.pl, inferno and speedscope.

use super::exporter::{ExportInput, ProfileExporter};
use perflab_profile::error::ProfileError;

pub struct Folded;

impl ProfileExporter for Folded {
    fn flag(&self) -> &'static str {
        "--folded"
    }

    fn needs_stacks(&self) -> bool {
        true
    }

    fn encode(&self, input: &ExportInput) -> Result<Vec<u8>, ProfileError> {
        // A -g run without samples still gets its (empty) folded file.
        Ok(input.report.graph.as_ref().map(|g| g.folded()).unwrap_or_default().into_bytes())
    }
}
