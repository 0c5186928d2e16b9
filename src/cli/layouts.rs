//! `compare --layouts N --build CMD` once its commands are expanded (in `compare`): every
//! layout built before the first round, and the plan's commands marked as the layouts of
//! their versions, compared across them (docs/suites.md, "Code layouts").

use crate::error::Failure;
use perflab_engine::plan::Plan;
use perflab_suite::layouts::{self as layouts, LayoutBuild};

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
