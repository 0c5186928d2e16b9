//! Times `perflab::report::render_html` on a synthetic suite (default 1,000 benchmarks ×
//! 100 labels) and writes the page, for the README figure and for eyeballing the design.
//!
//! `cargo run --release --example report_render_time -- [BENCHMARKS] [LABELS] [OUT.html]`

use perflab::model::{Machine, Verdict};
use perflab::report::{
    render_html, BenchmarkHistory, ChangePoint, CiMethod, CounterRow, CounterTable, HistoryPoint,
    LabelComparison, MachineGroup, RelativeTime, ReportData,
};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let benchmarks: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let label_count: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100).max(2);
    let out = args.get(2).cloned().unwrap_or_else(|| "target/report-synthetic.html".into());
    let data = synthetic(benchmarks, label_count);
    let start = Instant::now();
    let html = render_html(&data);
    let elapsed = start.elapsed();
    std::fs::write(&out, &html).expect("write the report");
    println!(
        "rendered {benchmarks} benchmarks x {label_count} labels in {:.3} s ({:.1} MB) -> {out}",
        elapsed.as_secs_f64(),
        html.len() as f64 / 1e6
    );
}

fn synthetic(benchmarks: usize, label_count: usize) -> ReportData {
    let mut rng = StdRng::seed_from_u64(7);
    let labels: Vec<String> = (0..label_count).map(|i| format!("v1.{i}")).collect();
    let mut rows = Vec::new();
    let mut histories = Vec::new();
    let mut counter_rows = Vec::new();
    for b in 0..benchmarks {
        let name = format!("suite/group-{}/benchmark-{b:04}", b % 17);
        let base = 10f64.powf(rng.gen_range(-4.0..0.0));
        let shift_at = rng.gen_range(1..label_count);
        let shift = if rng.gen_bool(0.2) { rng.gen_range(0.8..1.25) } else { 1.0 };
        let points: Vec<HistoryPoint> = labels
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let level = if i >= shift_at { base * shift } else { base };
                let median = level * (1.0 + rng.gen_range(-0.01..0.01));
                HistoryPoint { label: label.clone(), median, ci: Some((median * 0.985, median * 1.015)), n: 10 }
            })
            .collect();
        let last = points.last().map(|p| p.median).unwrap_or(base);
        let ratio = last / points[0].median;
        let half = rng.gen_range(0.005..0.03);
        let verdict = if ratio * (1.0 - half) > 1.01 {
            Verdict::Slower
        } else if ratio * (1.0 + half) < 0.99 {
            Verdict::Faster
        } else if (ratio - 1.0).abs() + half < 0.01 {
            Verdict::Equivalent
        } else {
            Verdict::Inconclusive
        };
        rows.push(RelativeTime {
            benchmark: name.clone(),
            ratio,
            ci_low: ratio * (1.0 - half),
            ci_high: ratio * (1.0 + half),
            confidence: 0.95,
            p_value: Some(rng.gen_range(0.0..1.0)),
            verdict,
            method: CiMethod::Paired,
            n: 20,
        });
        let change_points = if shift != 1.0 {
            vec![ChangePoint {
                index: shift_at,
                before: base,
                after: base * shift,
                ratio: shift,
                ci: (shift * 0.99, shift * 1.01),
                p_value: 0.001,
            }]
        } else {
            vec![]
        };
        histories.push(BenchmarkHistory { benchmark: name.clone(), points, change_points });
        for metric in ["task-clock", "page-faults"] {
            let value = rng.gen_range(1e3..1e9);
            counter_rows.push(CounterRow {
                benchmark: name.clone(),
                metric: metric.into(),
                values: vec![Some(value), Some(value * rng.gen_range(0.9..1.1))],
            });
        }
    }
    ReportData {
        title: format!("Synthetic suite: {benchmarks} benchmarks × {label_count} labels"),
        generated_at: "2026-11-22T03:00:00Z".into(),
        metric: "wall_s".into(),
        reference: labels[0].clone(),
        comparisons: vec![LabelComparison { label: labels[label_count - 1].clone(), rows }],
        histories,
        counters: CounterTable { labels: vec![labels[0].clone(), labels[label_count - 1].clone()], rows: counter_rows },
        machines: vec![MachineGroup {
            labels: labels.clone(),
            machine: Machine {
                hostname: "bench-01".into(),
                cpu_model: "AMD EPYC (synthetic)".into(),
                cores: 2,
                kernel: "6.1.0".into(),
                governor: Some("performance".into()),
                pmu: false,
                virtualization: Some("kvm".into()),
            },
            perflab_version: env!("CARGO_PKG_VERSION").into(),
            environment: Default::default(),
        }],
        labels,
        notes: vec![],
    }
}
