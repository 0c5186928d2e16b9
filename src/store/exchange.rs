//! Getting results into and out of the store: `perflab import` (hyperfine JSON,
//! perflab JSON, perflab exports), `perflab export`, and `compare --save`.

use super::{current_git_commit, Meta, Query, Recorder, Store, StoredExperiment};
use crate::error::{Failure, EXIT_OK};
use crate::model::{CommandResult, ExitInfo, Experiment, Machine, Run, Settings, StopReason};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;

/// Which database to use (every store command takes it).
#[derive(Debug, Clone, Args, Default)]
pub struct DbArgs {
    /// The history database: a SQLite file or a postgres:// URL
    /// [env: PERFLAB_DB; default: .perflab/perflab.db].
    #[arg(long = "db", value_name = "URL")]
    pub db: Option<String>,
}

impl DbArgs {
    pub fn open(&self) -> Result<Store, Failure> {
        Store::open(self.db.as_deref())
    }
}

/// `compare --save`: store the comparison in the history too.
#[derive(Debug, Clone, Args, Default)]
pub struct SaveArgs {
    /// Store the result in the history database.
    #[arg(long)]
    pub save: bool,
    /// Label to store it under (default: the git commit, else the time).
    #[arg(long, value_name = "LABEL", requires = "save")]
    pub label: Option<String>,
    /// Benchmark name to store it under (default: the command names joined by ` vs `).
    #[arg(long = "bench", value_name = "NAME", requires = "save")]
    pub bench: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

impl SaveArgs {
    /// The store to save into, when `--save` was given.
    pub fn open(&self) -> Result<Option<Store>, Failure> {
        if self.save {
            self.db.open().map(Some)
        } else {
            Ok(None)
        }
    }

    /// An observer for the compare engine committing each run of `plan` as it completes.
    pub fn recorder<'s>(&self, store: Option<&'s mut Store>, plan: &crate::compare::Plan) -> Option<Recorder<'s>> {
        let store = store?;
        let git_commit = current_git_commit();
        let meta = Meta {
            label: self.label.clone().unwrap_or_else(|| default_label(git_commit.as_deref())),
            benchmark: self
                .bench
                .clone()
                .unwrap_or_else(|| plan.commands.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(" vs ")),
            git_commit,
            source: "compare".into(),
        };
        Some(store.begin(&meta, &Machine::detect(), &plan.settings, &plan.commands))
    }

    /// Store the summaries and verdicts too, and say where on stderr.
    pub fn finish(&self, recorder: Option<Recorder>, experiment: &Experiment) -> Result<(), Failure> {
        let Some(recorder) = recorder else { return Ok(()) };
        let message = format!(
            "saved `{}` as label `{}` in {}",
            recorder.meta().benchmark,
            recorder.meta().label,
            recorder.location()
        );
        recorder.finish(experiment)?;
        eprintln!("{message}");
        Ok(())
    }
}

/// The label used when none is given: the short git commit, else the UTC time.
pub fn default_label(git_commit: Option<&str>) -> String {
    match git_commit {
        Some(c) => c.chars().take(12).collect::<String>() + if c.ends_with("-dirty") { "-dirty" } else { "" },
        None => chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
    }
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A hyperfine `--export-json` file, a `compare --json` or `run --json` file, or a perflab export.
    #[arg(value_name = "FILE")]
    pub file: String,
    /// Label to store under (required for hyperfine and perflab results; overrides an export's labels).
    #[arg(long, value_name = "LABEL")]
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

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Only this label.
    #[arg(long, value_name = "LABEL")]
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

pub fn import_main(args: ImportArgs) -> Result<i32, Failure> {
    let text = std::fs::read_to_string(&args.file).map_err(|e| crate::usage!("cannot read {}: {e}", args.file))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| crate::usage!("{}: not JSON: {e}", args.file))?;
    let records = to_records(&value, &args)?;
    let mut store = args.db.open()?;
    // The commit of the tree the results were imported from, when the file has none.
    let git_commit = current_git_commit();
    for record in &records {
        let meta = Meta {
            label: record.label.clone(),
            benchmark: record.benchmark.clone(),
            git_commit: record.git_commit.clone().or_else(|| git_commit.clone()),
            source: record.source.clone(),
        };
        store.save(&meta, &record.experiment)?;
    }
    let labels: std::collections::BTreeSet<&str> = records.iter().map(|r| r.label.as_str()).collect();
    eprintln!(
        "imported {} benchmark result{} ({} runs) under label{} {} into {}",
        records.len(),
        if records.len() == 1 { "" } else { "s" },
        records.iter().flat_map(|r| &r.experiment.commands).map(|c| c.runs.len()).sum::<usize>(),
        if labels.len() == 1 { "" } else { "s" },
        labels.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", "),
        store.location()
    );
    Ok(EXIT_OK)
}

/// Recognize the file's format and turn it into records to store.
fn to_records(value: &serde_json::Value, args: &ImportArgs) -> Result<Vec<StoredExperiment>, Failure> {
    let file = &args.file;
    let need_label = |kind: &str| {
        args.label.clone().ok_or_else(|| crate::usage!("{file} is a {kind} file: pass --label to name these results"))
    };
    if value.get("format").and_then(|f| f.as_str()) == Some(EXPORT_FORMAT) {
        let export: ExportFile = serde_json::from_value(value.clone())
            .map_err(|e| crate::usage!("{file}: not a valid perflab export: {e}"))?;
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
            let r: RunRecord = serde_json::from_value(item.clone())
                .map_err(|e| crate::usage!("{file}: not a valid `perflab run --json` file: {e}"))?;
            let label = args.label.clone().unwrap_or(r.label);
            records.push(record(label, r.benchmark, "import:perflab", r.experiment));
        }
        if records.is_empty() {
            return Err(crate::usage!("{file}: the file holds no results"));
        }
        return Ok(records);
    }
    if value.get("results").is_some_and(|r| r.is_array()) {
        let hyperfine: HyperfineFile = serde_json::from_value(value.clone())
            .map_err(|e| crate::usage!("{file}: not a valid hyperfine JSON export: {e}"))?;
        let label = need_label("hyperfine")?;
        let machine = if args.this_machine {
            Machine::detect()
        } else {
            Machine { hostname: "unknown (hyperfine import)".into(), cpu_model: "unknown".into(), ..Machine::default() }
        };
        return from_hyperfine(hyperfine, &label, file, &machine);
    }
    if value.get("schema_version").is_some() && value.get("commands").is_some() {
        let experiment: Experiment = serde_json::from_value(value.clone())
            .map_err(|e| crate::usage!("{file}: not a valid perflab result: {e}"))?;
        let label = need_label("perflab result")?;
        let benchmark = args
            .bench
            .clone()
            .unwrap_or_else(|| experiment.commands.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(" vs "));
        return Ok(vec![record(label, benchmark, "import:perflab", experiment)]);
    }
    Err(crate::usage!(
        "{file}: expected hyperfine --export-json output (`results`), perflab compare/run --json output or a perflab export"
    ))
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
        machine_fingerprint: super::fingerprint(&experiment.machine),
        complete: true,
        experiment,
    }
}

/// One experiment per hyperfine command, so each is a benchmark in the history.
fn from_hyperfine(
    file: HyperfineFile,
    label: &str,
    path: &str,
    machine: &Machine,
) -> Result<Vec<StoredExperiment>, Failure> {
    let started_at = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map(|t| chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default();
    let mut records: Vec<StoredExperiment> = Vec::new();
    for (i, result) in file.results.into_iter().enumerate() {
        let times = result
            .times
            .filter(|t| !t.is_empty())
            .ok_or_else(|| crate::usage!("{path}: result {} (`{}`) has no per-run `times`", i + 1, result.command))?;
        if let Some(bad) = times.iter().find(|t| !t.is_finite() || **t < 0.0) {
            return Err(crate::usage!("{path}: result {} has an invalid time {bad}", i + 1));
        }
        let mut name = result.command.clone();
        if !result.parameters.is_empty() {
            let params: Vec<String> = result
                .parameters
                .iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect();
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
        let mut warnings = vec![format!(
            "imported from hyperfine, which records no per-run user/system time: user_s and sys_s are 0 (hyperfine's means: user {:.6} s, system {:.6} s)",
            result.user.unwrap_or(0.0),
            result.system.unwrap_or(0.0)
        )];
        if result.memory_usage_byte.is_none() {
            warnings.push("hyperfine before 1.17 records no memory use: max_rss_kib is 0".into());
        }
        let summary =
            BTreeMap::from([(crate::model::metric::WALL.to_string(), crate::stats::summary::summarize(&times))]);
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
        return Err(crate::usage!("{path}: the hyperfine file has no results"));
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
        env_padding: false,
        mode: "wall".into(),
        timeout_s: None,
    }
}

pub fn export_main(args: ExportArgs) -> Result<i32, Failure> {
    let mut store = args.db.open()?;
    let experiments = store.experiments(&Query { label: args.label, benchmark: args.bench, machine: args.machine })?;
    let export = ExportFile { format: EXPORT_FORMAT.into(), format_version: 1, experiments };
    write_json(&args.json, &export)?;
    if args.json != "-" {
        eprintln!("exported {} experiments to {}", export.experiments.len(), args.json);
    }
    Ok(EXIT_OK)
}

/// Write `value` as pretty JSON to `path` (`-` for stdout).
pub fn write_json(path: &str, value: &impl Serialize) -> Result<(), Failure> {
    let mut out = crate::render::open_output(path)?;
    serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| crate::usage!("cannot write `{path}`: {e}"))
}
