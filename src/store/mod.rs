//! The history store: every experiment, run, counter, summary and verdict, with the
//! label, git commit and machine it came from, in SQLite (default) or PostgreSQL.
//!
//! One schema and one set of queries serve both databases: the SQL lives here and the
//! backends ([`sqlite`], [`postgres`]) only execute it, so they cannot drift apart.
//! Reading back always yields the one data model, [`crate::model::Experiment`].
//!
//! Writing is incremental: [`Store::begin`] registers an experiment, [`Recorder::record_run`]
//! commits each run as it completes (a `kill -9` loses at most the run in flight), and
//! [`Recorder::finish`] adds the summaries and comparisons.

pub mod exchange;
pub mod postgres;
pub mod sqlite;

use crate::error::Failure;
use crate::model::{
    CommandResult, CommandSpec, Comparison, CounterReading, ExitInfo, Experiment, Machine, Run, Settings, StopReason,
    Summary, Verdict,
};
use anyhow::{anyhow, Context};
use std::collections::BTreeMap;
use std::path::Path;

/// Where the database lives when neither `--db` nor `PERFLAB_DB` says otherwise.
pub const DEFAULT_PATH: &str = ".perflab/perflab.db";
/// Environment variable naming the database (a path or a `postgres://` URL).
pub const DB_ENV: &str = "PERFLAB_DB";

/// A SQL value crossing the backend boundary. Nulls keep their type because
/// PostgreSQL checks the type of every parameter, null or not.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<String>),
}

impl Value {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => *v,
            Value::Real(v) => v.map(|v| v as i64),
            Value::Text(_) => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => v.map(|v| v as f64),
            Value::Real(v) => *v,
            Value::Text(_) => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(v) => v.as_deref(),
            _ => None,
        }
    }
}

fn int(v: impl TryInto<i64>) -> Value {
    Value::Int(v.try_into().ok())
}
fn opt_int(v: Option<i32>) -> Value {
    Value::Int(v.map(i64::from))
}
fn real(v: f64) -> Value {
    Value::Real(Some(v))
}
fn opt_real(v: Option<f64>) -> Value {
    Value::Real(v)
}
fn text(v: impl Into<String>) -> Value {
    Value::Text(Some(v.into()))
}
fn opt_text(v: Option<&str>) -> Value {
    Value::Text(v.map(str::to_string))
}

/// What a database must do for the store; everything else is shared SQL.
///
/// Statements use `$1, $2, …` placeholders (in order of first use) and the DDL uses
/// `{id}`, `{int}`, `{real}` for the types that differ between databases.
pub trait Backend {
    /// `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
    /// Replace the `{id}`/`{int}`/`{real}`/`{without_rowid}` tokens in DDL.
    fn dialect(&self, ddl: &str) -> String;
    fn execute(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<u64>;
    fn query(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<Vec<Vec<Value>>>;
    /// Run several `;`-separated statements without parameters.
    fn batch(&mut self, sql: &str) -> anyhow::Result<()>;
    /// Start a write transaction that holds the write lock from the start (so two
    /// writers queue instead of failing when one upgrades a read lock).
    fn begin_write(&mut self) -> anyhow::Result<()>;
    fn commit(&mut self) -> anyhow::Result<()> {
        self.batch("COMMIT")
    }
    fn rollback(&mut self) -> anyhow::Result<()> {
        self.batch("ROLLBACK")
    }
    /// Serialize schema migrations between processes (inside a write transaction).
    fn lock_schema(&mut self) -> anyhow::Result<()>;
}

/// Schema migrations, applied in order; each runs in one transaction and is
/// recorded in `schema_migrations`. Never edit a released migration: append one.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "initial schema", SCHEMA_V1),
    (2, "index experiments by machine", "CREATE INDEX experiments_by_machine ON experiments(machine_id, label_id);"),
];

const SCHEMA_V1: &str = r#"
CREATE TABLE labels (
    id {id},
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE machines (
    id {id},
    fingerprint TEXT NOT NULL UNIQUE,
    hostname TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    cores {int} NOT NULL,
    kernel TEXT NOT NULL,
    governor TEXT,
    pmu {int} NOT NULL,
    virtualization TEXT,
    json TEXT NOT NULL
);
CREATE TABLE benchmarks (
    id {id},
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE experiments (
    id {id},
    label_id {int} NOT NULL REFERENCES labels(id),
    benchmark_id {int} NOT NULL REFERENCES benchmarks(id),
    machine_id {int} NOT NULL REFERENCES machines(id),
    source TEXT NOT NULL,
    git_commit TEXT,
    perflab_version TEXT NOT NULL,
    started_at TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    settings TEXT NOT NULL,
    complete {int} NOT NULL,
    rounds {int},
    duration_s {real},
    stop_reason TEXT,
    failure TEXT,
    warnings TEXT NOT NULL,
    environment TEXT NOT NULL
);
CREATE INDEX experiments_by_benchmark ON experiments(benchmark_id, label_id);
CREATE TABLE commands (
    experiment_id {int} NOT NULL REFERENCES experiments(id),
    idx {int} NOT NULL,
    name TEXT NOT NULL,
    argv TEXT NOT NULL,
    command_line TEXT NOT NULL,
    PRIMARY KEY (experiment_id, idx)
){without_rowid};
CREATE TABLE runs (
    id {id},
    experiment_id {int} NOT NULL REFERENCES experiments(id),
    command_idx {int} NOT NULL,
    round {int} NOT NULL,
    position {int} NOT NULL,
    wall_s {real} NOT NULL,
    user_s {real} NOT NULL,
    sys_s {real} NOT NULL,
    max_rss_kib {int} NOT NULL,
    minor_faults {int} NOT NULL,
    major_faults {int} NOT NULL,
    voluntary_cs {int} NOT NULL,
    involuntary_cs {int} NOT NULL,
    exit_code {int},
    exit_signal {int},
    timed_out {int} NOT NULL,
    env_pad_bytes {int} NOT NULL
);
CREATE INDEX runs_by_experiment ON runs(experiment_id, command_idx);
CREATE TABLE counters (
    run_id {int} NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    supported {int} NOT NULL,
    value {real},
    scaled {int} NOT NULL,
    reason TEXT,
    PRIMARY KEY (run_id, name)
){without_rowid};
CREATE TABLE summaries (
    experiment_id {int} NOT NULL REFERENCES experiments(id),
    command_idx {int} NOT NULL,
    metric TEXT NOT NULL,
    n {int} NOT NULL,
    median {real},
    mean {real},
    stddev {real},
    mad {real},
    min_value {real},
    max_value {real},
    outliers {int} NOT NULL,
    ci_low {real},
    ci_high {real},
    PRIMARY KEY (experiment_id, command_idx, metric)
){without_rowid};
CREATE TABLE comparisons (
    experiment_id {int} NOT NULL REFERENCES experiments(id),
    idx {int} NOT NULL,
    baseline TEXT NOT NULL,
    candidate TEXT NOT NULL,
    metric TEXT NOT NULL,
    ratio {real},
    ci_low {real},
    ci_high {real},
    confidence {real},
    look_confidence {real},
    p_value {real},
    verdict TEXT NOT NULL,
    below_threshold {int} NOT NULL,
    n {int} NOT NULL,
    flags TEXT NOT NULL,
    PRIMARY KEY (experiment_id, idx)
){without_rowid};
"#;

/// The latest schema version this perflab writes.
pub fn schema_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Who stored an experiment and under which name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Meta {
    /// The label (a version, a commit, "before"/"after", ...) results are grouped by.
    pub label: String,
    /// The benchmark name (a suite benchmark, or the commands' names for `compare`).
    pub benchmark: String,
    /// `git rev-parse HEAD` of the working directory, `-dirty` when it has changes.
    pub git_commit: Option<String>,
    /// What produced it: `run`, `compare`, `import:hyperfine`, `import:perflab`, `bisect`.
    pub source: String,
}

/// Which experiments to read back. `None` means any.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub label: Option<String>,
    pub benchmark: Option<String>,
    /// A machine fingerprint (or a prefix of one) or a hostname.
    pub machine: Option<String>,
}

/// One stored experiment with its metadata (also the record of `perflab export`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredExperiment {
    /// The row id in the database it was read from (ignored on import).
    #[serde(default)]
    pub id: i64,
    pub label: String,
    /// Position of the label in stored order (first use), for history's x axis.
    #[serde(default)]
    pub label_order: i64,
    pub benchmark: String,
    pub git_commit: Option<String>,
    pub source: String,
    /// When it was written to the store (RFC 3339, UTC).
    pub recorded_at: String,
    /// Short hash of the machine fields; results are only mixed within one.
    pub machine_fingerprint: String,
    /// False while being written, or when the writer died: runs are kept but there
    /// are no summaries or comparisons, and `stop_reason` reads `interrupted`.
    pub complete: bool,
    pub experiment: Experiment,
}

/// A stored label, in stored order.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelInfo {
    pub name: String,
    pub created_at: String,
    pub experiments: i64,
}

/// A machine seen in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineInfo {
    pub fingerprint: String,
    pub machine: Machine,
    pub experiments: i64,
}

/// Short stable fingerprint of a machine: every field of [`Machine`] counts, since
/// any of them (even the hostname, on identical cloud types) can shift results.
pub fn fingerprint(machine: &Machine) -> String {
    use sha2::{Digest, Sha256};
    // serde_json of a plain struct cannot fail.
    let json = serde_json::to_string(machine).unwrap_or_default();
    let digest = Sha256::digest(json.as_bytes());
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// One line naming a machine for people: `host (CPU, N cores, kernel) [fingerprint]`.
pub fn describe_machine(fingerprint: &str, machine: &Machine) -> String {
    format!(
        "{} ({}, {} cores, Linux {}) [{}]",
        machine.hostname, machine.cpu_model, machine.cores, machine.kernel, fingerprint
    )
}

/// The git commit of the current directory, `-dirty` when the tree has changes;
/// `None` outside a git repository or without git.
pub fn current_git_commit() -> Option<String> {
    let git =
        |args: &[&str]| std::process::Command::new("git").args(args).stderr(std::process::Stdio::null()).output().ok();
    let head = git(&["rev-parse", "HEAD"]).filter(|o| o.status.success())?;
    let commit = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
    Some(if dirty { format!("{commit}-dirty") } else { commit })
}

/// The label used when none is given: the short git commit, else the UTC time.
pub fn default_label(git_commit: Option<&str>) -> String {
    match git_commit {
        Some(c) => c.chars().take(12).collect::<String>() + if c.ends_with("-dirty") { "-dirty" } else { "" },
        None => chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
    }
}

/// The database named by `url`, else by `$PERFLAB_DB`, else the default path.
fn locate(url: Option<&str>) -> String {
    let env = std::env::var(DB_ENV).ok().filter(|v| !v.is_empty());
    url.map(str::to_string).or(env).unwrap_or_else(|| DEFAULT_PATH.to_string())
}

fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// The history store. Open with [`Store::open`].
pub struct Store {
    db: Box<dyn Backend>,
    location: String,
}

impl Store {
    /// Open (creating and migrating as needed) the database named by `url`, else by
    /// `$PERFLAB_DB`, else `.perflab/perflab.db`. A `postgres://` or `postgresql://`
    /// URL selects PostgreSQL; anything else is a SQLite file path (`sqlite:` prefix optional).
    pub fn open(url: Option<&str>) -> Result<Store, Failure> {
        let location = locate(url);
        let db: Box<dyn Backend> = if is_postgres(&location) {
            Box::new(
                postgres::Postgres::connect(&location)
                    .map_err(|e| crate::usage!("cannot connect to {}: {e:#}", redact(&location)))?,
            )
        } else {
            let path = location.strip_prefix("sqlite:").unwrap_or(&location);
            Box::new(
                sqlite::Sqlite::open(Path::new(path))
                    .map_err(|e| crate::usage!("cannot open database {path}: {e:#}"))?,
            )
        };
        let mut store = Store { db, location: redact(&location) };
        store.migrate(schema_version()).map_err(|e| crate::usage!("database {}: {e:#}", store.location))?;
        Ok(store)
    }

    /// Open a database that must already exist, for commands that only read: a missing
    /// SQLite file is an error, never created.
    pub fn open_existing(url: Option<&str>) -> Result<Store, Failure> {
        let location = locate(url);
        if !is_postgres(&location) {
            let path = location.strip_prefix("sqlite:").unwrap_or(&location);
            if !Path::new(path).exists() {
                return Err(crate::usage!(
                    "no history database at {path}: store results with `perflab run` or `perflab compare --save` (or pass --db)"
                ));
            }
        }
        Store::open(url)
    }

    /// Where the store lives (passwords removed), for messages.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        self.db.kind()
    }

    /// Apply the migrations up to version `target`.
    fn migrate(&mut self, target: i64) -> anyhow::Result<()> {
        self.write(|db| {
            db.lock_schema()?;
            db.batch(&db.dialect(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version {int} PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)",
            ))?;
            let current = db
                .query("SELECT MAX(version) FROM schema_migrations", &[])?
                .first()
                .and_then(|r| r[0].as_i64())
                .unwrap_or(0);
            if current > schema_version() {
                return Err(anyhow!(
                    "schema version {current} is newer than this perflab understands ({}); upgrade perflab",
                    schema_version()
                ));
            }
            for (version, description, sql) in MIGRATIONS.iter().filter(|m| m.0 > current && m.0 <= target) {
                db.batch(&db.dialect(sql)).with_context(|| format!("migration {version} ({description})"))?;
                db.execute(
                    "INSERT INTO schema_migrations (version, description, applied_at) VALUES ($1, $2, $3)",
                    &[int(*version), text(*description), text(now())],
                )?;
            }
            Ok(())
        })
    }

    /// Run `f` in one write transaction: all of it is committed or none.
    fn write<T>(&mut self, f: impl FnOnce(&mut dyn Backend) -> anyhow::Result<T>) -> anyhow::Result<T> {
        self.db.begin_write()?;
        match f(self.db.as_mut()) {
            Ok(v) => {
                self.db.commit()?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.db.rollback();
                Err(e)
            }
        }
    }

    /// Prepare to store an experiment about to run; its runs are then committed one by
    /// one through the returned [`Recorder`]. Nothing is written until the first run, so
    /// an experiment that fails to start leaves no trace.
    pub fn begin(
        &mut self,
        meta: &Meta,
        machine: &Machine,
        settings: &Settings,
        commands: &[CommandSpec],
    ) -> Recorder<'_> {
        Recorder {
            store: self,
            meta: meta.clone(),
            pending: Some((machine.clone(), settings.clone(), commands.to_vec())),
            id: None,
            recorded: Vec::new(),
        }
    }

    /// Store a finished experiment (from `compare --save` or an import) in one transaction.
    pub fn save(&mut self, meta: &Meta, experiment: &Experiment) -> Result<i64, Failure> {
        let commands: Vec<CommandSpec> = experiment.commands.iter().map(CommandResult::spec).collect();
        let id = self
            .write(|db| {
                let id = insert_experiment(
                    db,
                    meta,
                    &experiment.machine,
                    &experiment.settings,
                    &commands,
                    &experiment.started_at,
                )?;
                finish_experiment(db, id, experiment, &[])?;
                Ok(id)
            })
            .with_context(|| format!("storing into {}", self.location))?;
        Ok(id)
    }

    /// Labels in stored order (first use), with how many experiments carry each.
    pub fn labels(&mut self) -> Result<Vec<LabelInfo>, Failure> {
        let rows = self.db.query(
            "SELECT l.name, l.created_at, COUNT(e.id) FROM labels l LEFT JOIN experiments e ON e.label_id = l.id \
                 GROUP BY l.id, l.name, l.created_at ORDER BY l.id",
            &[],
        )?;
        Ok(rows
            .into_iter()
            .map(|r| LabelInfo {
                name: r[0].as_str().unwrap_or_default().to_string(),
                created_at: r[1].as_str().unwrap_or_default().to_string(),
                experiments: r[2].as_i64().unwrap_or(0),
            })
            .collect())
    }

    /// Machines in the store, in order of first use.
    pub fn machines(&mut self) -> Result<Vec<MachineInfo>, Failure> {
        let rows = self.db.query(
            "SELECT m.fingerprint, m.json, COUNT(e.id) FROM machines m LEFT JOIN experiments e ON e.machine_id = m.id \
             GROUP BY m.id, m.fingerprint, m.json ORDER BY m.id",
            &[],
        )?;
        rows.into_iter()
            .map(|r| {
                let machine = serde_json::from_str(r[1].as_str().unwrap_or_default()).context("machine record")?;
                Ok(MachineInfo {
                    fingerprint: r[0].as_str().unwrap_or_default().to_string(),
                    machine,
                    experiments: r[2].as_i64().unwrap_or(0),
                })
            })
            .collect()
    }

    /// The experiments matching `query`, oldest label first, then in storing order.
    pub fn experiments(&mut self, query: &Query) -> Result<Vec<StoredExperiment>, Failure> {
        self.load(query).with_context(|| format!("reading {}", self.location)).map_err(Failure::from)
    }

    fn load(&mut self, query: &Query) -> anyhow::Result<Vec<StoredExperiment>> {
        // Every child table is read with the same filter in one query, then grouped
        // in memory: six queries however many experiments match.
        let filter = "l.name = COALESCE($1, l.name) AND b.name = COALESCE($2, b.name) \
             AND (CAST($3 AS TEXT) IS NULL OR m.fingerprint LIKE $3 || '%' OR m.hostname = $3)";
        let joins = "JOIN labels l ON l.id = e.label_id JOIN benchmarks b ON b.id = e.benchmark_id \
                     JOIN machines m ON m.id = e.machine_id";
        let params = [
            opt_text(query.label.as_deref()),
            opt_text(query.benchmark.as_deref()),
            opt_text(query.machine.as_deref()),
        ];
        let sub = |select: &str, table: &str, order: &str| {
            format!(
                "SELECT {select} FROM {table} t JOIN experiments e ON e.id = t.experiment_id {joins} WHERE {filter} ORDER BY {order}"
            )
        };
        let experiments = self.db.query(
            &format!(
                "SELECT e.id, l.name, l.id, b.name, e.git_commit, e.source, e.recorded_at, m.fingerprint, m.json, \
                 e.complete, e.perflab_version, e.started_at, e.settings, e.rounds, e.stop_reason, e.warnings, e.environment, \
                 e.duration_s, e.failure \
                 FROM experiments e {joins} WHERE {filter} ORDER BY l.id, e.id"
            ),
            &params,
        )?;
        let commands = self.db.query(
            &sub("t.experiment_id, t.idx, t.name, t.argv, t.command_line", "commands", "t.experiment_id, t.idx"),
            &params,
        )?;
        let runs = self.db.query(
            &sub(
                "t.experiment_id, t.command_idx, t.id, t.round, t.position, t.wall_s, t.user_s, t.sys_s, t.max_rss_kib, \
                 t.minor_faults, t.major_faults, t.voluntary_cs, t.involuntary_cs, t.exit_code, t.exit_signal, t.timed_out, t.env_pad_bytes",
                "runs",
                "t.id",
            ),
            &params,
        )?;
        let counters = self.db.query(
            &format!(
                "SELECT c.run_id, c.name, c.supported, c.value, c.scaled, c.reason FROM counters c \
                 JOIN runs t ON t.id = c.run_id JOIN experiments e ON e.id = t.experiment_id {joins} WHERE {filter} ORDER BY c.run_id, c.name"
            ),
            &params,
        )?;
        let summaries = self.db.query(
            &sub(
                "t.experiment_id, t.command_idx, t.metric, t.n, t.median, t.mean, t.stddev, t.mad, t.min_value, t.max_value, \
                 t.outliers, t.ci_low, t.ci_high",
                "summaries",
                "t.experiment_id, t.command_idx, t.metric",
            ),
            &params,
        )?;
        let comparisons = self.db.query(
            &sub(
                "t.experiment_id, t.idx, t.baseline, t.candidate, t.metric, t.ratio, t.ci_low, t.ci_high, t.confidence, \
                 t.look_confidence, t.p_value, t.verdict, t.below_threshold, t.n, t.flags",
                "comparisons",
                "t.experiment_id, t.idx",
            ),
            &params,
        )?;

        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
        let u = |v: &Value| v.as_i64().unwrap_or(0).max(0) as u64;

        let mut counters_by_run: BTreeMap<i64, BTreeMap<String, CounterReading>> = BTreeMap::new();
        for r in &counters {
            counters_by_run.entry(r[0].as_i64().unwrap_or(-1)).or_default().insert(
                s(&r[1]),
                CounterReading {
                    supported: u(&r[2]) != 0,
                    value: r[3].as_f64(),
                    scaled: u(&r[4]) != 0,
                    reason: r[5].as_str().map(str::to_string),
                },
            );
        }
        let mut commands_by_exp: BTreeMap<i64, Vec<CommandResult>> = BTreeMap::new();
        for r in &commands {
            commands_by_exp.entry(r[0].as_i64().unwrap_or(-1)).or_default().push(CommandResult {
                name: s(&r[2]),
                argv: serde_json::from_str(r[3].as_str().unwrap_or("[]")).context("command argv")?,
                command_line: s(&r[4]),
                runs: Vec::new(),
                summary: BTreeMap::new(),
            });
        }
        for r in &runs {
            let run_id = r[2].as_i64().unwrap_or(-1);
            let run = Run {
                round: u(&r[3]) as u32,
                position: u(&r[4]) as u32,
                wall_s: f(&r[5]),
                user_s: f(&r[6]),
                sys_s: f(&r[7]),
                max_rss_kib: u(&r[8]),
                minor_faults: u(&r[9]),
                major_faults: u(&r[10]),
                voluntary_cs: u(&r[11]),
                involuntary_cs: u(&r[12]),
                exit: ExitInfo {
                    exit_code: r[13].as_i64().map(|v| v as i32),
                    signal: r[14].as_i64().map(|v| v as i32),
                    timed_out: u(&r[15]) != 0,
                },
                env_pad_bytes: u(&r[16]) as u32,
                counters: counters_by_run.remove(&run_id).unwrap_or_default(),
            };
            if let Some(cmd) = command_mut(&mut commands_by_exp, &r[0], &r[1]) {
                cmd.runs.push(run);
            }
        }
        for r in &summaries {
            let summary = Summary {
                n: u(&r[3]) as usize,
                median: f(&r[4]),
                mean: f(&r[5]),
                stddev: f(&r[6]),
                mad: f(&r[7]),
                min: f(&r[8]),
                max: f(&r[9]),
                outliers: u(&r[10]) as usize,
                median_ci: r[11].as_f64().zip(r[12].as_f64()),
            };
            if let Some(cmd) = command_mut(&mut commands_by_exp, &r[0], &r[1]) {
                cmd.summary.insert(s(&r[2]), summary);
            }
        }
        let mut comparisons_by_exp: BTreeMap<i64, Vec<Comparison>> = BTreeMap::new();
        for r in &comparisons {
            comparisons_by_exp.entry(r[0].as_i64().unwrap_or(-1)).or_default().push(Comparison {
                baseline: s(&r[2]),
                candidate: s(&r[3]),
                metric: s(&r[4]),
                ratio: f(&r[5]),
                ci_low: f(&r[6]),
                ci_high: f(&r[7]),
                confidence: f(&r[8]),
                look_confidence: f(&r[9]),
                p_value: f(&r[10]),
                verdict: serde_json::from_value(serde_json::Value::String(s(&r[11]))).unwrap_or(Verdict::Inconclusive),
                below_threshold: u(&r[12]) != 0,
                n: u(&r[13]) as usize,
                flags: serde_json::from_str(r[14].as_str().unwrap_or("[]")).unwrap_or_default(),
            });
        }

        let mut out = Vec::with_capacity(experiments.len());
        for r in experiments {
            let id = r[0].as_i64().unwrap_or(-1);
            let complete = u(&r[9]) != 0;
            let commands = commands_by_exp.remove(&id).unwrap_or_default();
            let stop_reason = match r[14].as_str() {
                Some(reason) if complete => serde_json::from_value(serde_json::Value::String(reason.to_string()))
                    .unwrap_or(StopReason::Interrupted),
                _ => StopReason::Interrupted,
            };
            let rounds = match r[13].as_i64() {
                Some(n) if complete => n as u32,
                // A writer that died left only runs: count the rounds every command finished.
                _ => commands.iter().map(|c| c.runs.len() as u32).min().unwrap_or(0),
            };
            let experiment = Experiment {
                perflab_version: s(&r[10]),
                started_at: s(&r[11]),
                machine: serde_json::from_str(r[8].as_str().unwrap_or_default()).context("machine record")?,
                settings: serde_json::from_str(r[12].as_str().unwrap_or_default()).context("settings record")?,
                rounds,
                duration_s: r[17].as_f64().unwrap_or(0.0),
                stop_reason,
                commands,
                comparisons: comparisons_by_exp.remove(&id).unwrap_or_default(),
                warnings: serde_json::from_str(r[15].as_str().unwrap_or("[]")).unwrap_or_default(),
                environment: serde_json::from_str(r[16].as_str().unwrap_or("{}")).unwrap_or_default(),
                failure: r[18].as_str().map(str::to_string),
                ..Experiment::default()
            };
            out.push(StoredExperiment {
                id,
                label: s(&r[1]),
                label_order: r[2].as_i64().unwrap_or(0),
                benchmark: s(&r[3]),
                git_commit: r[4].as_str().map(str::to_string),
                source: s(&r[5]),
                recorded_at: s(&r[6]),
                machine_fingerprint: s(&r[7]),
                complete,
                experiment,
            });
        }
        Ok(out)
    }
}

/// The command `idx` of experiment `exp` among the commands read so far.
fn command_mut<'a>(
    map: &'a mut BTreeMap<i64, Vec<CommandResult>>,
    exp: &Value,
    idx: &Value,
) -> Option<&'a mut CommandResult> {
    let idx = usize::try_from(idx.as_i64()?).ok()?;
    map.get_mut(&exp.as_i64()?)?.get_mut(idx)
}

/// Writes one experiment's runs as they complete. Made by [`Store::begin`].
pub struct Recorder<'s> {
    store: &'s mut Store,
    meta: Meta,
    /// What to register with the first run.
    pending: Option<(Machine, Settings, Vec<CommandSpec>)>,
    id: Option<i64>,
    /// Runs already committed, per command.
    recorded: Vec<usize>,
}

/// The compare engine reports each measured run here; a failed write stops the experiment.
impl crate::experiment::Observer for Recorder<'_> {
    fn run_finished(&mut self, command: usize, run: &Run) -> anyhow::Result<()> {
        self.record_run(command, run).map_err(|e| anyhow!("{e:#}"))
    }
}

impl Recorder<'_> {
    /// The label, benchmark and commit the experiment is stored under.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Where it is stored (password removed).
    pub fn location(&self) -> &str {
        self.store.location()
    }

    /// The experiment's id in the store, once its first run was stored.
    pub fn id(&self) -> Option<i64> {
        self.id
    }

    /// Commit one measured run (not a warm-up) of command `command_idx`, in its own transaction.
    pub fn record_run(&mut self, command_idx: usize, run: &Run) -> Result<(), Failure> {
        let pending = self.pending.take();
        let (id, meta) = (self.id, &self.meta);
        let result = self.store.write(|db| {
            let id = match (id, &pending) {
                (Some(id), _) => id,
                (None, Some((machine, settings, commands))) => {
                    insert_experiment(db, meta, machine, settings, commands, &now())?
                }
                (None, None) => return Err(anyhow!("recorder has no experiment")),
            };
            insert_run(db, id, command_idx, run)?;
            Ok(id)
        });
        match result {
            Ok(id) => {
                self.id = Some(id);
                if self.recorded.len() <= command_idx {
                    self.recorded.resize(command_idx + 1, 0);
                }
                self.recorded[command_idx] += 1;
                Ok(())
            }
            Err(e) => {
                if self.id.is_none() {
                    self.pending = pending;
                }
                Err(Failure::Other(e.context(format!("storing a run into {}", self.store.location))))
            }
        }
    }

    /// Store the summaries, comparisons and final state; runs of `experiment` that
    /// were not recorded yet (beyond the count recorded per command) are added too.
    pub fn finish(self, experiment: &Experiment) -> Result<i64, Failure> {
        let Some(id) = self.id else {
            return self.store.save(&self.meta, experiment);
        };
        let recorded = self.recorded;
        self.store
            .write(|db| finish_experiment(db, id, experiment, &recorded))
            .with_context(|| format!("storing into {}", self.store.location))?;
        Ok(id)
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Remove a password from a URL before it is shown.
fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Insert `name` into a `(id, name, …)` table unless present, and return its id.
/// `ON CONFLICT DO NOTHING` keeps two concurrent writers from failing on the same name.
fn intern(db: &mut dyn Backend, table: &str, name: &str, extra: &[(&str, Value)]) -> anyhow::Result<i64> {
    let key = if table == "machines" { "fingerprint" } else { "name" };
    let mut columns = vec![key];
    let mut values = vec![text(name)];
    for (c, v) in extra {
        columns.push(c);
        values.push(v.clone());
    }
    let placeholders: Vec<String> = (1..=values.len()).map(|i| format!("${i}")).collect();
    db.execute(
        &format!(
            "INSERT INTO {table} ({}) VALUES ({}) ON CONFLICT ({key}) DO NOTHING",
            columns.join(", "),
            placeholders.join(", ")
        ),
        &values,
    )?;
    db.query(&format!("SELECT id FROM {table} WHERE {key} = $1"), &[text(name)])?
        .first()
        .and_then(|r| r[0].as_i64())
        .ok_or_else(|| anyhow!("{table} row for {name} vanished"))
}

fn insert_experiment(
    db: &mut dyn Backend,
    meta: &Meta,
    machine: &Machine,
    settings: &Settings,
    commands: &[CommandSpec],
    started_at: &str,
) -> anyhow::Result<i64> {
    let recorded_at = now();
    let label = intern(db, "labels", &meta.label, &[("created_at", text(&recorded_at))])?;
    let benchmark = intern(db, "benchmarks", &meta.benchmark, &[])?;
    let machine_id = intern(
        db,
        "machines",
        &fingerprint(machine),
        &[
            ("hostname", text(&machine.hostname)),
            ("cpu_model", text(&machine.cpu_model)),
            ("cores", int(machine.cores)),
            ("kernel", text(&machine.kernel)),
            ("governor", opt_text(machine.governor.as_deref())),
            ("pmu", int(machine.pmu as i64)),
            ("virtualization", opt_text(machine.virtualization.as_deref())),
            ("json", text(serde_json::to_string(machine)?)),
        ],
    )?;
    let id = db
        .query(
            "INSERT INTO experiments (label_id, benchmark_id, machine_id, source, git_commit, perflab_version, started_at, \
             recorded_at, settings, complete, warnings, environment) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, '[]', '{}') RETURNING id",
            &[
                int(label),
                int(benchmark),
                int(machine_id),
                text(&meta.source),
                opt_text(meta.git_commit.as_deref()),
                text(env!("CARGO_PKG_VERSION")),
                text(started_at),
                text(&recorded_at),
                text(serde_json::to_string(settings)?),
            ],
        )?
        .first()
        .and_then(|r| r[0].as_i64())
        .ok_or_else(|| anyhow!("INSERT … RETURNING id gave no id"))?;
    for (idx, c) in commands.iter().enumerate() {
        db.execute(
            "INSERT INTO commands (experiment_id, idx, name, argv, command_line) VALUES ($1, $2, $3, $4, $5)",
            &[int(id), int(idx), text(&c.name), text(serde_json::to_string(&c.argv)?), text(&c.command_line)],
        )?;
    }
    Ok(id)
}

fn insert_run(db: &mut dyn Backend, experiment: i64, command_idx: usize, run: &Run) -> anyhow::Result<()> {
    let run_id = db
        .query(
            "INSERT INTO runs (experiment_id, command_idx, round, position, wall_s, user_s, sys_s, max_rss_kib, minor_faults, \
             major_faults, voluntary_cs, involuntary_cs, exit_code, exit_signal, timed_out, env_pad_bytes) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING id",
            &[
                int(experiment),
                int(command_idx),
                int(run.round),
                int(run.position),
                real(run.wall_s),
                real(run.user_s),
                real(run.sys_s),
                int(run.max_rss_kib),
                int(run.minor_faults),
                int(run.major_faults),
                int(run.voluntary_cs),
                int(run.involuntary_cs),
                opt_int(run.exit.exit_code),
                opt_int(run.exit.signal),
                int(run.exit.timed_out as i64),
                int(run.env_pad_bytes),
            ],
        )?
        .first()
        .and_then(|r| r[0].as_i64())
        .ok_or_else(|| anyhow!("INSERT … RETURNING id gave no id"))?;
    for (name, c) in &run.counters {
        db.execute(
            "INSERT INTO counters (run_id, name, supported, value, scaled, reason) VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                int(run_id),
                text(name),
                int(c.supported as i64),
                opt_real(c.value),
                int(c.scaled as i64),
                opt_text(c.reason.as_deref()),
            ],
        )?;
    }
    Ok(())
}

fn finish_experiment(db: &mut dyn Backend, id: i64, exp: &Experiment, recorded: &[usize]) -> anyhow::Result<()> {
    for (idx, command) in exp.commands.iter().enumerate() {
        let already = recorded.get(idx).copied().unwrap_or(0);
        for run in command.runs.iter().skip(already) {
            insert_run(db, id, idx, run)?;
        }
        for (metric, s) in &command.summary {
            db.execute(
                "INSERT INTO summaries (experiment_id, command_idx, metric, n, median, mean, stddev, mad, min_value, max_value, \
                 outliers, ci_low, ci_high) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                &[
                    int(id),
                    int(idx),
                    text(metric),
                    int(s.n),
                    real(s.median),
                    real(s.mean),
                    real(s.stddev),
                    real(s.mad),
                    real(s.min),
                    real(s.max),
                    int(s.outliers),
                    opt_real(s.median_ci.map(|c| c.0)),
                    opt_real(s.median_ci.map(|c| c.1)),
                ],
            )?;
        }
    }
    for (idx, c) in exp.comparisons.iter().enumerate() {
        db.execute(
            "INSERT INTO comparisons (experiment_id, idx, baseline, candidate, metric, ratio, ci_low, ci_high, confidence, \
             look_confidence, p_value, verdict, below_threshold, n, flags) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            &[
                int(id),
                int(idx),
                text(&c.baseline),
                text(&c.candidate),
                text(&c.metric),
                real(c.ratio),
                real(c.ci_low),
                real(c.ci_high),
                real(c.confidence),
                real(c.look_confidence),
                real(c.p_value),
                text(c.verdict.as_str()),
                int(c.below_threshold as i64),
                int(c.n),
                text(serde_json::to_string(&c.flags)?),
            ],
        )?;
    }
    let stop_reason = serde_json::to_value(exp.stop_reason)?;
    db.execute(
        "UPDATE experiments SET complete = 1, rounds = $1, stop_reason = $2, warnings = $3, environment = $4, \
         started_at = $5, settings = $6, duration_s = $7, failure = $8 WHERE id = $9",
        &[
            int(exp.rounds),
            text(stop_reason.as_str().unwrap_or("decided")),
            text(serde_json::to_string(&exp.warnings)?),
            text(serde_json::to_string(&exp.environment)?),
            text(&exp.started_at),
            text(serde_json::to_string(&exp.settings)?),
            real(exp.duration_s),
            opt_text(exp.failure.as_deref()),
            int(id),
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_database_is_upgraded_in_place() {
        let dir = std::env::temp_dir().join(format!("perflab-migrate-{}", std::process::id()));
        let path = dir.join("old.db");
        let _ = std::fs::remove_dir_all(&dir);
        let backend = sqlite::Sqlite::open(&path).unwrap();
        let mut old = Store { db: Box::new(backend), location: "old.db".into() };
        old.migrate(1).unwrap();
        let machine = Machine::default();
        let settings: Settings = serde_json::from_str(
            r#"{"seed":1,"warmup_rounds":0,"min_rounds":1,"max_rounds":1,"max_time_s":1,"threshold":0.01,"confidence":0.95,"env_padding":false,"mode":"wall"}"#,
        )
        .unwrap();
        let spec = CommandSpec { name: "x".into(), argv: vec!["x".into()], command_line: "x".into() };
        let meta = Meta { label: "v1".into(), benchmark: "b".into(), git_commit: None, source: "test".into() };
        old.begin(&meta, &machine, &settings, &[spec]).record_run(0, &Run { wall_s: 0.5, ..Run::default() }).unwrap();
        drop(old);

        let mut store = Store::open(Some(path.to_str().unwrap())).unwrap();
        let versions = store.db.query("SELECT version FROM schema_migrations ORDER BY version", &[]).unwrap();
        let versions: Vec<i64> = versions.iter().filter_map(|r| r[0].as_i64()).collect();
        assert_eq!(versions, (1..=schema_version()).collect::<Vec<_>>());
        let back = store.experiments(&Query::default()).unwrap();
        assert_eq!(back[0].experiment.commands[0].runs[0].wall_s, 0.5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn redact_hides_only_the_password() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact(".perflab/perflab.db"), ".perflab/perflab.db");
    }

    #[test]
    fn fingerprint_changes_with_any_field() {
        let a = Machine { hostname: "a".into(), cores: 2, ..Default::default() };
        let b = Machine { cores: 4, ..a.clone() };
        assert_eq!(fingerprint(&a), fingerprint(&a.clone()));
        assert_ne!(fingerprint(&a), fingerprint(&b));
        assert_eq!(fingerprint(&a).len(), 12);
    }
}
