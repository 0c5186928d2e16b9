//! What can go wrong recording, reading, annotating and exporting profiles, as typed
//! errors; the `perflab` binary maps them to exit codes (bad input: 2).

use std::path::PathBuf;
use thiserror::Error;

/// Why `perflab profile`, `show`, `annotate`, `diff` or `top` failed. The binary counts
/// it as bad input (exit 2), except an interruption, [`System`](ProfileError::System)
/// and output that could not be written ([`Write`](ProfileError::Write),
/// [`Export`](ProfileError::Export)).
#[derive(Debug, Error)]
pub enum ProfileError {
    /// `--callers`/`--callees`/`--symbol` named a function no stack or row has.
    #[error("no function named `{name}` in the {place} (names as in the function column)")]
    NoSuchFunction {
        /// The name asked for, escaped for the terminal.
        name: String,
        /// What was searched (`call stacks`).
        place: &'static str,
    },
    /// An output that needs call stacks, for a profile without them.
    #[error("{path} has no call stacks for {flag} (recorded without `-g`, or no samples)")]
    NoStacks {
        /// The profile file.
        path: PathBuf,
        /// The option that needs them (`--flamegraph`, `--stacks`, …).
        flag: &'static str,
    },
    /// A perf.data file cannot be opened or read (missing, not a regular file, an I/O
    /// error).
    #[error("cannot read {path}: {source}")]
    Read {
        /// The perf.data file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// An export (`--flamegraph FILE`, `--pprof FILE`, …) cannot be written to its file.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The export's file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A perf.data file the parser rejects.
    #[error("{path} is not a readable perf.data file: {source}")]
    PerfData {
        /// The perf.data file.
        path: PathBuf,
        /// The parser's complaint.
        #[source]
        source: linux_perf_data::Error,
    },
    /// A perf.data file whose layout cannot be right (a size beyond the file, a count
    /// its bytes cannot hold): refused before it is parsed.
    #[error("{path} is not a readable perf.data file: {why}")]
    PerfDataLayout {
        /// The perf.data file.
        path: PathBuf,
        /// What is wrong with it, one line (or the parser's panic, caught).
        why: String,
    },
    /// A perf.data file that parses but holds nothing perflab can use.
    #[error("{path}: {why}")]
    PerfDataContent {
        /// The perf.data file.
        path: PathBuf,
        /// What it lacks (no sampled event, or not the event asked for).
        why: String,
    },
    /// A bad option value (a filter, a sort key, an event selection).
    #[error("{0}")]
    Option(String),
    /// `--group-by-source` without the colon between its glob and its regex (the spec
    /// as given).
    #[error("--group-by-source wants GLOB:REGEX, got `{0}`")]
    GroupBySourceSpec(String),
    /// The glob of `--group-by-source` does not parse.
    #[error("bad glob in --group-by-source: {0}")]
    GroupBySourceGlob(#[source] globset::Error),
    /// The regex crate's own complaint, on one line (`error::regex_error`).
    #[error("bad regex in --group-by-source: {0}")]
    GroupBySourceRegex(String),
    /// The regex of `--group-by-source` has no capture group, so it cannot name a region.
    #[error("the regex in --group-by-source needs a capture group naming the region")]
    GroupBySourceNoCapture,
    /// A sample filter (`--comm`, `--pid`, `--tid`, `--dso`, `--symbol`) that keeps nothing.
    #[error("{path}: no samples match {filter} (of {of} samples)")]
    NothingSelected {
        /// The profile file.
        path: PathBuf,
        /// The filter's flags as the user gave them (`--comm postgres --dso libc.so.6`).
        filter: String,
        /// Samples in the profile before filtering.
        of: u64,
    },
    /// An exporter could not encode the profile.
    #[error("cannot write the {format} export: {why}")]
    Export {
        /// The export's format, as named to the user (`pprof`, `speedscope`, …).
        format: &'static str,
        /// The encoder's complaint.
        why: String,
    },
    /// A perflab profile file cannot be opened or read.
    #[error("cannot read profile {}: {source}", path.display())]
    ReadProfile {
        /// The profile file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A profile cannot be saved (`-o`).
    #[error("cannot write profile {}: {source}", path.display())]
    WriteProfile {
        /// The profile file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file read as a perflab profile is not one, or not one this perflab reads.
    #[error("{} is not a valid perflab profile: {source}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with its bytes.
        #[source]
        source: FormatError,
    },
    /// `--mca` was asked for and llvm-mca is not installed.
    #[error("--mca needs llvm-mca on PATH (Debian: apt-get install llvm)")]
    NoMca,
    /// `annotate --symbol` named a function that cannot be annotated.
    #[error("cannot annotate `{name}`: {why}")]
    CannotAnnotate {
        /// The function, as in the profile's function column.
        name: String,
        /// Why not.
        #[source]
        why: NotAnnotated,
    },
    /// `annotate --symbol` named a kernel function that cannot be annotated (no kernel
    /// image, no kernel names in the profile, a module's function, …).
    #[error("cannot annotate kernel function `{name}`: {why}")]
    CannotAnnotateKernel {
        /// The function, as in the profile's function column.
        name: String,
        /// Why not.
        #[source]
        why: NotAnnotated,
    },
    /// `annotate --symbol` named a function neither sampled nor defined by any of the
    /// profile's objects (the name as given).
    #[error("function `{0}` is not in the profile's objects (see `perflab show` for names)")]
    NotInObjects(String),
    /// `-p` given something that is not a positive number (that item of the list).
    #[error("`{0}` is not a process id")]
    NotAPid(String),
    /// `-p` named a process that does not exist (or has exited).
    #[error("no process with PID {0}")]
    NoProcess(u32),
    /// /proc/PID/task of an existing process cannot be listed.
    #[error("cannot list the threads of PID {pid}: {source}")]
    ListThreads {
        /// The process.
        pid: u32,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// No pidfd can be opened on an attached process, so its exit would go unnoticed.
    #[error("cannot watch PID {pid}: {source}")]
    WatchProcess {
        /// The process.
        pid: u32,
        /// pidfd_open's error.
        #[source]
        source: std::io::Error,
    },
    /// `perflab top` cannot put the terminal in raw mode or on its alternate screen.
    #[error("cannot control the terminal: {0}")]
    Terminal(#[source] std::io::Error),
    /// `top --interval` below 0.1 s.
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
    /// No newline, so no header line (an empty or truncated file).
    #[error("no header line")]
    NoHeader,
    /// The header line is not UTF-8 (a binary file).
    #[error("header is not text")]
    HeaderNotText,
    /// `magic`: the word a profile starts with.
    #[error("header does not start with `{magic}`")]
    NotAProfile {
        /// The word expected.
        magic: &'static str,
    },
    /// A profile of a format version this perflab cannot read (written by a newer one,
    /// or too old).
    #[error("format version {version} is not supported (this perflab reads {oldest} to {newest})")]
    Unsupported {
        /// The file's version.
        version: u32,
        /// The oldest version this perflab reads.
        oldest: u32,
        /// The version this perflab writes, the newest it reads.
        newest: u32,
    },
    /// The version text, truncated.
    #[error("bad format version `{0}`")]
    BadVersion(String),
    /// The JSON after the header does not parse as a profile.
    #[error("body: {0}")]
    Body(#[source] serde_json::Error),
    /// A user-space sample or frame naming an object the profile lacks.
    #[error("sample refers to object {object}, but there are {objects}")]
    NoSuchObject {
        /// The object's index.
        object: u32,
        /// How many objects the profile has.
        objects: usize,
    },
    /// A user-space sample or frame without an object, so its offset means nothing.
    #[error("user sample without an object")]
    NoObject,
    /// A runtime (JIT) symbol naming an object the profile lacks.
    #[error("JIT symbol refers to object {object}, but there are {objects}")]
    JitNoSuchObject {
        /// The object's index.
        object: u32,
        /// How many objects the profile has.
        objects: usize,
    },
    /// A call stack (sampled, off-CPU or of live blocks) without a frame.
    #[error("empty call stack")]
    EmptyStack,
    /// A call stack naming a frame the profile lacks.
    #[error("stack refers to frame {frame}, but there are {frames}")]
    NoSuchFrame {
        /// The frame's index.
        frame: u32,
        /// How many frames the profile has.
        frames: usize,
    },
    /// The timeline's columns (samples, times, stacks, periods) have different lengths.
    #[error("timeline columns differ in length")]
    TimelineLengths,
    /// A timeline entry naming a sample or stack index past the profile's.
    #[error("timeline refers to a sample or stack that is not there")]
    TimelineDangling,
    /// Neither a sampling frequency nor a sample period is set, so what a sample stands
    /// for is unknown.
    #[error("neither frequency_hz nor sample_period is set")]
    NoRate,
}

/// Why the running kernel's function names are not available (a profile's note).
#[derive(Debug, Error)]
pub enum KallsymsError {
    /// /proc/kallsyms cannot be read.
    #[error("cannot read /proc/kallsyms: {0}")]
    Read(#[source] std::io::Error),
    /// `kptr_restrict`: /proc/sys/kernel/kptr_restrict's value, when readable.
    #[error("/proc/kallsyms shows zero addresses (kptr_restrict={kptr_restrict}; run as root, or set kernel.kptr_restrict=0)")]
    ZeroAddresses {
        /// The setting's value, trimmed; empty when it cannot be read.
        kptr_restrict: String,
    },
    /// /proc/kallsyms is empty or has no line perflab can read.
    #[error("/proc/kallsyms lists no kernel functions")]
    NoFunctions,
}

/// Why an object file cannot be symbolized (a warning: its samples keep addresses).
#[derive(Debug, Error)]
pub enum ObjectError {
    /// The file cannot be opened (gone since the recording, not a regular file, not
    /// permitted).
    #[error("cannot open {path}: {source}")]
    Open {
        /// The object's path.
        path: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The opened file cannot be mapped into memory.
    #[error("cannot map {path}: {source}")]
    Map {
        /// The object's path.
        path: String,
        /// mmap's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not an object file the `object` crate can parse.
    #[error("{path} is not a readable object file: {source}")]
    NotAnObject {
        /// The object's path.
        path: String,
        /// The parser's complaint.
        #[source]
        source: object::Error,
    },
}

/// Recording options that cannot work (bad input: exit code 2).
#[derive(Debug, Error)]
pub enum RecordError {
    /// No command to launch and no process to attach to.
    #[error("nothing to profile: put a command after `--`, or attach with -p PID or -a")]
    NothingToProfile,
    /// `-p` with an empty list.
    #[error("-p needs at least one PID")]
    NoPids,
    /// `--duration 0`.
    #[error("--duration must be more than 0")]
    ZeroDuration,
    /// `-c 0`.
    #[error("-c must be at least 1 (a sample every N events)")]
    ZeroPeriod,
    /// A sampling frequency (`-F`, in Hz) of 0 or above 100 000: the value given.
    #[error("-F must be between 1 and 100000 Hz, got {0}")]
    Frequency(u64),
    /// `-g dwarf` on a machine other than x86-64 (the unwinder reads x86-64 registers).
    #[error("-g dwarf is implemented for x86-64 only; use -g fp")]
    DwarfNotHere,
    /// A `--stack-size` for `-g dwarf` of 0, above the kernel's limit, or not a multiple
    /// of 8.
    #[error("--stack-size must be a multiple of 8 between 8 and {max} bytes, got {got}")]
    StackSize {
        /// The size given, in bytes.
        got: u32,
        /// The kernel's limit, in bytes (`unwind::MAX_STACK_BYTES`).
        max: u32,
    },
    /// The `-e` event is unknown or malformed.
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
    NoThreadLeft {
        /// The attached processes' ids, comma-separated.
        pids: String,
    },
}

/// Why perf events could not be opened for a recording: the machine lacks the event, or
/// the user lacks the permission (bad input: exit code 2). `paranoid` is
/// perf_event_paranoid's value as read.
#[derive(Debug, Error)]
pub enum OpenError {
    /// The kernel or the CPU does not have the event (ENOENT, EOPNOTSUPP, ENODEV).
    #[error("event `{event}` is not supported on this machine ({source}); cpu-clock works without a hardware PMU")]
    Unsupported {
        /// The event's name (`context-switches` for `--off-cpu`'s).
        event: String,
        /// perf_event_open's error.
        #[source]
        source: std::io::Error,
    },
    /// `--off-cpu`'s context-switch events were refused.
    #[error("--off-cpu needs kernel samples (perf_event_paranoid is {paranoid}); run as root or set /proc/sys/kernel/perf_event_paranoid to 1")]
    OffCpuNotAllowed {
        /// perf_event_paranoid's value, or `unknown`.
        paranoid: String,
        /// perf_event_open's error (EACCES or EPERM).
        #[source]
        source: std::io::Error,
    },
    /// `-a`'s per-CPU events were refused.
    #[error("not allowed to sample every CPU (perf_event_paranoid is {paranoid}); -a needs root, CAP_PERFMON or perf_event_paranoid ≤ 0")]
    AllCpusNotAllowed {
        /// perf_event_paranoid's value, or `unknown`.
        paranoid: String,
        /// perf_event_open's error (EACCES or EPERM).
        #[source]
        source: std::io::Error,
    },
    /// An event on a thread of an attached process (`-p`) was refused.
    #[error("not allowed to attach to thread {tid} (perf_event_paranoid is {paranoid}); another user's process needs root or CAP_PERFMON, your own needs perf_event_paranoid ≤ 2")]
    ThreadNotAllowed {
        /// The thread.
        tid: i32,
        /// perf_event_paranoid's value, or `unknown`.
        paranoid: String,
        /// perf_event_open's error (EACCES or EPERM).
        #[source]
        source: std::io::Error,
    },
    /// An event on the launched command was refused.
    #[error("not allowed to sample (perf_event_paranoid is {paranoid}); run as root or lower /proc/sys/kernel/perf_event_paranoid")]
    NotAllowed {
        /// perf_event_paranoid's value, or `unknown`.
        paranoid: String,
        /// perf_event_open's error (EACCES or EPERM).
        #[source]
        source: std::io::Error,
    },
    /// Any other failure of perf_event_open.
    #[error("cannot open event `{event}` on CPU {cpu}: {source}")]
    Open {
        /// The event's name (`context-switches` for `--off-cpu`'s).
        event: String,
        /// The CPU it was opened on.
        cpu: usize,
        /// perf_event_open's error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused to send one event's records into another's ring buffer.
    #[error("cannot share a ring buffer between threads: {0}")]
    Redirect(#[source] std::io::Error),
    /// A thread found later was opened on a CPU that had no ring when the first threads
    /// were attached.
    #[error("a CPU went offline while attaching")]
    CpuOffline,
    /// The `-e` event is unknown or malformed.
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
    NoKernelImage {
        /// The running kernel's release (`uname -r`), empty when unreadable.
        release: String,
    },
    /// The kernel image found or given has a path that is not UTF-8.
    #[error("the kernel image path is not UTF-8")]
    KernelImagePath,
    /// `why`: the symbolizer's warning about the file.
    #[error("cannot use {path} as the kernel image: {why}")]
    KernelImage {
        /// The kernel image's path.
        path: String,
        /// The symbolizer's warning about it.
        why: String,
    },
    /// The profile's note on why it has no kernel names (or a default).
    #[error("{0}")]
    NoKernelNames(String),
    /// No kernel symbol of the profile has that name.
    #[error("not a sampled kernel function")]
    NotSampledKernel,
    /// A function of a kernel module (the module's name), whose code is not in the image.
    #[error("it is in module {0}, not in the kernel image")]
    InModule(String),
    /// The kernel image's path.
    #[error("{0} does not define it")]
    NotDefined(String),
    /// None of the function's samples is a user-space one in a known mapping, so there is
    /// no object to read its code from.
    #[error("its samples are outside every known mapping (no perf map names them)")]
    OutsideMappings,
    /// The object holding the function cannot be loaded (its path).
    #[error("{0} cannot be read")]
    Unreadable(String),
    /// The object (its path) has no symbol, nor unwind entry, covering the sampled
    /// address.
    #[error("{0} has neither a symbol nor an unwind entry there")]
    NoSymbol(String),
    /// Samples in runtime code that no runtime symbol of the profile covers.
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
    /// The choices, as a phrase for the message (`bytes, calls or live`).
    pub expected: &'static str,
    /// The name given.
    pub found: String,
}
