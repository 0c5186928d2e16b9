//! perflab — a performance lab for native code on Linux.
//!
//! The modules follow the pipelines:
//!
//! * compare: [`command`] → [`spawn`] → [`schedule`] → [`measure`] → [`stats`] →
//!   [`verdict`] → [`render`], driven by [`compare`];
//! * profile: `profile::sample` → `profile::symbolize` → `profile::aggregate` →
//!   `profile::annotate`;
//! * history: `store` → `history` → `report`.
//!
//! [`model`] is the one data model all of them share; [`error`] maps failures to the
//! documented exit codes; [`cli`] is the command line.

pub mod cli;
pub mod command;
pub mod compare;
pub mod error;
pub mod history;
pub mod interrupt;
pub mod machine;
pub mod measure;
pub mod model;
pub mod render;
pub mod report;
pub mod stats;
pub mod store;
pub mod suite;




