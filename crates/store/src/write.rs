//! Writing experiments: labels, benchmarks and machines interned, an experiment
//! registered with its first run, every run committed in its own transaction as it
//! completes (a `kill -9` loses at most the run in flight), then summaries and
//! comparisons when it finishes.

use super::backend::{bytes, int, opt_int, opt_real, opt_text, real, text, Backend, Value};
use super::{Meta, Store};
use crate::error::StoreError;
use anyhow::{anyhow, Context};
use perflab_model::{CommandResult, CommandSpec, Experiment, Machine, Run, Settings};

/// Writes one experiment's runs as they complete. Made by [`Store::begin`].
pub struct Recorder<'s> {
    store: &'s mut Store,
    meta: Meta,
    /// What to register with the first run.
    pending: Option<(Machine, Settings, Vec<CommandSpec>)>,
    id: Option<i64>,
    /// Runs already committed, per command.
    recorded: Vec<usize>,
    /// A fleet job's claim: every write checks it is still held (see [`Recorder::fenced`]).
    fence: Option<super::fence::Claim>,
}

impl<'s> Recorder<'s> {
    pub(super) fn new(
        store: &'s mut Store,
        meta: &Meta,
        machine: &Machine,
        settings: &Settings,
        commands: &[CommandSpec],
    ) -> Self {
        Recorder {
            store,
            meta: meta.clone(),
            pending: Some((machine.clone(), settings.clone(), commands.to_vec())),
            id: None,
            recorded: Vec::new(),
            fence: None,
        }
    }

    /// Write for a fleet job under `claim`: each write checks, in its transaction, that
    /// the claim is still this attempt's (a write after another agent took the job over
    /// fails with [`super::fence::ClaimLost`]), and the experiment, once registered,
    /// supersedes the incomplete ones earlier attempts of the job left for the same
    /// benchmark on this machine — history and reports read only the new one.
    pub fn fenced(mut self, claim: super::fence::Claim) -> Self {
        self.fence = Some(claim);
        self
    }
}

/// A recorder between two of its writes, without its hold on the store: a suite run with
/// one budget (`run --budget`) interleaves the rounds of all its benchmarks, and each
/// one's runs are still committed as they complete, through one store.
pub struct Paused {
    meta: Meta,
    pending: Option<(Machine, Settings, Vec<CommandSpec>)>,
    id: Option<i64>,
    recorded: Vec<usize>,
    fence: Option<super::fence::Claim>,
}

impl Recorder<'_> {
    /// Let go of the store until [`Paused::resume`].
    pub fn pause(self) -> Paused {
        Paused { meta: self.meta, pending: self.pending, id: self.id, recorded: self.recorded, fence: self.fence }
    }
}

impl Paused {
    /// The recorder again, writing into `store` (the one it was begun on).
    pub fn resume(self, store: &mut Store) -> Recorder<'_> {
        Recorder {
            store,
            meta: self.meta,
            pending: self.pending,
            id: self.id,
            recorded: self.recorded,
            fence: self.fence,
        }
    }
}

/// The compare engine reports each measured run here; a failed write stops the experiment.
impl perflab_engine::experiment::Observer for Recorder<'_> {
    fn run_finished(&mut self, command: usize, run: &Run) -> anyhow::Result<()> {
        // The database's own error stays in the chain: an agent tells an outage from a bug by it.
        self.record_run(command, run).map_err(|e| match e {
            StoreError::Database(e) => e,
            other => anyhow!("{other}"),
        })
    }
}

/// A recorder whose failure does not stop the experiment (`compare --save`, `run`): the
/// first failed write is kept, later runs are not written, and the experiment goes on, so
/// that what is measured is still printed and written to its files (a full store lost
/// the `--json` file and left `run --json` with `[]`); the failure is reported at the
/// end. A fleet job's recorder stops instead: its claim may be lost.
pub struct Lenient<'s> {
    recorder: Recorder<'s>,
    failure: Option<StoreError>,
}

impl<'s> Lenient<'s> {
    /// A writer that keeps the first failure instead of returning it.
    pub fn new(recorder: Recorder<'s>) -> Lenient<'s> {
        Lenient { recorder, failure: None }
    }

    /// The metadata the experiments are written with.
    pub fn meta(&self) -> &Meta {
        self.recorder.meta()
    }

    /// The database's location.
    pub fn location(&self) -> &str {
        self.recorder.location()
    }

    /// Why storing stopped, if it did.
    pub fn failure(&self) -> Option<&StoreError> {
        self.failure.as_ref()
    }

    /// [`Recorder::finish`], or the failure that stopped the storing.
    pub fn finish(self, experiment: &Experiment) -> Result<i64, StoreError> {
        match self.failure {
            Some(failure) => Err(failure),
            None => self.recorder.finish(experiment),
        }
    }
}

impl perflab_engine::experiment::Observer for Lenient<'_> {
    fn run_finished(&mut self, command: usize, run: &Run) -> anyhow::Result<()> {
        if self.failure.is_none() {
            if let Err(e) = self.recorder.record_run(command, run) {
                self.failure = Some(e);
            }
        }
        Ok(())
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
    pub fn record_run(&mut self, command_idx: usize, run: &Run) -> Result<(), StoreError> {
        let pending = self.pending.take();
        let (id, meta, fence) = (self.id, &self.meta, &self.fence);
        let result = self.store.write(|db| {
            if let Some(claim) = fence {
                super::fence::check_fence(db, claim)?;
            }
            let id = match (id, &pending) {
                (Some(id), _) => id,
                (None, Some((machine, settings, commands))) => {
                    let id = insert_experiment(db, meta, machine, settings, commands, &now())?;
                    if fence.is_some() {
                        super::fence::supersede_incomplete(db, id)?;
                    }
                    id
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
                Err(StoreError::Database(e.context(format!("storing a run into {}", self.store.location))))
            }
        }
    }

    /// Store the summaries, comparisons and final state; runs of `experiment` that
    /// were not recorded yet (beyond the count recorded per command) are added too.
    pub fn finish(self, experiment: &Experiment) -> Result<i64, StoreError> {
        let (fence, meta, recorded) = (self.fence, self.meta, self.recorded);
        let location = self.store.location.clone();
        self.store
            .write(|db| {
                if let Some(claim) = &fence {
                    super::fence::check_fence(db, claim)?;
                }
                let id = match self.id {
                    Some(id) => id,
                    // No run was recorded (none finished): store it whole now.
                    None => {
                        let commands: Vec<CommandSpec> = experiment.commands.iter().map(CommandResult::spec).collect();
                        let id = insert_experiment(
                            db,
                            &meta,
                            &experiment.machine,
                            &experiment.settings,
                            &commands,
                            &experiment.started_at,
                        )?;
                        if fence.is_some() {
                            super::fence::supersede_incomplete(db, id)?;
                        }
                        id
                    }
                };
                finish_experiment(db, id, experiment, &recorded)?;
                Ok(id)
            })
            .with_context(|| format!("storing into {location}"))
            .map_err(StoreError::from)
    }
}

pub(super) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
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

/// The id of `machine`'s row, inserted unless present.
pub(super) fn machine_id(db: &mut dyn Backend, machine: &Machine) -> anyhow::Result<i64> {
    intern(
        db,
        "machines",
        &machine.fingerprint(),
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
    )
}

pub(super) fn insert_experiment(
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
    let machine_id = machine_id(db, machine)?;
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
        let samples = (!c.samples.is_empty()).then(|| serde_json::to_string(&c.samples)).transpose()?;
        db.execute(
            "INSERT INTO counters (run_id, name, supported, value, scaled, reason, samples) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                int(run_id),
                text(name),
                int(c.supported as i64),
                opt_real(c.value),
                int(c.scaled as i64),
                opt_text(c.reason.as_deref()),
                opt_text(samples.as_deref()),
            ],
        )?;
    }
    Ok(())
}

/// Whether a summary's sample is stored (in `metric_samples`): for the metrics history and
/// reports follow — the compared harness metrics and every counter; the rest are read from
/// their runs.
fn keeps_sample(metric: &str) -> bool {
    use perflab_model::metric;
    metric::kind(metric) != metric::Kind::Field || metric::COMPARED.contains(&metric)
}

/// The values of a stored sample: the metric's values over the successful runs as
/// little-endian f64s.
pub(super) fn sample_values(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().expect("chunks of 8"))).collect()
}

pub(super) fn insert_profile_change(
    db: &mut dyn Backend,
    experiment_id: i64,
    change: &super::ProfileChange,
) -> anyhow::Result<()> {
    db.execute(
        "INSERT INTO profile_changes (experiment_id, metric, baseline, candidate, functions, flame_graph, warnings, \
         baseline_profile, candidate_profile) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            int(experiment_id),
            text(&change.metric),
            text(&change.baseline),
            text(&change.candidate),
            text(serde_json::to_string(&change.functions)?),
            opt_text(change.flame_graph.as_deref()),
            text(serde_json::to_string(&change.warnings)?),
            bytes(change.baseline_profile.clone()),
            bytes(change.candidate_profile.clone()),
        ],
    )?;
    Ok(())
}

/// What identifies one measured experiment across stores, exports and imports: its
/// label, benchmark, machine, start time and every command's runs (the wall times at 10
/// significant digits, so a value that crossed JSON one ulp off is the same). SHA-256 in
/// hex; the summaries are left out (they follow from the runs).
pub(super) fn content_key(label: &str, benchmark: &str, exp: &Experiment) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(label.as_bytes());
    field(benchmark.as_bytes());
    field(exp.machine.fingerprint().as_bytes());
    field(exp.started_at.as_bytes());
    for command in &exp.commands {
        field(command.name.as_bytes());
        field(&(command.runs.len() as u64).to_le_bytes());
        for run in &command.runs {
            field(format!("{:.9e}", run.wall_s).as_bytes());
        }
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn finish_experiment(
    db: &mut dyn Backend,
    id: i64,
    exp: &Experiment,
    recorded: &[usize],
) -> anyhow::Result<()> {
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
            if keeps_sample(metric) {
                db.execute(
                    "INSERT INTO metric_samples (metric, experiment_id, command_idx, sample) VALUES ($1, $2, $3, $4)",
                    &[
                        text(metric),
                        int(id),
                        int(idx),
                        bytes(command.values(metric).iter().flat_map(|v| v.to_le_bytes()).collect()),
                    ],
                )?;
            }
        }
    }
    // The primary metric's comparisons first: a read takes the first one's metric as the
    // metric that decided (the experiment's other fields do not record it).
    let primary_first = exp
        .comparisons
        .iter()
        .filter(|c| c.metric == exp.primary_metric)
        .chain(exp.comparisons.iter().filter(|c| c.metric != exp.primary_metric));
    for (idx, c) in primary_first.enumerate() {
        db.execute(
            "INSERT INTO comparisons (experiment_id, idx, baseline, candidate, metric, ratio, ci_low, ci_high, confidence, \
             look_confidence, p_value, verdict, below_threshold, n, flags, explanation) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
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
                opt_text(c.explanation.as_ref().map(serde_json::to_string).transpose()?.as_deref()),
            ],
        )?;
    }
    let stop_reason = serde_json::to_value(exp.stop_reason)?;
    let key = db
        .query(
            "SELECT labels.name, benchmarks.name FROM experiments JOIN labels ON labels.id = experiments.label_id \
             JOIN benchmarks ON benchmarks.id = experiments.benchmark_id WHERE experiments.id = $1",
            &[int(id)],
        )?
        .first()
        .map(|row| content_key(row[0].as_str().unwrap_or(""), row[1].as_str().unwrap_or(""), exp));
    db.execute(
        "UPDATE experiments SET complete = 1, rounds = $1, stop_reason = $2, warnings = $3, environment = $4, \
         started_at = $5, settings = $6, duration_s = $7, failure = $8, content_key = $10 WHERE id = $9",
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
            opt_text(key.as_deref()),
        ],
    )?;
    Ok(())
}
