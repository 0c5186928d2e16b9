//! Watching an experiment as it runs: a callback when it starts and ends (to show and
//! clear a progress display), after every measured run (to commit it, write a CSV row)
//! and after every round (to show progress). Called between runs only, so the harness
//! stays idle while a command runs.

use crate::plan::Plan;
use perflab_model::{Comparison, Promise, Run};
use std::time::Duration;

/// Where the experiment stands after a round (for progress displays).
#[derive(Debug, Clone)]
pub struct Progress {
    /// Measured rounds completed (0 while warming up).
    pub rounds: u32,
    /// True while warm-up rounds run.
    pub warmup: bool,
    /// Time since the experiment started.
    pub elapsed: Duration,
    /// Primary-metric comparisons of the latest look, if any.
    pub latest: Vec<Comparison>,
}

/// Callbacks while an experiment runs.
pub trait Observer {
    /// The experiment of `plan` is about to start (before its commands are prepared).
    fn experiment_started(&mut self, _plan: &Plan) {}
    /// It ended, however it ended.
    fn experiment_finished(&mut self) {}
    /// A measured (not warm-up) run finished; `command` indexes `Plan::commands`.
    fn run_finished(&mut self, _command: usize, _run: &Run) -> anyhow::Result<()> {
        Ok(())
    }
    /// A round (warm-up or measured) finished.
    fn round_finished(&mut self, _progress: &Progress) {}
    /// A `--budget` said what it can resolve, after its first look.
    fn promised(&mut self, _promise: &Promise) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

/// Forwards every callback to several observers.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Fanout<'_> {
    fn experiment_started(&mut self, plan: &Plan) {
        self.0.iter_mut().for_each(|o| o.experiment_started(plan));
    }
    fn experiment_finished(&mut self) {
        self.0.iter_mut().for_each(|o| o.experiment_finished());
    }
    fn run_finished(&mut self, command: usize, run: &Run) -> anyhow::Result<()> {
        self.0.iter_mut().try_for_each(|o| o.run_finished(command, run))
    }
    fn round_finished(&mut self, progress: &Progress) {
        self.0.iter_mut().for_each(|o| o.round_finished(progress));
    }
    fn promised(&mut self, promise: &Promise) {
        self.0.iter_mut().for_each(|o| o.promised(promise));
    }
}
