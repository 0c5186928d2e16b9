//! The kinds of record a recording is made of — samples, mappings, task lifecycle,
//! context switches, losses — as the converter consumes them, whichever source they came
//! from; and their parsing out of a perf ring buffer record (perf-event2's visitor).

use super::super::unwind::UserStack;
use perf_event::data::{self as pdata, RecordMetadata, Visitor};

const PERF_RECORD_MISC_COMM_EXEC: u16 = 1 << 13;
const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
const PERF_RECORD_MISC_KERNEL: u16 = 1;
const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;
const PERF_RECORD_MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
/// Callchain entries at or above this (PERF_CONTEXT_MAX = -4095) are context markers.
pub(crate) const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
pub(crate) const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
pub(crate) const PERF_CONTEXT_USER: u64 = -512i64 as u64;

/// One record, kept until the recording ends so records from all CPUs can be merged by
/// timestamp.
#[derive(Debug, Clone)]
pub(crate) enum Record {
    Sample {
        pid: u32,
        tid: u32,
        ip: u64,
        period: u64,
        kernel: bool,
        /// The raw callchain with its context markers; empty without `-g`. With
        /// `-g dwarf` the kernel supplies only kernel frames, and the user frames
        /// unwound from the stack copy are appended after a `PERF_CONTEXT_USER` marker.
        chain: Vec<u64>,
    },
    /// A `Sample` or `SwitchedOut` with its user registers and stack copy (`-g dwarf`)
    /// until it is unwound into that record with the unwound frames.
    StackSample(Box<Record>, UserStack),
    Mmap {
        pid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: String,
    },
    Comm {
        pid: u32,
        tid: u32,
        comm: String,
        exec: bool,
    },
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
    },
    /// A process (pid == tid) or thread exited.
    Exit {
        pid: u32,
        tid: u32,
    },
    Lost(u64),
    /// A thread leaving the CPU (a context-switch sample), with its call chain (like a
    /// `Sample`'s, user frames appended after unwinding with `-g dwarf`).
    SwitchedOut {
        pid: u32,
        tid: u32,
        ip: u64,
        chain: Vec<u64>,
    },
    /// PERF_RECORD_SWITCH(_CPU_WIDE) for the thread in its sample id: `out` when it
    /// leaves the CPU, `preempted` when it left still runnable.
    Switch {
        tid: u32,
        out: bool,
        preempted: bool,
    },
}

/// The header of a ring record: perf-event2 hands the record out without it, and its
/// parser wants one.
pub(crate) fn header_of(record: &perf_event::Record<'_>) -> perf_event_open_sys::bindings::perf_event_header {
    perf_event_open_sys::bindings::perf_event_header {
        type_: record.ty(),
        misc: record.misc(),
        size: (record.len() + std::mem::size_of::<perf_event_open_sys::bindings::perf_event_header>()) as u16,
    }
}

/// A record with its timestamp (0 for what existed before the events were opened).
pub(crate) type Timed = (u64, Record);

/// Turns ring records into [`Record`]s; samples of an off-CPU ring are switch-outs.
pub(crate) struct Collect {
    pub off_cpu: bool,
    /// The period of a sample without PERF_SAMPLE_PERIOD (recorded with a fixed period).
    pub fixed_period: u64,
}

impl Collect {
    /// For the records other than samples (mappings, tasks, losses) of any ring.
    pub(crate) const TASKS_AND_MAPPINGS: Collect = Collect { off_cpu: false, fixed_period: 1 };
}

impl<'a> Visitor<'a> for Collect {
    type Output = Option<Timed>;

    fn visit_unimplemented(self, _: RecordMetadata) -> Self::Output {
        None
    }
    fn visit_sample(self, s: pdata::Sample<'a>, meta: RecordMetadata) -> Self::Output {
        let kernel = meta.misc() & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL;
        let chain = s.callchain().map(<[u64]>::to_vec).unwrap_or_default();
        let record = if self.off_cpu {
            Record::SwitchedOut { pid: s.pid()?, tid: s.tid()?, ip: s.ip()?, chain }
        } else {
            Record::Sample {
                pid: s.pid()?,
                tid: s.tid()?,
                ip: s.ip()?,
                period: s.period().unwrap_or(self.fixed_period),
                kernel,
                chain,
            }
        };
        let record = match s.regs_user().and_then(|r| UserStack::new(&r.regs, s.stack_user().unwrap_or_default())) {
            Some(stack) => Record::StackSample(Box::new(record), stack),
            None => record,
        };
        Some((s.time().unwrap_or(0), record))
    }
    fn visit_mmap2(self, m: pdata::Mmap2<'a>, meta: RecordMetadata) -> Self::Output {
        let path = String::from_utf8_lossy(&m.filename).into_owned();
        let record = Record::Mmap { pid: m.pid, start: m.addr, len: m.len, pgoff: m.pgoff, path };
        Some((meta.sample_id().time().unwrap_or(0), record))
    }
    fn visit_comm(self, c: pdata::Comm<'a>, meta: RecordMetadata) -> Self::Output {
        let exec = meta.misc() & PERF_RECORD_MISC_COMM_EXEC != 0;
        let record = Record::Comm { pid: c.pid, tid: c.tid, comm: String::from_utf8_lossy(&c.comm).into_owned(), exec };
        Some((meta.sample_id().time().unwrap_or(0), record))
    }
    fn visit_exit(self, e: pdata::Exit, _: RecordMetadata) -> Self::Output {
        Some((e.time, Record::Exit { pid: e.pid, tid: e.tid }))
    }
    fn visit_fork(self, f: pdata::Fork, _: RecordMetadata) -> Self::Output {
        Some((f.time, Record::Fork { pid: f.pid, ppid: f.ppid, tid: f.tid }))
    }
    fn visit_lost(self, l: pdata::Lost, meta: RecordMetadata) -> Self::Output {
        Some((meta.sample_id().time().unwrap_or(0), Record::Lost(l.lost)))
    }
    fn visit_switch_cpu_wide(self, _: pdata::SwitchCpuWide, meta: RecordMetadata) -> Self::Output {
        switch(&meta)
    }
}

/// A switch record describes the task in its sample id (the one leaving or arriving).
pub(crate) fn switch(meta: &RecordMetadata) -> Option<Timed> {
    let out = meta.misc() & PERF_RECORD_MISC_SWITCH_OUT != 0;
    let preempted = meta.misc() & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0;
    let id = meta.sample_id();
    Some((id.time()?, Record::Switch { tid: id.tid()?, out, preempted }))
}
