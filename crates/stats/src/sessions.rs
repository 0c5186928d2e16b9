//! Comparing labels measured in separate sessions: a random-effects model in which every
//! session (one experiment: its runs, minutes or days apart from the next) shifts all of
//! its runs by a session effect of its own, and the difference between two labels is
//! judged against that session-to-session noise, not against the runs' spread alone.
//!
//! On the log scale, run r of session s of label L is ℓ = μ_L + u_s + e_r with
//! u_s ~ (0, τ²) shared by the session's runs and e_r the run noise (Kalibera & Jones,
//! ISMM 2013: the highest level of replication decides the width). A session is
//! summarized by the median of its runs' logs and that median's standard error; a label
//! by the mean of its sessions. τ² comes from three sources, pooled by their degrees of
//! freedom:
//!
//! * repeated sessions of one label (pure replicates: the same code measured again);
//! * the steps between consecutive labels of the history (robustly: a median, so a few
//!   real changes barely move it, and any change makes it larger, never smaller);
//! * a prior τ₀ worth ν₀ degrees of freedom, for a history too short to say (measured on
//!   this project's machine by `scripts/eval-sessions`; see docs/statistics.md).
//!
//! The interval of a difference is Student's t with the Satterthwaite degrees of freedom
//! of its variance. Validated by `examples/session_sim.rs` (known ground truth) and by
//! real A/A sessions on a quiet and a busy machine (`scripts/eval-sessions`).

use super::summary::{mad_scaled, mean, median};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// One session of a label: the location of its runs and how precisely it is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Session {
    /// Median of the runs' natural logs.
    pub location: f64,
    /// Standard error of that median from the runs' spread: 1.2533 · robust σ / √n (the
    /// median's asymptotic efficiency under normal noise); 0 for a session of one run,
    /// whose spread is unknown — the session noise τ covers it.
    pub se: f64,
    /// Runs with a positive finite value that the session was computed from.
    pub runs: usize,
}

impl Session {
    /// A session from its runs' values; None without a positive finite value.
    pub fn of(values: &[f64]) -> Option<Session> {
        let logs: Vec<f64> = values.iter().filter(|v| v.is_finite() && **v > 0.0).map(|v| v.ln()).collect();
        if logs.is_empty() {
            return None;
        }
        let n = logs.len();
        let se = if n > 1 { 1.2533 * mad_scaled(&logs) / (n as f64).sqrt() } else { 0.0 };
        Some(Session { location: median(&logs), se, runs: n })
    }
}

/// What is assumed about session-to-session noise before any history says otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    /// τ₀, on the log scale (0.01 ≈ 1 %).
    pub tau: f64,
    /// How many degrees of freedom of evidence it is worth.
    pub df: f64,
}

/// The session-to-session noise a comparison uses, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionNoise {
    /// τ, on the log scale.
    pub tau: f64,
    /// Degrees of freedom of τ² (prior included).
    pub df: f64,
    /// Degrees of freedom from repeated sessions of a label.
    pub replicate_df: f64,
    /// Degrees of freedom from the steps between consecutive labels.
    pub step_df: f64,
    /// The prior's.
    pub prior_df: f64,
}

/// The efficiency of a median-based variance estimate relative to the sample variance
/// under normal noise (that of the MAD, 0.37): the degrees of freedom a robust estimate
/// from m values is worth.
const ROBUST_EFFICIENCY: f64 = 0.37;
/// Fewer steps than this are not used: their median is not robust to one real change.
const MIN_STEPS: usize = 3;
/// The median of χ²₁: median(d²) / this estimates Var(d) for normal d.
const MEDIAN_CHI2_1: f64 = 0.454_936;

/// The session noise of one machine from its histories — per benchmark, per label in
/// label order, that label's sessions — where `counts(benchmark, i)` says whether the
/// step from label i to i + 1 of that benchmark may be used (the step a comparison tests
/// is left out of the noise it is judged against).
pub fn session_noise(
    histories: &[Vec<Vec<Session>>],
    counts: impl Fn(usize, usize) -> bool,
    prior: Prior,
) -> SessionNoise {
    // Repeated sessions: Σ (ℓ − ℓ̄)² has expectation (k − 1)(τ² + se²).
    let (mut squares, mut within, mut replicate_df) = (0.0, 0.0, 0.0);
    for label in histories.iter().flatten().filter(|sessions| sessions.len() >= 2) {
        let locations: Vec<f64> = label.iter().map(|s| s.location).collect();
        let centre = mean(&locations);
        let k = label.len() as f64;
        squares += locations.iter().map(|l| (l - centre).powi(2)).sum::<f64>();
        within += label.iter().map(|s| s.se * s.se).sum::<f64>() * (k - 1.0) / k;
        replicate_df += k - 1.0;
    }
    let replicate_tau2 = if replicate_df > 0.0 { ((squares - within) / replicate_df).max(0.0) } else { 0.0 };
    // Steps between labels: d = L₂ − L₁ has variance τ²·c + w with c = 1/k₁ + 1/k₂ and
    // w the labels' within-session part; d / √c is robustly scaled by its median square.
    let mut scaled = Vec::new();
    let mut within_scaled = Vec::new();
    for (b, labels) in histories.iter().enumerate() {
        for (i, pair) in labels.windows(2).enumerate() {
            if pair[0].is_empty() || pair[1].is_empty() || !counts(b, i) {
                continue;
            }
            let (l1, w1) = label_mean(&pair[0]);
            let (l2, w2) = label_mean(&pair[1]);
            let c = 1.0 / pair[0].len() as f64 + 1.0 / pair[1].len() as f64;
            scaled.push((l2 - l1).powi(2) / c);
            within_scaled.push((w1 + w2) / c);
        }
    }
    // A median of one or two steps is their mean: one real change would be all of it.
    if scaled.len() < MIN_STEPS {
        scaled.clear();
    }
    let step_df = ROBUST_EFFICIENCY * scaled.len() as f64;
    let step_tau2 =
        if scaled.is_empty() { 0.0 } else { (median(&scaled) / MEDIAN_CHI2_1 - median(&within_scaled)).max(0.0) };
    let prior_df = prior.df.max(0.0);
    let df = prior_df + replicate_df + step_df;
    let tau2 = if df > 0.0 {
        (prior_df * prior.tau * prior.tau + replicate_df * replicate_tau2 + step_df * step_tau2) / df
    } else {
        prior.tau * prior.tau
    };
    SessionNoise { tau: tau2.sqrt(), df, replicate_df, step_df, prior_df }
}

/// A label's location (mean of its sessions) and the within-session part of that mean's
/// variance.
fn label_mean(sessions: &[Session]) -> (f64, f64) {
    let k = sessions.len() as f64;
    let location = sessions.iter().map(|s| s.location).sum::<f64>() / k;
    let within = sessions.iter().map(|s| s.se * s.se).sum::<f64>() / (k * k);
    (location, within)
}

/// Label b against label a, on the log scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// mean(b's sessions) − mean(a's sessions).
    pub estimate: f64,
    /// Standard error of `estimate`: within-session error and session noise τ together.
    pub se: f64,
    /// Satterthwaite degrees of freedom of `se²`.
    pub df: f64,
    /// Lower bound of the interval of `estimate` (log scale).
    pub low: f64,
    /// Upper bound of the interval of `estimate` (log scale).
    pub high: f64,
    /// Two-sided p-value of "no difference".
    pub p_value: f64,
}

/// The difference of label `b` from label `a` with its interval at `confidence`, under
/// session noise `noise`; None when a side has no session.
pub fn difference(a: &[Session], b: &[Session], noise: &SessionNoise, confidence: f64) -> Option<Difference> {
    if a.is_empty() || b.is_empty() || !super::valid_confidence(confidence) {
        return None;
    }
    let (la, wa) = label_mean(a);
    let (lb, wb) = label_mean(b);
    let c = 1.0 / a.len() as f64 + 1.0 / b.len() as f64;
    let between = noise.tau * noise.tau * c;
    let variance = between + wa + wb;
    let estimate = lb - la;
    let se = variance.sqrt();
    // Only τ² is estimated with few degrees of freedom; the runs' part is known well.
    let df = if between > 0.0 && noise.df > 0.0 {
        (variance * variance / (between * between / noise.df)).min(1e6)
    } else {
        1e6
    };
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let half = t.inverse_cdf(0.5 + confidence / 2.0) * se;
    let p_value = if se > 0.0 {
        (2.0 * t.sf((estimate / se).abs())).min(1.0)
    } else if estimate == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(Difference { estimate, se, df, low: estimate - half, high: estimate + half, p_value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(location: f64) -> Session {
        Session { location, se: 0.001, runs: 30 }
    }

    const PRIOR: Prior = Prior { tau: 0.01, df: 4.0 };

    #[test]
    fn a_session_is_the_median_log_and_its_standard_error() {
        let x = Session::of(&[1.0, 1.0, std::f64::consts::E, 0.0, f64::NAN]).unwrap();
        assert_eq!((x.location, x.runs), (0.0, 3));
        assert!(x.se >= 0.0);
        assert_eq!(Session::of(&[2.0]).unwrap().se, 0.0);
        assert_eq!(Session::of(&[0.0, -1.0]), None);
    }

    #[test]
    fn without_history_the_prior_is_the_noise() {
        let noise = session_noise(&[vec![vec![s(0.0)], vec![s(0.1)]]], |_, _| false, PRIOR);
        assert_eq!((noise.tau, noise.df, noise.step_df, noise.replicate_df), (0.01, 4.0, 0.0, 0.0));
        // Two single sessions 0.1 apart against τ = 1 % with 4 df: clearly different.
        let d = difference(&[s(0.0)], &[s(0.1)], &noise, 0.95).unwrap();
        assert!(d.low > 0.0 && d.p_value < 0.01, "{d:?}");
        // 2 % apart is within what two sessions differ by.
        let d = difference(&[s(0.0)], &[s(0.02)], &noise, 0.95).unwrap();
        assert!(d.low < 0.0 && d.high > 0.02, "{d:?}");
        // The interval is Student's t with about the prior's df: t₄(0.975) = 2.776 (the
        // runs' own part adds a little).
        assert!((4.0..4.2).contains(&d.df), "{d:?}");
        assert!((d.high - d.estimate - 2.776 * d.se).abs() < 0.03 * d.se, "{d:?}");
    }

    #[test]
    fn repeated_sessions_size_the_noise() {
        // Labels measured three times each; sessions spread by ±0.5 %.
        let label = |c: f64| vec![s(c - 0.005), s(c), s(c + 0.005)];
        let history = vec![label(0.0), label(0.3), label(0.31)];
        let noise = session_noise(&[history], |_, _| false, Prior { tau: 0.01, df: 0.0 });
        assert_eq!(noise.replicate_df, 6.0);
        assert!((noise.tau - 0.005).abs() < 0.0005, "{noise:?}");
    }

    #[test]
    fn steps_between_labels_size_the_noise_robustly_and_the_tested_step_is_left_out() {
        // 40 labels whose sessions wobble by ±1 %, and one real 30 % step.
        let mut labels: Vec<Vec<Session>> =
            (0..40).map(|i| vec![s(0.01 * ((i * 7919 % 13) as f64 / 6.0 - 1.0))]).collect();
        for l in labels.iter_mut().skip(20) {
            l[0].location += 0.3;
        }
        let with = session_noise(&[labels.clone()], |_, _| true, Prior { tau: 0.05, df: 0.0 });
        assert!(with.tau < 0.02, "the real step barely moves a median: {with:?}");
        assert!((with.step_df - 0.37 * 39.0).abs() < 1e-9);
        let without = session_noise(&[labels], |_, i| i != 19, Prior { tau: 0.05, df: 0.0 });
        assert!((without.step_df - 0.37 * 38.0).abs() < 1e-9);
        // Two steps are no median: the prior alone.
        let short = session_noise(&[vec![vec![s(0.0)], vec![s(0.0)], vec![s(0.3)]]], |_, _| true, PRIOR);
        assert_eq!((short.step_df, short.tau), (0.0, 0.01));
    }

    #[test]
    fn more_sessions_narrow_the_interval() {
        let noise = SessionNoise { tau: 0.01, df: 20.0, replicate_df: 20.0, step_df: 0.0, prior_df: 0.0 };
        let one = difference(&[s(0.0)], &[s(0.0)], &noise, 0.95).unwrap();
        let four = difference(&[s(0.0); 4], &[s(0.0); 4], &noise, 0.95).unwrap();
        assert!(four.high < one.high / 1.9, "{one:?} {four:?}");
        assert_eq!(one.p_value, 1.0);
    }
}
