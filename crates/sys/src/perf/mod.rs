//! perf_event_open for a measured run: perf's event syntax ([`event`]) and the counters
//! opened on a run from its `exec` ([`counters`]), each a [`Probe`] the spawner calls
//! around the run ([`kernel_only`] says why a kernel-only event counted nothing); [`uprobe`] places probes on user functions for `-e uprobe:…`.

pub mod counters;
pub mod event;
pub mod kernel_only;
mod tracefs;
pub mod uprobe;
pub mod uprobe_cost;

use perflab_model::Run;

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
