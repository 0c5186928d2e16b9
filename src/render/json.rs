//! The one JSON writer: every `--json FILE` (`-` for stdout) of every command goes
//! through [`write`], pretty-printed and ending in a newline. Non-finite numbers (an
//! interval that does not exist yet) are written as null by serde_json.

use crate::error::Failure;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// Write `value` as pretty JSON to `path` (`-` is stdout).
pub fn write(path: impl AsRef<Path>, value: &impl Serialize) -> Result<(), Failure> {
    let path = path.as_ref();
    let mut out = super::open_output(path)?;
    serde_json::to_writer_pretty(&mut out, value)
        .map_err(|e| crate::usage!("cannot write `{}`: {e}", path.display()))?;
    writeln!(out).and_then(|_| out.flush()).map_err(|e| crate::usage!("cannot write `{}`: {e}", path.display()))
}
