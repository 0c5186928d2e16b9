//! perflab's JSON: every `--json FILE` (`-` for stdout) of every command is its result
//! serialized as it is (docs/json-schema.md), pretty-printed and ending in a newline.
//! Non-finite numbers (an interval that does not exist yet) are written as null by
//! serde_json.

use super::export::Exporter;
use super::OutputError;
use serde::Serialize;

/// The JSON exporter of any serializable result.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

impl<R: Serialize + ?Sized> Exporter<R> for Json {
    fn render(&self, result: &R) -> Result<String, OutputError> {
        to_string(result)
    }
}

/// `value` as pretty JSON ending in a newline.
pub fn to_string(value: &(impl Serialize + ?Sized)) -> Result<String, OutputError> {
    serde_json::to_string_pretty(value).map(|text| text + "\n").map_err(OutputError::Json)
}
