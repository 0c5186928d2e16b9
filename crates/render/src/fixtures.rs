//! Experiments made by the engine on the simulated machine, for the renderers' tests:
//! deterministic (seeded), so their renderings can be snapshots.

use perflab_engine::executor::simulated::{Noise, Simulated};
use perflab_engine::experiment::{run_experiment, Quiet};
use perflab_engine::measure::MeasureOptions;
use perflab_engine::plan::{Compared, Plan};
use perflab_model::{metric, CommandSpec, Experiment, Settings};
use std::collections::BTreeMap;

/// `names` with their mean times (seconds) and `-L n` values, run for `rounds` rounds.
pub fn experiment(names: &[&str], means: &[f64], rounds: Option<u32>) -> Experiment {
    let commands = names
        .iter()
        .map(|name| CommandSpec {
            name: name.to_string(),
            argv: vec![name.to_string()],
            command_line: format!("./{name}"),
            parameters: BTreeMap::from([("n".to_string(), name.len().to_string())]),
        })
        .collect();
    let settings = Settings { seed: 5, fixed_rounds: rounds, ..Settings::default() };
    let plan = Plan::new(
        commands,
        settings,
        MeasureOptions::default(),
        Compared::fixed(vec![metric::WALL.into(), metric::CPU.into()]),
    );
    let mut machine = Simulated::new(5, means.to_vec(), Noise::gaussian(0.01));
    let mut e = run_experiment(&plan, &mut machine, &mut Quiet).expect("the simulated machine runs");
    // What changes from build to build and day to day stays out of snapshots.
    e.perflab_version = "VERSION".into();
    e.started_at = "2025-01-01T00:00:00Z".into();
    e
}

/// B 10 % slower than A, decided by the engine's sequential looks.
pub fn slower() -> Experiment {
    experiment(&["A", "B"], &[0.05, 0.055], None)
}
