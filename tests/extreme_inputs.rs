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
            "diverging" => extreme::diverging_stacks(&dir.join("diverging.data"), 150, if n == 0 { 8000 } else { n }),
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
                extreme::runtime_samples(
                    &dir.join(format!("jitdump-{n}.data")),
                    pid,
                    &extreme::sampled(n),
                    Some(&dump),
                );
            }
            other => panic!("unknown {other}"),
        }
    }
}

/// perflab with `args` in an address space of at most `limit` bytes (RLIMIT_AS): an
/// allocation past it fails and aborts perflab, whatever the hour's load — the memory
/// bound is checked without timing anything.
fn perflab_within(limit: u64, args: &[&std::ffi::OsStr]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_perflab"));
    cmd.args(args).env("NO_COLOR", "1").env_remove("PERFLAB_DB").env_remove("DEBUGINFOD_URLS");
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let l = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_AS, &l) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

const MIB: u64 = 1 << 20;

fn assert_finished(output: &std::process::Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{what}: {:?}\n{stderr}", output.status);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// 150 samples of 3,000 frames, no two alike (450,000 distinct frames): the flame graph
/// and the differential flame graph are made within 512 MiB of address space, the
/// table and the callee tree within 256 MiB (150 × 8,000 took 1.3–3.1 GB of memory before
/// the flame graph's tree kept only what it draws; these took up to 1 GiB and 384 MiB
/// before the table made only the rows it shows and names were interned once; about 352
/// and 160 MiB now: see docs/inputs.md).
#[test]
fn deep_distinct_stacks_fit_in_a_bounded_address_space() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("diverging.data");
    extreme::diverging_stacks(&data, 150, 3000);
    let svg = dir.path().join("flame.svg");
    let out = perflab_within(512 * MIB, &["show".as_ref(), data.as_os_str(), "--flamegraph".as_ref(), svg.as_os_str()]);
    assert_finished(&out, "show --flamegraph");
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.contains("stacks deeper than 1024 frames"), "the depth cut is said");
    assert!(picture.len() < 200 * MIB as usize, "an SVG of {} bytes", picture.len());
    let out = perflab_within(
        512 * MIB,
        &["diff".as_ref(), data.as_os_str(), data.as_os_str(), "--flamegraph".as_ref(), svg.as_os_str()],
    );
    assert_finished(&out, "diff --flamegraph");
    // The table of 450,000 functions: the rows shown made, the others counted and said.
    let out = perflab_within(256 * MIB, &["show".as_ref(), data.as_os_str(), "--limit".as_ref(), "3".as_ref()]);
    let table = assert_finished(&out, "show");
    assert!(table.contains("147  (449997 more rows; --limit to see them)"), "{table}");
    // The callee tree keys its nodes by the call graph's interned names (it took over
    // 320 MiB when every node and every stack copied its names).
    let out = perflab_within(
        256 * MIB,
        &["show".as_ref(), data.as_os_str(), "--callees".as_ref(), "[anon 0x100000004]".as_ref()],
    );
    let tree = assert_finished(&out, "show --callees");
    assert!(tree.contains("[anon 0x100000004]"), "{}", &tree[..tree.len().min(2000)]);
}

/// A jitdump of 2·10⁶ code loads (317 MB) names the 1,000 sampled pieces of code within
/// 512 MiB of address space (held whole, 10⁷ records took 2.08 GB).
#[test]
fn a_long_jitdump_is_read_for_the_sampled_code_only() {
    let dir = tempfile::tempdir().unwrap();
    let pid = extreme::RUNTIME_PID + 10 + std::process::id() % 1000;
    let dump = dir.path().join(format!("jit-{pid}.dump"));
    extreme::jitdump(&dump, pid, 2_000_000);
    let data = dir.path().join("jit.data");
    extreme::runtime_samples(&data, pid, &extreme::sampled(2_000_000), Some(&dump));
    let out = perflab_within(512 * MIB, &["show".as_ref(), data.as_os_str(), "--limit".as_ref(), "3".as_ref()]);
    let report = assert_finished(&out, "show");
    assert!(report.contains("LazyCompile:*fn0 /app.js:0:1"), "{report}");
    assert!(report.contains("997 more rows"), "every sampled piece its own row: {report}");
}

/// A perf map of 300 names of 1 MiB, every one sampled, is shown within 512 MiB of
/// address space: each name keeps its first 4 KiB and says how long it was (1,500 such
/// names aborted perflab).
#[test]
fn huge_perf_map_names_are_cut_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let pid = extreme::RUNTIME_PID + 2000 + std::process::id() % 1000;
    let map = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _remove = Remove(map.clone());
    extreme::perf_map_of_long_names(&map, 300, 1 << 20);
    let data = dir.path().join("names.data");
    extreme::runtime_samples(&data, pid, &extreme::sampled(300), None);
    let out = perflab_within(512 * MIB, &["show".as_ref(), data.as_os_str(), "--limit".as_ref(), "3".as_ref()]);
    let report = assert_finished(&out, "show");
    assert!(report.contains("fn0_xxx"), "{}", &report[..report.len().min(3000)]);
    assert!(report.contains("(a name of 1048580 bytes, cut at 4096)"), "{}", &report[..report.len().min(3000)]);
}

/// One process of 200,000 threads, a sample each: `show` reports them within 176 MiB of
/// address space (it needed 160–200 MiB with a location's names copied per thread and
/// every key held twice; about 144 MiB now), and the terminal lists the busiest threads
/// of the process, not 200,000 of them on one line.
#[test]
fn many_threads_fit_in_a_bounded_address_space() {
    let dir = tempfile::tempdir().unwrap();
    let Some((lib, f0)) = extreme::library_of_functions(dir.path(), 16) else {
        common::skip::skip("no C compiler (cc) to build the sampled library");
        return;
    };
    let data = dir.path().join("threads.data");
    extreme::many_threads(&data, &lib, f0, 200_000, 1);
    let out = perflab_within(176 * MIB, &["show".as_ref(), data.as_os_str(), "--limit".as_ref(), "3".as_ref()]);
    let report = assert_finished(&out, "show");
    assert!(report.starts_with("200000 samples"), "{}", &report[..report.len().min(2000)]);
    assert!(report.contains("200001 tasks in 1 processes:"), "{}", &report[..report.len().min(2000)]);
    let threads = report.lines().find(|l| l.contains("pid 5000 threads:")).expect("the process's line");
    assert!(threads.ends_with("199997 more threads (199997 samples)"), "{threads}");
    assert!(threads.len() < 200, "{threads}");
}
