//! Regressions explained (`run --profile-changes`): every measured run of both builds is
//! sampled inside the experiment's interleaved rounds (the probe of `compare --explain`),
//! so when a benchmark's build is slower than its baseline beyond the threshold, its
//! comparison carries the per-function explanation — ratios with intervals, verdicts,
//! contributions, the story and the differential flame graph — stored with the
//! experiment, with nothing more to run. (Stores written before this kept one profile of
//! each build, `store::ProfileChange`; the report still shows those.)

use perflab_engine::measure::{sampling::Sampling, Explain};
use perflab_model::{Comparison, Experiment, Verdict};

/// What `--profile-changes` found for a benchmark slower than its baseline.
#[derive(Debug, Clone)]
pub enum Explanation {
    /// The regression explained function by function from its runs' samples (stored
    /// with the experiment): the comparison, whose `explanation` is set.
    Found(Box<Comparison>),
    /// Slower, but its runs' samples gave no explanation (why): only a warning, the
    /// measurements are stored.
    Missing(String),
}

/// What the suite's runs sample: the probe's defaults (see `measure::sampling`).
pub fn sampling() -> Explain {
    Explain::Samples(Sampling::default())
}

/// The comparison of the experiment's primary metric when it found the candidate slower
/// (worse) beyond the equivalence threshold.
pub fn regression(experiment: &Experiment) -> Option<&Comparison> {
    experiment
        .comparisons
        .iter()
        .find(|c| c.metric == experiment.primary_metric && c.verdict == Verdict::Slower && !c.below_threshold)
}

/// What to say about a sampled experiment: None when it found no regression.
pub fn explained(experiment: &Experiment) -> Option<Explanation> {
    let slower = regression(experiment)?;
    Some(match &slower.explanation {
        Some(_) => Explanation::Found(Box::new(slower.clone())),
        None => Explanation::Missing(
            experiment
                .warnings
                .iter()
                .find(|w| w.message.contains("--explain"))
                .map_or_else(|| "no run of both builds was sampled".to_string(), |w| w.message.clone()),
        ),
    })
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

    #[test]
    fn a_regression_is_found_explained_or_said_to_be_missing() {
        let slower = comparison("wall_s", Verdict::Slower, false);
        let experiment =
            Experiment { primary_metric: "wall_s".into(), comparisons: vec![slower.clone()], ..Experiment::default() };
        assert!(matches!(explained(&experiment), Some(Explanation::Missing(why)) if why.contains("sampled")));
        let example = perflab_engine::fixtures::example_explanation();
        let with = Comparison { explanation: Some(Box::new(example)), ..slower };
        let experiment = Experiment { comparisons: vec![with], ..experiment };
        assert!(matches!(explained(&experiment), Some(Explanation::Found(c)) if c.explanation.is_some()));
        let faster = Experiment { comparisons: vec![comparison("wall_s", Verdict::Faster, false)], ..experiment };
        assert!(explained(&faster).is_none(), "nothing to explain");
    }
}
