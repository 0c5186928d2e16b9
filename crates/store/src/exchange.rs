//! Getting results into and out of the store: `perflab import` (hyperfine JSON,
//! perflab JSON, perflab exports, checked at the edge) and `perflab export`.

use super::error::{ImportError, OutOfRange};
use super::import_stream::{self as stream, EXPORT_FORMAT};
use super::{current_git_commit, Meta, Query, Store, StoredExperiment};
use crate::error::StoreError;
use perflab_model::{CommandResult, ExitInfo, Experiment, Machine, Run, Settings, StopReason, Warning, WarningKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What `perflab import` reads, and how it names what it finds.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// A hyperfine `--export-json` file, a `compare --json` or `run --json` file, or a perflab export.
    pub file: String,
    /// Label to store under (required for hyperfine and perflab results; overrides an export's labels).
    pub label: Option<String>,
    /// Benchmark name for a perflab result (default: its command names joined by ` vs `).
    pub bench: Option<String>,
    /// The hyperfine file was measured on this machine: record its fingerprint.
    pub this_machine: bool,
}

/// The file `perflab export` writes and `perflab import` reads back.
#[derive(Debug, Serialize, Deserialize)]
pub struct ExportFile {
    /// Always `perflab-export`.
    pub format: String,
    /// The format's version (readers refuse newer ones).
    pub format_version: u32,
    /// The experiments, with their metadata.
    pub experiments: Vec<StoredExperiment>,
}

/// One result of hyperfine's `--export-json` (the fields perflab uses; see hyperfine's
/// src/export/json.rs). `memory_usage_byte` exists from hyperfine 1.17 on.
#[derive(Debug, Deserialize)]
pub(super) struct HyperfineResult {
    command: String,
    user: Option<f64>,
    system: Option<f64>,
    times: Option<Vec<f64>>,
    exit_codes: Option<Vec<Option<i32>>>,
    #[serde(default)]
    memory_usage_byte: Option<Vec<u64>>,
    #[serde(default)]
    parameters: BTreeMap<String, serde_json::Value>,
}

/// Read and check an import file: the experiments it holds, ready to store (all in
/// memory: for tests and small files; `perflab import` streams with [`check_import`] and
/// [`store_import`]).
pub fn read_import(args: &ImportOptions) -> Result<Vec<StoredExperiment>, StoreError> {
    let mut records = Vec::new();
    for_each_record(args, &mut |record, _| {
        records.push(record);
        Ok(())
    })?;
    Ok(records)
}

/// What an import holds (or stored): for its summary line.
#[derive(Debug, Default)]
pub struct Imported {
    /// Experiments.
    pub experiments: usize,
    /// Runs over all of them.
    pub runs: usize,
    /// Labels they are stored under.
    pub labels: std::collections::BTreeSet<String>,
    /// Experiments the store already held (the same label, benchmark, machine, start
    /// and runs), not stored again.
    pub skipped: usize,
    /// Incomplete experiments stored (fewer runs than planned), kept marked incomplete.
    pub incomplete: usize,
    /// True when Ctrl-C/SIGTERM stopped the import between two experiments: each one
    /// stored is whole (its own transaction); importing again stores the rest.
    pub interrupted: bool,
}

impl Imported {
    fn count(&mut self, record: &StoredExperiment) {
        self.experiments += 1;
        self.runs += record.experiment.commands.iter().map(|c| c.runs.len()).sum::<usize>();
        if !self.labels.contains(&record.label) {
            self.labels.insert(record.label.clone());
        }
    }
}

/// Read the whole import file once, a record at a time, checking each (nothing is kept):
/// an import is refused before anything is stored. Memory holds one record (one
/// experiment), whatever the file's size.
pub fn check_import(args: &ImportOptions) -> Result<Imported, StoreError> {
    let mut imported = Imported::default();
    let checked = for_each_record(args, &mut |record, _| {
        if interrupted() {
            // Ctrl-C while checking: stop reading (the caller says it was interrupted).
            imported.interrupted = true;
            return Err(ImportError::Stopped);
        }
        imported.count(&record);
        Ok(())
    });
    match checked {
        Err(_) if imported.interrupted => Ok(imported),
        Err(e) => Err(e),
        Ok(()) => Ok(imported),
    }
}

/// Read the (checked) import file again and store each record as it is read.
pub fn store_import(args: &ImportOptions, store: &mut Store) -> Result<Imported, StoreError> {
    let git_commit = current_git_commit();
    let mut imported = Imported::default();
    let mut failure = None;
    for_each_record(args, &mut |record, _| {
        let meta = Meta {
            label: record.label.clone(),
            benchmark: record.benchmark.clone(),
            git_commit: record.git_commit.clone().or_else(|| git_commit.clone()),
            source: record.source.clone(),
        };
        if interrupted() {
            imported.interrupted = true;
            return Err(ImportError::Stopped);
        }
        let stored = store.contains(&record.label, &record.benchmark, &record.experiment).and_then(|known| {
            if known {
                imported.skipped += 1;
                return Ok(());
            }
            store.save_as(&meta, &record.experiment, record.complete)?;
            imported.incomplete += usize::from(!record.complete);
            imported.count(&record);
            Ok(())
        });
        match stored {
            Ok(()) => Ok(()),
            Err(e) => {
                failure = Some(e);
                Err(ImportError::Stopped)
            }
        }
    })
    .or_else(|e| match (failure.take(), imported.interrupted) {
        (Some(e), _) => Err(e),
        (None, true) => Ok(()),
        (None, false) => Err(e),
    })?;
    Ok(imported)
}

/// Whether Ctrl-C or SIGTERM arrived (the binary installs the handlers for the commands
/// that stop cleanly between two steps).
fn interrupted() -> bool {
    perflab_sys::interrupt::signals_received() > 0
}

/// Hand every record of the import file to `each` (with the line it ends on), checked,
/// reading the file a record at a time. The file is read twice: once to tell its format
/// (nothing kept), once for the records.
fn for_each_record(
    args: &ImportOptions,
    each: &mut dyn FnMut(StoredExperiment, u64) -> Result<(), ImportError>,
) -> Result<(), StoreError> {
    let file = &args.file;
    let kind = match stream::detect(file)? {
        Some(kind) => kind,
        None => return Err(ImportError::UnknownFormat(file.clone()).into()),
    };
    let need_label =
        |kind: &'static str| args.label.clone().ok_or_else(|| ImportError::NeedsLabel { file: file.clone(), kind });
    let mut index = 0usize;
    let mut checked = |record: StoredExperiment, line: u64| -> Result<(), ImportError> {
        index += 1;
        check_values(&record.experiment).map_err(|source| ImportError::Refused {
            file: file.clone(),
            record: index,
            line,
            source,
        })?;
        each(record, line)
    };
    match kind {
        stream::Kind::Export => {
            let label = args.label.clone();
            stream::export(file, &mut |mut record: StoredExperiment, line| {
                if let Some(label) = &label {
                    record.label = label.clone();
                }
                checked(record, line)
            })?;
        }
        stream::Kind::RunArray => {
            #[derive(Deserialize)]
            struct RunRecord {
                benchmark: String,
                label: String,
                experiment: Experiment,
            }
            let mut any = false;
            stream::run_array(file, &mut |r: RunRecord, line| {
                any = true;
                let label = args.label.clone().unwrap_or(r.label);
                checked(record(label, r.benchmark, "import:perflab", r.experiment), line)
            })?;
            if !any {
                return Err(ImportError::Empty(file.clone()).into());
            }
        }
        stream::Kind::Hyperfine => {
            let label = need_label("hyperfine")?;
            let machine = if args.this_machine {
                perflab_sys::machine::detect()
            } else {
                Machine {
                    hostname: "unknown (hyperfine import)".into(),
                    cpu_model: "unknown".into(),
                    ..Machine::default()
                }
            };
            let started_at = std::fs::metadata(file)
                .and_then(|m| m.modified())
                .map(|t| chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                .unwrap_or_default();
            // Benchmark names given so far (a name met twice gets ` (2)`).
            let mut names = std::collections::HashSet::new();
            let mut i = 0;
            stream::hyperfine(file, &mut |result: HyperfineResult, line| {
                i += 1;
                let record = from_hyperfine(result, i, &label, file, &machine, &started_at, &mut names)?;
                checked(record, line)
            })?;
            if i == 0 {
                return Err(ImportError::Empty(file.clone()).into());
            }
        }
        stream::Kind::Result => {
            let label = need_label("perflab result")?;
            let experiment = stream::result(file)?;
            let benchmark = args.bench.clone().unwrap_or_else(|| {
                experiment.commands.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(" vs ")
            });
            checked(record(label, benchmark, "import:perflab", experiment), 1)?;
        }
    }
    Ok(())
}

/// Store imported records; the commit of the tree they were imported from stands in
/// where a record has none.
pub fn store_records(store: &mut Store, records: &[StoredExperiment]) -> Result<(), StoreError> {
    let git_commit = current_git_commit();
    for record in records {
        let meta = Meta {
            label: record.label.clone(),
            benchmark: record.benchmark.clone(),
            git_commit: record.git_commit.clone().or_else(|| git_commit.clone()),
            source: record.source.clone(),
        };
        store.save(&meta, &record.experiment)?;
    }
    Ok(())
}

/// Imported numbers are checked at the edge: a run's times and sizes must be finite,
/// non-negative and below what any real run could take (a year; an exabyte), so no
/// later summary, chart or interval meets an overflow.
pub fn check_values(experiment: &Experiment) -> Result<(), OutOfRange> {
    const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;
    const MAX_COUNT: f64 = 1e18;
    if experiment.machine.cores > 1 << 20 {
        return Err(OutOfRange(format!("machine.cores = {} is out of range", experiment.machine.cores)));
    }
    if experiment.commands.is_empty() {
        return Err(OutOfRange("the experiment has no commands".into()));
    }
    for command in &experiment.commands {
        // A command runs once per round: a second run of a round would be paired (and
        // pooled) twice.
        let mut rounds = std::collections::HashSet::with_capacity(command.runs.len());
        for run in &command.runs {
            if !rounds.insert(run.round) {
                return Err(OutOfRange(format!(
                    "`{}` has two runs of round {} (position {})",
                    command.name, run.round, run.position
                )));
            }
        }
        for (i, run) in command.runs.iter().enumerate() {
            // The harness's contention readings are times: never negative.
            for (name, reading) in &run.counters {
                let harness = perflab_model::metric::kind(name) == perflab_model::metric::Kind::Contention;
                if let (true, Some(v)) = (harness, reading.value) {
                    if v < 0.0 {
                        return Err(OutOfRange(format!(
                            "`{}` run {}: {name} = {v:e} is negative (a time)",
                            command.name,
                            i + 1
                        )));
                    }
                }
            }
            let times = [("wall_s", run.wall_s), ("user_s", run.user_s), ("sys_s", run.sys_s)];
            for (name, v) in times {
                if !v.is_finite() || !(0.0..=MAX_SECONDS).contains(&v) {
                    return Err(OutOfRange(format!(
                        "`{}` run {}: {name} = {v:e} is not a time between 0 and a year",
                        command.name,
                        i + 1
                    )));
                }
            }
            for (name, reading) in &run.counters {
                if let Some(v) = reading.value {
                    if !v.is_finite() || v.abs() > MAX_COUNT {
                        return Err(OutOfRange(format!(
                            "`{}` run {}: counter {name} = {v:e} is out of range",
                            command.name,
                            i + 1
                        )));
                    }
                }
            }
            let counts = [
                ("max_rss_kib", run.max_rss_kib),
                ("minor_faults", run.minor_faults),
                ("major_faults", run.major_faults),
                ("voluntary_cs", run.voluntary_cs),
                ("involuntary_cs", run.involuntary_cs),
            ];
            if let Some((name, v)) = counts.iter().find(|(_, v)| *v as f64 > MAX_COUNT) {
                return Err(OutOfRange(format!("`{}` run {}: {name} = {v} is out of range", command.name, i + 1)));
            }
        }
        for (metric, s) in &command.summary {
            let values = [s.median, s.mean, s.stddev, s.mad, s.min, s.max];
            let interval = s.median_ci.map_or([0.0, 0.0], |(lo, hi)| [lo, hi]);
            if let Some(v) = values.iter().chain(&interval).find(|v| !v.is_finite() || v.abs() > MAX_COUNT) {
                return Err(OutOfRange(format!(
                    "`{}`: the summary of {metric} holds {v:e}, out of range",
                    command.name
                )));
            }
            if s.n as f64 > MAX_COUNT || s.outliers > s.n {
                return Err(OutOfRange(format!(
                    "`{}`: the summary of {metric} counts {} runs, out of range",
                    command.name, s.n
                )));
            }
        }
    }
    for c in &experiment.comparisons {
        // An undecided comparison has no ratio (null) and an unbounded interval.
        let ratio_ok = c.ratio.is_nan() || (c.ratio > 0.0 && c.ratio < MAX_COUNT);
        let interval_ok =
            c.ci_low >= 0.0 && c.ci_low <= c.ci_high && (c.ci_high < MAX_COUNT || c.ci_high.is_infinite());
        if !ratio_ok || !interval_ok || c.n as f64 > MAX_COUNT {
            return Err(OutOfRange(format!(
                "comparison `{}` vs `{}` on {}: ratio or interval out of range",
                c.candidate, c.baseline, c.metric
            )));
        }
    }
    Ok(())
}

fn record(label: String, benchmark: String, source: &str, experiment: Experiment) -> StoredExperiment {
    StoredExperiment {
        id: 0,
        label,
        label_order: 0,
        benchmark,
        git_commit: None,
        source: source.into(),
        recorded_at: String::new(),
        machine_fingerprint: experiment.machine.fingerprint(),
        complete: true,
        sample: None,
        profile_change: None,
        experiment,
    }
}

/// One experiment per hyperfine command (the `index`th, from 1), so each is a benchmark
/// in the history; `names` are the benchmark names given so far.
fn from_hyperfine(
    result: HyperfineResult,
    index: usize,
    label: &str,
    path: &str,
    machine: &Machine,
    started_at: &str,
    names: &mut std::collections::HashSet<String>,
) -> Result<StoredExperiment, ImportError> {
    let times = result.times.filter(|t| !t.is_empty()).ok_or_else(|| ImportError::NoTimes {
        file: path.to_string(),
        index,
        command: result.command.clone(),
    })?;
    if let Some(bad) = times.iter().find(|t| !t.is_finite() || **t < 0.0) {
        return Err(ImportError::BadTime { file: path.to_string(), index, time: *bad });
    }
    let mut name = result.command.clone();
    let parameters: BTreeMap<String, String> = result
        .parameters
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => (k.clone(), s.clone()),
            other => (k.clone(), other.to_string()),
        })
        .collect();
    if !parameters.is_empty() {
        let params: Vec<String> = parameters.iter().map(|(k, v)| format!("{k}={v}")).collect();
        name = format!("{name}[{}]", params.join(","));
    }
    let base = name.clone();
    let mut n = 2;
    while names.contains(&name) {
        name = format!("{base} ({n})");
        n += 1;
    }
    names.insert(name.clone());
    let runs: Vec<Run> = times
        .iter()
        .enumerate()
        .map(|(round, &wall_s)| Run {
            round: round as u32,
            wall_s,
            max_rss_kib: result.memory_usage_byte.as_ref().and_then(|m| m.get(round)).map_or(0, |b| b / 1024),
            exit: ExitInfo {
                exit_code: result.exit_codes.as_ref().and_then(|c| c.get(round).copied()).unwrap_or(Some(0)),
                signal: None,
                timed_out: false,
            },
            ..Run::default()
        })
        .collect();
    let mut warnings = vec![Warning::new(
        WarningKind::Import,
        format!(
            "imported from hyperfine, which records no per-run user/system time: user_s and sys_s are 0 (hyperfine's means: user {:.6} s, system {:.6} s)",
            result.user.unwrap_or(0.0),
            result.system.unwrap_or(0.0)
        ),
    )];
    if result.memory_usage_byte.is_none() {
        warnings
            .push(Warning::new(WarningKind::Import, "hyperfine before 1.17 records no memory use: max_rss_kib is 0"));
    }
    let summary =
        BTreeMap::from([(perflab_model::metric::WALL.to_string(), perflab_stats::summary::summarize(&times))]);
    let experiment = Experiment {
        started_at: started_at.to_string(),
        machine: machine.clone(),
        settings: imported_settings(times.len()),
        rounds: times.len() as u32,
        // hyperfine records no total; the runs' sum is the part it measured.
        duration_s: times.iter().sum(),
        stop_reason: StopReason::FixedRounds,
        commands: vec![CommandResult {
            name: name.clone(),
            argv: Vec::new(),
            command_line: result.command,
            parameters,
            runs,
            summary,
        }],
        warnings,
        environment: BTreeMap::from([("imported_from".to_string(), "hyperfine".to_string())]),
        ..Experiment::default()
    };
    Ok(record(label.to_string(), name, "import:hyperfine", experiment))
}

/// Settings describing an imported run: its rounds, nothing perflab chose.
fn imported_settings(rounds: usize) -> Settings {
    Settings {
        seed: 0,
        warmup_rounds: 0,
        min_rounds: rounds as u32,
        fixed_rounds: Some(rounds as u32),
        max_rounds: rounds as u32,
        max_time_s: 0.0,
        threshold: 0.0,
        confidence: 0.95,
        looks: Settings::default().looks,
        env_padding: false,
        mode: perflab_model::Mode::Wall,
        timeout_s: None,
        ..Settings::default()
    }
}

/// Everything `query` selects, as the file `perflab export` writes (in memory; `perflab
/// export` streams with [`export_to`]).
pub fn export(store: &mut Store, query: &Query) -> Result<ExportFile, StoreError> {
    let experiments = store.experiments(query)?;
    Ok(ExportFile { format: EXPORT_FORMAT.into(), format_version: 1, experiments })
}

/// How many experiments an export reads from the store at once: its memory is a batch,
/// not the store.
const EXPORT_BATCH: usize = 32;

/// Write everything `query` selects to `out` as the file `perflab export` writes — the
/// same JSON as [`export`]'s, written a batch of experiments at a time. Returns how many
/// experiments were written.
pub fn export_to(store: &mut Store, query: &Query, out: &mut dyn std::io::Write) -> Result<usize, ExportError> {
    let ids = store.experiment_ids(query)?;
    let stream = ExportStream { store: std::cell::RefCell::new(store), query, ids: &ids, failure: Default::default() };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    let result = serde_json::to_writer_pretty(&mut out, &stream).map_err(std::io::Error::from).and_then(|()| {
        std::io::Write::write_all(&mut out, b"\n")?;
        std::io::Write::flush(&mut out)
    });
    if let Some(failure) = stream.failure.into_inner() {
        return Err(failure);
    }
    result.map_err(ExportError::Write)?;
    Ok(ids.len())
}

/// Why an export stopped: the store, or the destination.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The destination could not be written.
    #[error(transparent)]
    Write(std::io::Error),
    /// Ctrl-C or SIGTERM arrived between two batches of experiments.
    #[error("interrupted")]
    Interrupted,
}

/// An export whose experiments are read from the store while they are serialized.
struct ExportStream<'a> {
    store: std::cell::RefCell<&'a mut Store>,
    query: &'a Query,
    ids: &'a [i64],
    /// A store error or an interrupt met while serializing (serde can only say that it
    /// stopped).
    failure: std::cell::RefCell<Option<ExportError>>,
}

impl Serialize for ExportStream<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeStruct};
        struct Experiments<'x, 'a>(&'x ExportStream<'a>);
        impl Serialize for Experiments<'_, '_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeSeq;
                let stream = self.0;
                let mut seq = serializer.serialize_seq(Some(stream.ids.len()))?;
                for batch in stream.ids.chunks(EXPORT_BATCH) {
                    if interrupted() {
                        *stream.failure.borrow_mut() = Some(ExportError::Interrupted);
                        return Err(S::Error::custom("interrupted"));
                    }
                    let experiments = stream.store.borrow_mut().experiments_with_ids(stream.query, batch);
                    match experiments {
                        Ok(experiments) => {
                            for e in &experiments {
                                seq.serialize_element(e)?;
                            }
                        }
                        Err(failure) => {
                            *stream.failure.borrow_mut() = Some(ExportError::Store(failure));
                            return Err(S::Error::custom("reading the store failed"));
                        }
                    }
                }
                seq.end()
            }
        }
        let mut s = serializer.serialize_struct("ExportFile", 3)?;
        s.serialize_field("format", EXPORT_FORMAT)?;
        s.serialize_field("format_version", &1u32)?;
        s.serialize_field("experiments", &Experiments(self))?;
        s.end()
    }
}
