//! `perflab compare`'s arguments and the plan they make: the command line (hyperfine's
//! spellings too) checked and turned into a plan for the experiment engine, and the
//! layouts' templates and seeds that `--build` asks for. Read by `compare` and by
//! `layouts` (which plans the pilot and `--layouts auto`'s pairs from them).

use super::args::{
    confidence, percent, ExperimentArgs, ExportArgs, HookArgs, MeasureArgs, OutputArgs, ParameterArgs, SaveArgs,
    ShellArgs,
};
use crate::error::Failure;
use crate::usage;
use clap::Args;
use perflab_engine::measure::{allocations::Allocations, Explain};
use perflab_engine::plan::{self as plan, OutputSink, Plan, PlanRequest};
use perflab_model::{Hooks, Settings};
use perflab_sys::command::{expand_parameters, substitute, ShellReason};
use std::collections::BTreeMap;

#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// Commands to compare; the first is the baseline. The same command may be given
    /// twice (an A/A check): identical commands are named `#1`, `#2`, ... One command
    /// alone is measured like `perflab stat` does (10 runs unless told otherwise).
    #[arg(required = true, num_args = 1.., value_name = "CMD")]
    pub commands: Vec<String>,
    /// Name of a command, in order (repeat for each command).
    #[arg(short = 'n', long = "name", visible_alias = "command-name", value_name = "NAME")]
    pub names: Vec<String>,
    /// A baseline to run before the commands and compare them with (hyperfine's
    /// --reference): the same as giving it first.
    #[arg(long, value_name = "CMD")]
    pub reference: Option<String>,
    /// The name of --reference.
    #[arg(long, value_name = "NAME", requires = "reference")]
    pub reference_name: Option<String>,
    #[command(flatten)]
    pub shell: ShellArgs,
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    /// Confidence level of the intervals, in percent.
    #[arg(long, default_value = "95", value_name = "PCT", value_parser = confidence)]
    pub confidence: f64,
    /// Metrics to compare; the first decides when to stop (wall_s, cpu_s, uncontended_s,
    /// runq_wait_s, max_rss_kib, minor_faults, …, or one the commands print). Default: what
    /// the commands print, then wall_s, cpu_s, max_rss_kib, deciding on wall_s — or on
    /// uncontended_s when the machine is busy. (No short form: -m is hyperfine's --min-runs.)
    #[arg(long = "metric", value_delimiter = ',', value_name = "METRICS")]
    pub metrics: Vec<String>,
    /// Where the commands' output goes: null (the default), pipe (read and thrown away,
    /// for programs that notice /dev/null), inherit (as --show-output), or a FILE (every
    /// run's output appended). Once for all commands or once per command.
    #[arg(long = "output", value_name = "WHERE", conflicts_with = "show_output")]
    pub output_to: Vec<String>,
    /// Do not pad the environment with a random variable each round.
    #[arg(long)]
    pub no_env_padding: bool,
    /// Exit 1 when a candidate's whole CI lies above 1 + PCT % (default 0).
    #[arg(long, value_name = "PCT", num_args = 0..=1, require_equals = true, default_missing_value = "0", value_parser = percent)]
    pub fail_if_slower: Option<f64>,
    /// With parameters as factors (-L/-P, two or more): also compare every pair of
    /// builds, each with its interval (Bonferroni over the pairs). The main effect of
    /// each factor is always shown.
    #[arg(long)]
    pub pairwise: bool,
    /// Build every command N times with different code layouts before the first round
    /// (--build, `{layout}` standing for each layout's seed) and compare the versions across
    /// their layouts, with intervals that count how much layouts of the same source differ;
    /// `auto`: add layouts a pair at a time until the verdict is decided or --max-time
    /// (builds included) or --max-layouts ends (docs/suites.md, "Code layouts").
    #[arg(long, value_name = "N|auto", requires = "build", value_parser = layout_count)]
    pub layouts: Option<LayoutCount>,
    /// With --layouts auto: the most layouts of each version (the layouts budget).
    #[arg(long, value_name = "N", requires = "layouts",
          help = format!("With --layouts auto: the most layouts of each version, the layouts budget [default: {}]",
                         perflab_engine::layouts_auto::DEFAULT_MAX_LAYOUTS))]
    pub max_layouts: Option<usize>,
    /// The shell command building one layout of a command's program, `{layout}` its seed
    /// (lld/mold `--shuffle-sections`, `-falign-functions`, link order); once for all
    /// commands or once per command. The commands name the program with `{layout}` too.
    /// Without --layouts: one layout each is compared, and a short pilot of two layouts
    /// each says how much layout moves the program when no spread of it is stored.
    #[arg(long = "build", value_name = "CMD")]
    pub build: Vec<String>,
    /// Build every layout afresh instead of taking it from the layout cache
    /// ($PERFLAB_LAYOUT_CACHE, else ~/.cache/perflab/layouts).
    #[arg(long)]
    pub no_layout_cache: bool,
    #[command(flatten)]
    pub export: ExportArgs,
    /// Write every run as CSV, row by row as they finish (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<String>,
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Explain the comparison function by function: every measured run is also sampled
    /// (no extra runs), and each function's time per run gets a ratio with an interval, a
    /// verdict and its contribution to the change; with --mode instructions, cachegrind's
    /// exact per-function counts.
    #[arg(long)]
    pub explain: bool,
    /// The event --explain samples (any -e name; cpu-clock needs no PMU).
    #[arg(long, value_name = "EVENT", default_value = "cpu-clock")]
    pub explain_event: String,
    /// Explain by allocations instead of time: every run is also watched by uprobes on
    /// the malloc family (as `profile --alloc`), and each call site's bytes requested
    /// (`=calls`: calls; `=live`: bytes still allocated at exit) per run gets a ratio
    /// with an interval, a verdict and its contribution. Every run of both commands
    /// carries the probes, so their times include a trap per call.
    #[arg(long, value_name = "WEIGHT", num_args = 0..=1, require_equals = true, default_missing_value = "bytes",
          conflicts_with_all = ["explain_event", "explain_frequency"])]
    pub explain_alloc: Option<String>,
    /// With --explain-alloc: also probe a custom allocator, its size in argument ARG
    /// (from 1; default 1), e.g. `postgres:palloc`; repeatable.
    #[arg(long, value_name = "OBJECT:FUNCTION[=ARG]", requires = "explain_alloc")]
    pub explain_alloc_fn: Vec<String>,
    /// With --explain-alloc: a custom release function, the block in argument ARG
    /// (default 1); repeatable.
    #[arg(long, value_name = "OBJECT:FUNCTION[=ARG]", requires = "explain_alloc")]
    pub explain_free_fn: Vec<String>,
    /// Write the explanation's differential flame graph (SVG; the first candidate's) to FILE.
    #[arg(long, value_name = "FILE")]
    pub explain_flamegraph: Option<String>,
    /// Samples per second of CPU time for --explain.
    #[arg(long, value_name = "HZ", default_value_t = perflab_engine::measure::sampling::DEFAULT_FREQUENCY_HZ)]
    pub explain_frequency: u64,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub hooks: HookArgs,
    #[command(flatten)]
    pub parameters: ParameterArgs,
    #[command(flatten)]
    pub save: SaveArgs,
}

/// How many layouts `--layouts` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutCount {
    /// `--layouts N`: N layouts of each version, all run in every round.
    Fixed(u32),
    /// `--layouts auto`: as many as the verdict needs, within the budget.
    Auto,
}

fn layout_count(text: &str) -> Result<LayoutCount, String> {
    if text == "auto" {
        return Ok(LayoutCount::Auto);
    }
    text.parse().map(LayoutCount::Fixed).map_err(|_| format!("expected a number of layouts or `auto`, got `{text}`"))
}

/// The seeds' base of the layouts when `--seed` is not given: fixed, so that the same
/// commit gets the same layouts and the layout cache serves them to the next comparison.
const DEFAULT_LAYOUT_BASE: u64 = 1;

/// Turn the command line into a plan (everything checked before anything runs).
pub fn plan_from_args(args: &CompareArgs) -> Result<Plan, Failure> {
    planned(args).map(|(plan, _)| plan)
}

/// The plan, and why its commands run through a shell nobody asked for (for a note).
pub(super) fn planned(args: &CompareArgs) -> Result<(Plan, Option<ShellReason>), Failure> {
    if args.names.len() > args.commands.len() {
        return Err(usage!("{} --name given for {} commands", args.names.len(), args.commands.len()));
    }
    // Every command (its name and hooks alike) once per combination of parameters.
    let parameters = args.parameters.parameters()?;
    let expanded = expand_parameters(&args.commands, &parameters)?;
    let design = plan::factorial_design(args.commands.len(), &parameters, &expanded, args.pairwise);
    if args.pairwise && design.is_none() {
        return Err(usage!(
            "--pairwise compares the builds of a design: one command with two or more parameters (-L/-P) of two or more values"
        ));
    }
    let mut texts: Vec<String> = expanded.iter().map(|(i, c)| substitute(&args.commands[*i], c)).collect();
    let mut names: Vec<String> = expanded
        .iter()
        .take_while(|(i, _)| *i < args.names.len())
        .map(|(i, c)| substitute(&args.names[*i], c))
        .collect();
    let given = args.hooks.per_command(args.commands.len())?;
    let mut hooks: Vec<Hooks> = if given.is_empty() {
        Vec::new()
    } else {
        expanded.iter().map(|(i, c)| given[*i].map(|text| substitute(text, c))).collect()
    };
    let mut parameters: Vec<BTreeMap<String, String>> =
        expanded.iter().map(|(_, c)| c.iter().cloned().collect()).collect();
    let mut sinks: Vec<OutputSink> = match args.output_to.len() {
        0 => Vec::new(),
        1 => vec![OutputSink::parse(&args.output_to[0]); texts.len()],
        n if n == args.commands.len() => {
            expanded.iter().map(|(i, c)| OutputSink::parse(&substitute(&args.output_to[*i], c))).collect()
        }
        n => {
            return Err(usage!(
                "--output is given {n} times for {} commands: give it once, or once per command",
                args.commands.len()
            ))
        }
    };
    if !sinks.is_empty() && (!args.output.output_metrics.is_empty() || !args.output.parse.is_empty()) {
        return Err(usage!("--output cannot send away what --output-metric or --parse read"));
    }
    if let Some(reference) = &args.reference {
        texts.insert(0, reference.clone());
        parameters.insert(0, BTreeMap::new());
        if !sinks.is_empty() {
            // Given once, it is everybody's; given per command, the reference's goes to /dev/null.
            let shared = if args.output_to.len() == 1 { sinks[0].clone() } else { OutputSink::Null };
            sinks.insert(0, shared);
        }
        // Named commands stay named: the reference takes its own name, or its text.
        if !names.is_empty() || args.reference_name.is_some() {
            names.insert(0, args.reference_name.clone().unwrap_or_else(|| reference.clone()));
        }
        if !hooks.is_empty() {
            // A hook given once is everybody's; given per command, the reference has none.
            let once = [&args.hooks.prepare, &args.hooks.conclude, &args.hooks.setup, &args.hooks.cleanup]
                .iter()
                .all(|v| v.len() <= 1);
            let shared = if once { args.hooks.per_command(1)?.into_iter().next() } else { None };
            hooks.insert(0, shared.unwrap_or_default());
        }
    }
    if texts.len() == 1 && args.fail_if_slower.is_some() {
        return Err(usage!("--fail-if-slower needs a second command to compare with"));
    }
    let options = plan::SettingsLayer {
        mode: Some(args.measure.mode),
        input: args.hooks.input.clone(),
        ..args.output.options()?.or(&args.experiment.options())
    };
    let mut measure = args.measure.options(&options);
    if let Some(weight) = &args.explain_alloc {
        let weight =
            weight.parse::<perflab_profile::alloc::view::AllocView>().map_err(|e| usage!("--explain-alloc: {e}"))?;
        let mut custom = Vec::new();
        for (specs, free) in [(&args.explain_alloc_fn, false), (&args.explain_free_fn, true)] {
            for spec in specs {
                custom.push(perflab_profile::alloc::Custom::parse(spec, free).map_err(|e| usage!("{e}"))?);
            }
        }
        measure.explain = Some(Explain::Allocations(Allocations { weight, custom, libc: true }));
    } else if args.explain_flamegraph.is_some() && !args.explain {
        return Err(usage!("--explain-flamegraph draws an explanation: add --explain or --explain-alloc"));
    } else if args.explain {
        if args.explain_frequency == 0 || args.explain_frequency > 100_000 {
            return Err(usage!("--explain-frequency must be between 1 and 100000 Hz, got {}", args.explain_frequency));
        }
        measure.explain = Some(Explain::Samples(perflab_engine::measure::sampling::Sampling::new(
            &args.explain_event,
            args.explain_frequency,
        )));
    }
    let request = PlanRequest {
        names,
        parameters,
        hooks,
        options,
        seed: args.experiment.seed,
        measure,
        metrics: args.metrics.clone(),
        show_output: args.experiment.runner.show_output,
        keep_children: args.experiment.runner.keep_children,
        ignore_failure: args.experiment.ignore_failure,
        output_sinks: sinks,
        design,
        ..PlanRequest::new(texts, args.shell.shell()?)
    };
    Ok(request.build_with(|defaults| Settings {
        confidence: args.confidence,
        env_padding: defaults.env_padding && !args.no_env_padding,
        budget_s: args.experiment.budget,
        estimator: match args.experiment.estimator {
            Some(crate::cli::args::EstimatorChoice::Fixed(e)) => Some(e),
            _ => None,
        },
        estimator_by_shape: !matches!(args.experiment.estimator, Some(crate::cli::args::EstimatorChoice::Fixed(_))),
        ..defaults
    })?)
}

/// The layout seeds' base: `--seed`, else [`DEFAULT_LAYOUT_BASE`].
pub(super) fn layout_base(args: &CompareArgs) -> u64 {
    args.experiment.seed.unwrap_or(DEFAULT_LAYOUT_BASE)
}

/// Each command as the template of its version's layouts (`{layout}` not yet replaced;
/// its `--build` as the prepare command), checked; None without `--build`.
pub(super) fn layout_templates(args: &CompareArgs) -> Result<Option<Vec<perflab_suite::Build>>, Failure> {
    if args.build.is_empty() {
        return Ok(None);
    }
    if let Some(LayoutCount::Fixed(count)) = args.layouts {
        if count < 2 {
            return Err(usage!(
                "--layouts must be at least 2 (one layout per command is a plain comparison), got {count}"
            ));
        }
    }
    if args.max_layouts.is_some() && args.layouts != Some(LayoutCount::Auto) {
        return Err(usage!("--max-layouts is the budget of --layouts auto: with --layouts N the layouts are N"));
    }
    if args.max_layouts.is_some_and(|m| m < 2) {
        return Err(usage!("--max-layouts must be at least 2, got {}", args.max_layouts.unwrap_or(0)));
    }
    let n = args.commands.len();
    if args.reference.is_some() || !args.parameters.lists.is_empty() || !args.parameters.scans.is_empty() {
        return Err(usage!(
            "--build cannot be combined with --reference or -L/-P parameters: give each version as a command"
        ));
    }
    if args.build.len() != 1 && args.build.len() != n {
        return Err(usage!(
            "--build is given {} times for {n} commands: give it once, or once per command",
            args.build.len()
        ));
    }
    if let Some(c) = args.commands.iter().find(|c| !c.contains("{layout}")) {
        return Err(usage!(
            "with --build every command must name its layout's program with {{layout}} (its seed), as --build makes it: `{c}` does not"
        ));
    }
    let version_names: Vec<String> = args
        .commands
        .iter()
        .enumerate()
        .map(|(i, c)| args.names.get(i).cloned().unwrap_or_else(|| c.clone()))
        .collect();
    if let Some((i, name)) = version_names.iter().enumerate().find(|(i, n)| version_names[..*i].contains(n)) {
        return Err(usage!(
            "with --build, two versions named `{name}` (command {} and an earlier one): their layouts would be pooled as one version; name each with -n",
            i + 1
        ));
    }
    Ok(Some(
        args.commands
            .iter()
            .enumerate()
            .map(|(i, command)| perflab_suite::Build {
                name: version_names[i].clone(),
                value: command.clone(),
                prepare: Some(args.build.get(i).unwrap_or(&args.build[0]).clone()),
            })
            .collect(),
    ))
}

/// `count` layouts of each version's template (the baseline's first), seeded from `base`.
pub(super) fn expand_templates(
    templates: &[perflab_suite::Build],
    count: u32,
    base: u64,
) -> Result<Vec<perflab_suite::layouts::LayoutBuild>, Failure> {
    // Not `expand_versions`: one layout each (a plain build comparison) is allowed here.
    let mut out = Vec::new();
    for t in templates {
        out.extend(perflab_suite::layouts::expand_build(t, count, base)?);
    }
    Ok(out)
}

/// `args` with each command repeated once per layout of `builds` (`per` a version, its
/// seed in place of `{layout}`), named after its layout, hooks likewise.
pub(super) fn args_for_builds(
    args: &CompareArgs,
    builds: &[perflab_suite::layouts::LayoutBuild],
    per: usize,
) -> CompareArgs {
    let n = args.commands.len();
    let repeat = |values: &[String]| -> Vec<String> {
        if values.len() == n && n > 1 {
            values.iter().flat_map(|v| std::iter::repeat_n(v.clone(), per)).collect()
        } else {
            values.to_vec()
        }
    };
    let mut expanded = args.clone();
    expanded.commands = builds.iter().map(|b| b.build.value.clone()).collect();
    expanded.names = builds.iter().map(|b| b.build.name.clone()).collect();
    expanded.output_to = repeat(&args.output_to);
    let hooks = &mut expanded.hooks;
    hooks.prepare = repeat(&args.hooks.prepare);
    hooks.conclude = repeat(&args.hooks.conclude);
    hooks.setup = repeat(&args.hooks.setup);
    hooks.cleanup = repeat(&args.hooks.cleanup);
    for list in [&mut hooks.prepare, &mut hooks.conclude, &mut hooks.setup, &mut hooks.cleanup] {
        if list.len() == builds.len() {
            for (hook, b) in list.iter_mut().zip(builds) {
                *hook = perflab_suite::layouts::substitute(hook, b.seed);
            }
        } else if list.len() == 1 && builds.len() > 1 {
            // One hook for every command: each layout's seed in its own copy.
            let hook = list[0].clone();
            *list = builds.iter().map(|b| perflab_suite::layouts::substitute(&hook, b.seed)).collect();
        }
    }
    expanded
}
