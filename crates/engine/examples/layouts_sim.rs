//! Checks the layout-aware interval (analysis::layouts, perflab_stats::layouts) by
//! simulation before any real build: whole experiments — the real engine, interleaved
//! rounds, looks — on the simulated machine of `executor::simulated`, with every binary's
//! true time drawn as the version's time × exp(u), u ~ N(0, τ²) per layout.
//!
//! Per cell (τ between layouts, σ of a run's own noise, L layouts per version, fixed
//! rounds or sequential stopping) it reports, for versions of the same source (A/A):
//! how often the layout-aware interval covered the true ratio 1, how often it called a
//! difference (`slower`/`faster`: false verdicts), how often it said "within layout
//! noise", its median width; and for a +3 % change how often it was found slower — beside
//! what a comparison of one binary per version says of the same machine (the first
//! layout of each, run as its own experiment the same way): its false verdicts.
//!
//! Run: cargo run --release -p perflab-engine --example layouts_sim -- [EXPERIMENTS] [MODE]
//! (defaults 400 and `both`; MODE `fixed` (20 rounds), `sequential` or `both`).

use perflab_engine::executor::simulated::{Noise, Simulated};
use perflab_engine::experiment::{run_experiment, Quiet};
use perflab_engine::measure::MeasureOptions;
use perflab_engine::plan::{Compared, Plan};
use perflab_model::{metric, CommandSpec, LayoutVersion, Layouts, Settings, Verdict};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

const RUN_S: f64 = 0.05;
const FIXED_ROUNDS: u32 = 20;

fn settings(seed: u64, fixed: bool) -> Settings {
    Settings { seed, fixed_rounds: fixed.then_some(FIXED_ROUNDS), ..Settings::default() }
}

/// Versions a and b in `per` layouts each.
fn layout_plan(per: usize, settings: Settings) -> Plan {
    let mut commands = Vec::new();
    let mut versions = Vec::new();
    for (v, name) in ["a", "b"].iter().enumerate() {
        let seeds: Vec<u64> = (1..=per as u64).map(|k| 100 * v as u64 + k).collect();
        for (k, seed) in seeds.iter().enumerate() {
            commands.push(CommandSpec {
                parameters: Layouts::parameters(name, *seed),
                ..CommandSpec::bare(&format!("{name}@L{}", k + 1))
            });
        }
        versions.push(LayoutVersion { name: name.to_string(), commands: (v * per..(v + 1) * per).collect(), seeds });
    }
    Plan::new(commands, settings, MeasureOptions::default(), Compared::fixed(vec![metric::WALL.into()]))
        .with_layouts(Some(Layouts { versions }))
}

fn pair_plan(settings: Settings) -> Plan {
    Plan::new(
        vec![CommandSpec::bare("a"), CommandSpec::bare("b")],
        settings,
        MeasureOptions::default(),
        Compared::fixed(vec![metric::WALL.into()]),
    )
}

fn noise(sigma: f64) -> Noise {
    Noise::machine_like(sigma)
}

#[derive(Default)]
struct Tally {
    covered: u64,
    called: u64,
    within: u64,
    widths: Vec<f64>,
    rounds: Vec<u32>,
    one_layout_called: u64,
    found: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let experiments: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(400);
    let modes: Vec<bool> = match args.get(2).map(String::as_str) {
        Some("fixed") => vec![true],
        Some("sequential") => vec![false],
        _ => vec![true, false],
    };
    let unit: Normal<f64> = Normal::new(0.0, 1.0).expect("unit normal");
    println!(
        "{experiments} experiments per row; runs {} ms, run noise robust σ as given with t3 tails, drift, 2 % stalls",
        RUN_S * 1000.0
    );
    for fixed in modes {
        println!(
            "\n{}",
            if fixed {
                format!("fixed {FIXED_ROUNDS} rounds (one look at 95 %)")
            } else {
                "sequential (perflab's looks, --max-time 60 s simulated)".into()
            }
        );
        println!("  τ     σ     L   A/A: cover  false  within  width   rounds | one layout each: false | +3 %: slower");
        for tau in [0.0, 0.005, 0.01, 0.02, 0.03] {
            for sigma in [0.01, 0.02, 0.05] {
                for per in [2usize, 4, 8] {
                    let mut t = Tally::default();
                    for x in 0..experiments {
                        let seed =
                            x ^ ((per as u64) << 40) ^ (((tau * 1e4) as u64) << 48) ^ (((sigma * 1e3) as u64) << 56);
                        let mut rng = StdRng::seed_from_u64(seed);
                        let effects: Vec<f64> = (0..2 * per).map(|_| (tau * unit.sample(&mut rng)).exp()).collect();
                        // A/A: the same source, 2L layouts.
                        let times: Vec<f64> = effects.iter().map(|u| RUN_S * u).collect();
                        let plan = layout_plan(per, settings(seed, fixed));
                        let e =
                            run_experiment(&plan, &mut Simulated::new(seed, times.clone(), noise(sigma)), &mut Quiet)
                                .expect("simulated runs");
                        let c = e.comparisons.iter().find(|c| c.metric == metric::WALL).expect("a comparison");
                        t.covered += (c.ci_low <= 1.0 && 1.0 <= c.ci_high) as u64;
                        t.called += matches!(c.verdict, Verdict::Slower | Verdict::Faster) as u64;
                        t.within +=
                            e.layouts.as_ref().is_some_and(|a| a.contrasts.iter().any(|x| x.within_layout_noise))
                                as u64;
                        t.widths.push(c.ci_high / c.ci_low - 1.0);
                        t.rounds.push(e.rounds);
                        // What one binary per version says: the first layouts alone.
                        let one = run_experiment(
                            &pair_plan(settings(seed, fixed)),
                            &mut Simulated::new(seed ^ 1, vec![times[0], times[per]], noise(sigma)),
                            &mut Quiet,
                        )
                        .expect("simulated runs");
                        let oc = one.comparisons.iter().find(|c| c.metric == metric::WALL).expect("a comparison");
                        t.one_layout_called += matches!(oc.verdict, Verdict::Slower | Verdict::Faster) as u64;
                        // The candidate 3 % slower in every layout.
                        let slower: Vec<f64> =
                            times.iter().enumerate().map(|(k, s)| if k >= per { s * 1.03 } else { *s }).collect();
                        let plan = layout_plan(per, settings(seed ^ 2, fixed));
                        let e = run_experiment(&plan, &mut Simulated::new(seed ^ 2, slower, noise(sigma)), &mut Quiet)
                            .expect("simulated runs");
                        let c = e.comparisons.iter().find(|c| c.metric == metric::WALL).expect("a comparison");
                        t.found += (c.verdict == Verdict::Slower) as u64;
                    }
                    t.widths.sort_by(f64::total_cmp);
                    t.rounds.sort();
                    let pct = |k: u64| 100.0 * k as f64 / experiments as f64;
                    let width = t.widths[t.widths.len() / 2];
                    println!(
                        "  {:>3.1} % {:>2.0} %  {per}  {:>8.1} %  {:>4.1} %  {:>5.1} %  {:>5} {:>6} | {:>20.1} % | {:>10.1} %",
                        tau * 100.0,
                        sigma * 100.0,
                        pct(t.covered),
                        pct(t.called),
                        pct(t.within),
                        if width.is_finite() { format!("{:.1} %", width * 100.0) } else { "∞".into() },
                        t.rounds[t.rounds.len() / 2],
                        pct(t.one_layout_called),
                        pct(t.found)
                    );
                }
            }
        }
    }
}
