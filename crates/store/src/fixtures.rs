//! Example stored experiments for tests of what reads the history (here and in the
//! crates above, through the `fixtures` feature).

use crate::StoredExperiment;
use perflab_model::{
    metric, CommandResult, Comparison, ExitInfo, Experiment, Machine, Run, Settings, StopReason, Verdict,
};

/// A complete experiment of `bench` under `label` (label order `order`) on host `host`: a
/// baseline command `base` without runs, and the measured command `x` with one successful
/// run per wall time in `walls` (seconds); no summaries or comparisons.
pub fn stored(label: &str, order: i64, bench: &str, host: &str, walls: &[f64]) -> StoredExperiment {
    let machine = Machine { hostname: host.into(), ..Machine::default() };
    StoredExperiment {
        id: 0,
        label: label.into(),
        label_order: order,
        benchmark: bench.into(),
        git_commit: None,
        source: "test".into(),
        recorded_at: String::new(),
        machine_fingerprint: machine.fingerprint(),
        complete: true,
        sample: None,
        profile_change: None,
        experiment: Experiment {
            perflab_version: String::new(),
            machine,
            settings: Settings {
                warmup_rounds: 0,
                min_rounds: 1,
                max_rounds: 1,
                max_time_s: 1.0,
                env_padding: false,
                ..Default::default()
            },
            rounds: walls.len() as u32,
            stop_reason: StopReason::FixedRounds,
            commands: vec![
                CommandResult {
                    name: "base".into(),
                    argv: vec![],
                    command_line: String::new(),
                    parameters: Default::default(),
                    runs: vec![],
                    summary: Default::default(),
                },
                CommandResult {
                    name: "x".into(),
                    argv: vec![],
                    command_line: String::new(),
                    parameters: Default::default(),
                    runs: walls
                        .iter()
                        .map(|&w| Run {
                            wall_s: w,
                            exit: ExitInfo { exit_code: Some(0), ..ExitInfo::default() },
                            ..Run::default()
                        })
                        .collect(),
                    summary: Default::default(),
                },
            ],
            ..Experiment::default()
        },
    }
}

/// Six labels of eight runs, the locked xchg replaced by a mov at v5: 243 ms → 18.5 ms.
pub fn tenfold_step() -> Vec<StoredExperiment> {
    (1..=6)
        .map(|i| {
            let level = if i < 5 { 0.243 } else { 0.0185 };
            let walls: Vec<f64> = (0..8).map(|k| level * (1.0 + 0.003 * ((i * 3 + k) % 5) as f64)).collect();
            stored(&format!("v{i}"), i as i64, "xchg", "h1", &walls)
        })
        .collect()
}

/// Eight wall times at `level`, each 0.1 % above the one before.
pub fn runs(level: f64) -> Vec<f64> {
    (0..8).map(|k| level * (1.0 + 0.001 * k as f64)).collect()
}

/// A command named `name` with one successful run per wall time (round by round; CPU time
/// half the wall time).
pub fn command(name: &str, walls: &[f64]) -> CommandResult {
    CommandResult {
        name: name.into(),
        argv: vec![],
        command_line: String::new(),
        parameters: Default::default(),
        runs: walls
            .iter()
            .enumerate()
            .map(|(round, &w)| Run {
                round: round as u32,
                wall_s: w,
                user_s: w / 2.0,
                exit: ExitInfo { exit_code: Some(0), ..ExitInfo::default() },
                ..Run::default()
            })
            .collect(),
        summary: Default::default(),
    }
}

/// `label` of `bench` measured beside the build `baseline` in one session (`run --label
/// LABEL --baseline BASELINE`): eight paired rounds 1.2× apart, the stored wall-time
/// comparison 1.2 [1.18, 1.22] slower, decided on wall_s.
pub fn interleaved(label: &str, order: i64, bench: &str, baseline: &str) -> StoredExperiment {
    let mut e = stored(label, order, bench, "h", &[]);
    let base: Vec<f64> = (0..8).map(|i| 1.0 + 0.01 * (i % 3) as f64).collect();
    let cand: Vec<f64> = base.iter().map(|v| v * 1.2).collect();
    e.experiment.commands = vec![command(baseline, &base), command(label, &cand)];
    e.experiment.primary_metric = metric::WALL.into();
    e.experiment.comparisons = vec![Comparison {
        baseline: baseline.into(),
        candidate: label.into(),
        metric: metric::WALL.into(),
        better: Default::default(),
        ratio: 1.2,
        ci_low: 1.18,
        ci_high: 1.22,
        confidence: 0.95,
        look_confidence: 0.99,
        p_value: 0.004,
        verdict: Verdict::Slower,
        below_threshold: false,
        n: 8,
        flags: vec![],
        explanation: None,
    }];
    e
}
