//! The allocation probe of `compare --explain-alloc`: every measured run is also watched
//! by `profile --alloc`'s uprobes on the malloc family (and any custom allocator), from
//! the held child's exec to its exit, and its allocating calls are named per call site
//! right after the run — while the compared binaries are there — into the run's
//! [`RunProfile`], weighed as bytes requested, calls, or bytes still live at exit. Every
//! run of both commands carries the same probes, so probed and unprobed runs are never
//! compared, and the traps cost the same per call on both sides.

use super::Probe;
use perflab_model::{Run, RunProfile};
use perflab_profile::alloc::view::{self, AllocView};
use perflab_profile::alloc::{AllocOptions, AllocProbes, Custom, Watching};
use perflab_profile::symbolize::Symbolizer;

/// What `--explain-alloc` watches and weighs.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocations {
    /// What a call site's value per run is.
    pub weight: AllocView,
    /// Allocators and release functions beside the C library's.
    pub custom: Vec<Custom>,
    /// Probe the C library's malloc family too.
    pub libc: bool,
}

impl Default for Allocations {
    fn default() -> Allocations {
        Allocations { weight: AllocView::Bytes, custom: Vec::new(), libc: true }
    }
}

/// True for the event of an allocation explanation (each of its "samples" is a call, all
/// of them seen: few are a small count, not a wide interval).
pub fn is_allocation_event(event: &str) -> bool {
    AllocView::NAMES.iter().any(|name| name.parse::<AllocView>().is_ok_and(|v| v.event() == event))
}

/// Watches every run of one command.
pub(crate) struct AllocationProbe {
    weight: AllocView,
    /// Placed once per command: symbols are looked up before any run is timed.
    probes: AllocProbes,
    argv: Vec<String>,
    watching: Option<Watching>,
    /// Kept across runs: each object is read and indexed once per experiment.
    symbolizer: Symbolizer,
}

impl AllocationProbe {
    pub fn new(
        allocations: &Allocations,
        argv: &[String],
    ) -> Result<AllocationProbe, perflab_profile::alloc::AllocError> {
        let options = AllocOptions {
            argv: argv.to_vec(),
            output: perflab_sys::spawn::process::Output::Discard,
            every: 1,
            // The probes are opened on every run's held child: uprobes.
            via: perflab_profile::alloc::Via::Uprobes,
            sample_bytes: None,
            // DWARF stacks: the compared builds need no frame pointers, and the call site is
            // exact (the return address on top of the stack).
            stacks: perflab_profile::alloc::source::Stacks::Dwarf {
                stack_bytes: perflab_profile::alloc::DEFAULT_STACK_BYTES,
            },
            stacks_asked: false,
            custom: allocations.custom.clone(),
            libc: allocations.libc,
            pids: Vec::new(),
            duration: None,
            progress: None,
        };
        Ok(AllocationProbe {
            weight: allocations.weight,
            probes: AllocProbes::place(&options)?,
            argv: argv.to_vec(),
            watching: None,
            symbolizer: Symbolizer::default(),
        })
    }
}

impl Probe for AllocationProbe {
    fn needs_gate(&self) -> bool {
        true
    }

    fn attach(&mut self, pid: libc::pid_t) -> anyhow::Result<()> {
        let watching = self
            .probes
            .attach(pid)
            .map_err(|e| anyhow::anyhow!("the allocation probes could not be opened on the run: {e}"))?;
        self.watching = Some(watching);
        Ok(())
    }

    fn collect(&mut self, run: &mut Run) -> anyhow::Result<()> {
        if let Some(watching) = self.watching.take() {
            let profile = self.probes.profile(watching, &self.argv);
            run.profile = Some(Box::new(run_profile(&profile, self.weight, &mut self.symbolizer)));
        }
        Ok(())
    }
}

/// A run's allocating calls per call site weighed as `weight`, with the other of calls
/// and bytes kept beside as a count (a site's "samples" are its calls).
fn run_profile(
    profile: &perflab_profile::format::Profile,
    weight: AllocView,
    symbolizer: &mut Symbolizer,
) -> RunProfile {
    let mut out = super::sampling::run_profile(&view::view(profile, weight), symbolizer);
    out.event = weight.event().to_string();
    let (kept, name) = match weight {
        AllocView::Bytes => (true, "calls"),
        AllocView::Calls => (false, "bytes"),
        AllocView::Live => return out,
    };
    let bytes = if kept { None } else { Some(super::sampling::run_profile(profile, symbolizer)) };
    let other: std::collections::BTreeMap<_, _> = match &bytes {
        None => out.functions.iter().map(|(key, &(calls, _))| (key.clone(), calls)).collect(),
        Some(bytes) => bytes.functions.iter().map(|(key, &(_, b))| (key.clone(), b)).collect(),
    };
    out.counts.insert(name.to_string(), other);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weights_events_are_allocation_events() {
        for name in AllocView::NAMES {
            assert!(is_allocation_event(name.parse::<AllocView>().unwrap().event()), "{name}");
        }
        assert!(!is_allocation_event("cpu-clock"));
        assert!(!is_allocation_event("uprobe:libc.so.6:malloc"));
    }
}
