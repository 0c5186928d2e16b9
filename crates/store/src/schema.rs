//! The store's schema: migrations applied in order, each in one transaction and recorded
//! in `schema_migrations`. Never edit a released migration: append one.

use super::backend::{int, text, Backend};
use anyhow::{anyhow, Context};

/// Schema migrations, applied in order; each runs in one transaction and is
/// recorded in `schema_migrations`. Never edit a released migration: append one.
pub(super) const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "initial schema", SCHEMA_V1),
    (2, "index experiments by machine", "CREATE INDEX experiments_by_machine ON experiments(machine_id, label_id);"),
    (3, "per-iteration samples of self-reported metrics", "ALTER TABLE counters ADD COLUMN samples TEXT;"),
    (4, "calibrations of a machine's noise (perflab doctor)", CALIBRATIONS),
    (5, "fleet job queue", SCHEMA_FLEET),
    (6, "metric samples", SCHEMA_METRIC_SAMPLES),
    // Reading one label's experiments (the report's reference and compared labels) without
    // scanning every experiment.
    (7, "index experiments by label", "CREATE INDEX experiments_by_label ON experiments(label_id);"),
    (8, "profiles of regressions", SCHEMA_PROFILE_CHANGES),
    (
        9,
        "an incomplete experiment superseded by a later attempt of the same fleet job",
        "ALTER TABLE experiments ADD COLUMN superseded_by {int};",
    ),
    // `run --profile-changes` and `compare --explain --save`: the comparison explained
    // function by function from every run's samples (JSON of `model::Explanation`, its
    // flame graph included); null when not explained.
    (10, "per-function explanations of comparisons", "ALTER TABLE comparisons ADD COLUMN explanation TEXT;"),
    // `queue --profile-changes`: the job's agents explain its regressions (null: no).
    (11, "fleet jobs that explain regressions", "ALTER TABLE fleet_jobs ADD COLUMN profile_changes {int};"),
    // `import` recognises an experiment it stored before (or that was measured here and
    // exported) by this key ([`super::write::content_key`]); null for experiments stored
    // before version 12.
    (
        12,
        "experiments recognised by their content",
        "ALTER TABLE experiments ADD COLUMN content_key TEXT; \
         CREATE INDEX experiments_by_content_key ON experiments(content_key);",
    ),
];

const CALIBRATIONS: &str = r#"
CREATE TABLE calibrations (
    id {id},
    machine_id {int} NOT NULL REFERENCES machines(id),
    measured_at TEXT NOT NULL,
    command_line TEXT NOT NULL,
    metric TEXT NOT NULL,
    rounds {int} NOT NULL,
    round_s {real} NOT NULL,
    paired_sigma {real} NOT NULL,
    json TEXT NOT NULL
);
CREATE INDEX calibrations_by_machine ON calibrations(machine_id, id);
"#;

/// `perflab queue` and `perflab agent`: jobs, and one claim per job and machine (its
/// primary key is what makes a job run once per machine). Lease times are the database's
/// clock (`{now}`), so agents on machines with skewed clocks agree.
const SCHEMA_FLEET: &str = r#"
CREATE TABLE fleet_jobs (
    id {id},
    suite_path TEXT NOT NULL,
    suite TEXT NOT NULL,
    label TEXT NOT NULL,
    git_commit TEXT,
    build TEXT,
    baseline TEXT,
    filter TEXT,
    machines TEXT NOT NULL,
    created_at TEXT NOT NULL,
    cancelled {int} NOT NULL
);
CREATE TABLE fleet_claims (
    job_id {int} NOT NULL REFERENCES fleet_jobs(id),
    machine_id {int} NOT NULL REFERENCES machines(id),
    state TEXT NOT NULL,
    attempt {int} NOT NULL,
    agent TEXT NOT NULL,
    claimed_at {real} NOT NULL,
    lease_until {real} NOT NULL,
    finished_at {real},
    message TEXT,
    PRIMARY KEY (job_id, machine_id)
){without_rowid};
"#;

/// A summary's sample: the metric's values over the command's successful runs
/// (little-endian f64s), so history and the report read one metric's values instead of
/// every run. Keyed by metric first: a report reads one metric of every experiment. Older
/// experiments have none and are read from their runs.
const SCHEMA_METRIC_SAMPLES: &str = r#"
CREATE TABLE metric_samples (
    metric TEXT NOT NULL,
    experiment_id {int} NOT NULL REFERENCES experiments(id),
    command_idx {int} NOT NULL,
    sample {blob} NOT NULL,
    PRIMARY KEY (metric, experiment_id, command_idx)
){without_rowid};
"#;

/// `run --profile-changes`: a profile of each build of a benchmark found slower, with the
/// per-function diff (JSON rows of `profile::diff::Change`) and the differential flame
/// graph (SVG) computed when recorded — naming the sampled addresses reads the builds'
/// binaries, which a later build may replace. The profiles are kept as the bytes of
/// their files, not as paths: the store is shared (a fleet on PostgreSQL, a report made
/// on another machine) and a file on the agent's disk would not be.
const SCHEMA_PROFILE_CHANGES: &str = r#"
CREATE TABLE profile_changes (
    experiment_id {int} NOT NULL REFERENCES experiments(id),
    metric TEXT NOT NULL,
    baseline TEXT NOT NULL,
    candidate TEXT NOT NULL,
    functions TEXT NOT NULL,
    flame_graph TEXT,
    warnings TEXT NOT NULL,
    baseline_profile {blob} NOT NULL,
    candidate_profile {blob} NOT NULL,
    PRIMARY KEY (experiment_id)
){without_rowid};
"#;

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

/// The highest migration applied to a SQLite database (0 for an empty one), without
/// writing.
pub(super) fn stored_version(db: &mut dyn Backend) -> anyhow::Result<i64> {
    let exists = db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'", &[])?;
    if exists.is_empty() {
        return Ok(0);
    }
    Ok(db.query("SELECT MAX(version) FROM schema_migrations", &[])?.first().and_then(|r| r[0].as_i64()).unwrap_or(0))
}

/// Apply the migrations above the database's version up to `target` (inside the
/// caller's write transaction).
pub(super) fn migrate(db: &mut dyn Backend, target: i64, now: &str) -> anyhow::Result<()> {
    db.lock_schema()?;
    db.batch(&db.dialect(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version {int} PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)",
    ))?;
    let current =
        db.query("SELECT MAX(version) FROM schema_migrations", &[])?.first().and_then(|r| r[0].as_i64()).unwrap_or(0);
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
            &[int(*version), text(*description), text(now)],
        )?;
    }
    Ok(())
}
