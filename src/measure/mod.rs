//! Measurement beyond what `wait4` gives: counters (perf_event_open) and simulators
//! (valgrind). Each is a [`Probe`] that the spawner calls around every run.

use crate::model::Run;
use clap::{Args, ValueEnum};

/// What a run measures, chosen on the command line of `compare` and `stat`.
#[derive(Debug, Clone, Args, Default)]
pub struct MeasureArgs {
    /// Counters to read per run via perf_event_open (comma-separated perf names,
    /// e.g. cycles,instructions,branch-misses,task-clock,page-faults).
    #[arg(short = 'e', long = "events", value_delimiter = ',', value_name = "EVENTS")]
    pub events: Vec<String>,
    /// wall: time each run natively; instructions: run under valgrind cachegrind.
    #[arg(long, value_enum, default_value_t = Mode::Wall)]
    pub mode: Mode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Mode {
    #[default]
    Wall,
    Instructions,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Wall => "wall",
            Mode::Instructions => "instructions",
        }
    }
}

/// The probes a run needs for these options (one set per command).
pub fn build_probes(args: &MeasureArgs) -> Result<Vec<Box<dyn Probe>>, crate::error::Failure> {
    if !args.events.is_empty() || args.mode != Mode::Wall {
        return Err(crate::usage!("counters (-e) and --mode instructions are not available yet"));
    }
    Ok(Vec::new())
}

/// Something that measures a run beyond wall time and rusage.
///
/// The spawner calls, per run: [`Probe::wrap`] once when the command is prepared,
/// then [`Probe::attach`] with the child's pid while the child is held before
/// `execve` (only when [`Probe::needs_gate`]), then [`Probe::collect`] after the
/// child was reaped.
pub trait Probe {
    /// Rewrite the argument vector before it is prepared (e.g. prefix valgrind).
    fn wrap(&self, argv: Vec<String>) -> anyhow::Result<Vec<String>> {
        Ok(argv)
    }
    /// True when [`Probe::attach`] must run between fork and exec.
    fn needs_gate(&self) -> bool {
        false
    }
    /// Called with the child's pid while it waits to exec; counting must start at exec.
    fn attach(&mut self, _pid: libc::pid_t) -> anyhow::Result<()> {
        Ok(())
    }
    /// Called after the child was reaped: add this probe's readings to `run`.
    fn collect(&mut self, run: &mut Run) -> anyhow::Result<()>;
}
