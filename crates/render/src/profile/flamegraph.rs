//! `--flamegraph FILE`: perflab's interactive SVG flame graph.

use super::exporter::{ExportInput, ProfileExporter};
use crate::profile::flame;
use perflab_profile::error::ProfileError;

pub struct FlameGraph;

impl ProfileExporter for FlameGraph {
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
            .and_then(|g| flame::call_graph_svg_with(input.profile, g, input.title, input.flame))
            .unwrap_or_else(|| {
                let why = match &input.flame.focus {
                    Some(f) => format!("no samples through {f}"),
                    None => "no samples".to_string(),
                };
                flame::empty_svg(input.title, &why)
            })
            .into_bytes())
    }
}
