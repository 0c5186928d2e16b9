//! hyperfine's export formats, so its users' scripts run unchanged on perflab's results:
//! `--export-json` writes hyperfine's schema (`results[]` with command, mean, stddev,
//! median, user, system, min, max, times, memory_usage_byte, exit_codes, parameters —
//! what hyperfine's scripts/*.py read) with perflab's ratios, intervals and verdicts
//! under a `perflab` key of each result and of the file; `--export-csv` writes its
//! per-command summary. Times are in seconds whatever `--time-unit` says, as in
//! hyperfine. perflab's own, richer JSON stays on `--json`.

use super::export::Exporter;
use super::OutputError;
use perflab_model::{metric, CommandResult, Experiment, Run};
use perflab_stats::summary;
use serde::Serialize;
use std::collections::BTreeMap;

/// `--export-json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct HyperfineJson;

/// `--export-csv`.
#[derive(Debug, Clone, Copy, Default)]
pub struct HyperfineCsv;

/// The file: hyperfine's `results`, and perflab's additions beside them.
#[derive(Debug, Serialize)]
pub struct Export<'a> {
    /// One per command, in the order given.
    pub results: Vec<Result_<'a>>,
    /// What perflab adds about the whole experiment.
    pub perflab: ExperimentAdditions<'a>,
}

/// One command, as hyperfine writes it (its `BenchmarkResult`), plus `perflab`.
#[derive(Debug, Serialize)]
pub struct Result_<'a> {
    /// The command's name (its `--name`, else the command line), as hyperfine's
    /// `--command-name` gives it.
    pub command: &'a str,
    /// Wall time over the measured runs, in seconds.
    pub mean: f64,
    /// Sample standard deviation; null with one run.
    pub stddev: Option<f64>,
    /// Median wall time, seconds.
    pub median: f64,
    /// Mean user and system CPU time per run.
    pub user: f64,
    /// Mean system CPU time per run, seconds.
    pub system: f64,
    /// Shortest wall time, seconds.
    pub min: f64,
    /// Longest wall time, seconds.
    pub max: f64,
    /// Every measured run's wall time, in run order (warm-up runs are not measured).
    pub times: Vec<f64>,
    /// Peak RSS of every run, in bytes.
    pub memory_usage_byte: Vec<u64>,
    /// Every run's exit code; null when a signal ended it.
    pub exit_codes: Vec<Option<i32>>,
    /// The `-L`/`-P` values of this command, by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: &'a BTreeMap<String, String>,
    /// What perflab adds about this command.
    pub perflab: ResultAdditions<'a>,
}

/// perflab's additions to a result.
#[derive(Debug, Serialize)]
pub struct ResultAdditions<'a> {
    /// The command line as typed.
    pub command_line: &'a str,
    /// True for the command the others are compared with.
    pub baseline: bool,
    /// What hyperfine's fields (`times`, `mean`, `median`, `min`, `max`, `stddev`) are
    /// of: always `wall_s`, as in hyperfine, whatever decided the verdicts.
    pub times_metric: &'static str,
    /// The distribution-free 95 % interval of the median wall time; null below 6 runs.
    pub median_ci: Option<(f64, f64)>,
    /// The figures of the metric the verdicts were decided on (`uncontended_s` on a busy
    /// machine, a printed metric, …), named, beside hyperfine's wall times.
    pub deciding: Option<DecidingFigures<'a>>,
    /// This command against the baseline, per compared metric (none for the baseline).
    pub comparisons: Vec<ComparisonAddition<'a>>,
}

/// One command's figures of the deciding metric.
#[derive(Debug, Serialize)]
pub struct DecidingFigures<'a> {
    /// The metric (`Experiment::primary_metric`).
    pub metric: &'a str,
    /// Its median over the measured runs.
    pub median: f64,
    /// The distribution-free 95 % interval of that median; null below 6 runs.
    pub median_ci: Option<(f64, f64)>,
    /// Its mean over the measured runs.
    pub mean: f64,
    /// Every measured run's value, in run order (null where a run lacks it).
    pub values: Vec<Option<f64>>,
}

/// One ratio against the baseline: paired, with its interval and verdict.
#[derive(Debug, Serialize)]
pub struct ComparisonAddition<'a> {
    /// The metric compared.
    pub metric: &'a str,
    /// The baseline command's name.
    pub baseline: &'a str,
    /// This command ÷ the baseline (Hodges–Lehmann estimate of the paired ratios).
    pub ratio: f64,
    /// Null when the rounds are too few for an interval.
    pub ci: Option<(f64, f64)>,
    /// Confidence of `ci` (0.95 for 95 %).
    pub confidence: f64,
    /// Two-sided Wilcoxon signed-rank p-value of the paired ratios.
    pub p_value: f64,
    /// How the ratio was computed: `paired` (interleaved rounds of one session).
    pub method: &'static str,
    /// The verdict, as in perflab's JSON (`faster`, `slower`, …).
    pub verdict: &'a str,
}

/// perflab's additions about the whole experiment.
#[derive(Debug, Serialize)]
pub struct ExperimentAdditions<'a> {
    /// The perflab version that measured it.
    pub version: &'a str,
    /// Measured rounds.
    pub rounds: u32,
    /// Seed of the round order.
    pub seed: u64,
    /// Why the experiment stopped.
    pub stop_reason: perflab_model::StopReason,
    /// The metric whose verdicts decided when to stop.
    pub primary_metric: &'a str,
    /// The experiment's warnings, one line each.
    pub warnings: Vec<&'a str>,
}

/// hyperfine's document for `e`.
pub fn export(e: &Experiment) -> Export<'_> {
    Export {
        results: e.commands.iter().enumerate().map(|(i, c)| result(e, i, c)).collect(),
        perflab: ExperimentAdditions {
            version: &e.perflab_version,
            rounds: e.rounds,
            seed: e.settings.seed,
            stop_reason: e.stop_reason,
            primary_metric: &e.primary_metric,
            warnings: e.warnings.iter().map(|w| w.message.as_str()).collect(),
        },
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

fn result<'a>(e: &'a Experiment, index: usize, c: &'a CommandResult) -> Result_<'a> {
    let times: Vec<f64> = c.runs.iter().map(|r| r.wall_s).collect();
    let n = times.len();
    let average = mean(times.iter().copied());
    // hyperfine's stddev is the sample standard deviation, absent for one run.
    let stddev = (n > 1).then(|| (times.iter().map(|t| (t - average).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    let finite = |f: fn(f64, f64) -> f64, start: f64| times.iter().copied().fold(start, f);
    let comparisons = e
        .comparisons
        .iter()
        .filter(|x| x.candidate == c.name)
        .map(|x| ComparisonAddition {
            metric: &x.metric,
            baseline: &x.baseline,
            ratio: x.ratio,
            ci: x.ci_high.is_finite().then_some((x.ci_low, x.ci_high)),
            confidence: x.confidence,
            p_value: x.p_value,
            method: "paired",
            verdict: x.verdict.as_str(),
        })
        .collect();
    Result_ {
        command: &c.name,
        mean: average,
        stddev,
        median: if n == 0 { 0.0 } else { summary::median(&times) },
        user: mean(c.runs.iter().map(|r| r.user_s)),
        system: mean(c.runs.iter().map(|r| r.sys_s)),
        min: if n == 0 { 0.0 } else { finite(f64::min, f64::INFINITY) },
        max: if n == 0 { 0.0 } else { finite(f64::max, f64::NEG_INFINITY) },
        memory_usage_byte: c.runs.iter().map(|r: &Run| r.max_rss_kib * 1024).collect(),
        exit_codes: c.runs.iter().map(|r| r.exit.exit_code).collect(),
        times,
        parameters: &c.parameters,
        perflab: ResultAdditions {
            command_line: &c.command_line,
            baseline: index == 0 && e.commands.len() > 1,
            times_metric: metric::WALL,
            median_ci: c.summary.get(metric::WALL).and_then(|s| s.median_ci),
            deciding: c.summary.get(&e.primary_metric).map(|s| DecidingFigures {
                metric: &e.primary_metric,
                median: s.median,
                median_ci: s.median_ci,
                mean: s.mean,
                values: c.runs.iter().map(|r| r.metric(&e.primary_metric)).collect(),
            }),
            comparisons,
        },
    }
}

impl Exporter<Experiment> for HyperfineJson {
    fn render(&self, e: &Experiment) -> Result<String, OutputError> {
        super::json::to_string(&export(e))
    }
}

impl Exporter<Experiment> for HyperfineCsv {
    /// hyperfine's columns (command, mean, stddev, median, user, system, min, max — wall
    /// and CPU seconds, as in hyperfine — then `parameter_NAME` per parameter), then
    /// perflab's, each named with the metric the verdicts were decided on: its median,
    /// the paired ratio to the baseline, its interval and verdict (empty for the
    /// baseline), e.g. `uncontended_s_median,uncontended_s_ratio_paired,…`.
    fn render(&self, e: &Experiment) -> Result<String, OutputError> {
        let doc = export(e);
        let mut out = csv::Writer::from_writer(Vec::new());
        let parameter_names: Vec<&String> =
            doc.results.first().map(|r| r.parameters.keys().collect()).unwrap_or_default();
        let mut header: Vec<String> =
            ["command", "mean", "stddev", "median", "user", "system", "min", "max"].map(String::from).to_vec();
        header.extend(parameter_names.iter().map(|p| format!("parameter_{p}")));
        let deciding = &e.primary_metric;
        header.extend(
            ["median", "ratio_paired", "ratio_paired_ci_low", "ratio_paired_ci_high", "verdict"]
                .map(|column| format!("{deciding}_{column}")),
        );
        out.write_record(&header)?;
        for r in &doc.results {
            let mut row = vec![r.command.to_string()];
            for v in [r.mean, r.stddev.unwrap_or(0.0), r.median, r.user, r.system, r.min, r.max] {
                row.push(v.to_string());
            }
            row.extend(parameter_names.iter().map(|p| r.parameters.get(*p).cloned().unwrap_or_default()));
            row.push(r.perflab.deciding.as_ref().map_or(String::new(), |d| d.median.to_string()));
            match r.perflab.comparisons.iter().find(|c| c.metric == e.primary_metric) {
                Some(c) => {
                    row.push(c.ratio.to_string());
                    row.push(c.ci.map_or(String::new(), |ci| ci.0.to_string()));
                    row.push(c.ci.map_or(String::new(), |ci| ci.1.to_string()));
                    row.push(c.verdict.to_string());
                }
                None => row.extend(std::iter::repeat_n(String::new(), 4)),
            }
            out.write_record(&row)?;
        }
        let bytes = out.into_inner().map_err(|e| csv::Error::from(e.into_error()))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::experiment;
    use serde_json::Value;

    /// What hyperfine's scripts (scripts/*.py in its repository) read, with the JSON type
    /// each expects: plot_whisker, plot_histogram, plot_progression, advanced_statistics
    /// and welch_ttest read `command` and `times`; plot_parametrized `parameters`, `mean`
    /// and `stddev`; plot_benchmark_comparison `command` and `mean`; --sort-by `median`.
    pub(crate) fn check_hyperfine_schema(doc: &Value) -> Result<(), String> {
        let results = doc["results"].as_array().ok_or("`results` is not an array")?;
        for (i, r) in results.iter().enumerate() {
            let field = |name: &str| r.get(name).ok_or(format!("results[{i}] lacks `{name}`"));
            field("command")?.as_str().ok_or(format!("results[{i}].command is not a string"))?;
            for number in ["mean", "median", "user", "system", "min", "max"] {
                field(number)?.as_f64().ok_or(format!("results[{i}].{number} is not a number"))?;
            }
            let stddev = field("stddev")?;
            if !(stddev.is_null() || stddev.is_f64()) {
                return Err(format!("results[{i}].stddev is neither a number nor null"));
            }
            let times = field("times")?.as_array().ok_or(format!("results[{i}].times is not an array"))?;
            if times.iter().any(|t| !t.is_f64()) {
                return Err(format!("results[{i}].times holds a non-number"));
            }
            let codes = field("exit_codes")?.as_array().ok_or(format!("results[{i}].exit_codes is not an array"))?;
            if codes.len() != times.len() || codes.iter().any(|c| !(c.is_null() || c.is_i64())) {
                return Err(format!("results[{i}].exit_codes: one integer or null per time"));
            }
            if let Some(memory) = r.get("memory_usage_byte") {
                let memory = memory.as_array().ok_or(format!("results[{i}].memory_usage_byte is not an array"))?;
                if memory.len() != times.len() || memory.iter().any(|m| !m.is_u64()) {
                    return Err(format!("results[{i}].memory_usage_byte: one byte count per time"));
                }
            }
            if let Some(parameters) = r.get("parameters") {
                let parameters = parameters.as_object().ok_or(format!("results[{i}].parameters is not an object"))?;
                if parameters.values().any(|v| !v.is_string()) {
                    return Err(format!("results[{i}].parameters: values are strings, as hyperfine writes them"));
                }
            }
        }
        Ok(())
    }

    #[test]
    fn the_export_has_what_hyperfines_scripts_read() {
        let e = experiment(&["a", "bb"], &[0.05, 0.055], Some(6));
        let doc: Value = serde_json::from_str(&HyperfineJson.render(&e).unwrap()).unwrap();
        check_hyperfine_schema(&doc).unwrap();
        let a = &doc["results"][0];
        let times: Vec<f64> = a["times"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
        assert_eq!(times, e.commands[0].runs.iter().map(|r| r.wall_s).collect::<Vec<_>>());
        let mean = times.iter().sum::<f64>() / 6.0;
        assert!((a["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
        let sd = (times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / 5.0).sqrt();
        assert!((a["stddev"].as_f64().unwrap() - sd).abs() < 1e-12, "sample standard deviation, as hyperfine");
        assert_eq!(a["parameters"]["n"], "1");
        let b = &doc["results"][1]["perflab"];
        assert_eq!(b["comparisons"][0]["baseline"], "a");
        assert!(b["comparisons"][0]["ratio"].as_f64().is_some() && b["comparisons"][0]["verdict"].is_string());
        assert_eq!(doc["perflab"]["rounds"], 6);
        // A broken document is told apart.
        let mut broken = doc.clone();
        broken["results"][0]["times"] = serde_json::json!(["x"]);
        assert!(check_hyperfine_schema(&broken).is_err());
    }

    #[test]
    fn snapshots_of_the_json_and_the_csv() {
        let e = experiment(&["a", "bb"], &[0.05, 0.055], Some(6));
        insta::assert_snapshot!("hyperfine_json", HyperfineJson.render(&e).unwrap());
        let csv = HyperfineCsv.render(&e).unwrap();
        assert!(
            csv.starts_with(
                "command,mean,stddev,median,user,system,min,max,parameter_n,wall_s_median,wall_s_ratio_paired,wall_s_ratio_paired_ci_low,wall_s_ratio_paired_ci_high,wall_s_verdict\n"
            ),
            "{csv}"
        );
        insta::assert_snapshot!("hyperfine_csv", csv);
    }
}
