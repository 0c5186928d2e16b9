//! The history commands: `import`, `export`, `history` and `report`. Commands that only
//! read never create a database.

use super::args::DbArgs;
use crate::error::Failure;
use crate::output::Outputs;
use clap::Args;
use perflab_model::metric;
use perflab_render::export::Text;
use perflab_render::json::Json;
use perflab_render::report;
use perflab_render::table::{self, Stream};
use perflab_store::exchange::{self, ImportOptions};
use perflab_store::history;
use perflab_store::history::pair::MetricChoice;
use perflab_store::{Query, StoredExperiment};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A hyperfine `--export-json` file, a `compare --json` or `run --json` file, or a perflab export.
    #[arg(value_name = "FILE")]
    pub file: String,
    /// Label to store under (required for hyperfine and perflab results; overrides an export's labels).
    #[arg(short = 'l', long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Benchmark name for a perflab result (default: its command names joined by ` vs `).
    #[arg(long = "bench", value_name = "NAME")]
    pub bench: Option<String>,
    /// The hyperfine file was measured on this machine: record its fingerprint
    /// (hyperfine records none, so by default it is stored as an unknown machine).
    #[arg(long)]
    pub this_machine: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn main_import(args: ImportArgs) -> Result<(), Failure> {
    let options =
        ImportOptions { file: args.file, label: args.label, bench: args.bench, this_machine: args.this_machine };
    // The file is read and checked whole before any database is opened or created, then
    // read again and stored a record at a time: memory holds one experiment.
    // Ctrl-C stops the import between two experiments (each stored whole, in its own
    // transaction) rather than killing it in the middle of one.
    perflab_sys::interrupt::watcher();
    let checked = exchange::check_import(&options)?;
    if checked.interrupted || perflab_sys::interrupt::signals_received() > 0 {
        return Err(Failure::Interrupted("interrupted before storing anything".to_string()));
    }
    let mut store = args.db.open()?;
    let imported = exchange::store_import(&options, &mut store)?;
    let labels = if imported.labels.is_empty() {
        String::new()
    } else {
        format!(
            " under label{} {}",
            if imported.labels.len() == 1 { "" } else { "s" },
            imported
                .labels
                .iter()
                .map(|l| format!("`{}`", perflab_sys::text::escape(l)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut line = format!(
        "imported {} benchmark result{} ({} runs){labels} into {}",
        imported.experiments,
        if imported.experiments == 1 { "" } else { "s" },
        imported.runs,
        perflab_sys::text::escape(store.location())
    );
    if imported.incomplete > 0 {
        line += &format!(" ({} of them incomplete, marked so)", imported.incomplete);
    }
    if imported.skipped > 0 {
        line += &format!(
            "; skipped {} already stored (the same label, benchmark, machine, start and runs)",
            imported.skipped
        );
    }
    if imported.interrupted {
        let left = checked.experiments.saturating_sub(imported.experiments + imported.skipped);
        return Err(Failure::Interrupted(format!(
            "interrupted: {line}; {left} not stored (each stored one is whole; importing the file again stores the rest)"
        )));
    }
    eprintln!("{line}");
    Ok(())
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Only this label.
    #[arg(short = 'l', long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Only this benchmark.
    #[arg(long = "bench", value_name = "NAME")]
    pub bench: Option<String>,
    /// Only this machine (fingerprint prefix or hostname).
    #[arg(long, value_name = "MACHINE")]
    pub machine: Option<String>,
    /// Where to write (`-` for stdout, the default).
    #[arg(long, value_name = "FILE", default_value = "-")]
    pub json: String,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn main_export(args: ExportArgs) -> Result<(), Failure> {
    // Ctrl-C stops the export between two batches: a file is written beside its
    // destination and renamed over it only when whole.
    perflab_sys::interrupt::watcher();
    let mut store = args.db.open_existing()?;
    // Written a batch of experiments at a time: memory does not grow with the store.
    let query = Query { label: args.label, benchmark: args.bench, machine: args.machine };
    let written = |source| perflab_render::OutputError::File { path: args.json.clone().into(), source };
    let exported = match crate::output::Target::parse(&args.json) {
        crate::output::Target::Stdout => exchange::export_to(&mut store, &query, &mut crate::output::stdout::Stdout),
        crate::output::Target::File(path) => {
            let mut file = crate::output::AtomicFile::create(&path).map_err(written)?;
            let exported = exchange::export_to(&mut store, &query, &mut file);
            match exported {
                Ok(count) => file.commit().map(|()| count).map_err(exchange::ExportError::Write),
                Err(e) => Err(e),
            }
        }
    };
    let count = exported.map_err(|e| match e {
        exchange::ExportError::Store(e) => Failure::from(e),
        exchange::ExportError::Write(source) => written(source).into(),
        exchange::ExportError::Interrupted => Failure::Interrupted(if args.json == "-" {
            "interrupted: the export on stdout stops mid-way (not valid JSON)".to_string()
        } else {
            format!("interrupted: nothing written to {}", perflab_sys::text::escape(&args.json))
        }),
    })?;
    if args.json != "-" {
        eprintln!("exported {count} experiments to {}", perflab_sys::text::escape(&args.json));
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only this benchmark (exact name, else every benchmark whose name contains it).
    #[arg(value_name = "BENCH")]
    pub bench: Option<String>,
    /// Only this machine (fingerprint prefix or hostname); needed to see one when
    /// results come from several.
    #[arg(long, value_name = "MACHINE")]
    pub machine: Option<String>,
    /// The metric to follow (wall_s, cpu_s, max_rss_kib, a counter such as instructions).
    /// Default: the one the sessions decided on — uncontended_s when a session ran on a
    /// busy machine, else wall_s (or what the commands printed); a line says which.
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    /// Only the last N labels (in stored order); change points are looked for among them.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub last: Option<u32>,
    /// Compare --label with this label on every machine side by side (default with
    /// results from several machines: the oldest label).
    #[arg(long, value_name = "LABEL")]
    pub reference: Option<String>,
    /// The label compared with --reference (default: the newest label).
    #[arg(short = 'l', long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Also write the history as JSON (`-` for stdout instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Pool the runs of incomplete experiments (a run killed or interrupted before all
    /// its runs) with the others, their points marked (incomplete); by default they are
    /// left out, and a note says which.
    #[arg(long)]
    pub include_incomplete: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn main_history(args: HistoryArgs) -> Result<(), Failure> {
    let mut store = args.db.open_existing()?;
    let query = Query { label: None, benchmark: None, machine: args.machine.clone() };
    let location = store.location().to_string();
    let select = |mut experiments: Vec<StoredExperiment>| -> Result<Vec<StoredExperiment>, Failure> {
        if let Some(bench) = &args.bench {
            let exact = experiments.iter().any(|e| &e.benchmark == bench);
            experiments.retain(|e| if exact { &e.benchmark == bench } else { e.benchmark.contains(bench.as_str()) });
            if experiments.is_empty() {
                return Err(crate::usage!("no stored benchmark matches `{bench}` in {location}"));
            }
        }
        Ok(experiments)
    };
    // The metric is chosen from every benchmark's sessions, as the report chooses it, so
    // `history BENCH` compares on what the whole history and the report compare on.
    let wall = store.metric_experiments(&query, metric::WALL)?;
    let (metric_name, experiments, why) =
        history::sessions::choose_metric(args.metric.as_deref(), wall, |m| store.metric_experiments(&query, m))?;
    let mut experiments = select(experiments)?;
    let left_out =
        if args.include_incomplete { None } else { history::leave_out_incomplete(&mut experiments, &metric_name) };
    if experiments.is_empty() && left_out.is_some() {
        return Err(crate::usage!(
            "only incomplete experiments match in {}: --include-incomplete shows them",
            store.location()
        ));
    }
    if experiments.is_empty() {
        return Err(match &args.machine {
            Some(m) => crate::usage!(
                "no results from machine `{m}` in {} (see `perflab export` for what is stored)",
                store.location()
            ),
            None => crate::usage!(
                "{} holds no results yet: store some with `perflab run` or `compare --save`",
                store.location()
            ),
        });
    }
    if let Some(n) = args.last {
        let mut orders: Vec<i64> = experiments.iter().map(|e| e.label_order).collect();
        orders.dedup();
        let first_kept = orders[orders.len().saturating_sub(n as usize)];
        experiments.retain(|e| e.label_order >= first_kept);
    }
    let choice = match &args.metric {
        Some(_) => MetricChoice::Asked(&metric_name),
        None => MetricChoice::Decided(&metric_name),
    };
    let mut history = history::build_with(&experiments, choice, history::Steps::Compare);
    history.metric_note = why;
    history.left_out = left_out;
    if history.machines.is_empty() {
        return Err(crate::usage!("no successful stored run has the metric `{metric_name}`"));
    }
    if args.reference.is_some() || args.label.is_some() || history.machines.len() > 1 {
        let mut labels: Vec<&str> = Vec::new();
        for e in &experiments {
            if !labels.contains(&e.label.as_str()) {
                labels.push(&e.label);
            }
        }
        // A build measured only beside a label (`run --baseline`) can be compared with it.
        let stored: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        let builds = history::pair::paired_builds(&experiments, &stored);
        labels.extend(builds.iter().map(String::as_str));
        let pick = |given: &Option<String>, default: &str| -> Result<String, Failure> {
            match given {
                Some(l) if labels.contains(&l.as_str()) => Ok(l.clone()),
                Some(l) => Err(crate::usage!("label `{l}` has no results here (labels: {})", labels.join(", "))),
                None => Ok(default.to_string()),
            }
        };
        // As the report: the oldest label, or the build a lone label was measured beside.
        let oldest = if stored.len() == 1 { builds.first().unwrap_or(&stored[0]) } else { &stored[0] };
        let reference = pick(&args.reference, oldest)?;
        let label = pick(&args.label, &stored[stored.len() - 1])?;
        if reference != label {
            let all: Vec<&StoredExperiment> = experiments.iter().collect();
            history.matrix = Some(history::matrix::matrix(&all, choice, &reference, &label));
        }
    }
    let mut outputs: Outputs<history::History> = Outputs::new();
    if let Some(path) = &args.json {
        outputs.add("--json", path, Json)?;
    }
    // `--json -` takes stdout instead of the table.
    let detail = args.bench.is_some();
    let width = table::width(Stream::Stdout);
    let terminal = Text(|h: &history::History| perflab_render::history::render(h, detail, width));
    Ok(outputs.write(&history, (!outputs.stdout_taken()).then_some(&terminal as _))?)
}

#[derive(Debug, Args, Clone)]
pub struct HtmlReportArgs {
    /// Where to write the HTML page.
    #[arg(short = 'o', long = "output", visible_alias = "out", default_value = "report.html", value_name = "FILE")]
    pub out: PathBuf,
    /// The label ratios are relative to (default: the oldest label).
    #[arg(long, value_name = "LABEL")]
    pub reference: Option<String>,
    /// A label to compare with the reference (repeat for several; default: the newest label).
    #[arg(short, long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// The metric to compare and plot: wall_s, cpu_s, max_rss_kib or a counter name.
    /// Default: the one the sessions decided on — uncontended_s when a session ran on a
    /// busy machine, else wall_s (or what the commands printed); a note says which.
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// Only results from this machine (fingerprint prefix or hostname).
    #[arg(long, value_name = "MACHINE")]
    pub machine: Option<String>,
    /// Pool the runs of incomplete experiments with the others (see `history
    /// --include-incomplete`); by default they are left out, and a note says which.
    #[arg(long)]
    pub include_incomplete: bool,
    #[command(flatten)]
    pub db: DbArgs,
    /// Read perflab JSON results (`compare --json`) instead of the database: each file
    /// is one benchmark named after the file, each command one label (repeatable).
    #[arg(long, value_name = "FILE.json", conflicts_with = "db")]
    pub from: Vec<PathBuf>,
    /// The page's title.
    #[arg(long, default_value = "perflab report")]
    pub title: String,
}

/// `perflab report`: read the results, arrange them, write the page atomically.
pub fn main_report(args: HtmlReportArgs) -> Result<(), Failure> {
    // Ctrl-C stops the report between loading, building, drawing and writing it; the
    // page is written beside its destination and renamed, so it is never half there.
    perflab_sys::interrupt::watcher();
    let mut options = report::load::Selection {
        title: args.title.clone(),
        reference: args.reference.clone(),
        labels: args.labels.clone(),
        metric: args.metric.clone().unwrap_or_else(|| metric::WALL.to_string()),
        machine: args.machine.clone(),
        metric_asked: args.metric.is_some(),
        metric_note: None,
        left_out: None,
    };
    let experiments = if args.from.is_empty() {
        let mut store = args.db.open_existing()?;
        let query = Query { machine: options.machine.clone(), ..Default::default() };
        let wall = store.metric_experiments(&query, metric::WALL)?;
        let (metric_name, _, why) =
            history::sessions::choose_metric(args.metric.as_deref(), wall, |m| store.metric_experiments(&query, m))?;
        options.metric = metric_name;
        options.metric_note = why;
        report::load::from_store(&mut store, &options)?
    } else {
        let experiments = report::load::from_json_files(&args.from)?;
        if args.metric.is_none() {
            let decided = history::sessions::decided_metric(&experiments);
            options.metric = decided.metric;
            options.metric_note = Some(decided.why);
        }
        experiments
    };
    let stopped = || -> Result<(), Failure> {
        if perflab_sys::interrupt::signals_received() > 0 {
            let out = perflab_sys::text::escape(&args.out.to_string_lossy());
            return Err(Failure::Interrupted(format!("interrupted: nothing written to {out}")));
        }
        Ok(())
    };
    stopped()?;
    let mut experiments = experiments;
    if !args.include_incomplete {
        options.left_out = history::leave_out_incomplete(&mut experiments, &options.metric);
    }
    let data = report::load::build(&experiments, &options)?;
    stopped()?;
    // Freeing a large history's experiments one by one takes as long as drawing half the
    // page: it happens beside the drawing.
    let freeing = std::thread::spawn(move || drop(experiments));
    let page = report::render_html(&data);
    let _ = freeing.join();
    // A Ctrl-C while the page was drawn: nothing is written (the page only ever appears
    // whole, renamed into place).
    stopped()?;
    report::write_page(&page, &args.out)?;
    let benchmarks = data.pages.iter().map(|p| p.histories.len()).max().unwrap_or(0);
    let labels = data.pages.iter().map(|p| p.labels.len()).max().unwrap_or(0);
    eprintln!(
        "perflab: wrote {} ({benchmarks} benchmark{}, {labels} label{}, {} machine{})",
        args.out.display(),
        if benchmarks == 1 { "" } else { "s" },
        if labels == 1 { "" } else { "s" },
        data.pages.len(),
        if data.pages.len() == 1 { "" } else { "s" }
    );
    Ok(())
}
