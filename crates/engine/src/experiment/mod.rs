//! The experiment engine, shared by `compare`, `stat`, `run` and `bisect`: a [`Plan`]
//! (commands, settings, metrics) is run by [`run_experiment`] in randomized interleaved
//! rounds through an [`Executor`](crate::executor::Executor) — real processes, or a
//! [`Simulated`](crate::executor::simulated::Simulated) machine — while [`Observer`]s
//! watch, and [`crate::analysis`] turns the runs into summaries, verdicts and warnings.
//! Nothing here knows the command line.
//!
//! plan → schedule (rounds, looks) → executor (spawn, measure) → analysis
//! (stats, verdict, multiplicity, cross-check).

pub mod engine;
pub mod error;
pub mod observer;

pub use engine::run_experiment;
pub use observer::{Fanout, Observer, Progress, Quiet};

use crate::executor::ProcessExecutor;
use crate::plan::Plan;
pub use error::ExperimentError;
use perflab_model::Experiment;

/// The executor [`run`] uses: every run of `plan` a real process on this machine. For a
/// caller that drives the experiment itself ([`run_experiment`]), e.g. a suite's budget
/// interleaving many experiments' rounds.
pub fn process_executor(plan: &Plan) -> Result<Box<dyn crate::executor::Executor>, ExperimentError> {
    Ok(Box::new(ProcessExecutor::new(plan)?))
}

/// Run `plan` as real processes on this machine, telling `observer` when it starts and
/// ends (also when it cannot start).
pub fn run(plan: &Plan, observer: &mut dyn Observer) -> Result<Experiment, ExperimentError> {
    observer.experiment_started(plan);
    let result = ProcessExecutor::new(plan)
        .map_err(ExperimentError::from)
        .and_then(|mut executor| run_experiment(plan, &mut executor, observer));
    observer.experiment_finished();
    result
}
