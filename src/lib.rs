//! perflab — a performance lab for native code on Linux.
//!
//! The folders follow the pipelines:
//!
//! * experiments: [`plan`] (commands, settings, `plan::schedule`) → [`experiment`] (the
//!   engine) → [`executor`] (spawn and wait, with the probes of [`measure`]) →
//!   [`analysis`] ([`stats`], verdicts) → [`render`]; [`suite`] runs a suite file's
//!   benchmarks through it (and bisects a commit range), [`doctor`] checks the machine;
//! * profiles: [`profile::record`] (sample) → [`profile::symbolize`] →
//!   [`profile::aggregate`] → [`profile::annotate`];
//! * history: [`store`] → [`history`] → [`report`]; [`fleet`] queues suites for many
//!   machines sharing one store and runs them there.
//!
//! [`model`] is the one data model all of them share; [`units`] parses and formats
//! numbers with units; [`files`] opens the files data names (regular files only);
//! [`machine`] fingerprints the machine; [`error`] maps failures to the documented exit
//! codes. [`cli`] is the command line, the only module that knows clap.

pub use perflab_engine::analysis;
pub mod cli;
pub use perflab_engine::doctor;
pub mod error;
pub mod output;
pub use perflab_engine::executor;
pub use perflab_engine::experiment;
pub use perflab_engine::measure;
pub use perflab_engine::plan;
pub use perflab_model as model;
pub use perflab_model::units;
pub use perflab_profile as profile;
pub use perflab_render as render;
pub use perflab_render::report;
pub use perflab_stats as stats;
pub use perflab_store as store;
pub use perflab_store::history;
pub use perflab_suite as suite;
pub use perflab_suite::fleet;
pub use perflab_sys::files;
pub use perflab_sys::interrupt;
pub use perflab_sys::machine;
pub use perflab_sys::parallel;
