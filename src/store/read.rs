//! Reading experiments back into the one data model. Each child table is read with the
//! experiments' filter in one query and grouped in memory (six queries however many
//! experiments match); columns are taken by name, never by position. [`metric_experiments`]
//! is the lean read for history and reports: one metric's samples from the summaries
//! instead of every run.

use super::backend::{opt_text, text, Backend, Value};
use super::write::sample_values;
use super::{Query, StoredExperiment};
use crate::model::{
    CommandResult, Comparison, CounterReading, ExitInfo, Experiment, Run, StopReason, Summary, Verdict,
};
use anyhow::Context;
use std::collections::{BTreeMap, HashMap};

/// The result of a query whose columns are known by name.
struct Rows {
    index: HashMap<&'static str, usize>,
    rows: Vec<Vec<Value>>,
}

/// One row; a value is asked for by its column's name.
struct Row<'a> {
    index: &'a HashMap<&'static str, usize>,
    values: &'a [Value],
}

const NULL: Value = Value::Text(None);

impl Rows {
    /// Run `SELECT <columns> <rest>`; each column is `expr AS name` or `alias.name`.
    fn query(db: &mut dyn Backend, columns: &[&'static str], rest: &str, params: &[Value]) -> anyhow::Result<Rows> {
        let index = columns.iter().enumerate().map(|(i, c)| (column_name(c), i)).collect();
        let rows = db.query(&format!("SELECT {} {rest}", columns.join(", ")), params)?;
        Ok(Rows { index, rows })
    }

    fn iter(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(|values| Row { index: &self.index, values })
    }
}

/// `t.wall_s` → `wall_s`; `l.name AS label` → `label`.
fn column_name(column: &'static str) -> &'static str {
    match column.rsplit_once(" AS ") {
        Some((_, alias)) => alias.trim(),
        None => column.rsplit_once('.').map_or(column, |(_, name)| name),
    }
}

impl Row<'_> {
    fn value(&self, name: &str) -> &Value {
        debug_assert!(self.index.contains_key(name), "column {name} was not selected");
        self.index.get(name).and_then(|&i| self.values.get(i)).unwrap_or(&NULL)
    }
    fn text(&self, name: &str) -> String {
        self.value(name).as_str().unwrap_or_default().to_string()
    }
    fn opt_text(&self, name: &str) -> Option<String> {
        self.value(name).as_str().map(str::to_string)
    }
    fn real(&self, name: &str) -> f64 {
        self.value(name).as_f64().unwrap_or(f64::NAN)
    }
    fn opt_real(&self, name: &str) -> Option<f64> {
        self.value(name).as_f64()
    }
    fn int(&self, name: &str) -> Option<i64> {
        self.value(name).as_i64()
    }
    /// A count: null or negative reads as 0.
    fn count(&self, name: &str) -> u64 {
        self.int(name).unwrap_or(0).max(0) as u64
    }
    fn flag(&self, name: &str) -> bool {
        self.count(name) != 0
    }
    fn id(&self, name: &str) -> i64 {
        self.int(name).unwrap_or(-1)
    }
    /// A JSON document stored as text.
    fn json<T: serde::de::DeserializeOwned>(&self, name: &str, empty: &str) -> serde_json::Result<T> {
        serde_json::from_str(self.value(name).as_str().unwrap_or(empty))
    }
}

/// The experiments' filter of a [`Query`]: `$1`–`$3` are its parameters, the joins name
/// the label, benchmark and machine of experiment `e`.
const FILTER: &str = "l.name = COALESCE($1, l.name) AND b.name = COALESCE($2, b.name) \
     AND (CAST($3 AS TEXT) IS NULL OR m.fingerprint LIKE $3 || '%' OR m.hostname = $3)";
const JOINS: &str = "JOIN labels l ON l.id = e.label_id JOIN benchmarks b ON b.id = e.benchmark_id \
     JOIN machines m ON m.id = e.machine_id";

fn filter_params(query: &Query) -> Vec<Value> {
    vec![opt_text(query.label.as_deref()), opt_text(query.benchmark.as_deref()), opt_text(query.machine.as_deref())]
}

/// `FROM <table> t` joined to its experiment, filtered, ordered by `order`.
fn child(table: &str, order: &str) -> String {
    format!("FROM {table} t JOIN experiments e ON e.id = t.experiment_id {JOINS} WHERE {FILTER} ORDER BY {order}")
}

/// The experiments matching `query`, oldest label first, then in storing order.
pub(super) fn experiments(db: &mut dyn Backend, query: &Query) -> anyhow::Result<Vec<StoredExperiment>> {
    let params = filter_params(query);
    let experiments = experiment_rows(db, &params)?;
    let commands = command_rows(db, &params)?;
    let runs = Rows::query(
        db,
        &[
            "t.experiment_id",
            "t.command_idx",
            "t.id",
            "t.round",
            "t.position",
            "t.wall_s",
            "t.user_s",
            "t.sys_s",
            "t.max_rss_kib",
            "t.minor_faults",
            "t.major_faults",
            "t.voluntary_cs",
            "t.involuntary_cs",
            "t.exit_code",
            "t.exit_signal",
            "t.timed_out",
            "t.env_pad_bytes",
        ],
        &child("runs", "t.id"),
        &params,
    )?;
    let counters = Rows::query(
        db,
        &["c.run_id", "c.name", "c.supported", "c.value", "c.scaled", "c.reason"],
        &format!(
            "FROM counters c JOIN runs t ON t.id = c.run_id JOIN experiments e ON e.id = t.experiment_id {JOINS} \
             WHERE {FILTER} ORDER BY c.run_id, c.name"
        ),
        &params,
    )?;
    let summaries = Rows::query(
        db,
        &[
            "t.experiment_id",
            "t.command_idx",
            "t.metric",
            "t.n",
            "t.median",
            "t.mean",
            "t.stddev",
            "t.mad",
            "t.min_value",
            "t.max_value",
            "t.outliers",
            "t.ci_low",
            "t.ci_high",
        ],
        &child("summaries", "t.experiment_id, t.command_idx, t.metric"),
        &params,
    )?;

    let mut counters_by_run: BTreeMap<i64, BTreeMap<String, CounterReading>> = BTreeMap::new();
    for r in counters.iter() {
        counters_by_run.entry(r.id("run_id")).or_default().insert(
            r.text("name"),
            CounterReading {
                supported: r.flag("supported"),
                value: r.opt_real("value"),
                scaled: r.flag("scaled"),
                reason: r.opt_text("reason"),
            },
        );
    }
    let mut commands_by_experiment = group_commands(&commands)?;
    for r in runs.iter() {
        let run = Run {
            round: r.count("round") as u32,
            position: r.count("position") as u32,
            wall_s: r.real("wall_s"),
            user_s: r.real("user_s"),
            sys_s: r.real("sys_s"),
            max_rss_kib: r.count("max_rss_kib"),
            minor_faults: r.count("minor_faults"),
            major_faults: r.count("major_faults"),
            voluntary_cs: r.count("voluntary_cs"),
            involuntary_cs: r.count("involuntary_cs"),
            exit: ExitInfo {
                exit_code: r.int("exit_code").map(|v| v as i32),
                signal: r.int("exit_signal").map(|v| v as i32),
                timed_out: r.flag("timed_out"),
            },
            env_pad_bytes: r.count("env_pad_bytes") as u32,
            counters: counters_by_run.remove(&r.id("id")).unwrap_or_default(),
        };
        if let Some(command) = command_mut(&mut commands_by_experiment, &r, "command_idx") {
            command.runs.push(run);
        }
    }
    for r in summaries.iter() {
        let summary = Summary {
            n: r.count("n") as usize,
            median: r.real("median"),
            mean: r.real("mean"),
            stddev: r.real("stddev"),
            mad: r.real("mad"),
            min: r.real("min_value"),
            max: r.real("max_value"),
            outliers: r.count("outliers") as usize,
            median_ci: r.opt_real("ci_low").zip(r.opt_real("ci_high")),
        };
        if let Some(command) = command_mut(&mut commands_by_experiment, &r, "command_idx") {
            command.summary.insert(r.text("metric"), summary);
        }
    }
    let comparisons = comparisons_by_experiment(db, &params)?;
    assemble(&experiments, commands_by_experiment, comparisons, false)
}

/// The experiments matching `query` for history and reports of one `metric`: as
/// [`experiments`], but each command's runs are the metric's sample — its values over the
/// successful runs, from the stored summary, or from the runs when no summary holds one
/// (an experiment that did not finish, an older database) — as [`Run::of_metric`] runs
/// carrying only that metric. Other metrics, summaries and warnings are not read.
pub(super) fn metric_experiments(
    db: &mut dyn Backend,
    query: &Query,
    metric: &str,
) -> anyhow::Result<Vec<StoredExperiment>> {
    let mut params = filter_params(query);
    let experiments = experiment_rows(db, &params)?;
    let commands = command_rows(db, &params)?;
    let mut commands_by_experiment = group_commands(&commands)?;
    let comparisons = comparisons_by_experiment(db, &params)?;
    params.push(text(metric));
    let samples = Rows::query(
        db,
        &["t.experiment_id", "t.command_idx", "t.sample"],
        &format!(
            "FROM summaries t JOIN experiments e ON e.id = t.experiment_id {JOINS} \
             WHERE {FILTER} AND t.metric = $4 AND t.sample IS NOT NULL"
        ),
        &params,
    )?;
    for r in samples.iter() {
        let values = r.value("sample").as_bytes().map(sample_values).unwrap_or_default();
        if let Some(command) = command_mut(&mut commands_by_experiment, &r, "command_idx") {
            command.runs = values.into_iter().map(|v| Run::of_metric(metric, v)).collect();
        }
    }
    // Commands without a stored sample: their successful runs' values.
    let (value, counter_join) = match run_column(metric) {
        Some(column) => (column, ""),
        None => ("c.value AS value", "JOIN counters c ON c.run_id = t.id AND c.name = $4"),
    };
    let runs = Rows::query(
        db,
        &["t.experiment_id", "t.command_idx", value],
        &format!(
            "FROM runs t {counter_join} JOIN experiments e ON e.id = t.experiment_id {JOINS} \
             WHERE {FILTER} AND t.exit_code = 0 AND t.timed_out = 0 AND NOT EXISTS (SELECT 1 FROM summaries s \
             WHERE s.experiment_id = t.experiment_id AND s.command_idx = t.command_idx AND s.metric = $4 \
             AND s.sample IS NOT NULL) ORDER BY t.id"
        ),
        &params,
    )?;
    for r in runs.iter() {
        let v = r.real("value");
        if let (true, Some(command)) = (v.is_finite(), command_mut(&mut commands_by_experiment, &r, "command_idx")) {
            command.runs.push(Run::of_metric(metric, v));
        }
    }
    assemble(&experiments, commands_by_experiment, comparisons, true)
}

/// The runs column (an expression `… AS value`) holding a harness metric, as
/// [`Run::metric`] computes it; None for counters (and any other metric).
fn run_column(metric: &str) -> Option<&'static str> {
    use crate::model::metric::*;
    Some(match metric {
        WALL => "t.wall_s AS value",
        CPU => "t.user_s + t.sys_s AS value",
        USER => "t.user_s AS value",
        SYS => "t.sys_s AS value",
        MAX_RSS => "t.max_rss_kib AS value",
        MINOR_FAULTS => "t.minor_faults AS value",
        MAJOR_FAULTS => "t.major_faults AS value",
        VOLUNTARY_CS => "t.voluntary_cs AS value",
        INVOLUNTARY_CS => "t.involuntary_cs AS value",
        _ => return None,
    })
}

const EXPERIMENT_COLUMNS: &[&str] = &[
    "e.id",
    "l.name AS label",
    "l.id AS label_order",
    "b.name AS benchmark",
    "e.git_commit",
    "e.source",
    "e.recorded_at",
    "m.fingerprint",
    "m.json AS machine",
    "e.complete",
    "e.perflab_version",
    "e.started_at",
    "e.settings",
    "e.rounds",
    "e.stop_reason",
    "e.warnings",
    "e.environment",
    "e.duration_s",
    "e.failure",
];

fn experiment_rows(db: &mut dyn Backend, params: &[Value]) -> anyhow::Result<Rows> {
    Rows::query(
        db,
        EXPERIMENT_COLUMNS,
        &format!("FROM experiments e {JOINS} WHERE {FILTER} ORDER BY l.id, e.id"),
        params,
    )
}

fn command_rows(db: &mut dyn Backend, params: &[Value]) -> anyhow::Result<Rows> {
    Rows::query(
        db,
        &["t.experiment_id", "t.idx", "t.name", "t.argv", "t.command_line"],
        &child("commands", "t.experiment_id, t.idx"),
        params,
    )
}

fn group_commands(commands: &Rows) -> anyhow::Result<BTreeMap<i64, Vec<CommandResult>>> {
    let mut by_experiment: BTreeMap<i64, Vec<CommandResult>> = BTreeMap::new();
    for r in commands.iter() {
        by_experiment.entry(r.id("experiment_id")).or_default().push(CommandResult {
            name: r.text("name"),
            argv: r.json("argv", "[]").context("command argv")?,
            command_line: r.text("command_line"),
            runs: Vec::new(),
            summary: BTreeMap::new(),
        });
    }
    Ok(by_experiment)
}

fn comparisons_by_experiment(db: &mut dyn Backend, params: &[Value]) -> anyhow::Result<BTreeMap<i64, Vec<Comparison>>> {
    let comparisons = Rows::query(
        db,
        &[
            "t.experiment_id",
            "t.idx",
            "t.baseline",
            "t.candidate",
            "t.metric",
            "t.ratio",
            "t.ci_low",
            "t.ci_high",
            "t.confidence",
            "t.look_confidence",
            "t.p_value",
            "t.verdict",
            "t.below_threshold",
            "t.n",
            "t.flags",
        ],
        &child("comparisons", "t.experiment_id, t.idx"),
        params,
    )?;
    let mut by_experiment: BTreeMap<i64, Vec<Comparison>> = BTreeMap::new();
    for r in comparisons.iter() {
        by_experiment.entry(r.id("experiment_id")).or_default().push(Comparison {
            baseline: r.text("baseline"),
            candidate: r.text("candidate"),
            metric: r.text("metric"),
            ratio: r.real("ratio"),
            ci_low: r.real("ci_low"),
            ci_high: r.real("ci_high"),
            confidence: r.real("confidence"),
            look_confidence: r.real("look_confidence"),
            p_value: r.real("p_value"),
            verdict: serde_json::from_value(serde_json::Value::String(r.text("verdict")))
                .unwrap_or(Verdict::Inconclusive),
            below_threshold: r.flag("below_threshold"),
            n: r.count("n") as usize,
            flags: r.json("flags", "[]").unwrap_or_default(),
        });
    }
    Ok(by_experiment)
}

/// A JSON document parsed once per distinct text: experiments mostly repeat the same
/// machine, settings and environment, and parsing each once saves most of the reading.
fn parsed<T: serde::de::DeserializeOwned + Clone>(
    cache: &mut HashMap<String, T>,
    text: Option<&str>,
    empty: &str,
) -> serde_json::Result<T> {
    let text = text.unwrap_or(empty);
    if let Some(v) = cache.get(text) {
        return Ok(v.clone());
    }
    let v: T = serde_json::from_str(text)?;
    cache.insert(text.to_string(), v.clone());
    Ok(v)
}

/// The stored experiments of `experiments` rows with their commands and comparisons;
/// `lean` leaves the warnings out.
fn assemble(
    experiments: &Rows,
    mut commands_by_experiment: BTreeMap<i64, Vec<CommandResult>>,
    mut comparisons_by_experiment: BTreeMap<i64, Vec<Comparison>>,
    lean: bool,
) -> anyhow::Result<Vec<StoredExperiment>> {
    let mut machines: HashMap<String, crate::model::Machine> = HashMap::new();
    let mut settings: HashMap<String, crate::model::Settings> = HashMap::new();
    let mut environments: HashMap<String, BTreeMap<String, String>> = HashMap::new();
    let mut out = Vec::with_capacity(experiments.rows.len());
    for r in experiments.iter() {
        let id = r.id("id");
        let complete = r.flag("complete");
        let commands = commands_by_experiment.remove(&id).unwrap_or_default();
        let stop_reason = match r.opt_text("stop_reason") {
            Some(reason) if complete => {
                serde_json::from_value(serde_json::Value::String(reason)).unwrap_or(StopReason::Interrupted)
            }
            _ => StopReason::Interrupted,
        };
        let rounds = match r.int("rounds") {
            Some(n) if complete => n as u32,
            // A writer that died left only runs: count the rounds every command finished.
            _ => commands.iter().map(|c| c.runs.len() as u32).min().unwrap_or(0),
        };
        let experiment = Experiment {
            perflab_version: r.text("perflab_version"),
            started_at: r.text("started_at"),
            machine: parsed(&mut machines, r.value("machine").as_str(), "").context("machine record")?,
            settings: parsed(&mut settings, r.value("settings").as_str(), "").context("settings record")?,
            rounds,
            duration_s: r.opt_real("duration_s").unwrap_or(0.0),
            stop_reason,
            commands,
            comparisons: comparisons_by_experiment.remove(&id).unwrap_or_default(),
            warnings: if lean { Vec::new() } else { r.json("warnings", "[]").unwrap_or_default() },
            environment: parsed(&mut environments, r.value("environment").as_str(), "{}").unwrap_or_default(),
            failure: r.opt_text("failure"),
            ..Experiment::default()
        };
        out.push(StoredExperiment {
            id,
            label: r.text("label"),
            label_order: r.int("label_order").unwrap_or(0),
            benchmark: r.text("benchmark"),
            git_commit: r.opt_text("git_commit"),
            source: r.text("source"),
            recorded_at: r.text("recorded_at"),
            machine_fingerprint: r.text("fingerprint"),
            complete,
            experiment,
        });
    }
    Ok(out)
}

/// The command of the row's experiment at the row's `idx_column` among those read so far.
fn command_mut<'a>(
    map: &'a mut BTreeMap<i64, Vec<CommandResult>>,
    row: &Row,
    idx_column: &str,
) -> Option<&'a mut CommandResult> {
    let idx = usize::try_from(row.int(idx_column)?).ok()?;
    map.get_mut(&row.id("experiment_id"))?.get_mut(idx)
}
