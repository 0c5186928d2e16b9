//! Example records for tests of what shows or stores results (here and in the crates
//! above, through the `fixtures` feature).

use perflab_model::{CommandResult, CounterReading, Run};
use std::collections::BTreeMap;

pub use crate::analysis::explain::simulate::example_explanation;

/// One command's runs where each named counter reads its value plus the run's index
/// (`None`: unsupported, with a no-PMU reason), and `instructions` 1000.
pub fn counter_result(values: &[(&str, Option<f64>)], runs: usize) -> CommandResult {
    let runs = (0..runs)
        .map(|i| {
            let mut counters = BTreeMap::new();
            for (name, value) in values {
                let reading = match value {
                    Some(v) => CounterReading::value(v + i as f64, name.starts_with("scaled")),
                    None => CounterReading::unsupported("no hardware PMU (virtualized?)"),
                };
                counters.insert(name.to_string(), reading);
            }
            counters.insert("instructions".into(), CounterReading::value(1000.0, false));
            Run { round: i as u32, wall_s: 0.01 * (i + 1) as f64, counters, ..Default::default() }
        })
        .collect();
    CommandResult {
        name: "x".into(),
        argv: vec!["x".into()],
        command_line: "x".into(),
        parameters: Default::default(),
        runs,
        summary: BTreeMap::new(),
    }
}
