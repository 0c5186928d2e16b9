//! The experiment engine, shared by `compare`, `stat`, suites, `bisect` and `doctor`:
//!
//! [`plan`] (commands, settings, the schedule of rounds and looks) → [`experiment`] (the
//! rounds) → [`executor`] (one command run once, real or [simulated](executor::simulated))
//! with the probes of [`measure`] (counters, valgrind, printed metrics, the explaining
//! sampler) → [`analysis`] (summaries, paired statistics, verdicts, explanations);
//! [`doctor`] checks the machine and calibrates its noise.
//!
//! May use: `perflab-sys`, `perflab-stats`, `perflab-model`, `perflab-profile`. Knows
//! nothing of the command line, the store or output formats.

#![deny(missing_docs)]

pub mod analysis;
pub mod doctor;
pub mod executor;
pub mod experiment;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod layouts_auto;
pub mod layouts_auto_simulated;
pub mod measure;
pub mod plan;
