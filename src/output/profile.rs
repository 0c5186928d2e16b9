//! Writing a profile's exports (`--flamegraph`, `--pprof`, `--speedscope`, …) to their
//! files or to stdout.

use perflab_profile::error::ProfileError;
use perflab_profile::format::Profile;
use perflab_profile::report::Report;
use perflab_render::profile::export::Destination;
use perflab_render::profile::flame::FlameOptions;
use std::path::Path;

/// Write bytes to a file or to stdout (`-`, through `output::stdout`: a failing stdout
/// never panics, its failure is reported once the command is done).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), ProfileError> {
    if path == Path::new("-") {
        super::stdout::write_bytes(bytes);
        return Ok(());
    }
    std::fs::write(path, bytes).map_err(|e| ProfileError::Write { path: path.to_path_buf(), source: e })
}

/// Render and write every destination: the files first, each on its own, then stdout,
/// so that a broken stdout (`| head`) or one unwritable file loses none of the others;
/// the first failure is returned.
pub fn write_all(
    destinations: &[Destination],
    profile: &Profile,
    report: &Report,
    title: &str,
    flame: &FlameOptions,
) -> Result<(), ProfileError> {
    let mut ordered: Vec<&Destination> = destinations.iter().collect();
    ordered.sort_by_key(|d| d.to_stdout());
    let mut first_failure = None;
    for d in ordered {
        if let Err(e) = perflab_render::profile::export::render(d.format, profile, report, title, flame)
            .and_then(|bytes| write(&d.path, &bytes))
        {
            first_failure.get_or_insert(e);
        }
    }
    first_failure.map_or(Ok(()), Err)
}
