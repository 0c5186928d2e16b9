//! TEMPORARY stand-ins for the `stats` branch's functions until it is merged; this file
//! is deleted by that merge's follow-up commit.
#![allow(dead_code)]

pub mod summary {
    pub fn median(values: &[f64]) -> f64 {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
    }
    pub fn median_ci(values: &[f64], _confidence: f64) -> Option<(f64, f64)> {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        if n < 6.0 {
            return None;
        }
        let k = ((n / 2.0) - 1.96 * n.sqrt() / 2.0).floor().max(0.0) as usize;
        Some((v[k], v[v.len() - 1 - k]))
    }
}

pub mod rank_sum {
    pub struct Interval {
        pub low: f64,
        pub high: f64,
    }
    pub struct Estimate {
        pub shift: f64,
        pub interval: Option<Interval>,
        pub p_value: f64,
    }
    pub fn independent(base: &[f64], cand: &[f64], _confidence: f64) -> Estimate {
        let mut d: Vec<f64> = cand.iter().flat_map(|c| base.iter().map(move |b| c - b)).collect();
        d.sort_by(f64::total_cmp);
        let (n, m) = (base.len() as f64, cand.len() as f64);
        let nm = d.len();
        let shift = super::summary::median(&d);
        let k = (n * m / 2.0 - 1.96 * (n * m * (n + m + 1.0) / 12.0).sqrt()).floor();
        let interval = (k >= 0.0).then(|| Interval { low: d[k as usize], high: d[nm - 1 - k as usize] });
        Estimate { shift, interval, p_value: f64::NAN }
    }
}

pub mod changepoint {
    pub use crate::report::ChangePoint;
    pub fn detect(_series: &[f64]) -> Vec<ChangePoint> {
        Vec::new()
    }
}
