//! The profile file: a one-line header naming the format and its version, then one
//! JSON document. Samples are stored already normalised to (object, file offset), so
//! a profile can be symbolised, shown, annotated and diffed after the process is gone
//! (as long as the object files are still on disk).
//!
//! ```text
//! perflab-profile 2
//! {"event":"cpu-clock", ..., "objects":[...], "tasks":[...], "samples":[...],
//!  "frames":[...], "stacks":[...]}
//! ```
//!
//! Version 2 added the call graph (`frames`, `stacks`, only with `profile -g`);
//! version 1 files are the same document without them and still load. Later additions
//! (`target`, `kernel_symbols`, `off_cpu`) are optional keys that older files lack.

use super::error::{FormatError, ProfileError};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

pub(crate) const MAGIC: &str = "perflab-profile";
/// Version of the profile format written (its first line: `perflab-profile 2`).
pub const VERSION: u32 = 2;
/// Oldest format version this perflab reads.
pub(crate) const OLDEST_VERSION: u32 = 1;

/// Everything one `perflab profile` run recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Profile {
    /// The sampled event (`cpu-clock`, `cycles`, ...).
    pub event: String,
    /// Requested sampling frequency in Hz; 0 when sampled every `sample_period` events.
    pub frequency_hz: u64,
    /// A fixed sampling period (`profile -c N`, `perf record -c N`): a sample every N
    /// events (nanoseconds for clock events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_period: Option<u64>,
    /// The profiled command line.
    pub command: Vec<String>,
    /// When recording started (RFC 3339).
    pub started: String,
    /// Wall time from exec to exit, seconds.
    pub duration_s: f64,
    /// User + system CPU time of the command and the children it waited for (wait4).
    #[serde(default)]
    pub cpu_s: f64,
    /// Records the kernel dropped because the ring buffer was full.
    pub lost: u64,
    /// Exit code of the command (None when killed by a signal or interrupted).
    pub exit_code: Option<i32>,
    /// Mapped files that received samples, referenced by index from `samples`.
    pub objects: Vec<ObjectRef>,
    /// Every process and thread seen.
    pub tasks: Vec<Task>,
    /// Sample counts per (task, location).
    pub samples: Vec<SampleCount>,
    /// Code locations of call-graph frames, referenced by index from `stacks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<FrameRef>,
    /// Unique call stacks per task with their sample counts (empty without `-g`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<StackCount>,
    /// With `-g dwarf`: how the user stacks were copied and how many walks ended early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dwarf: Option<DwarfStats>,
    /// Names of sampled JIT code from perf maps (`/tmp/perf-PID.map`): samples and frames
    /// in JIT code refer to the map as their object, with the address as offset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jit_symbols: Vec<JitSymbol>,
    /// What was profiled when it was not a command (`-p`, `-a`).
    #[serde(default, skip_serializing_if = "RecordTarget::is_command")]
    pub target: RecordTarget,
    /// Kernel functions covering the profile's kernel addresses, from /proc/kallsyms at
    /// record time (addresses move with every boot), sorted by start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_symbols: Vec<KernelSymbol>,
    /// Why kernel addresses could not be named when recording (e.g. kallsyms showed
    /// zero addresses to an unprivileged user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_symbols_note: Option<String>,
    /// Blocked (off-CPU) intervals per call stack (`profile --off-cpu`): `count` blocks,
    /// `period` nanoseconds off the CPU, frames indexing `frames` like `stacks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_cpu: Vec<StackCount>,
    /// Whether off-CPU time was recorded (an empty `off_cpu` then means nothing blocked).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub off_cpu_recorded: bool,
    /// Every sample in time order, for timelines (the Firefox Profiler's tracks);
    /// profiles recorded before it existed lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// Why some sampled runtime code could not be copied (reading the process's memory
    /// failed), for `annotate` to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_note: Option<String>,
    /// An allocation profile's totals, frees and live blocks (`profile --alloc`): its
    /// samples are then calls by call site, their periods bytes requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc: Option<crate::allocations::AllocSummary>,
}

/// The samples of a profile one by one, in time order, as columns of equal length
/// (`stack` and `period` may be empty, see there).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Timeline {
    /// Nanoseconds since the previous sample (the first: since the recording's first
    /// record), on the kernel's perf clock.
    pub(crate) delta_ns: Vec<u64>,
    /// Index into `samples`: the sample's task and location.
    pub sample: Vec<u32>,
    /// Index into `stacks` (only with call stacks; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<u32>,
    /// The sample's period; empty when each sample of a location weighs the same, its
    /// `samples` entry's period / count (a clock, or `-c N`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub period: Vec<u64>,
}

impl Timeline {
    /// Samples in the timeline.
    pub fn len(&self) -> usize {
        self.sample.len()
    }

    /// True when it holds no sample.
    pub fn is_empty(&self) -> bool {
        self.sample.is_empty()
    }

    /// Each sample as (nanoseconds since the first record, index into `samples`, index
    /// into `stacks` if any, period).
    pub fn entries<'a>(&'a self, profile: &'a Profile) -> impl Iterator<Item = (u64, u32, Option<u32>, u64)> + 'a {
        let mut time = 0u64;
        (0..self.len()).map(move |i| {
            time = time.saturating_add(self.delta_ns[i]);
            let sample = self.sample[i];
            let period = self.period.get(i).copied().unwrap_or_else(|| {
                let s = &profile.samples[sample as usize];
                s.period / s.count.max(1)
            });
            (time, sample, self.stack.get(i).copied(), period)
        })
    }
}

/// What a profile's shares are of: every sample weighs its period, as in `perf report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Weight {
    /// A clock event (cpu-clock, task-clock): periods are nanoseconds of CPU time, and
    /// every sample of a recording stands for the same slice of it.
    Time,
    /// A count event (page faults, cycles, …): periods are events, and differ from
    /// sample to sample when sampling at a frequency.
    Events,
}

impl Weight {
    /// A whole-number weight of `samples` with summed `period`, for formats that count
    /// (folded stacks): samples of a clock, events otherwise.
    pub fn of(self, samples: u64, period: u64) -> u64 {
        match self {
            Weight::Time => samples,
            Weight::Events => period,
        }
    }

    /// What shares are of, for the user.
    pub fn describe(self) -> &'static str {
        match self {
            Weight::Time => "time",
            Weight::Events => "events",
        }
    }
}

/// Whether `event` (perf's spelling, modifiers allowed: `cpu-clock:u`) is a clock whose
/// periods are nanoseconds.
pub fn is_clock_event(event: &str) -> bool {
    matches!(event.split(':').next().unwrap_or(event), "cpu-clock" | "task-clock")
}

/// What a profile sampled.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordTarget {
    /// The command in `command`, from its exec to its exit.
    #[default]
    Command,
    /// Running processes (all their threads, and tasks they started), attached to.
    Pids(Vec<u32>),
    /// Every task on every CPU.
    AllCpus,
}

impl RecordTarget {
    /// True when the recording followed one command it started.
    pub fn is_command(&self) -> bool {
        *self == RecordTarget::Command
    }
}

/// One kernel function: `[start, end)` in the running kernel's addresses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSymbol {
    /// First address.
    pub start: u64,
    /// Address after the last.
    pub end: u64,
    /// The function's name.
    pub name: String,
    /// The loadable module defining it; None for the kernel image itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
}

/// One piece of code generated at run time (JIT code, SBCL's compiled Lisp) that
/// received samples: named by the runtime (perf map) or, when nothing names it, one
/// region of the sampled addresses (`unnamed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JitSymbol {
    /// Index into `objects`: the process's runtime code (`[jit:PID]`; older profiles
    /// name the perf map file, `/tmp/perf-PID.map`).
    pub object: u32,
    /// First address.
    pub start: u64,
    /// Bytes of code.
    pub size: u64,
    /// The name the runtime gave it (or perflab's, when `unnamed`).
    pub name: String,
    /// Nothing named this code: the range covers its sampled addresses and the name is
    /// perflab's (`sbcl.core+0x…` for a file mapping, `[anon 0x…]` for anonymous memory).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unnamed: bool,
    /// The machine code, copied from the process while it ran (it is gone afterwards);
    /// boxed, as most symbols have none (a symbol is 56 bytes, not 80, for 1.2 M of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Box<CodeBytes>>,
}

/// Bytes of a process's memory: `hex` is the code at `start` onwards (lower-case hex,
/// two digits per byte).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeBytes {
    /// Address of the first byte.
    pub start: u64,
    /// The bytes, two lower-case hex digits each.
    pub hex: String,
}

impl CodeBytes {
    /// `bytes` found at `start`.
    pub fn new(start: u64, bytes: &[u8]) -> CodeBytes {
        let mut hex = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            use std::fmt::Write as _;
            let _ = write!(hex, "{b:02x}");
        }
        CodeBytes { start, hex }
    }

    /// The bytes; None when `hex` is malformed.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        let hex = self.hex.as_bytes();
        if !hex.len().is_multiple_of(2) {
            return None;
        }
        hex.chunks(2).map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()).collect()
    }
}

/// What DWARF unwinding (`profile -g dwarf`) did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DwarfStats {
    /// Bytes of user stack copied per sample.
    pub stack_bytes: u32,
    /// Samples whose user stack was unwound.
    pub unwound: u64,
    /// Of those, walks that stopped before the outermost frame (copy too short, or
    /// code without unwind information or frame pointers): outer callers are missing.
    pub truncated: u64,
}

impl DwarfStats {
    /// No stack unwound yet, `stack_bytes` copied per sample.
    pub fn new(stack_bytes: u32) -> DwarfStats {
        DwarfStats { stack_bytes, unwound: 0, truncated: 0 }
    }

    /// One more stack unwound; `truncated` when its walk stopped early.
    pub fn count(&mut self, truncated: bool) {
        self.unwound += 1;
        self.truncated += u64::from(truncated);
    }
}

/// One code location of a call stack, normalised like a sample: for callers (every
/// frame but the leaf) `offset` is the return address − 1, so it lies inside the call
/// instruction and symbolizes to the calling line and function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FrameRef {
    /// Which kind of code it is in.
    pub space: Space,
    /// Index into `objects` (only for `space = user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<u32>,
    /// File offset, or address (see [`Space`]).
    pub offset: u64,
}

/// Samples that share one call stack in one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackCount {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Indices into `frames`, leaf (the sampled location) first, outermost caller last.
    pub frames: Vec<u32>,
    /// Number of samples.
    pub count: u64,
    /// Sum of their periods (nanoseconds for clock events, events otherwise).
    pub period: u64,
}

/// A mapped file samples landed in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// Path of the mapped file as the kernel reported it (`[vdso]` for special maps).
    pub path: String,
}

/// A thread that was sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The task's last command name (`comm`).
    pub comm: String,
}

/// Where samples landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Space {
    /// User code inside a mapped object; `offset` is the file offset in `objects[object]`.
    User,
    /// Kernel code; `offset` is the kernel address.
    Kernel,
    /// User code outside any known mapping (JIT, anonymous memory); `offset` is the address.
    Unmapped,
}

/// Samples at one location in one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleCount {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Which kind of code it is in.
    pub space: Space,
    /// Index into `objects` (only for `space = user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<u32>,
    /// File offset, or address (see [`Space`]).
    pub offset: u64,
    /// Number of samples.
    pub count: u64,
    /// Sum of the sample periods (nanoseconds for cpu-clock/task-clock, events otherwise).
    pub period: u64,
}

#[cfg(any(test, feature = "fixtures"))]
impl SampleCount {
    /// Tests' usual sample: `count` samples weighing `period` in all at `offset` of the
    /// first object, in user code of thread 1 of process 1.
    pub fn example(offset: u64, count: u64, period: u64) -> SampleCount {
        SampleCount { pid: 1, tid: 1, space: Space::User, object: Some(0), offset, count, period }
    }
}

impl Profile {
    /// Samples in the profile.
    pub fn total_samples(&self) -> u64 {
        self.samples.iter().map(|s| s.count).sum()
    }

    /// Sum of every sample's period (nanoseconds for clock events, events otherwise).
    pub fn total_period(&self) -> u64 {
        self.samples.iter().map(|s| s.period).sum()
    }

    /// Whether periods are nanoseconds (a clock event) rather than event counts.
    pub fn period_is_time(&self) -> bool {
        is_clock_event(&self.event)
    }

    /// What the profile's shares are of.
    pub fn weight(&self) -> Weight {
        if self.period_is_time() {
            Weight::Time
        } else {
            Weight::Events
        }
    }

    /// How samples were taken, for the user: `at 997 Hz`, `taken at every event`,
    /// `taken every 250000 ns`.
    pub fn sampling(&self) -> String {
        match self.sample_period {
            Some(n) if self.period_is_time() => format!("taken every {n} ns"),
            Some(1) => "taken at every event".to_string(),
            Some(n) => format!("taken every {n} events"),
            None => format!("at {} Hz", self.frequency_hz),
        }
    }

    /// Write atomically (temp file + rename) so an interrupted write never leaves half a
    /// profile; a target that is not a regular file (`/dev/null`, a FIFO) is written in
    /// place, since renaming over it would replace the device with a file.
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let cannot = |source| ProfileError::WriteProfile { path: path.to_path_buf(), source };
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            let write = || -> std::io::Result<()> {
                let mut out = std::io::BufWriter::new(std::fs::OpenOptions::new().write(true).open(path)?);
                self.write_to(&mut out)?;
                out.flush()
            };
            return write().map_err(cannot);
        }
        let tmp = path.with_extension("profile.tmp");
        let write = || -> std::io::Result<()> {
            let mut out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
            self.write_to(&mut out)?;
            out.flush()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(cannot)
    }

    /// The bytes of the profile file (what [`Profile::parse`] reads).
    pub fn to_bytes(&self) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.write_to(&mut bytes)?;
        Ok(bytes)
    }

    fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(out, "{MAGIC} {VERSION}")?;
        serde_json::to_writer(&mut *out, self)?;
        writeln!(out)
    }

    /// Read a profile file written by `perflab profile` (any version from the oldest read on).
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let bytes = perflab_sys::files::read_regular(path)
            .map_err(|source| ProfileError::ReadProfile { path: path.to_path_buf(), source })?;
        Profile::parse(&bytes).map_err(|source| ProfileError::Format { path: path.to_path_buf(), source })
    }

    /// Parse and validate; the error is one line without the file name.
    pub fn parse(bytes: &[u8]) -> Result<Profile, FormatError> {
        let newline = bytes.iter().position(|&b| b == b'\n').ok_or(FormatError::NoHeader)?;
        let header = std::str::from_utf8(&bytes[..newline]).map_err(|_| FormatError::HeaderNotText)?;
        let version = header.strip_prefix(MAGIC).map(str::trim).ok_or(FormatError::NotAProfile { magic: MAGIC })?;
        match version.parse::<u32>() {
            Ok(v) if (OLDEST_VERSION..=VERSION).contains(&v) => {}
            Ok(version) => return Err(FormatError::Unsupported { version, oldest: OLDEST_VERSION, newest: VERSION }),
            Err(_) => return Err(FormatError::BadVersion(truncate(version))),
        }
        let profile: Profile = serde_json::from_slice(&bytes[newline + 1..]).map_err(FormatError::Body)?;
        profile.validate()?;
        Ok(profile)
    }

    fn validate(&self) -> Result<(), FormatError> {
        for s in &self.samples {
            check_object(s.space, s.object, self.objects.len())?;
        }
        for f in &self.frames {
            check_object(f.space, f.object, self.objects.len())?;
        }
        if let Some(j) = self.jit_symbols.iter().find(|j| j.object as usize >= self.objects.len()) {
            return Err(FormatError::JitNoSuchObject { object: j.object, objects: self.objects.len() });
        }
        let live = self.alloc.as_ref().map_or(&[][..], |a| &a.live[..]);
        let frame_lists =
            self.stacks.iter().chain(&self.off_cpu).map(|s| &s.frames).chain(live.iter().map(|s| &s.frames));
        for frames in frame_lists {
            if frames.is_empty() {
                return Err(FormatError::EmptyStack);
            }
            if let Some(&frame) = frames.iter().find(|&&i| i as usize >= self.frames.len()) {
                return Err(FormatError::NoSuchFrame { frame, frames: self.frames.len() });
            }
        }
        if let Some(t) = &self.timeline {
            let n = t.sample.len();
            if t.delta_ns.len() != n
                || !(t.stack.is_empty() || t.stack.len() == n)
                || !(t.period.is_empty() || t.period.len() == n)
            {
                return Err(FormatError::TimelineLengths);
            }
            if t.sample.iter().any(|&i| i as usize >= self.samples.len())
                || t.stack.iter().any(|&i| i as usize >= self.stacks.len())
            {
                return Err(FormatError::TimelineDangling);
            }
        }
        if self.frequency_hz == 0 && self.sample_period.is_none_or(|p| p == 0) {
            return Err(FormatError::NoRate);
        }
        Ok(())
    }
}

fn check_object(space: Space, object: Option<u32>, objects: usize) -> Result<(), FormatError> {
    match (space, object) {
        (Space::User, Some(i)) if (i as usize) < objects => Ok(()),
        (Space::User, Some(object)) => Err(FormatError::NoSuchObject { object, objects }),
        (Space::User, None) => Err(FormatError::NoObject),
        (_, _) => Ok(()),
    }
}

fn truncate(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn example() -> Profile {
        Profile {
            event: "cpu-clock".into(),
            frequency_hz: 997,
            sample_period: None,
            command: vec!["./a.out".into(), "x".into()],
            started: "2026-01-01T00:00:00Z".into(),
            duration_s: 1.5,
            cpu_s: 1.4,
            lost: 0,
            exit_code: Some(0),
            objects: vec![ObjectRef { path: "/bin/true".into() }],
            tasks: vec![Task { pid: 7, tid: 7, comm: "true".into() }],
            samples: vec![
                SampleCount {
                    pid: 7,
                    tid: 7,
                    space: Space::User,
                    object: Some(0),
                    offset: 0x1040,
                    count: 3,
                    period: 3_000_000,
                },
                SampleCount {
                    pid: 7,
                    tid: 7,
                    space: Space::Kernel,
                    object: None,
                    offset: 0xffff_ffff_8100_0000,
                    count: 1,
                    period: 1_000_000,
                },
            ],
            frames: vec![
                FrameRef { space: Space::User, object: Some(0), offset: 0x1040 },
                FrameRef { space: Space::User, object: Some(0), offset: 0x1100 },
                FrameRef { space: Space::Kernel, object: None, offset: 0xffff_ffff_8100_0000 },
            ],
            stacks: vec![
                StackCount { pid: 7, tid: 7, frames: vec![0, 1], count: 3, period: 3_000_000 },
                StackCount { pid: 7, tid: 7, frames: vec![2, 1], count: 1, period: 1_000_000 },
            ],
            dwarf: Some(DwarfStats { stack_bytes: 16384, unwound: 4, truncated: 1 }),
            jit_symbols: vec![JitSymbol {
                object: 0,
                start: 0x7f00_0000,
                size: 0x40,
                name: "JS:*hot <a&b>".into(),
                unnamed: false,
                code: Some(Box::new(CodeBytes::new(0x7f00_0000, &[0x55, 0x48, 0x89, 0xe5, 0xc3]))),
            }],
            target: RecordTarget::Pids(vec![7]),
            kernel_symbols: vec![KernelSymbol {
                start: 0xffff_ffff_8100_0000,
                end: 0xffff_ffff_8100_0100,
                name: "do_syscall_64".into(),
                module: None,
            }],
            kernel_symbols_note: None,
            off_cpu: vec![StackCount { pid: 7, tid: 7, frames: vec![2, 1], count: 2, period: 5_000_000 }],
            off_cpu_recorded: true,
            timeline: Some(Timeline {
                delta_ns: vec![10, 1_000_000, 5],
                sample: vec![0, 0, 1],
                stack: vec![0, 0, 1],
                period: vec![],
            }),
            code_note: Some("reading process 7's memory failed".into()),
            alloc: None,
        }
    }

    fn encode(p: &Profile) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.profile");
        p.save(&path).unwrap();
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn round_trips() {
        let p = example();
        assert_eq!(Profile::parse(&encode(&p)).unwrap(), p);
        // Times add up; a location's samples weigh its period / count.
        let entries: Vec<_> = p.timeline.as_ref().unwrap().entries(&p).collect();
        assert_eq!(
            entries,
            [(10, 0, Some(0), 1_000_000), (1_000_010, 0, Some(0), 1_000_000), (1_000_015, 1, Some(1), 1_000_000)]
        );
    }

    #[test]
    fn rejects_wrong_magic_version_and_dangling_objects() {
        assert!(Profile::parse(b"hello\n{}").unwrap_err().to_string().contains("header"));
        assert!(Profile::parse(b"perflab-profile 99\n{}").unwrap_err().to_string().contains("version 99"));
        let mut p = example();
        p.samples[0].object = Some(5);
        assert!(Profile::parse(&encode(&p)).unwrap_err().to_string().contains("object 5"));
        let mut p = example();
        p.stacks[0].frames.push(9);
        assert!(Profile::parse(&encode(&p)).unwrap_err().to_string().contains("frame 9"));
        let mut p = example();
        p.jit_symbols[0].object = 3;
        assert!(Profile::parse(&encode(&p)).unwrap_err().to_string().contains("JIT symbol refers to object 3"));
        let mut p = example();
        p.off_cpu[0].frames.push(9);
        assert!(Profile::parse(&encode(&p)).unwrap_err().to_string().contains("frame 9"));
        let mut p = example();
        p.timeline.as_mut().unwrap().sample[2] = 7;
        assert!(Profile::parse(&encode(&p)).unwrap_err().to_string().contains("timeline refers"));
        let mut p = example();
        p.timeline.as_mut().unwrap().delta_ns.pop();
        assert!(Profile::parse(&encode(&p)).unwrap_err().to_string().contains("timeline columns"));
        let mut p = example();
        p.frames[1].object = None;
        assert!(Profile::parse(&encode(&p)).unwrap_err().to_string().contains("without an object"));
    }

    #[test]
    fn version_1_files_without_call_graphs_still_load() {
        // Written the way perflab wrote profiles before call graphs existed.
        let v1 = br#"perflab-profile 1
{"event":"cpu-clock","frequency_hz":997,"command":["./a.out"],"started":"2026-01-01T00:00:00Z","duration_s":1.5,"cpu_s":1.4,"lost":0,"exit_code":0,"objects":[{"path":"/bin/true"}],"tasks":[{"pid":7,"tid":7,"comm":"true"}],"samples":[{"pid":7,"tid":7,"space":"user","object":0,"offset":4160,"count":3,"period":3000000}]}
"#;
        let p = Profile::parse(v1).unwrap();
        assert_eq!(p.total_samples(), 3);
        assert!(p.frames.is_empty() && p.stacks.is_empty());
        // A profile without call graphs is written without the new keys.
        let text = String::from_utf8(encode(&p)).unwrap();
        assert!(text.starts_with("perflab-profile 2\n") && !text.contains("stacks"), "{text}");
        assert!(!text.contains("target") && !text.contains("kernel_symbols") && !text.contains("off_cpu"), "{text}");
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let bytes = encode(&example());
        // The trailing newline is optional; anything shorter than the JSON body is not.
        for cut in 0..bytes.len() - 1 {
            assert!(Profile::parse(&bytes[..cut]).is_err(), "prefix of {cut} bytes parsed");
        }
    }

    proptest! {
        #[test]
        fn garbage_never_panics(body in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut bytes = b"perflab-profile 1\n".to_vec();
            bytes.extend(&body);
            let _ = Profile::parse(&bytes);
            let _ = Profile::parse(&body);
        }

        #[test]
        fn flipped_bytes_never_panic(pos in 0usize..400, byte in any::<u8>()) {
            let mut bytes = encode(&example());
            let i = pos % bytes.len();
            bytes[i] = byte;
            let _ = Profile::parse(&bytes);
        }
    }
}
