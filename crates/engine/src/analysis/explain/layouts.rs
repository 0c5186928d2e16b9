//! `compare --explain` of versions built in several code layouts (`--layouts N`): each
//! version's layouts are merged round by round into one command (the mean of their
//! profiles), explained against the baseline version as any pair is, and every
//! function's row then gets its change across layouts — the versions' own method
//! (`perflab_stats::layouts`: Mann–Whitney on the layouts' locations) applied to that
//! function's time per run — so a function that moves only with where the linker put
//! it is named as such (docs/statistics.md, "Code layouts").

use super::{OTHER, TOTAL};
use perflab_model::{AcrossLayouts, CommandResult, Explanation, Layouts, Run, RunProfile, Verdict};
use perflab_stats::layouts as stats;
use std::collections::{BTreeMap, BTreeSet};

/// One command per version, in the layouts' order (baseline first): per round in which
/// every layout of every version ran successfully and was profiled, a run whose profile
/// and times are the mean over the version's layouts.
pub(crate) fn merged(layouts: &Layouts, commands: &[CommandResult]) -> Vec<CommandResult> {
    let rounds = complete_rounds(layouts, commands);
    layouts
        .versions
        .iter()
        .map(|version| {
            let members: Vec<&CommandResult> = version.commands.iter().filter_map(|&k| commands.get(k)).collect();
            let runs = rounds
                .iter()
                .filter_map(|&round| {
                    let runs: Vec<&Run> = members.iter().filter_map(|c| profiled_run(c, round)).collect();
                    (runs.len() == members.len()).then(|| mean_run(round, &runs))
                })
                .collect();
            CommandResult { name: version.name.clone(), runs, ..CommandResult::default() }
        })
        .collect()
}

/// Rounds in which every layout command ran successfully with a profile.
fn complete_rounds(layouts: &Layouts, commands: &[CommandResult]) -> BTreeSet<u32> {
    let mut rounds: Option<BTreeSet<u32>> = None;
    for &k in layouts.versions.iter().flat_map(|v| &v.commands) {
        let have: BTreeSet<u32> = commands
            .get(k)
            .map(|c| c.runs.iter().filter(|r| r.exit.success() && r.profile.is_some()).map(|r| r.round).collect())
            .unwrap_or_default();
        rounds = Some(match rounds {
            Some(r) => r.intersection(&have).copied().collect(),
            None => have,
        });
    }
    rounds.unwrap_or_default()
}

fn profiled_run(command: &CommandResult, round: u32) -> Option<&Run> {
    command.runs.iter().find(|r| r.round == round && r.exit.success() && r.profile.is_some())
}

/// The mean of `runs` (one per layout of a version, all of one round): times averaged,
/// profiles averaged per function, stack and count (rounded to whole samples and
/// nanoseconds, far below the samples' own noise).
fn mean_run(round: u32, runs: &[&Run]) -> Run {
    let n = runs.len() as f64;
    let mean = |f: &dyn Fn(&Run) -> f64| runs.iter().map(|r| f(r)).sum::<f64>() / n;
    let profiles: Vec<&RunProfile> = runs.iter().filter_map(|r| r.profile.as_deref()).collect();
    let first = profiles[0];
    let average = |total: u64| (total as f64 / n).round() as u64;
    let mut profile = RunProfile {
        event: first.event.clone(),
        period_is_time: first.period_is_time,
        exact: profiles.iter().all(|p| p.exact),
        samples: average(profiles.iter().map(|p| p.samples).sum()),
        period: average(profiles.iter().map(|p| p.period).sum()),
        lost: profiles.iter().map(|p| p.lost).sum(),
        ..RunProfile::default()
    };
    let mut functions: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    let mut stacks: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut counts: BTreeMap<String, BTreeMap<(String, String), u64>> = BTreeMap::new();
    for p in &profiles {
        for (key, &(samples, period)) in &p.functions {
            let entry = functions.entry(key.clone()).or_default();
            entry.0 += samples;
            entry.1 += period;
        }
        for (key, &(samples, period)) in &p.stacks {
            let entry = stacks.entry(key.clone()).or_default();
            entry.0 += samples;
            entry.1 += period;
        }
        for (name, per_function) in &p.counts {
            for (key, &count) in per_function {
                *counts.entry(name.clone()).or_default().entry(key.clone()).or_default() += count;
            }
        }
    }
    profile.functions = functions.into_iter().map(|(k, (s, p))| (k, (average(s), average(p)))).collect();
    profile.stacks = stacks.into_iter().map(|(k, (s, p))| (k, (average(s), average(p)))).collect();
    profile.counts = counts
        .into_iter()
        .map(|(name, per_function)| (name, per_function.into_iter().map(|(k, c)| (k, average(c))).collect()))
        .collect();
    Run {
        round,
        wall_s: mean(&|r| r.wall_s),
        user_s: mean(&|r| r.user_s),
        sys_s: mean(&|r| r.sys_s),
        exit: runs[0].exit,
        profile: Some(Box::new(profile)),
        ..Run::default()
    }
}

/// Give every function row of `explanation` (version `candidate` against the baseline
/// version 0 of `layouts`) its change across layouts, at the rows' own level, and say
/// which functions move only with layout.
pub(crate) fn add_across_layouts(
    explanation: &mut Explanation,
    layouts: &Layouts,
    commands: &[CommandResult],
    candidate: usize,
) {
    let rounds: Vec<u32> = complete_rounds(layouts, commands).into_iter().collect();
    let versions = [&layouts.versions[0], &layouts.versions[candidate]];
    let counts = (versions[0].commands.len(), versions[1].commands.len());
    let level = explanation.function_level;
    for row in explanation.functions.iter_mut().filter(|f| f.name != OTHER && f.name != TOTAL) {
        let key = (row.name.clone(), row.object.clone());
        // values[v][k][r]: the function's time (or events) in layout k of version v, round r.
        let values: Vec<Vec<Vec<f64>>> = versions
            .iter()
            .map(|v| {
                v.commands
                    .iter()
                    .map(|&k| {
                        rounds
                            .iter()
                            .map(|&round| {
                                commands
                                    .get(k)
                                    .and_then(|c| profiled_run(c, round))
                                    .and_then(|r| r.profile.as_ref()?.functions.get(&key))
                                    .map_or(0.0, |&(_, period)| period as f64)
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        // From each layout's mean: a function's time in one run is a few whole samples.
        let Some(fit) = stats::fit_means(&values) else { continue };
        let Some(contrast) = stats::contrast(&fit, 0, 1, level) else { continue };
        let interval = contrast.interval.map(|(lo, hi)| (lo.exp(), hi.exp()));
        let verdict = match interval {
            Some((lo, _)) if lo > 1.0 => Verdict::Slower,
            Some((_, hi)) if hi < 1.0 => Verdict::Faster,
            _ => Verdict::Inconclusive,
        };
        row.across_layouts = Some(AcrossLayouts {
            ratio: contrast.difference.exp(),
            ci_low: interval.map(|i| i.0),
            ci_high: interval.map(|i| i.1),
            spread: fit.pooled_spread(),
            layouts: counts,
            verdict,
        });
    }
    let moving: Vec<&str> =
        explanation.functions.iter().filter(|f| f.moves_with_layout()).map(|f| f.name.as_str()).collect();
    explanation.warnings.push(format!(
        "versions in {} + {} layouts: each row is paired over these binaries (the mean of each version's layouts per round); `across layouts` is the change counting how much layouts of one version differ{}",
        counts.0,
        counts.1,
        if moving.is_empty() {
            String::new()
        } else {
            format!("; moving with layout, not with the change: {}", moving.join(", "))
        }
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_model::{ExitInfo, LayoutVersion};
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    /// Two versions of 8 layouts each, 20 rounds, runs with 1 % noise of their own:
    /// `moving` is 6 % faster or slower by layout alone (4 + 4 layouts of `a`, 6 + 2 of
    /// `b`: b's mean layout is 3 % slower), `changed` is 30 % slower in every layout of
    /// `b`, `steady` does not change.
    fn experiment() -> (Layouts, Vec<CommandResult>) {
        let mut rng = StdRng::seed_from_u64(7);
        let noise = Normal::new(0.0, 0.01).unwrap();
        let high = |k: usize, highs: usize| if k < highs { 1.06 } else { 0.94 };
        let mut commands = Vec::new();
        for (version, highs, change) in [("a", 4, 1.0), ("b", 6, 1.3)] {
            for k in 0..8 {
                let runs = (0..20)
                    .map(|round| {
                        let mut profile =
                            RunProfile { event: "cpu-clock".into(), period_is_time: true, ..RunProfile::default() };
                        for (name, ms) in
                            [("moving", 40.0 * high(k, highs)), ("changed", 20.0 * change), ("steady", 30.0)]
                        {
                            let ns = (ms * 1e6 * (1.0 + noise.sample(&mut rng))) as u64;
                            profile.functions.insert((name.into(), "[command]".into()), (ns / 2_000_000, ns));
                        }
                        let total: u64 = profile.functions.values().map(|f| f.1).sum();
                        Run {
                            round,
                            user_s: total as f64 * 1e-9,
                            exit: ExitInfo { exit_code: Some(0), signal: None, timed_out: false },
                            profile: Some(Box::new(profile)),
                            ..Run::default()
                        }
                    })
                    .collect();
                commands.push(CommandResult { name: format!("{version}-{k}"), runs, ..CommandResult::default() });
            }
        }
        let version = |name: &str, first: usize| LayoutVersion {
            name: name.into(),
            commands: (first..first + 8).collect(),
            seeds: (first as u64..first as u64 + 8).collect(),
        };
        (Layouts { versions: vec![version("a", 0), version("b", 8)] }, commands)
    }

    #[test]
    fn a_function_that_moves_only_with_layout_is_named_as_such() {
        let (layouts, commands) = experiment();
        let merged = merged(&layouts, &commands);
        assert_eq!((merged.len(), merged[0].runs.len(), merged[1].name.as_str()), (2, 20, "b"));
        let options = super::super::Options { confidence: 0.95, comparison_level: 0.95, threshold: 0.01 };
        let mut e = super::super::explain(&merged[0], &merged[1], perflab_model::metric::CPU, &options).unwrap();
        add_across_layouts(&mut e, &layouts, &commands, 1);
        let row = |name: &str| e.functions.iter().find(|f| f.name == name).unwrap();
        // Paired over these binaries, `moving` is 3 % slower, and really so for them …
        assert_eq!(row("moving").verdict, Verdict::Slower, "{:?}", row("moving"));
        // … but not across layouts: it moves with layout, by ~6 % (σ of ±6 % levels).
        let across = row("moving").across_layouts.clone().unwrap();
        assert_eq!((across.verdict, across.layouts), (Verdict::Inconclusive, (8, 8)));
        assert!((0.04..0.08).contains(&across.spread), "{across:?}");
        assert!(row("moving").moves_with_layout());
        // `changed` is slower across layouts too; `steady` changes in neither.
        let changed = row("changed").across_layouts.clone().unwrap();
        assert_eq!(changed.verdict, Verdict::Slower);
        assert!((1.25..1.35).contains(&changed.ratio), "{changed:?}");
        assert!(!row("changed").moves_with_layout() && !row("steady").moves_with_layout());
        assert!(
            e.warnings.iter().any(|w| w.contains("moving with layout, not with the change: moving")),
            "{:?}",
            e.warnings
        );
    }
}
