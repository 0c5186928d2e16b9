//! `perflab profile`, `show`, `annotate` and `diff`: their arguments, turned into the
//! profiler's plain options.

use crate::error::Failure;
use crate::profile::aggregate::By;
use crate::profile::annotate::{AnnotateOptions, Syntax};
use crate::profile::diff::DiffOptions;
use crate::profile::record::RecordOptions;
use crate::profile::unwind::{self, Unwinding};
use crate::profile::{self, ProfileOptions, ReportOptions, ShowOptions};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use std::path::PathBuf;

fn by_parser() -> impl TypedValueParser<Value = By> {
    PossibleValuesParser::new(By::NAMES).map(|s| s.parse::<By>().expect("a listed grouping"))
}

/// Options shared by `profile` and `show` for the flat report.
#[derive(Debug, Args)]
pub struct ReportArgs {
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
    /// Print the tree of callers of function NAME (as named in the function column), with
    /// how its samples split between them; needs -g.
    #[arg(long, value_name = "NAME")]
    pub callers: Option<String>,
    /// Print the tree of functions that NAME calls, with how its samples split between
    /// them; needs -g.
    #[arg(long, value_name = "NAME")]
    pub callees: Option<String>,
}

impl ReportArgs {
    fn options(self) -> ReportOptions {
        ReportOptions {
            json: self.json,
            by: self.by,
            group_by_source: self.group_by_source,
            limit: self.limit,
            folded: self.folded,
            flamegraph: self.flamegraph,
            callers: self.callers,
            callees: self.callees,
        }
    }
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Sampling frequency in Hz (per task; cpu-clock's hrtimer caps it near 100 kHz).
    #[arg(short = 'F', long = "frequency", default_value_t = 997)]
    pub frequency: u64,
    /// Event to sample: cpu-clock (default, needs no PMU), task-clock, cycles, instructions,
    /// cache-misses, branch-misses.
    #[arg(short = 'e', long = "event", default_value = "cpu-clock")]
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
    #[command(flatten)]
    pub report: ReportArgs,
    /// The command to profile, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A profile saved by `perflab profile`.
    pub profile: PathBuf,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
pub struct AnnotateArgs {
    /// A profile saved by `perflab profile`.
    #[arg(default_value = "perflab.profile")]
    pub profile: PathBuf,
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
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline profile.
    pub old: PathBuf,
    /// The profile to compare with it.
    pub new: PathBuf,
    /// Match and report by function, source line or object.
    #[arg(long, default_value = "function", value_parser = by_parser())]
    pub by: By,
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
}

pub fn main_profile(args: ProfileArgs) -> Result<(), Failure> {
    profile::main_profile(&ProfileOptions {
        record: RecordOptions {
            argv: args.command,
            event: args.event,
            frequency_hz: args.frequency,
            call_graph: args.call_graph.is_some(),
            unwinding: args.call_graph.unwrap_or_default(),
            stack_bytes: args.stack_size,
            ..RecordOptions::default()
        },
        output: args.output,
        report: args.report.options(),
    })
}

pub fn main_show(args: ShowArgs) -> Result<(), Failure> {
    profile::main_show(&ShowOptions { profile: args.profile, report: args.report.options() })
}

pub fn main_annotate(args: AnnotateArgs) -> Result<(), Failure> {
    profile::annotate::main_annotate(&AnnotateOptions {
        profile: args.profile,
        symbol: args.symbol,
        top: args.top,
        syntax: args.syntax,
        json: args.json,
        mca: args.mca,
    })
}

pub fn main_diff(args: DiffArgs) -> Result<(), Failure> {
    profile::diff::main_diff(&DiffOptions {
        old: args.old,
        new: args.new,
        by: args.by,
        limit: args.limit,
        json: args.json,
        stacks: args.stacks,
        flamegraph: args.flamegraph,
    })
}
