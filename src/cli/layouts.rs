//! `compare --layouts N --build CMD`: every command built N times with different code
//! layouts before the first round, `{layout}` in the build command and the command
//! standing for each layout's seed; the versions are then compared across their layouts
//! (docs/suites.md, "Code layouts").

use super::compare::CompareArgs;
use crate::error::Failure;
use crate::usage;
use perflab_engine::plan::Plan;
use perflab_suite::layouts::{self as layouts, LayoutBuild};
use perflab_suite::Build;

/// `args` with each command repeated once per layout (its seed in place of `{layout}`),
/// and those layouts' builds, not yet built; `args` as they are without `--layouts`.
pub fn expand(args: &CompareArgs) -> Result<(CompareArgs, Option<Vec<LayoutBuild>>), Failure> {
    let Some(count) = args.layouts else { return Ok((args.clone(), None)) };
    if count < 2 {
        return Err(usage!("--layouts must be at least 2 (one layout per command is a plain comparison), got {count}"));
    }
    let n = args.commands.len();
    if args.reference.is_some() || !args.parameters.lists.is_empty() || !args.parameters.scans.is_empty() {
        return Err(usage!(
            "--layouts cannot be combined with --reference or -L/-P parameters: give each version as a command"
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
            "with --layouts every command must name its layout's program with {{layout}} (its seed), as --build makes it: `{c}` does not"
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
            "with --layouts, two versions named `{name}` (command {} and an earlier one): their layouts would be pooled as one version; name each with -n",
            i + 1
        ));
    }
    let base = args.experiment.seed.unwrap_or_else(rand::random);
    let mut builds = Vec::new();
    for (i, command) in args.commands.iter().enumerate() {
        let version = version_names[i].clone();
        let build = args.build.get(i).unwrap_or(&args.build[0]);
        let template = Build { name: version, value: command.clone(), prepare: Some(build.clone()) };
        builds.extend(layouts::expand_build(&template, count, base)?);
    }
    let per = count as usize;
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
            for (hook, b) in list.iter_mut().zip(&builds) {
                *hook = layouts::substitute(hook, b.seed);
            }
        }
    }
    Ok((expanded, Some(builds)))
}

/// Run every layout's build command (stderr says which), stopping at the first failure.
pub fn build(builds: &[LayoutBuild]) -> Result<(), Failure> {
    for (i, b) in builds.iter().enumerate() {
        let Some(command) = &b.build.prepare else { continue };
        eprintln!(
            "perflab: building {} ({}/{}): {}",
            perflab_render::terminal::escape(&b.build.name),
            i + 1,
            builds.len(),
            perflab_render::terminal::escape(command)
        );
        perflab_sys::command::run_shell(command, None, false)
            .map_err(|e| Failure::CommandFailed(format!("building {} failed: {e}", b.build.name)))?;
    }
    Ok(())
}

/// The plan's commands marked as the layouts they are, compared as versions; the
/// layouts' programs checked to differ (a note when they cannot be).
pub fn attach(plan: Plan, builds: &[LayoutBuild]) -> Result<Plan, Failure> {
    let mut plan = plan;
    let mut programs = Vec::new();
    for (spec, b) in plan.commands.iter_mut().zip(builds) {
        spec.parameters = perflab_model::Layouts::parameters(&b.version, b.seed);
        programs.push(perflab_sys::command::resolve_program(&spec.argv[0])?.to_string_lossy().into_owned());
    }
    if let Some(note) = layouts::check_distinct(builds, &programs)? {
        eprintln!("perflab: note: {}", perflab_render::terminal::escape(&note));
    }
    Ok(plan.with_layouts(Some(layouts::layouts_of(builds))))
}
