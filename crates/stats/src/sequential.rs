//! Group-sequential boundaries: how wide each look's interval must be so that looking
//! repeatedly and stopping at the first decisive look keeps the family-wise error α.
//!
//! Two-sided boundaries c₁, c₂, … for the standardized statistics Z_k at information
//! fractions t₁ < t₂ < … ≤ 1, from a Lan–DeMets spending function α*(t) (Lan & DeMets,
//! Biometrika 1983): the probability of first crossing ±c_k at look k, under the null
//! and the canonical joint distribution (Z_k √t_k a Brownian motion at times t_k), is
//! α*(t_k) − α*(t_{k−1}). The same constants give repeated confidence intervals that
//! hold simultaneously at every look with probability 1 − α (Jennison & Turnbull,
//! *Group Sequential Methods*, 2000, ch. 9).
//!
//! Computed by the recursive numerical integration of Armitage, McPherson & Rowe (1969)
//! (Jennison & Turnbull ch. 19): the sub-density of the score S_k = Z_k √t_k on the
//! continuation region is carried from look to look on a grid and integrated with
//! Simpson's rule. Written here because no maintained Rust crate computes these; checked
//! against a published table and an independent SciPy computation
//! (`tests/data/sequential_boundaries.json`).

use super::{normal_upper_quantile, standard_normal_cdf};

/// How α is spent over the information fraction t ∈ (0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spending {
    /// α ln(1 + (e − 1) t) (Lan & DeMets 1983): spends early, like Pocock's constant
    /// boundary — for stopping soon on clear differences.
    Pocock,
    /// 2 − 2Φ(z_{α/4} / √t) on each side (Lan & DeMets 1983, with α/2 per side as in
    /// R's ldbounds): almost nothing early, like O'Brien & Fleming's boundary — for
    /// keeping the final look close to a fixed-size test.
    OBrienFleming,
    /// α ln(t / t₀) / ln(1 / t₀) from t₀ on: the same share of α for every doubling of
    /// the rounds, so a geometric look schedule spends evenly over its looks — much
    /// earlier than Pocock-type spending when the horizon is long.
    Logarithmic {
        /// t₀: the information fraction (0 < t₀ < 1) before which nothing is spent.
        start: f64,
    },
    /// The logarithmic spending's share raised to a power p < 1:
    /// α (ln(t / t₀) / ln(1 / t₀))ᵖ — more of α in the first doublings, where most
    /// comparisons decide, less in the last ones, which only changes near the threshold
    /// reach.
    LogPower {
        /// t₀: the information fraction (0 < t₀ < 1) before which nothing is spent.
        start: f64,
        /// p (0 < p ≤ 1; 1 is [`Spending::Logarithmic`]).
        power: f64,
    },
    /// Logarithmic spending around a planned fixed size t₁ (the rounds a fixed-n test
    /// at the pilot's noise would need): `early` · α evenly per doubling from t₀ to t₁,
    /// `at_plan` · α more at t₁, and the rest evenly per doubling from t₁ to 1. Most of α
    /// goes where a decision is likely, so the look at t₁ is nearly as narrow as a
    /// fixed-size test's, while early looks still catch large changes and later ones
    /// keep the horizon reachable (docs/statistics.md, *Planned from the pilot's noise*).
    Planned {
        /// t₀: nothing is spent before it.
        start: f64,
        /// t₁ (t₀ ≤ t₁ ≤ 1): the planned fixed size's information fraction.
        plan: f64,
        /// Share of α spent between t₀ and t₁.
        early: f64,
        /// Share of α spent at t₁.
        at_plan: f64,
    },
}

impl Spending {
    /// Cumulative α spent by information fraction `t` (α at t ≥ 1).
    pub fn spent(self, alpha: f64, t: f64) -> f64 {
        let t = t.clamp(0.0, 1.0);
        if t <= 0.0 {
            return 0.0;
        }
        match self {
            Spending::Pocock => alpha * (1.0 + (std::f64::consts::E - 1.0) * t).ln(),
            Spending::OBrienFleming => 4.0 * (1.0 - standard_normal_cdf(normal_upper_quantile(alpha / 4.0) / t.sqrt())),
            Spending::Logarithmic { start } if t <= start => 0.0,
            Spending::Logarithmic { start } => alpha * (t / start).ln() / (1.0 / start).ln(),
            Spending::LogPower { start, .. } if t <= start => 0.0,
            Spending::LogPower { start, power } => alpha * ((t / start).ln() / (1.0 / start).ln()).powf(power),
            Spending::Planned { start, .. } if t <= start => 0.0,
            Spending::Planned { start, plan, early, .. } if t < plan => {
                alpha * early * (t / start).ln() / (plan / start).ln()
            }
            Spending::Planned { .. } if t >= 1.0 => alpha,
            Spending::Planned { plan, early, at_plan, .. } => {
                let before = (early + at_plan).min(1.0);
                alpha * (before + (1.0 - before) * (t / plan).ln() / (1.0 / plan).ln())
            }
        }
        .min(alpha)
    }
}

/// Grid points per look (odd, for Simpson's rule). The sub-densities are smooth, so 101
/// points give the same boundaries as 1,601 to 1e-7 and agree with the SciPy reference
/// as closely as its own error allows (tests/stats_vectors.rs).
const GRID: usize = 101;

/// A boundary at which no crossing is possible (nothing to spend at that look).
pub(crate) const NEVER: f64 = f64::INFINITY;

/// The sub-density of the score on the continuation region after the last look.
#[derive(Debug, Clone)]
struct Density {
    t: f64,
    /// Grid points (score scale) and the sub-density there, with Simpson weights folded in.
    points: Vec<f64>,
    weighted: Vec<f64>,
}

/// Boundaries computed look by look, as the looks happen (their information fractions
/// need not be known in advance).
#[derive(Debug, Clone)]
pub struct Boundaries {
    alpha: f64,
    spending: Spending,
    spent: f64,
    last: Option<Density>,
    /// (t_k, c_k) of every look taken so far.
    pub looks: Vec<(f64, f64)>,
}

impl Boundaries {
    /// Boundaries spending a two-sided `alpha` over the looks by `spending`; no look taken yet.
    pub fn new(alpha: f64, spending: Spending) -> Boundaries {
        Boundaries { alpha, spending, spent: 0.0, last: None, looks: Vec::new() }
    }

    /// The boundary c_k for a look at information fraction `t` (> the previous look's),
    /// spending up to α*(t); `final_look` spends everything left. Does not record the
    /// look: call [`Boundaries::take`] when it is used.
    pub fn boundary(&self, t: f64, final_look: bool) -> f64 {
        let target = if final_look { self.alpha } else { self.spending.spent(self.alpha, t) };
        let increment = target - self.spent;
        if increment <= 1e-15 {
            return NEVER;
        }
        match &self.last {
            None => normal_upper_quantile(increment / 2.0),
            Some(previous) => {
                let crossing = |c: f64| crossing_probability(previous, t, c * t.sqrt());
                if crossing(0.0) <= increment {
                    return 0.0;
                }
                // Crossing falls as the boundary widens; bisect on c.
                let (mut low, mut high) = (0.0, 40.0);
                for _ in 0..45 {
                    let mid = 0.5 * (low + high);
                    if crossing(mid) > increment {
                        low = mid;
                    } else {
                        high = mid;
                    }
                }
                high
            }
        }
    }

    /// From the next look on, test a different statistic (the metric that decides
    /// changed): the α spent so far stays spent, and the new statistic's first look
    /// spends the next increment as a plain, unconditional crossing probability — it had
    /// no earlier looks of its own to condition on. Over both statistics the chance of
    /// any crossing stays at most α (the union of the two parts, docs/statistics.md).
    pub fn restart(&mut self) {
        self.last = None;
    }

    /// Record a look at `t` with boundary `c` (from [`Boundaries::boundary`]); a look
    /// that could not cross (`NEVER`) spends nothing and is not recorded.
    pub fn take(&mut self, t: f64, c: f64) {
        if !c.is_finite() {
            return;
        }
        let b = c * t.sqrt();
        let crossing = match &self.last {
            None => 2.0 * (1.0 - standard_normal_cdf(c)),
            Some(previous) => crossing_probability(previous, t, b),
        };
        self.spent += crossing;
        self.last = Some(continue_density(self.last.as_ref(), t, b));
        self.looks.push((t, c));
    }
}

/// Normal density with standard deviation `sd`.
fn normal_density(x: f64, sd: f64) -> f64 {
    (-0.5 * (x / sd).powi(2)).exp() / (sd * (2.0 * std::f64::consts::PI).sqrt())
}

/// P(|S(t)| ≥ b and the path stayed inside at every earlier look).
fn crossing_probability(previous: &Density, t: f64, b: f64) -> f64 {
    let sd = (t - previous.t).sqrt();
    previous
        .points
        .iter()
        .zip(&previous.weighted)
        .map(|(&u, &g)| g * (standard_normal_cdf((-b - u) / sd) + standard_normal_cdf((u - b) / sd)))
        .sum()
}

/// The sub-density of S(t) on (−b, b) for paths that stayed inside at every look.
fn continue_density(previous: Option<&Density>, t: f64, b: f64) -> Density {
    let step = 2.0 * b / (GRID - 1) as f64;
    let points: Vec<f64> = (0..GRID).map(|i| -b + step * i as f64).collect();
    let density: Vec<f64> = match previous {
        None => points.iter().map(|&s| normal_density(s, t.sqrt())).collect(),
        Some(p) => {
            let sd = (t - p.t).sqrt();
            points
                .iter()
                .map(|&s| p.points.iter().zip(&p.weighted).map(|(&u, &g)| g * normal_density(s - u, sd)).sum())
                .collect()
        }
    };
    // Simpson's rule: h/3 · (1, 4, 2, 4, …, 2, 4, 1).
    let weighted = density
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let w = if i == 0 || i == GRID - 1 {
                1.0
            } else if i % 2 == 1 {
                4.0
            } else {
                2.0
            };
            f * w * step / 3.0
        })
        .collect();
    Density { t, points, weighted }
}

/// The per-round spread of a location estimate read off paired differences without
/// regard to where they lie: Shamos's scale, median |dᵢ − dⱼ| over i < j divided by
/// √2·Φ⁻¹(¾) (σ for normal data, 86 % efficient, robust to a few stalls), times √(π/3),
/// Hodges–Lehmann's asymptotic spread per round relative to σ. Shift-invariant: it is
/// the same whatever the true change, so a design sized by it does not depend on the
/// comparison's answer (for normal rounds it is independent of the mean path, which is
/// what the group-sequential boundaries need). None with fewer than 3 values.
pub fn pilot_spread(d: &[f64]) -> Option<f64> {
    let d: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
    if d.len() < 3 {
        return None;
    }
    let mut gaps: Vec<f64> =
        d.iter().enumerate().flat_map(|(i, a)| d[i + 1..].iter().map(move |b| (a - b).abs())).collect();
    gaps.sort_by(|a, b| a.total_cmp(b));
    let m = gaps.len();
    let median = if m % 2 == 1 { gaps[m / 2] } else { 0.5 * (gaps[m / 2 - 1] + gaps[m / 2]) };
    Some(median / (std::f64::consts::SQRT_2 * 0.674_489_750_196_081_7) * (std::f64::consts::PI / 3.0).sqrt())
}

/// The rounds a single look at boundary `z` needs for an estimate of per-round spread
/// `spread` to decide a margin `margin` (log scale) with power Φ(`z_power`): the interval's
/// half-width z·spread/√n plus `z_power` standard errors of the estimate within the
/// margin — the fixed-n size of an equivalence decision at no change, the hardest of
/// the verdicts at a given noise (a change of twice the margin needs a quarter of it).
pub fn rounds_to_decide(spread: f64, margin: f64, z: f64, z_power: f64) -> f64 {
    ((z + z_power) * spread / margin).powi(2)
}

/// The two-sided nominal level of one look with boundary `c`: 2(1 − Φ(c)).
pub fn nominal_alpha(c: f64) -> f64 {
    if c.is_infinite() {
        0.0
    } else {
        2.0 * (1.0 - standard_normal_cdf(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(alpha: f64, spending: Spending, times: &[f64]) -> Vec<f64> {
        let mut b = Boundaries::new(alpha, spending);
        times
            .iter()
            .map(|&t| {
                let c = b.boundary(t, t >= 1.0);
                b.take(t, c);
                c
            })
            .collect()
    }

    #[test]
    fn one_look_is_the_fixed_sample_test() {
        assert!((all(0.05, Spending::Pocock, &[1.0])[0] - 1.959964).abs() < 1e-5);
    }

    #[test]
    fn the_published_obrien_fleming_type_boundaries() {
        // Five equally spaced looks, α = 0.05 two-sided: 4.8769, 3.3569, 2.6803, 2.2898,
        // 2.0310 (Lan & DeMets 1983; as tabulated by R's ldbounds and gsDesign).
        let c = all(0.05, Spending::OBrienFleming, &[0.2, 0.4, 0.6, 0.8, 1.0]);
        for (got, want) in c.iter().zip([4.8769, 3.3569, 2.6803, 2.2898, 2.0310]) {
            assert!((got - want).abs() < 2e-4, "{c:?}");
        }
    }

    #[test]
    fn the_whole_alpha_is_spent_by_the_final_look() {
        let mut b = Boundaries::new(0.05, Spending::Pocock);
        for t in [0.1, 0.3, 0.7] {
            let c = b.boundary(t, false);
            b.take(t, c);
        }
        assert!((b.spent - Spending::Pocock.spent(0.05, 0.7)).abs() < 1e-6);
        // Stopping early for time: the last look spends what is left.
        let c = b.boundary(0.8, true);
        b.take(0.8, c);
        assert!((b.spent - 0.05).abs() < 1e-6, "{}", b.spent);
    }

    #[test]
    fn a_new_statistic_spends_only_what_is_left() {
        let times = [0.1, 0.2, 0.4, 0.7, 1.0];
        let mut b = Boundaries::new(0.05, Spending::Pocock);
        let mut switched = Boundaries::new(0.05, Spending::Pocock);
        for (k, &t) in times.iter().enumerate() {
            if k == 2 {
                switched.restart();
            }
            let (c, d) = (b.boundary(t, t >= 1.0), switched.boundary(t, t >= 1.0));
            b.take(t, c);
            switched.take(t, d);
            if k < 2 {
                assert_eq!(c, d, "the same until the switch");
            } else if k == 2 {
                // Unconditional: the same increment needs a wider boundary.
                assert!(d > c, "{d} vs {c}");
                let increment = Spending::Pocock.spent(0.05, 0.4) - Spending::Pocock.spent(0.05, 0.2);
                assert!((nominal_alpha(d) - increment).abs() < 1e-9);
            }
        }
        // Whatever was spent on each statistic, the total is α: never more.
        assert!((switched.spent - 0.05).abs() < 1e-6, "{}", switched.spent);
    }

    #[test]
    fn the_candidate_spendings_reach_alpha_and_keep_their_shares() {
        let power = Spending::LogPower { start: 0.01, power: 0.5 };
        assert_eq!(power.spent(0.05, 0.01), 0.0);
        assert!((power.spent(0.05, 1.0) - 0.05).abs() < 1e-12);
        // More in the first doubling than the logarithmic spending: (1/log₂100)^½ of α.
        let first = power.spent(0.05, 0.02);
        assert!(first > Spending::Logarithmic { start: 0.01 }.spent(0.05, 0.02));
        assert!((first - 0.05 * (2f64.ln() / 100f64.ln()).sqrt()).abs() < 1e-12);
        let planned = Spending::Planned { start: 0.01, plan: 0.04, early: 0.1, at_plan: 0.6 };
        assert!((planned.spent(0.05, 0.02) - 0.05 * 0.1 * 0.5).abs() < 1e-12, "half the early share by t₀·2");
        assert!((planned.spent(0.05, 0.04) - 0.05 * 0.7).abs() < 1e-12, "early + at_plan at t₁");
        assert!((planned.spent(0.05, 0.2) - 0.05 * (0.7 + 0.3 * 0.5)).abs() < 1e-12, "half the rest by √(t₁)");
        assert_eq!(planned.spent(0.05, 1.0), 0.05);
    }

    #[test]
    fn the_pilot_spread_ignores_the_shift_and_sizes_a_fixed_test() {
        let d = [0.004, -0.006, 0.011, -0.002, 0.0, 0.007];
        let shifted: Vec<f64> = d.iter().map(|x| x + 0.05).collect();
        let spread = pilot_spread(&d).unwrap();
        assert!((spread - pilot_spread(&shifted).unwrap()).abs() < 1e-15);
        assert_eq!(pilot_spread(&d[..2]), None);
        // z = 1.96, power 80 %, spread 0.7 %, margin 1 %: ((1.96 + 0.84) · 0.7)² ≈ 3.85 rounds.
        assert!((rounds_to_decide(0.007, 0.01, 1.96, 0.8416) - 3.846).abs() < 0.001);
    }

    #[test]
    fn nothing_left_to_spend_means_no_crossing() {
        let b = Boundaries { spent: 0.05, ..Boundaries::new(0.05, Spending::Pocock) };
        assert_eq!(b.boundary(0.5, false), NEVER);
        assert_eq!(nominal_alpha(NEVER), 0.0);
    }
}
