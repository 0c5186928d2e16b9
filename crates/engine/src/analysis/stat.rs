//! `perflab stat`'s numbers: per metric of one command's runs, the median with its
//! interval, the spread, whether every run agreed, and for a counter this machine cannot
//! read, why (rendered by `render::stat`).

use perflab_model::{metric, CommandResult, Experiment, Summary};
use serde::Serialize;

/// One metric of `perflab stat`, as printed and as written to JSON.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StatMetric {
    /// perf's event name, a derived metric, a harness or an instruction-mode metric.
    pub name: String,
    /// False when no run could measure it (`reason` says why).
    pub supported: bool,
    /// Why it could not be measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// True when any run's count was scaled for multiplexing.
    pub scaled: bool,
    /// Unit of its values (empty for a plain count).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub unit: &'static str,
    /// What the metric measures (the registry's one line).
    pub description: &'static str,
    /// The median over runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// True when every run gave the identical value.
    pub exact: bool,
    /// Its summary over the runs, when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
}

/// The stat JSON document: the experiment plus the per-metric table.
#[derive(Debug, Serialize)]
pub struct StatReport {
    /// The experiment behind the table.
    #[serde(flatten)]
    pub experiment: Experiment,
    /// One row per metric, in display order.
    pub metrics: Vec<StatMetric>,
}

/// The per-metric table of one command's runs, for `names` in order. A counter is
/// unsupported when no run could read it; its reason is the first run's.
pub fn stat_metrics(result: &CommandResult, names: &[String]) -> Vec<StatMetric> {
    names
        .iter()
        .map(|name| {
            let readings: Vec<_> = result.runs.iter().filter_map(|r| r.counters.get(name)).collect();
            let values: Vec<f64> = result.runs.iter().filter_map(|r| r.metric(name)).collect();
            let metric::Info { unit, description, .. } = metric::info(name);
            if values.is_empty() {
                let reason = readings
                    .iter()
                    .find_map(|c| c.reason.clone())
                    .unwrap_or_else(|| if result.runs.is_empty() { "no runs finished" } else { "not measured" }.into());
                return StatMetric {
                    name: name.clone(),
                    supported: false,
                    reason: Some(reason),
                    scaled: false,
                    unit,
                    description,
                    value: None,
                    exact: false,
                    summary: None,
                };
            }
            let summary =
                result.summary.get(name).cloned().unwrap_or_else(|| perflab_stats::summary::summarize(&values));
            StatMetric {
                name: name.clone(),
                supported: true,
                reason: None,
                scaled: readings.iter().any(|c| c.scaled),
                unit,
                description,
                value: Some(summary.median),
                exact: values.iter().all(|v| *v == values[0]),
                summary: Some(summary),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::counter_result as result;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn unsupported_counters_keep_their_reason_and_no_value() {
        let r = result(&[("cycles", None), ("task-clock", Some(5e6))], 8);
        let m = stat_metrics(&r, &names(&["task-clock", "cycles"]));
        assert!(m[0].supported && m[0].value.is_some() && m[0].summary.as_ref().unwrap().n == 8);
        assert_eq!(m[0].unit, "ns");
        assert!(!m[1].supported && m[1].value.is_none() && m[1].summary.is_none());
        assert_eq!(m[1].reason.as_deref(), Some("no hardware PMU (virtualized?)"));
        let json = serde_json::to_value(&m[1]).unwrap();
        assert_eq!(json["name"], "cycles");
        assert_eq!(json["supported"], false);
        assert!(json.get("value").is_none());
    }

    #[test]
    fn identical_runs_are_exact_and_scaling_is_reported() {
        let r = result(&[("scaled-thing", Some(10.0))], 3);
        let m = stat_metrics(&r, &names(&["instructions", "scaled-thing", "wall_s"]));
        assert!(m[0].exact && m[0].value == Some(1000.0));
        assert!(!m[1].exact && m[1].scaled);
        assert!(!m[2].exact && m[2].supported);
    }
}
