//! Timing of the statistics at the sizes perflab meets, for scripts/stats-speed (a figure for
//! the docs, deliberately not a test).

use perflab::stats::{changepoint, signed_rank};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::time::Instant;

fn time<T>(label: &str, repeats: u32, mut f: impl FnMut() -> T) {
    let start = Instant::now();
    for _ in 0..repeats {
        std::hint::black_box(f());
    }
    let per_call = start.elapsed().as_secs_f64() / f64::from(repeats);
    println!("{label:<58} {:>10.3} ms", per_call * 1e3);
}

fn main() {
    let mut rng = StdRng::seed_from_u64(1);
    for n in [30, 300, 301, 1_000, 10_000] {
        let base: Vec<f64> = (0..n).map(|_| rng.gen_range(0.09..0.11)).collect();
        let cand: Vec<f64> = base.iter().map(|b| b * rng.gen_range(1.0..1.03)).collect();
        time(&format!("signed_rank::paired, n = {n}, 95 %"), 20, || signed_rank::paired(&base, &cand, 0.95));
        time(&format!("signed_rank::paired, n = {n}, 99.9999 %"), 20, || signed_rank::paired(&base, &cand, 0.999_999));
    }
    let config = changepoint::ChangePointConfig::default();
    for n in [100, 1_000] {
        let noise: Vec<f64> = (0..n).map(|_| rng.gen_range(0.09..0.11)).collect();
        let phases: Vec<f64> = noise
            .iter()
            .enumerate()
            .map(|(i, v)| if (n / 3..n / 2).contains(&i) || i > 4 * n / 5 { 2.0 * v } else { *v })
            .collect();
        time(&format!("changepoint::detect, n = {n}, pure noise"), 5, || changepoint::detect(&noise, &config));
        let found = changepoint::detect(&phases, &config);
        time(&format!("changepoint::detect, n = {n}, {} change points", found.len()), 5, || {
            changepoint::detect(&phases, &config)
        });
    }
}
