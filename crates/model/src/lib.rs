//! The one data model shared by `compare`, `stat`, suites and the store: what was run,
//! every run's measurements and counters, per-command summaries and the comparisons.
//!
//! Serialized as the documented JSON schema (`docs/json-schema.md`); bump
//! [`SCHEMA_VERSION`] on any incompatible change.

#![deny(missing_docs)]

use serde::Deserialize;

/// A name in the model's vocabulary (a suite file's or the command line's) that is not
/// one; the message quotes it and lists the choices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// `iterations` is not one of the names or a number ≥ 1.
    #[error("expected `iterations` \"all\", \"first\", \"steady\", \"each\" or a number N ≥ 1 (the N-th value each run printed), found \"{0}\"")]
    Iterations(String),
    /// More iterations set apart than a run keeps ([`SAMPLES_KEPT`]).
    #[error("at most {max} iterations can be set apart (the values kept per run), got {0}", max = SAMPLES_KEPT)]
    TooManyIterationsSetApart(u32),
    /// `mode` is neither `wall` nor `instructions`.
    #[error("expected `mode` \"wall\" or \"instructions\", found \"{0}\"")]
    Mode(String),
}

/// Why a metric printed once per iteration has no value for a run (recorded as the
/// reading's reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoValue {
    /// The run printed no value after the iterations the steady state skips.
    #[error("the steady state leaves out the first {skip} iteration(s), and the run printed only {printed}")]
    SteadyStateMissing {
        /// Iterations the steady state leaves out.
        skip: u32,
        /// Values the run printed.
        printed: usize,
    },
    /// The run printed no value of the metric.
    #[error("no value was printed")]
    NothingPrinted,
    /// The run printed fewer values than the one asked for.
    #[error("the value printed {wanted}th was asked for, and the run printed only {printed}")]
    NthMissing {
        /// The position asked for (1-based).
        wanted: u32,
        /// Values the run printed.
        printed: usize,
    },
}

/// Version of the JSON schema written (`docs/json-schema.md`): bumped on every incompatible change.
pub const SCHEMA_VERSION: u32 = 2;

mod comparison;
mod experiment;
mod layouts;
pub mod metric;
mod noise;
mod run;
pub mod units;

pub use comparison::*;
pub use experiment::*;
pub use layouts::*;
pub use noise::*;
pub use perflab_stats::summary::Summary;
pub use run::*;

/// JSON has no NaN or infinity: serde_json writes them as null; read null back.
pub(crate) fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

pub(crate) fn null_as_infinity<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_is_the_harness_field_or_contention_reading_or_measured() {
        use metric::{kind, Kind};
        assert_eq!(kind(metric::WALL), Kind::Field);
        assert_eq!(kind(metric::MAX_RSS), Kind::Field);
        assert_eq!(kind(metric::UNCONTENDED), Kind::Contention);
        for measured in ["instructions", "cycles:u", "tps", "iter_ns[first]"] {
            assert_eq!(kind(measured), Kind::Measured, "{measured}");
        }
        assert!(Kind::Contention.is_harness() && !Kind::Measured.is_harness());
    }

    #[test]
    fn a_comparison_without_interval_round_trips_through_json() {
        let c = Comparison {
            baseline: "A".into(),
            candidate: "B".into(),
            metric: metric::WALL.into(),
            better: metric::Better::Lower,
            ratio: f64::NAN,
            ci_low: 0.0,
            ci_high: f64::INFINITY,
            confidence: 0.95,
            look_confidence: 0.975,
            p_value: 1.0,
            verdict: Verdict::Inconclusive,
            below_threshold: false,
            n: 0,
            flags: vec![],
            explanation: None,
        };
        let text = serde_json::to_string(&c).unwrap();
        assert!(text.contains("\"ci_high\":null") && text.contains("\"ratio\":null"), "{text}");
        let back: Comparison = serde_json::from_str(&text).unwrap();
        assert!(back.ratio.is_nan() && back.ci_high == f64::INFINITY);
    }

    #[test]
    fn warnings_are_typed_and_old_plain_ones_still_read() {
        let w = Warning::new(WarningKind::Noisy, "noisy: b vs a");
        let text = serde_json::to_string(&w).unwrap();
        assert_eq!(text, r#"{"kind":"noisy","message":"noisy: b vs a"}"#);
        assert_eq!(serde_json::from_str::<Warning>(&text).unwrap(), w);
        let old: Warning = serde_json::from_str(r#""an old warning""#).unwrap();
        assert_eq!((old.kind, old.message.as_str()), (WarningKind::Other, "an old warning"));
    }

    #[test]
    fn the_registry_knows_units_and_directions_and_settings_can_turn_them() {
        use metric::{info, Better};
        assert_eq!((info(metric::WALL).unit, info(metric::WALL).better), ("s", Better::Lower));
        assert_eq!(info("ipc").better, Better::Higher);
        // Self-reported metrics are known by their names' endings.
        assert_eq!((info("tps").unit, info("tps").better), ("tps", Better::Higher));
        assert_eq!((info("rows_per_s").unit, info("rows_per_s").better), ("/s", Better::Higher));
        assert_eq!((info("exec_ms").unit, info("exec_ms").better), ("ms", Better::Lower));
        assert!(info("iter_ns").is_time() && !info("instructions").is_time());
        assert_eq!((info("score").unit, info("score").better), ("", Better::Lower));
        let mut settings = Settings::default();
        settings.better.insert("score".into(), Better::Higher);
        assert_eq!(settings.metric_info("score").better, Better::Higher);
        assert_eq!(settings.metric_info("tps").better, Better::Higher);
    }

    #[test]
    fn iterations_aggregate_all_or_the_steady_state() {
        let samples = [4.0, 1.0, 1.0, 2.0];
        assert_eq!(Iterations::All.aggregate(&samples), Ok(2.0));
        assert_eq!(Iterations::Steady(1).aggregate(&samples), Ok(4.0 / 3.0));
        let err = Iterations::Steady(4).aggregate(&samples).unwrap_err().to_string();
        assert!(err.contains("leaves out the first 4") && err.contains("only 4"), "{err}");
        assert!(Iterations::All.aggregate(&[]).is_err());
        let reading = CounterReading::sampled(samples.to_vec(), Iterations::All).unwrap();
        assert_eq!((reading.value, reading.samples.len()), (Some(2.0), 4));
        assert_eq!(serde_json::to_string(&Iterations::Steady(2)).unwrap(), r#"{"steady":2}"#);
        assert_eq!(serde_json::to_string(&Iterations::All).unwrap(), r#""all""#);
    }

    #[test]
    fn the_metric_registry_knows_the_contention_metrics() {
        use metric::{info, Better};
        for name in metric::CONTENTION {
            assert_eq!((info(name).unit, info(name).better), ("s", Better::Lower), "{name}");
            assert!(!info(name).description.contains("reported by the command"), "{name} is the harness's");
        }
    }

    #[test]
    fn run_metrics_cover_harness_fields_and_counters() {
        let mut run = Run { wall_s: 2.0, user_s: 0.5, sys_s: 0.25, max_rss_kib: 10, ..Default::default() };
        run.counters.insert("instructions".into(), CounterReading::value(1e9, false));
        run.counters.insert("cycles".into(), CounterReading::unsupported("no PMU"));
        assert_eq!(run.metric(metric::CPU), Some(0.75));
        assert_eq!(run.metric(metric::MAX_RSS), Some(10.0));
        assert_eq!(run.metric("instructions"), Some(1e9));
        assert_eq!(run.metric("cycles"), None, "an unsupported counter has no value, never a zero");
        assert_eq!(run.metric("unknown"), None);
    }
}
