//! perflab — a performance lab for native code on Linux.
//!
//! The modules follow the pipelines:
//!
//! * compare: [`command`] → [`spawn`] → [`schedule`] → [`measure`] → [`stats`] →
//!   [`verdict`] → [`render`], driven by [`compare`];
//! * profile: [`profile::record`] (sample) → [`profile::symbolize`] →
//!   [`profile::aggregate`] → [`profile::annotate`];
//! * history: `store` → `history` → `report`.
//!
//! [`model`] is the one data model all of them share; [`error`] maps failures to the
//! documented exit codes; [`cli`] is the command line.

pub mod bisect;
pub mod cli;
pub mod command;
pub mod compare;
pub mod error;
pub mod history;
pub mod interrupt;
pub mod machine;
pub mod measure;
pub mod model;
pub mod profile;
pub mod render;
pub mod report;
pub mod run;
pub mod schedule;
pub mod spawn;
pub mod stat;
pub mod stats;
pub mod store;
pub mod suite;
pub mod verdict;
