//! Profiling: `perflab profile` samples a command, `show` prints a saved profile,
//! `annotate` disassembles hot functions with per-instruction samples and cost hints,
//! `diff` compares two profiles. The pipeline is
//! [`record`] (sample) → [`format`] (the saved file) → [`symbolize`] → [`aggregate`] →
//! [`annotate`] (with [`hints`] and, where installed, llvm-mca via [`mca`]) and [`diff`];
//! `-g dwarf` stacks are unwound by [`unwind`] while recording, runtime code (JIT, SBCL)
//! is named from perf maps by [`jitmap`] and copied while recording, stripped objects'
//! debug files may come from [`debuginfod`]; call stacks are drawn by [`flame`] and
//! walked by [`callers`].

pub mod aggregate;
pub mod annotate;
pub mod callers;
pub mod debuginfod;
pub mod diff;
pub mod flame;
pub mod format;
pub mod hints;
pub mod jitmap;
pub mod kernel;
pub mod mca;
pub mod offcpu;
pub mod record;
pub mod symbolize;
pub mod target;
pub mod top;
pub mod unwind;

use crate::error::Failure;
use crate::executor::process::Output;
use crate::render::color;
use crate::usage;
use aggregate::{By, Located, Row, SourceRegions};
use format::Profile;
use serde::Serialize;
use std::path::{Path, PathBuf};
use symbolize::Symbolizer;

/// Options shared by `profile` and `show` for the flat report.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Write the report as JSON to FILE (`-` for stdout).
    pub json: Option<PathBuf>,
    /// What the terminal table groups samples by.
    pub by: By,
    /// Group samples whose source file matches GLOB into regions starting at lines
    /// matching REGEX, named by its first capture group (e.g. 'insns.def:^DEFINE_INSN\((\w+)').
    pub group_by_source: Option<String>,
    /// Rows to print in the terminal table.
    pub limit: usize,
    /// Write the call stacks in folded format (`main;a;leaf 123` per line, for
    /// flamegraph.pl, inferno or speedscope) to FILE (`-` for stdout); needs `-g`.
    pub folded: Option<PathBuf>,
    /// Write an interactive flame graph (SVG) of the call stacks to FILE; needs `-g`.
    pub flamegraph: Option<PathBuf>,
    /// Print the tree of callers of this function; needs `-g`.
    pub callers: Option<String>,
    /// Print the tree of functions this function calls; needs `-g`.
    pub callees: Option<String>,
    /// How `flamegraph` is drawn.
    pub flame: flame::FlameOptions,
}

/// `perflab profile`: what to record, where to save it, how to report it.
#[derive(Debug, Clone)]
pub struct ProfileOptions {
    pub record: record::RecordOptions,
    /// Where to save the profile.
    pub output: PathBuf,
    pub report: ReportOptions,
}

#[derive(Debug, Clone)]
pub struct ShowOptions {
    /// A profile saved by `perflab profile`.
    pub profile: PathBuf,
    pub report: ReportOptions,
}

/// `perflab profile`: record, save, then report like `show`.
pub fn main_profile(args: &ProfileOptions) -> Result<(), Failure> {
    let regions = args.report.group_by_source.as_deref().map(SourceRegions::parse).transpose()?;
    // Fail before the run, not after it, when the results could not be written.
    check_writable(&args.output)?;
    if !args.record.has_call_graph() {
        if let Some(flag) = args.report.needs_stacks() {
            return Err(usage!("{flag} needs call stacks: add -g"));
        }
    }
    args.report.check_destinations()?;
    for path in args.report.files().filter(|p| *p != Path::new("-")) {
        check_writable(path)?;
    }
    // A report on stdout must not be interleaved with the program's own output.
    let report_on_stdout = args.report.files().any(|p| p == Path::new("-"));
    let output = if report_on_stdout { Output::StdoutToStderr } else { Output::Inherit };
    if let Some(what) = args.record.describe() {
        eprintln!("perflab: {what}");
    }
    let recording = record::record(&args.record.clone().with_output(output))?;
    let profile = recording.profile;
    profile.save(&args.output)?;
    eprintln!(
        "perflab: {} samples of {} in {:.2} s, {} task{}{} → {}",
        profile.total_samples(),
        profile.event,
        profile.duration_s,
        profile.tasks.len(),
        if profile.tasks.len() == 1 { "" } else { "s" },
        if profile.lost > 0 { format!(", {} records lost", profile.lost) } else { String::new() },
        args.output.display()
    );
    report(&profile, &args.report, regions)?;
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

/// `perflab show`: report a saved profile.
pub fn main_show(args: &ShowOptions) -> Result<(), Failure> {
    let regions = args.report.group_by_source.as_deref().map(SourceRegions::parse).transpose()?;
    let profile = Profile::load(&args.profile)?;
    if profile.stacks.is_empty() {
        if let Some(flag) = args.report.needs_stacks() {
            return Err(usage!(
                "{} has no call stacks for {flag} (recorded without `perflab profile -g`, or no samples)",
                args.profile.display()
            ));
        }
    }
    args.report.check_destinations()?;
    report(&profile, &args.report, regions)
}

impl ReportOptions {
    /// The first requested output that needs call stacks.
    fn needs_stacks(&self) -> Option<&'static str> {
        [
            (self.folded.is_some(), "--folded"),
            (self.flamegraph.is_some(), "--flamegraph"),
            (self.callers.is_some(), "--callers"),
            (self.callees.is_some(), "--callees"),
        ]
        .into_iter()
        .find_map(|(wanted, flag)| wanted.then_some(flag))
    }

    fn files(&self) -> impl Iterator<Item = &PathBuf> {
        [&self.json, &self.folded, &self.flamegraph].into_iter().flatten()
    }

    /// Two outputs to one file would overwrite each other; `-` (stdout) is for one of them.
    fn check_destinations(&self) -> Result<(), Failure> {
        let files: Vec<&PathBuf> = self.files().collect();
        if files.iter().enumerate().any(|(i, a)| files[i + 1..].contains(a)) {
            return Err(usage!("--json, --folded and --flamegraph cannot write to the same place"));
        }
        Ok(())
    }
}

/// Branches of the caller/callee trees with less than this share of the function's
/// samples are summed into one line.
const TREE_MIN_SHARE: f64 = 0.005;

/// JSON schema of `profile --json` / `show --json` (docs/profiling.md).
#[derive(Serialize)]
struct FlatJson<'a> {
    schema_version: u32,
    event: &'a str,
    frequency_hz: u64,
    command: &'a [String],
    /// `command`, `{"pids": [...]}` (-p) or `all_cpus` (-a).
    target: &'a format::RecordTarget,
    duration_s: f64,
    cpu_s: f64,
    samples: u64,
    lost: u64,
    tasks: Vec<TaskJson<'a>>,
    functions: Vec<Row>,
    lines: Vec<Row>,
    objects: Vec<Row>,
    #[serde(skip_serializing_if = "Option::is_none")]
    regions: Option<Vec<Row>>,
    /// With --callers NAME.
    #[serde(skip_serializing_if = "Option::is_none")]
    callers: Option<Vec<callers::JsonNode>>,
    /// With --callees NAME.
    #[serde(skip_serializing_if = "Option::is_none")]
    callees: Option<Vec<callers::JsonNode>>,
    /// On- and off-CPU time per function and per blocked stack (`--off-cpu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    off_cpu: Option<offcpu::OffCpuReport>,
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct TaskJson<'a> {
    pid: u32,
    tid: u32,
    comm: &'a str,
    samples: u64,
}

fn report(profile: &Profile, args: &ReportOptions, regions: Option<SourceRegions>) -> Result<(), Failure> {
    let mut symbolizer = Symbolizer::default();
    let (located, graph) = aggregate::locate_with_graph(profile, &mut symbolizer);
    let functions = || {
        let rows = aggregate::flat(&located, By::Function);
        match &graph {
            Some(g) => g.with_totals(rows),
            None => rows,
        }
    };
    let mut warnings = std::mem::take(&mut symbolizer.warnings);
    warnings.extend(kernel::missing_symbols_warning(profile));
    let region_rows = regions.map(|mut r| {
        let rows = r.rows(&located);
        warnings.extend(r.warnings);
        rows
    });
    let table = match (&region_rows, args.by) {
        (Some(rows), _) => rows.clone(),
        (None, By::Function) => functions(),
        (None, by) => aggregate::flat(&located, by),
    };
    let to_stdout = args.files().any(|p| p == Path::new("-"));
    for w in &warnings {
        eprintln!("perflab: warning: {w}");
    }
    let tasks = tasks_json(profile, &located);
    let tree = |name: &Option<String>, direction| -> Result<Option<callers::TreeNode>, Failure> {
        let Some(name) = name else { return Ok(None) };
        graph.as_ref().and_then(|g| callers::tree(g, name, direction)).map(Some).ok_or_else(|| {
            usage!(
                "no function named `{}` in the call stacks (names as in the function column)",
                crate::render::terminal::escape(name)
            )
        })
    };
    let caller_tree = tree(&args.callers, callers::Direction::Callers)?;
    let callee_tree = tree(&args.callees, callers::Direction::Callees)?;
    let off_cpu = offcpu::report(profile, graph.as_ref());
    if !to_stdout {
        print_table(profile, &table, args, region_rows.is_some());
        print_tasks(&tasks, args.limit);
        for (tree, direction) in
            [(&caller_tree, callers::Direction::Callers), (&callee_tree, callers::Direction::Callees)]
        {
            if let Some(tree) = tree {
                println!();
                callers::print(tree, direction, profile.total_samples(), TREE_MIN_SHARE);
            }
        }
        if let Some(off_cpu) = &off_cpu {
            offcpu::print(off_cpu, args.limit);
        }
    }
    if let Some(path) = &args.json {
        let doc = FlatJson {
            schema_version: 1,
            event: &profile.event,
            frequency_hz: profile.frequency_hz,
            command: &profile.command,
            target: &profile.target,
            duration_s: profile.duration_s,
            cpu_s: profile.cpu_s,
            samples: profile.total_samples(),
            lost: profile.lost,
            tasks,
            functions: functions(),
            lines: aggregate::flat(&located, By::Line),
            objects: aggregate::flat(&located, By::Object),
            regions: region_rows,
            callers: caller_tree.as_ref().map(callers::flatten),
            callees: callee_tree.as_ref().map(callers::flatten),
            off_cpu,
            warnings,
        };
        crate::render::json::write(path, &doc)?;
    }
    // A -g run without samples still gets its (empty) folded file.
    if let Some(path) = &args.folded {
        write_text(path, &graph.as_ref().map(|g| g.folded()).unwrap_or_default())?;
    }
    if let Some(path) = &args.flamegraph {
        let title = format!("perflab: {}", profile.command.join(" "));
        // Without samples there is nothing to draw; say so in the picture rather than fail.
        let svg = graph
            .as_ref()
            .and_then(|g| flame::call_graph_svg_with(profile, g, &title, &args.flame))
            .unwrap_or_else(|| {
                let why = match &args.flame.focus {
                    Some(f) => format!("no samples through {f}"),
                    None => "no samples".to_string(),
                };
                flame::empty_svg(&title, &why)
            });
        write_text(path, &svg)?;
    }
    Ok(())
}

fn tasks_json<'a>(profile: &'a Profile, located: &[Located]) -> Vec<TaskJson<'a>> {
    profile
        .tasks
        .iter()
        .map(|t| TaskJson {
            pid: t.pid,
            tid: t.tid,
            comm: &t.comm,
            samples: located.iter().filter(|l| l.pid == t.pid && l.tid == t.tid).map(|l| l.count).sum(),
        })
        .collect()
}

/// One line per process for multi-task targets: how the samples split between tasks,
/// busiest process first, at most `limit` processes (system-wide profiles have hundreds).
fn print_tasks(tasks: &[TaskJson], limit: usize) {
    if tasks.len() < 2 {
        return;
    }
    let mut pids: Vec<u32> = tasks.iter().map(|t| t.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let samples_of = |pid: u32| tasks.iter().filter(|t| t.pid == pid).map(|t| t.samples).sum::<u64>();
    let all = pids.len();
    pids.retain(|&pid| samples_of(pid) > 0);
    pids.sort_by_key(|&pid| std::cmp::Reverse(samples_of(pid)));
    println!("{}", color::dim(&format!("{} tasks in {all} processes:", tasks.len())));
    for &pid in pids.iter().take(limit) {
        let threads: Vec<String> = tasks
            .iter()
            .filter(|t| t.pid == pid)
            .map(|t| {
                if t.tid == pid {
                    format!("{} samples", t.samples)
                } else {
                    format!("thread {}: {}", t.tid, t.samples)
                }
            })
            .collect();
        let comm =
            tasks.iter().find(|t| t.pid == pid).map_or(String::new(), |t| crate::render::terminal::escape(t.comm));
        println!("{}", color::dim(&format!("  pid {pid} {comm}: {}", threads.join(", "))));
    }
    let hidden = all - pids.len().min(limit);
    if hidden > 0 {
        println!("{}", color::dim(&format!("  ({hidden} more processes, {} without samples)", all - pids.len())));
    }
}

/// Write text to a file or stdout (`-`).
pub(crate) fn write_text(path: &Path, text: &str) -> Result<(), Failure> {
    if path == Path::new("-") {
        use std::io::Write;
        // A closed pipe (`| head`) is the reader's choice, not an error worth a message.
        match std::io::stdout().lock().write_all(text.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::Other(e.into())),
            _ => Ok(()),
        }
    } else {
        std::fs::write(path, text).map_err(|e| usage!("cannot write {}: {e}", path.display()))
    }
}

/// Colour a share by how hot it is.
pub fn paint_share(share: f64, text: &str) -> String {
    if share >= 0.10 {
        color::red(text)
    } else if share >= 0.02 {
        color::yellow(text)
    } else {
        text.to_string()
    }
}

/// A row's name with its object: `[k] name` for kernel functions (like perf), the
/// module dimmed after it; user functions get their object dimmed in brackets.
fn function_label(name: &str, object: &str) -> String {
    let escaped = crate::render::terminal::escape(name);
    if object.is_empty() || object == name {
        return escaped;
    }
    if kernel::is_kernel_object(object) {
        let module = if object == kernel::KERNEL_OBJECT { String::new() } else { color::dim(&format!("  {object}")) };
        return format!("[k] {escaped}{module}");
    }
    // `[jit]`, `[vdso]`: already bracketed.
    let object = crate::render::terminal::escape(object);
    let object = if object.starts_with('[') { object } else { format!("[{object}]") };
    format!("{escaped}{}", color::dim(&format!("  {object}")))
}

fn print_table(profile: &Profile, rows: &[Row], args: &ReportOptions, regions: bool) {
    let what = match (regions, args.by) {
        (true, _) => "region",
        (false, By::Function) => "function",
        (false, By::Line) => "source line",
        (false, By::Object) => "object",
    };
    println!(
        "{}",
        color::bold(&format!(
            "{} samples of {} at {} Hz ({:.2} s){}",
            profile.total_samples(),
            profile.event,
            profile.frequency_hz,
            profile.duration_s,
            if profile.lost > 0 { format!(", {} lost", profile.lost) } else { String::new() }
        ))
    );
    if rows.is_empty() {
        println!("no samples (the command ran too briefly for -F {})", profile.frequency_hz);
        return;
    }
    let totals = rows.iter().any(|r| r.total_share.is_some());
    if totals {
        println!("{}", color::dim(&format!("{:>7} {:>7} {:>9}  {what}", "total", "self", "samples")));
    } else {
        println!("{}", color::dim(&format!("{:>7} {:>9}  {what}", "share", "samples")));
    }
    for row in rows.iter().take(args.limit) {
        let mut share = paint_share(row.self_share, &format!("{:>6.2}%", row.self_share * 100.0));
        if let Some(total) = row.total_share {
            share = format!("{} {share}", paint_share(total, &format!("{:>6.2}%", total * 100.0)));
        }
        println!("{share} {:>9}  {}", row.self_samples, function_label(&row.name, &row.object));
    }
    if rows.len() > args.limit {
        let rest: u64 = rows[args.limit..].iter().map(|r| r.self_samples).sum();
        let indent = if totals { 16 } else { 8 };
        println!(
            "{}",
            color::dim(&format!(
                "{:indent$}{rest:>9}  ({} more rows; --limit to see them)",
                "",
                rows.len() - args.limit
            ))
        );
    }
}
