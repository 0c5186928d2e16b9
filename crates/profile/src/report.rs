//! The flat report of one profile (`profile` and `show`): the table the terminal shows
//! (by function, source line, object or region, or by perf report's sort keys), the
//! samples per task, the caller and callee trees, off-CPU time and the warnings —
//! computed here as data; `render::profile` prints it and `render::json` writes it (this
//! struct is the `--json` schema).

use super::aggregate::{self, By, CallGraph, Located, Row, RowsLeftOut, SourceRegions};
use super::callers::{self, Direction, JsonNode, TreeNode};
use super::error::ProfileError;
use super::format::{self, Profile, Weight};
use super::sort::{self, SortedTable};
use super::symbolize::Symbolizer;
use super::{kernel, notes, offcpu};
use serde::Serialize;

/// What the report groups and walks.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// What the terminal table groups samples by.
    pub by: By,
    /// Group samples whose source file matches GLOB into regions starting at lines
    /// matching REGEX, named by its first capture group (e.g. 'insns.def:^DEFINE_INSN\((\w+)').
    pub group_by_source: Option<String>,
    /// The tree of callers of this function; needs call stacks.
    pub callers: Option<String>,
    /// The tree of functions this function calls; needs call stacks.
    pub callees: Option<String>,
    /// perf report's sort keys (`comm,dso`): the terminal table groups by them instead.
    pub sort: Option<String>,
    /// Make only the first N rows of the by-function table (the others are counted in
    /// [`FlatReport::functions_left_out`]); None: every row (`--json` lists them all).
    pub function_rows: Option<usize>,
}

impl Default for ReportOptions {
    fn default() -> ReportOptions {
        ReportOptions {
            by: By::Function,
            group_by_source: None,
            callers: None,
            callees: None,
            sort: None,
            function_rows: None,
        }
    }
}

/// What the rows of the terminal table are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    /// Functions.
    Function,
    /// Source lines.
    Line,
    /// Objects (executables and libraries).
    Object,
    /// Source regions (`--group-by-source`).
    Region,
}

impl TableKind {
    /// What one row is, for headings (`function`, `source line`, …).
    pub fn noun(self) -> &'static str {
        match self {
            TableKind::Function => "function",
            TableKind::Line => "source line",
            TableKind::Object => "object",
            TableKind::Region => "region",
        }
    }
}

/// Samples of one thread.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TaskSamples {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Its command name (`comm`).
    pub comm: String,
    /// Samples in it.
    pub samples: u64,
}

/// The report: `--json` writes the serialized fields (docs/profiling.md, schema_version
/// 1); the terminal shows the table, the tasks, the trees and off-CPU time.
#[derive(Debug, Serialize)]
pub struct FlatReport {
    /// Version of this report's JSON schema.
    pub schema_version: u32,
    /// The event sampled (`cpu-clock`, …).
    pub event: String,
    /// 0 when sampled every `sample_period` events.
    pub frequency_hz: u64,
    /// `-c N`: one sample every N events; None when sampled at a frequency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_period: Option<u64>,
    /// What every share is of: `time` (a clock event) or `events` (a count event);
    /// each sample weighs its period either way.
    pub weight: Weight,
    /// The command recorded, when there was one.
    pub command: Vec<String>,
    /// `command`, `{"pids": [...]}` (-p) or `all_cpus` (-a).
    pub target: format::RecordTarget,
    /// Wall time recorded, seconds.
    pub duration_s: f64,
    /// CPU time, seconds.
    pub cpu_s: f64,
    /// Samples taken.
    pub samples: u64,
    /// All samples' summed periods: nanoseconds for a clock event, else events.
    pub period: u64,
    /// Records the kernel dropped (its ring buffer was full).
    pub lost: u64,
    /// Samples per thread.
    pub tasks: Vec<TaskSamples>,
    /// Rows per function, largest first (the first
    /// [`ReportOptions::function_rows`] of them when it is set).
    pub functions: Vec<Row>,
    /// The by-function rows not made (with [`ReportOptions::function_rows`]).
    #[serde(skip)]
    pub functions_left_out: Option<RowsLeftOut>,
    /// Rows per source line, largest first.
    pub lines: Vec<Row>,
    /// Rows per object, largest first.
    pub objects: Vec<Row>,
    /// Rows per source region (`--group-by-source`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions: Option<Vec<Row>>,
    /// With --sort KEYS: rows per distinct tuple of key values (it replaces the terminal table).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sorted: Option<SortedTable>,
    /// With --callers NAME.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callers: Option<Vec<JsonNode>>,
    /// With --callees NAME.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callees: Option<Vec<JsonNode>>,
    /// On- and off-CPU time per function and per blocked stack (`--off-cpu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_cpu: Option<offcpu::OffCpuReport>,
    /// Doubts about the report (lost records, unsymbolized code, …), one line each.
    pub warnings: Vec<String>,
    /// The rows of the terminal table when they are not `functions` (see
    /// [`table_rows`](Self::table_rows)).
    #[serde(skip)]
    pub table: Vec<Row>,
    /// What the rows of `table` are.
    #[serde(skip)]
    pub table_kind: TableKind,
    /// How samples were taken (`at 997 Hz`, `every event`).
    #[serde(skip)]
    pub sampling: String,
    /// The trees as trees, for the terminal.
    #[serde(skip)]
    pub caller_tree: Option<TreeNode>,
    /// The callee tree, for the terminal.
    #[serde(skip)]
    pub callee_tree: Option<TreeNode>,
}

impl FlatReport {
    /// The rows of the terminal table: `functions` for a table of functions, else `table`.
    pub fn table_rows(&self) -> &[Row] {
        match self.table_kind {
            TableKind::Function => &self.functions,
            _ => &self.table,
        }
    }

    /// The rows of the terminal table that were not made (only the by-function table
    /// leaves rows out, with [`ReportOptions::function_rows`]).
    pub fn table_left_out(&self) -> Option<RowsLeftOut> {
        match self.table_kind {
            TableKind::Function => self.functions_left_out,
            _ => None,
        }
    }
}

/// A report with the symbolised samples and call graph it was made from (for folded
/// stacks, flame graphs and the exports).
pub struct Report {
    /// The report itself.
    pub flat: FlatReport,
    /// Each entry of the profile's `samples`, symbolised, in the same order.
    pub located: Vec<Located>,
    /// The call graph, when call stacks were recorded.
    pub graph: Option<CallGraph>,
    /// The symbolizer that made it, with its objects loaded: the exports place frames
    /// at addresses and lines ([`sites`](crate::sites)) without reading the objects again.
    pub symbolizer: std::cell::RefCell<Symbolizer>,
}

/// Symbolise the profile and compute everything the report shows.
pub fn build(profile: &Profile, opts: &ReportOptions) -> Result<Report, ProfileError> {
    let regions = opts.group_by_source.as_deref().map(SourceRegions::parse).transpose()?;
    let sort_keys = opts.sort.as_deref().map(sort::parse_keys).transpose()?;
    let mut symbolizer = Symbolizer::default();
    let (located, graph) = aggregate::locate_with_graph(profile, &mut symbolizer);
    let (functions, functions_left_out) = {
        let rows = aggregate::flat(&located, By::Function);
        match &graph {
            Some(g) => g.with_totals(rows, opts.function_rows),
            None => match opts.function_rows {
                Some(keep) if rows.len() > keep => {
                    let mut rows = rows;
                    let left = rows.split_off(keep);
                    let left_out = RowsLeftOut {
                        rows: left.len(),
                        self_samples: left.iter().map(|r| r.self_samples).sum(),
                        self_period: left.iter().map(|r| r.self_period).sum(),
                    };
                    (rows, Some(left_out))
                }
                _ => (rows, None),
            },
        }
    };
    let mut warnings = std::mem::take(&mut symbolizer.warnings);
    warnings.extend(kernel::missing_symbols_warning(profile));
    warnings.extend(notes::shallow_stacks(profile));
    warnings.extend(notes::unnamed_functions(&located, &mut symbolizer));
    warnings.extend(notes::children_not_followed(profile));
    let region_rows = regions.map(|mut r| {
        let rows = r.rows(&located);
        warnings.extend(r.warnings);
        let outside =
            rows.iter().filter(|row| row.name == aggregate::OUTSIDE_REGIONS).map(|row| row.self_samples).sum();
        let spec = opts.group_by_source.as_deref().unwrap_or_default();
        warnings.extend(notes::missing_lines(&located, outside, spec, &mut symbolizer));
        rows
    });
    let (table, table_kind) = match (&region_rows, opts.by) {
        (Some(rows), _) => (rows.clone(), TableKind::Region),
        // The by-function table is `functions` itself (see `FlatReport::table_rows`):
        // 1.2 M distinct functions are not held twice.
        (None, By::Function) => (Vec::new(), TableKind::Function),
        (None, By::Line) => (aggregate::flat(&located, By::Line), TableKind::Line),
        (None, By::Object) => (aggregate::flat(&located, By::Object), TableKind::Object),
    };
    let tree =
        |name: &Option<String>, direction| -> Result<Option<TreeNode>, ProfileError> {
            let Some(name) = name else { return Ok(None) };
            graph.as_ref().and_then(|g| callers::tree(g, name, direction)).map(Some).ok_or_else(|| {
                ProfileError::NoSuchFunction { name: perflab_sys::text::escape(name), place: "call stacks" }
            })
        };
    let caller_tree = tree(&opts.callers, Direction::Callers)?;
    let callee_tree = tree(&opts.callees, Direction::Callees)?;
    let flat = FlatReport {
        schema_version: 1,
        event: profile.event.clone(),
        frequency_hz: profile.frequency_hz,
        sample_period: profile.sample_period,
        weight: profile.weight(),
        command: profile.command.clone(),
        target: profile.target.clone(),
        duration_s: profile.duration_s,
        cpu_s: profile.cpu_s,
        samples: profile.total_samples(),
        period: profile.total_period(),
        lost: profile.lost,
        tasks: task_samples(profile, &located),
        functions,
        functions_left_out,
        lines: aggregate::flat(&located, By::Line),
        objects: aggregate::flat(&located, By::Object),
        regions: region_rows,
        sorted: sort_keys.map(|keys| sort::table(profile, &located, &keys)),
        callers: caller_tree.as_ref().map(callers::flatten),
        callees: callee_tree.as_ref().map(callers::flatten),
        off_cpu: offcpu::report(profile, graph.as_ref()),
        warnings,
        table,
        table_kind,
        sampling: profile.sampling(),
        caller_tree,
        callee_tree,
    };
    Ok(Report { flat, located, graph, symbolizer: std::cell::RefCell::new(symbolizer) })
}

fn task_samples(profile: &Profile, located: &[Located]) -> Vec<TaskSamples> {
    // Summed once per task: a scan of every location per task took 91 s for 100,000
    // threads (perf report: 6.4 s). Samples come sorted by (pid, tid) from the recorder
    // and are found by bisection; a map of 10⁶ tasks is built only for a profile that is not.
    let sorted = located.windows(2).all(|w| (w[0].pid, w[0].tid) <= (w[1].pid, w[1].tid));
    let mut per_task: std::collections::HashMap<(u32, u32), u64> = std::collections::HashMap::new();
    if !sorted {
        for l in located {
            *per_task.entry((l.pid, l.tid)).or_default() += l.count;
        }
    }
    let samples_of = |pid: u32, tid: u32| -> u64 {
        if !sorted {
            return per_task.get(&(pid, tid)).copied().unwrap_or(0);
        }
        let start = located.partition_point(|l| (l.pid, l.tid) < (pid, tid));
        located[start..].iter().take_while(|l| (l.pid, l.tid) == (pid, tid)).map(|l| l.count).sum()
    };
    profile
        .tasks
        .iter()
        .map(|t| TaskSamples { pid: t.pid, tid: t.tid, comm: t.comm.clone(), samples: samples_of(t.pid, t.tid) })
        .collect()
}
