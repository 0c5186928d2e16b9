//! Regressions explained (`run --profile-changes`): when a benchmark's build is slower
//! than its baseline beyond the threshold, profile one run of each and keep, with the two
//! profiles, the per-function diff and the differential flame graph — computed right
//! away, while the builds' binaries are there to name the sampled addresses.

use crate::error::Failure;
use crate::executor::process::Output;
use crate::model::{CommandSpec, Comparison, Experiment, Verdict};
use crate::profile::aggregate::By;
use crate::profile::format::Profile;
use crate::profile::record::{self, CallGraph, RecordOptions, RecordingMode};
use crate::profile::unwind::DEFAULT_STACK_BYTES;
use crate::profile::{diff, flame};
use crate::store::ProfileChange;

/// Twice `perflab profile`'s default: a single run of each build must give enough samples.
pub const FREQUENCY_HZ: u64 = 1999;
/// Below this many samples in a profile, its shares are rough (said in the warnings).
const FEW_SAMPLES: u64 = 200;

/// The comparison of the experiment's primary metric when it found the candidate slower
/// (worse) beyond the equivalence threshold.
pub fn regression(experiment: &Experiment) -> Option<&Comparison> {
    experiment
        .comparisons
        .iter()
        .find(|c| c.metric == experiment.primary_metric && c.verdict == Verdict::Slower && !c.below_threshold)
}

/// Profile one run of the comparison's baseline, then of its candidate (`commands` are
/// the experiment's), and diff them. None when interrupted.
pub fn profile_change(commands: &[CommandSpec], comparison: &Comparison) -> Result<Option<ProfileChange>, Failure> {
    let find = |name: &str| {
        commands.iter().find(|c| c.name == name).ok_or_else(|| crate::usage!("no command named `{name}` to profile"))
    };
    let Some(old) = profile(find(&comparison.baseline)?)? else { return Ok(None) };
    let Some(new) = profile(find(&comparison.candidate)?)? else { return Ok(None) };
    let (functions, mut warnings) = diff::diff(&old, &new, By::Function);
    for (p, name) in [(&old, &comparison.baseline), (&new, &comparison.candidate)] {
        if p.total_samples() < FEW_SAMPLES {
            warnings.push(format!(
                "only {} samples of `{name}` (one run at {FREQUENCY_HZ} Hz): its shares are rough",
                p.total_samples()
            ));
        }
    }
    let title = format!("{} vs {}", comparison.candidate, comparison.baseline);
    let flame_graph = flame::diff_svg(&old, &new, &title);
    if flame_graph.is_none() {
        warnings.push("no call stacks were recorded, so there is no flame graph".into());
    }
    let file = |p: &Profile| p.to_bytes().map_err(|e| Failure::Other(anyhow::anyhow!("encoding a profile: {e}")));
    Ok(Some(ProfileChange {
        metric: comparison.metric.clone(),
        baseline: comparison.baseline.clone(),
        candidate: comparison.candidate.clone(),
        functions,
        flame_graph,
        warnings,
        baseline_profile: file(&old)?,
        candidate_profile: file(&new)?,
    }))
}

/// One run of `command` sampled on cpu-clock (no PMU needed) with call stacks unwound
/// from DWARF CFI (release builds rarely keep frame pointers); None when interrupted.
fn profile(command: &CommandSpec) -> Result<Option<Profile>, Failure> {
    let recording = record::record(&RecordOptions {
        mode: RecordingMode::Launch { argv: command.argv.clone(), output: Output::Discard },
        event: "cpu-clock".into(),
        frequency_hz: FREQUENCY_HZ,
        period: None,
        call_graph: CallGraph::Dwarf { stack_bytes: DEFAULT_STACK_BYTES },
        off_cpu: false,
    })?;
    if recording.interrupted {
        return Ok(None);
    }
    match recording.profile.exit_code {
        Some(0) => Ok(Some(recording.profile)),
        Some(code) => {
            Err(Failure::CommandFailed(format!("`{}` exited with status {code} when profiled", command.name)))
        }
        None => Err(Failure::CommandFailed(format!("`{}` was killed by a signal when profiled", command.name))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(metric: &str, verdict: Verdict, below_threshold: bool) -> Comparison {
        Comparison {
            baseline: "old".into(),
            candidate: "new".into(),
            metric: metric.into(),
            better: Default::default(),
            ratio: 1.2,
            ci_low: 1.1,
            ci_high: 1.3,
            confidence: 0.95,
            look_confidence: 0.95,
            p_value: 0.001,
            verdict,
            below_threshold,
            n: 10,
            flags: vec![],
            explanation: None,
        }
    }

    #[test]
    fn only_the_primary_metric_slower_beyond_the_threshold_is_explained() {
        let with = |comparisons| Experiment { primary_metric: "wall_s".into(), comparisons, ..Experiment::default() };
        let slower = comparison("wall_s", Verdict::Slower, false);
        assert_eq!(regression(&with(vec![slower.clone()])), Some(&slower));
        assert_eq!(regression(&with(vec![comparison("wall_s", Verdict::Slower, true)])), None, "within the threshold");
        assert_eq!(regression(&with(vec![comparison("wall_s", Verdict::Faster, false)])), None);
        assert_eq!(regression(&with(vec![comparison("inconclusive", Verdict::Inconclusive, false)])), None);
        assert_eq!(
            regression(&with(vec![comparison("cpu_s", Verdict::Slower, false)])),
            None,
            "not the primary metric"
        );
    }
}
