//! Reading experiments back into the one data model. Each child table is read with the
//! experiments' filter in one query and grouped in memory (six queries however many
//! experiments match); columns are taken by name, never by position.

use super::backend::{opt_text, Backend, Value};
use super::{Query, StoredExperiment};
use crate::model::{
    metric, CommandResult, Comparison, CounterReading, ExitInfo, Experiment, Run, Settings, StopReason, Summary,
    Verdict,
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

/// The experiments matching `query`, oldest label first, then in storing order.
pub(super) fn experiments(db: &mut dyn Backend, query: &Query) -> anyhow::Result<Vec<StoredExperiment>> {
    let filter = "l.name = COALESCE($1, l.name) AND b.name = COALESCE($2, b.name) \
         AND (CAST($3 AS TEXT) IS NULL OR m.fingerprint LIKE $3 || '%' OR m.hostname = $3)";
    let joins = "JOIN labels l ON l.id = e.label_id JOIN benchmarks b ON b.id = e.benchmark_id \
                 JOIN machines m ON m.id = e.machine_id";
    let params =
        [opt_text(query.label.as_deref()), opt_text(query.benchmark.as_deref()), opt_text(query.machine.as_deref())];
    let child = |table: &str, order: &str| {
        format!("FROM {table} t JOIN experiments e ON e.id = t.experiment_id {joins} WHERE {filter} ORDER BY {order}")
    };
    let experiments = Rows::query(
        db,
        &[
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
        ],
        &format!("FROM experiments e {joins} WHERE {filter} ORDER BY l.id, e.id"),
        &params,
    )?;
    let commands = Rows::query(
        db,
        &["t.experiment_id", "t.idx", "t.name", "t.argv", "t.command_line"],
        &child("commands", "t.experiment_id, t.idx"),
        &params,
    )?;
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
        &["c.run_id", "c.name", "c.supported", "c.value", "c.scaled", "c.reason", "c.samples"],
        &format!(
            "FROM counters c JOIN runs t ON t.id = c.run_id JOIN experiments e ON e.id = t.experiment_id {joins} \
             WHERE {filter} ORDER BY c.run_id, c.name"
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
                samples: r.json("samples", "[]").context("per-iteration samples")?,
            },
        );
    }
    let mut commands_by_experiment: BTreeMap<i64, Vec<CommandResult>> = BTreeMap::new();
    for r in commands.iter() {
        commands_by_experiment.entry(r.id("experiment_id")).or_default().push(CommandResult {
            name: r.text("name"),
            argv: r.json("argv", "[]").context("command argv")?,
            command_line: r.text("command_line"),
            runs: Vec::new(),
            summary: BTreeMap::new(),
        });
    }
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
    let mut comparisons_by_experiment: BTreeMap<i64, Vec<Comparison>> = BTreeMap::new();
    for r in comparisons.iter() {
        comparisons_by_experiment.entry(r.id("experiment_id")).or_default().push(Comparison {
            baseline: r.text("baseline"),
            candidate: r.text("candidate"),
            metric: r.text("metric"),
            // Set from the experiment's settings below (the direction is not a column).
            better: Default::default(),
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
        let settings: Settings = r.json("settings", "").context("settings record")?;
        let mut comparisons = comparisons_by_experiment.remove(&id).unwrap_or_default();
        for c in &mut comparisons {
            c.better = settings.metric_info(&c.metric).better;
        }
        // Comparisons are stored primary metric first (the direction is not a column either).
        let primary_metric = comparisons.first().map_or_else(|| metric::WALL.to_string(), |c| c.metric.clone());
        let experiment = Experiment {
            primary_metric,
            perflab_version: r.text("perflab_version"),
            started_at: r.text("started_at"),
            machine: r.json("machine", "").context("machine record")?,
            settings,
            rounds,
            duration_s: r.opt_real("duration_s").unwrap_or(0.0),
            stop_reason,
            commands,
            comparisons,
            warnings: r.json("warnings", "[]").unwrap_or_default(),
            environment: r.json("environment", "{}").unwrap_or_default(),
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
