//! Running a suite: every selected benchmark through the experiment engine (against a
//! baseline build when one is given), each run committed to the history store as it
//! completes, the builds prepared first and each benchmark's setup and cleanup around it.

use super::error::SuiteError;
use super::layouts::LayoutBuild;
use super::{Benchmark, Build};
use perflab_engine::experiment::{self, Fanout, Observer};
use perflab_engine::measure::MeasureOptions;
use perflab_engine::plan::{Plan, PlanRequest, SettingsLayer};
use perflab_model::{Experiment, Machine, StopReason};
use perflab_store::{current_git_commit, Lenient, Meta, Store};
use perflab_sys::command::{Shell, ShellReason};

/// How the experiments of a suite run, beyond what the suite file says.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Set on the command line: beats each benchmark's options and the suite's defaults.
    pub overrides: SettingsLayer,
    /// Seed of the round order (`--seed`; None: the plan's default).
    pub seed: Option<u64>,
    /// Show the benchmarked commands' output instead of discarding it.
    pub show_output: bool,
    /// Leave what runs left in their process group (`--keep-children`).
    pub keep_children: bool,
    /// Keep going past failing runs (`--ignore-failure`): they are recorded, not fatal.
    pub ignore_failure: bool,
    /// What produced the results, as stored (default `run`; a fleet agent says which job).
    pub source: Option<String>,
    /// The machine the results are stored under (default: the one detected).
    pub machine: Option<Machine>,
    /// Sample every measured run of a benchmark compared with a baseline build, so a
    /// regression's comparison carries its per-function explanation, stored with the
    /// experiment (see `explain`).
    pub profile_changes: bool,
    /// A fleet job's claim: results are written only while it is held, and replace what
    /// an earlier attempt of the job left incomplete (see `store::Recorder::fenced`).
    pub fence: Option<perflab_store::fleet::Claim>,
    /// Build every compared version this many times, each with its own layout seed
    /// (`--layouts N`, `layouts = N` in `[builds]`), and compare versions across them.
    pub layouts: Option<u32>,
    /// Each benchmark at the full confidence (`--per-benchmark`, the rule before the suite
    /// was the family): the chance of a false alarm somewhere grows with the suite's size.
    pub per_benchmark: bool,
    /// One deadline for the whole run, seconds (`run --budget`): the benchmarks' rounds
    /// are interleaved until it (see [`crate::budget`]) instead of one benchmark after
    /// another, each with its own `max_time`.
    pub budget_s: Option<f64>,
}

/// What a suite run reports as it goes: the command line prints it, an agent logs it.
/// Every callback has a default that ignores it.
pub trait SuiteObserver {
    /// `build`'s prepare command is about to run.
    fn preparing(&mut self, _build: &Build) {}
    /// Benchmark `index` (from 0) of `total` starts.
    fn started(&mut self, _index: usize, _total: usize, _bench: &Benchmark) {}
    /// Watches each benchmark's experiment (progress, say); none by default.
    fn experiment(&mut self) -> Option<&mut dyn Observer> {
        None
    }
    /// A benchmark ended: measured (see its stop reason) or failed before.
    fn finished(&mut self, _bench: &Benchmark, _outcome: &Outcome) {}
    /// A benchmark's cleanup failed (its results are stored already).
    fn cleanup_failed(&mut self, _bench: &Benchmark, _why: &str) {}
    /// `--profile-changes`: what the runs' samples say about a slower benchmark.
    fn explained(&mut self, _bench: &Benchmark, _explanation: &Explanation) {}
    /// Something the user should know about how a benchmark is run (a shell nobody asked
    /// for, layouts that built the same binary), said before anything runs.
    fn note(&mut self, _bench: &Benchmark, _note: &str) {}
    /// The compared benchmarks share the run's confidence (see [`crate::family`]), said
    /// once before the first benchmark runs; not called when nothing is compared.
    fn family(&mut self, _family: &Family) {}
    /// `--budget`: the benchmarks are about to run interleaved against `budget_s`, `total`
    /// of them (said before the pilot).
    fn budget_started(&mut self, _budget_s: f64, _total: usize) {}
    /// `--budget`: after the pilot, what each benchmark's share can resolve (None: it
    /// made no promise).
    fn budget_planned(&mut self, _plan: &BudgetPlan, _shares: &[(&Benchmark, &Share)]) {}
    /// `--budget`: how the budget was used, once every benchmark ended.
    fn budget_used(&mut self, _used: &BudgetUse) {}
}

use super::budget::{BudgetObserver, BudgetPlan, BudgetUse, Clock, Share};
use super::family::Family;
use perflab_model::Run;

pub use super::explain::Explanation;

/// What happened to one benchmark.
#[derive(Debug)]
pub enum Outcome {
    /// Measured (possibly stopped early: see the experiment's `stop_reason`).
    Measured(Box<Experiment>),
    /// Its setup or a command failed before anything was measured.
    Failed(String),
}

/// The engine's plan for one benchmark (baseline first when given): the benchmark's
/// options over the suite defaults, under `overrides`.
pub fn plan_for(
    bench: &Benchmark,
    candidate: Option<&Build>,
    baseline: Option<&Build>,
    run: &RunOptions,
) -> Result<Plan, SuiteError> {
    planned(bench, candidate, baseline, None, run).map(|(plan, _)| plan)
}

/// The plan for one benchmark over every layout of every version (baseline's first),
/// compared as versions across their layouts (`--layouts N`).
pub fn plan_for_layouts(bench: &Benchmark, builds: &[LayoutBuild], run: &RunOptions) -> Result<Plan, SuiteError> {
    planned(bench, None, None, Some(builds), run).map(|(plan, _)| plan)
}

/// [`plan_for`], and why its commands run through a shell the suite did not ask for.
fn planned(
    bench: &Benchmark,
    candidate: Option<&Build>,
    baseline: Option<&Build>,
    layout_builds: Option<&[LayoutBuild]>,
    run: &RunOptions,
) -> Result<(Plan, Option<ShellReason>), SuiteError> {
    let o = run.overrides.or(&bench.options);
    let mut texts = Vec::new();
    let mut names = Vec::new();
    let mut hooks = Vec::new();
    let layout_builds = layout_builds.filter(|_| bench.uses_build());
    if let Some(builds) = layout_builds {
        for b in builds {
            texts.push(bench.command_for(Some(&b.build))?);
            names.push(b.build.name.clone());
            hooks.push(bench.hooks_for(Some(&b.build)));
        }
    } else {
        // A benchmark without {build} runs the same command for every build: measure it once.
        if let Some(b) = baseline.filter(|_| bench.uses_build()) {
            texts.push(bench.command_for(Some(b))?);
            names.push(b.name.clone());
            hooks.push(bench.hooks_for(Some(b)));
        }
        texts.push(bench.command_for(candidate)?);
        hooks.push(bench.hooks_for(candidate));
        names.push(candidate.filter(|_| bench.uses_build()).map_or_else(|| bench.name.clone(), |c| c.name.clone()));
    }
    let in_bench =
        |source: perflab_engine::plan::error::PlanError| SuiteError::Benchmark { bench: bench.name.clone(), source };
    let shell = Shell::named(o.shell.as_deref()).map_err(|e| in_bench(e.into()))?;
    let layouts = layout_builds.map(super::layouts::layouts_of);
    let parameters = layout_builds
        .map(|builds| builds.iter().map(|b| perflab_model::Layouts::parameters(&b.version, b.seed)).collect())
        .unwrap_or_default();
    // Versions are compared, each across its layouts: one version has nothing to compare.
    let compared = layouts.as_ref().map_or(texts.len(), |l| l.versions.len());
    let measure = MeasureOptions {
        events: o.events.clone().unwrap_or_default(),
        mode: o.mode.unwrap_or_default(),
        output: o.output.clone().unwrap_or_default(),
        iterations: o.iterations.unwrap_or_default(),
        // Every run of both builds sampled in the same interleaved rounds, so a regression
        // is explained with nothing more to run; one command has nothing to compare with.
        explain: (run.profile_changes && compared > 1).then(super::explain::sampling),
        ..MeasureOptions::default()
    };
    let request = PlanRequest {
        names,
        parameters,
        hooks,
        layouts,
        options: o,
        seed: run.seed,
        measure,
        // Checked once the builds are prepared: a prepare may make the programs.
        resolve_programs: false,
        show_output: run.show_output,
        keep_children: run.keep_children,
        ignore_failure: run.ignore_failure,
        ..PlanRequest::new(texts, shell)
    };
    request.build().map_err(in_bench)
}

/// Run `benchmarks` of `suite` and store every run under `label`. Every plan is made
/// before anything runs, so a typo fails in a second, and every program is looked up
/// once the builds are prepared, before the first measurement. `observer` hears about
/// each step; an interrupt stops after the benchmark in flight (its runs kept).
pub fn run_suite(
    benchmarks: &[&Benchmark],
    label: &str,
    (candidate, baseline): (Option<&Build>, Option<&Build>),
    options: &RunOptions,
    store: &mut Store,
    observer: &mut dyn SuiteObserver,
) -> Result<(), SuiteError> {
    // The budget counts the whole run: the builds' preparation and setups included.
    let clock = Clock::real();
    let layout_builds = match options.layouts {
        Some(count) => Some(super::layouts::expand_versions(
            [baseline, candidate].into_iter().flatten(),
            count,
            options.seed.unwrap_or_else(rand::random),
        )?),
        None => None,
    };
    let mut prepared = Vec::new();
    for bench in benchmarks {
        let (plan, shell_reason) = planned(bench, candidate, baseline, layout_builds.as_deref(), options)?;
        if let Some(reason) = shell_reason {
            observer.note(bench, &reason.note());
        }
        prepared.push((*bench, plan));
    }
    if let Some(family) = share_confidence(&mut prepared, options.per_benchmark) {
        observer.family(&family);
    }
    let builds: Vec<&Build> = match &layout_builds {
        Some(layouts) => layouts.iter().map(|l| &l.build).collect(),
        None => [baseline, candidate].into_iter().flatten().collect(),
    };
    for build in builds {
        if let Some(prepare) = &build.prepare {
            observer.preparing(build);
            perflab_sys::command::run_shell(prepare, None, true)
                .map_err(|source| SuiteError::PrepareBuild { build: build.name.clone(), source })?;
        }
    }
    // Checked once the builds are prepared: a prepare may make the programs.
    for (bench, plan) in &prepared {
        let mut programs = Vec::new();
        for c in &plan.commands {
            let program = perflab_sys::command::resolve_program(&c.argv[0])
                .map_err(|source| SuiteError::Benchmark { bench: bench.name.clone(), source: source.into() })?;
            programs.push(program.to_string_lossy().into_owned());
        }
        if let (Some(layouts), Some(_)) = (&layout_builds, &plan.layouts) {
            if let Some(note) = super::layouts::check_distinct(layouts, &programs)? {
                observer.note(bench, &note);
            }
        }
    }
    let git_commit = current_git_commit();
    let machine = options.machine.clone().unwrap_or_else(perflab_sys::machine::detect);
    // Layout spreads measured here before: a verdict between two builds within them is doubted.
    let known_spreads = if layout_builds.is_none() { store.layout_spreads(&machine)? } else { Vec::new() };
    if let Some(budget_s) = options.budget_s {
        let context =
            Context { label, git_commit: &git_commit, machine: &machine, known_spreads: &known_spreads, options };
        return interleaved(&prepared, budget_s, clock, &context, store, observer);
    }
    let interrupt = perflab_sys::interrupt::watcher();
    let total = prepared.len();
    // Benchmarks measured but not stored (the store failed: a full disk), and why first.
    let mut not_stored_all: Vec<String> = Vec::new();
    let mut first_failure = None;
    for (i, (bench, plan)) in prepared.iter().enumerate() {
        if interrupt.requested() {
            break;
        }
        observer.started(i, total, bench);
        if let Some(setup) = &bench.setup {
            if let Err(e) = perflab_sys::command::run_shell(setup, None, true) {
                observer.finished(bench, &Outcome::Failed(format!("setup failed ({e}); skipped")));
                continue;
            }
        }
        let meta = Meta {
            label: label.to_string(),
            benchmark: bench.name.clone(),
            git_commit: git_commit.clone(),
            source: options.source.clone().unwrap_or_else(|| "run".into()),
        };
        let recorder = store.begin(&meta, &machine, &plan.settings, &plan.commands);
        // A fleet job stops at a failed write (its claim may be lost); `perflab run`
        // measures the benchmark to its end, so that it is still printed and written.
        let mut recorder = match &options.fence {
            Some(claim) => Recording::Fenced(recorder.fenced(claim.clone())),
            None => Recording::Lenient(Lenient::new(recorder)),
        };
        let result = match observer.experiment() {
            Some(watching) => experiment::run(plan, &mut Fanout(vec![watching, recorder.observer()])),
            None => experiment::run(plan, recorder.observer()),
        };
        let mut explanation = None;
        let mut not_stored = None;
        let outcome = match result {
            // A fleet job's benchmark cut short by an interrupt is left incomplete, as a
            // kill -9 leaves it: the job is queued again, and its next attempt measures
            // the benchmark anew and supersedes these runs (finished, it counted as done
            // with 5 of its 40 rounds).
            Ok(experiment) if options.fence.is_some() && experiment.stop_reason == StopReason::Interrupted => {
                Outcome::Measured(Box::new(experiment))
            }
            Ok(mut experiment) => {
                annotate(&mut experiment, bench, &known_spreads);
                match recorder.finish(&experiment) {
                    Ok(_) => {}
                    Err(failure) if options.fence.is_none() => {
                        experiment.warnings.push(perflab_model::Warning::new(
                            perflab_model::WarningKind::Other,
                            format!("not stored in the history: {}", failure.line()),
                        ));
                        not_stored = Some(failure);
                    }
                    Err(failure) => return Err(failure.into()),
                }
                if options.profile_changes && not_stored.is_none() {
                    explanation = super::explain::explained(&experiment);
                }
                Outcome::Measured(Box::new(experiment))
            }
            Err(other) => return Err(other.into()),
        };
        if let Some(cleanup) = &bench.cleanup {
            if let Err(e) = perflab_sys::command::run_shell(cleanup, None, true) {
                observer.cleanup_failed(bench, &e.to_string());
            }
        }
        let interrupted = matches!(&outcome, Outcome::Measured(e) if e.stop_reason == StopReason::Interrupted);
        observer.finished(bench, &outcome);
        // Said under the benchmark's line; it is stored with the experiment already.
        if let Some(explanation) = &explanation {
            observer.explained(bench, explanation);
        }
        if interrupted {
            break;
        }
        // The store failed: the benchmark was measured, printed and kept for --json. The
        // others are measured too (each tries the store again: space may come back);
        // the end says which were not stored.
        if let Some(failure) = not_stored {
            not_stored_all.push(bench.name.clone());
            first_failure.get_or_insert(failure);
        }
    }
    match first_failure {
        Some(first) => Err(SuiteError::NotStored { benchmarks: not_stored_all, total, first: Box::new(first) }),
        None => Ok(()),
    }
}

/// What every measured experiment of a suite carries before it is stored: the doubts
/// of the layout spreads measured here before, and whether its builds run different
/// commands (one that runs the same command for every build is a control of the
/// sessions, not a change of the builds: history::controls).
fn annotate(experiment: &mut Experiment, bench: &Benchmark, known_spreads: &[perflab_model::LayoutSpread]) {
    let doubts = perflab_engine::analysis::layouts::spread_warnings(experiment, known_spreads);
    experiment.warnings.extend(doubts);
    experiment
        .environment
        .insert(perflab_store::history::controls::USES_BUILD_FACT.into(), bench.uses_build().to_string());
}

/// What every benchmark of a run is stored with.
struct Context<'a> {
    label: &'a str,
    git_commit: &'a Option<String>,
    machine: &'a Machine,
    known_spreads: &'a [perflab_model::LayoutSpread],
    options: &'a RunOptions,
}

/// `--budget`: every benchmark's setup first, then all experiments interleaved against
/// the deadline (see [`crate::budget`]); each run is stored as it completes, each
/// benchmark's cleanup runs when it ends.
fn interleaved(
    prepared: &[(&Benchmark, Plan)],
    budget_s: f64,
    clock: Clock,
    context: &Context,
    store: &mut Store,
    observer: &mut dyn SuiteObserver,
) -> Result<(), SuiteError> {
    let mut running: Vec<(&Benchmark, Plan)> = Vec::new();
    for (bench, plan) in prepared {
        if let Some(setup) = &bench.setup {
            if let Err(e) = perflab_sys::command::run_shell(setup, None, true) {
                observer.finished(bench, &Outcome::Failed(format!("setup failed ({e}); skipped")));
                continue;
            }
        }
        running.push((*bench, super::budget::with_deadline(plan.clone(), budget_s)));
    }
    let mut recorders = Vec::new();
    let mut entries = Vec::new();
    for (bench, plan) in &running {
        let meta = Meta {
            label: context.label.to_string(),
            benchmark: bench.name.clone(),
            git_commit: context.git_commit.clone(),
            source: context.options.source.clone().unwrap_or_else(|| "run".into()),
        };
        recorders.push(Some(store.begin(&meta, context.machine, &plan.settings, &plan.commands).pause()));
        let make: super::budget::MakeExecutor = Box::new(|plan: &Plan| experiment::process_executor(plan));
        entries.push(super::budget::Entry { plan: plan.clone(), make });
    }
    observer.budget_started(budget_s, running.len());
    let mut heard = Interleaved {
        running: &running,
        context,
        store,
        observer,
        recorders,
        write_failures: (0..running.len()).map(|_| None).collect(),
        not_stored: Vec::new(),
        first_failure: None,
    };
    let used = super::budget::interleave(entries, clock, budget_s, &mut heard);
    let Interleaved { observer, not_stored, first_failure, .. } = heard;
    observer.budget_used(&used);
    match first_failure {
        Some(first) => {
            Err(SuiteError::NotStored { benchmarks: not_stored, total: running.len(), first: Box::new(first) })
        }
        None => Ok(()),
    }
}

/// Hears the interleaved experiments of `--budget`: stores each run as it completes,
/// each experiment when it ends, and tells the suite's observer.
struct Interleaved<'r, 'a> {
    running: &'r [(&'r Benchmark, Plan)],
    context: &'r Context<'a>,
    store: &'r mut Store,
    observer: &'r mut dyn SuiteObserver,
    /// Each benchmark's recorder between its runs (taken when it ends).
    recorders: Vec<Option<perflab_store::Paused>>,
    /// The first failed write of each benchmark: its later runs are not written (as
    /// `Lenient`), and it is reported when the benchmark ends.
    write_failures: Vec<Option<perflab_store::error::StoreError>>,
    not_stored: Vec<String>,
    first_failure: Option<perflab_store::error::StoreError>,
}

impl BudgetObserver for Interleaved<'_, '_> {
    fn run_finished(&mut self, bench: usize, command: usize, run: &Run) {
        if self.write_failures[bench].is_some() {
            return;
        }
        let Some(paused) = self.recorders[bench].take() else { return };
        let mut recorder = paused.resume(self.store);
        if let Err(e) = recorder.record_run(command, run) {
            self.write_failures[bench] = Some(e);
        }
        self.recorders[bench] = Some(recorder.pause());
    }

    fn planned(&mut self, plan: &BudgetPlan) {
        let shares: Vec<(&Benchmark, &Share)> = plan.shares.iter().map(|(&b, s)| (self.running[b].0, s)).collect();
        self.observer.budget_planned(plan, &shares);
    }

    fn finished(&mut self, index: usize, result: Result<Experiment, String>) {
        let bench = self.running[index].0;
        let mut explanation = None;
        let outcome = match result {
            Ok(mut experiment) => {
                annotate(&mut experiment, bench, self.context.known_spreads);
                let stored = match (self.write_failures[index].take(), self.recorders[index].take()) {
                    (Some(failure), _) => Err(failure),
                    (None, Some(paused)) => paused.resume(self.store).finish(&experiment).map(|_| ()),
                    (None, None) => Ok(()),
                };
                if let Err(failure) = stored {
                    experiment.warnings.push(perflab_model::Warning::new(
                        perflab_model::WarningKind::Other,
                        format!("not stored in the history: {}", failure.line()),
                    ));
                    self.not_stored.push(bench.name.clone());
                    self.first_failure.get_or_insert(failure);
                } else if self.context.options.profile_changes {
                    explanation = super::explain::explained(&experiment);
                }
                Outcome::Measured(Box::new(experiment))
            }
            Err(why) => Outcome::Failed(why),
        };
        if let Some(cleanup) = &bench.cleanup {
            if let Err(e) = perflab_sys::command::run_shell(cleanup, None, true) {
                self.observer.cleanup_failed(bench, &e.to_string());
            }
        }
        self.observer.finished(bench, &outcome);
        if let Some(explanation) = &explanation {
            self.observer.explained(bench, explanation);
        }
    }
}

/// Whether `plan` compares builds (or versions across layouts), and so has verdicts.
fn compares(plan: &Plan) -> bool {
    match &plan.layouts {
        Some(layouts) => layouts.versions.len() > 1,
        None => plan.commands.len() > 1,
    }
}

/// The suite is the family: every comparing plan's confidence becomes its share of the
/// run's (Bonferroni, [`crate::family`]), unless `per_benchmark`. The run's confidence is
/// the plans' own (all share one default; a differing one keeps the strictest).
fn share_confidence(prepared: &mut [(&Benchmark, Plan)], per_benchmark: bool) -> Option<Family> {
    let comparing: Vec<usize> = (0..prepared.len()).filter(|&i| compares(&prepared[i].1)).collect();
    let confidence = comparing
        .iter()
        .map(|&i| prepared[i].1.settings.confidence)
        .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c))))?;
    let family = Family::new(if per_benchmark { 1 } else { comparing.len() }, confidence);
    for &i in &comparing {
        prepared[i].1.settings.confidence = family.per_benchmark;
    }
    Some(Family { size: comparing.len(), ..family })
}

/// A benchmark's recorder: a fleet job's stops at a failed write, `run`'s goes on.
enum Recording<'s> {
    Fenced(perflab_store::Recorder<'s>),
    Lenient(Lenient<'s>),
}

impl Recording<'_> {
    fn observer(&mut self) -> &mut dyn perflab_engine::experiment::Observer {
        match self {
            Recording::Fenced(r) => r,
            Recording::Lenient(r) => r,
        }
    }

    fn finish(self, experiment: &perflab_model::Experiment) -> Result<i64, perflab_store::error::StoreError> {
        match self {
            Recording::Fenced(r) => r.finish(experiment),
            Recording::Lenient(r) => r.finish(experiment),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_model::Settings;

    const SUITE: &str = r#"
[defaults]
warmup = 3
min_rounds = 8
threshold = 2
[builds]
old = "old"
new = "new"
[[benchmark]]
name = "own"
command = "true {build}"
min_rounds = 10
max_time = "2m"
[[benchmark]]
name = "inherits"
command = "true {build}"
[[benchmark]]
name = "solo"
command = "true"
"#;

    /// The plan `run` would use for `bench` of SUITE, new against old.
    fn plan_of(suite: &str, bench: &str, cli: &RunOptions) -> Plan {
        let suite = crate::parse(suite, std::path::Path::new("perflab.toml")).unwrap();
        let bench = suite.benchmarks.iter().find(|b| b.name == bench).unwrap();
        plan_for(bench, suite.build("new"), suite.build("old"), cli).unwrap()
    }

    fn settings_for(suite: &str, bench: &str, cli: &RunOptions) -> Settings {
        plan_of(suite, bench, cli).settings
    }

    fn seeded() -> RunOptions {
        RunOptions { seed: Some(7), ..RunOptions::default() }
    }

    fn overriding(overrides: SettingsLayer) -> RunOptions {
        RunOptions { overrides, ..seeded() }
    }

    /// `--profile-changes` samples every run of both builds (the probe of `compare
    /// --explain`); a benchmark measured once, without {build}, has nothing to explain.
    #[test]
    fn profile_changes_samples_every_run_of_compared_builds() {
        let explaining = RunOptions { profile_changes: true, ..seeded() };
        assert_eq!(plan_of(SUITE, "own", &explaining).measure.explain, Some(crate::explain::sampling()));
        assert_eq!(plan_of(SUITE, "own", &seeded()).measure.explain, None);
        assert_eq!(plan_of(SUITE, "solo", &explaining).measure.explain, None, "one command");
    }

    /// The suite is the family: the benchmarks that compare builds share α evenly, a
    /// benchmark measured once (no `{build}`) is not in the family and keeps its level.
    #[test]
    fn compared_benchmarks_share_the_runs_confidence() {
        let suite = crate::parse(SUITE, std::path::Path::new("perflab.toml")).unwrap();
        let plans = |per_benchmark: bool| {
            let mut prepared: Vec<(&Benchmark, Plan)> = suite
                .benchmarks
                .iter()
                .map(|b| (b, plan_for(b, suite.build("new"), suite.build("old"), &seeded()).unwrap()))
                .collect();
            let family = share_confidence(&mut prepared, per_benchmark);
            let levels: Vec<f64> = prepared.iter().map(|(_, p)| p.settings.confidence).collect();
            (family, levels)
        };
        let (family, levels) = plans(false);
        assert_eq!(family, Some(Family { size: 2, confidence: 0.95, per_benchmark: 0.975 }));
        assert_eq!(levels, [0.975, 0.975, 0.95], "own and inherits compare; solo is measured once");
        let (family, levels) = plans(true);
        assert_eq!(family, Some(Family { size: 2, confidence: 0.95, per_benchmark: 0.95 }));
        assert_eq!(levels, [0.95, 0.95, 0.95]);
        // Nothing compared: no family, nothing said.
        let mut solo = vec![(&suite.benchmarks[2], plan_for(&suite.benchmarks[2], None, None, &seeded()).unwrap())];
        assert_eq!(share_confidence(&mut solo, false), None);
    }

    #[test]
    fn nothing_set_gives_the_documented_defaults() {
        let suite = "[[benchmark]]\nname = \"b\"\ncommand = \"true {build}\"\n[builds]\nold = \"old\"\nnew = \"new\"\n";
        assert_eq!(settings_for(suite, "b", &seeded()), Settings { seed: 7, ..Settings::default() });
    }

    #[test]
    fn a_benchmark_beats_the_suite_defaults() {
        let own = settings_for(SUITE, "own", &seeded());
        assert_eq!((own.min_rounds, own.max_time_s), (10, 120.0));
        assert_eq!((own.warmup_rounds, own.threshold), (3, 0.02), "unset in the benchmark: the suite's [defaults]");
        let inherits = settings_for(SUITE, "inherits", &seeded());
        assert_eq!((inherits.min_rounds, inherits.max_time_s), (8, Settings::default().max_time_s));
    }

    #[test]
    fn the_command_line_beats_benchmark_and_suite() {
        let cli =
            overriding(SettingsLayer { min_rounds: Some(12), threshold: Some(0.005), ..SettingsLayer::default() });
        let s = settings_for(SUITE, "own", &cli);
        assert_eq!((s.min_rounds, s.threshold, s.warmup_rounds, s.max_time_s), (12, 0.005, 3, 120.0));
    }

    #[test]
    fn fixed_rounds_above_the_round_limit_are_all_run() {
        let cli = overriding(SettingsLayer { rounds: Some(20_000), ..SettingsLayer::default() });
        let s = settings_for(SUITE, "inherits", &cli);
        assert_eq!((s.fixed_rounds, s.max_rounds), (Some(20_000), 20_000));
    }

    #[test]
    fn a_single_command_runs_fixed_rounds_unless_a_limit_is_set() {
        assert_eq!(settings_for(SUITE, "solo", &seeded()).fixed_rounds, Some(perflab_engine::plan::SOLO_RUNS));
        let limited = overriding(SettingsLayer { max_time: Some(5.0), ..SettingsLayer::default() });
        assert_eq!(settings_for(SUITE, "solo", &limited).fixed_rounds, None);
    }

    #[test]
    fn a_benchmark_that_prints_its_metric_compares_it_first_with_its_hooks() {
        let suite = "[builds]\nold = \"old\"\nnew = \"new\"\n[[benchmark]]\nname = \"b\"\ncommand = \"true {build}\"\n\
                     parse = \"pgbench\"\nprepare = \"echo {build}\"\n";
        let plan = plan_of(suite, "b", &seeded());
        assert_eq!(plan.primary_metric, "tps");
        assert_eq!(&plan.metrics[..3], ["tps", "latency_ms", perflab_model::metric::WALL]);
        let prepares: Vec<_> = plan.settings.hooks.iter().map(|h| h.prepare.as_deref().unwrap()).collect();
        assert_eq!(prepares, ["echo old", "echo new"], "baseline first");
        assert_eq!(plan.settings.output_parsers, ["pgbench"]);
    }

    #[test]
    fn instruction_mode_compares_counts_from_one_round_without_warm_up_or_padding() {
        let suite = "[defaults]\nmode = \"instructions\"\n[[benchmark]]\nname = \"b\"\ncommand = \"true\"\n";
        let plan = plan_of(suite, "b", &seeded());
        assert_eq!(plan.primary_metric, perflab_engine::plan::INSTRUCTION_METRICS[0]);
        assert!(!plan.metrics.iter().any(|m| m == perflab_model::metric::WALL), "{:?}", plan.metrics);
        let s = plan.settings;
        assert_eq!(
            (s.fixed_rounds, s.warmup_rounds, s.env_padding, s.mode.as_str()),
            (Some(1), 0, false, "instructions")
        );
        let cli = overriding(SettingsLayer { warmup: Some(2), ..SettingsLayer::default() });
        assert_eq!(settings_for(suite, "b", &cli).warmup_rounds, 2);
    }
}
