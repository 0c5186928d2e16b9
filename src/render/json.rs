//! The JSON rendering: the [`Experiment`] as documented in docs/json-schema.md.

use crate::error::Failure;
use crate::model::Experiment;
use std::io::Write;

/// Serialize with non-finite numbers (an interval that does not exist yet) as null.
pub fn write(experiment: &Experiment, path: &str) -> Result<(), Failure> {
    let mut out = super::open_output(path)?;
    serde_json::to_writer_pretty(&mut out, experiment).map_err(|e| Failure::Other(e.into()))?;
    writeln!(out).and_then(|_| out.flush()).map_err(|e| crate::usage!("cannot write `{path}`: {e}"))
}
