//! What can go wrong recording, reading, annotating and exporting profiles, as typed
//! errors; the `perflab` binary maps them to exit codes (bad input: 2).

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ProfileError {
    /// `--callers`/`--callees`/`--symbol` named a function no stack or row has.
    #[error("no function named `{name}` in the {place} (names as in the function column)")]
    NoSuchFunction { name: String, place: &'static str },
    /// An output that needs call stacks, for a profile without them.
    #[error("{path} has no call stacks for {flag} (recorded without `-g`, or no samples)")]
    NoStacks { path: PathBuf, flag: &'static str },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A perf.data file the parser rejects.
    #[error("{path} is not a readable perf.data file: {source}")]
    PerfData {
        path: PathBuf,
        #[source]
        source: linux_perf_data::Error,
    },
    /// A perf.data file whose layout cannot be right (a size beyond the file, a count
    /// its bytes cannot hold): refused before it is parsed.
    #[error("{path} is not a readable perf.data file: {why}")]
    PerfDataLayout { path: PathBuf, why: String },
    /// A perf.data file that parses but holds nothing perflab can use.
    #[error("{path}: {why}")]
    PerfDataContent { path: PathBuf, why: String },
    /// A bad option value (a filter, a sort key, an event selection).
    #[error("{0}")]
    Option(String),
    #[error("--group-by-source wants GLOB:REGEX, got `{0}`")]
    GroupBySourceSpec(String),
    #[error("bad glob in --group-by-source: {0}")]
    GroupBySourceGlob(#[source] globset::Error),
    /// The regex crate's own complaint, on one line (`error::regex_error`).
    #[error("bad regex in --group-by-source: {0}")]
    GroupBySourceRegex(String),
    #[error("the regex in --group-by-source needs a capture group naming the region")]
    GroupBySourceNoCapture,
    /// A sample filter (`--comm`, `--pid`, `--tid`, `--dso`, `--symbol`) that keeps nothing.
    #[error("{path}: no samples match {filter} (of {of} samples)")]
    NothingSelected { path: PathBuf, filter: String, of: u64 },
    /// An exporter could not encode the profile.
    #[error("cannot write the {format} export: {why}")]
    Export { format: &'static str, why: String },
    #[error("cannot read profile {}: {source}", path.display())]
    ReadProfile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write profile {}: {source}", path.display())]
    WriteProfile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a valid perflab profile: {source}", path.display())]
    Format {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
    #[error("--mca needs llvm-mca on PATH (Debian: apt-get install llvm)")]
    NoMca,
    /// `annotate --symbol` named a function that cannot be annotated.
    #[error("cannot annotate `{name}`: {why}")]
    CannotAnnotate {
        name: String,
        #[source]
        why: NotAnnotated,
    },
    #[error("cannot annotate kernel function `{name}`: {why}")]
    CannotAnnotateKernel {
        name: String,
        #[source]
        why: NotAnnotated,
    },
    #[error("function `{0}` is not in the profile's objects (see `perflab show` for names)")]
    NotInObjects(String),
    #[error("`{0}` is not a process id")]
    NotAPid(String),
    #[error("no process with PID {0}")]
    NoProcess(u32),
    #[error("cannot list the threads of PID {pid}: {source}")]
    ListThreads {
        pid: u32,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot watch PID {pid}: {source}")]
    WatchProcess {
        pid: u32,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot control the terminal: {0}")]
    Terminal(#[source] std::io::Error),
    #[error("--interval must be at least 0.1 s")]
    IntervalTooShort,
    /// Recording options that cannot work.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The events could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The profiled command's program (not found, not executable).
    #[error(transparent)]
    Command(#[from] perflab_sys::command::CommandError),
    /// The profiled command's arguments or files (a NUL byte, an unreadable file).
    #[error(transparent)]
    Prepare(#[from] perflab_sys::spawn::process::PrepareError),
    /// The user interrupted before anything was recorded (what was interrupted).
    #[error("{0}")]
    Interrupted(&'static str),
    /// The machine refused something the recording needs (a pipe, a thread, a pidfd).
    #[error("{0:#}")]
    System(anyhow::Error),
}

/// Why bytes are not a perflab profile (one line, without the file's name).
#[derive(Debug, Error)]
pub enum FormatError {
    #[error("no header line")]
    NoHeader,
    #[error("header is not text")]
    HeaderNotText,
    /// `magic`: the word a profile starts with.
    #[error("header does not start with `{magic}`")]
    NotAProfile { magic: &'static str },
    #[error("format version {version} is not supported (this perflab reads {oldest} to {newest})")]
    Unsupported { version: u32, oldest: u32, newest: u32 },
    /// The version text, truncated.
    #[error("bad format version `{0}`")]
    BadVersion(String),
    #[error("body: {0}")]
    Body(#[source] serde_json::Error),
    /// A user-space sample or frame naming an object the profile lacks.
    #[error("sample refers to object {object}, but there are {objects}")]
    NoSuchObject { object: u32, objects: usize },
    #[error("user sample without an object")]
    NoObject,
    #[error("JIT symbol refers to object {object}, but there are {objects}")]
    JitNoSuchObject { object: u32, objects: usize },
    #[error("empty call stack")]
    EmptyStack,
    #[error("stack refers to frame {frame}, but there are {frames}")]
    NoSuchFrame { frame: u32, frames: usize },
    #[error("timeline columns differ in length")]
    TimelineLengths,
    #[error("timeline refers to a sample or stack that is not there")]
    TimelineDangling,
    #[error("neither frequency_hz nor sample_period is set")]
    NoRate,
}

/// Why the running kernel's function names are not available (a profile's note).
#[derive(Debug, Error)]
pub enum KallsymsError {
    #[error("cannot read /proc/kallsyms: {0}")]
    Read(#[source] std::io::Error),
    /// `kptr_restrict`: /proc/sys/kernel/kptr_restrict's value, when readable.
    #[error("/proc/kallsyms shows zero addresses (kptr_restrict={kptr_restrict}; run as root, or set kernel.kptr_restrict=0)")]
    ZeroAddresses { kptr_restrict: String },
    #[error("/proc/kallsyms lists no kernel functions")]
    NoFunctions,
}

/// Why an object file cannot be symbolized (a warning: its samples keep addresses).
#[derive(Debug, Error)]
pub enum ObjectError {
    #[error("cannot open {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot map {path}: {source}")]
    Map {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a readable object file: {source}")]
    NotAnObject {
        path: String,
        #[source]
        source: object::Error,
    },
}

/// Recording options that cannot work (bad input: exit code 2).
#[derive(Debug, Error)]
pub enum RecordError {
    #[error("nothing to profile: put a command after `--`, or attach with -p PID or -a")]
    NothingToProfile,
    #[error("-p needs at least one PID")]
    NoPids,
    #[error("--duration must be more than 0")]
    ZeroDuration,
    #[error("-c must be at least 1 (a sample every N events)")]
    ZeroPeriod,
    #[error("-F must be between 1 and 100000 Hz, got {0}")]
    Frequency(u64),
    #[error("-g dwarf is implemented for x86-64 only; use -g fp")]
    DwarfNotHere,
    #[error("--stack-size must be a multiple of 8 between 8 and {max} bytes, got {got}")]
    StackSize { got: u32, max: u32 },
    #[error(transparent)]
    Event(#[from] perflab_sys::perf::event::EventError),
    /// The profiled command could not be started (the spawner's reason).
    #[error("{0}")]
    Exec(String),
    /// The events could not be opened on the held command.
    #[error("{0:#}")]
    Gate(anyhow::Error),
    /// `pids`: the attached processes, comma-separated.
    #[error("no thread of PID {pids} is left to attach to")]
    NoThreadLeft { pids: String },
}

/// Why perf events could not be opened for a recording: the machine lacks the event, or
/// the user lacks the permission (bad input: exit code 2). `paranoid` is
/// perf_event_paranoid's value as read.
#[derive(Debug, Error)]
pub enum OpenError {
    #[error("event `{event}` is not supported on this machine ({source}); cpu-clock works without a hardware PMU")]
    Unsupported {
        event: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--off-cpu needs kernel samples (perf_event_paranoid is {paranoid}); run as root or set /proc/sys/kernel/perf_event_paranoid to 1")]
    OffCpuNotAllowed {
        paranoid: String,
        #[source]
        source: std::io::Error,
    },
    #[error("not allowed to sample every CPU (perf_event_paranoid is {paranoid}); -a needs root, CAP_PERFMON or perf_event_paranoid ≤ 0")]
    AllCpusNotAllowed {
        paranoid: String,
        #[source]
        source: std::io::Error,
    },
    #[error("not allowed to attach to thread {tid} (perf_event_paranoid is {paranoid}); another user's process needs root or CAP_PERFMON, your own needs perf_event_paranoid ≤ 2")]
    ThreadNotAllowed {
        tid: i32,
        paranoid: String,
        #[source]
        source: std::io::Error,
    },
    #[error("not allowed to sample (perf_event_paranoid is {paranoid}); run as root or lower /proc/sys/kernel/perf_event_paranoid")]
    NotAllowed {
        paranoid: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open event `{event}` on CPU {cpu}: {source}")]
    Open {
        event: String,
        cpu: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot share a ring buffer between threads: {0}")]
    Redirect(#[source] std::io::Error),
    #[error("a CPU went offline while attaching")]
    CpuOffline,
    #[error(transparent)]
    Event(#[from] perflab_sys::perf::event::EventError),
}

/// Why a function cannot be annotated: an error for the function asked for, a warning
/// for a hot one skipped.
#[derive(Debug, Error)]
pub enum NotAnnotated {
    /// `release`: the running kernel's, to name its debug package.
    #[error(
        "no readable kernel image (no vmlinux in /boot, /usr/lib/debug or /lib/modules/{release}/build; \
         install the running kernel's debug symbols, e.g. linux-image-{release}-dbg, or pass --vmlinux FILE)"
    )]
    NoKernelImage { release: String },
    #[error("the kernel image path is not UTF-8")]
    KernelImagePath,
    /// `why`: the symbolizer's warning about the file.
    #[error("cannot use {path} as the kernel image: {why}")]
    KernelImage { path: String, why: String },
    /// The profile's note on why it has no kernel names (or a default).
    #[error("{0}")]
    NoKernelNames(String),
    #[error("not a sampled kernel function")]
    NotSampledKernel,
    #[error("it is in module {0}, not in the kernel image")]
    InModule(String),
    /// The kernel image's path.
    #[error("{0} does not define it")]
    NotDefined(String),
    #[error("its samples are outside every known mapping (no perf map names them)")]
    OutsideMappings,
    #[error("{0} cannot be read")]
    Unreadable(String),
    #[error("{0} has neither a symbol nor an unwind entry there")]
    NoSymbol(String),
    #[error("it is runtime code no perf map names, in a profile recorded before perflab copied such code")]
    RuntimeUnnamed,
    /// The profile's note on copying runtime code (or a default).
    #[error("its code was not copied while the process ran ({0})")]
    RuntimeNotCopied(String),
}

/// A name that is not one of an option's choices (`expected` lists them).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("expected {expected}, found `{found}`")]
pub struct UnknownChoice {
    pub expected: &'static str,
    pub found: String,
}
