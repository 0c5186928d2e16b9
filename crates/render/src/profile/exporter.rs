//! The one interface every output file format of `profile` and `show` implements
//! (hyperfine's exporter pattern): given the profile and its report, the file's bytes.

use perflab_profile::error::ProfileError;
use perflab_profile::format::Profile;
use perflab_profile::report::Report;

/// What an exporter is given: the profile, the report made from it, and the title that
/// heads pictures and names viewers' tabs.
pub struct ExportInput<'a> {
    pub profile: &'a Profile,
    pub report: &'a Report,
    pub title: &'a str,
    /// How flame graphs are drawn (view, focus, merged thin frames).
    pub flame: &'a crate::profile::flame::FlameOptions,
}

/// One output file format.
pub trait ProfileExporter: Sync {
    /// The option that asks for it (`--pprof`).
    fn flag(&self) -> &'static str;

    /// Whether it is made of call stacks only (refused for a profile without them).
    fn needs_stacks(&self) -> bool {
        false
    }

    /// The file's bytes.
    fn encode(&self, input: &ExportInput) -> Result<Vec<u8>, ProfileError>;
}
