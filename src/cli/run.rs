//! `perflab run` (a suite's benchmarks, stored under a label) and `perflab bisect`:
//! their arguments, wired to `suite::runner` and `suite::bisect`, which report through
//! observers printed here with `render::suite`.

// Doc comments here are --help text (clap), read by people on a terminal: brackets mean
// what they say, not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links)]

use super::args::{duration, DbArgs, ExperimentArgs, SelectionArgs};
use crate::error::Failure;
use crate::output::progress::ProgressDisplay;
use crate::output::Outputs;
use clap::Args;
use perflab_engine::experiment::Observer;
use perflab_engine::plan::{self, SettingsLayer};
use perflab_model::{Experiment, StopReason};
use perflab_render::export::{Part, Text};
use perflab_render::json::Json;
use perflab_render::suite_summary::{Outcome as SummaryOutcome, Summary};
use perflab_render::terminal::escape;
use perflab_render::{self as render, color};
use perflab_suite::bisect::{self, BisectObserver, BisectRequest, Step};
use perflab_suite::budget::{BudgetPlan, BudgetUse, Share};
use perflab_suite::family::Family;
use perflab_suite::runner::{run_suite, Explanation, Outcome, RunOptions, SuiteObserver};
use perflab_suite::{self as suite, Benchmark, Build};
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
    /// Sample every measured run of both builds (as `compare --explain`), and for every
    /// benchmark found slower than --baseline beyond the threshold store why, function by
    /// function with intervals, with the experiment (shown by `perflab report`, `history`).
    #[arg(long, requires = "baseline")]
    pub profile_changes: bool,
    /// Build every compared version N times with different code layouts (`{layout}` in
    /// the builds' path and prepare command stands for a seed) and compare versions across
    /// them, with intervals that count how much layouts differ (beats `layouts` in the
    /// suite's [builds]; docs/suites.md, "Code layouts").
    #[arg(long, value_name = "N")]
    pub layouts: Option<u32>,
    /// Write the run's summary as a Markdown pull-request comment (`-` for stdout): the
    /// changed benchmarks, the counts of unchanged and undecided, the warnings by kind —
    /// the same digits as the terminal's summary.
    #[arg(long, visible_alias = "export-markdown", value_name = "FILE")]
    pub markdown: Option<String>,
    /// Exit with a code a merge gate acts on: 1 when a benchmark is slower beyond its
    /// threshold, 4 when none is but some ended undecided (README, "Exit codes").
    #[arg(long)]
    pub gate: bool,
    /// Give each compared benchmark the full confidence on its own (the rule before the
    /// suite was the family; docs/statistics.md): a suite of 20 unchanged benchmarks then
    /// raises a false alarm in about a third of its runs.
    #[arg(long, requires = "baseline")]
    pub per_benchmark: bool,
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten, next_help_heading = "Experiment (overrides the suite file)")]
    pub experiment: ExperimentArgs,
}

impl RunArgs {
    fn run_options(&self) -> RunOptions {
        // `--budget` is the whole run's deadline here, not each benchmark's `--max-time`.
        let overrides = SettingsLayer { max_time: self.experiment.max_time, ..self.experiment.options() };
        RunOptions {
            overrides,
            budget_s: self.experiment.budget,
            seed: self.experiment.seed,
            show_output: self.experiment.runner.show_output,
            keep_children: self.experiment.runner.keep_children,
            ignore_failure: self.experiment.ignore_failure,
            profile_changes: self.profile_changes,
            per_benchmark: self.per_benchmark,
            ..RunOptions::default()
        }
    }
}

/// One benchmark's result as written by `--json`.
#[derive(Debug, Serialize)]
struct RunRecord {
    benchmark: String,
    label: String,
    /// Against a baseline build: the pair's record on the metric the session decided on
    /// (paired rounds), as `history` and `report` show it.
    #[serde(skip_serializing_if = "Option::is_none")]
    comparison: Option<perflab_store::history::ratio::Ratio>,
    experiment: Experiment,
}

/// Prints a suite run as it goes: a line per benchmark on stdout (stderr when `--json -`
/// takes stdout), progress, warnings and failures on stderr; keeps what was measured.
struct Printer {
    label: String,
    to_stderr: bool,
    progress: ProgressDisplay,
    records: Vec<RunRecord>,
    failed: Vec<String>,
    summary: Summary,
}

/// What `run` writes: the records (`--json`) and the summary (terminal, `--markdown`).
struct RunResult {
    records: Vec<RunRecord>,
    summary: Summary,
}

impl SuiteObserver for Printer {
    fn preparing(&mut self, build: &Build) {
        eprintln!("preparing build `{}`: {}", escape(&build.name), escape(build.prepare.as_deref().unwrap_or("")));
    }

    fn started(&mut self, index: usize, total: usize, bench: &Benchmark) {
        eprintln!("[{}/{total}] {}", index + 1, escape(&bench.name));
    }

    fn experiment(&mut self) -> Option<&mut dyn Observer> {
        Some(&mut self.progress)
    }

    fn finished(&mut self, bench: &Benchmark, outcome: &Outcome) {
        match outcome {
            Outcome::Measured(experiment) => {
                let line = render::suite::summary_line(&bench.name, experiment);
                if self.to_stderr {
                    eprintln!("{line}");
                } else {
                    crate::outln!("{line}");
                }
                // Each warning in full once per kind in the summary, with every benchmark
                // it hit: here only which kinds, so a long suite's log stays readable.
                if !experiment.warnings.is_empty() {
                    let mut kinds: Vec<&str> = Vec::new();
                    for kind in experiment.warnings.iter().map(|w| render::suite_summary::kind_name(w.kind)) {
                        if !kinds.contains(&kind) {
                            kinds.push(kind);
                        }
                    }
                    eprintln!("  {}", color::yellow(&format!("warnings: {} (in the summary)", kinds.join(", "))));
                }
                self.summary.add(&bench.name, experiment);
                if experiment.stop_reason == StopReason::CommandFailed {
                    if let Some(why) = &experiment.failure {
                        eprintln!("  {}", render::escape_line(why));
                    }
                    self.failed.push(bench.name.clone());
                    self.summary.add_failed(&bench.name, experiment.failure.as_deref().unwrap_or("a command failed"));
                }
                let comparison = experiment
                    .comparisons
                    .iter()
                    .find(|c| c.metric == experiment.primary_metric)
                    .map(|c| perflab_store::history::ratio::paired(c, false));
                self.records.push(RunRecord {
                    benchmark: bench.name.clone(),
                    label: self.label.clone(),
                    comparison,
                    experiment: (**experiment).clone(),
                });
            }
            Outcome::Failed(message) => {
                eprintln!("  {}: {}", escape(&bench.name), escape(message));
                self.failed.push(bench.name.clone());
                self.summary.add_failed(&bench.name, message);
            }
        }
    }

    fn cleanup_failed(&mut self, _bench: &Benchmark, why: &str) {
        eprintln!("  cleanup failed: {}", escape(why));
    }

    fn explained(&mut self, _bench: &Benchmark, explanation: &Explanation) {
        eprintln!("{}", render::suite::explanation(explanation));
    }

    fn note(&mut self, bench: &Benchmark, note: &str) {
        eprintln!("note: benchmark `{}`: {}", escape(&bench.name), escape(note));
    }

    fn family(&mut self, family: &Family) {
        eprintln!("note: {}", family.note());
        self.summary.family = Some(*family);
    }

    fn budget_started(&mut self, budget_s: f64, total: usize) {
        eprintln!("note: {}", render::suite::budget_start(budget_s, total));
    }

    fn budget_planned(&mut self, plan: &BudgetPlan, shares: &[(&Benchmark, &Share)]) {
        eprintln!("{}", render::suite::budget_plan(plan, shares));
    }

    fn budget_used(&mut self, used: &BudgetUse) {
        self.summary.budget = Some(*used);
    }
}

/// `perflab run`.
pub fn main(args: RunArgs) -> Result<(), Failure> {
    let options = args.run_options();
    plan::check(&options.overrides)?;
    let suite = suite::load(&args.suite)?;
    let benchmarks = suite.select(args.selection.filter.as_deref())?;
    let (candidate, baseline) =
        suite.builds(args.selection.build.as_deref(), args.selection.baseline.as_deref(), args.label.as_deref())?;
    let options = RunOptions { layouts: args.layouts.or(suite.layouts), ..options };
    if args.list {
        return list(&benchmarks, candidate, baseline);
    }
    if options.budget_s.is_some() && baseline.is_none() {
        return Err(Failure::Usage(
            "`run --budget` shares a deadline among compared benchmarks: give --baseline BUILD (or --max-time for \
             each benchmark's own limit)"
                .into(),
        ));
    }
    let label = args.label.clone().unwrap_or_default();
    let mut outputs: Outputs<RunResult> = Outputs::new();
    if let Some(path) = &args.experiment.runner.json {
        outputs.add("--json", path, Part(Json, records_of as fn(&RunResult) -> &Vec<RunRecord>))?;
    }
    if let Some(path) = &args.markdown {
        outputs.add("--markdown", path, Text(|r: &RunResult| r.summary.markdown()))?;
    }
    let mut store = args.db.open()?;
    let mut printer = Printer {
        label: label.clone(),
        to_stderr: outputs.stdout_taken(),
        progress: ProgressDisplay::new(args.experiment.runner.progress_hidden()),
        records: Vec::new(),
        failed: Vec::new(),
        summary: Summary::new(&label, baseline.map(|b| b.name.as_str()), None),
    };
    let ran = run_suite(&benchmarks, &label, (candidate, baseline), &options, &mut store, &mut printer);
    let Printer { records, failed, summary, .. } = printer;
    let result = RunResult { records, summary };
    // What was measured is written even when a later benchmark stopped the run; the
    // summary goes where the benchmarks' lines went.
    let written = outputs.write(&result, Some(&Text(|r: &RunResult| r.summary.terminal())));
    let RunResult { records, summary } = result;
    ran?;
    eprintln!(
        "stored {} benchmark result{} as label `{}` in {}",
        records.len(),
        if records.len() == 1 { "" } else { "s" },
        escape(&label),
        escape(store.location())
    );
    written?;
    if perflab_sys::interrupt::watcher().requested() {
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
    if args.gate {
        gate(&summary)?;
    }
    Ok(())
}

/// The part of a run's result `--json` writes (as before the summary: the records).
fn records_of(result: &RunResult) -> &Vec<RunRecord> {
    &result.records
}

/// `--gate`: a regression (exit 1) beats undecided benchmarks (exit 4).
fn gate(summary: &Summary) -> Result<(), Failure> {
    let names = |rows: &mut dyn Iterator<Item = &render::suite_summary::Row>| {
        rows.map(|r| escape(&r.benchmark).to_string()).collect::<Vec<_>>().join(", ")
    };
    match summary.outcome() {
        SummaryOutcome::Clean => Ok(()),
        SummaryOutcome::Regression => Err(Failure::GateTripped(format!(
            "slower beyond the threshold: {}",
            names(&mut summary.changed.iter().filter(|r| r.is_regression()))
        ))),
        SummaryOutcome::Undecided => Err(Failure::Undecided(format!(
            "no regression found, but undecided: {} (more rounds or a longer --max-time would decide)",
            names(&mut summary.undecided.iter())
        ))),
    }
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
        crate::outln!("{}", render::suite::list_line(&bench.name, &commands));
    }
    Ok(())
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
    /// Build every tested commit (and the good one) N times with different code layouts,
    /// `{layout}` in --build standing for the seed: a commit is then bad only when it is
    /// slower than layout alone explains (no halfway rule; docs/suites.md, "Code layouts").
    #[arg(long, value_name = "N")]
    pub layouts: Option<u32>,
    /// Seed of the rounds' order and of the layout seeds (default: random).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Used only to resolve --good/--bad given as stored labels.
    #[command(flatten)]
    pub db: DbArgs,
}

/// Prints a bisection's steps as they are decided.
struct BisectPrinter;

impl BisectObserver for BisectPrinter {
    fn started(&mut self, commits: usize, good: &str, bad: &str, bench: &str) {
        crate::outln!(
            "bisecting {commits} commits between {} and {} on `{}`",
            render::suite::short(good),
            render::suite::short(bad),
            escape(bench)
        );
    }

    fn tested(&mut self, step: &Step) {
        crate::outln!("{}", render::suite::bisect_step(step));
    }
}

/// `perflab bisect`.
pub fn main_bisect(args: BisectArgs) -> Result<(), Failure> {
    let overrides = plan::SettingsLayer { rounds: args.rounds, max_time: args.max_time, ..Default::default() };
    plan::check(&overrides)?;
    let request = BisectRequest {
        good: args.good,
        bad: args.bad,
        build_command: args.build_command,
        bench: args.bench,
        suite: args.suite,
        repo: args.repo,
        run: RunOptions { overrides, layouts: args.layouts, seed: args.seed, ..RunOptions::default() },
        db: args.db.db,
    };
    let found = bisect::bisect(&request, &mut BisectPrinter)?;
    crate::outln!("first bad commit: {} {}", found.first_bad, escape(&found.subject));
    Ok(())
}
