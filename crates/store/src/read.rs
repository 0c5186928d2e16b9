//! Reading experiments back into the one data model. Each child table is read with the
//! experiments' filter in one query and grouped in memory (six queries however many
//! experiments match); columns are taken by name, never by position. [`metric_experiments`]
//! is the lean read for history and reports: one metric's samples from the summaries
//! instead of every run.

use super::backend::{text, Backend, Value};
use super::write::sample_values;
use super::{MetricSample, ProfileChange, Query, StoredExperiment};
use anyhow::Context;
use perflab_model::{
    metric, CommandResult, Comparison, CounterReading, ExitInfo, Experiment, Run, Settings, StopReason, Summary,
    Verdict,
};
use std::collections::{BTreeMap, HashMap};

/// The result of a query whose columns are known by name.
struct Rows {
    /// Column names in order (a linear search over a few short names beats hashing them
    /// for every field of 100,000 rows).
    names: Vec<&'static str>,
    rows: Vec<Vec<Value>>,
}

/// One row; a value is asked for by its column's name.
struct DbRow<'a> {
    names: &'a [&'static str],
    values: &'a [Value],
}

const NULL: Value = Value::Text(None);

impl Rows {
    /// Run `SELECT <columns> <rest>`; each column is `expr AS name` or `alias.name`.
    fn query(db: &mut dyn Backend, columns: &[&'static str], rest: &str, params: &[Value]) -> anyhow::Result<Rows> {
        let names = columns.iter().map(|c| column_name(c)).collect();
        let rows = db.query(&format!("SELECT {} {rest}", columns.join(", ")), params)?;
        Ok(Rows { names, rows })
    }

    fn iter(&self) -> impl Iterator<Item = DbRow<'_>> {
        self.rows.iter().map(|values| DbRow { names: &self.names, values })
    }

    /// [`Rows::query`] handing each row to `each` as it is read, keeping none.
    fn each(
        db: &mut dyn Backend,
        columns: &[&'static str],
        rest: &str,
        params: &[Value],
        mut each: impl FnMut(&DbRow) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let names: Vec<&str> = columns.iter().map(|c| column_name(c)).collect();
        let sql = format!("SELECT {} {rest}", columns.join(", "));
        db.query_each(&sql, params, &mut |values| each(&DbRow { names: &names, values }))
    }
}

/// `t.wall_s` → `wall_s`; `l.name AS label` → `label`.
fn column_name(column: &'static str) -> &'static str {
    match column.rsplit_once(" AS ") {
        Some((_, alias)) => alias.trim(),
        None => column.rsplit_once('.').map_or(column, |(_, name)| name),
    }
}

impl DbRow<'_> {
    fn value(&self, name: &str) -> &Value {
        let at = self.names.iter().position(|n| *n == name);
        debug_assert!(at.is_some(), "column {name} was not selected");
        at.and_then(|i| self.values.get(i)).unwrap_or(&NULL)
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

/// The experiments' filter of a [`Query`]: only the conditions it sets, joined only to the
/// tables they name (the label `l`, benchmark `b` and machine `m` of experiment `e`), so
/// the database uses its indexes (a label's experiments, then their runs) and looks up
/// nothing else per row; its parameters come first.
struct Filter {
    sql: String,
    params: Vec<Value>,
    /// The joins from experiment `e` the conditions need (empty without conditions: the
    /// tables are then read without joins).
    joins: String,
    /// A condition on experiment `e` itself (its id): child tables join it.
    on_experiment: bool,
}

impl Filter {
    fn new(query: &Query) -> Filter {
        let mut conditions = Vec::new();
        let mut params = Vec::new();
        let mut joins = Vec::new();
        if let Some(label) = &query.label {
            params.push(text(label));
            conditions.push(format!("l.name = ${}", params.len()));
            joins.push("JOIN labels l ON l.id = e.label_id");
        }
        if let Some(benchmark) = &query.benchmark {
            params.push(text(benchmark));
            conditions.push(format!("b.name = ${}", params.len()));
            joins.push("JOIN benchmarks b ON b.id = e.benchmark_id");
        }
        if let Some(machine) = &query.machine {
            params.push(text(machine));
            let n = params.len();
            conditions.push(format!("(m.fingerprint LIKE CAST(${n} AS TEXT) || '%' OR m.hostname = ${n})"));
            joins.push("JOIN machines m ON m.id = e.machine_id");
        }
        let sql = if conditions.is_empty() { "1 = 1".to_string() } else { conditions.join(" AND ") };
        Filter { sql, params, joins: joins.join(" "), on_experiment: false }
    }

    /// Only the experiments `ids` (a batch of an export).
    fn with_ids(mut self, ids: &[i64]) -> Filter {
        let first = self.params.len() + 1;
        self.params.extend(ids.iter().map(|&id| Value::Int(Some(id))));
        let placeholders: Vec<String> = (first..first + ids.len()).map(|n| format!("${n}")).collect();
        self.sql = format!("{} AND e.id IN ({})", self.sql, placeholders.join(", "));
        self.on_experiment = true;
        self
    }

    /// Whether a child table must be joined to its experiment for the conditions.
    fn joined(&self) -> bool {
        !self.joins.is_empty() || self.on_experiment
    }

    /// `FROM <table> t`, joined to its experiment `e` when the conditions need it.
    fn from(&self, table: &str) -> String {
        if !self.joined() {
            format!("FROM {table} t")
        } else {
            format!("FROM {table} t JOIN experiments e ON e.id = t.experiment_id {}", self.joins)
        }
    }

    /// The filter's parameters and one more after them, with that one's placeholder.
    fn and(&self, value: Value) -> (Vec<Value>, String) {
        let mut params = self.params.clone();
        params.push(value);
        let placeholder = format!("${}", params.len());
        (params, placeholder)
    }

    /// `FROM <table> t` joined to its experiment, filtered, ordered by `order`.
    fn child(&self, table: &str, order: &str) -> String {
        format!("{} WHERE {} ORDER BY {order}", self.from(table), self.sql)
    }
}

/// The experiments matching `query`, oldest label first, then in storing order.
pub(super) fn experiments(db: &mut dyn Backend, query: &Query) -> anyhow::Result<Vec<StoredExperiment>> {
    experiments_filtered(db, Filter::new(query))
}

/// The ids of the experiments matching `query`, oldest label first, then in storing
/// order (as [`experiments`] orders them), for reading them a batch at a time.
pub(super) fn experiment_ids(db: &mut dyn Backend, query: &Query) -> anyhow::Result<Vec<i64>> {
    let filter = Filter::new(query);
    let rows = Rows::query(
        db,
        &["e.id"],
        &format!(
            "FROM experiments e {} WHERE {} AND e.superseded_by IS NULL ORDER BY e.label_id, e.id",
            filter.joins, filter.sql
        ),
        &filter.params,
    )?;
    Ok(rows.iter().map(|r| r.id("id")).collect())
}

/// The experiments `ids` among those matching `query`, in [`experiments`]' order.
pub(super) fn experiments_with_ids(
    db: &mut dyn Backend,
    query: &Query,
    ids: &[i64],
) -> anyhow::Result<Vec<StoredExperiment>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    experiments_filtered(db, Filter::new(query).with_ids(ids))
}

fn experiments_filtered(db: &mut dyn Backend, filter: Filter) -> anyhow::Result<Vec<StoredExperiment>> {
    let mut commands_by_experiment = commands(db, &filter, Detail::Full)?;
    // Counters, then runs, each made from its row as the row is read (no table of rows
    // is kept: an experiment of 100,000 runs held both tables beside its runs).
    let mut counters_by_run: BTreeMap<i64, BTreeMap<String, CounterReading>> = BTreeMap::new();
    Rows::each(
        db,
        &["c.run_id", "c.name", "c.supported", "c.value", "c.scaled", "c.reason", "c.samples"],
        &format!(
            "FROM counters c JOIN runs t ON t.id = c.run_id {} WHERE {} ORDER BY c.run_id, c.name",
            if !filter.joined() {
                String::new()
            } else {
                format!("JOIN experiments e ON e.id = t.experiment_id {}", filter.joins)
            },
            filter.sql
        ),
        &filter.params,
        |r| {
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
            Ok(())
        },
    )?;
    Rows::each(
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
        &filter.child("runs", "t.experiment_id, t.id"),
        &filter.params,
        |r| {
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
                profile: None,
            };
            if let Some(command) = command_mut(&mut commands_by_experiment, r, "command_idx") {
                command.runs.push(run);
            }
            Ok(())
        },
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
        &filter.child("summaries", "t.experiment_id, t.command_idx, t.metric"),
        &filter.params,
    )?;
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
    let comparisons = comparisons_by_experiment(db, &filter)?;
    read_experiments(db, &filter, Detail::Full, commands_by_experiment, comparisons)
}

/// The experiments matching `query` for history and reports of one `metric`: as
/// [`experiments`] but without runs, summaries or warnings; instead each carries the
/// metric's sample of its measured (last) command — its values over the successful runs,
/// as stored with the summary, or from the runs where none is stored (an experiment that
/// did not finish, an older database).
pub(super) fn metric_experiments(
    db: &mut dyn Backend,
    query: &Query,
    metric: &str,
) -> anyhow::Result<Vec<StoredExperiment>> {
    let filter = Filter::new(query);
    let commands_by_experiment = commands(db, &filter, Detail::Lean)?;
    let comparisons = comparisons_by_experiment(db, &filter)?;
    let measured: HashMap<i64, i64> =
        commands_by_experiment.iter().map(|(&id, commands)| (id, commands.len() as i64 - 1)).collect();
    let is_measured = |r: &DbRow| measured.get(&r.id("experiment_id")) == r.int("command_idx").as_ref();
    let (with_metric, name) = filter.and(text(metric));
    let mut samples: HashMap<i64, Vec<f64>> = HashMap::with_capacity(measured.len());
    Rows::each(
        db,
        &["t.experiment_id", "t.command_idx", "t.sample"],
        &format!("{} WHERE {} AND t.metric = {name}", filter.from("metric_samples"), filter.sql),
        &with_metric,
        |r| {
            if is_measured(r) {
                samples
                    .insert(r.id("experiment_id"), r.value("sample").as_bytes().map(sample_values).unwrap_or_default());
            }
            Ok(())
        },
    )?;
    let unsampled: Vec<i64> = measured.keys().filter(|id| !samples.contains_key(id)).copied().collect();
    if !unsampled.is_empty() {
        let (value, counter_join, params) = match run_column(metric) {
            Some(column) => (column, String::new(), &filter.params),
            None => {
                ("c.value AS value", format!("JOIN counters c ON c.run_id = t.id AND c.name = {name}"), &with_metric)
            }
        };
        // A few experiments by id (integers from the database); many by the filter.
        let only = if unsampled.len() <= 500 {
            let ids: Vec<String> = unsampled.iter().map(i64::to_string).collect();
            format!(" AND t.experiment_id IN ({})", ids.join(", "))
        } else {
            String::new()
        };
        let runs = Rows::query(
            db,
            &["t.experiment_id", "t.command_idx", value],
            &format!(
                "{} {counter_join} WHERE {}{only} AND t.exit_code = 0 AND t.timed_out = 0 ORDER BY t.experiment_id, t.id",
                filter.from("runs"),
                filter.sql
            ),
            params,
        )?;
        let mut from_runs: HashMap<i64, Vec<f64>> = HashMap::new();
        for r in runs.iter().filter(|r| is_measured(r) && r.real("value").is_finite()) {
            from_runs.entry(r.id("experiment_id")).or_default().push(r.real("value"));
        }
        for (id, values) in from_runs {
            samples.entry(id).or_insert(values);
        }
    }
    let mut out = read_experiments(db, &filter, Detail::Lean, commands_by_experiment, comparisons)?;
    let metric: std::sync::Arc<str> = metric.into();
    for e in &mut out {
        let values = samples.remove(&e.id).unwrap_or_default();
        e.sample = Some(MetricSample { metric: metric.clone(), values });
    }
    Ok(out)
}

/// See [`super::Store::profile_changes`].
pub(super) fn profile_changes(
    db: &mut dyn Backend,
    query: &Query,
    with_profiles: bool,
) -> anyhow::Result<Vec<(i64, ProfileChange)>> {
    let filter = Filter::new(query);
    let mut columns =
        vec!["t.experiment_id", "t.metric", "t.baseline", "t.candidate", "t.functions", "t.flame_graph", "t.warnings"];
    if with_profiles {
        columns.extend(["t.baseline_profile", "t.candidate_profile"]);
    }
    let rows = Rows::query(db, &columns, &filter.child("profile_changes", "t.experiment_id"), &filter.params)?;
    let profile = |r: &DbRow, column: &str| {
        if with_profiles {
            r.value(column).as_bytes().unwrap_or_default().to_vec()
        } else {
            Vec::new()
        }
    };
    rows.iter()
        .map(|r| {
            let change = ProfileChange {
                metric: r.text("metric"),
                baseline: r.text("baseline"),
                candidate: r.text("candidate"),
                functions: r.json("functions", "[]").context("profile change functions")?,
                flame_graph: r.opt_text("flame_graph"),
                warnings: r.json("warnings", "[]").context("profile change warnings")?,
                baseline_profile: profile(&r, "baseline_profile"),
                candidate_profile: profile(&r, "candidate_profile"),
            };
            Ok((r.id("experiment_id"), change))
        })
        .collect()
}

/// The runs column (an expression `… AS value`) holding a harness metric, as
/// [`Run::metric`] computes it; None for counters (and any other metric).
fn run_column(metric: &str) -> Option<&'static str> {
    use perflab_model::metric::*;
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

/// How much of an experiment a read fills in: everything, or what history and reports
/// of one metric use (no warnings, no command argv).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    Full,
    Lean,
}

/// The columns of experiment `e` a read of this detail uses.
fn experiment_columns(detail: Detail) -> Vec<&'static str> {
    let mut columns = vec![
        "e.id",
        "e.label_id",
        "e.benchmark_id",
        "e.machine_id",
        "e.complete",
        "e.perflab_version",
        "e.settings",
        "e.rounds",
        "e.stop_reason",
        "e.environment",
    ];
    if detail == Detail::Full {
        columns.extend([
            "e.git_commit",
            "e.source",
            "e.recorded_at",
            "e.started_at",
            "e.duration_s",
            "e.failure",
            "e.warnings",
        ]);
    }
    columns
}

/// The experiments matching `filter` with their `commands` and `comparisons` (by
/// experiment id), oldest label first, then in storing order.
fn read_experiments(
    db: &mut dyn Backend,
    filter: &Filter,
    detail: Detail,
    mut commands: BTreeMap<i64, Vec<CommandResult>>,
    mut comparisons: BTreeMap<i64, Vec<Comparison>>,
) -> anyhow::Result<Vec<StoredExperiment>> {
    let shared = Shared::read(db)?;
    let mut documents = Documents::default();
    // Nearly every experiment has commands: their count is the size to expect.
    let mut out = Vec::with_capacity(commands.len());
    Rows::each(
        db,
        &experiment_columns(detail),
        // An incomplete attempt a later attempt of its fleet job replaced is not read
        // (its children are, and dropped: rare, and a join on every run costs more).
        &format!("FROM experiments e {} WHERE {} AND e.superseded_by IS NULL", filter.joins, filter.sql),
        &filter.params,
        |r| {
            let id = r.id("id");
            let (commands, comparisons) =
                (commands.remove(&id).unwrap_or_default(), comparisons.remove(&id).unwrap_or_default());
            out.push(stored_experiment(r, &shared, &mut documents, commands, comparisons, detail)?);
            Ok(())
        },
    )?;
    Ok(in_label_order(out))
}

/// Oldest label first, then in storing order. Sorted here rather than by the database:
/// walking the label index visits the table page by page at random when labels were not
/// stored one after another. The experiments (a kilobyte each) are swapped into place
/// along the permutation's cycles, without a second vector.
fn in_label_order(mut experiments: Vec<StoredExperiment>) -> Vec<StoredExperiment> {
    let key = |e: &StoredExperiment| (e.label_order, e.id);
    if experiments.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
        return experiments;
    }
    // from[k]: the position of the experiment that belongs at position k.
    let mut from: Vec<usize> = (0..experiments.len()).collect();
    from.sort_unstable_by_key(|&i| key(&experiments[i]));
    let mut placed = vec![false; experiments.len()];
    for start in 0..experiments.len() {
        let mut k = start;
        while !placed[k] {
            placed[k] = true;
            if from[k] == start {
                break;
            }
            experiments.swap(k, from[k]);
            k = from[k];
        }
    }
    experiments
}

/// The names, machines and parsed documents experiments refer to, each read or parsed
/// once instead of per experiment.
struct Shared {
    labels: HashMap<i64, String>,
    benchmarks: HashMap<i64, String>,
    /// Fingerprint and record.
    machines: HashMap<i64, (String, perflab_model::Machine)>,
}

impl Shared {
    fn read(db: &mut dyn Backend) -> anyhow::Result<Shared> {
        let mut names = |table: &str| -> anyhow::Result<HashMap<i64, String>> {
            let rows = Rows::query(db, &["t.id", "t.name"], &format!("FROM {table} t"), &[])?;
            Ok(rows.iter().map(|r| (r.id("id"), r.text("name"))).collect())
        };
        let (labels, benchmarks) = (names("labels")?, names("benchmarks")?);
        let rows = Rows::query(db, &["m.id", "m.fingerprint", "m.json"], "FROM machines m", &[])?;
        let machines = rows
            .iter()
            .map(|r| Ok((r.id("id"), (r.text("fingerprint"), r.json("json", "").context("machine record")?))))
            .collect::<anyhow::Result<_>>()?;
        Ok(Shared { labels, benchmarks, machines })
    }
}

/// The commands of the experiments matching `filter`, by experiment id (without runs).
fn commands(
    db: &mut dyn Backend,
    filter: &Filter,
    detail: Detail,
) -> anyhow::Result<BTreeMap<i64, Vec<CommandResult>>> {
    let columns: &[&str] = match detail {
        Detail::Full => &["t.experiment_id", "t.idx", "t.name", "t.argv", "t.command_line"],
        Detail::Lean => &["t.experiment_id", "t.idx", "t.name"],
    };
    let full = detail == Detail::Full;
    let mut by_experiment: BTreeMap<i64, Vec<CommandResult>> = BTreeMap::new();
    Rows::each(db, columns, &filter.child("commands", "t.experiment_id, t.idx"), &filter.params, |r| {
        by_experiment.entry(r.id("experiment_id")).or_default().push(CommandResult {
            name: r.text("name"),
            argv: if full { r.json("argv", "[]").context("command argv")? } else { Vec::new() },
            command_line: if full { r.text("command_line") } else { String::new() },
            // The store keeps no -L/-P values (only the name they made).
            ..CommandResult::default()
        });
        Ok(())
    })?;
    Ok(by_experiment)
}

fn comparisons_by_experiment(db: &mut dyn Backend, filter: &Filter) -> anyhow::Result<BTreeMap<i64, Vec<Comparison>>> {
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
            "t.explanation",
        ],
        &filter.child("comparisons", "t.experiment_id, t.idx"),
        &filter.params,
    )?;
    let mut by_experiment: BTreeMap<i64, Vec<Comparison>> = BTreeMap::new();
    for r in comparisons.iter() {
        by_experiment.entry(r.id("experiment_id")).or_default().push(Comparison {
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
            explanation: match r.opt_text("explanation") {
                Some(json) => Some(Box::new(serde_json::from_str(&json).context("a comparison's explanation")?)),
                None => None,
            },
        });
    }
    Ok(by_experiment)
}

/// A JSON document parsed once per distinct text: experiments mostly repeat the same
/// settings and environment, usually from one row to the next.
struct Parsed<T> {
    last: Option<(String, T)>,
    all: HashMap<String, T>,
}

impl<T> Default for Parsed<T> {
    fn default() -> Self {
        Parsed { last: None, all: HashMap::new() }
    }
}

impl<T: serde::de::DeserializeOwned + Clone> Parsed<T> {
    fn get(&mut self, text: Option<&str>, empty: &str) -> serde_json::Result<T> {
        let text = text.unwrap_or(empty);
        if let Some((last, v)) = &self.last {
            if last == text {
                return Ok(v.clone());
            }
        }
        let v: T = match self.all.get(text) {
            Some(v) => v.clone(),
            None => serde_json::from_str(text)?,
        };
        self.all.entry(text.to_string()).or_insert_with(|| v.clone());
        self.last = Some((text.to_string(), v.clone()));
        Ok(v)
    }
}

/// The documents experiments repeat, parsed once (see [`Parsed`]).
#[derive(Default)]
struct Documents {
    settings: Parsed<Settings>,
    environments: Parsed<BTreeMap<String, String>>,
}

/// The stored experiment of an `experiments` row (its columns as [`experiment_columns`]
/// lists them), with its machine, commands and comparisons.
fn stored_experiment(
    r: &DbRow,
    shared: &Shared,
    documents: &mut Documents,
    commands: Vec<CommandResult>,
    mut comparisons: Vec<Comparison>,
    detail: Detail,
) -> anyhow::Result<StoredExperiment> {
    let id = r.id("id");
    let (fingerprint, machine) =
        shared.machines.get(&r.id("machine_id")).with_context(|| format!("experiment {id} has no machine"))?;
    let name = |names: &HashMap<i64, String>, column: &str| names.get(&r.id(column)).cloned().unwrap_or_default();
    let complete = r.flag("complete");
    let stop_reason = match r.value("stop_reason").as_str() {
        Some(reason) if complete => {
            use serde::de::{value::StrDeserializer, Deserialize};
            StopReason::deserialize(StrDeserializer::<serde::de::value::Error>::new(reason))
                .unwrap_or(StopReason::Interrupted)
        }
        _ => StopReason::Interrupted,
    };
    let rounds = match r.int("rounds") {
        Some(n) if complete => n as u32,
        // A writer that died left only runs: count the rounds every command finished.
        _ => commands.iter().map(|c| c.runs.len() as u32).min().unwrap_or(0),
    };
    let settings = documents.settings.get(r.value("settings").as_str(), "").context("settings record")?;
    for c in &mut comparisons {
        c.better = settings.metric_info(&c.metric).better;
    }
    // Comparisons are stored primary metric first (the direction is not a column either).
    let primary_metric = comparisons.first().map_or_else(|| metric::WALL.to_string(), |c| c.metric.clone());
    // A lean read leaves out what history and reports do not use.
    let full = detail == Detail::Full;
    Ok(StoredExperiment {
        id,
        label: name(&shared.labels, "label_id"),
        label_order: r.id("label_id"),
        benchmark: name(&shared.benchmarks, "benchmark_id"),
        git_commit: if full { r.opt_text("git_commit") } else { None },
        source: if full { r.text("source") } else { String::new() },
        recorded_at: if full { r.text("recorded_at") } else { String::new() },
        machine_fingerprint: fingerprint.clone(),
        complete,
        experiment: Experiment {
            schema_version: perflab_model::SCHEMA_VERSION,
            primary_metric,
            perflab_version: r.text("perflab_version"),
            started_at: if full { r.text("started_at") } else { String::new() },
            machine: machine.clone(),
            settings,
            rounds,
            duration_s: if full { r.opt_real("duration_s").unwrap_or(0.0) } else { 0.0 },
            stop_reason,
            commands,
            comparisons,
            warnings: if full { r.json("warnings", "[]").unwrap_or_default() } else { Vec::new() },
            environment: documents.environments.get(r.value("environment").as_str(), "{}").unwrap_or_default(),
            failure: if full { r.opt_text("failure") } else { None },
            // The design analysis is not stored; it is derived from the runs when asked.
            design: None,
            ..Experiment::default()
        },
        sample: None,
        profile_change: None,
    })
}

/// The command of the row's experiment at the row's `idx_column` among those read so far.
fn command_mut<'a>(
    map: &'a mut BTreeMap<i64, Vec<CommandResult>>,
    row: &DbRow,
    idx_column: &str,
) -> Option<&'a mut CommandResult> {
    let idx = usize::try_from(row.int(idx_column)?).ok()?;
    map.get_mut(&row.id("experiment_id"))?.get_mut(idx)
}

#[cfg(test)]
mod tests;
