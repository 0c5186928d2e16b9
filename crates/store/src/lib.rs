//! The history store: every experiment, run, counter, summary and verdict, with the
//! label, git commit and machine it came from, in SQLite (default) or PostgreSQL.
//!
//! One schema and one set of queries serve both databases: the SQL lives here and the
//! backends ([`sqlite`], [`postgres`]) only execute it, so they cannot drift apart.
//! Reading back always yields the one data model, [`perflab_model::Experiment`].
//!
//! Writing is incremental: [`Store::begin`] registers an experiment, [`Recorder::record_run`]
//! commits each run as it completes (a `kill -9` loses at most the run in flight), and
//! [`Recorder::finish`] adds the summaries and comparisons. [`history`] reads labels over
//! time back out of it (what `perflab history` and the report draw).
//!
//! May use: `perflab-model`, `perflab-stats`, `perflab-sys`, `perflab-profile` (a stored
//! profile diff) and `perflab-engine` (an [`Observer`](perflab_engine::experiment::Observer)
//! of experiments, the verdict rules history reuses).

#![deny(missing_docs)]

mod backend;
pub mod error;
pub mod exchange;
mod fence;
pub mod fleet;
mod import_stream;
pub mod layouts;
pub mod postgres;
mod read;
mod schema;
mod sigbus;
pub mod sqlite;
pub mod url;
mod write;

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod history;

pub use backend::{Backend, Value};
pub use schema::schema_version;
use write::{finish_experiment, insert_experiment, now};
pub use write::{Lenient, Paused, Recorder};

use anyhow::Context;
use error::StoreError;
use perflab_model::{Calibration, CommandResult, CommandSpec, Experiment, Machine, Settings};
use std::path::Path;

/// Where the database lives when neither `--db` nor `PERFLAB_DB` says otherwise.
pub(crate) const DEFAULT_PATH: &str = ".perflab/perflab.db";
/// Environment variable naming the database (a path or a `postgres://` URL).
pub(crate) const DB_ENV: &str = "PERFLAB_DB";

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
    /// Only this label.
    pub label: Option<String>,
    /// Only this benchmark.
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
    /// The label it is stored under.
    pub label: String,
    /// Position of the label in stored order (first use), for history's x axis.
    #[serde(default)]
    pub label_order: i64,
    /// The benchmark name (a suite benchmark, or the commands' names for `compare`).
    pub benchmark: String,
    /// `git rev-parse HEAD` of the working directory, `-dirty` with changes; None when unknown.
    pub git_commit: Option<String>,
    /// What produced it: `run`, `compare`, `import:hyperfine`, `import:perflab`, `bisect`.
    pub source: String,
    /// When it was written to the store (RFC 3339, UTC).
    pub recorded_at: String,
    /// Short hash of the machine fields; results are only mixed within one.
    pub machine_fingerprint: String,
    /// False while being written, or when the writer died: runs are kept but there
    /// are no summaries or comparisons, and `stop_reason` reads `interrupted`.
    pub complete: bool,
    /// The experiment itself.
    pub experiment: Experiment,
    /// Set by the lean read ([`Store::metric_experiments`]), which reads no runs: one
    /// metric's values over the measured (last) command's successful runs.
    #[serde(skip)]
    pub sample: Option<MetricSample>,
    /// Set for a report: the profiles explaining why this experiment found its candidate
    /// slower (without the profile files). Boxed: a report holds 100,000 experiments and
    /// a handful of these.
    #[serde(skip)]
    pub profile_change: Option<Box<ProfileChange>>,
}

/// Why a benchmark got slower (`run --profile-changes`): one profile of each command of
/// its comparison, and what they show, computed when they were recorded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProfileChange {
    /// The compared metric and the two commands (the baseline first).
    pub metric: String,
    /// The baseline command's name.
    pub baseline: String,
    /// The candidate command's name.
    pub candidate: String,
    /// Per function, sorted by contribution to the total change (`perflab diff`).
    pub functions: Vec<perflab_profile::diff::Change>,
    /// The differential flame graph (self-contained SVG), when both had call stacks.
    pub flame_graph: Option<String>,
    /// Doubts about the profiles, one line each.
    pub warnings: Vec<String>,
    /// The profile files (empty when read for a report).
    pub baseline_profile: Vec<u8>,
    /// The candidate's profile file.
    pub candidate_profile: Vec<u8>,
}

/// A metric's values over a command's successful runs, as stored with its summary.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSample {
    /// Shared by every experiment of one read.
    pub metric: std::sync::Arc<str>,
    /// The values, in run order.
    pub values: Vec<f64>,
}

/// A stored label, in stored order.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelInfo {
    /// The label.
    pub name: String,
    pub(crate) created_at: String,
    /// Experiments stored under it.
    pub experiments: i64,
}

/// A machine seen in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineInfo {
    /// The machine's fingerprint.
    pub fingerprint: String,
    /// The machine.
    pub machine: Machine,
    /// Experiments stored from it.
    pub experiments: i64,
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
    let location = url.map(str::to_string).or(env).unwrap_or_else(|| DEFAULT_PATH.to_string());
    // Its passwords are hidden from here on, wherever a message quotes them.
    url::remember(&location);
    location
}

fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// The history store. Open with [`Store::open`].
pub struct Store {
    db: Box<dyn Backend>,
    location: String,
    /// Set when a database perflab may not write was opened for reading.
    read_only: Option<sqlite::ReadOnly>,
}

impl Store {
    /// Open (creating and migrating as needed) the database named by `url`, else by
    /// `$PERFLAB_DB`, else `.perflab/perflab.db`. A `postgres://` or `postgresql://`
    /// URL selects PostgreSQL; anything else is a SQLite file path (`sqlite:` prefix optional).
    pub fn open(url: Option<&str>) -> Result<Store, StoreError> {
        let location = locate(url);
        let db: Box<dyn Backend> = if is_postgres(&location) {
            Box::new(
                // Kept typed (exit code 2 all the same): an agent retries when the
                // server is unavailable, and only then.
                postgres::Postgres::connect(&location).map_err(|e| {
                    StoreError::Database(
                        anyhow::Error::from(e).context(format!("cannot connect to {}", redact(&location))),
                    )
                })?,
            )
        } else {
            let path = location.strip_prefix("sqlite:").unwrap_or(&location);
            // An empty file is a new database to SQLite (and the user asked to store
            // into it); a device, FIFO or foreign file is not.
            if let Some(what) = sqlite::not_a_database(Path::new(path), true) {
                return Err(StoreError::NotAStore { path: path.to_string(), what });
            }
            if Path::new(path).exists() && !sqlite::writable(Path::new(path)) {
                return Err(StoreError::NotWritable(path.to_string()));
            }
            Box::new(sqlite::Sqlite::open(Path::new(path)).map_err(|source| StoreError::Open {
                path: path.to_string(),
                read_only: false,
                source,
            })?)
        };
        let mut store = Store { db, location: redact(&location), read_only: None };
        store.migrate(schema_version()).map_err(|e| {
            if postgres::is_unavailable(&e) {
                StoreError::Database(e.context(format!("database {}", store.location)))
            } else {
                StoreError::Schema { location: store.location.clone(), cause: e }
            }
        })?;
        Ok(store)
    }

    /// Open a database that must already exist, for commands that only read: a missing
    /// SQLite file is an error, never created, and so is anything that is not a SQLite
    /// database (an empty file, a directory, a device, a FIFO); a SQLite file is opened
    /// read-only ([`Store::read_only`] says how when the WAL index could not be shared),
    /// so reading never writes a schema, a migration or a page.
    pub fn open_existing(url: Option<&str>) -> Result<Store, StoreError> {
        let location = locate(url);
        if is_postgres(&location) {
            return Store::open_postgres_read_only(&location);
        }
        let path = location.strip_prefix("sqlite:").unwrap_or(&location);
        Store::check_existing(path)?;
        Store::open_read_only(path)
    }

    /// A PostgreSQL database for reading only: the session is read-only (the server
    /// refuses any write), nothing is created or migrated, and a database without
    /// perflab's tables or at another schema version is refused.
    fn open_postgres_read_only(location: &str) -> Result<Store, StoreError> {
        let mut db = postgres::Postgres::connect(location).map_err(|e| {
            StoreError::Database(anyhow::Error::from(e).context(format!("cannot connect to {}", redact(location))))
        })?;
        let shown = redact(location);
        let version = (|| -> anyhow::Result<i64> {
            db.batch("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")?;
            let exists = db.query("SELECT COUNT(*) FROM pg_catalog.pg_tables WHERE tablename = 'schema_migrations' AND schemaname = current_schema()", &[])?;
            if exists.first().and_then(|r| r[0].as_i64()) != Some(1) {
                return Ok(0);
            }
            Ok(db.query("SELECT MAX(version) FROM schema_migrations", &[])?.first().and_then(|r| r[0].as_i64()).unwrap_or(0))
        })()
        .map_err(|e| {
            if postgres::is_unavailable(&e) {
                StoreError::Database(e.context(format!("database {shown}")))
            } else {
                StoreError::Schema { location: shown.clone(), cause: e }
            }
        })?;
        if version == 0 {
            return Err(StoreError::Missing(shown));
        }
        if version != schema_version() {
            return Err(StoreError::ReadOnlyAtOtherVersion { path: shown, version, wanted: schema_version() });
        }
        Ok(Store { db: Box::new(db), location: shown, read_only: None })
    }

    /// Open an existing database to change it (`queue --cancel`): like
    /// [`Store::open_existing`]'s checks, then opened for writing (and migrated).
    pub fn open_existing_to_write(url: Option<&str>) -> Result<Store, StoreError> {
        let location = locate(url);
        if !is_postgres(&location) {
            Store::check_existing(location.strip_prefix("sqlite:").unwrap_or(&location))?;
        }
        Store::open(url)
    }

    fn check_existing(path: &str) -> Result<(), StoreError> {
        if std::fs::symlink_metadata(path).is_err() && std::fs::metadata(path).is_err() {
            return Err(StoreError::Missing(path.to_string()));
        }
        match sqlite::not_a_database(Path::new(path), false) {
            Some(what) => Err(StoreError::NotAStore { path: path.to_string(), what }),
            None => Ok(()),
        }
    }

    /// Open a SQLite file for reading only; its schema must be this perflab's, since a
    /// read-only database cannot be migrated.
    fn open_read_only(path: &str) -> Result<Store, StoreError> {
        let (db, how) = sqlite::Sqlite::open_read_only(Path::new(path)).map_err(|source| StoreError::Open {
            path: path.to_string(),
            read_only: true,
            source,
        })?;
        let shared = how == sqlite::ReadOnly::Shared;
        let mut store = Store {
            db: Box::new(db),
            location: redact(path),
            read_only: (!shared || !sqlite::writable(Path::new(path))).then_some(how),
        };
        let version = schema::stored_version(store.db.as_mut())
            .map_err(|cause| StoreError::Schema { location: path.to_string(), cause })?;
        if version == 0 {
            return Err(StoreError::NotAStore {
                path: path.to_string(),
                what: "a SQLite database without perflab's tables".to_string(),
            });
        }
        if version != schema_version() {
            return Err(StoreError::ReadOnlyAtOtherVersion {
                path: path.to_string(),
                version,
                wanted: schema_version(),
            });
        }
        Ok(store)
    }

    /// How the database was opened when perflab may not write it; `None` when writable.
    pub fn read_only(&self) -> Option<sqlite::ReadOnly> {
        self.read_only
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
        self.write(|db| schema::migrate(db, target, &now()))
    }

    /// Run `f` in one write transaction: all of it is committed or none.
    pub(crate) fn write<T>(&mut self, f: impl FnOnce(&mut dyn Backend) -> anyhow::Result<T>) -> anyhow::Result<T> {
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
        Recorder::new(self, meta, machine, settings, commands)
    }

    /// Whether the store holds this experiment already under `label` and `benchmark`
    /// (by [`write::content_key`]: the same machine, start and runs).
    pub fn contains(&mut self, label: &str, benchmark: &str, experiment: &Experiment) -> Result<bool, StoreError> {
        let key = write::content_key(label, benchmark, experiment);
        let rows = self
            .db
            .query("SELECT 1 FROM experiments WHERE content_key = $1 LIMIT 1", &[backend::text(key)])
            .with_context(|| format!("reading {}", self.location))?;
        Ok(!rows.is_empty())
    }

    /// Store an imported experiment in one transaction; one marked incomplete (a run
    /// killed mid-way) stays marked.
    pub fn save_as(&mut self, meta: &Meta, experiment: &Experiment, complete: bool) -> Result<i64, StoreError> {
        self.store_whole(meta, experiment, complete)
    }

    /// Store a finished experiment (from `compare --save` or an import) in one transaction.
    pub fn save(&mut self, meta: &Meta, experiment: &Experiment) -> Result<i64, StoreError> {
        self.store_whole(meta, experiment, true)
    }

    fn store_whole(&mut self, meta: &Meta, experiment: &Experiment, complete: bool) -> Result<i64, StoreError> {
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
                if !complete {
                    db.execute("UPDATE experiments SET complete = 0 WHERE id = $1", &[backend::int(id)])?;
                }
                Ok(id)
            })
            .with_context(|| format!("storing into {}", self.location))?;
        Ok(id)
    }

    /// Store a calibration of `machine`'s noise (`perflab doctor CMD`).
    pub fn save_calibration(&mut self, machine: &Machine, calibration: &Calibration) -> Result<(), StoreError> {
        self.write(|db| {
            let machine = write::machine_id(db, machine)?;
            db.execute(
                "INSERT INTO calibrations (machine_id, measured_at, command_line, metric, rounds, round_s, paired_sigma, json) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[
                    backend::int(machine),
                    backend::text(&calibration.measured_at),
                    backend::text(&calibration.command_line),
                    backend::text(&calibration.metric),
                    backend::int(calibration.rounds),
                    backend::real(calibration.round_s),
                    backend::real(calibration.paired_sigma),
                    backend::text(serde_json::to_string(calibration)?),
                ],
            )?;
            Ok(())
        })
        .with_context(|| format!("storing into {}", self.location))?;
        Ok(())
    }

    /// The latest calibration stored for `machine`, if any.
    pub fn latest_calibration(&mut self, machine: &Machine) -> Result<Option<Calibration>, StoreError> {
        let rows = self.db.query(
            "SELECT c.json FROM calibrations c JOIN machines m ON m.id = c.machine_id WHERE m.fingerprint = $1 \
             ORDER BY c.id DESC LIMIT 1",
            &[backend::text(machine.fingerprint())],
        )?;
        let Some(json) = rows.first().and_then(|r| r[0].as_str()) else { return Ok(None) };
        Ok(Some(serde_json::from_str(json).with_context(|| format!("a calibration in {}", self.location))?))
    }

    /// Labels in stored order (first use), with how many experiments carry each.
    pub fn labels(&mut self) -> Result<Vec<LabelInfo>, StoreError> {
        let rows = self.db.query(
            "SELECT l.name, l.created_at, COUNT(e.id) FROM labels l \
             LEFT JOIN experiments e ON e.label_id = l.id AND e.superseded_by IS NULL \
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
    pub fn machines(&mut self) -> Result<Vec<MachineInfo>, StoreError> {
        let rows = self.db.query(
            "SELECT m.fingerprint, m.json, COUNT(e.id) FROM machines m \
             LEFT JOIN experiments e ON e.machine_id = m.id AND e.superseded_by IS NULL \
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
    pub fn experiments(&mut self, query: &Query) -> Result<Vec<StoredExperiment>, StoreError> {
        read::experiments(self.db.as_mut(), query)
            .with_context(|| format!("reading {}", self.location))
            .map_err(StoreError::from)
    }

    /// The ids of the experiments matching `query`, in [`Store::experiments`]' order.
    pub(crate) fn experiment_ids(&mut self, query: &Query) -> Result<Vec<i64>, StoreError> {
        read::experiment_ids(self.db.as_mut(), query)
            .with_context(|| format!("reading {}", self.location))
            .map_err(StoreError::from)
    }

    /// The experiments `ids` (a batch of [`Store::experiment_ids`]) matching `query`.
    pub(crate) fn experiments_with_ids(
        &mut self,
        query: &Query,
        ids: &[i64],
    ) -> Result<Vec<StoredExperiment>, StoreError> {
        read::experiments_with_ids(self.db.as_mut(), query, ids)
            .with_context(|| format!("reading {}", self.location))
            .map_err(StoreError::from)
    }

    /// The lean read for history and reports of one `metric`: the experiments matching
    /// `query` without their runs, each with its [`StoredExperiment::sample`] of `metric`
    /// (stored with the summaries, else read from the runs); no summaries, no warnings.
    /// Store why experiment `experiment_id` found its candidate slower.
    pub fn save_profile_change(&mut self, experiment_id: i64, change: &ProfileChange) -> Result<(), StoreError> {
        self.write(|db| write::insert_profile_change(db, experiment_id, change))
            .with_context(|| format!("storing profiles in {}", self.location))
            .map_err(StoreError::from)
    }

    /// The profile changes of the experiments matching `query`, by experiment id; the
    /// profile files are read only `with_profiles`.
    pub fn profile_changes(
        &mut self,
        query: &Query,
        with_profiles: bool,
    ) -> Result<Vec<(i64, ProfileChange)>, StoreError> {
        read::profile_changes(self.db.as_mut(), query, with_profiles)
            .with_context(|| format!("reading {}", self.location))
            .map_err(StoreError::from)
    }

    /// The experiments `query` selects, read lean: no runs, only `metric`'s values as each one's [`StoredExperiment::sample`].
    pub fn metric_experiments(&mut self, query: &Query, metric: &str) -> Result<Vec<StoredExperiment>, StoreError> {
        read::metric_experiments(self.db.as_mut(), query, metric)
            .with_context(|| format!("reading {}", self.location))
            .map_err(StoreError::from)
    }
}

/// A URL as it is shown: without its secrets (see [`url::mask`]).
fn redact(url: &str) -> String {
    url::mask(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_model::Run;

    #[test]
    fn an_older_database_is_upgraded_in_place() {
        let dir = std::env::temp_dir().join(format!("perflab-migrate-{}", std::process::id()));
        let path = dir.join("old.db");
        let _ = std::fs::remove_dir_all(&dir);
        let backend = sqlite::Sqlite::open(&path).unwrap();
        let mut old = Store { db: Box::new(backend), location: "old.db".into(), read_only: None };
        old.migrate(1).unwrap();
        let machine = Machine::default();
        let settings: Settings = serde_json::from_str(
            r#"{"seed":1,"warmup_rounds":0,"min_rounds":1,"max_rounds":1,"max_time_s":1,"threshold":0.01,"confidence":0.95,"env_padding":false,"mode":"wall"}"#,
        )
        .unwrap();
        let spec =
            CommandSpec { name: "x".into(), argv: vec!["x".into()], command_line: "x".into(), ..Default::default() };
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

    /// Comparisons stored before explanations were (schema 9) read back unexplained.
    #[test]
    fn comparisons_from_before_explanations_read_back_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v9.db");
        let mut old =
            Store { db: Box::new(sqlite::Sqlite::open(&path).unwrap()), location: "v9.db".into(), read_only: None };
        old.migrate(9).unwrap();
        let spec =
            CommandSpec { name: "x".into(), argv: vec!["x".into()], command_line: "x".into(), ..Default::default() };
        let meta = Meta { label: "v1".into(), benchmark: "b".into(), git_commit: None, source: "test".into() };
        old.begin(&meta, &Machine::default(), &Settings::default(), &[spec.clone(), spec])
            .record_run(0, &Run { wall_s: 0.5, ..Run::default() })
            .unwrap();
        let id = old.db.query("SELECT id FROM experiments", &[]).unwrap()[0][0].as_i64().unwrap();
        old.db
            .execute(
                "INSERT INTO comparisons (experiment_id, idx, baseline, candidate, metric, ratio, ci_low, ci_high, \
                 confidence, look_confidence, p_value, verdict, below_threshold, n, flags) \
                 VALUES ($1, 0, 'x #1', 'x #2', 'wall_s', 1.5, 1.25, 1.75, 0.95, 0.95, 0.01, 'slower', 0, 3, '[]')",
                &[backend::int(id)],
            )
            .unwrap();
        drop(old);
        let mut store = Store::open(Some(path.to_str().unwrap())).unwrap();
        let back = store.experiments(&Query::default()).unwrap();
        let comparison = &back[0].experiment.comparisons[0];
        assert_eq!((comparison.ratio, comparison.explanation.is_none()), (1.5, true));
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
        assert_eq!(a.fingerprint(), a.clone().fingerprint());
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint().len(), 12);
    }
}
