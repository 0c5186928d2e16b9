//! `perflab bisect`: find the first commit that made a benchmark slower. Each tested
//! commit is checked out in its own temporary git worktree, built with the user's
//! command, and compared against the good commit's build in interleaved rounds; the
//! compare engine's verdict classifies it. Each step is reported to a [`BisectObserver`]
//! (the command line prints it: `render::suite`).

use crate::error::{BisectError, SuiteError};
use crate::layouts::LayoutBuild;
use crate::runner::{plan_for, plan_for_layouts, RunOptions};
use crate::Build;
use perflab_engine::plan::Plan;
use perflab_model::{Comparison, Verdict};
use perflab_store::{Query, Store};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to bisect.
#[derive(Debug, Clone)]
pub struct BisectRequest {
    /// A commit (or a stored label that has one) where the benchmark is fast.
    pub good: String,
    /// A later commit (or label) where it is slow.
    pub bad: String,
    /// Shell command building a commit inside its worktree; `{commit}` is the hash.
    pub build_command: String,
    /// The suite benchmark to measure (its command uses `{build}`).
    pub bench: String,
    /// The suite file holding the benchmark.
    pub suite: PathBuf,
    /// The git repository.
    pub repo: PathBuf,
    /// Per-comparison options (rounds, time limit) over the benchmark's own.
    pub run: RunOptions,
    /// The history database, used only to resolve labels.
    pub db: Option<String>,
}

/// The temporary directory holding the worktrees, removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn create() -> Result<ScratchDir, BisectError> {
        let dir = std::env::temp_dir().join(format!("perflab-bisect-{}", std::process::id()));
        if let Err(source) = std::fs::create_dir_all(&dir) {
            return Err(BisectError::Scratch { path: dir, source });
        }
        Ok(ScratchDir(dir))
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A detached worktree of one commit, removed when dropped.
struct Worktree<'r> {
    repo: &'r Path,
    dir: PathBuf,
}

impl Drop for Worktree<'_> {
    fn drop(&mut self) {
        let _ = Command::new("git")
            .arg("-C")
            .arg(self.repo)
            .args(["worktree", "remove", "--force"])
            .arg(&self.dir)
            .output();
    }
}

fn git(repo: &Path, args: &[&str]) -> Result<String, BisectError> {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output().map_err(BisectError::GitNotRunnable)?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first_line = stderr.lines().next().unwrap_or("failed").to_string();
        return Err(BisectError::Git { args: args.join(" "), first_line });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// One tested commit: its comparison against the good build and how it was classified.
#[derive(Debug, Clone)]
pub struct Step {
    /// The commit's hash.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// The primary metric's comparison with the good commit's build.
    pub comparison: Comparison,
    /// Slower beyond the threshold and at least `halfway` slower (with layouts: slower
    /// beyond the threshold across layouts).
    pub bad: bool,
    /// The geometric midpoint between the good build and the bad end's slowdown (None
    /// for the bad end itself, and with layouts, which need no such rule).
    pub halfway: Option<f64>,
    /// With `--layouts N`: how much layouts of the good and the tested commit differ
    /// (σ of the layout effect, log scale), and whether the difference is within it.
    pub layouts: Option<perflab_model::LayoutAnalysis>,
}

/// What a bisection found.
#[derive(Debug, Clone)]
pub struct Found {
    /// The first commit that is slower: the regression's cause.
    pub first_bad: String,
    /// Its subject line.
    pub subject: String,
    /// Every commit tested, in the order tested.
    pub steps: Vec<Step>,
}

/// Hears about a bisection as it goes (each comparison takes a while).
pub trait BisectObserver {
    /// `commits` commits lie between `good` and `bad`; `bench` is measured.
    fn started(&mut self, _commits: usize, _good: &str, _bad: &str, _bench: &str) {}
    /// A commit was built, measured and classified.
    fn tested(&mut self, _step: &Step) {}
}

/// Bisect: each tested commit's comparison goes to `observer` as it is classified; the
/// first bad commit is returned.
pub fn bisect(args: &BisectRequest, observer: &mut dyn BisectObserver) -> Result<Found, BisectError> {
    let repo = args.repo.canonicalize().map_err(|source| BisectError::Repo { path: args.repo.clone(), source })?;
    git(&repo, &["rev-parse", "--git-dir"]).map_err(|_| BisectError::NotARepository(repo.clone()))?;
    let suite = crate::load(&args.suite)?;
    let bench = suite
        .benchmarks
        .iter()
        .find(|b| b.name == args.bench)
        .ok_or_else(|| BisectError::NoSuchBenchmark { bench: args.bench.clone(), suite: args.suite.clone() })?;
    if !bench.uses_build() {
        return Err(BisectError::NoBuildPlaceholder(bench.name.clone()));
    }
    let mut resolver = LabelResolver { db: args.db.as_deref(), experiments: None };
    let good = resolve(&repo, &args.good, &mut resolver)?;
    let bad = resolve(&repo, &args.bad, &mut resolver)?;
    if git(&repo, &["merge-base", "--is-ancestor", &good, &bad]).is_err() {
        return Err(BisectError::NotAncestor { good: args.good.clone(), bad: args.bad.clone() });
    }
    let commits: Vec<String> = git(&repo, &["rev-list", "--ancestry-path", "--reverse", &format!("{good}..{bad}")])?
        .lines()
        .map(str::to_string)
        .collect();
    if commits.is_empty() {
        return Err(BisectError::SameCommit);
    }
    let scratch = ScratchDir::create()?;

    let layout_seed = args.run.seed.unwrap_or_else(rand::random);
    let layouts = match args.run.layouts {
        Some(n) if n < 2 => return Err(SuiteError::TooFewLayouts(n).into()),
        Some(_) if !args.build_command.contains("{layout}") => {
            return Err(SuiteError::NoLayoutPlaceholder("--build".into()).into())
        }
        other => other,
    };
    let (_good_trees, good_builds) =
        checkout_and_build_layouts(&repo, &good, scratch.path(), &args.build_command, layouts, layout_seed)?;
    observer.started(commits.len(), &good, &bad, &bench.name);

    let mut steps = Vec::new();
    // `bad_end`: how much slower the bad end is. None while it is being measured.
    let mut measure = |commit: &str, bad_end: Option<f64>| -> Result<(bool, f64), BisectError> {
        let (_trees, builds) =
            checkout_and_build_layouts(&repo, commit, scratch.path(), &args.build_command, layouts, layout_seed)?;
        let (comparison, analysis) = match (&good_builds, &builds) {
            (Built::One(good_build), Built::One(build)) => {
                (compare(&plan_for(bench, Some(build), Some(good_build), &args.run)?)?.0, None)
            }
            (Built::Layouts(good_layouts), Built::Layouts(layouts)) => {
                let all: Vec<LayoutBuild> = good_layouts.iter().chain(layouts).cloned().collect();
                compare(&plan_for_layouts(bench, &all, &args.run)?)?
            }
            _ => unreachable!("both ends are built the same way"),
        };
        let slowdown = slowdown(&comparison);
        let bad = if analysis.is_some() { is_bad(&comparison, None) } else { is_bad(&comparison, bad_end) };
        let subject = git(&repo, &["log", "-1", "--format=%s", commit]).unwrap_or_default();
        let halfway = bad_end.filter(|_| analysis.is_none()).map(f64::sqrt);
        let step = Step { commit: commit.to_string(), subject, comparison, bad, halfway, layouts: analysis };
        observer.tested(&step);
        steps.push(step);
        Ok((bad, slowdown))
    };

    // The bad end must really be slower, or there is nothing to find.
    let (bad_is_slower, bad_end) = measure(&bad, None)?;
    if !bad_is_slower {
        return Err(BisectError::NotSlower { good: args.good.clone(), bad: args.bad.clone() });
    }
    // Invariant: commits[hi] is bad; everything up to lo-1 (and good) is good.
    let (mut lo, mut hi) = (0usize, commits.len() - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if measure(&commits[mid], Some(bad_end))?.0 {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    drop(_good_trees);
    let first_bad = commits[hi].clone();
    let subject = git(&repo, &["log", "-1", "--format=%s", &first_bad]).unwrap_or_default();
    Ok(Found { first_bad, subject, steps })
}

/// How many times slower than the good build `comparison` found the commit (above 1 is
/// slower, whichever way the metric improves).
fn slowdown(comparison: &Comparison) -> f64 {
    if comparison.better.is_lower() {
        comparison.ratio
    } else {
        1.0 / comparison.ratio
    }
}

/// A commit is bad when it is `slower` beyond the threshold and — between the two
/// ends — closer (on a log scale) to the bad end's slowdown than to the good build.
///
/// Why the halfway mark: an unchanged build can read a percent slower than the good
/// one (code placed on other pages, another path in argv); with a ×7 regression to
/// find, that percent must not send the search the wrong way. It is what one does by
/// hand with `git bisect run` on a timing. It is a rule of thumb for comparisons of one
/// build each, which cannot tell a change from a relink; with `--layouts N` the
/// comparison's interval counts the layouts' spread, so "slower" already means slower
/// than layout alone explains, and no halfway mark is used (`bad_end` None).
fn is_bad(comparison: &Comparison, bad_end: Option<f64>) -> bool {
    let slower = comparison.verdict == Verdict::Slower && !comparison.below_threshold;
    match bad_end {
        None => slower,
        Some(bad_end) => slower && slowdown(comparison) >= bad_end.sqrt(),
    }
}

/// Resolves `--good`/`--bad` given as stored labels to their recorded commit.
struct LabelResolver<'a> {
    db: Option<&'a str>,
    experiments: Option<Vec<perflab_store::StoredExperiment>>,
}

fn resolve(repo: &Path, rev: &str, labels: &mut LabelResolver) -> Result<String, BisectError> {
    if let Ok(hash) = git(repo, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]) {
        return Ok(hash);
    }
    if labels.experiments.is_none() {
        let mut store = Store::open_existing(labels.db)?;
        labels.experiments = Some(store.experiments(&Query { label: Some(rev.to_string()), ..Query::default() })?);
    }
    let commit = labels
        .experiments
        .iter()
        .flatten()
        .filter(|e| e.label == rev)
        .find_map(|e| e.git_commit.clone())
        .ok_or_else(|| BisectError::UnknownRevision { rev: rev.to_string(), repo: repo.to_path_buf() })?;
    let commit = commit.trim_end_matches("-dirty");
    git(repo, &["rev-parse", "--verify", "--quiet", &format!("{commit}^{{commit}}")]).map_err(|_| {
        BisectError::LabelCommitMissing { rev: rev.to_string(), commit: commit.to_string(), repo: repo.to_path_buf() }
    })
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

fn checkout_and_build<'r>(
    repo: &'r Path,
    commit: &str,
    scratch: &Path,
    build_command: &str,
) -> Result<(Worktree<'r>, Build), BisectError> {
    let dir = scratch.join(short(commit));
    let tree = checkout_in(repo, commit, &dir, build_command)?;
    let build = Build { name: short(commit).to_string(), value: dir.to_string_lossy().into_owned(), prepare: None };
    Ok((tree, build))
}

/// A worktree of `commit` in `dir`, built there with `build_command` (`{commit}` replaced).
fn checkout_in<'r>(repo: &'r Path, commit: &str, dir: &Path, build_command: &str) -> Result<Worktree<'r>, BisectError> {
    git(repo, &["worktree", "add", "--detach", "--quiet", dir.to_str().unwrap_or_default(), commit])?;
    let tree = Worktree { repo, dir: dir.to_path_buf() };
    let command = build_command.replace("{commit}", commit);
    perflab_sys::command::run_shell(&command, Some(dir), false)
        .map_err(|source| BisectError::BuildFailed { commit: short(commit).to_string(), source })?;
    Ok(tree)
}

/// One commit built once, or in several layouts (`--layouts N`).
enum Built {
    One(Build),
    Layouts(Vec<LayoutBuild>),
}

/// `commit` checked out and built: once, or `layouts` times, each layout in its own
/// worktree (so no build output is shared) with `{layout}` in the build command
/// replaced by its seed.
fn checkout_and_build_layouts<'r>(
    repo: &'r Path,
    commit: &str,
    scratch: &Path,
    build_command: &str,
    layouts: Option<u32>,
    seed: u64,
) -> Result<(Vec<Worktree<'r>>, Built), BisectError> {
    let Some(count) = layouts else {
        let (tree, build) = checkout_and_build(repo, commit, scratch, build_command)?;
        return Ok((vec![tree], Built::One(build)));
    };
    let template = Build { name: short(commit).to_string(), value: "{layout}".into(), prepare: None };
    let mut trees = Vec::new();
    let mut builds = Vec::new();
    for mut layout in crate::layouts::expand_build(&template, count, seed)? {
        let dir = scratch.join(format!("{}-{}", short(commit), layout.seed));
        let command = crate::layouts::substitute(build_command, layout.seed);
        let tree = checkout_in(repo, commit, &dir, &command)?;
        layout.build.value = tree.dir.to_string_lossy().into_owned();
        trees.push(tree);
        builds.push(layout);
    }
    Ok((trees, Built::Layouts(builds)))
}

/// Compare the plan's commands; the primary metric's comparison (the versions' across
/// layouts, with the layouts' analysis, when the plan has layouts).
fn compare(plan: &Plan) -> Result<(Comparison, Option<perflab_model::LayoutAnalysis>), BisectError> {
    let experiment = perflab_engine::experiment::run(plan, &mut perflab_engine::experiment::Quiet)?;
    if perflab_sys::interrupt::watcher().requested() {
        return Err(BisectError::Interrupted);
    }
    let layouts = experiment.layouts.clone();
    let comparison = experiment
        .comparisons
        .into_iter()
        .find(|c| c.metric == experiment.primary_metric)
        .ok_or(BisectError::NoVerdict)?;
    Ok((comparison, layouts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_engine::analysis::verdict::judged;
    use perflab_model::{metric, Settings};

    fn wall(ratio: f64, ci: (f64, f64)) -> Comparison {
        judged(metric::WALL, ratio, Some(ci), 0.001, 500, 0.95, &Settings::default(), vec![])
    }

    #[test]
    fn a_percent_slower_is_good_when_the_bad_end_is_seven_times_slower() {
        // The step seen on a CI runner: an unchanged build read ×1.011 [1.003, 1.019].
        let unchanged = wall(1.011, (1.003, 1.019));
        assert_eq!(unchanged.verdict, Verdict::Slower);
        assert!(is_bad(&unchanged, None), "alone, it is a regression beyond the threshold");
        assert!(!is_bad(&unchanged, Some(7.0)));
        assert!(is_bad(&wall(6.6, (6.0, 7.5)), Some(7.0)));
        // Past the halfway mark (√7 ≈ 2.65) counts; short of it does not.
        assert!(is_bad(&wall(2.8, (2.7, 2.9)), Some(7.0)));
        assert!(!is_bad(&wall(2.5, (2.4, 2.6)), Some(7.0)));
        // A small regression to find: halfway is ×1.025 for a ×1.05 bad end.
        assert!(is_bad(&wall(1.04, (1.03, 1.05)), Some(1.05)));
        assert!(!is_bad(&wall(1.0, (0.995, 1.005)), Some(1.05)));
    }

    #[test]
    fn throughput_slows_down_when_its_ratio_falls() {
        let mut tps = wall(0.5, (0.45, 0.55));
        tps.better = metric::Better::Higher;
        tps.verdict = Verdict::Slower;
        assert!((slowdown(&tps) - 2.0).abs() < 1e-12);
        assert!(is_bad(&tps, Some(3.0)));
        assert!(!is_bad(&tps, Some(5.0)));
    }
}
