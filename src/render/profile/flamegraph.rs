//! `--flamegraph FILE`: perflab's interactive SVG flame graph.

use super::exporter::{ExportInput, Exporter};
use crate::profile::error::ProfileError;
use crate::profile::flame;

pub struct FlameGraph;

impl Exporter for FlameGraph {
    fn flag(&self) -> &'static str {
        "--flamegraph"
    }

    fn needs_stacks(&self) -> bool {
        true
    }

    fn encode(&self, input: &ExportInput) -> Result<Vec<u8>, ProfileError> {
        // Without samples there is nothing to draw; say so in the picture rather than fail.
        Ok(input
            .report
            .graph
            .as_ref()
            .and_then(|g| flame::call_graph_svg(input.profile, g, input.title))
            .unwrap_or_else(|| flame::empty_svg(input.title, "no samples"))
            .into_bytes())
    }
}
