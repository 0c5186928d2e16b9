//! `perflab run`: every benchmark of a suite through the compare engine (against a
//! baseline build when one is given), each run committed to the history store as it
//! completes.

use crate::compare::{ExperimentArgs, Fanout, Plan};
use crate::error::{Failure, EXIT_COMMAND_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::measure::{MeasureArgs, Mode};
use crate::model::{metric, Experiment, Machine, StopReason};
use crate::render::format_value;
use crate::store::exchange::{write_json, DbArgs};
use crate::store::{current_git_commit, Meta};
use crate::suite::{self, Benchmark, Build, Suite};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;

/// Rounds per benchmark when nothing is compared and no stopping option is set:
/// with no comparison there is no verdict to stop on.
const DEFAULT_SOLO_ROUNDS: u32 = 10;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The suite file.
    #[arg(long, value_name = "FILE", default_value = suite::DEFAULT_FILE)]
    pub suite: PathBuf,
    /// Label to store these results under (a version, a commit, a build name).
    #[arg(long, value_name = "LABEL", required_unless_present = "list")]
    pub label: Option<String>,
    /// The build measured (default: the build named like --label, if any).
    #[arg(long, value_name = "BUILD")]
    pub build: Option<String>,
    /// A build to compare against in interleaved rounds (a name from [builds]).
    #[arg(long, value_name = "BUILD")]
    pub baseline: Option<String>,
    /// Only benchmarks whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub filter: Option<String>,
    /// List the benchmarks and their commands without running them.
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten, next_help_heading = "Experiment (overrides the suite file)")]
    pub experiment: ExperimentArgs,
}

/// One benchmark's result as written by `--json`.
#[derive(Debug, Serialize)]
struct RunRecord<'a> {
    benchmark: &'a str,
    label: &'a str,
    experiment: &'a Experiment,
}

pub fn main(args: RunArgs) -> Result<i32, Failure> {
    args.experiment.check()?;
    let suite = suite::load(&args.suite)?;
    let filter = match &args.filter {
        Some(re) => {
            Some(regex::Regex::new(re).map_err(|e| crate::usage!("--filter `{re}` is not a regular expression: {e}"))?)
        }
        None => None,
    };
    let benchmarks: Vec<&Benchmark> =
        suite.benchmarks.iter().filter(|b| filter.as_ref().map_or(true, |re| re.is_match(&b.name))).collect();
    if benchmarks.is_empty() {
        return Err(crate::usage!(
            "no benchmark in {} matches --filter {}",
            args.suite.display(),
            args.filter.as_deref().unwrap_or("")
        ));
    }
    let (candidate, baseline) = builds(&suite, &args)?;
    if args.list {
        for bench in &benchmarks {
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
            println!("{}\t{}", bench.name, commands.join("  vs  "));
        }
        return Ok(EXIT_OK);
    }
    let label = args.label.clone().unwrap_or_default();
    // Every command is prepared before anything runs, so a typo fails in a second.
    let mut prepared = Vec::new();
    for bench in &benchmarks {
        prepared.push((bench, plan_for(bench, candidate, baseline, &args.experiment)?));
    }

    let mut store = args.db.open()?;
    for build in [baseline, candidate].into_iter().flatten() {
        if let Some(prepare) = &build.prepare {
            eprintln!("preparing build `{}`: {prepare}", build.name);
            shell(prepare)
                .map_err(|e| Failure::CommandFailed(format!("preparing build `{}` failed: {e}", build.name)))?;
        }
    }
    let git_commit = current_git_commit();
    let machine = Machine::detect();
    let hide_progress = args.experiment.runner.no_progress || !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let interrupt = crate::interrupt::watcher();
    let mut records: Vec<(String, Experiment)> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let total = prepared.len();
    for (i, (bench, plan)) in prepared.iter().enumerate() {
        if interrupt.requested() {
            break;
        }
        eprintln!("[{}/{total}] {}", i + 1, bench.name);
        if let Some(setup) = &bench.setup {
            if let Err(e) = shell(setup) {
                eprintln!("  setup failed ({e}); skipping {}", bench.name);
                failed.push(bench.name.clone());
                continue;
            }
        }
        let meta = Meta {
            label: label.clone(),
            benchmark: bench.name.clone(),
            git_commit: git_commit.clone(),
            source: "run".into(),
        };
        let mut recorder = store.begin(&meta, &machine, &plan.settings, &plan.commands);
        let mut progress = crate::render::progress::ProgressDisplay::new(&plan.settings, hide_progress);
        let result = crate::compare::run_experiment(plan, &mut Fanout(vec![&mut progress, &mut recorder]));
        progress.finish();
        let outcome = match result {
            Ok(experiment) => {
                recorder.finish(&experiment)?;
                Ok(experiment)
            }
            Err(e) => Err(e),
        };
        if let Some(cleanup) = &bench.cleanup {
            if let Err(e) = shell(cleanup) {
                eprintln!("  cleanup failed: {e}");
            }
        }
        match outcome {
            Ok(experiment) => {
                let line = summary_line(&bench.name, &experiment, &plan.primary_metric);
                // `--json -` owns stdout.
                if args.experiment.runner.json.as_deref() == Some("-") {
                    eprintln!("{line}");
                } else {
                    println!("{line}");
                }
                let stop = experiment.stop_reason;
                records.push((bench.name.clone(), experiment));
                match stop {
                    StopReason::Interrupted => break,
                    StopReason::CommandFailed => {
                        if let Some(why) = &records.last().and_then(|(_, e)| e.failure.clone()) {
                            eprintln!("  {why}");
                        }
                        failed.push(bench.name.clone());
                    }
                    _ => {}
                }
            }
            Err(Failure::CommandFailed(message)) => {
                eprintln!("  {message}");
                failed.push(bench.name.clone());
            }
            Err(other) => return Err(other),
        }
    }
    if let Some(path) = &args.experiment.runner.json {
        let out: Vec<RunRecord> =
            records.iter().map(|(b, e)| RunRecord { benchmark: b, label: &label, experiment: e }).collect();
        write_json(path, &out)?;
    }
    eprintln!(
        "stored {} benchmark result{} as label `{}` in {}",
        records.len(),
        if records.len() == 1 { "" } else { "s" },
        label,
        store.location()
    );
    if interrupt.requested() {
        return Ok(EXIT_INTERRUPTED);
    }
    if !failed.is_empty() {
        eprintln!(
            "perflab: error: {} benchmark{} failed: {}",
            failed.len(),
            if failed.len() == 1 { "" } else { "s" },
            failed.join(", ")
        );
        return Ok(EXIT_COMMAND_FAILED);
    }
    Ok(EXIT_OK)
}

/// The measured build and the baseline build named on the command line.
fn builds<'s>(suite: &'s Suite, args: &RunArgs) -> Result<(Option<&'s Build>, Option<&'s Build>), Failure> {
    let known = || suite.builds.iter().map(|b| format!("`{}`", b.name)).collect::<Vec<_>>().join(", ");
    let find = |name: &str, what: &str| {
        suite.build(name).ok_or_else(|| {
            if suite.builds.is_empty() {
                crate::usage!(
                    "{what} `{name}` is not a build: {} defines no [builds] (to compare with a stored label, use `perflab history` or `perflab report --reference`)",
                    suite.path.display()
                )
            } else {
                crate::usage!("{what} `{name}` is not a build in {} (builds: {})", suite.path.display(), known())
            }
        })
    };
    let candidate = match &args.build {
        Some(name) => Some(find(name, "--build")?),
        None => args.label.as_deref().and_then(|l| suite.build(l)),
    };
    let baseline = match &args.baseline {
        Some(name) => Some(find(name, "--baseline")?),
        None => None,
    };
    if baseline.is_some() && candidate.is_none() && suite.benchmarks.iter().any(Benchmark::uses_build) {
        return Err(crate::usage!(
            "--baseline needs a build to compare with: pass --build or a --label naming a build"
        ));
    }
    if let (Some(b), Some(c)) = (baseline, candidate) {
        if b.name == c.name {
            return Err(crate::usage!("--baseline and the measured build are both `{}`", b.name));
        }
    }
    Ok((candidate, baseline))
}

/// The compare engine's plan for one benchmark (baseline first when given): the
/// benchmark's options over the suite defaults, under the command line's.
pub fn plan_for(
    bench: &Benchmark,
    candidate: Option<&Build>,
    baseline: Option<&Build>,
    cli: &ExperimentArgs,
) -> Result<Plan, Failure> {
    let mut o = cli.options().or(&bench.options);
    let mut texts = Vec::new();
    let mut names = Vec::new();
    // A benchmark without {build} runs the same command for every build: measure it once.
    if let Some(b) = baseline.filter(|_| bench.uses_build()) {
        texts.push(bench.command_for(Some(b))?);
        names.push(b.name.clone());
    }
    texts.push(bench.command_for(candidate)?);
    names.push(candidate.filter(|_| bench.uses_build()).map_or_else(|| bench.name.clone(), |c| c.name.clone()));
    let commands = crate::command::parse_commands(&texts, &names, o.shell.as_deref())
        .map_err(|e| crate::usage!("benchmark `{}`: {e}", bench.name))?;
    if o.shell.is_none() {
        for c in &commands {
            crate::command::resolve_program(&c.argv[0])
                .map_err(|e| crate::usage!("benchmark `{}`: {e}", bench.name))?;
        }
    }
    let mode = o.mode.unwrap_or_default();
    let solo = commands.len() == 1 && mode != Mode::Instructions;
    if solo && o.rounds.is_none() && o.max_time.is_none() && o.max_rounds.is_none() {
        o.rounds = Some(DEFAULT_SOLO_ROUNDS);
    }
    let settings = crate::compare::settings(&o, cli.seed);
    let measure = MeasureArgs { events: o.events.unwrap_or_default(), mode, ..MeasureArgs::default() };
    let requested: Vec<String> = metric::COMPARED.iter().map(|m| m.to_string()).collect();
    let (metrics, primary_metric) = crate::compare::compared_metrics(&requested, &measure)
        .map_err(|e| crate::usage!("benchmark `{}`: {e}", bench.name))?;
    Ok(Plan {
        commands,
        settings,
        primary_metric,
        metrics,
        show_output: cli.runner.show_output,
        ignore_failure: cli.ignore_failure,
        measure,
    })
}

/// Run a setup, cleanup or prepare command through `sh -c`, output passed through.
fn shell(command: &str) -> Result<(), String> {
    let status = std::process::Command::new("/bin/sh")
        .args(["-c", command])
        .stdout(std::process::Stdio::inherit())
        .status()
        .map_err(|e| format!("cannot run /bin/sh: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{command}` {status}"))
    }
}

/// `name  median [CI] (n runs)` of the primary metric and, against a baseline, the verdict.
fn summary_line(name: &str, experiment: &Experiment, primary: &str) -> String {
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
            "  {} vs {}: ×{:.3} [{:.3} – {:.3}] {}",
            c.candidate,
            c.baseline,
            c.ratio,
            c.ci_low,
            c.ci_high,
            c.verdict.as_str()
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Settings;

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
    fn plan_of(suite: &str, bench: &str, cli: &ExperimentArgs) -> Plan {
        let suite = suite::parse(suite, std::path::Path::new("perflab.toml")).unwrap();
        let bench = suite.benchmarks.iter().find(|b| b.name == bench).unwrap();
        plan_for(bench, suite.build("new"), suite.build("old"), cli).unwrap()
    }

    fn settings_for(suite: &str, bench: &str, cli: &ExperimentArgs) -> Settings {
        plan_of(suite, bench, cli).settings
    }

    fn seeded() -> ExperimentArgs {
        ExperimentArgs { seed: Some(7), ..ExperimentArgs::default() }
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
        let cli = ExperimentArgs { min_rounds: Some(12), threshold: Some(0.005), ..seeded() };
        let s = settings_for(SUITE, "own", &cli);
        assert_eq!((s.min_rounds, s.threshold, s.warmup_rounds, s.max_time_s), (12, 0.005, 3, 120.0));
    }

    #[test]
    fn fixed_rounds_above_the_round_limit_are_all_run() {
        let cli = ExperimentArgs { rounds: Some(20_000), ..seeded() };
        let s = settings_for(SUITE, "inherits", &cli);
        assert_eq!((s.fixed_rounds, s.max_rounds), (Some(20_000), 20_000));
    }

    #[test]
    fn a_single_command_runs_fixed_rounds_unless_a_limit_is_set() {
        assert_eq!(settings_for(SUITE, "solo", &seeded()).fixed_rounds, Some(DEFAULT_SOLO_ROUNDS));
        let limited = ExperimentArgs { max_time: Some(5.0), ..seeded() };
        assert_eq!(settings_for(SUITE, "solo", &limited).fixed_rounds, None);
    }

    #[test]
    fn instruction_mode_compares_counts_from_one_round_without_warm_up_or_padding() {
        let suite = "[defaults]\nmode = \"instructions\"\n[[benchmark]]\nname = \"b\"\ncommand = \"true\"\n";
        let plan = plan_of(suite, "b", &seeded());
        assert_eq!(plan.primary_metric, crate::compare::INSTRUCTION_METRICS[0]);
        assert!(!plan.metrics.iter().any(|m| m == metric::WALL), "{:?}", plan.metrics);
        let s = plan.settings;
        assert_eq!(
            (s.fixed_rounds, s.warmup_rounds, s.env_padding, s.mode.as_str()),
            (Some(1), 0, false, "instructions")
        );
        let cli =
            ExperimentArgs { runner: crate::compare::RunnerArgs { warmup: Some(2), ..Default::default() }, ..seeded() };
        assert_eq!(settings_for(suite, "b", &cli).warmup_rounds, 2);
    }
}
