//! Simulates the busy switch of `perflab compare` re-examined at every look: whole
//! experiments of the real engine on the simulated machine, with a neighbour that arrives
//! at a random moment — before the first look or during the experiment — and then takes
//! half of the wall time at random. Ground truth is known: the runs' own times differ by
//! the given ratio, so every interval of `uncontended_s` (and of `wall_s`, which the
//! neighbour only adds noise to) must cover it, and an A/A pair must be called
//! `slower`/`faster` in at most 5 % of experiments even when the metric switched after
//! some looks had already spent part of α on wall time.
//!
//! Run: cargo run --release --example busy_switch_sim -- [SERIES] [RATIOS]
//! (defaults 1000 and 1,1.01; it prints its table).

use perflab::executor::simulated::{Noise, Simulated};
use perflab::experiment::run_experiment;
use perflab::experiment::Quiet;
use perflab::measure::MeasureOptions;
use perflab::model::{metric, CommandSpec, Settings, StopReason, Verdict, WarningKind};
use perflab::plan::{Compared, Plan};
use rand::{Rng, SeedableRng};

fn plan(seed: u64) -> Plan {
    let command = CommandSpec::bare;
    let compared = Compared {
        metrics: vec![metric::WALL.into(), metric::CPU.into()],
        primary: metric::WALL.into(),
        auto_primary: true,
    };
    Plan::new(
        vec![command("A"), command("B")],
        Settings { seed, ..Settings::default() },
        MeasureOptions::default(),
        compared,
    )
}

#[derive(Default)]
struct Tally {
    n: usize,
    wrong: usize,
    verdicts: [usize; 4],
    covered: usize,
    capped: usize,
    seconds: Vec<f64>,
}

impl Tally {
    fn row(&mut self, what: &str, ratio: f64) {
        if self.n == 0 {
            return;
        }
        self.seconds.sort_by(f64::total_cmp);
        let pct = |k: usize| format!("{:.1} %", 100.0 * k as f64 / self.n as f64);
        println!(
            "| {what} | {ratio} | {} | {} / {} / {} / {} | {} | {} | {:.1} s |",
            self.n,
            pct(self.verdicts[0]),
            pct(self.verdicts[1]),
            pct(self.verdicts[2]),
            pct(self.verdicts[3]),
            pct(self.covered),
            pct(self.capped),
            self.seconds[self.seconds.len() / 2]
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let series: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let ratios: Vec<f64> =
        args.get(1).map(|a| a.split(',').filter_map(|r| r.parse().ok()).collect()).unwrap_or_else(|| vec![1.0, 1.01]);
    println!(
        "{series} simulated experiments per ratio: ~65 ms runs, t₃ run noise (robust σ 0.5 %), drift, 2 % stalls; \
         a neighbour arrives at a uniform time in 0–8 s and then makes each run wait its own time × U(0, 2)"
    );
    println!("| switched | true ratio | experiments | slower / faster / equivalent / inconclusive | CI covers | at the 60 s cap | median time |");
    println!("|---|---|---|---|---|---|---|");
    for &ratio in &ratios {
        let (mut first, mut later, mut never) = (Tally::default(), Tally::default(), Tally::default());
        for i in 0..series {
            let seed = 1 + i * 7919;
            let arrival = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed).gen_range(0.0..8.0);
            let noise = Noise { busy: 0.5, busy_after_s: arrival, ..Noise::machine_like(0.005) };
            let mut machine = Simulated::new(seed, vec![0.065, 0.065 * ratio], noise);
            let e = run_experiment(&plan(seed), &mut machine, &mut Quiet).expect("simulated runs");
            let c = e.comparisons.iter().find(|c| c.metric == e.primary_metric).expect("the decided comparison");
            let busy = e.warnings.iter().find(|w| w.kind == WarningKind::Busy).map(|w| w.message.clone());
            let tally = match (&busy, e.primary_metric.as_str()) {
                (Some(m), metric::UNCONTENDED) if m.contains("from round") => &mut later,
                (Some(_), metric::UNCONTENDED) => &mut first,
                _ => &mut never,
            };
            tally.n += 1;
            let slot = match c.verdict {
                Verdict::Slower => 0,
                Verdict::Faster => 1,
                Verdict::Equivalent => 2,
                Verdict::Inconclusive | Verdict::NotComparable => 3,
            };
            tally.verdicts[slot] += 1;
            tally.wrong += usize::from(ratio == 1.0 && slot < 2);
            tally.covered += usize::from(c.ci_low <= ratio && ratio <= c.ci_high);
            tally.capped += usize::from(e.stop_reason != StopReason::Decided);
            tally.seconds.push(e.duration_s);
        }
        let all = Tally {
            n: first.n + later.n + never.n,
            wrong: first.wrong + later.wrong + never.wrong,
            verdicts: std::array::from_fn(|k| first.verdicts[k] + later.verdicts[k] + never.verdicts[k]),
            covered: first.covered + later.covered + never.covered,
            capped: first.capped + later.capped + never.capped,
            seconds: [first.seconds.clone(), later.seconds.clone(), never.seconds.clone()].concat(),
        };
        first.row("at the first look", ratio);
        later.row("at a later look", ratio);
        never.row("never (stayed on wall_s)", ratio);
        let mut all = all;
        all.row("all", ratio);
    }
}
