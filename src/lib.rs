//! perflab — a performance lab for native code on Linux.
//!
//! The modules follow the pipelines:
//!
//! * experiments: [`command`] → [`experiment`] (plan → [`experiment::schedule`] →
//!   executor: [`spawn`] + [`measure`] → analysis: [`stats`], [`verdict`]) → [`render`];
//!   [`suite`] runs a suite file's benchmarks through it, [`bisect`] a commit range;
//! * profiles: [`profile::record`] (sample) → [`profile::symbolize`] →
//!   [`profile::aggregate`] → [`profile::annotate`];
//! * history: [`store`] → [`history`] → [`report`]; [`fleet`] queues suites for many
//!   machines sharing one store and runs them there.
//!
//! [`model`] is the one data model all of them share; [`units`] parses and formats
//! numbers with units; [`error`] maps failures to the documented exit codes. [`cli`] is
//! the command line, the only module that knows clap.

pub mod bisect;
pub mod cli;
pub mod command;
pub mod contention;
pub mod doctor;
pub mod error;
pub mod experiment;
pub mod fleet;
pub mod history;
pub mod interrupt;
pub mod machine;
pub mod measure;
pub mod model;
pub mod parallel;
pub mod profile;
pub mod render;
pub mod report;
pub mod spawn;
pub mod spawner;
pub mod stats;
pub mod store;
pub mod suite;
pub mod units;
pub mod verdict;
