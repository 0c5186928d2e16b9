//! Where results go: standard output (written so a closed or full stdout never panics
//! and never costs a file) and the files the options name. The only module of perflab
//! that writes what the user reads.

pub mod outputs;
pub mod profile;
pub mod progress;
pub mod stdout;

pub use outputs::{check_writable, open_csv, write_file, write_json, write_to, AtomicFile, Outputs, Target};
