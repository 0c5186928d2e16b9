//! `perflab compare`: the command line of a comparison (hyperfine's spellings too),
//! turned into a plan for the experiment engine; observers for progress, CSV rows and the
//! store; then the outputs (`render::export`) and the outcome.

use super::args::SaveArgs;
pub use super::compare_args::CompareArgs;
use super::compare_args::{args_for_builds, expand_templates, layout_base, layout_templates, planned, LayoutCount};
use crate::error::Failure;
use crate::usage;
use perflab_engine::experiment::{self as experiment, Fanout, Observer};
use perflab_engine::plan::Plan;
use perflab_model::metric::Better;
use perflab_model::units::format_percent;
use perflab_model::{metric, Comparison, Experiment, Verdict, Warning, WarningKind};
use perflab_render::export::Text;
use perflab_render::table::{self, Stream};
use perflab_render::terminal::Terminal;
use perflab_render::{self as render, color};
use perflab_store::{current_git_commit, default_label, Lenient, Meta, Recorder, Store};

/// `perflab compare`: plan, run with progress, CSV rows and the store watching; then the
/// stored experiment, every file output, and last the terminal (see `render::export`).
pub fn main(args: CompareArgs) -> Result<(), Failure> {
    let templates = layout_templates(&args)?;
    let cache = super::layout_cache::LayoutCache::open(args.no_layout_cache);
    if let (Some(templates), Some(LayoutCount::Auto)) = (&templates, args.layouts) {
        return auto_main(&args, templates, &cache);
    }
    let original = args.clone();
    let count = match args.layouts {
        Some(LayoutCount::Fixed(n)) => n,
        _ => 1,
    };
    let layout_builds = match &templates {
        Some(templates) => Some(expand_templates(templates, count, layout_base(&args))?),
        None => None,
    };
    let args = match (&layout_builds, &templates) {
        (Some(builds), Some(templates)) => {
            let mut expanded = args_for_builds(&args, builds, count as usize);
            if args.layouts.is_none() {
                // One layout each: the versions keep their own names.
                expanded.names = templates.iter().map(|t| t.name.clone()).collect();
            }
            expanded
        }
        _ => args,
    };
    if let Some(builds) = &layout_builds {
        super::layouts::build(builds, &cache)?;
    }
    let (plan, shell_reason) = planned(&args)?;
    let plan = match &layout_builds {
        Some(builds) if args.layouts.is_some() => super::layouts::attach(plan, builds)?,
        Some(builds) => super::layouts::mark(plan, builds),
        None => plan,
    };
    if let Some(reason) = shell_reason {
        eprintln!("perflab: note: {}", render::terminal::escape(&reason.note()));
    }
    for spec in plan.commands.iter().filter(|c| c.name.ends_with(" #1") && c.name != c.command_line) {
        let copies = plan.commands.iter().filter(|c| c.command_line == spec.command_line).count();
        eprintln!(
            "perflab: `{}` is given {copies} times (an A/A check): its copies are named #1 to #{copies}",
            render::terminal::escape(&spec.command_line)
        );
    }
    let style = args.export.style;
    style.apply_colors();
    let mut outputs = args.export.outputs(args.experiment.runner.json.as_deref(), |e: &Experiment| e)?;
    if let Some(path) = &args.explain_flamegraph {
        outputs.add("--explain-flamegraph", path, Text(explain_flame_graph))?;
    }
    let mut csv = match &args.csv {
        Some(path) => {
            outputs.add_streaming("--csv", path)?;
            let (out, file) = crate::output::open_csv(path)?;
            Some(render::csv::CsvWriter::new(
                out,
                file,
                plan.commands.iter().map(|c| c.name.clone()).collect(),
                (!plan.learns_metrics_from_output()).then(|| counter_columns(&plan.metrics)),
            )?)
        }
        None => None,
    };
    let mut progress =
        crate::output::progress::ProgressDisplay::new(style.hides_progress(args.experiment.runner.progress_hidden()));
    let mut store = if args.save.save { Some(args.save.db.open()?) } else { None };
    let mut recorder = store.as_mut().map(|store| Lenient::new(begin_saving(store, &args.save, &plan)));
    let experiment = {
        let mut observers: Vec<&mut dyn Observer> = vec![&mut progress];
        observers.extend(recorder.as_mut().map(|r| r as &mut dyn Observer));
        if let Some(csv) = csv.as_mut() {
            observers.push(csv);
        }
        experiment::run(&plan, &mut Fanout(observers))
    };
    let mut experiment = experiment?;
    experiment.warnings.extend(threshold_warning(&args, &plan));
    experiment.warnings.extend(layout_warnings(&original, templates.as_deref(), &cache, &experiment)?);
    // Stored first, then the files, then the terminal: each on its own, so a failure of
    // one (a full disk, a closed stdout) loses none of the others.
    let saved = recorder.map(|recorder| finish_saving(recorder, &experiment));
    if let Some(Err(failure)) = &saved {
        // Said in the results too (the terminal, --json): they are all there is of it.
        experiment.warnings.push(Warning::new(
            WarningKind::Other,
            format!("not stored in the history: {}", crate::error::chain_of(failure)),
        ));
    }
    let csv_written = csv.map(render::csv::CsvWriter::finish);
    let written = write_outputs(&args, &outputs, &style, &experiment);
    saved.transpose()?;
    csv_written.transpose()?;
    written?;
    super::outcome(&experiment, if plan.commands.len() == 1 { "runs" } else { "rounds" })?;
    gate(args.fail_if_slower, &experiment)
}

/// `--explain-flamegraph`: the differential flame graph of the sampled runs (a picture
/// saying so when no call stacks were sampled).
fn explain_flame_graph(e: &Experiment) -> String {
    e.comparisons.iter().find_map(|c| perflab_render::explain::flame_graph(c.explanation.as_ref()?)).unwrap_or_else(
        || perflab_render::profile::flame::empty_svg("perflab compare --explain", "no call stacks were sampled"),
    )
}

/// The CSV's columns beyond the run's own fields: every metric kept in `Run::counters`.
fn counter_columns(metrics: &[String]) -> Vec<String> {
    let counters = metrics.iter().filter(|m| !metric::kind(m).is_harness()).cloned();
    metric::CONTENTION.iter().map(|m| m.to_string()).chain(counters).collect()
}

/// A warning when `--threshold` is finer than this machine resolved within `--max-time`
/// in its latest calibration (`perflab doctor CMD`), from the history database if there
/// is one; never creates one.
fn threshold_warning(args: &CompareArgs, plan: &Plan) -> Option<Warning> {
    if plan.settings.fixed_rounds.is_some() {
        return None;
    }
    let mut store = args.save.db.open_existing().ok()?;
    let calibration = store.latest_calibration(&perflab_sys::machine::detect()).ok()??;
    let message =
        perflab_engine::doctor::threshold_warning(&calibration, plan.settings.threshold, plan.settings.max_time_s)?;
    Some(Warning::new(WarningKind::Noisy, message))
}

/// Every file output, and the terminal's report (or, without one, the warnings alone).
fn write_outputs(
    args: &CompareArgs,
    outputs: &crate::output::Outputs<'_, Experiment>,
    style: &super::args::OutputStyle,
    experiment: &Experiment,
) -> Result<(), perflab_render::OutputError> {
    let stream = if outputs.stdout_taken() { Stream::Stderr } else { Stream::Stdout };
    let terminal = Terminal { style: args.export.layout(table::width(stream)) };
    let written = outputs.write(experiment, style.shows_report().then_some(&terminal as _));
    if !style.shows_report() {
        for w in &experiment.warnings {
            eprintln!("{}", color::yellow(&format!("warning: {}", render::escape_line(&w.message))));
        }
    }
    written
}

/// What is known about layout for a comparison of one build per version: the spreads
/// stored on this machine (earlier layout experiments); with `--build` and none stored for
/// the candidates' program, a pilot of two layouts per version says it; without
/// `--build`, the general caveat with the recipe.
fn layout_warnings(
    args: &CompareArgs,
    templates: Option<&[perflab_suite::Build]>,
    cache: &super::layout_cache::LayoutCache,
    experiment: &Experiment,
) -> Result<Vec<Warning>, Failure> {
    if experiment.layouts.is_some() {
        return Ok(Vec::new());
    }
    let known = match args.save.db.open_existing() {
        Ok(mut store) => store.layout_spreads(&perflab_sys::machine::detect()).unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    if let Some(templates) = templates.filter(|t| t.len() >= 2) {
        let kind = |c: &perflab_model::CommandResult| {
            c.argv.first().map(|p| perflab_model::LayoutSpread::program_kind(p)).unwrap_or_default()
        };
        let stored = experiment.commands.iter().skip(1).all(|c| known.iter().any(|k| k.program == kind(c)));
        let interrupted = matches!(
            experiment.stop_reason,
            perflab_model::StopReason::Interrupted | perflab_model::StopReason::CommandFailed
        );
        if !stored && !interrupted {
            return super::layouts::pilot(args, templates, cache, experiment);
        }
    }
    Ok(perflab_engine::analysis::layouts::spread_warnings(experiment, &known))
}

/// `--layouts auto`: pairs of layouts until the verdict is decided or the budget ends,
/// then the outputs and the outcome as for any comparison.
fn auto_main(
    args: &CompareArgs,
    templates: &[perflab_suite::Build],
    cache: &super::layout_cache::LayoutCache,
) -> Result<(), Failure> {
    if args.commands.len() != 2 {
        return Err(usage!(
            "--layouts auto compares two versions: give a baseline and one candidate (--layouts N takes more), got {}",
            args.commands.len()
        ));
    }
    if args.explain || args.explain_alloc.is_some() || args.csv.is_some() {
        return Err(usage!(
            "--layouts auto cannot be combined with --explain, --explain-alloc or --csv (use --layouts N)"
        ));
    }
    if args.experiment.rounds.is_some() {
        return Err(usage!("--layouts auto chooses each pair's rounds itself: drop --rounds (or use --layouts N)"));
    }
    let style = args.export.style;
    style.apply_colors();
    let outputs = args.export.outputs(args.experiment.runner.json.as_deref(), |e: &Experiment| e)?;
    let experiment = super::layouts::auto(args, templates, cache)?;
    let saved = args.save.save.then(|| -> Result<(), Failure> {
        let mut store = args.save.db.open()?;
        let git_commit = current_git_commit();
        let meta = Meta {
            label: args.save.label.clone().unwrap_or_else(|| default_label(git_commit.as_deref())),
            benchmark: args
                .save
                .bench
                .clone()
                .unwrap_or_else(|| templates.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(" vs ")),
            git_commit,
            source: "compare".into(),
        };
        store.save(&meta, &experiment)?;
        eprintln!(
            "saved `{}` as label `{}`",
            render::terminal::escape(&meta.benchmark),
            render::terminal::escape(&meta.label)
        );
        Ok(())
    });
    let written = write_outputs(args, &outputs, &style, &experiment);
    saved.transpose()?;
    written?;
    super::outcome(&experiment, "rounds")?;
    gate(args.fail_if_slower, &experiment)
}

/// A recorder committing each run of `plan` as it completes (`--save`).
fn begin_saving<'s>(store: &'s mut Store, save: &SaveArgs, plan: &Plan) -> Recorder<'s> {
    let git_commit = current_git_commit();
    let meta = Meta {
        label: save.label.clone().unwrap_or_else(|| default_label(git_commit.as_deref())),
        benchmark: save
            .bench
            .clone()
            .unwrap_or_else(|| plan.commands.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(" vs ")),
        git_commit,
        source: "compare".into(),
    };
    store.begin(&meta, &perflab_sys::machine::detect(), &plan.settings, &plan.commands)
}

/// Store the summaries and verdicts too, and say where on stderr.
fn finish_saving(recorder: Lenient, experiment: &Experiment) -> Result<(), Failure> {
    let message = format!(
        "saved `{}` as label `{}` in {}",
        render::terminal::escape(&recorder.meta().benchmark),
        render::terminal::escape(&recorder.meta().label),
        render::terminal::escape(recorder.location())
    );
    recorder.finish(experiment)?;
    eprintln!("{message}");
    Ok(())
}

/// `--fail-if-slower`: a candidate whose whole interval lies beyond 1 + PCT on the worse
/// side trips it (above 1 + PCT for a time, below 1 − PCT for a higher-is-better metric).
/// It fails closed: a candidate without an interval on the gated metric (not comparable,
/// too few rounds, 0 in every run of both) trips it too, with the reason — a gate that
/// cannot look never passes.
fn gate(fail_if_slower: Option<f64>, e: &Experiment) -> Result<(), Failure> {
    let Some(pct) = fail_if_slower else { return Ok(()) };
    let worse = |c: &Comparison| match (c.better, c.bounds()) {
        (Better::Lower, (low, _)) => low > 1.0 + pct,
        (Better::Higher, (_, high)) => high < 1.0 - pct,
    };
    let primary = &e.primary_metric;
    let mut reasons = Vec::new();
    // With layouts the versions are the candidates, each across its layouts.
    let candidates: Vec<&str> = match &e.layouts {
        Some(layouts) => layouts.versions.iter().skip(1).map(|v| v.name.as_str()).collect(),
        None => e.commands.iter().skip(1).map(|c| c.name.as_str()).collect(),
    };
    for candidate in candidates {
        let found = e.comparisons.iter().find(|c| &c.metric == primary && c.candidate == candidate);
        match found {
            None => reasons.push(format!("cannot judge `{candidate}` on `{primary}`: no comparison")),
            Some(c) if c.verdict == Verdict::NotComparable => reasons.push(format!(
                "cannot judge `{}` on `{primary}`: {}",
                c.candidate,
                c.flags.first().map_or("not comparable", String::as_str)
            )),
            // 0 in every run of both is "equal" for a counter that never fired, but a
            // gate given nothing measured has nothing to pass.
            Some(c) if c.flags.iter().any(|f| f == perflab_engine::analysis::verdict::ALL_ZERO) => {
                reasons.push(format!(
                    "cannot judge `{}` on `{primary}`: it was 0 in every run of both, so nothing was measured",
                    c.candidate
                ))
            }
            Some(c) if !c.ci_high.is_finite() => reasons.push(format!(
                "cannot judge `{}` on `{primary}`: too few rounds for a {} % interval ({} paired)",
                c.candidate,
                perflab_model::units::format_level(c.confidence),
                c.n
            )),
            Some(c) if worse(c) => reasons.push(format!(
                "`{}` is worse than `{}` in {} by more than {} % (CI [{:.4}, {:.4}])",
                c.candidate,
                c.baseline,
                c.metric,
                format_percent(pct * 100.0),
                c.ci_low,
                c.ci_high
            )),
            Some(_) => {}
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Failure::GateTripped(reasons.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::compare_args::plan_from_args;
    use clap::{CommandFactory, Parser};
    use perflab_model::Settings;

    fn args(flags: &[&str]) -> CompareArgs {
        let argv = ["perflab", "compare"].iter().chain(flags).chain(&["true", "true 1"]);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command.unwrap() {
            crate::cli::Command::Compare(args) => *args,
            _ => unreachable!("parsed as compare"),
        }
    }

    fn settings_of(flags: &[&str]) -> Result<Settings, String> {
        plan_from_args(&args(flags)).map(|p| p.settings).map_err(|e| e.to_string())
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
    fn hyperfine_spellings_mean_the_same() {
        let s = settings_of(&["--runs", "12", "--export-json", "/dev/null", "-N", "-i"]).unwrap();
        assert_eq!(s.fixed_rounds, Some(12));
        let a = args(&["--runs", "12", "--export-json", "x.json", "-N", "-i", "--command-name", "a"]);
        assert_eq!(a.export.export_json.as_deref(), Some("x.json"));
        assert!(a.experiment.ignore_failure && a.shell.no_shell && a.shell.shell.is_none());
        assert_eq!(a.names, ["a"]);
    }

    #[test]
    fn instruction_mode_runs_once_without_warm_up_or_padding_unless_asked() {
        let s = settings_of(&["--mode", "instructions"]).unwrap();
        assert_eq!((s.fixed_rounds, s.warmup_rounds, s.env_padding), (Some(1), 0, false));
        let s = settings_of(&["--mode", "instructions", "-r", "3", "-w", "1"]).unwrap();
        assert_eq!((s.fixed_rounds, s.warmup_rounds), (Some(3), 1));
    }

    #[test]
    fn max_time_binds_fixed_rounds_only_when_given() {
        let s = settings_of(&["--rounds", "2147483648", "--max-time", "2s"]).unwrap();
        assert_eq!((s.fixed_rounds, s.max_time_s, s.max_time_bounds_fixed_rounds), (Some(1 << 31), 2.0, true));
        assert!(!settings_of(&["--rounds", "20"]).unwrap().max_time_bounds_fixed_rounds);
    }

    #[test]
    fn values_no_experiment_can_run_with_are_usage_errors() {
        assert!(settings_of(&["--rounds", "0"]).unwrap_err().contains("--rounds must be at least 1"));
        assert!(settings_of(&["--min-rounds", "1"]).unwrap_err().contains("--min-rounds must be at least 2"));
        let huge = crate::cli::Cli::try_parse_from(["perflab", "compare", "--timeout", "1e19", "true", "true"]);
        assert!(huge.unwrap_err().to_string().contains("longer than the longest accepted duration"));
    }

    #[test]
    fn help_shows_the_defaults_of_settings_default() {
        let mut cli = crate::cli::Cli::command();
        for name in ["compare", "run"] {
            let help = cli.find_subcommand_mut(name).unwrap().render_long_help().to_string();
            // Wrapped to the terminal's width: compare the words.
            let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
            for expected in [
                "Rounds before the first look at the statistics (hyperfine's --min-runs) [default: 6]",
                "even without a verdict (hyperfine's --max-runs) [default: 10000]",
                "(e.g. 60, 90s, 5m) [default: 60s]",
                "is `equivalent` [default: 1]",
                "not counted [default: 1; 0 in instruction mode]",
            ] {
                assert!(help.contains(expected), "`perflab {name} --help` lacks {expected:?}:\n{help}");
            }
        }
    }
}
