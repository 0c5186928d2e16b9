//! `perflab profile`, `show`, `annotate` and `diff`: their arguments, turned into the
//! profiler's plain options.

// Doc comments here are --help text (clap), read by people on a terminal: brackets mean
// what they say, not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use crate::error::Failure;
use crate::usage;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use perflab_profile as profile;
use perflab_profile::aggregate::By;
use perflab_profile::alloc::source::Stacks;
use perflab_profile::alloc::view::AllocView;
use perflab_profile::annotate::{AnnotateOptions, Syntax};
use perflab_profile::error::ProfileError;
use perflab_profile::format::Profile;
use perflab_profile::record::{self, CallGraph, RecordOptions, RecordingMode};
use perflab_profile::report::{self, ReportOptions};
use perflab_profile::select::SampleFilter;
use perflab_profile::top::TopOptions;
use perflab_profile::unwind::{self, Unwinding};
use perflab_render::profile as render;
use perflab_render::profile::export::{self, Destination, Format};
use perflab_render::profile::flame;
use perflab_render::profile::flame::{FlameOptions, FlameView};
use perflab_sys::spawn::process::Output;
use std::path::{Path, PathBuf};

fn by_parser() -> impl TypedValueParser<Value = By> {
    PossibleValuesParser::new(By::NAMES).map(|s| s.parse::<By>().expect("a listed grouping"))
}

/// How flame graphs are drawn (`profile`, `show`, `diff`).
#[derive(Debug, Args)]
pub struct FlameArgs {
    /// Flame graph layout: `flame` (root at the bottom), `icicle` (root at the top) or
    /// `inverted` (each stack reversed: running functions at the top, callers below).
    #[arg(long, value_name = "VIEW", default_value = "flame",
          value_parser = PossibleValuesParser::new(FlameView::NAMES).map(|s| s.parse::<FlameView>().expect("a listed view")))]
    pub flame_view: FlameView,
    /// Flame graph of the stacks through function NAME only, each starting at NAME.
    #[arg(long, value_name = "NAME")]
    pub flame_focus: Option<String>,
    /// Sibling frames each under PCT % of the whole are drawn as one "other" frame
    /// (0 draws every frame).
    #[arg(long, value_name = "PCT", default_value_t = perflab_render::profile::flame::DEFAULT_MIN_SHARE * 100.0)]
    pub flame_min_share: f64,
}

impl FlameArgs {
    fn options(&self, normalize: bool) -> Result<FlameOptions, Failure> {
        if !(0.0..100.0).contains(&self.flame_min_share) {
            return Err(crate::usage!("--flame-min-share must be between 0 and 100, got {}", self.flame_min_share));
        }
        Ok(FlameOptions {
            view: self.flame_view,
            focus: self.flame_focus.clone(),
            min_share: self.flame_min_share / 100.0,
            normalize,
        })
    }
}

/// Options shared by `profile` and `show` for the flat report.
#[derive(Debug, Args)]
pub struct FlatReportArgs {
    /// Write the report as JSON to FILE (`-` for stdout; the profiled program's stdout then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// What the terminal table groups samples by.
    #[arg(long, default_value = "function", value_parser = by_parser())]
    pub by: By,
    /// Group samples whose source file matches GLOB into regions starting at lines
    /// matching REGEX, named by its first capture group (e.g. 'insns.def:^DEFINE_INSN\((\w+)').
    #[arg(long, value_name = "GLOB:REGEX")]
    pub group_by_source: Option<String>,
    /// Group the terminal table by perf report's sort keys, in this order, one column each:
    /// comm, pid (per thread, TID:comm), dso, sym, srcline (e.g. --sort comm,dso). Shares as
    /// in every table (of all samples' periods); exports are unaffected.
    #[arg(long, value_name = "KEY[,KEY...]", conflicts_with_all = ["by", "group_by_source"])]
    pub sort: Option<String>,
    /// Rows to print in the terminal table.
    #[arg(long, default_value_t = 25)]
    pub limit: usize,
    /// Write the call stacks in folded format (`main;a;leaf 123` per line, for
    /// flamegraph.pl, inferno or speedscope) to FILE (`-` for stdout); needs `-g`.
    #[arg(long, value_name = "FILE")]
    pub folded: Option<PathBuf>,
    /// Write an interactive flame graph of the call stacks (SVG: click to zoom, search,
    /// tooltips) to FILE (`-` for stdout); needs `-g`.
    #[arg(long, value_name = "FILE")]
    pub flamegraph: Option<PathBuf>,
    /// Write the profile for the Firefox Profiler (profiler.firefox.com, "Load a profile
    /// from file"): a track per thread with every sample on its timeline.
    #[arg(long, value_name = "FILE")]
    pub firefox: Option<PathBuf>,
    /// Write the profile in speedscope's format (speedscope.app, or `speedscope FILE`).
    #[arg(long, value_name = "FILE")]
    pub speedscope: Option<PathBuf>,
    /// Write the profile as pprof's gzipped protobuf (`go tool pprof FILE`, Parca, Pyroscope).
    #[arg(long, value_name = "FILE")]
    pub pprof: Option<PathBuf>,
    /// Print the tree of callers of function NAME (as named in the function column), with
    /// how its samples split between them; needs -g.
    #[arg(long, value_name = "NAME")]
    pub callers: Option<String>,
    /// Print the tree of functions that NAME calls, with how its samples split between
    /// them; needs -g.
    #[arg(long, value_name = "NAME")]
    pub callees: Option<String>,
    #[command(flatten)]
    pub flame: FlameArgs,
    /// Of an allocation profile (`profile --alloc`): what the flame graph and the exports
    /// (but pprof, which carries all) weigh: `bytes` requested, `calls`, or `live` (bytes
    /// still allocated at exit).
    #[arg(long, value_name = "VIEW", default_value = "bytes",
          value_parser = PossibleValuesParser::new(AllocView::NAMES).map(|s| s.parse::<AllocView>().expect("a listed view")))]
    pub alloc_view: AllocView,
}

impl FlatReportArgs {
    fn options(&self) -> ReportOptions {
        ReportOptions {
            by: self.by,
            group_by_source: self.group_by_source.clone(),
            callers: self.callers.clone(),
            callees: self.callees.clone(),
            sort: self.sort.clone(),
            // The terminal shows `--limit` rows (and counts the others); only `--json`
            // lists every function, so only then is every row made.
            function_rows: (!self.destinations().iter().any(|d| d.format == Format::Json)).then_some(self.limit.max(1)),
        }
    }

    /// The files asked for, in the order they are written.
    fn destinations(&self) -> Vec<Destination> {
        [
            (Format::Json, &self.json),
            (Format::Folded, &self.folded),
            (Format::FlameGraph, &self.flamegraph),
            (Format::Firefox, &self.firefox),
            (Format::Speedscope, &self.speedscope),
            (Format::Pprof, &self.pprof),
        ]
        .into_iter()
        .filter_map(|(format, path)| Some(Destination { format, path: path.clone()? }))
        .collect()
    }

    /// The first requested output that needs call stacks.
    fn needs_stacks(&self) -> Option<&'static str> {
        let trees = [(self.callers.is_some(), "--callers"), (self.callees.is_some(), "--callees")];
        self.destinations()
            .iter()
            .find(|d| d.format.needs_stacks())
            .map(|d| d.format.flag())
            .or_else(|| trees.into_iter().find_map(|(wanted, flag)| wanted.then_some(flag)))
    }
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Sampling frequency in Hz (per task; cpu-clock's hrtimer caps it near 100 kHz).
    #[arg(short = 'F', long = "frequency", default_value_t = 997)]
    pub frequency: u64,
    /// Sample every N events instead of at a frequency (like perf record -c): `-e
    /// page-faults -c 1` records every fault; for cpu-clock/task-clock N is nanoseconds;
    /// tracepoints default to every event.
    #[arg(short = 'c', long = "count", value_name = "N", conflicts_with = "frequency")]
    pub count: Option<u64>,
    #[arg(short = 'e', long = "event", default_value = "cpu-clock", help = super::args::SAMPLED_EVENT_HELP)]
    pub event: String,
    /// Where to save the profile.
    #[arg(short = 'o', long = "output", default_value = "perflab.profile")]
    pub output: PathBuf,
    /// Record call stacks for inclusive counts, --folded, --flamegraph, --callers/--callees:
    /// `fp` (the default for a bare -g) has the kernel follow frame pointers (cheap; build with
    /// -fno-omit-frame-pointer); `dwarf` copies the user stack per sample and unwinds it from
    /// .eh_frame/.debug_frame (works for -O2 builds and distribution binaries, costs more).
    #[arg(short = 'g', long = "call-graph", value_name = "MODE", num_args = 0..=1, default_missing_value = "fp",
          value_parser = PossibleValuesParser::new(Unwinding::NAMES).map(|s| s.parse::<Unwinding>().expect("a listed mode")))]
    pub call_graph: Option<Unwinding>,
    /// Bytes of user stack copied per sample with -g dwarf (a multiple of 8, at most 65528):
    /// deeper stacks lose their outermost callers.
    #[arg(long, value_name = "BYTES", default_value_t = unwind::DEFAULT_STACK_BYTES)]
    pub stack_size: u32,
    /// Also record where threads block and for how long (context switches with call
    /// stacks; implies -g, unwound like the on-CPU stacks; needs root or
    /// perf_event_paranoid ≤ 1), shown beside on-CPU time.
    #[arg(long)]
    pub off_cpu: bool,
    #[command(flatten)]
    pub target: TargetArgs,
    /// With -p or -a: stop after this long (e.g. 10, 1.5s, 2m) instead of at Ctrl-C.
    #[arg(long, value_name = "DURATION", value_parser = super::args::duration)]
    pub duration: Option<f64>,
    /// Profile allocations instead of sampling time: every call of the malloc family
    /// (malloc, calloc, realloc, free, aligned_alloc, memalign, posix_memalign, valloc,
    /// pvalloc) with its size and call stack, each block followed to its free, so the
    /// blocks live at exit are known. A launched command is recorded in-process (a
    /// library preloaded into each of its processes, as heaptrack does); running
    /// processes (-p), static programs and custom allocators with uprobes (root or
    /// CAP_PERFMON; every call traps into the kernel, see docs/profiling.md).
    #[arg(long, conflicts_with_all = ["off_cpu", "count", "event", "frequency"])]
    pub alloc: bool,
    /// With --alloc: how calls are seen — auto (in-process where it can, else uprobes,
    /// saying why), preload (in-process or an error), uprobes.
    #[arg(long, value_name = "HOW", default_value = "auto", requires = "alloc",
          value_parser = PossibleValuesParser::new(profile::alloc::Via::NAMES).map(|s| s.parse::<profile::alloc::Via>().expect("a listed way")))]
    pub alloc_via: profile::alloc::Via,
    /// With --alloc: unwind only allocations holding a byte of a Poisson process with this
    /// mean gap (e.g. 512KiB, as Go's profiler; tcmalloc and jemalloc sample the same way):
    /// calls and bytes per call site become unbiased estimates with a stated spread,
    /// totals per function stay exact, blocks are not followed. In-process only.
    #[arg(long, value_name = "BYTES", requires = "alloc", value_parser = parse_bytes)]
    pub alloc_sample: Option<u64>,
    /// Removed: every-N-th-call sampling aliases with programs that allocate in a
    /// period (a 3:1 pattern at N = 100 reported 78 MiB for 20 MiB); use --alloc-sample.
    #[arg(long, value_name = "N", requires = "alloc", hide = true)]
    pub alloc_every: Option<u64>,
    /// With --alloc: also probe a custom allocator, its size in argument ARG (from 1;
    /// default 1), e.g. `postgres:palloc`, `postgres:MemoryContextAlloc=2`; repeatable.
    #[arg(long = "alloc-fn", value_name = "OBJECT:FUNCTION[=ARG]", requires = "alloc")]
    pub alloc_fn: Vec<String>,
    /// With --alloc: a custom release function, the block in argument ARG (default 1),
    /// e.g. `postgres:pfree`; repeatable.
    #[arg(long = "free-fn", value_name = "OBJECT:FUNCTION[=ARG]", requires = "alloc")]
    pub free_fn: Vec<String>,
    /// With --alloc: probe only the --alloc-fn/--free-fn functions, not the C library's.
    #[arg(long, requires = "alloc")]
    pub no_libc_alloc: bool,
    #[command(flatten)]
    pub report: FlatReportArgs,
    /// The command to profile, after `--` (or -p / -a).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// What to sample instead of a command: running processes or every CPU.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Attach to running processes: every thread, and the threads and processes they start.
    #[arg(short = 'p', long = "pid", value_name = "PID[,PID...]")]
    pub pid: Option<String>,
    /// Sample every task on every CPU (needs root or perf_event_paranoid ≤ 0).
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "pid")]
    pub all_cpus: bool,
}

impl TargetArgs {
    /// What to sample: the command after `--`, running processes or every CPU (`None`:
    /// nothing was given), shared by `profile` and `top`.
    fn mode(self, command: Vec<String>, duration: Option<f64>) -> Result<Option<RecordingMode>, Failure> {
        let duration = duration.map(std::time::Duration::from_secs_f64);
        let pids = self
            .pid
            .as_deref()
            .map_or(Ok(Vec::new()), |p| profile::target::parse_pids(p).map_err(|e| crate::usage!("-p: {e}")))?;
        let targets = usize::from(!command.is_empty()) + usize::from(!pids.is_empty()) + usize::from(self.all_cpus);
        if targets > 1 {
            return Err(crate::usage!("profile one target: a command after `--`, -p PID or -a"));
        }
        if !command.is_empty() {
            if duration.is_some() {
                return Err(crate::usage!("--duration is for -p and -a; a command is profiled until it exits"));
            }
            return Ok(Some(RecordingMode::Launch { argv: command, output: Output::Inherit }));
        }
        Ok(if !pids.is_empty() {
            Some(RecordingMode::Pids { pids, duration })
        } else if self.all_cpus {
            Some(RecordingMode::AllCpus { duration })
        } else {
            None
        })
    }
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// Sampling frequency in Hz (per CPU or task).
    #[arg(short = 'F', long = "frequency", default_value_t = 997)]
    pub frequency: u64,
    #[arg(short = 'e', long = "event", default_value = "cpu-clock", help = super::args::SAMPLED_EVENT_HELP)]
    pub event: String,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Seconds between refreshes; each shows the samples of the last interval.
    #[arg(long, value_name = "DURATION", default_value = "1", value_parser = super::args::duration)]
    pub interval: f64,
    /// Stop after N refreshes (default: until q, Ctrl-C or the target's end).
    #[arg(long, value_name = "N")]
    pub iterations: Option<u32>,
    /// Print plain-text frames instead of taking the screen (automatic when stdout is not a terminal).
    #[arg(long)]
    pub batch: bool,
    /// Rows per refresh.
    #[arg(long, default_value_t = 25)]
    pub limit: usize,
    /// A command to run and watch, after `--` (default: -a, every CPU).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// perf report's sample filters, comma-separated lists (samples matching every given
/// one are kept; shares are then of what was kept).
#[derive(Debug, Args, Default)]
pub struct SampleFilterArgs {
    /// Only samples of these command names (comm).
    #[arg(long = "comm", value_name = "COMM[,COMM...]", value_delimiter = ',')]
    pub comms: Vec<String>,
    /// Only samples of these processes.
    #[arg(long = "pid", value_name = "PID[,PID...]", value_delimiter = ',')]
    pub pids: Vec<u32>,
    /// Only samples of these threads.
    #[arg(long = "tid", value_name = "TID[,TID...]", value_delimiter = ',')]
    pub tids: Vec<u32>,
    /// Only samples in these objects: a path or file name (libc.so.6), [kernel.kallsyms],
    /// [unknown] (code outside any mapped file).
    #[arg(long = "dso", value_name = "DSO[,DSO...]", value_delimiter = ',')]
    pub dsos: Vec<String>,
}

impl SampleFilterArgs {
    /// The filter, with `--symbol` names where the command has that flag (annotate's
    /// `--symbol` names the function to annotate instead).
    fn filter(&self, symbols: &[String]) -> SampleFilter {
        SampleFilter {
            comms: self.comms.clone(),
            pids: self.pids.clone(),
            tids: self.tids.clone(),
            dsos: self.dsos.clone(),
            symbols: symbols.to_vec(),
        }
    }
}

/// perf report's `--symbols` filter, for `show` and `diff`.
#[derive(Debug, Args, Default)]
pub struct SymbolFilterArgs {
    /// Only samples in these functions (self, the sampled function, not its callers), by
    /// exact name as the function column shows it (perf report --symbols).
    #[arg(long = "symbol", visible_alias = "symbols", value_name = "NAME[,NAME...]", value_delimiter = ',')]
    pub symbols: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A profile saved by `perflab profile`, or a perf.data file of `perf record`.
    pub profile: PathBuf,
    /// Of a perf.data file with samples of several events: the event to show (perf's
    /// name for it, e.g. cycles:u).
    #[arg(short = 'e', long = "event", value_name = "NAME")]
    pub event: Option<String>,
    #[command(flatten)]
    pub select: SampleFilterArgs,
    #[command(flatten)]
    pub symbols: SymbolFilterArgs,
    #[command(flatten)]
    pub report: FlatReportArgs,
}

#[derive(Debug, Args)]
pub struct AnnotateArgs {
    /// A profile saved by `perflab profile`, or a perf.data file of `perf record`.
    #[arg(default_value = "perflab.profile")]
    pub profile: PathBuf,
    /// Of a perf.data file with samples of several events: the event to annotate.
    #[arg(short = 'e', long = "event", value_name = "NAME")]
    pub event: Option<String>,
    #[command(flatten)]
    pub select: SampleFilterArgs,
    /// Annotate this function (demangled name, clone suffixes optional) instead of the hottest ones.
    #[arg(long, value_name = "NAME")]
    pub symbol: Option<String>,
    /// How many of the hottest functions to annotate when no --symbol is given.
    #[arg(long, default_value_t = 3)]
    pub top: usize,
    /// Assembly syntax.
    #[arg(long, default_value = "att",
          value_parser = PossibleValuesParser::new(Syntax::NAMES).map(|s| s.parse::<Syntax>().expect("a listed syntax")))]
    pub syntax: Syntax,
    /// Write the annotation as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run llvm-mca on each function's hot loop (or hot basic block) for per-instruction
    /// latency and throughput; CPU is an LLVM -mcpu name (default: this machine's family).
    #[arg(long, value_name = "CPU", num_args = 0..=1, require_equals = true, default_missing_value = "auto")]
    pub mca: Option<String>,
    /// The running kernel's image with symbols, to annotate kernel functions (default:
    /// where perf looks, e.g. /usr/lib/debug/boot/vmlinux-RELEASE).
    #[arg(long, value_name = "FILE")]
    pub vmlinux: Option<PathBuf>,
    /// Print every instruction (default: a long function's hot blocks — instructions with
    /// at least 1 % of its samples, the loops around them, and context —, saying what was
    /// left out). `--json` always has every instruction.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline profile (perflab's or a perf.data file).
    pub old: PathBuf,
    /// The profile to compare with it.
    pub new: PathBuf,
    /// Of perf.data files with samples of several events: the event to compare.
    #[arg(short = 'e', long = "event", value_name = "NAME")]
    pub event: Option<String>,
    /// Applied to both profiles.
    #[command(flatten)]
    pub select: SampleFilterArgs,
    #[command(flatten)]
    pub symbols: SymbolFilterArgs,
    /// Match and report by function, source line or object.
    #[arg(long, default_value = "function", value_parser = by_parser())]
    pub by: By,
    /// perf report's sort keys, as the matching key: dso,sym (or sym) is --by function,
    /// dso is --by object, srcline is --by line; comm and pid are refused (two runs have
    /// different processes).
    #[arg(long, value_name = "KEY[,KEY...]", conflicts_with_all = ["by", "stacks"])]
    pub sort: Option<String>,
    /// Rows to print in the terminal table.
    #[arg(long, default_value_t = 25)]
    pub limit: usize,
    /// Write the diff as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Compare whole call stacks (root;…;leaf, matched by function names) instead of
    /// functions; needs profiles recorded with -g.
    #[arg(long, conflicts_with = "by")]
    pub stacks: bool,
    /// Write a differential flame graph (SVG) to FILE (`-` for stdout): frames coloured by
    /// how their own time changed (red more, blue less), vanished stacks still drawn; needs -g.
    #[arg(long, value_name = "FILE")]
    pub flamegraph: Option<PathBuf>,
    /// Draw the differential flame graph in seconds as measured, instead of scaling the
    /// old profile to the new one's total (the default: widths and colours then compare
    /// shares of time, and a much slower build is not red everywhere).
    #[arg(long)]
    pub flame_absolute: bool,
    #[command(flatten)]
    pub flame: FlameArgs,
}

pub fn main_profile(args: ProfileArgs) -> Result<(), Failure> {
    if args.alloc {
        return main_alloc(args);
    }
    let nothing = || usage!("nothing to profile: put a command after `--`, or attach with -p PID or -a");
    let record = RecordOptions {
        mode: args.target.mode(args.command, args.duration)?.ok_or_else(nothing)?,
        event: args.event,
        frequency_hz: args.frequency,
        period: args.count,
        // Off-CPU stacks need call stacks: frame pointers unless -g says otherwise.
        call_graph: CallGraph::from_unwinding(
            args.call_graph.or(args.off_cpu.then_some(Unwinding::FramePointers)),
            args.stack_size,
        ),
        off_cpu: args.off_cpu,
    };
    let destinations = args.report.destinations();
    // Fail before the run, not after it, when the results could not be written.
    if let Some(spec) = &args.report.group_by_source {
        profile::aggregate::SourceRegions::parse(spec)?;
    }
    if let Some(spec) = &args.report.sort {
        profile::sort::parse_keys(spec)?;
    }
    args.report.flame.options(true)?;
    check_writable(&args.output)?;
    if !record.has_call_graph() {
        if let Some(flag) = args.report.needs_stacks() {
            return Err(usage!("{flag} needs call stacks: add -g"));
        }
    }
    export::check_distinct(&destinations)?;
    for d in destinations.iter().filter(|d| !d.to_stdout()) {
        check_writable(&d.path)?;
    }
    // A report on stdout must not be interleaved with the program's own output.
    let report_on_stdout = destinations.iter().any(Destination::to_stdout);
    let output = if report_on_stdout { Output::StdoutToStderr } else { Output::Inherit };
    let what = record.describe();
    let recording = record::record_then(&record.with_output(output), || {
        if let Some(what) = what {
            eprintln!("perflab: {}", perflab_sys::text::escape(&what));
        }
    })?;
    let profile = recording.profile;
    profile.save(&args.output)?;
    eprintln!(
        "perflab: {} samples of {} in {:.2} s, {} task{}{} → {}",
        profile.total_samples(),
        perflab_sys::text::escape(&profile.event),
        profile.duration_s,
        profile.tasks.len(),
        if profile.tasks.len() == 1 { "" } else { "s" },
        if profile.lost > 0 { format!(", {} records lost", profile.lost) } else { String::new() },
        args.output.display()
    );
    report_profile(&profile, &args.report, &destinations)?;
    if recording.interrupted {
        return Err(Failure::Interrupted(format!("interrupted; the profile so far is in {}", args.output.display())));
    }
    if !profile.target.is_command() {
        return Ok(());
    }
    match profile.exit_code {
        Some(0) => Ok(()),
        Some(code) => Err(Failure::CommandFailed(format!("the profiled command exited with status {code}"))),
        None => Err(Failure::CommandFailed("the profiled command was killed by a signal".into())),
    }
}

fn check_writable(path: &Path) -> Result<(), Failure> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| usage!("cannot write {}: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// The report of a profile: warnings on stderr, the files written (before anything on
/// the terminal, so a closed stdout cannot lose them), then the terminal report unless
/// stdout carries one of the files.
fn report_profile(profile: &Profile, args: &FlatReportArgs, destinations: &[Destination]) -> Result<(), Failure> {
    let flame = args.flame.options(true)?;
    let report = report::build(profile, &args.options())?;
    eprint!("{}", render::warnings(&report.flat.warnings));
    let title = format!("perflab: {}", profile.command.join(" "));
    crate::output::profile::write_all(destinations, profile, &report, &title, &flame)?;
    if !destinations.iter().any(Destination::to_stdout) {
        print_text(&render::flat::report(&report.flat, args.limit));
    }
    Ok(())
}

/// Terminal text on stdout (never a panic: `render::stdout` keeps a failure for the
/// end of the command, after every file is written).
fn print_text(text: &str) {
    crate::output::stdout::write(text);
}

pub fn main_top(args: TopArgs) -> Result<(), Failure> {
    let mode = args.target.mode(args.command, None)?;
    super::top::main_top(&TopOptions {
        every_cpu_by_default: mode.is_none(),
        record: RecordOptions {
            mode: mode.unwrap_or(RecordingMode::AllCpus { duration: None }),
            event: args.event,
            frequency_hz: args.frequency,
            ..RecordOptions::default()
        },
        interval: std::time::Duration::from_secs_f64(args.interval),
        iterations: args.iterations,
        batch: args.batch,
        limit: args.limit,
    })
}

/// A profile file (perflab's or perf.data), its reading's warnings on stderr, only the
/// samples `select` keeps (and how many that is, said on stderr).
fn load(path: &Path, event: Option<&str>, filter: &SampleFilter) -> Result<Profile, Failure> {
    selected(path, profile::input::load(path, event)?, filter)
}

/// Two profiles loaded at once, one per CPU (each load is one thread's work: `diff`
/// of two files of 1.2 M distinct frames took twice one `show`), their warnings said
/// in order, old first.
fn load_both(paths: [&Path; 2], event: Option<&str>, filter: &SampleFilter) -> Result<(Profile, Profile), Failure> {
    let (old, new) = std::thread::scope(|scope| {
        let old = scope.spawn(|| profile::input::load(paths[0], event));
        let new = profile::input::load(paths[1], event);
        (old.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), new)
    });
    let old = selected(paths[0], old?, filter)?;
    Ok((old, selected(paths[1], new?, filter)?))
}

/// A loaded profile's warnings said, and only the samples `filter` selects kept.
fn selected(path: &Path, loaded: profile::input::Loaded, filter: &SampleFilter) -> Result<Profile, Failure> {
    eprint!("{}", render::warnings(&loaded.warnings));
    let mut profile = loaded.profile;
    if !filter.is_empty() {
        let kept = filter.apply(&mut profile);
        if kept.samples == 0 {
            let (path, filter) = (path.to_path_buf(), filter.describe());
            return Err(ProfileError::NothingSelected { path, filter, of: kept.of }.into());
        }
        eprintln!(
            "perflab: {}: {} of {} samples kept by {}; shares are of those",
            path.display(),
            kept.samples,
            kept.of,
            perflab_render::escape(&filter.describe())
        );
    }
    Ok(profile)
}

pub fn main_show(args: ShowArgs) -> Result<(), Failure> {
    if let Some(spec) = &args.report.sort {
        profile::sort::parse_keys(spec)?;
    }
    let filter = args.select.filter(&args.symbols.symbols);
    let profile = load(&args.profile, args.event.as_deref(), &filter)?;
    if profile.stacks.is_empty() {
        if let Some(flag) = args.report.needs_stacks() {
            return Err(ProfileError::NoStacks { path: args.profile.clone(), flag }.into());
        }
    }
    let destinations = args.report.destinations();
    export::check_distinct(&destinations)?;
    if profile.alloc.is_some() {
        return report_alloc(&profile, &args.report, &destinations);
    }
    report_profile(&profile, &args.report, &destinations)
}

/// `profile --alloc`: the command under the allocation probes (see `profile::alloc`).
fn main_alloc(args: ProfileArgs) -> Result<(), Failure> {
    if args.alloc_every.is_some() {
        return Err(usage!(
            "--alloc-every was removed: every-N-th-call sampling aliases with programs that allocate in a period; \
             --alloc-sample BYTES samples by bytes without bias (or leave it out: every call is recorded)"
        ));
    }
    if args.target.all_cpus {
        return Err(usage!("--alloc profiles a command (after `--`) or processes (-p); -a is not supported with it"));
    }
    let pids = match args.target.mode(Vec::new(), args.duration)? {
        Some(RecordingMode::Pids { pids, .. }) if !args.command.is_empty() => {
            return Err(usage!(
                "profile one target: a command after `--` or -p PID (got both, {} processes)",
                pids.len()
            ))
        }
        Some(RecordingMode::Pids { pids, .. }) => pids,
        _ if args.duration.is_some() => {
            return Err(usage!("--duration is for -p; a command is profiled until it exits"))
        }
        _ => Vec::new(),
    };
    let stacks = match args.call_graph {
        Some(Unwinding::FramePointers) => Stacks::FramePointers,
        Some(Unwinding::Dwarf) => Stacks::Dwarf { stack_bytes: args.stack_size },
        None => Stacks::Dwarf { stack_bytes: profile::alloc::DEFAULT_STACK_BYTES },
    };
    if let Stacks::Dwarf { stack_bytes } = stacks {
        if stack_bytes == 0 || stack_bytes > unwind::MAX_STACK_BYTES || stack_bytes % 8 != 0 {
            return Err(usage!("--stack-size must be a multiple of 8 between 8 and {}", unwind::MAX_STACK_BYTES));
        }
    }
    let mut custom = Vec::new();
    for spec in &args.alloc_fn {
        custom.push(profile::alloc::Custom::parse(spec, false)?);
    }
    for spec in &args.free_fn {
        custom.push(profile::alloc::Custom::parse(spec, true)?);
    }
    if args.no_libc_alloc && custom.is_empty() {
        return Err(usage!("--no-libc-alloc leaves nothing to probe: name allocators with --alloc-fn"));
    }
    let destinations = args.report.destinations();
    args.report.flame.options(true)?;
    check_writable(&args.output)?;
    export::check_distinct(&destinations)?;
    for d in destinations.iter().filter(|d| !d.to_stdout()) {
        check_writable(&d.path)?;
    }
    let report_on_stdout = destinations.iter().any(Destination::to_stdout);
    let options = profile::alloc::AllocOptions {
        argv: args.command,
        output: if report_on_stdout { Output::StdoutToStderr } else { Output::Inherit },
        every: 1,
        via: args.alloc_via,
        sample_bytes: args.alloc_sample,
        stacks,
        stacks_asked: args.call_graph.is_some() || args.stack_size != unwind::DEFAULT_STACK_BYTES,
        custom,
        libc: !args.no_libc_alloc,
        pids,
        duration: args.duration.map(std::time::Duration::from_secs_f64),
        progress: Some(|line| eprintln!("{line}")),
    };
    let attached = |pids: &[u32]| {
        let until = match args.duration {
            Some(seconds) => format!("for {seconds} s"),
            None => "until they exit or Ctrl-C".into(),
        };
        let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
        eprintln!("perflab: recording the allocations of {} {until}", pids.join(","));
    };
    let recording = profile::alloc::record(&options, || {
        if !options.pids.is_empty() {
            attached(&options.pids)
        }
    })?;
    let profile = recording.profile;
    profile.save(&args.output)?;
    let summary = profile.alloc.as_ref().expect("an allocation recording has its summary");
    eprintln!(
        "perflab: {} allocation calls and {} frees of `{}` in {:.2} s{} → {}",
        summary.allocations(),
        summary.functions.iter().filter(|f| !f.role.allocates()).map(|f| f.calls).sum::<u64>(),
        perflab_sys::text::escape(&profile.command.join(" ")),
        profile.duration_s,
        if profile.lost > 0 { format!(", {} records lost", profile.lost) } else { String::new() },
        args.output.display()
    );
    report_alloc(&profile, &args.report, &destinations)?;
    match recording.unfinished {
        Some(profile::alloc::Unfinished::Interrupted) => {
            return Err(Failure::Interrupted(format!(
                "interrupted; the profile so far is in {}",
                args.output.display()
            )))
        }
        Some(profile::alloc::Unfinished::WaitFailed(why)) => {
            return Err(Failure::Other(anyhow::anyhow!(
                "waiting for the profiled command failed ({why}); the profile so far is in {}",
                args.output.display()
            )))
        }
        None => {}
    }
    if !profile.target.is_command() {
        return Ok(());
    }
    match profile.exit_code {
        Some(0) => Ok(()),
        Some(code) => Err(Failure::CommandFailed(format!("the profiled command exited with status {code}"))),
        None => Err(Failure::CommandFailed("the profiled command was killed by a signal".into())),
    }
}

/// An allocation profile's report: the files (pprof from the profile as recorded, with
/// every sample type; the others weighed as `--alloc-view` says), then the call sites.
fn report_alloc(profile: &Profile, args: &FlatReportArgs, destinations: &[Destination]) -> Result<(), Failure> {
    let flame = args.flame.options(true)?;
    let viewed = profile::alloc::view::view(profile, args.alloc_view);
    let (pprof, others): (Vec<Destination>, Vec<Destination>) =
        destinations.iter().cloned().partition(|d| d.format == Format::Pprof);
    let title = format!("perflab: {} ({})", profile.command.join(" "), viewed.event);
    let report = report::build(&viewed, &args.options())?;
    let mut first_failure = crate::output::profile::write_all(&others, &viewed, &report, &title, &flame).err();
    if !pprof.is_empty() {
        let report = report::build(profile, &args.options())?;
        if let Err(e) = crate::output::profile::write_all(&pprof, profile, &report, &title, &flame) {
            first_failure.get_or_insert(e);
        }
    }
    if !destinations.iter().any(Destination::to_stdout) {
        let sites = profile::alloc::view::sites(profile, &mut profile::symbolize::Symbolizer::default());
        let summary = profile.alloc.as_ref().expect("an allocation profile");
        print_text(&render::alloc::report(&profile.command.join(" "), profile.duration_s, summary, &sites, args.limit));
    }
    first_failure.map_or(Ok(()), |e| Err(e.into()))
}

pub fn main_annotate(args: AnnotateArgs) -> Result<(), Failure> {
    let profile = load(&args.profile, args.event.as_deref(), &args.select.filter(&[]))?;
    let options = AnnotateOptions {
        symbol: args.symbol,
        top: args.top,
        syntax: args.syntax,
        mca: args.mca,
        vmlinux: args.vmlinux,
    };
    let annotation = profile::annotate::annotation(&profile, &options)?;
    eprint!("{}", render::warnings(&annotation.warnings));
    if let Some(path) = &args.json {
        crate::output::write_json(path, &annotation)?;
    }
    if args.json.as_deref() != Some(Path::new("-")) {
        print_text(&render::annotate::report(&annotation, args.all));
    }
    Ok(())
}

pub fn main_diff(args: DiffArgs) -> Result<(), Failure> {
    let flame = args.flame.options(!args.flame_absolute)?;
    let by = match &args.sort {
        Some(spec) => profile::sort::diff_by(&profile::sort::parse_keys(spec)?)?,
        None => args.by,
    };
    let filter = args.select.filter(&args.symbols.symbols);
    let (old, new) = load_both([&args.old, &args.new], args.event.as_deref(), &filter)?;
    if let Some(path) = &args.flamegraph {
        for (p, path) in [(&old, &args.old), (&new, &args.new)] {
            if p.stacks.is_empty() {
                return Err(ProfileError::NoStacks { path: path.clone(), flag: "--flamegraph" }.into());
            }
        }
        if args.json.as_ref() == Some(path) {
            return Err(usage!("--json and --flamegraph cannot write to the same place"));
        }
    }
    let report = profile::diff::report(&old, &new, [&args.old, &args.new], by, args.stacks)?;
    eprint!("{}", render::warnings(&report.warnings));
    if let Some(path) = &args.json {
        crate::output::write_json(path, &report)?;
    }
    if let Some(path) = &args.flamegraph {
        let title = format!("perflab diff {} → {}", args.old.display(), args.new.display());
        // Each profile's call graph, then the profile without what only its graph
        // needed: two profiles of 1.2 M distinct frames are not held beside both graphs
        // (the graphs built at once, one per CPU, took 0.25 s less and 70 MB more).
        let (mut old, mut new) = (old, new);
        let old_graph = flame::call_graph(&old);
        drop_call_stacks(&mut old);
        let new_graph = flame::call_graph(&new);
        drop_call_stacks(&mut new);
        let svg = old_graph
            .zip(new_graph)
            .and_then(|(o, n)| flame::diff_svg_of_graphs([&old, &new], [&o, &n], &title, &flame))
            .expect("both profiles have call stacks (checked above)");
        crate::output::profile::write(path, svg.as_bytes())?;
    }
    let to_stdout = [&args.json, &args.flamegraph].into_iter().flatten().any(|p| p == Path::new("-"));
    if !to_stdout {
        print_text(&render::diff::report(&report, args.limit));
    }
    Ok(())
}

/// Let go of a profile's call stacks and what names their frames (its frames and runtime
/// symbols), once its call graph is made.
fn drop_call_stacks(profile: &mut Profile) {
    for list in [&mut profile.stacks, &mut profile.off_cpu] {
        *list = Vec::new();
    }
    profile.frames = Vec::new();
    profile.jit_symbols = Vec::new();
    profile.timeline = None;
}

/// `512KiB`, `4k`, `1M`, `65536`: a size in bytes (binary multiples), at least 1.
fn parse_bytes(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let split = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let factor: u64 = match unit.trim_end_matches("ib").trim_end_matches('b') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return Err(format!("`{text}` is not a size (e.g. 65536, 64KiB, 1M)")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{text}` is not a size of at least 1 byte (e.g. 65536, 64KiB, 1M)"))
}
