//! The ratio of a metric between two labels of one benchmark on one machine, with its
//! interval and verdict: as a stored paired comparison says it, or from the labels'
//! sessions with the machine's session-to-session noise (each label is one or more
//! sessions, never a pile of independent runs). Which of them answers for a pair is
//! decided in one place, [`super::pair`].

use super::sessions::LabelSessions;
use perflab_engine::analysis::BUSY_SHARE;
use perflab_model::metric::{self, Better};
use perflab_model::{Comparison, Verdict};
use perflab_stats::sessions::{difference, Prior, SessionNoise};
use serde::Serialize;

/// The confidence of every interval computed here from runs.
pub(crate) const CONFIDENCE: f64 = 0.95;
/// Equivalence margin for independent comparisons when the experiments record none.
pub const DEFAULT_THRESHOLD: f64 = 0.01;
/// The session-to-session noise assumed before a machine's history says otherwise: τ₀
/// (log scale) and the degrees of freedom it is worth. Sized from A/A sessions measured
/// minutes apart on this project's 2-core VM, quiet and beside a busy neighbour
/// (`scripts/eval-sessions`; docs/statistics.md).
pub const SESSION_PRIOR: Prior = Prior { tau: 0.01, df: 4.0 };

/// How a ratio's confidence interval was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CiMethod {
    /// Both labels ran interleaved in one experiment: the paired comparison's interval
    /// (Hodges–Lehmann with the Wilcoxon signed-rank interval on per-round log ratios).
    Paired,
    /// The labels' runs as independent samples: the Hodges–Lehmann interval on log
    /// values (Mann–Whitney). Too narrow for labels measured in separate sessions (it
    /// ignores that a session shifts all of its runs); kept for results that have no
    /// sessions to tell apart.
    Independent,
    /// The labels were measured in separate sessions: each session's median, the labels'
    /// means of them, and Student's t interval with the session-to-session noise.
    Sessions,
}

impl CiMethod {
    /// How the interval was computed, in a phrase for explanations.
    pub fn describe(self) -> &'static str {
        match self {
            CiMethod::Paired => "paired, interleaved runs",
            CiMethod::Independent => "independent runs",
            CiMethod::Sessions => "separate sessions, with their session-to-session noise",
        }
    }

    /// The method in a word or two, printed beside every ratio it made.
    pub fn short(self) -> &'static str {
        match self {
            CiMethod::Paired => "paired",
            CiMethod::Independent => "independent runs",
            CiMethod::Sessions => "separate sessions",
        }
    }
}

/// label ÷ reference of a metric (> 1: more than under the reference): the one record of
/// a pair's comparison that every view prints (see [`super::pair`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    /// The metric compared (a pair measured in one session is compared on the metric that
    /// session decided on unless another is asked for).
    pub metric: String,
    /// label ÷ reference.
    pub ratio: f64,
    /// Lower bound of its interval.
    pub ci_low: f64,
    /// Upper bound of its interval.
    pub ci_high: f64,
    /// Confidence of [`ci_low`, `ci_high`] (0.95 for 95 %).
    pub confidence: f64,
    /// p-value of "no difference"; None when the method gives none.
    pub p_value: Option<f64>,
    /// What the interval says, in the metric's direction.
    pub verdict: Verdict,
    /// How the interval was computed.
    pub method: CiMethod,
    /// Runs (or paired rounds, or sessions) behind the ratio: the smaller side.
    pub n: usize,
    /// With [`CiMethod::Sessions`]: the session-to-session noise used (σ on the log scale).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_noise: Option<f64>,
    /// Why the verdict is withheld, or what to keep in mind reading it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Ratio {
    /// True when the interval excludes 1 (a difference at its confidence).
    pub fn significant(&self) -> bool {
        self.ci_low > 1.0 || self.ci_high < 1.0
    }
}

/// `b` ÷ `a` from their sessions under session noise `noise`: the verdict for a metric
/// that improves in the direction `better`. Wall time of a label measured on a busy
/// machine is not compared with that of a quiet one: the ratio is shown, the verdict
/// withheld, with the reason.
pub fn between_sessions(
    a: &LabelSessions,
    b: &LabelSessions,
    metric: &str,
    noise: &SessionNoise,
    threshold: f64,
    better: Better,
) -> Option<Ratio> {
    between_sessions_at(a, b, metric, noise, threshold, better, CONFIDENCE)
}

/// [`between_sessions`] with its interval at `confidence` (a family's share: `history`'s
/// check of a label against its predecessor, see [`super::family_level`]).
pub fn between_sessions_at(
    a: &LabelSessions,
    b: &LabelSessions,
    metric: &str,
    noise: &SessionNoise,
    threshold: f64,
    better: Better,
    confidence: f64,
) -> Option<Ratio> {
    let d = difference(&a.sessions, &b.sessions, noise, confidence)?;
    let (lo, hi) = (d.low.exp(), d.high.exp());
    let (mut verdict, _) = perflab_engine::analysis::verdict::classify(lo, hi, threshold, better);
    let mut note = None;
    if metric == metric::WALL {
        let busy = |l: &LabelSessions| l.busy_share.filter(|s| *s >= BUSY_SHARE);
        if let Some((busy_label, share, quiet_label)) = match (busy(a), busy(b)) {
            (Some(s), None) => Some((&a.label, s, &b.label)),
            (None, Some(s)) => Some((&b.label, s, &a.label)),
            _ => None,
        } {
            verdict = Verdict::Inconclusive;
            note = Some(format!(
                "`{busy_label}` was measured on a busy machine ({:.0} % of wall time waiting for a CPU) and `{quiet_label}` on a quiet one: their wall times are not comparable (compare uncontended_s)",
                share * 100.0
            ));
        }
    }
    Some(Ratio {
        metric: metric.to_string(),
        ratio: d.estimate.exp(),
        ci_low: lo,
        ci_high: hi,
        confidence,
        p_value: Some(d.p_value),
        verdict,
        method: CiMethod::Sessions,
        n: a.sessions.len().min(b.sessions.len()),
        session_noise: Some(noise.tau),
        note,
    })
}

/// A stored paired comparison as a ratio, `inverted` when it ran the other way round.
pub fn paired(c: &Comparison, inverted: bool) -> Ratio {
    let (ratio, ci_low, ci_high, verdict) = if inverted {
        let flipped = match c.verdict {
            Verdict::Faster => Verdict::Slower,
            Verdict::Slower => Verdict::Faster,
            v => v,
        };
        (1.0 / c.ratio, 1.0 / c.ci_high, 1.0 / c.ci_low, flipped)
    } else {
        (c.ratio, c.ci_low, c.ci_high, c.verdict)
    };
    Ratio {
        metric: c.metric.clone(),
        ratio,
        ci_low,
        ci_high,
        confidence: c.confidence,
        p_value: Some(c.p_value),
        verdict,
        method: CiMethod::Paired,
        n: c.n,
        session_noise: None,
        note: None,
    }
}

/// Ratio of locations from separately measured runs: the Hodges–Lehmann shift of the log
/// values and its Mann–Whitney interval, exponentiated; None for values ≤ 0 or samples
/// too small for an interval (about 4 each at 95 %). The verdict is for a metric that
/// improves in the direction `better`.
pub fn independent(metric: &str, base: &[f64], cand: &[f64], threshold: f64, better: Better) -> Option<Ratio> {
    if base.iter().chain(cand).any(|&v| v <= 0.0) {
        return None;
    }
    let ln_base: Vec<f64> = base.iter().map(|v| v.ln()).collect();
    let ln_cand: Vec<f64> = cand.iter().map(|v| v.ln()).collect();
    let (shift, interval) = perflab_stats::rank_sum::shift_with_interval(&ln_base, &ln_cand, CONFIDENCE)?;
    let (lo, hi) = (interval.low.exp(), interval.high.exp());
    Some(Ratio {
        metric: metric.to_string(),
        ratio: shift.exp(),
        ci_low: lo,
        ci_high: hi,
        confidence: interval.achieved_confidence,
        p_value: Some(perflab_stats::rank_sum::mann_whitney(&ln_base, &ln_cand).p_value),
        verdict: perflab_engine::analysis::verdict::classify(lo, hi, threshold, better).0,
        method: CiMethod::Independent,
        n: base.len().min(cand.len()),
        session_noise: None,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independent_ratio_covers_the_true_ratio_and_classifies_it() {
        let base: Vec<f64> = (0..8).map(|i| 1.0 + 0.002 * i as f64).collect();
        let cand: Vec<f64> = base.iter().map(|v| v * 1.5).collect();
        let r = independent("wall_s", &base, &cand, 0.01, Better::Lower).unwrap();
        assert_eq!(independent("wall_s", &base, &cand, 0.01, Better::Higher).unwrap().verdict, Verdict::Faster);
        assert!(r.ci_low <= 1.5 && 1.5 <= r.ci_high && r.significant(), "{r:?}");
        assert_eq!((r.verdict, r.method, r.n), (Verdict::Slower, CiMethod::Independent, 8));
        assert!(
            independent("wall_s", &base[..3], &cand[..3], 0.01, Better::Lower).is_none(),
            "no 95 % interval for 3 and 3"
        );
        assert!(independent("wall_s", &[0.0; 8], &cand, 0.01, Better::Lower).is_none());
    }
}
