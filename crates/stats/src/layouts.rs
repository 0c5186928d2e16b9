//! Versions measured in several code layouts each: the ratio between two versions with
//! an interval that counts how much layouts of the same source differ (a random effect),
//! and how large that spread is.
//!
//! Where the linker puts functions and loops moves run times by as much as a compiler
//! flag does (Mytkowicz et al., ASPLOS 2009); one binary per version measures one draw
//! of that layout effect, so a paired interval of two binaries, however narrow, can call
//! a difference that a relink would undo. With L binaries per version — the same
//! source linked with different layout seeds, all run in the same interleaved rounds —
//! the model on the log scale is
//!
//!   y[k, r] = μ_v(k) + u_k + ρ_r + e[k, r],   u_k ~ (0, τ²), e ~ (0, σ²)
//!
//! with u_k the layout effect of binary k (nested in its version), ρ_r the round (the
//! machine's state, shared by every run of the round) and e the run's own noise.
//!
//! **Estimate.** Each round is centred on its median over all binaries (ρ_r cancels, as
//! in the paired comparison), and each binary's location m_k is the Hodges–Lehmann
//! estimate of its centred values: robust to the heavy tails of single runs. The
//! versions' difference is the Hodges–Lehmann shift between their locations.
//!
//! **Interval.** Replicate at the highest level (Kalibera & Jones, ISMM 2013): the layout
//! locations are the units, L_a and L_b of them. Each m_k varies by τ² + σ²/R around its
//! version's mean, so any two-sample procedure on the m_k counts between-layout and
//! within-layout variance together without estimating τ on its own — for a balanced
//! nested design, Student's pooled t on them is the mixed model's exact test of the
//! fixed effect (Searle, Casella & McCulloch, *Variance Components*, 1992, ch. 3). But
//! layout effects are not normal: a hot loop either straddles a 64-byte boundary or not,
//! and with 4 + 4 layouts of one source (tests/fixtures/layout_loop.c, two speeds 13 %
//! apart) the t interval called 2 of 4 real A/A comparisons different. So the interval
//! is the Mann–Whitney one (`rank_sum::shift_interval`, exact up to 20 layouts a
//! version): under no change the layouts of both versions are draws from one layout
//! distribution, exchangeable whatever its shape, so a false verdict has probability ≤ α
//! exactly. The price: 3 + 3 layouts cannot reach 95 %, and 4 + 4 only by complete
//! separation (p = 2/70). More rounds shrink only σ²/R; only more layouts shrink
//! τ²/L. `examples/layouts_sim.rs` checks coverage and false verdicts by
//! simulation (docs/statistics.md, "Code layouts").
//!
//! **Spread.** τ is reported, not used by the interval: τ̂² = max(0, s² − w²), s² the
//! pooled variance of the layout locations within versions and w² the part of it the
//! runs' own noise explains, measured by splitting the rounds: each binary's location
//! from the odd and from the even rounds differ by noise alone, with variance 4·w², so
//! w² = Σ (m_odd − m_even)² / 4K over the K binaries — whatever the noise's tails (a
//! formula from the residuals' MAD underestimates it under heavy tails and stalls). Layouts
//! "differ" when s²/w² exceeds the F distribution's 95 % point (Searle et al., ch. 3).

use super::rank_sum::{hodges_lehmann_shift, mann_whitney, shift_with_interval};
use super::signed_rank::hodges_lehmann;
use super::student::pooled_t;
use super::summary::{mad_scaled, median};

/// Every binary's location and what the runs say about their own noise.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutFit {
    /// Per version, per layout: the layout's location on the log scale, relative to the
    /// rounds' medians (only differences between locations mean something).
    pub locations: Vec<Vec<f64>>,
    /// Robust σ (scaled MAD) of a single run around its binary's location, pooled over
    /// every binary: the run-to-run noise left after the round's shared part.
    pub run_sigma: f64,
    /// Rounds used (those in which every binary has a usable value).
    pub rounds: usize,
    /// Rounds left out because some binary had no usable (finite, positive) value.
    pub skipped: usize,
    /// The variance of one layout location that the runs' own noise explains (split-half
    /// estimate; (π/3)·σ̂²/R from the residuals with fewer than 4 rounds).
    within: f64,
    /// Degrees of freedom of `within`: binaries, or rounds − 1 of the formula.
    within_df: f64,
}

impl LayoutFit {
    /// The variance of one layout location that the runs' own noise explains (the
    /// split-half estimate of the module's doc; (π/3)·σ̂²/R with fewer than 4 rounds).
    pub fn within_variance(&self) -> f64 {
        self.within
    }

    /// True when the layouts of the versions differ by more than the runs' own noise
    /// explains: the pooled between-layout variance over the within variance exceeds the
    /// F distribution's 95 % point.
    pub fn layouts_differ(&self) -> bool {
        self.layouts_differ_at(0.95)
    }

    /// [`Self::layouts_differ`] at the F distribution's `level` point (a stricter one
    /// where the question is asked at every look).
    pub fn layouts_differ_at(&self, level: f64) -> bool {
        let (mut squares, mut df) = (0.0, 0usize);
        for m in self.locations.iter().filter(|m| m.len() >= 2) {
            squares += sample_variance(m) * (m.len() - 1) as f64;
            df += m.len() - 1;
        }
        if df == 0 || self.within.is_nan() || self.within <= 0.0 {
            return df > 0 && squares > 0.0;
        }
        use statrs::distribution::{ContinuousCDF, FisherSnedecor};
        let ratio = squares / df as f64 / self.within;
        FisherSnedecor::new(df as f64, self.within_df).is_ok_and(|f| f.inverse_cdf(level) < ratio)
    }

    /// The estimated σ of the layout effect among `version`'s layouts (log scale): how
    /// much relinking the same source moves it, with the runs' own noise taken out.
    /// NaN with fewer than two layouts.
    pub fn spread(&self, version: usize) -> f64 {
        let m = &self.locations[version];
        if m.len() < 2 {
            return f64::NAN;
        }
        layout_sigma(sample_variance(m), self.within_variance())
    }

    /// The layout σ pooled over every version (log scale).
    pub fn pooled_spread(&self) -> f64 {
        let (mut squares, mut df) = (0.0, 0usize);
        for m in self.locations.iter().filter(|m| m.len() >= 2) {
            squares += sample_variance(m) * (m.len() - 1) as f64;
            df += m.len() - 1;
        }
        if df == 0 {
            return f64::NAN;
        }
        layout_sigma(squares / df as f64, self.within_variance())
    }
}

fn sample_variance(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
}

fn layout_sigma(between: f64, within: f64) -> f64 {
    (between - within).max(0.0).sqrt()
}

/// Fit the layouts of every version: `versions[v][k][r]` is the value of layout k of
/// version v in round r (every binary indexed by the same rounds). Rounds where some
/// binary's value is not finite and positive are left out. None without two binaries
/// and one usable round.
pub fn fit(versions: &[Vec<Vec<f64>>]) -> Option<LayoutFit> {
    let binaries: Vec<&Vec<f64>> = versions.iter().flatten().collect();
    if binaries.len() < 2 {
        return None;
    }
    let rounds = binaries.iter().map(|b| b.len()).min().unwrap_or(0);
    let usable = |x: f64| x.is_finite() && x > 0.0;
    let complete: Vec<usize> = (0..rounds).filter(|&r| binaries.iter().all(|b| usable(b[r]))).collect();
    if complete.is_empty() {
        return None;
    }
    // The round's shared part: the median over all binaries of the round's log values.
    let reference: Vec<f64> =
        complete.iter().map(|&r| median(&binaries.iter().map(|b| b[r].ln()).collect::<Vec<_>>())).collect();
    let centred =
        |values: &Vec<f64>| -> Vec<f64> { complete.iter().zip(&reference).map(|(&r, c)| values[r].ln() - c).collect() };
    let mut residuals = Vec::with_capacity(binaries.len() * complete.len());
    let mut half_differences = Vec::with_capacity(binaries.len());
    let locations: Vec<Vec<f64>> = versions
        .iter()
        .map(|layouts| {
            layouts
                .iter()
                .map(|values| {
                    let z = centred(values);
                    let m = hodges_lehmann(&z);
                    residuals.extend(z.iter().map(|x| x - m));
                    let half = |parity: usize| -> Vec<f64> { z.iter().skip(parity).step_by(2).copied().collect() };
                    half_differences.push(hodges_lehmann(&half(0)) - hodges_lehmann(&half(1)));
                    m
                })
                .collect()
        })
        .collect();
    let run_sigma = mad_scaled(&residuals);
    let n = complete.len();
    let (within, within_df) = if n >= 4 {
        let k = half_differences.len() as f64;
        (half_differences.iter().map(|d| d * d).sum::<f64>() / (4.0 * k), k)
    } else {
        (std::f64::consts::FRAC_PI_3 * run_sigma * run_sigma / n as f64, (n as f64 - 1.0).max(1.0))
    };
    Some(LayoutFit { locations, run_sigma, rounds: n, skipped: rounds - n, within, within_df })
}

/// [`fit`] for quantities whose single runs are too coarse for a per-round location — a
/// function's sampled time of a few samples per run takes a handful of values, whose
/// Hodges–Lehmann locations tie — from each binary's **mean** over the rounds instead:
/// `values[v][k][r]` as for [`fit`] (zeros allowed), the location is the log of the
/// mean, and the variance the runs explain is the mean's own (its rounds' variance ÷ R,
/// on the log scale by the delta method). The contrast on these locations is the same
/// Mann–Whitney one. None without two binaries, two rounds, or with a binary whose mean
/// is not positive.
pub fn fit_means(versions: &[Vec<Vec<f64>>]) -> Option<LayoutFit> {
    let binaries: Vec<&Vec<f64>> = versions.iter().flatten().collect();
    let rounds = binaries.iter().map(|b| b.len()).min().unwrap_or(0);
    if binaries.len() < 2 || rounds < 2 {
        return None;
    }
    let n = rounds as f64;
    let mut within = 0.0;
    let mut cv_squares = 0.0;
    let mut locations = Vec::with_capacity(versions.len());
    for layouts in versions {
        let mut version = Vec::with_capacity(layouts.len());
        for values in layouts {
            let values = &values[..rounds];
            let mean = values.iter().sum::<f64>() / n;
            if !(mean.is_finite() && mean > 0.0) {
                return None;
            }
            let cv2 = sample_variance(values) / (mean * mean);
            cv_squares += cv2;
            within += cv2 / n;
            version.push(mean.ln());
        }
        locations.push(version);
    }
    let k = binaries.len() as f64;
    Some(LayoutFit {
        locations,
        run_sigma: (cv_squares / k).sqrt(),
        rounds,
        skipped: 0,
        within: within / k,
        within_df: k * (n - 1.0),
    })
}

/// The one-sided `level` upper confidence bound of a normal σ from `squares`, the sum of
/// squared deviations on `df` degrees of freedom: √(squares / χ²₁₋ₗₑᵥₑₗ(df)). NaN without a
/// degree of freedom.
pub fn sigma_upper_bound(squares: f64, df: usize, level: f64) -> f64 {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    if df == 0 {
        return f64::NAN;
    }
    let q = ChiSquared::new(df as f64).map_or(f64::NAN, |c| c.inverse_cdf(1.0 - level));
    (squares / q).sqrt()
}

/// One version against another across their layouts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayoutContrast {
    /// The Hodges–Lehmann shift of the candidate's locations from the baseline's: the
    /// log ratio.
    pub difference: f64,
    /// Its distribution-free (Mann–Whitney) interval at the requested level; None when
    /// so few layouts cannot reach that level (3 + 3 at 95 %).
    pub interval: Option<(f64, f64)>,
    /// Two-sided Mann–Whitney p-value of no difference between the locations.
    pub p_value: f64,
    /// Layouts of both versions − 2: what a t interval would have (said in the notes).
    pub df: f64,
    /// Standard error of the mean difference (between and within layouts together).
    pub se: f64,
    /// The share of the difference's variance that layouts (τ²), not the runs' own noise,
    /// account for: near 1, more rounds cannot narrow the interval, only more layouts can.
    pub layout_share: f64,
}

/// Version `candidate` against version `baseline` of `fit`, at `level`: the
/// Hodges–Lehmann shift between the two versions' layout locations, with the
/// Mann–Whitney interval and p-value on them (see the module's doc for why not t).
pub fn contrast(fit: &LayoutFit, baseline: usize, candidate: usize, level: f64) -> Option<LayoutContrast> {
    let (a, b) = (&fit.locations[baseline], &fit.locations[candidate]);
    let t = pooled_t(a, b)?;
    let (difference, interval) = match shift_with_interval(a, b, level) {
        Some((shift, i)) => (shift, Some((i.low, i.high))),
        None => (hodges_lehmann_shift(a, b), None),
    };
    let pooled = {
        let df = (a.len() + b.len()).saturating_sub(2).max(1) as f64;
        let squares = |m: &[f64]| if m.len() >= 2 { sample_variance(m) * (m.len() - 1) as f64 } else { 0.0 };
        (squares(a) + squares(b)) / df
    };
    let layout_share = if pooled > 0.0 { (1.0 - fit.within_variance() / pooled).clamp(0.0, 1.0) } else { 0.0 };
    Some(LayoutContrast { difference, interval, p_value: mann_whitney(a, b).p_value, df: t.df, se: t.se, layout_share })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    /// Versions of `layouts` binaries each, true log location `means[v]` + u_k (σ `tau`),
    /// runs with a shared round effect (σ 5 %) and their own Gaussian noise (σ `sigma`).
    fn simulate(seed: u64, means: &[f64], layouts: usize, rounds: usize, tau: f64, sigma: f64) -> Vec<Vec<Vec<f64>>> {
        let mut rng = StdRng::seed_from_u64(seed);
        let unit = Normal::new(0.0, 1.0).unwrap();
        let round_effect: Vec<f64> = (0..rounds).map(|_| 0.05 * unit.sample(&mut rng)).collect();
        means
            .iter()
            .map(|mu| {
                (0..layouts)
                    .map(|_| {
                        let u = tau * unit.sample(&mut rng);
                        (0..rounds)
                            .map(|r| (mu + u + round_effect[r] + sigma * unit.sample(&mut rng)).exp() * 0.05)
                            .collect()
                    })
                    .collect()
            })
            .collect()
    }

    /// From means: coarse values (whole samples of 2 ms) still give each layout its own
    /// location, the spread of the layouts' true levels, and the contrast of the versions.
    #[test]
    fn means_of_coarse_values_locate_layouts_and_recover_their_spread() {
        let data = simulate(3, &[0.0, 0.2], 12, 40, 0.05, 0.2);
        let coarse: Vec<Vec<Vec<f64>>> = data
            .iter()
            .map(|v| v.iter().map(|b| b.iter().map(|x| (x / 0.002).round() * 0.002).collect()).collect())
            .collect();
        let fit = fit_means(&coarse).unwrap();
        let spread = fit.pooled_spread();
        assert!((0.025..0.08).contains(&spread), "{spread}");
        let c = contrast(&fit, 0, 1, 0.95).unwrap();
        let (lo, hi) = c.interval.unwrap();
        assert!(lo < 0.2 && 0.2 < hi && lo > 0.0, "{c:?}");
        // Every layout located apart: no ties from the coarse values.
        let mut all: Vec<f64> = fit.locations.concat();
        all.sort_by(f64::total_cmp);
        all.dedup();
        assert_eq!(all.len(), 24);
        assert_eq!(fit_means(&[vec![vec![0.0, 0.0]], vec![vec![1.0, 1.0]]]), None, "a mean of zero");
    }

    #[test]
    fn without_noise_the_locations_are_the_true_ones_and_the_contrast_is_exact() {
        // Layout effects 0, +2 %, −2 % on a baseline; the candidate 10 % slower with its own.
        let version = |base: f64, effects: &[f64]| -> Vec<Vec<f64>> {
            effects.iter().map(|u| (0..8).map(|r| base * (u + 0.01 * r as f64).exp()).collect()).collect()
        };
        let data = vec![version(1.0, &[0.0, 0.02, -0.02]), version(1.1, &[0.01, -0.01, 0.0])];
        let fit = fit(&data).unwrap();
        assert_eq!((fit.rounds, fit.skipped), (8, 0));
        assert!(fit.run_sigma.abs() < 1e-12, "the round drift is shared: {}", fit.run_sigma);
        let m = &fit.locations;
        assert!((m[0][1] - m[0][0] - 0.02).abs() < 1e-12 && (m[0][2] - m[0][0] + 0.02).abs() < 1e-12);
        assert!((fit.spread(0) - 0.02).abs() < 1e-12 && (fit.spread(1) - 0.01).abs() < 1e-12);
        let c = contrast(&fit, 0, 1, 0.95).unwrap();
        // The shift: the median of the nine differences ln 1.1 + (e_b − e_a).
        assert!((c.difference - (1.1f64.ln() + 0.0)).abs() < 1e-12, "{c:?}");
        assert_eq!((c.df, c.layout_share), (4.0, 1.0));
        assert_eq!(c.interval, None, "3 + 3 layouts cannot reach 95 % (Mann–Whitney: P(U = 0) = 1/20)");
    }

    /// The interval against values computed by hand. Layout effects of the baseline
    /// 0, +2, −2, +1 %; of the candidate ln 1.1 + (+1, −1, 0, +3 %): the 16 differences
    /// are ln 1.1 + (e_b − e_a), every one positive. Mann–Whitney for 4 + 4: P(U = 0) =
    /// 1/70 ≤ 2.5 % < P(U ≤ 1) = 2/70, so the 95 % interval is [D₍₁₎, D₍₁₆₎] = ln 1.1 +
    /// [−1 − 2, 3 + 2] %, achieved 1 − 2/70; p = 2/70. The shift is the median of the 16
    /// e_b − e_a (sorted: −3 −2 −2 −1 −1 0 0 0 | 1 1 1 2 2 3 4 5 %): 0.5 %.
    #[test]
    fn the_interval_is_mann_whitney_on_the_layout_locations() {
        let version = |base: f64, effects: &[f64]| -> Vec<Vec<f64>> {
            effects.iter().map(|u| (0..8).map(|r| base * (u + 0.01 * r as f64).exp()).collect()).collect()
        };
        let data = vec![version(1.0, &[0.0, 0.02, -0.02, 0.01]), version(1.1, &[0.01, -0.01, 0.0, 0.03])];
        let c = contrast(&fit(&data).unwrap(), 0, 1, 0.95).unwrap();
        let close = |x: f64, want: f64| (x - want).abs() < 1e-12;
        let ln = 1.1f64.ln();
        assert!(close(c.difference, ln + 0.005), "{c:?}");
        let (lo, hi) = c.interval.unwrap();
        assert!(close(lo, ln - 0.03) && close(hi, ln + 0.05), "{lo} {hi}");
        assert!(close(c.p_value, 2.0 / 70.0), "{}", c.p_value);
        // At 99 % no interval of 4 + 4 exists (2/70 > 1 %).
        assert_eq!(contrast(&fit(&data).unwrap(), 0, 1, 0.99).unwrap().interval, None);
    }

    /// The split-half estimate of the runs' own variance against a value computed by hand:
    /// four binaries over four rounds, two flat and two alternating ±a in opposite phase, so
    /// every round's median is 0 and every location is 0; the alternating ones' even-round
    /// and odd-round locations differ by ±2a, the flat ones' by 0: w² = (4a² + 4a²)/(4·4)
    /// = a²/2. Residuals are eight 0s and eight ±a: scaled MAD 1.4826·a/2. No layout
    /// differs from another, so there is no spread and the F test says so.
    #[test]
    fn the_runs_own_variance_is_measured_by_splitting_the_rounds() {
        let a = 0.01f64;
        let flat = vec![1.0; 4];
        let up: Vec<f64> = (0..4).map(|r| if r % 2 == 0 { a.exp() } else { (-a).exp() }).collect();
        let down: Vec<f64> = up.iter().map(|v| 1.0 / v).collect();
        let fit = fit(&[vec![flat.clone(), up], vec![flat, down]]).unwrap();
        assert!(fit.locations.iter().flatten().all(|m| m.abs() < 1e-12), "{:?}", fit.locations);
        assert!((fit.within_variance() - a * a / 2.0).abs() < 1e-13, "{}", fit.within_variance());
        assert!((fit.run_sigma - 1.482602218505602 * a / 2.0).abs() < 1e-6, "{}", fit.run_sigma);
        assert_eq!(fit.pooled_spread(), 0.0);
        assert!(!fit.layouts_differ());
    }

    #[test]
    fn rounds_missing_a_value_are_left_out() {
        let mut data = simulate(1, &[0.0, 0.0], 2, 10, 0.01, 0.01);
        data[1][0][3] = f64::NAN;
        data[0][1][7] = 0.0;
        let fit = fit(&data).unwrap();
        assert_eq!((fit.rounds, fit.skipped), (8, 2));
        assert!(super::fit(&[vec![vec![1.0]]]).is_none(), "one binary has nothing to compare");
    }

    #[test]
    fn the_spread_estimates_the_layout_sigma_beyond_the_runs_own_noise() {
        // 40 layouts per version: the estimate of τ = 2 % should be within ±0.6 %
        // (its standard error is about τ/√(2·79) ≈ 0.16 %: a 3.7-σ margin).
        let data = simulate(7, &[0.0, 0.0], 40, 30, 0.02, 0.03);
        let fit = fit(&data).unwrap();
        assert!((fit.pooled_spread() - 0.02).abs() < 0.006, "{}", fit.pooled_spread());
        assert!((fit.run_sigma - 0.03).abs() < 0.004, "{}", fit.run_sigma);
        // No layout effect at all: the spread is what the runs explain, near 0.
        let flat = super::fit(&simulate(8, &[0.0, 0.0], 40, 30, 0.0, 0.03)).unwrap();
        assert!(flat.pooled_spread() < 0.004, "{}", flat.pooled_spread());
    }

    #[test]
    fn layouts_differ_only_when_their_spread_exceeds_the_runs_noise() {
        let differ =
            (0..50).filter(|&s| super::fit(&simulate(s, &[0.0, 0.0], 4, 20, 0.0, 0.02)).unwrap().layouts_differ());
        // At the F test's 95 % point about 5 % of layout-free experiments say they differ;
        // 50 experiments give more than 8 such with probability < 1 %.
        assert!(differ.count() <= 8);
        let real =
            (0..50).filter(|&s| super::fit(&simulate(s, &[0.0, 0.0], 4, 20, 0.03, 0.02)).unwrap().layouts_differ());
        assert!(real.count() >= 45, "τ = 3 % against σ/√20 ≈ 0.45 %: nearly always seen");
    }

    /// A small coverage check (examples/layouts_sim.rs runs the full grid through the
    /// engine): 400 A/A experiments of 4 + 4 layouts with τ = 2 %, σ = 2 %, 20 rounds.
    /// The interval covers 0 in ≥ 95 % when it is right; binomial sd at 400 is 1.1 %, so
    /// 92 % is > 2.7 sd below. A paired interval of one layout each covers far less.
    #[test]
    fn the_interval_covers_across_layouts_where_one_layout_each_does_not() {
        let (mut covered, mut one_layout_covered) = (0, 0);
        for seed in 0..400 {
            let data = simulate(seed, &[0.0, 0.0], 4, 20, 0.02, 0.02);
            let c = contrast(&super::fit(&data).unwrap(), 0, 1, 0.95).unwrap();
            let (lo, hi) = c.interval.unwrap();
            covered += (lo <= 0.0 && 0.0 <= hi) as usize;
            let one = crate::signed_rank::paired(&data[0][0], &data[1][0], 0.95).ci.unwrap();
            one_layout_covered += (one.0 <= 1.0 && 1.0 <= one.1) as usize;
        }
        assert!(covered >= 368, "coverage {covered}/400");
        assert!(one_layout_covered < 300, "one layout each: {one_layout_covered}/400");
    }
}
