//! Stored experiments as sessions: every experiment is one session of its label (its
//! measured command's runs, measured together), with how busy the machine was; a
//! machine's session-to-session noise from its whole history; and the metric `history`
//! and `report` compare by default — the one the sessions decided on.

use super::measured_values;
use crate::StoredExperiment;
use perflab_engine::analysis::BUSY_SHARE;
use perflab_model::metric;
use perflab_stats::sessions::{session_noise, Prior, Session, SessionNoise};
use perflab_sys::spawn::contention::{self, BUSY_FACT};
use std::collections::HashMap;

/// How busy the machine was during an experiment: the recorded fact, else (an older
/// experiment read in full) its runs' waits; None when unknown.
pub fn busy_share(e: &StoredExperiment) -> Option<f64> {
    if let Some(share) = e.experiment.environment.get(BUSY_FACT).and_then(|v| v.parse::<f64>().ok()) {
        return Some(share);
    }
    contention::busy_share(e.experiment.commands.iter().flat_map(|c| &c.runs))
}

/// One label's sessions of one benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSessions {
    /// The label.
    pub label: String,
    /// One session per experiment with runs of the metric.
    pub sessions: Vec<Session>,
    /// The share of its sessions' wall time spent waiting behind neighbours (their mean),
    /// None when no session recorded it.
    pub busy_share: Option<f64>,
}

impl LabelSessions {
    /// True when its sessions were measured on a busy machine (their runs waited behind
    /// neighbours for at least `BUSY_SHARE` of their wall time).
    pub fn busy(&self) -> bool {
        self.busy_share.is_some_and(|s| s >= BUSY_SHARE)
    }
}

/// One benchmark's labels, in label order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BenchmarkSessions {
    /// The benchmark's name.
    pub benchmark: String,
    /// Its labels, in label order.
    pub labels: Vec<LabelSessions>,
}

/// A benchmark with no sessions (what a lookup that finds none stands for).
pub static NO_SESSIONS: BenchmarkSessions = BenchmarkSessions { benchmark: String::new(), labels: Vec::new() };

impl BenchmarkSessions {
    /// The sessions of `label`, if it has any.
    pub fn label(&self, label: &str) -> Option<&LabelSessions> {
        self.labels.iter().find(|l| l.label == label)
    }
}

/// The sessions of `metric` in `experiments` (one machine's, oldest label first), per
/// benchmark in order of appearance.
pub fn collect<'a>(
    experiments: impl IntoIterator<Item = &'a StoredExperiment>,
    metric: &str,
) -> Vec<BenchmarkSessions> {
    let mut out: Vec<BenchmarkSessions> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut busy: HashMap<(usize, usize), Vec<f64>> = HashMap::new();
    for e in experiments {
        let Some(session) = Session::of(&measured_values(e, metric)) else { continue };
        let b = *at.entry(&e.benchmark).or_insert_with(|| {
            out.push(BenchmarkSessions { benchmark: e.benchmark.clone(), labels: Vec::new() });
            out.len() - 1
        });
        let labels = &mut out[b].labels;
        let l = match labels.iter().position(|l| l.label == e.label) {
            Some(l) => l,
            None => {
                labels.push(LabelSessions { label: e.label.clone(), sessions: Vec::new(), busy_share: None });
                labels.len() - 1
            }
        };
        labels[l].sessions.push(session);
        if let Some(share) = busy_share(e) {
            busy.entry((b, l)).or_default().push(share);
        }
    }
    for ((b, l), shares) in busy {
        out[b].labels[l].busy_share = Some(shares.iter().sum::<f64>() / shares.len() as f64);
    }
    out
}

/// With more steps than this on a machine, leaving the tested one out of the noise it
/// is judged against changes a median of them by nothing that matters (and keeping it
/// can only make the noise larger): the noise is computed once.
const STEPS_TO_LEAVE_ONE_IN: usize = 50;

/// A machine's session noise, computed once for all its comparisons and again, without
/// the tested step, only where one step matters.
#[derive(Debug, Clone)]
pub struct MachineNoise {
    histories: Vec<Vec<Vec<Session>>>,
    labels: Vec<Vec<String>>,
    steps: usize,
    all: SessionNoise,
    prior: Prior,
}

impl MachineNoise {
    /// The machine's session noise from every benchmark's history, with `prior` for a short one.
    pub fn new(benchmarks: &[BenchmarkSessions], prior: Prior) -> MachineNoise {
        let histories: Vec<Vec<Vec<Session>>> =
            benchmarks.iter().map(|b| b.labels.iter().map(|l| l.sessions.clone()).collect()).collect();
        let labels = benchmarks.iter().map(|b| b.labels.iter().map(|l| l.label.clone()).collect()).collect();
        let steps = histories.iter().map(|h| h.len().saturating_sub(1)).sum();
        let all = session_noise(&histories, |_, _| true, prior);
        MachineNoise { histories, labels, steps, all, prior }
    }

    /// The noise to judge `a` against `b` with: every step of the machine's history
    /// except those to or from `a` or `b` (on any benchmark) — a step touching a compared
    /// label carries the very difference being tested.
    pub fn between(&self, a: &str, b: &str) -> SessionNoise {
        if self.steps > STEPS_TO_LEAVE_ONE_IN {
            return self.all;
        }
        let touches = |bench: usize, i: usize| {
            let names = &self.labels[bench];
            [names[i].as_str(), names[i + 1].as_str()].iter().any(|n| *n == a || *n == b)
        };
        session_noise(&self.histories, |bench, i| !touches(bench, i), self.prior)
    }
}

/// The metric `history` and `report` compare when none is asked for, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// The metric.
    pub metric: String,
    /// The line saying so.
    pub why: String,
}

/// The metric the stored sessions were decided on: `uncontended_s` when any session was
/// decided on it or ran on a busy machine (busy wall time is never compared with quiet
/// wall time), else the metric most of them decided on (a printed metric such as `tps`,
/// `instructions`, or `wall_s`).
pub fn decided_metric(experiments: &[StoredExperiment]) -> Decided {
    let busy: Vec<&str> = labels_where(experiments, |e| busy_share(e).is_some_and(|s| s >= BUSY_SHARE));
    let uncontended: Vec<&str> = labels_where(experiments, |e| e.experiment.primary_metric == metric::UNCONTENDED);
    if !busy.is_empty() || !uncontended.is_empty() {
        let mut labels = busy.clone();
        labels.extend(uncontended.iter().filter(|l| !busy.contains(l)));
        return Decided {
            metric: metric::UNCONTENDED.to_string(),
            why: format!(
                "comparing uncontended_s (wall time minus the wait behind neighbours), the metric the sessions decided on: {} ran on a busy machine; --metric wall_s compares wall time",
                list(&labels)
            ),
        };
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for e in experiments {
        let m = e.experiment.primary_metric.as_str();
        match counts.iter_mut().find(|(name, _)| *name == m) {
            Some((_, n)) => *n += 1,
            None => counts.push((m, 1)),
        }
    }
    let metric = counts.iter().max_by_key(|(_, n)| *n).map_or(metric::WALL, |(m, _)| m).to_string();
    let why = format!("comparing {metric}, the metric the sessions decided on (--metric names another)");
    Decided { metric, why }
}

/// The metric to compare `experiments` by (read for `wall_s`, which every session has):
/// `asked` when given, else [`decided_metric`]; `reread` reads them again for another
/// metric. When the decided `uncontended_s` is missing from sessions that have wall time
/// (stored before perflab measured it, or runs with other threads and no cgroup), wall
/// time is compared instead — the busy labels' verdicts are then withheld — and the
/// line says so. Returns the metric, the experiments read for it, and the line to show.
pub fn choose_metric<E>(
    asked: Option<&str>,
    wall: Vec<StoredExperiment>,
    mut reread: impl FnMut(&str) -> Result<Vec<StoredExperiment>, E>,
) -> Result<(String, Vec<StoredExperiment>, Option<String>), E> {
    if let Some(metric) = asked {
        let experiments = if metric == metric::WALL { wall } else { reread(metric)? };
        return Ok((metric.to_string(), experiments, None));
    }
    let decided = decided_metric(&wall);
    if decided.metric == metric::WALL {
        return Ok((decided.metric, wall, Some(decided.why)));
    }
    let experiments = reread(&decided.metric)?;
    let has = |list: &[StoredExperiment], m: &str| {
        list.iter()
            .filter(|e| !measured_values(e, m).is_empty())
            .map(|e| e.id)
            .collect::<std::collections::HashSet<_>>()
    };
    let (with_wall, with_decided) = (has(&wall, metric::WALL), has(&experiments, &decided.metric));
    let missing = with_wall.difference(&with_decided).count();
    if decided.metric == metric::UNCONTENDED && missing > 0 {
        let why = format!(
            "comparing wall_s: {missing} session(s) have no uncontended_s (stored before perflab measured it, or runs with other threads and no cgroup); wall times of labels measured on a busy machine are not compared with quiet ones"
        );
        return Ok((metric::WALL.to_string(), wall, Some(why)));
    }
    Ok((decided.metric, experiments, Some(decided.why)))
}

fn labels_where(experiments: &[StoredExperiment], keep: impl Fn(&StoredExperiment) -> bool) -> Vec<&str> {
    let mut labels: Vec<&str> = Vec::new();
    for e in experiments.iter().filter(|e| keep(e)) {
        if !labels.contains(&e.label.as_str()) {
            labels.push(&e.label);
        }
    }
    labels
}

/// `a`, `a and b`, `a, b and 3 more`.
fn list(labels: &[&str]) -> String {
    let quoted: Vec<String> = labels.iter().take(3).map(|l| format!("`{l}`")).collect();
    match (labels.len(), quoted.as_slice()) {
        (1, [a]) => a.clone(),
        (2, [a, b]) => format!("{a} and {b}"),
        (3, [a, b, c]) => format!("{a}, {b} and {c}"),
        (n, shown) => format!("{} and {} more", shown.join(", "), n - shown.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::stored;

    fn busy(mut e: StoredExperiment, share: f64) -> StoredExperiment {
        e.experiment.environment.insert(BUSY_FACT.into(), share.to_string());
        e
    }

    #[test]
    fn every_experiment_is_a_session_of_its_label() {
        let exps = [
            stored("v1", 1, "a", "h", &[1.0, 1.0, 1.0]),
            busy(stored("v1", 1, "a", "h", &[2.0, 2.0]), 0.5),
            stored("v2", 2, "a", "h", &[1.0]),
            stored("v1", 1, "b", "h", &[3.0]),
        ];
        let s = collect(&exps, metric::WALL);
        assert_eq!(s.len(), 2);
        let v1 = s[0].label("v1").unwrap();
        assert_eq!(v1.sessions.len(), 2);
        assert!((v1.sessions[1].location - 2f64.ln()).abs() < 1e-12);
        assert_eq!(v1.busy_share, Some(0.5), "the sessions that recorded it (the other's runs have no waits)");
        assert_eq!(s[1].labels[0].sessions.len(), 1);
    }

    #[test]
    fn the_default_metric_is_what_the_sessions_decided_on() {
        let quiet = [stored("v1", 1, "a", "h", &[1.0]), stored("v2", 2, "a", "h", &[1.0])];
        assert_eq!(decided_metric(&quiet).metric, metric::WALL);
        let one_busy = [busy(stored("v1", 1, "a", "h", &[1.0]), 0.48), stored("v2", 2, "a", "h", &[1.0])];
        let d = decided_metric(&one_busy);
        assert_eq!(d.metric, metric::UNCONTENDED);
        assert!(d.why.contains("`v1` ran on a busy machine") && d.why.contains("--metric wall_s"), "{}", d.why);
        let mut printed = stored("v1", 1, "a", "h", &[1.0]);
        printed.experiment.primary_metric = "tps".into();
        assert_eq!(decided_metric(&[printed]).metric, "tps");
    }

    #[test]
    fn steps_touching_the_compared_labels_are_left_out_of_a_short_history() {
        // Five labels of unchanged code wobbling by 1 %, then a 30 % step to v5.
        let level = [1.0, 1.01, 0.99, 1.0, 1.01, 1.3];
        let exps: Vec<StoredExperiment> =
            level.iter().enumerate().map(|(i, l)| stored(&format!("v{i}"), i as i64, "a", "h", &[*l])).collect();
        let s = collect(&exps, metric::WALL);
        let noise = MachineNoise::new(&s, Prior { tau: 0.01, df: 4.0 });
        let all = noise.between("x", "y");
        let tested = noise.between("v4", "v5");
        assert!((all.step_df - 5.0 * 0.37).abs() < 1e-9 && (tested.step_df - 3.0 * 0.37).abs() < 1e-9, "{tested:?}");
        assert!(tested.tau < all.tau, "the 30 % step is not its own noise: {all:?} {tested:?}");
    }
}
