//! Simulates comparisons of labels measured in separate sessions, with known ground
//! truth: every session shifts all of its runs by a session effect (τ, normal or
//! heavy-tailed), a "busy" session (beside a neighbour) by an extra shift of its own, and
//! runs add t₃ noise. Compares the old method (the labels' runs as independent samples,
//! Hodges–Lehmann with the Mann–Whitney interval) with the session model of
//! `stats::sessions`, for two labels alone (the prior decides), with a history of earlier
//! labels (steps), and with repeated sessions (replicates). Reports the share of A/A
//! pairs called `slower`/`faster`, the share of +5 % pairs found `slower`, and the
//! coverage of the true ratio.
//!
//! Run: cargo run --release --example session_sim -- [PAIRS] [PRIOR_TAU_PCT] [PRIOR_DF]
//! (defaults 2000, and the prior perflab uses; it prints its table).

use perflab::history::ratio::{independent, SESSION_PRIOR};
use perflab::model::metric::{self, Better};
use perflab::model::Verdict;
use perflab::stats::sessions::{difference, session_noise, Prior, Session};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, StudentT};

/// How sessions differ on the simulated machine.
#[derive(Clone, Copy)]
struct Machine {
    name: &'static str,
    /// σ of the session effect (log scale).
    tau: f64,
    /// Session effects from Student's t₃ instead of the normal (occasional far-off sessions).
    heavy: bool,
    /// Extra shift of a session measured beside a neighbour: its mean and σ.
    busy_shift: (f64, f64),
    /// σ of the runs' own t₃ noise.
    run_sigma: f64,
    runs: usize,
}

/// The history a comparison sees.
#[derive(Clone, Copy)]
enum History {
    /// Only the two compared labels, one session each.
    Alone,
    /// `n` earlier labels of unchanged code, one session each (their steps size τ).
    Labels(usize),
    /// Both compared labels measured `k` times.
    Repeated(usize),
}

impl History {
    fn name(self) -> String {
        match self {
            History::Alone => "two labels, one session each".into(),
            History::Labels(n) => format!("+ {n} earlier labels"),
            History::Repeated(k) => format!("each label {k} sessions"),
        }
    }
}

fn session_effect(rng: &mut StdRng, m: &Machine, busy: bool) -> f64 {
    let base = if m.heavy {
        // t₃ scaled to the same robust σ (its quartile is 0.765).
        StudentT::new(3.0).unwrap().sample(rng) * m.tau * 0.6745 / 0.7649
    } else {
        Normal::new(0.0, m.tau).unwrap().sample(rng)
    };
    let extra = if busy { Normal::new(m.busy_shift.0, m.busy_shift.1.max(1e-12)).unwrap().sample(rng) } else { 0.0 };
    base + extra
}

/// One session's runs: exp(truth + session effect + run noise) × 65 ms.
fn runs(rng: &mut StdRng, m: &Machine, truth: f64, busy: bool) -> Vec<f64> {
    let u = session_effect(rng, m, busy);
    let t3 = StudentT::new(3.0).unwrap();
    (0..m.runs).map(|_| 0.065 * (truth + u + t3.sample(rng) * m.run_sigma * 0.6745 / 0.7649).exp()).collect()
}

#[derive(Default)]
struct Tally {
    n: usize,
    called: usize,
    covered: usize,
}

impl Tally {
    fn pct(&self, k: usize) -> String {
        format!("{:.1} %", 100.0 * k as f64 / self.n.max(1) as f64)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pairs: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let prior = Prior {
        tau: args.get(1).and_then(|a| a.parse::<f64>().ok()).map_or(SESSION_PRIOR.tau, |p| p / 100.0),
        df: args.get(2).and_then(|a| a.parse().ok()).unwrap_or(SESSION_PRIOR.df),
    };
    let machines = [
        Machine {
            name: "quiet-like, τ 0.5 %",
            tau: 0.005,
            heavy: false,
            busy_shift: (0.0, 0.0),
            run_sigma: 0.005,
            runs: 30,
        },
        Machine {
            name: "τ 0.5 %, busy sessions +0.5 % ± 0.5 %",
            tau: 0.005,
            heavy: false,
            busy_shift: (0.005, 0.005),
            run_sigma: 0.005,
            runs: 30,
        },
        Machine {
            name: "τ 1 %, t₃ sessions",
            tau: 0.01,
            heavy: true,
            busy_shift: (0.0, 0.0),
            run_sigma: 0.01,
            runs: 30,
        },
        Machine {
            name: "τ 2 % (noisier than the prior)",
            tau: 0.02,
            heavy: false,
            busy_shift: (0.0, 0.0),
            run_sigma: 0.01,
            runs: 30,
        },
    ];
    let histories = [History::Alone, History::Labels(10), History::Labels(40), History::Repeated(3)];
    println!(
        "{pairs} pairs per line; prior τ₀ = {:.2} % with {} df; one of the two compared labels measured beside a neighbour (busy); ±1 % threshold; 95 %",
        prior.tau * 100.0,
        prior.df
    );
    println!("| machine | history | A/A called different: old / sessions | +5 % found `slower`: old / sessions | sessions' CI covers the truth (A/A, +5 %) |");
    println!("|---|---|---|---|---|");
    for m in &machines {
        for &history in &histories {
            let mut rng = StdRng::seed_from_u64(0x5e55 + m.tau.to_bits() % 997);
            let (mut old_aa, mut new_aa, mut old_5, mut new_5) =
                (Tally::default(), Tally::default(), Tally::default(), Tally::default());
            for pair in 0..pairs {
                for (truth, old, new) in [(0.0, &mut old_aa, &mut new_aa), ((1.05f64).ln(), &mut old_5, &mut new_5)] {
                    let a_busy = pair % 2 == 0;
                    let k = match history {
                        History::Repeated(k) => k,
                        _ => 1,
                    };
                    // Sessions of the reference and the compared label (busy or not, alternately).
                    let a: Vec<Vec<f64>> = (0..k).map(|_| runs(&mut rng, m, 0.0, a_busy)).collect();
                    let b: Vec<Vec<f64>> = (0..k).map(|_| runs(&mut rng, m, truth, !a_busy)).collect();
                    // Earlier labels of the same code, each one session, busy at random.
                    let earlier = match history {
                        History::Labels(n) => n,
                        _ => 0,
                    };
                    let mut labels: Vec<Vec<Session>> = (0..earlier)
                        .map(|_| {
                            let busy = rng.gen_bool(0.5);
                            vec![Session::of(&runs(&mut rng, m, 0.0, busy)).unwrap()]
                        })
                        .collect();
                    let sa: Vec<Session> = a.iter().map(|r| Session::of(r).unwrap()).collect();
                    let sb: Vec<Session> = b.iter().map(|r| Session::of(r).unwrap()).collect();
                    labels.push(sa.clone());
                    labels.push(sb.clone());
                    let tested = labels.len() - 2;
                    let noise = session_noise(&[labels], |_, i| i != tested, prior);
                    let ratio = truth.exp();
                    let d = difference(&sa, &sb, &noise, 0.95).unwrap();
                    let (lo, hi) = (d.low.exp(), d.high.exp());
                    let verdict = perflab::analysis::verdict::classify(lo, hi, 0.01, Better::Lower).0;
                    new.n += 1;
                    new.called += usize::from(
                        matches!(verdict, Verdict::Slower | Verdict::Faster) && truth == 0.0
                            || verdict == Verdict::Slower && truth > 0.0,
                    );
                    new.covered += usize::from(lo <= ratio && ratio <= hi);
                    let pooled = |s: &[Vec<f64>]| s.concat();
                    let r = independent(metric::WALL, &pooled(&a), &pooled(&b), 0.01, Better::Lower).unwrap();
                    old.n += 1;
                    old.called += usize::from(
                        matches!(r.verdict, Verdict::Slower | Verdict::Faster) && truth == 0.0
                            || r.verdict == Verdict::Slower && truth > 0.0,
                    );
                    old.covered += usize::from(r.ci_low <= ratio && ratio <= r.ci_high);
                }
            }
            println!(
                "| {} | {} | {} / **{}** | {} / **{}** | {}, {} |",
                m.name,
                history.name(),
                old_aa.pct(old_aa.called),
                new_aa.pct(new_aa.called),
                old_5.pct(old_5.called),
                new_5.pct(new_5.called),
                new_aa.pct(new_aa.covered),
                new_5.pct(new_5.covered)
            );
        }
    }
}
