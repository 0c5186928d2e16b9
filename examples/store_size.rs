//! Database size per 1,000 stored runs (SQLite), for the README figure.
//!
//! Writes experiments of 2 commands × 50 rounds through the store API, as
//! `perflab run` does (one transaction per run), then checkpoints the WAL and reports
//! the file size. Usage: `cargo run --example store_size [RUNS...]`
//! (or scripts/store-size.sh).

use perflab::model::*;
use perflab::store::{Meta, Store};
use std::collections::BTreeMap;

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1_000, 10_000, 100_000] } else { sizes };
    println!("runs\tcounters/run\tdb bytes\tbytes/run\tKiB per 1,000 runs");
    for &counters in &[0usize, 4] {
        for &runs in &sizes {
            let dir = std::env::temp_dir().join(format!("perflab-store-size-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("perflab.db");
            let _ = std::fs::remove_file(&path);
            let mut store = Store::open(Some(path.to_str().unwrap())).unwrap();
            fill(&mut store, runs, counters);
            drop(store);
            // Fold the WAL into the main file so the size is what stays on disk.
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
            drop(conn);
            let bytes = std::fs::metadata(&path).unwrap().len();
            println!(
                "{runs}\t{counters}\t{bytes}\t{:.0}\t{:.0}",
                bytes as f64 / runs as f64,
                bytes as f64 / runs as f64 * 1000.0 / 1024.0
            );
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}

fn fill(store: &mut Store, runs: usize, counters: usize) {
    let machine = perflab::machine::detect();
    let settings = Settings { seed: 1, fixed_rounds: Some(50), ..Default::default() };
    let specs: Vec<CommandSpec> = ["old", "new"]
        .iter()
        .map(|n| CommandSpec {
            name: n.to_string(),
            argv: vec![format!("./{n}"), "--size".into(), "1000".into()],
            command_line: format!("./{n} --size 1000"),
            ..CommandSpec::default()
        })
        .collect();
    let names = ["task-clock", "page-faults", "context-switches", "cpu-migrations"];
    let per_experiment = 100;
    let mut written = 0;
    let mut bench = 0;
    while written < runs {
        let meta = Meta {
            label: format!("v{}", bench / 20),
            benchmark: format!("bench{}", bench % 20),
            git_commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            source: "run".into(),
        };
        let mut rec = store.begin(&meta, &machine, &settings, &specs);
        for i in 0..per_experiment.min(runs - written) {
            let wall = 0.025 + (i as f64 * 0.618).fract() * 0.001;
            let run = Run {
                round: (i / 2) as u32,
                position: (i % 2) as u32,
                wall_s: wall,
                user_s: wall * 0.97,
                sys_s: wall * 0.02,
                max_rss_kib: 3_456,
                minor_faults: 140,
                major_faults: 0,
                voluntary_cs: 1,
                involuntary_cs: 3,
                exit: ExitInfo { exit_code: Some(0), signal: None, timed_out: false },
                env_pad_bytes: (i * 37 % 4096) as u32,
                counters: names[..counters]
                    .iter()
                    .map(|n| (n.to_string(), CounterReading::value(wall * 1e9 + i as f64, false)))
                    .collect::<BTreeMap<_, _>>(),
                profile: None,
            };
            rec.record_run(i % 2, &run).unwrap();
            written += 1;
        }
        bench += 1;
    }
}
