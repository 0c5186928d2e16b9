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
    fn nothing_left_to_spend_means_no_crossing() {
        let b = Boundaries { spent: 0.05, ..Boundaries::new(0.05, Spending::Pocock) };
        assert_eq!(b.boundary(0.5, false), NEVER);
        assert_eq!(nominal_alpha(NEVER), 0.0);
    }
}
