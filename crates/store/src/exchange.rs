//! Getting results into and out of the store: `perflab import` (hyperfine JSON,
//! perflab JSON, perflab exports, checked at the edge) and `perflab export`.

use super::error::{ImportError, OutOfRange};
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
    pub format_version: u32,
    pub experiments: Vec<StoredExperiment>,
}

const EXPORT_FORMAT: &str = "perflab-export";

/// hyperfine's `--export-json` (the fields perflab uses; see hyperfine's
/// src/export/json.rs). `memory_usage_byte` exists from hyperfine 1.17 on.
#[derive(Debug, Deserialize)]
struct HyperfineFile {
    results: Vec<HyperfineResult>,
}

#[derive(Debug, Deserialize)]
struct HyperfineResult {
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

/// Read and check an import file: the experiments it holds, ready to store.
pub fn read_import(args: &ImportOptions) -> Result<Vec<StoredExperiment>, StoreError> {
    let file = || args.file.clone();
    let text = std::fs::read_to_string(&args.file).map_err(|source| ImportError::Read { file: file(), source })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| ImportError::NotJson { file: file(), source })?;
    let records = to_records(&value, args)?;
    for record in &records {
        check_values(&record.experiment).map_err(|source| ImportError::OutOfRange { file: file(), source })?;
    }
    Ok(records)
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
    for command in &experiment.commands {
        for (i, run) in command.runs.iter().enumerate() {
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

/// Recognize the file's format and turn it into records to store.
fn to_records(value: &serde_json::Value, args: &ImportOptions) -> Result<Vec<StoredExperiment>, ImportError> {
    let file = &args.file;
    let need_label =
        |kind: &'static str| args.label.clone().ok_or_else(|| ImportError::NeedsLabel { file: file.clone(), kind });
    let invalid = |kind: &'static str| move |source| ImportError::Invalid { file: file.clone(), kind, source };
    if value.get("format").and_then(|f| f.as_str()) == Some(EXPORT_FORMAT) {
        let export: ExportFile = serde_json::from_value(value.clone()).map_err(invalid("perflab export"))?;
        return Ok(export
            .experiments
            .into_iter()
            .map(|mut r| {
                if let Some(label) = &args.label {
                    r.label = label.clone();
                }
                r
            })
            .collect());
    }
    if let Some(items) = value.as_array().filter(|a| a.iter().all(|i| i.get("experiment").is_some())) {
        // `perflab run --json`: [{"benchmark", "label", "experiment"}]
        #[derive(Deserialize)]
        struct RunRecord {
            benchmark: String,
            label: String,
            experiment: Experiment,
        }
        let mut records = Vec::new();
        for item in items {
            let r: RunRecord = serde_json::from_value(item.clone()).map_err(invalid("`perflab run --json` file"))?;
            let label = args.label.clone().unwrap_or(r.label);
            records.push(record(label, r.benchmark, "import:perflab", r.experiment));
        }
        if records.is_empty() {
            return Err(ImportError::Empty(file.clone()));
        }
        return Ok(records);
    }
    if value.get("results").is_some_and(|r| r.is_array()) {
        let hyperfine: HyperfineFile =
            serde_json::from_value(value.clone()).map_err(invalid("hyperfine JSON export"))?;
        let label = need_label("hyperfine")?;
        let machine = if args.this_machine {
            perflab_sys::machine::detect()
        } else {
            Machine { hostname: "unknown (hyperfine import)".into(), cpu_model: "unknown".into(), ..Machine::default() }
        };
        return from_hyperfine(hyperfine, &label, file, &machine);
    }
    if value.get("schema_version").is_some() && value.get("commands").is_some() {
        let experiment: Experiment = serde_json::from_value(value.clone()).map_err(invalid("perflab result"))?;
        let label = need_label("perflab result")?;
        let benchmark = args
            .bench
            .clone()
            .unwrap_or_else(|| experiment.commands.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(" vs "));
        return Ok(vec![record(label, benchmark, "import:perflab", experiment)]);
    }
    Err(ImportError::UnknownFormat(file.clone()))
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

/// One experiment per hyperfine command, so each is a benchmark in the history.
fn from_hyperfine(
    file: HyperfineFile,
    label: &str,
    path: &str,
    machine: &Machine,
) -> Result<Vec<StoredExperiment>, ImportError> {
    let started_at = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map(|t| chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default();
    let mut records: Vec<StoredExperiment> = Vec::new();
    for (i, result) in file.results.into_iter().enumerate() {
        let times = result.times.filter(|t| !t.is_empty()).ok_or_else(|| ImportError::NoTimes {
            file: path.to_string(),
            index: i + 1,
            command: result.command.clone(),
        })?;
        if let Some(bad) = times.iter().find(|t| !t.is_finite() || **t < 0.0) {
            return Err(ImportError::BadTime { file: path.to_string(), index: i + 1, time: *bad });
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
        while records.iter().any(|r| r.benchmark == name) {
            name = format!("{base} ({n})");
            n += 1;
        }
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
            warnings.push(Warning::new(
                WarningKind::Import,
                "hyperfine before 1.17 records no memory use: max_rss_kib is 0",
            ));
        }
        let summary =
            BTreeMap::from([(perflab_model::metric::WALL.to_string(), perflab_stats::summary::summarize(&times))]);
        let experiment = Experiment {
            started_at: started_at.clone(),
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
        records.push(record(label.to_string(), name, "import:hyperfine", experiment));
    }
    if records.is_empty() {
        return Err(ImportError::Empty(path.to_string()));
    }
    Ok(records)
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

/// Everything `query` selects, as the file `perflab export` writes.
pub fn export(store: &mut Store, query: &Query) -> Result<ExportFile, StoreError> {
    let experiments = store.experiments(query)?;
    Ok(ExportFile { format: EXPORT_FORMAT.into(), format_version: 1, experiments })
}
