//! `--json FILE`: the flat report as JSON (its fields in docs/profiling.md).

use super::exporter::{ExportInput, ProfileExporter};
use perflab_profile::error::ProfileError;

/// The `--json` exporter.
pub struct Json;

impl ProfileExporter for Json {
    fn flag(&self) -> &'static str {
        "--json"
    }

    fn encode(&self, input: &ExportInput) -> Result<Vec<u8>, ProfileError> {
        let mut bytes = serde_json::to_vec_pretty(&input.report.flat)
            .map_err(|e| ProfileError::Export { format: "JSON", why: e.to_string() })?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
