//! `compare --build CMD` once its commands are expanded (in `compare`): every layout built
//! (or taken from the layout cache) before it is measured; with `--layouts N` the plan's
//! commands marked as the layouts of their versions; `--layouts auto`'s pairs; and the
//! pilot of two layouts per version that a plain build comparison gets (docs/suites.md,
//! "Code layouts").

use super::compare_args::{args_for_builds, expand_templates, layout_base, planned, CompareArgs, LayoutCount};
use super::layout_cache::{LayoutCache, ProgramPattern};
use crate::error::Failure;
use perflab_engine::experiment::{self, Quiet};
use perflab_engine::layouts_auto::{self, AutoBudget, PairRun, PairRunner};
use perflab_engine::plan::Plan;
use perflab_model::{Experiment, Settings, Warning};
use perflab_render::terminal::escape;
use perflab_suite::layouts::{self as layouts, LayoutBuild};
use perflab_suite::Build;
use std::path::PathBuf;
use std::time::Instant;

/// Rounds of the pilot of a plain build comparison (two layouts of each version).
pub const PILOT_ROUNDS: u32 = 10;

/// What building some layouts cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct Built {
    /// Seconds spent in build commands.
    pub seconds: f64,
    /// Layouts copied from the cache instead.
    pub cached: usize,
}

/// The program file a layout's command runs (its first word), when it names one.
fn program_of(b: &LayoutBuild) -> Option<PathBuf> {
    let words = shell_words::split(&b.build.value).ok()?;
    let first = words.first()?;
    first.contains('/').then(|| PathBuf::from(first))
}

/// Only a program whose path carries the seed is this layout's own file to keep (cache).
fn own_program(b: &LayoutBuild) -> Option<PathBuf> {
    program_of(b).filter(|p| p.to_string_lossy().contains(&b.seed.to_string()))
}

/// The cache's patterns of `builds`' own programs (layout programs a comparison left
/// behind do not change the keys).
fn patterns_of(builds: &[LayoutBuild]) -> Vec<ProgramPattern> {
    builds.iter().filter_map(|b| ProgramPattern::of(&own_program(b)?, b.seed)).collect()
}

/// Build layout `b` (number `i` of `total`, for the message), or copy it from `cache`
/// when its build inputs were built before.
fn build_one(
    b: &LayoutBuild,
    (i, total): (usize, usize),
    cache: &LayoutCache,
    patterns: &[ProgramPattern],
) -> Result<Built, Failure> {
    let mut built = Built::default();
    let Some(command) = &b.build.prepare else { return Ok(built) };
    let program = own_program(b);
    // No key without a cache: it reads the repositories (git) and hashes every input.
    let key = program.as_ref().filter(|_| cache.enabled()).map(|p| cache.key(command, p, patterns));
    if let (Some(key), Some(program)) = (&key, &program) {
        if cache.restore(key, program) {
            built.cached = 1;
            return Ok(built);
        }
    }
    eprintln!("perflab: building {} ({}/{}): {}", escape(&b.build.name), i + 1, total, escape(command));
    let started = Instant::now();
    perflab_sys::command::run_shell(command, None, false)
        .map_err(|e| Failure::CommandFailed(format!("building {} failed: {e}", b.build.name)))?;
    built.seconds = started.elapsed().as_secs_f64();
    if let (Some(key), Some(program)) = (&key, &program) {
        if program.is_file() {
            cache.store(key, program);
        }
    }
    Ok(built)
}

/// Said once the builds are done: how many layouts the cache served.
fn say_cached(built: &Built, total: usize, cache: &LayoutCache) {
    if built.cached > 0 {
        eprintln!(
            "perflab: {} of {} layouts from the layout cache ({}; --no-layout-cache builds them afresh)",
            built.cached,
            total,
            escape(&cache.dir().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default())
        );
    }
}

/// Run every layout's build command (stderr says which), stopping at the first failure;
/// a layout whose build inputs were built before is copied from `cache` instead.
pub fn build(builds: &[LayoutBuild], cache: &LayoutCache) -> Result<Built, Failure> {
    let mut built = Built::default();
    let patterns = patterns_of(builds);
    for (i, b) in builds.iter().enumerate() {
        let one = build_one(b, (i, builds.len()), cache, &patterns)?;
        built.seconds += one.seconds;
        built.cached += one.cached;
    }
    say_cached(&built, builds.len(), cache);
    Ok(built)
}

/// Whether a pair's two layouts are built at once: when this process may use two CPUs
/// or more (affinity and cgroup quota included), the two links take about the time of
/// one. Nothing is measured while they build, so they disturb no run.
pub fn builds_concurrently() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

/// `builds` (a pair's two layouts) built at the same time, each started in the order
/// given; the seconds are the wall time until the last is done, and a failure is the
/// first in `builds`' order (both are waited for).
pub fn build_at_once(builds: &[LayoutBuild], cache: &LayoutCache) -> Result<Built, Failure> {
    let patterns = patterns_of(builds);
    let started = Instant::now();
    let results: Vec<Result<Built, Failure>> = std::thread::scope(|scope| {
        let handles: Vec<_> = builds
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let patterns = &patterns;
                scope.spawn(move || build_one(b, (i, builds.len()), cache, patterns))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Err(Failure::CommandFailed("a layout build's thread panicked".into())))
            })
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut built = Built::default();
    let mut ran = false;
    for one in results {
        let one = one?;
        built.cached += one.cached;
        ran |= one.seconds > 0.0;
    }
    // The builds overlapped: their wall time, not the sum of theirs (a pair all from the
    // cache costs no build time, as sequentially).
    built.seconds = if ran { elapsed } else { 0.0 };
    say_cached(&built, builds.len(), cache);
    Ok(built)
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
        eprintln!("perflab: note: {}", escape(&note));
    }
    Ok(plan.with_layouts(Some(layouts::layouts_of(builds))))
}

/// The plan's commands marked with their version and layout seed, compared as commands
/// (one layout each: a plain build comparison).
pub fn mark(plan: Plan, builds: &[LayoutBuild]) -> Plan {
    let mut plan = plan;
    for (spec, b) in plan.commands.iter_mut().zip(builds) {
        spec.parameters = perflab_model::Layouts::parameters(&b.version, b.seed);
    }
    plan
}

/// A plain build comparison's first answer about layout: two layouts of each version (the
/// one compared and one more, both from the cache when built before) measured in
/// [`PILOT_ROUNDS`] rounds, and what their spread says of `experiment`'s difference.
pub fn pilot(
    args: &CompareArgs,
    templates: &[Build],
    cache: &LayoutCache,
    experiment: &Experiment,
) -> Result<Vec<Warning>, Failure> {
    let builds = expand_templates(templates, 2, layout_base(args))?;
    let mut pilot_args = args_for_builds(args, &builds, 2);
    pilot_args.layouts = Some(LayoutCount::Fixed(2));
    pilot_args.experiment.rounds = Some(PILOT_ROUNDS);
    pilot_args.experiment.max_time = None;
    pilot_args.experiment.budget = None;
    pilot_args.fail_if_slower = None;
    eprintln!(
        "perflab: no layout spread of this program is stored: a pilot of 2 layouts of each version, {PILOT_ROUNDS} rounds"
    );
    build(&builds, cache)?;
    let (plan, _) = planned(&pilot_args)?;
    let plan = attach(plan, &builds)?;
    let measured = experiment::run(&plan, &mut Quiet)?;
    Ok(perflab_engine::analysis::layouts::pilot_warnings(experiment, &measured))
}

/// The real pairs of `--layouts auto`: layout `index` of both versions built (or taken
/// from the cache), then measured in their own interleaved rounds.
struct Pairs<'a> {
    args: &'a CompareArgs,
    templates: &'a [Build],
    cache: &'a LayoutCache,
    base: u64,
    started: Instant,
    budget: AutoBudget,
    quiet: bool,
    first_programs: Vec<PathBuf>,
    /// A pair's two layouts built at once ([`builds_concurrently`]).
    concurrent: bool,
}

impl PairRunner for Pairs<'_> {
    type Error = Failure;

    fn run_pair(&mut self, index: usize, rounds: u32, warm_up: bool) -> Result<PairRun, Failure> {
        let started = Instant::now();
        let mut builds = Vec::new();
        for t in self.templates {
            let all = layouts::expand_build(t, index as u32 + 1, self.base)?;
            builds.push(all[index].clone());
        }
        // Which version is built first, a fair coin per pair: the program built last ran
        // slower (+0.6 % in the mean of 540 same-source rounds; 36 of 60 identical layouts
        // linked one after the other, docs/statistics.md), and with the baseline always
        // first that pushed every pair's ratio the same way.
        let order_seed = layouts::seed(layout_base(self.args), "layout pair build order", index as u32);
        // Built at once when two CPUs or more are there (each started in that order).
        let ordered =
            if order_seed.is_multiple_of(2) { builds.clone() } else { vec![builds[1].clone(), builds[0].clone()] };
        let built = if self.concurrent { build_at_once(&ordered, self.cache)? } else { build(&ordered, self.cache)? };
        let mut pair = args_for_builds(self.args, &builds, 1);
        pair.layouts = None;
        pair.experiment.rounds = Some(rounds);
        // Each pair its own order of runs. With one --seed for every pair, every pair's
        // rounds ran in the same order, and at one round a pair an effect of the position
        // in the round (the first run after the builds) pushed every pair's ratio the same
        // way: two same-source pairs of seed 503 called `slower` at +7.7 % (all 8 pairs
        // above 1). Drawn per pair, it is a fair coin in each pair's ratio: symmetric noise.
        if let Some(seed) = self.args.experiment.seed {
            pair.experiment.seed = Some(layouts::seed(seed, "layout pair order", index as u32));
        }
        // Only the first pair warms up, unless --warmup was given (layouts_auto's doc).
        if !warm_up && pair.experiment.runner.warmup.is_none() {
            pair.experiment.runner.warmup = Some(0);
        }
        pair.experiment.max_time = None;
        pair.experiment.budget = None;
        let (plan, _) = planned(&pair)?;
        let plan = mark(plan, &builds);
        // The second layout of a version must be another program than its first.
        let programs: Vec<PathBuf> = plan
            .commands
            .iter()
            .map(|c| perflab_sys::command::resolve_program(&c.argv[0]))
            .collect::<Result<_, _>>()?;
        if index == 0 {
            self.first_programs = programs.clone();
        } else if index == 1 {
            for (v, (first, second)) in self.first_programs.iter().zip(&programs).enumerate() {
                let read = |p: &PathBuf| std::fs::read(p).ok();
                if first != second && first.is_file() && read(first) == read(second) {
                    let name = &self.templates[v].name;
                    return Err(perflab_suite::SuiteError::SameLayout {
                        build: name.clone(),
                        first: format!("{name}@L1"),
                        second: format!("{name}@L2"),
                        path: second.clone(),
                    }
                    .into());
                }
            }
        }
        let experiment = experiment::run(&plan, &mut Quiet)?;
        let elapsed = started.elapsed().as_secs_f64();
        if !self.quiet {
            let ratio = layouts_auto::pair_stats(
                &PairRun {
                    experiment: experiment.clone(),
                    build_s: built.seconds,
                    cached: built.cached,
                    elapsed_s: elapsed,
                },
                &experiment.primary_metric,
            )
            .log_ratio
            .exp();
            eprintln!(
                "perflab: layout pair {} ({} vs {}): {} round{}, ratio {ratio:.4}; {:.0} s of {:.0} s",
                index + 1,
                escape(&builds[1].build.name),
                escape(&builds[0].build.name),
                experiment.rounds,
                if experiment.rounds == 1 { "" } else { "s" },
                self.started.elapsed().as_secs_f64(),
                self.budget.max_time_s
            );
        }
        Ok(PairRun { experiment, build_s: built.seconds, cached: built.cached, elapsed_s: elapsed })
    }

    /// Said whatever --no-progress: it is what the result will be, said early.
    fn note(&mut self, text: &str) {
        eprintln!("perflab: {}", escape(text));
    }
}

/// `--layouts auto`: the experiment of every pair, judged across them.
pub fn auto(args: &CompareArgs, templates: &[Build], cache: &LayoutCache) -> Result<Experiment, Failure> {
    let budget = AutoBudget {
        max_time_s: args.experiment.budget.or(args.experiment.max_time).unwrap_or(Settings::default().max_time_s),
        max_layouts: args.max_layouts.unwrap_or(layouts_auto::DEFAULT_MAX_LAYOUTS),
    };
    let mut pairs = Pairs {
        args,
        templates,
        cache,
        base: layout_base(args),
        started: Instant::now(),
        budget,
        // A line per pair, as the builds have, also into a log: only --no-progress hides them.
        quiet: args.experiment.runner.no_progress,
        first_programs: Vec::new(),
        concurrent: builds_concurrently(),
    };
    layouts_auto::run(&mut pairs, budget, (&templates[0].name, &templates[1].name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(version: &str, seed: u64, prepare: String) -> LayoutBuild {
        LayoutBuild {
            version: version.to_string(),
            seed,
            build: Build { name: format!("{version}@L1"), value: String::new(), prepare: Some(prepare) },
        }
    }

    /// Each build waits (up to 20 s) for the other to have started: built one after the
    /// other, the first would give up and fail. No timing is asserted.
    #[test]
    fn a_pairs_two_layouts_build_at_once_and_a_failure_is_the_first_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let waits_for = |me: &str, other: &str| {
            format!(
                "touch {d}/{me}.started; i=0; while [ ! -e {d}/{other}.started ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; [ -e {d}/{other}.started ] && touch {d}/{me}.out"
            )
        };
        let cache = LayoutCache::open(true);
        let pair = [layout("a", 1, waits_for("a", "b")), layout("b", 2, waits_for("b", "a"))];
        let built = build_at_once(&pair, &cache).unwrap();
        assert!(dir.path().join("a.out").is_file() && dir.path().join("b.out").is_file());
        assert!(built.seconds > 0.0 && built.cached == 0, "{built:?}");
        // Both failing: the error is the first build's (in the order given), whatever ends first.
        let failing = [layout("a", 1, "sleep 0.2; exit 3".into()), layout("b", 2, "exit 4".into())];
        let err = build_at_once(&failing, &cache).unwrap_err().to_string();
        assert!(err.contains("building a@L1 failed"), "{err}");
    }
}
