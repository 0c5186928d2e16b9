//! `perflab run` (a suite's benchmarks, stored under a label) and `perflab bisect`.

use super::args::{duration, DbArgs, ExperimentArgs, SelectionArgs};
use crate::error::Failure;
use crate::model::{Experiment, StopReason};
use crate::plan;
use crate::render::color;
use crate::suite::bisect::{self, BisectRequest};
use crate::suite::runner::{run_suite, Outcome, RunOptions};
use crate::suite::{self, Benchmark, Build};
use crate::units::format_value;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The suite file.
    #[arg(long, value_name = "FILE", default_value = suite::DEFAULT_FILE)]
    pub suite: PathBuf,
    /// Label to store these results under (a version, a commit, a build name).
    #[arg(short = 'l', long, value_name = "LABEL", required_unless_present = "list")]
    pub label: Option<String>,
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// List the benchmarks and their commands without running them.
    #[arg(long)]
    pub list: bool,
    /// For every benchmark found slower than --baseline beyond the threshold, profile one
    /// run of each build and store the per-function diff and differential flame graph
    /// (shown by `perflab report`).
    #[arg(long, requires = "baseline")]
    pub profile_changes: bool,
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten, next_help_heading = "Experiment (overrides the suite file)")]
    pub experiment: ExperimentArgs,
}

impl RunArgs {
    fn run_options(&self) -> RunOptions {
        RunOptions {
            overrides: self.experiment.options(),
            seed: self.experiment.seed,
            show_output: self.experiment.runner.show_output,
            ignore_failure: self.experiment.ignore_failure,
            hide_progress: self.experiment.runner.progress_hidden(),
            profile_changes: self.profile_changes,
            ..RunOptions::default()
        }
    }
}

/// One benchmark's result as written by `--json`.
#[derive(Debug, Serialize)]
struct RunRecord<'a> {
    benchmark: &'a str,
    label: &'a str,
    experiment: &'a Experiment,
}

/// `perflab run`.
pub fn main(args: RunArgs) -> Result<(), Failure> {
    let options = args.run_options();
    plan::check(&options.overrides)?;
    let suite = suite::load(&args.suite)?;
    let benchmarks = suite.select(args.selection.filter.as_deref())?;
    let (candidate, baseline) =
        suite.builds(args.selection.build.as_deref(), args.selection.baseline.as_deref(), args.label.as_deref())?;
    if args.list {
        return list(&benchmarks, candidate, baseline);
    }
    let label = args.label.clone().unwrap_or_default();
    let mut store = args.db.open()?;
    let json_to_stdout = args.experiment.runner.json.as_deref() == Some("-");
    let mut records: Vec<(String, Experiment)> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let mut on_outcome = |bench: &Benchmark, outcome: &Outcome| match outcome {
        Outcome::Measured(experiment) => {
            let line = summary_line(&bench.name, experiment);
            // `--json -` owns stdout.
            if json_to_stdout {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
            for warning in &experiment.warnings {
                eprintln!("  {}", color::yellow(&format!("warning: {warning}")));
            }
            if experiment.stop_reason == StopReason::CommandFailed {
                if let Some(why) = &experiment.failure {
                    eprintln!("  {why}");
                }
                failed.push(bench.name.clone());
            }
            records.push((bench.name.clone(), (**experiment).clone()));
        }
        Outcome::Failed(message) => {
            eprintln!("  {}: {message}", bench.name);
            failed.push(bench.name.clone());
        }
    };
    let ran = run_suite(&benchmarks, &label, (candidate, baseline), &options, &mut store, &mut on_outcome);
    // What was measured is written even when a later benchmark stopped the run.
    if let Some(path) = &args.experiment.runner.json {
        let out: Vec<RunRecord> =
            records.iter().map(|(b, e)| RunRecord { benchmark: b, label: &label, experiment: e }).collect();
        crate::render::json::write(path, &out)?;
    }
    ran?;
    eprintln!(
        "stored {} benchmark result{} as label `{}` in {}",
        records.len(),
        if records.len() == 1 { "" } else { "s" },
        label,
        store.location()
    );
    if crate::interrupt::watcher().requested() {
        return Err(Failure::Interrupted(format!(
            "interrupted; the {} benchmark result{} above are stored",
            records.len(),
            if records.len() == 1 { "" } else { "s" }
        )));
    }
    if !failed.is_empty() {
        return Err(Failure::CommandFailed(format!(
            "{} benchmark{} failed: {}",
            failed.len(),
            if failed.len() == 1 { "" } else { "s" },
            failed.join(", ")
        )));
    }
    Ok(())
}

/// `--list`: each benchmark with the commands it would run.
fn list(benchmarks: &[&Benchmark], candidate: Option<&Build>, baseline: Option<&Build>) -> Result<(), Failure> {
    for bench in benchmarks {
        let mut commands = Vec::new();
        if let Some(b) = baseline.filter(|_| bench.uses_build()) {
            commands.push(bench.command_for(Some(b))?);
        }
        // Without a build the template is shown as written.
        commands.push(if candidate.is_some() || !bench.uses_build() {
            bench.command_for(candidate)?
        } else {
            bench.command.clone()
        });
        println!("{}\t{}", crate::render::terminal::escape(&bench.name), commands.join("  vs  "));
    }
    Ok(())
}

/// `name  median [CI] (n runs)` of the primary metric and, against a baseline, the verdict.
pub(super) fn summary_line(name: &str, experiment: &Experiment) -> String {
    let primary = experiment.primary_metric.as_str();
    let name = crate::render::terminal::escape(name);
    let Some(measured) = experiment.commands.last() else { return format!("{name}: no runs") };
    let value = |v| format_value(primary, v);
    let runs = |n: usize| if n == 1 { "1 run".to_string() } else { format!("{n} runs") };
    let mut line = match measured.summary.get(primary) {
        Some(s) => match s.median_ci {
            Some((lo, hi)) => format!("{name}  {} [{} – {}] ({})", value(s.median), value(lo), value(hi), runs(s.n)),
            None => format!("{name}  {} ({})", value(s.median), runs(s.n)),
        },
        None => format!("{name}  {}", runs(measured.runs.len())),
    };
    if let Some(c) = experiment.comparisons.iter().find(|c| c.metric == primary) {
        line += &format!(
            "  {} vs {}: ×{:.3} {} {}",
            crate::render::terminal::escape(&c.candidate),
            crate::render::terminal::escape(&c.baseline),
            c.ratio,
            c.interval_text(3),
            c.verdict.as_str()
        );
    }
    line
}

#[derive(Debug, Args)]
pub struct BisectArgs {
    /// A commit (or a stored label that has one) where the benchmark is fast.
    #[arg(long, value_name = "REV")]
    pub good: String,
    /// A later commit (or label) where it is slow.
    #[arg(long, value_name = "REV")]
    pub bad: String,
    /// Shell command building a commit, run inside its worktree; `{commit}` is the hash.
    /// The benchmark's `{build}` is then that worktree's directory.
    #[arg(long = "build", value_name = "CMD")]
    pub build_command: String,
    /// The suite benchmark to measure (its command uses `{build}`).
    #[arg(long = "bench", value_name = "NAME")]
    pub bench: String,
    #[arg(long, value_name = "FILE", default_value = suite::DEFAULT_FILE)]
    pub suite: PathBuf,
    /// The git repository (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Per-comparison measured rounds (default: adaptive, until a verdict).
    #[arg(short = 'r', long, value_name = "N")]
    pub rounds: Option<u32>,
    /// Per-comparison time limit.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub max_time: Option<f64>,
    /// Used only to resolve --good/--bad given as stored labels.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `perflab bisect`.
pub fn main_bisect(args: BisectArgs) -> Result<(), Failure> {
    let overrides = plan::SettingsLayer { rounds: args.rounds, max_time: args.max_time, ..Default::default() };
    plan::check(&overrides)?;
    bisect::bisect(&BisectRequest {
        good: args.good,
        bad: args.bad,
        build_command: args.build_command,
        bench: args.bench,
        suite: args.suite,
        repo: args.repo,
        run: RunOptions { overrides, hide_progress: true, ..RunOptions::default() },
        db: args.db.db,
    })
}
