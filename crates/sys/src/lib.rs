//! The ground floor of perflab: system primitives that know nothing of experiments,
//! statistics or output formats.
//!
//! * [`command`]: a benchmarked command line — templates, shell syntax, words, the
//!   program resolved on PATH;
//! * [`spawn`]: starting one command and measuring that process (wall time, rusage,
//!   run-queue wait);
//! * [`perf`]: perf_event_open — perf's event syntax and counters opened on a run;
//! * [`interrupt`] (Ctrl-C and SIGTERM as something to wait on), [`files`] (regular
//!   files only), [`parallel`], [`machine`] (the fingerprint's facts), [`text`]
//!   (escaping for a terminal) and [`exit`] (the documented exit codes).
//!
//! May use: `perflab-model` (the records it fills) and outside crates only.

#![deny(missing_docs)]

pub mod command;
pub mod exit;
pub mod files;
pub mod interrupt;
pub mod machine;
pub mod panic_guard;
pub mod parallel;
pub mod perf;
pub mod spawn;
pub mod text;
