//! A machine replayed from recorded noise: runs whose times come from a trace of real A/A
//! runs (`tests/data/noise/`, written by `scripts/record-noise` or `perflab doctor CMD
//! --record-noise FILE`), resampled by a moving-block bootstrap so that every replay is
//! a new experiment on the same machine's noise — its phases, order effects, tails and
//! waits kept — and deterministic for a seed.
//!
//! Each replayed experiment takes blocks of consecutive recorded runs, each block
//! starting at a random round of the trace (wrapping around its end), and hands the
//! runs out in the order the engine asks for them: the first run of a round to whichever
//! command the round's random order put first, as on the machine. A command with a true
//! ratio r gets the recorded run × r (wall, CPU and waits alike, so that r is the true
//! ratio of every time metric). The clock advances by each run's wall time plus the
//! harness's share of the trace's duration between runs.
//!
//! Why blocks: the noise here is not independent from run to run. The machine's speed
//! moves in phases lasting seconds (RESEARCH.md), and a block of tens of seconds keeps
//! them and the rounds that straddle a change of phase; resampling single runs would
//! make the noise look far friendlier than it is (Künsch 1989; Politis & Romano 1994
//! for the bootstrap of dependent data).

use super::{Executor, RunError};
use perflab_model::{metric, CounterReading, ExitInfo, Experiment, Machine, Run};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// One recorded run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRun {
    /// The round the run belonged to (0-based, as recorded).
    pub round: u32,
    /// Wall time of the run, seconds.
    pub wall_s: f64,
    /// user + sys.
    pub cpu_s: f64,
    /// Run-queue wait (all of it a neighbour's for the single-threaded loop recorded);
    /// None where the machine could not measure it.
    pub runq_s: Option<f64>,
}

/// A recorded A/A trace: runs in execution order, rounds consecutive.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The file name the trace was read from.
    pub name: String,
    /// The `# key: value` lines of the file's header, in order (machine, load, case, …).
    pub header: Vec<(String, String)>,
    /// Every run, in execution order.
    pub runs: Vec<TraceRun>,
    /// Wall-clock seconds the whole recording took (its warm-up included), when known.
    pub duration_s: Option<f64>,
}

/// A trace that cannot be read.
#[derive(Debug, Error)]
pub enum TraceError {
    #[error("{path}: {source}")]
    /// The file could not be read.
    Io {
        /// The file.
        path: String,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// A line of the file is not a run.
    #[error("{name}, line {line}: {why}")]
    Line {
        /// The trace's name.
        name: String,
        /// The line's number, 1-based.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The trace as a whole cannot be replayed (no runs, rounds out of order, …).
    #[error("{name}: {why}")]
    Trace {
        /// The trace's name.
        name: String,
        /// What is wrong with it.
        why: String,
    },
}

/// The columns of a trace file.
pub const COLUMNS: &str = "round,wall_us,cpu_us,runq_us";

impl Trace {
    /// Read a trace file (see [`Trace::parse`]).
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| TraceError::Io { path: path.display().to_string(), source })?;
        let name = path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
        Trace::parse(&name, &text)
    }

    /// Parse a trace: `# key: value` header lines, the [`COLUMNS`] line, then one run per
    /// line in execution order (microseconds; an empty `runq_us` is an unmeasured wait).
    /// Rounds must not decrease; at least two rounds of positive times are needed.
    pub fn parse(name: &str, text: &str) -> Result<Trace, TraceError> {
        let line_error = |line: usize, why: String| TraceError::Line { name: name.to_string(), line, why };
        let mut header = Vec::new();
        let mut runs: Vec<TraceRun> = Vec::new();
        let mut columns_seen = false;
        for (i, line) in text.lines().enumerate() {
            let number = i + 1;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                if let Some((key, value)) = comment.split_once(':') {
                    header.push((key.trim().to_string(), value.trim().to_string()));
                }
                continue;
            }
            if !columns_seen {
                if line != COLUMNS {
                    return Err(line_error(number, format!("expected the columns `{COLUMNS}`, found `{line}`")));
                }
                columns_seen = true;
                continue;
            }
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() != 4 {
                return Err(line_error(number, format!("expected 4 fields, found {}", fields.len())));
            }
            let micros = |field: &str, what: &str| -> Result<f64, TraceError> {
                let value: f64 =
                    field.parse().map_err(|_| line_error(number, format!("{what} `{field}` is not a number")))?;
                if !(value.is_finite() && value >= 0.0) {
                    return Err(line_error(number, format!("{what} `{field}` must be ≥ 0")));
                }
                Ok(value / 1e6)
            };
            let round: u32 =
                fields[0].parse().map_err(|_| line_error(number, format!("round `{}` is not a count", fields[0])))?;
            if runs.last().is_some_and(|r| r.round > round) {
                return Err(line_error(number, format!("round {round} after round {}", runs[runs.len() - 1].round)));
            }
            let wall_s = micros(fields[1], "wall_us")?;
            if wall_s <= 0.0 {
                return Err(line_error(number, "wall_us must be > 0".into()));
            }
            let runq_s = if fields[3].is_empty() { None } else { Some(micros(fields[3], "runq_us")?) };
            runs.push(TraceRun { round, wall_s, cpu_s: micros(fields[2], "cpu_us")?, runq_s });
        }
        let rounds = runs.windows(2).filter(|w| w[0].round != w[1].round).count() + usize::from(!runs.is_empty());
        if rounds < 2 {
            return Err(TraceError::Trace { name: name.to_string(), why: "fewer than 2 rounds of runs".into() });
        }
        let duration_s = header
            .iter()
            .find(|(k, _)| k == "duration_s")
            .and_then(|(_, v)| v.split_whitespace().next()?.parse::<f64>().ok())
            .filter(|d| d.is_finite() && *d > 0.0);
        Ok(Trace { name: name.to_string(), header, runs, duration_s })
    }

    /// The A/A runs of an experiment of two commands, in execution order (what
    /// `doctor --record-noise` writes); None without two commands' runs.
    pub fn from_experiment(name: &str, experiment: &Experiment) -> Option<Trace> {
        if experiment.commands.len() != 2 {
            return None;
        }
        let mut runs: Vec<(u32, u32, TraceRun)> = experiment
            .commands
            .iter()
            .flat_map(|c| &c.runs)
            .map(|r| {
                let run = TraceRun {
                    round: r.round,
                    wall_s: r.wall_s,
                    cpu_s: r.user_s + r.sys_s,
                    runq_s: r.counters.get(metric::RUNQ_WAIT).filter(|c| c.supported).and_then(|c| c.value),
                };
                (r.round, r.position, run)
            })
            .collect();
        runs.sort_by_key(|(round, position, _)| (*round, *position));
        let runs: Vec<TraceRun> = runs.into_iter().map(|(_, _, r)| r).collect();
        if runs.len() < 4 {
            return None;
        }
        let header = vec![
            ("recorded".to_string(), experiment.started_at.clone()),
            ("machine".to_string(), experiment.machine.describe(&experiment.machine.fingerprint())),
            ("duration_s".to_string(), format!("{:.3}", experiment.duration_s)),
            ("rounds".to_string(), experiment.rounds.to_string()),
        ];
        Some(Trace { name: name.to_string(), header, runs, duration_s: Some(experiment.duration_s) })
    }

    /// The trace as a file [`Trace::parse`] reads back: `comments` first (one `# ` line
    /// each), then the header, the columns and the runs in microseconds.
    pub fn to_csv(&self, comments: &[String]) -> String {
        let mut out = String::new();
        for c in comments {
            out.push_str(&format!("# {c}\n"));
        }
        for (k, v) in &self.header {
            out.push_str(&format!("# {k}: {v}\n"));
        }
        out.push_str(COLUMNS);
        out.push('\n');
        let us = |s: f64| (s * 1e6).round() as u64;
        for r in &self.runs {
            let wait = r.runq_s.map_or(String::new(), |w| us(w).to_string());
            out.push_str(&format!("{},{},{},{wait}\n", r.round, us(r.wall_s), us(r.cpu_s)));
        }
        out
    }

    /// A header value (`load`, `case`, `run`, …).
    pub fn fact(&self, key: &str) -> Option<&str> {
        self.header.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Index of the first run of every round.
    fn round_starts(&self) -> Vec<usize> {
        (0..self.runs.len()).filter(|&i| i == 0 || self.runs[i].round != self.runs[i - 1].round).collect()
    }

    /// The harness's time per run between runs: the recording's duration not spent in
    /// the runs themselves, per run (0 when the duration is unknown).
    pub fn overhead_per_run_s(&self) -> f64 {
        let Some(duration) = self.duration_s else { return 0.0 };
        let walls: f64 = self.runs.iter().map(|r| r.wall_s).sum();
        // The recording's warm-up round ran too: one round's runs more.
        let per_round = self.runs.len() as f64 / self.round_starts().len() as f64;
        ((duration - walls * (1.0 + 1.0 / self.round_starts().len() as f64)) / (self.runs.len() as f64 + per_round))
            .max(0.0)
    }

    /// Mean wall time of a run.
    pub fn mean_run_s(&self) -> f64 {
        self.runs.iter().map(|r| r.wall_s).sum::<f64>() / self.runs.len() as f64
    }

    /// Rounds in about `seconds` of the recording: the default block of a replay.
    pub fn rounds_in(&self, seconds: f64) -> usize {
        let per_round =
            (self.mean_run_s() + self.overhead_per_run_s()) * self.runs.len() as f64 / self.round_starts().len() as f64;
        (seconds / per_round.max(1e-9)).round() as usize
    }

    /// The per-round log ratios of the recorded rounds (second run over first), for a
    /// look at the trace's own noise; rounds of another size than two are skipped.
    pub fn paired_log_ratios(&self) -> Vec<f64> {
        let starts = self.round_starts();
        starts
            .iter()
            .enumerate()
            .filter_map(|(k, &i)| {
                let end = starts.get(k + 1).copied().unwrap_or(self.runs.len());
                (end - i == 2).then(|| (self.runs[i + 1].wall_s / self.runs[i].wall_s).ln())
            })
            .collect()
    }
}

/// Default block length of a replay, in seconds of the recording: longer than the
/// phases seen here (seconds), short enough that a 60 s experiment draws several blocks.
pub const BLOCK_SECONDS: f64 = 10.0;

/// An [`Executor`] replaying a [`Trace`].
pub struct Replay {
    trace: Arc<Trace>,
    starts: Vec<usize>,
    rng: StdRng,
    ratios: Vec<f64>,
    block_rounds: usize,
    /// Next run of the trace to hand out, and runs left in the current block.
    cursor: usize,
    left_in_block: usize,
    overhead_s: f64,
    clock_s: f64,
    interrupt_after_s: Option<f64>,
}

impl Replay {
    /// Commands whose true ratios to the recorded runs are `ratios` (1.0 for the
    /// baseline), replaying `trace` in blocks of [`BLOCK_SECONDS`] (at least 10 rounds, at
    /// most a quarter of the trace).
    pub fn new(trace: Arc<Trace>, seed: u64, ratios: Vec<f64>) -> Replay {
        let rounds = trace.round_starts().len();
        let block = trace.rounds_in(BLOCK_SECONDS).clamp(10, (rounds / 4).max(1));
        Replay::with_blocks(trace, seed, ratios, block)
    }

    /// As [`Replay::new`] with blocks of `block_rounds` rounds.
    pub fn with_blocks(trace: Arc<Trace>, seed: u64, ratios: Vec<f64>, block_rounds: usize) -> Replay {
        let starts = trace.round_starts();
        let overhead_s = trace.overhead_per_run_s();
        Replay {
            starts,
            trace,
            rng: StdRng::seed_from_u64(seed),
            ratios,
            block_rounds: block_rounds.max(1),
            cursor: 0,
            left_in_block: 0,
            overhead_s,
            clock_s: 0.0,
            interrupt_after_s: None,
        }
    }

    /// The user interrupts once the clock passes `seconds`.
    pub fn interrupting_after(mut self, seconds: f64) -> Replay {
        self.interrupt_after_s = Some(seconds);
        self
    }

    fn next_run(&mut self) -> TraceRun {
        if self.left_in_block == 0 {
            let start_round = self.rng.gen_range(0..self.starts.len());
            self.cursor = self.starts[start_round];
            let end_round = start_round + self.block_rounds;
            let end = |round: usize| self.starts.get(round).copied().unwrap_or(self.trace.runs.len());
            // Wrapping around: the block's runs to the trace's end, then from its start.
            self.left_in_block = if end_round <= self.starts.len() {
                end(end_round) - self.cursor
            } else {
                self.trace.runs.len() - self.cursor + end(end_round - self.starts.len())
            };
        }
        let run = self.trace.runs[self.cursor % self.trace.runs.len()];
        self.cursor = (self.cursor + 1) % self.trace.runs.len();
        self.left_in_block -= 1;
        run
    }
}

impl Executor for Replay {
    fn run(&mut self, index: usize, _pad_bytes: Option<usize>) -> Result<Run, RunError> {
        let recorded = self.next_run();
        let r = self.ratios.get(index).copied().unwrap_or(1.0);
        let wall = recorded.wall_s * r;
        self.clock_s += wall + self.overhead_s;
        let mut counters = BTreeMap::new();
        if let Some(wait) = recorded.runq_s {
            let wait = (wait * r).min(wall);
            counters.insert(metric::RUNQ_WAIT.to_string(), CounterReading::value(wait, false));
            // The recorded loop is single-threaded: every wait was a neighbour's.
            counters.insert(metric::NEIGHBOUR_WAIT.to_string(), CounterReading::value(wait, false));
            counters.insert(metric::UNCONTENDED.to_string(), CounterReading::value(wall - wait, false));
        }
        let cpu = recorded.cpu_s * r;
        Ok(Run {
            wall_s: wall,
            user_s: cpu * 0.99,
            sys_s: cpu * 0.01,
            exit: ExitInfo { exit_code: Some(0), signal: None, timed_out: false },
            counters,
            ..Run::default()
        })
    }

    fn elapsed(&self) -> Duration {
        Duration::from_secs_f64(self.clock_s)
    }

    fn interrupted(&self) -> bool {
        self.interrupt_after_s.is_some_and(|at| self.clock_s >= at)
    }

    fn machine(&self) -> Machine {
        Machine {
            hostname: format!("replay of {}", self.trace.name),
            cpu_model: self.trace.fact("machine").unwrap_or("recorded").to_string(),
            cores: 1,
            ..Machine::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str =
        "# perflab noise trace\n# duration_s: 1.0 (wall clock)\n# case: quiet\nround,wall_us,cpu_us,runq_us\n\
0,100000,99000,0\n0,101000,100000,10\n1,102000,100000,\n1,99000,98000,0\n2,100100,99000,0\n2,100500,99000,0\n";

    #[test]
    fn a_trace_parses_and_writes_back_the_same() {
        let t = Trace::parse("tiny", TINY).unwrap();
        assert_eq!(t.runs.len(), 6);
        assert_eq!(t.runs[1], TraceRun { round: 0, wall_s: 0.101, cpu_s: 0.1, runq_s: Some(1e-5) });
        assert_eq!(t.runs[2].runq_s, None);
        assert_eq!((t.fact("case"), t.duration_s), (Some("quiet"), Some(1.0)));
        let again = Trace::parse("tiny", &t.to_csv(&[])).unwrap();
        assert_eq!(again.runs, t.runs);
        assert_eq!(t.paired_log_ratios().len(), 3);
        // 1.0 s for 6 runs of 0.6025 s (+ a warm-up round of about 0.2 s): ~0.025 s between runs.
        assert!((t.overhead_per_run_s() - 0.0249).abs() < 1e-3, "{}", t.overhead_per_run_s());
    }

    #[test]
    fn every_trace_of_the_library_reads_with_its_facts_and_whole_rounds() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/noise");
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .collect();
        paths.sort();
        assert!(paths.len() >= 4, "{paths:?}");
        for path in paths {
            let t = Trace::load(&path).unwrap();
            for fact in ["recorded", "machine", "run", "case", "load", "steal", "rounds"] {
                assert!(t.fact(fact).is_some(), "{}: no `{fact}`", t.name);
            }
            let rounds: usize = t.fact("rounds").unwrap().parse().unwrap();
            assert_eq!(t.runs.len(), 2 * rounds, "{}", t.name);
            assert_eq!(t.paired_log_ratios().len(), rounds, "{}: every round has both runs", t.name);
            assert!(t.duration_s.is_some() && t.overhead_per_run_s() >= 0.0, "{}", t.name);
        }
    }

    #[test]
    fn bad_traces_are_one_line_errors() {
        let cases = [
            ("round,wall,cpu\n0,1,1\n", "line 1: expected the columns"),
            ("round,wall_us,cpu_us,runq_us\n0,1,1\n", "line 2: expected 4 fields"),
            ("round,wall_us,cpu_us,runq_us\n0,x,1,\n", "wall_us `x` is not a number"),
            ("round,wall_us,cpu_us,runq_us\n0,0,1,\n1,2,2,\n", "wall_us must be > 0"),
            ("round,wall_us,cpu_us,runq_us\n1,1,1,\n0,1,1,\n", "round 0 after round 1"),
            ("round,wall_us,cpu_us,runq_us\n0,1,1,\n0,1,1,\n", "fewer than 2 rounds"),
            ("round,wall_us,cpu_us,runq_us\n0,inf,1,\n", "must be ≥ 0"),
        ];
        for (text, want) in cases {
            let err = Trace::parse("t", text).unwrap_err().to_string();
            assert!(err.contains(want), "{err} lacks {want}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn replays_hand_out_recorded_runs_in_blocks_scaled_by_the_ratio() {
        let t = Arc::new(Trace::parse("tiny", TINY).unwrap());
        let walls: Vec<f64> = t.runs.iter().map(|r| r.wall_s).collect();
        let mut replay = Replay::with_blocks(t.clone(), 7, vec![1.0, 1.5], 2);
        let mut got = Vec::new();
        for i in 0..12 {
            let run = replay.run(i % 2, None).unwrap();
            got.push(if i % 2 == 1 { run.wall_s / 1.5 } else { run.wall_s });
        }
        // Every block is two consecutive rounds (4 runs) of the trace, wrapping around.
        for block in got.chunks(4) {
            let start = walls.iter().position(|w| (w - block[0]).abs() < 1e-12).unwrap();
            for (k, w) in block.iter().enumerate() {
                assert!((w - walls[(start + k) % walls.len()]).abs() < 1e-12, "{got:?}");
            }
        }
        assert!(replay.elapsed().as_secs_f64() > 1.2, "wall plus overhead");
        // Deterministic for a seed.
        let mut again = Replay::with_blocks(t, 7, vec![1.0, 1.5], 2);
        let first: Vec<f64> = (0..12).map(|i| again.run(i % 2, None).unwrap().wall_s).collect();
        let mut replay = Replay::with_blocks(Arc::new(Trace::parse("tiny", TINY).unwrap()), 7, vec![1.0, 1.5], 2);
        assert_eq!(first, (0..12).map(|i| replay.run(i % 2, None).unwrap().wall_s).collect::<Vec<_>>());
    }
}
