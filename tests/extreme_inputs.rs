//! Well-formed inputs at extreme scale (issue #40 item 1): memory follows the answer,
//! not the input.

mod common;
mod extreme;

use std::path::PathBuf;

/// Writes the extreme inputs into `PERFLAB_EXTREME_DIR` for scripts/eval-hostile-inputs
/// (`PERFLAB_EXTREME=deep,threads:100000,map:10000000,names:1500,jitdump:10000000`).
#[test]
#[ignore]
fn write_extreme_inputs() {
    let dir = PathBuf::from(std::env::var("PERFLAB_EXTREME_DIR").expect("PERFLAB_EXTREME_DIR"));
    let which = std::env::var("PERFLAB_EXTREME").unwrap_or_default();
    let (lib, f0) = extreme::library_of_functions(&dir, 8000).expect("cc");
    for item in which.split(',').filter(|s| !s.is_empty()) {
        let (kind, n) = item.split_once(':').unwrap_or((item, "0"));
        let n: u64 = n.parse().unwrap();
        match kind {
            "deep" => extreme::deep_stacks(&dir.join("deep.data"), &lib, f0, 150, 8000, false),
            "deep-distinct" => extreme::deep_stacks(&dir.join("deep-distinct.data"), &lib, f0, 150, 8000, true),
            "diverging" => extreme::diverging_stacks(&dir.join("diverging.data"), 150, 8000),
            "threads" => extreme::many_threads(&dir.join(format!("threads-{n}.data")), &lib, f0, n as u32, 1),
            "map" => {
                let pid = extreme::RUNTIME_PID;
                extreme::perf_map(&std::path::PathBuf::from(format!("/tmp/perf-{pid}.map")), n);
                extreme::runtime_samples(&dir.join(format!("map-{n}.data")), pid, &extreme::sampled(n), None);
            }
            "names" => {
                let pid = extreme::RUNTIME_PID + 1;
                extreme::perf_map_of_long_names(&std::path::PathBuf::from(format!("/tmp/perf-{pid}.map")), n, 1 << 20);
                extreme::runtime_samples(&dir.join(format!("names-{n}.data")), pid, &extreme::sampled(n), None);
            }
            "jitdump" => {
                let pid = extreme::RUNTIME_PID + 2;
                let dump = dir.join(format!("jit-{pid}.dump"));
                extreme::jitdump(&dump, pid, n);
                extreme::runtime_samples(&dir.join(format!("jitdump-{n}.data")), pid, &extreme::sampled(n), Some(&dump));
            }
            other => panic!("unknown {other}"),
        }
    }
}
