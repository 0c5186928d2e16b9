//! A profile from a file, whichever kind it is: perflab's own (`perflab profile -o`) or
//! a `perf record` perf.data file (told apart by its magic bytes), with the warnings
//! reading it gave.

use super::error::ProfileError;
use super::format::Profile;
use super::record::perf_data;
use std::path::Path;

/// A loaded profile and what the user should know about how it was read.
pub struct Loaded {
    /// The profile.
    pub profile: Profile,
    /// What the user should know about how it was read, one line each.
    pub warnings: Vec<String>,
}

/// Load `path`; `event` picks the samples of one event of a perf.data file with several
/// (a perflab profile has one event: naming another is an error).
pub fn load(path: &Path, event: Option<&str>) -> Result<Loaded, ProfileError> {
    if perf_data::is_perf_data(path) {
        let data = perf_data::read(path, event)?;
        return Ok(Loaded { profile: data.profile, warnings: data.warnings });
    }
    let profile = Profile::load(path)?;
    if let Some(event) = event.filter(|e| *e != profile.event) {
        return Err(ProfileError::Option(format!(
            "{} has samples of {} only, not of {event}",
            path.display(),
            profile.event
        )));
    }
    Ok(Loaded { profile, warnings: Vec::new() })
}
