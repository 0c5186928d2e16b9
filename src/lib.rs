//! perflab — a performance lab for native code on Linux.
//!
//! The folders follow the pipelines:
//!
//! * experiments: [`plan`] (commands, settings, [`plan::schedule`]) → [`experiment`] (the
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

pub mod analysis;
pub mod cli;
pub mod doctor;
pub mod error;
pub mod executor;
pub mod experiment;
pub mod files;
pub mod fleet;
pub mod history;
pub mod interrupt;
pub mod machine;
pub mod measure;
pub mod model;
pub mod panic_guard;
pub mod parallel;
pub mod plan;
pub mod profile;
pub mod render;
pub mod report;
pub mod stats;
pub mod store;
pub mod suite;
pub mod units;
