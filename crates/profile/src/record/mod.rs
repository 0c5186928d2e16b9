//! Sampling with perf_event_open, split like samply's recorder: the event `source`
//! (one sampling event per online CPU on a launched command — inherit + enable_on_exec,
//! so threads and children are followed and nothing before exec is sampled —, on every
//! thread of attached processes, or on every task, with mmap/comm/task tracking and,
//! with `--off-cpu`, context-switch samples in rings of their own) produces
//! `records`; a [`Session`] drains them while the target runs (with `-g dwarf`
//! unwinding each batch's stack copies at once); the `converter` interprets them in
//! time order so that every sample is normalised to (object, file offset) against the
//! address space it was taken in.

mod capture;
pub(crate) mod converter;
mod held;
pub mod jit;
mod objects;
pub(crate) mod perf_data;
mod perf_data_check;
pub(crate) mod records;
mod session;
mod source;
mod unwinding;

pub(crate) use held::stop_pipe;
pub use held::HeldRecording;
pub use session::{Session, SessionState};

use crate::error::ProfileError;
use crate::error::RecordError;
use perflab_sys::spawn::process::Output;

use crate::format::Profile;
use crate::unwind;
use std::time::Duration;

/// What a recording samples.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordingMode {
    /// Start a command, held until the events are open on it, and sample it from its
    /// exec until it exits; its output goes where `output` says.
    Launch {
        /// The command and its arguments.
        argv: Vec<String>,
        /// Where its output goes.
        output: Output,
    },
    /// Attach to running processes (every thread, and the tasks they start), until they
    /// exit, `duration` passes or Ctrl-C.
    Pids {
        /// The processes (`-p`).
        pids: Vec<u32>,
        /// How long to record; None: until they exit or Ctrl-C.
        duration: Option<Duration>,
    },
    /// Every task on every CPU, until `duration` passes or Ctrl-C.
    AllCpus {
        /// How long to record; None: until Ctrl-C.
        duration: Option<Duration>,
    },
}

/// How call chains are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallGraph {
    /// The sampled location alone.
    None,
    /// The kernel follows frame pointers while sampling.
    FramePointers,
    /// The top `stack_bytes` of the user stack is copied per sample and unwound from
    /// DWARF CFI.
    Dwarf {
        /// Bytes of user stack copied per sample.
        stack_bytes: u32,
    },
}

impl CallGraph {
    /// The call graph `-g MODE` asks for (None without `-g`).
    pub fn from_unwinding(unwinding: Option<unwind::Unwinding>, stack_bytes: u32) -> CallGraph {
        match unwinding {
            None => CallGraph::None,
            Some(unwind::Unwinding::FramePointers) => CallGraph::FramePointers,
            Some(unwind::Unwinding::Dwarf) => CallGraph::Dwarf { stack_bytes },
        }
    }
}

/// How `perflab profile` records.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordOptions {
    /// What is sampled.
    pub mode: RecordingMode,
    /// perf event name to sample (cpu-clock needs no PMU).
    pub event: String,
    /// Samples per second of each task's time (the kernel adapts the period).
    pub frequency_hz: u64,
    /// A sample every N events instead (`-c N`, like `perf record -c`); wins over
    /// `frequency_hz`. Tracepoints default to every event, as in perf.
    pub period: Option<u64>,
    /// How call chains are recorded.
    pub call_graph: CallGraph,
    /// Also record where threads block and for how long (implies call stacks).
    pub off_cpu: bool,
}

impl Default for RecordOptions {
    fn default() -> RecordOptions {
        RecordOptions {
            mode: RecordingMode::Launch { argv: Vec::new(), output: Output::Inherit },
            event: "cpu-clock".into(),
            frequency_hz: 997,
            period: None,
            call_graph: CallGraph::None,
            off_cpu: false,
        }
    }
}

impl RecordOptions {
    /// How long an attached or system-wide recording lasts (None: until its end or Ctrl-C).
    pub fn duration(&self) -> Option<Duration> {
        match &self.mode {
            RecordingMode::Launch { .. } => None,
            RecordingMode::Pids { duration, .. } | RecordingMode::AllCpus { duration } => *duration,
        }
    }

    /// Whether call stacks are recorded (asked for, or implied by `--off-cpu`).
    pub fn has_call_graph(&self) -> bool {
        self.call_graph != CallGraph::None || self.off_cpu
    }

    /// The same options with a launched command's output sent elsewhere.
    pub fn with_output(mut self, output: Output) -> RecordOptions {
        if let RecordingMode::Launch { output: launched, .. } = &mut self.mode {
            *launched = output;
        }
        self
    }

    /// What an attached or system-wide recording samples and until when, for the user.
    pub fn describe(&self) -> Option<String> {
        let what = match &self.mode {
            RecordingMode::Launch { .. } => return None,
            RecordingMode::Pids { pids, .. } => format!("PID {}", join(pids)),
            RecordingMode::AllCpus { .. } => "every CPU".to_string(),
        };
        let until = match self.duration() {
            Some(d) => format!("for {}", perflab_model::units::format_seconds(d.as_secs_f64())),
            None => "until Ctrl-C".to_string(),
        };
        Some(format!("sampling {what} {until}"))
    }

    fn check(&self) -> Result<(), RecordError> {
        match &self.mode {
            RecordingMode::Launch { argv, .. } if argv.is_empty() => return Err(RecordError::NothingToProfile),
            RecordingMode::Pids { pids, .. } if pids.is_empty() => return Err(RecordError::NoPids),
            _ => {}
        }
        if self.duration().is_some_and(|d| d.is_zero()) {
            return Err(RecordError::ZeroDuration);
        }
        match self.period {
            Some(0) => return Err(RecordError::ZeroPeriod),
            Some(_) => {}
            None if self.frequency_hz == 0 || self.frequency_hz > 100_000 => {
                return Err(RecordError::Frequency(self.frequency_hz))
            }
            None => {}
        }
        if let CallGraph::Dwarf { stack_bytes } = self.call_graph {
            if !cfg!(target_arch = "x86_64") {
                return Err(RecordError::DwarfNotHere);
            }
            if stack_bytes == 0 || stack_bytes > unwind::MAX_STACK_BYTES || stack_bytes % 8 != 0 {
                return Err(RecordError::StackSize { got: stack_bytes, max: unwind::MAX_STACK_BYTES });
            }
        }
        perflab_sys::perf::event::parse_one(&self.event)?;
        Ok(())
    }
}

/// What a recording produced; `interrupted` means the profile holds what was sampled
/// before Ctrl-C.
pub struct Recording {
    /// The samples.
    pub profile: Profile,
    /// True when Ctrl-C ended the recording.
    pub interrupted: bool,
}

/// How often records below the wake-up watermark are drained.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Run the command (or attach) under the sampler until it ends and build the profile.
pub fn record(opts: &RecordOptions) -> Result<Recording, ProfileError> {
    record_then(opts, || {})
}

/// [`record`], calling `started` once the sampler is open: a caller's "sampling …" line
/// is then never printed before an error saying the sampler could not be opened.
pub fn record_then(opts: &RecordOptions, started: impl FnOnce()) -> Result<Recording, ProfileError> {
    let interrupt = perflab_sys::interrupt::watcher();
    let mut session = Session::start(opts)?;
    started();
    let ending = loop {
        match session.poll(POLL_INTERVAL, interrupt) {
            SessionState::Running => {}
            ending => break ending,
        }
    };
    session.finish(ending, interrupt)
}

fn join(pids: &[u32]) -> String {
    pids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}
