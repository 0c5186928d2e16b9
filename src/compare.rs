//! `perflab compare`: the experiment driver. Prepares the commands, runs randomized
//! interleaved rounds, looks at the statistics on the planned schedule, stops as soon
//! as every candidate has a verdict, and renders the result.

use crate::command::{parse_commands, resolve_program};
use crate::error::{Failure, EXIT_COMMAND_FAILED, EXIT_GATE, EXIT_INTERRUPTED, EXIT_OK};
use crate::interrupt;
use crate::measure::{build_probes, MeasureArgs, Mode, Probe};
use crate::model::{
    metric, CommandResult, CommandSpec, Comparison, Experiment, Machine, Run, Settings, StopReason, Verdict,
};
use crate::schedule::{LookSchedule, RoundPlanner};
use crate::spawn::{self, Prepared, SpawnError};
use crate::stats::{changepoint, summary};
use crate::suite::Options;
use crate::{render, usage, verdict};
use clap::Args;
use std::time::{Duration, Instant};

#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// Commands to compare; the first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "CMD")]
    pub commands: Vec<String>,
    /// Name of a command, in order (repeat for each command).
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub names: Vec<String>,
    /// Run each command through `sh -c` (or `--shell=SHELL`) instead of executing it directly.
    #[arg(long, value_name = "SHELL", num_args = 0..=1, require_equals = true, default_missing_value = "/bin/sh")]
    pub shell: Option<String>,
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    /// Confidence level of the intervals, in percent.
    #[arg(long, default_value = "95", value_name = "PCT", value_parser = parse_confidence)]
    pub confidence: f64,
    /// Metrics to compare (wall_s, cpu_s, user_s, sys_s, max_rss_kib, minor_faults, ...).
    #[arg(long = "metric", value_delimiter = ',', default_values = ["wall_s", "cpu_s", "max_rss_kib"])]
    pub metrics: Vec<String>,
    /// Do not pad the environment with a random variable each round.
    #[arg(long)]
    pub no_env_padding: bool,
    /// Exit 1 when a candidate's whole CI lies above 1 + PCT % (default 0).
    #[arg(long, value_name = "PCT", num_args = 0..=1, default_missing_value = "0", value_parser = parse_percent)]
    pub fail_if_slower: Option<f64>,
    /// Write a Markdown summary (for a PR comment; `-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<String>,
    /// Write every run as CSV, row by row as they finish (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<String>,
    #[command(flatten)]
    pub measure: crate::measure::MeasureArgs,
    #[command(flatten)]
    pub save: crate::store::exchange::SaveArgs,
}

/// The experiment-design options of `compare` and `run`, defined once so both parse,
/// check and default them alike. `None` means "not set here": the defaults are layered
/// in by [`settings`], never by clap.
#[derive(Debug, Args, Clone, Default)]
pub struct ExperimentArgs {
    /// Run exactly N measured rounds (no adaptive stopping).
    #[arg(short = 'r', long, value_name = "N")]
    pub rounds: Option<u32>,
    #[arg(long, value_name = "N",
          help = with_default("Rounds before the first look at the statistics", Settings::default().min_rounds))]
    pub min_rounds: Option<u32>,
    #[arg(long, value_name = "N",
          help = with_default("Stop after this many measured rounds even without a verdict",
                              Settings::default().max_rounds))]
    pub max_rounds: Option<u32>,
    #[arg(long, value_name = "DURATION", value_parser = parse_duration,
          help = with_default("Stop after this much time even without a verdict (e.g. 60, 90s, 5m)",
                              format!("{}s", Settings::default().max_time_s)))]
    pub max_time: Option<f64>,
    #[arg(long, value_name = "PCT", value_parser = parse_percent,
          help = with_default("Equivalence margin in percent: a CI inside ±PCT is `equivalent`",
                              Settings::default().threshold * 100.0))]
    pub threshold: Option<f64>,
    /// Seed of the random round order and padding (default: random, recorded in the output).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep going when a command exits non-zero (its runs still count).
    #[arg(long)]
    pub ignore_failure: bool,
    #[command(flatten)]
    pub runner: RunnerArgs,
}

/// How each run is executed and reported; shared by `compare`, `run` and `stat`.
#[derive(Debug, Args, Clone, Default)]
pub struct RunnerArgs {
    #[arg(short = 'w', long, value_name = "N",
          help = with_default("Warm-up runs of each command, not counted",
                              format!("{}; 0 in instruction mode", Settings::default().warmup_rounds)))]
    pub warmup: Option<u32>,
    /// Kill a run (its whole process group) after this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<f64>,
    /// Let the commands' stdout and stderr through instead of discarding them.
    #[arg(long)]
    pub show_output: bool,
    /// Write the result as JSON (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Do not show the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// Help text ending in the default as clap shows it; the options are `Option`s (so a
/// suite can tell "not set" from "set to the default"), which clap cannot show a default for.
fn with_default(help: &str, default: impl std::fmt::Display) -> String {
    format!("{help} [default: {default}]")
}

impl ExperimentArgs {
    /// What the command line sets, to lay over a suite's options.
    pub fn options(&self) -> Options {
        Options {
            rounds: self.rounds,
            warmup: self.runner.warmup,
            min_rounds: self.min_rounds,
            max_rounds: self.max_rounds,
            max_time: self.max_time,
            timeout: self.runner.timeout,
            threshold: self.threshold,
            ..Options::default()
        }
    }

    /// Values no experiment can run with, as one-line usage errors.
    pub fn check(&self) -> Result<(), Failure> {
        if self.rounds == Some(0) {
            return Err(usage!("--rounds must be at least 1"));
        }
        if self.min_rounds.is_some_and(|n| n < 2) {
            return Err(usage!("--min-rounds must be at least 2"));
        }
        Ok(())
    }
}

/// The settings for layered options: whatever no layer sets comes from
/// `Settings::default()`, except that instruction mode's deterministic counts need one
/// round, no warm-up and a fixed environment (counts move with the environment's size).
pub fn settings(options: &Options, seed: Option<u64>) -> Settings {
    let d = Settings::default();
    let mode = options.mode.unwrap_or_default();
    let instructions = mode == Mode::Instructions;
    let fixed_rounds = options.rounds.or(instructions.then_some(1));
    Settings {
        seed: seed.unwrap_or_else(rand::random),
        warmup_rounds: options.warmup.unwrap_or(if instructions { 0 } else { d.warmup_rounds }),
        min_rounds: options.min_rounds.unwrap_or(d.min_rounds),
        fixed_rounds,
        // Exactly N rounds means N, whatever the round limit.
        max_rounds: options.max_rounds.unwrap_or(d.max_rounds).max(fixed_rounds.unwrap_or(0)),
        max_time_s: options.max_time.unwrap_or(d.max_time_s),
        threshold: options.threshold.unwrap_or(d.threshold),
        env_padding: d.env_padding && !instructions,
        mode: mode.as_str().to_string(),
        timeout_s: options.timeout,
        ..d
    }
}

/// Parse "60", "60s", "1.5m", "250ms", "1h" into seconds.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("`{text}` is not a duration (e.g. 30, 90s, 5m, 250ms)"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("`{text}` must be a positive duration"));
    }
    Ok(v * scale)
}

/// Parse "1", "1%", "2.5" (percent) into a fraction.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let v: f64 =
        text.trim().trim_end_matches('%').trim().parse().map_err(|_| format!("`{text}` is not a percentage"))?;
    if !v.is_finite() || !(0.0..1000.0).contains(&v) {
        return Err(format!("`{text}` must be a percentage from 0 to 1000"));
    }
    Ok(v / 100.0)
}

fn parse_confidence(text: &str) -> Result<f64, String> {
    let v = parse_percent(text)?;
    if !(0.5..1.0).contains(&v) {
        return Err(format!("confidence `{text}` must be between 50 and 100 (exclusive)"));
    }
    Ok(v)
}

/// Everything an experiment needs to run; built from the command line or a suite.
#[derive(Debug, Clone)]
pub struct Plan {
    pub commands: Vec<CommandSpec>,
    pub settings: Settings,
    /// Metrics to compare, in display order; the first is the primary one.
    pub metrics: Vec<String>,
    /// The metric whose verdicts decide when to stop.
    pub primary_metric: String,
    pub show_output: bool,
    pub ignore_failure: bool,
    pub measure: MeasureArgs,
}

/// Where the experiment stands after a round (for progress displays).
#[derive(Debug, Clone)]
pub struct Progress {
    pub rounds: u32,
    pub warmup: bool,
    pub elapsed: Duration,
    /// Primary-metric comparisons of the latest look, if any.
    pub latest: Vec<Comparison>,
}

/// Callbacks while an experiment runs; they are called between runs only, so the
/// harness stays idle while a command runs.
pub trait Observer {
    /// A measured (not warm-up) run finished; `command` indexes `Plan::commands`.
    fn run_finished(&mut self, _command: usize, _run: &Run) -> anyhow::Result<()> {
        Ok(())
    }
    fn round_finished(&mut self, _progress: &Progress) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

/// Forwards every callback to several observers.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Fanout<'_> {
    fn run_finished(&mut self, command: usize, run: &Run) -> anyhow::Result<()> {
        self.0.iter_mut().try_for_each(|o| o.run_finished(command, run))
    }
    fn round_finished(&mut self, progress: &Progress) {
        self.0.iter_mut().for_each(|o| o.round_finished(progress));
    }
}

struct Subject {
    prepared: Prepared,
    probes: Vec<Box<dyn Probe>>,
}

impl Subject {
    fn new(spec: &CommandSpec, plan: &Plan) -> Result<Subject, Failure> {
        let probes = build_probes(&plan.measure)?;
        let mut argv = spec.argv.clone();
        for probe in &probes {
            argv = probe.wrap(argv).map_err(|e| usage!("{}: {e:#}", spec.name))?;
        }
        let program = resolve_program(&argv[0])?;
        let prepared = Prepared::new(&program, &argv, plan.show_output).map_err(|e| usage!("{}: {e}", spec.name))?;
        Ok(Subject { prepared, probes })
    }

    /// Run once; the run's round and position are filled in by the caller.
    fn run_once(&mut self, env: &spawn::Environment, timeout: Option<Duration>) -> Result<Run, SpawnError> {
        let watcher = interrupt::watcher();
        let child = if self.probes.iter().any(|p| p.needs_gate()) {
            let probes = &mut self.probes;
            let mut gate = |pid: libc::pid_t| -> anyhow::Result<()> {
                for probe in probes.iter_mut().filter(|p| p.needs_gate()) {
                    probe.attach(pid)?;
                }
                Ok(())
            };
            spawn::start(&self.prepared, env, Some(&mut gate))?
        } else {
            spawn::start(&self.prepared, env, None)?
        };
        let outcome = child.wait(timeout, watcher)?;
        let ru = &outcome.rusage;
        let mut run = Run {
            wall_s: outcome.wall.as_secs_f64(),
            user_s: spawn::seconds(ru.ru_utime),
            sys_s: spawn::seconds(ru.ru_stime),
            // Linux reports ru_maxrss in KiB.
            max_rss_kib: ru.ru_maxrss.max(0) as u64,
            minor_faults: ru.ru_minflt.max(0) as u64,
            major_faults: ru.ru_majflt.max(0) as u64,
            voluntary_cs: ru.ru_nvcsw.max(0) as u64,
            involuntary_cs: ru.ru_nivcsw.max(0) as u64,
            exit: outcome.exit,
            ..Default::default()
        };
        for probe in &mut self.probes {
            probe.collect(&mut run).map_err(SpawnError::Probe)?;
        }
        Ok(run)
    }
}

/// Run the experiment described by `plan`. Returns the experiment also when it stopped
/// early (interrupt, failing command): callers save what was measured and pick the
/// exit code from `stop_reason`.
pub fn run_experiment(plan: &Plan, observer: &mut dyn Observer) -> Result<Experiment, Failure> {
    let watcher = interrupt::watcher();
    let mut subjects = plan.commands.iter().map(|spec| Subject::new(spec, plan)).collect::<Result<Vec<_>, _>>()?;
    let settings = &plan.settings;
    let mut experiment = Experiment {
        started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        machine: Machine::detect(),
        settings: settings.clone(),
        commands: plan
            .commands
            .iter()
            .map(|c| CommandResult {
                name: c.name.clone(),
                argv: c.argv.clone(),
                command_line: c.command_line.clone(),
                runs: Vec::new(),
                summary: Default::default(),
            })
            .collect(),
        environment: crate::measure::environment_facts(&plan.measure, &plan.commands),
        ..Experiment::default()
    };
    let timeout = settings.timeout_s.map(Duration::from_secs_f64);
    let mut planner = RoundPlanner::new(settings.seed, subjects.len(), settings.env_padding);
    let mut looks = match settings.fixed_rounds {
        Some(n) => LookSchedule::fixed(settings.confidence, n),
        None => LookSchedule::sequential(settings.confidence, settings.min_rounds),
    };
    // The round count and level of the last look, reused when the experiment ends on it.
    let mut last_look: Option<(u32, f64)> = None;
    let started = Instant::now();
    let mut warmups_left = settings.warmup_rounds;
    let mut measured: u32 = 0;
    let mut env = spawn::Environment::inherited(crate::schedule::PAD_VARIABLE);

    let stop_reason = 'rounds: loop {
        if watcher.requested() {
            break StopReason::Interrupted;
        }
        let warmup = warmups_left > 0;
        let round = planner.next_round();
        env.pad(round.pad_bytes);
        for (position, &index) in round.order.iter().enumerate() {
            let mut run = match subjects[index].run_once(&env, timeout) {
                Ok(run) => run,
                Err(SpawnError::Interrupted) => break 'rounds StopReason::Interrupted,
                Err(err) if measured == 0 && warmups_left == settings.warmup_rounds => {
                    return Err(usage!("{}: {err}", plan.commands[index].name))
                }
                Err(err) => {
                    experiment.failure = Some(format!("{}: {err}", plan.commands[index].name));
                    break 'rounds StopReason::CommandFailed;
                }
            };
            run.round = measured;
            run.position = position as u32;
            run.env_pad_bytes = round.pad_bytes.unwrap_or(0) as u32;
            let failure = (!run.exit.success() && !plan.ignore_failure).then(|| {
                let stderr = subjects[index].prepared.stderr_tail(5);
                let mut message = format!("`{}` {}", plan.commands[index].name, run.exit.describe());
                if !stderr.is_empty() {
                    message.push_str(&format!("; its last stderr lines:\n{stderr}"));
                }
                message
            });
            if !warmup {
                observer.run_finished(index, &run).map_err(Failure::Other)?;
                experiment.commands[index].runs.push(run);
            }
            if let Some(message) = failure {
                experiment.failure = Some(message);
                break 'rounds StopReason::CommandFailed;
            }
        }
        if warmup {
            warmups_left -= 1;
            observer.round_finished(&Progress { rounds: 0, warmup: true, elapsed: started.elapsed(), latest: vec![] });
            continue;
        }
        measured += 1;
        experiment.rounds = measured;
        let mut latest = Vec::new();
        if looks.is_look(measured) {
            if let Some(level) = looks.take_look(measured) {
                last_look = Some((measured, level));
                latest = primary_comparisons(plan, &experiment, level);
                if latest.iter().all(|c| c.verdict.is_decided())
                    && !latest.is_empty()
                    && settings.fixed_rounds.is_none()
                {
                    break StopReason::Decided;
                }
            }
        }
        observer.round_finished(&Progress { rounds: measured, warmup: false, elapsed: started.elapsed(), latest });
        if settings.fixed_rounds.is_some_and(|n| measured >= n) {
            break StopReason::FixedRounds;
        }
        if measured >= settings.max_rounds {
            break StopReason::MaxRounds;
        }
        if settings.fixed_rounds.is_none() && started.elapsed().as_secs_f64() >= settings.max_time_s {
            break StopReason::MaxTime;
        }
    };
    experiment.stop_reason = stop_reason;
    experiment.duration_s = started.elapsed().as_secs_f64();
    let level = match last_look {
        Some((rounds, level)) if rounds == measured => level,
        _ => looks.final_look(),
    };
    finish(plan, &mut experiment, level);
    Ok(experiment)
}

/// Candidates are compared against the first command; the family-wise error rate is
/// split evenly over them (Bonferroni), so the level per comparison is 1 − α_look/m.
fn per_comparison_level(plan: &Plan, look_level: f64) -> f64 {
    let candidates = plan.commands.len().saturating_sub(1).max(1) as f64;
    1.0 - (1.0 - look_level) / candidates
}

fn primary_comparisons(plan: &Plan, experiment: &Experiment, look_level: f64) -> Vec<Comparison> {
    let level = per_comparison_level(plan, look_level);
    let base = &experiment.commands[0];
    experiment.commands[1..]
        .iter()
        .map(|cand| {
            verdict::compare(base, cand, &plan.primary_metric, level, plan.settings.confidence, plan.settings.threshold)
                .unwrap_or_else(|| undecided(base, cand, &plan.primary_metric, plan.settings.confidence, level))
        })
        .collect()
}

fn undecided(base: &CommandResult, cand: &CommandResult, metric: &str, confidence: f64, level: f64) -> Comparison {
    Comparison {
        baseline: base.name.clone(),
        candidate: cand.name.clone(),
        metric: metric.to_string(),
        ratio: f64::NAN,
        ci_low: 0.0,
        ci_high: f64::INFINITY,
        confidence,
        look_confidence: level,
        p_value: 1.0,
        verdict: Verdict::Inconclusive,
        below_threshold: false,
        n: 0,
        flags: vec!["no paired rounds".into()],
    }
}

/// Summaries, every metric's comparisons at the final level, and warnings.
fn finish(plan: &Plan, experiment: &mut Experiment, look_level: f64) {
    let level = per_comparison_level(plan, look_level);
    for command in &mut experiment.commands {
        for name in metric::ALL.iter().map(|s| s.to_string()).chain(plan.metrics.iter().cloned()) {
            let values: Vec<f64> = command.runs.iter().filter_map(|r| r.metric(&name)).collect();
            if !values.is_empty() {
                command.summary.insert(name, summary::summarize(&values));
            }
        }
    }
    let counters = crate::measure::multiplicity::corrected_metrics(plan, experiment);
    let secondary_level =
        crate::measure::multiplicity::secondary_confidence(look_level, plan.commands.len() - 1, counters.len());
    if let Some((base, candidates)) = experiment.commands.split_first() {
        for cand in candidates {
            for name in &plan.metrics {
                let level = if counters.contains(name) { secondary_level } else { level };
                if let Some(c) =
                    verdict::compare(base, cand, name, level, plan.settings.confidence, plan.settings.threshold)
                {
                    experiment.comparisons.push(c);
                }
            }
        }
    }
    crate::measure::crosscheck::cross_check(&mut experiment.comparisons);
    experiment.warnings.extend(warnings(plan, experiment));
}

/// Process creation and exec cost ~0.1 ms (a static binary) to ~0.5 ms (a dynamic one)
/// here; runs of at least 20× that keep it under 5 % of what is measured.
const SHORT_RUN_S: f64 = 0.010;
/// Paired run-to-run spread (robust, of ln ratios) above which results need many rounds.
const NOISY_SPREAD: f64 = 0.05;

fn warnings(plan: &Plan, experiment: &Experiment) -> Vec<String> {
    let mut out = Vec::new();
    if plan.measure.mode == Mode::Instructions {
        return out;
    }
    for command in &experiment.commands {
        let walls: Vec<f64> = command.runs.iter().map(|r| r.wall_s).collect();
        if walls.is_empty() {
            continue;
        }
        let median = summary::median(&walls);
        if median < SHORT_RUN_S {
            out.push(format!(
                "`{}` runs for only {}: process creation and exec (~0.1–0.5 ms) are a sizeable part of that; measure a longer workload (≥ {})",
                command.name,
                render::format_seconds(median),
                render::format_seconds(SHORT_RUN_S)
            ));
        }
        let shifts = changepoint::detect(&walls, &changepoint::ChangePointConfig::default());
        if let Some(largest) = shifts.iter().max_by(|a, b| a.ratio.ln().abs().total_cmp(&b.ratio.ln().abs())) {
            out.push(format!(
                "`{}` was not stable: its wall time shifted {} time{} during the measurement (largest {:+.1} % at run {}, median {} → {}); pairing within rounds absorbs slow drift, but a quieter machine narrows the interval",
                command.name,
                shifts.len(),
                if shifts.len() == 1 { "" } else { "s" },
                (largest.ratio - 1.0) * 100.0,
                largest.index + 1,
                render::format_seconds(largest.before),
                render::format_seconds(largest.after)
            ));
        }
    }
    if let Some((base, candidates)) = experiment.commands.split_first() {
        for cand in candidates {
            let (b, c) = verdict::pairs(base, cand, metric::WALL);
            let d: Vec<f64> =
                b.iter().zip(&c).filter(|(b, c)| **b > 0.0 && **c > 0.0).map(|(b, c)| (c / b).ln()).collect();
            if d.len() >= 6 {
                let spread = summary::mad_scaled(&d);
                if spread > NOISY_SPREAD {
                    out.push(format!(
                        "noisy: `{}` vs `{}` varies by {:.1} % from round to round (robust σ of the paired ratio); expect wide intervals — quiet the machine or lengthen the runs",
                        cand.name,
                        base.name,
                        spread * 100.0
                    ));
                }
            }
        }
    }
    out
}

/// Instruction-mode metrics, in display order (named by the cachegrind probe).
pub use crate::measure::cachegrind::COMPARED as INSTRUCTION_METRICS;

/// The metrics to compare and the primary one (whose verdict decides when to stop):
/// in instruction mode the cachegrind counts; otherwise `requested` plus any counters.
pub fn compared_metrics(requested: &[String], measure: &MeasureArgs) -> Result<(Vec<String>, String), Failure> {
    if measure.mode == Mode::Instructions {
        let metrics: Vec<String> = INSTRUCTION_METRICS.iter().map(|s| s.to_string()).collect();
        let primary = metrics[0].clone();
        return Ok((metrics, primary));
    }
    for m in requested {
        if !metric::ALL.contains(&m.as_str()) {
            return Err(usage!("unknown metric `{m}`; choose from {}", metric::ALL.join(", ")));
        }
    }
    let mut metrics = requested.to_vec();
    let counters = crate::measure::metric_names(measure)?;
    metrics.extend(counters.into_iter().filter(|e| !metrics.contains(e)).collect::<Vec<_>>());
    let primary = metrics.first().cloned().unwrap_or_else(|| metric::WALL.to_string());
    Ok((metrics, primary))
}

/// Turn the command line into a plan (everything checked before anything runs).
pub fn plan_from_args(args: &CompareArgs, min_commands: usize) -> Result<Plan, Failure> {
    if args.commands.len() < min_commands {
        return Err(usage!("give at least {min_commands} commands to compare (the first is the baseline)"));
    }
    let commands = parse_commands(&args.commands, &args.names, args.shell.as_deref())?;
    for spec in &commands {
        resolve_program(&spec.argv[0])?;
    }
    args.experiment.check()?;
    let (metrics, primary) = compared_metrics(&args.metrics, &args.measure)?;
    let options = Options { mode: Some(args.measure.mode), ..args.experiment.options() };
    let defaults = settings(&options, args.experiment.seed);
    let settings =
        Settings { confidence: args.confidence, env_padding: defaults.env_padding && !args.no_env_padding, ..defaults };
    Ok(Plan {
        commands,
        settings,
        metrics,
        primary_metric: primary,
        show_output: args.experiment.runner.show_output,
        ignore_failure: args.experiment.ignore_failure,
        measure: args.measure.clone(),
    })
}

/// `perflab compare`.
pub fn main(args: CompareArgs) -> Result<i32, Failure> {
    let plan = plan_from_args(&args, 2)?;
    let stdout_taken =
        [&args.experiment.runner.json, &args.markdown, &args.csv].iter().any(|o| o.as_deref() == Some("-"));
    let mut csv = match &args.csv {
        Some(path) => Some(render::csv::CsvWriter::create(
            path,
            plan.commands.iter().map(|c| c.name.clone()).collect(),
            plan.metrics.iter().filter(|m| !metric::ALL.contains(&m.as_str())).cloned().collect(),
        )?),
        None => None,
    };
    let hidden = args.experiment.runner.no_progress || !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = render::progress::ProgressDisplay::new(&plan.settings, hidden);
    let mut store = args.save.open()?;
    let mut recorder = args.save.recorder(store.as_mut(), &plan);
    let experiment = {
        let mut observers: Vec<&mut dyn Observer> = vec![&mut progress];
        observers.extend(recorder.as_mut().map(|r| r as &mut dyn Observer));
        if let Some(csv) = csv.as_mut() {
            observers.push(csv);
        }
        run_experiment(&plan, &mut Fanout(observers))
    };
    progress.finish();
    let experiment = experiment?;
    args.save.finish(recorder, &experiment)?;
    write_outputs(&args, &plan, &experiment, stdout_taken)?;
    Ok(exit_code(&args, &plan, &experiment))
}

fn write_outputs(args: &CompareArgs, plan: &Plan, e: &Experiment, stdout_taken: bool) -> Result<(), Failure> {
    let text = render::terminal::render(e, &plan.primary_metric);
    if stdout_taken {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if let Some(path) = &args.experiment.runner.json {
        render::json::write(e, path)?;
    }
    if let Some(path) = &args.markdown {
        let mut out = render::open_output(path)?;
        std::io::Write::write_all(&mut out, render::markdown::render(e, &plan.primary_metric).as_bytes())
            .and_then(|_| std::io::Write::flush(&mut out))
            .map_err(|err| usage!("cannot write `{path}`: {err}"))?;
    }
    Ok(())
}

/// 130 interrupted, 3 a command failed, 1 the gate tripped, 0 otherwise.
fn exit_code(args: &CompareArgs, plan: &Plan, e: &Experiment) -> i32 {
    match e.stop_reason {
        StopReason::Interrupted => {
            eprintln!("perflab: interrupted after {} rounds; the results above cover them", e.rounds);
            return EXIT_INTERRUPTED;
        }
        StopReason::CommandFailed => {
            eprintln!("perflab: error: {}", e.failure.as_deref().unwrap_or("a command failed"));
            return EXIT_COMMAND_FAILED;
        }
        _ => {}
    }
    if let Some(pct) = args.fail_if_slower {
        let tripped: Vec<&Comparison> =
            e.comparisons.iter().filter(|c| c.metric == plan.primary_metric && c.ci_low > 1.0 + pct).collect();
        if !tripped.is_empty() {
            for c in tripped {
                eprintln!(
                    "perflab: gate: `{}` is slower than `{}` by more than {} % (CI [{:.4}, {:.4}])",
                    c.candidate,
                    c.baseline,
                    verdict::format_percent(pct * 100.0),
                    c.ci_low,
                    c.ci_high
                );
            }
            return EXIT_GATE;
        }
    }
    EXIT_OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    fn args(flags: &[&str]) -> CompareArgs {
        let argv = ["perflab", "compare"].iter().chain(flags).chain(&["true", "true 1"]);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Compare(args) => args,
            _ => unreachable!("parsed as compare"),
        }
    }

    fn settings_of(flags: &[&str]) -> Result<Settings, String> {
        plan_from_args(&args(flags), 2).map(|p| p.settings).map_err(|e| e.to_string())
    }

    #[test]
    fn nothing_set_gives_settings_default() {
        assert_eq!(settings_of(&["--seed", "7"]).unwrap(), Settings { seed: 7, ..Settings::default() });
    }

    #[test]
    fn the_command_line_beats_the_defaults() {
        let s =
            settings_of(&["-w", "3", "--min-rounds", "9", "--max-time", "2m", "--threshold", "2%", "--timeout", "5s"])
                .unwrap();
        assert_eq!((s.warmup_rounds, s.min_rounds, s.max_time_s, s.threshold), (3, 9, 120.0, 0.02));
        assert_eq!((s.timeout_s, s.max_rounds, s.fixed_rounds), (Some(5.0), Settings::default().max_rounds, None));
    }

    #[test]
    fn instruction_mode_runs_once_without_warm_up_or_padding_unless_asked() {
        let s = settings_of(&["--mode", "instructions"]).unwrap();
        assert_eq!((s.fixed_rounds, s.warmup_rounds, s.env_padding), (Some(1), 0, false));
        let s = settings_of(&["--mode", "instructions", "-r", "3", "-w", "1"]).unwrap();
        assert_eq!((s.fixed_rounds, s.warmup_rounds), (Some(3), 1));
    }

    #[test]
    fn values_no_experiment_can_run_with_are_usage_errors() {
        assert!(settings_of(&["--rounds", "0"]).unwrap_err().contains("--rounds must be at least 1"));
        assert!(settings_of(&["--min-rounds", "1"]).unwrap_err().contains("--min-rounds must be at least 2"));
    }

    #[test]
    fn help_shows_the_defaults_of_settings_default() {
        let mut cli = crate::cli::Cli::command();
        for name in ["compare", "run"] {
            let help = cli.find_subcommand_mut(name).unwrap().render_long_help().to_string();
            for expected in [
                "Rounds before the first look at the statistics [default: 6]",
                "even without a verdict [default: 10000]",
                "(e.g. 60, 90s, 5m) [default: 60s]",
                "is `equivalent` [default: 1]",
                "not counted [default: 1; 0 in instruction mode]",
            ] {
                assert!(help.contains(expected), "`perflab {name} --help` lacks {expected:?}:\n{help}");
            }
        }
    }
}
