//! `perflab bisect` on a tiny git repository made here: a C loop whose iteration count
//! rises tenfold at a known commit.
//!
//! Why real timed runs: bisect builds and times each commit; the step is tenfold, and
//! the chance that a busy machine misleads a step is computed (tests/common/noise.rs).

mod common;

use assert_cmd::Command;
use std::path::Path;

fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git is installed");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A C loop of `iterations` that prints the CPU time it took (`cpu_ns=N`): the metric the
/// suites below decide on — a busy machine stretches a run's wall time several-fold at
/// times, its CPU time hardly (tests/common/noise.rs).
fn program(iterations: u64) -> String {
    format!(
        "#include <stdio.h>\n#include <time.h>\nint main(void) {{\n    unsigned long x = 1;\n    for (unsigned long i = 0; i < {iterations}UL; i++) {{\n        x = x * 6364136223846793005UL + 1442695040888963407UL;\n        __asm__ volatile(\"\" : \"+r\"(x));\n    }}\n    struct timespec t;\n    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);\n    printf(\"cpu_ns=%ld\\n\", t.tv_sec * 1000000000L + t.tv_nsec);\n    return (int)(x & 1) * 0;\n}}\n"
    )
}

/// The suite of both tests: one benchmark deciding on the CPU time it prints.
const SUITE: &str =
    "[[benchmark]]\nname = \"loop\"\ncommand = \"{build}/loop\"\noutput_metric = \"cpu_ns=(?<cpu_ns>[0-9]+)\"\n";

fn commit(repo: &Path, file: &str, text: &str, message: &str) -> String {
    std::fs::write(repo.join(file), text).unwrap();
    git(repo, &["add", file]);
    git(repo, &["commit", "-q", "-m", message]);
    git(repo, &["rev-parse", "HEAD"])
}

#[test]
fn finds_the_commit_that_made_the_loop_slower() {
    let repo_dir = tempfile::tempdir().unwrap();
    let repo = repo_dir.path();
    git(repo, &["init", "-q"]);
    let good = commit(repo, "loop.c", &program(10_000_000), "first version");
    commit(repo, "README", "a loop\n", "add a README");
    commit(repo, "loop.c", &(program(10_000_000) + "/* tidy */\n"), "tidy");
    let culprit = commit(repo, "loop.c", &(program(100_000_000) + "/* tidy */\n"), "loop ten times longer");
    commit(repo, "README", "a longer loop\n", "update the README");
    let bad = commit(repo, "loop.c", &(program(100_000_000) + "/* tidy again */\n"), "tidy again");

    // Each step compares a commit with the good one on the CPU time the loop prints, on the
    // sequential design with its first look at 24 rounds (at most 200; a 20 % threshold
    // lets an unchanged build be called `equivalent` in a few rounds). Bisect calls a
    // commit bad when it is `slower` and at least halfway (√ of the bad end's ratio, ~3.2).
    // With 10× the work (e^2 assumed) a step misreads a commit only if no look by 58
    // rounds cleared 1, or an estimate (the bad end's or the commit's) was off by e^0.5,
    // or an unchanged build's whole interval cleared e^0.5 — all need many rounds' CPU
    // time to stray by e^0.4 (none of 600 strayed by e^0.2 beside two burners). 4 steps:
    let cpu = common::noise::tail("cpu_s", 10_000_000);
    let p_step = common::noise::p_sequential_misses(24, &[&cpu], 2.0, 58)
        + 2.0 * common::noise::p_sequential_estimate_off(24, &[&cpu], 0.5, 58)
        + common::noise::p_sequential_crosses(24, &[&cpu], 0.5, 200);
    assert!(4.0 * p_step < common::noise::P_MAX, "P(fail) ≤ {:e}", 4.0 * p_step);

    let work = tempfile::tempdir().unwrap();
    let suite =
        SUITE.replace("[[benchmark]]", "[defaults]\nthreshold = 20\nmin_rounds = 24\nmax_rounds = 200\n[[benchmark]]");
    std::fs::write(work.path().join("perflab.toml"), suite).unwrap();
    let out = Command::cargo_bin("perflab")
        .unwrap()
        .current_dir(work.path())
        .args(["bisect", "--good", &good, "--bad", &bad, "--bench", "loop", "--max-time", "60s", "--repo"])
        .arg(repo)
        .args(["--build", "cc -O1 -o loop loop.c && echo {commit} > built-at"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("first bad commit: {culprit} loop ten times longer")), "{stdout}");
    // The bad end is confirmed first, then each step prints its verdict.
    let steps: Vec<&str> = stdout.lines().filter(|l| l.contains(" → ")).collect();
    assert!(steps.len() >= 3, "{stdout}");
    assert!(steps[0].starts_with(&bad[..10]) && steps[0].ends_with("→ bad"), "{stdout}");
    assert!(steps.iter().any(|l| l.ends_with("→ good")), "{stdout}");
    // The temporary worktrees are gone and the checkout is untouched.
    assert_eq!(git(repo, &["worktree", "list"]).lines().count(), 1);
    assert_eq!(git(repo, &["rev-parse", "HEAD"]), bad);
}

#[test]
fn rejects_a_bad_end_that_is_not_slower_and_bad_revisions() {
    let repo_dir = tempfile::tempdir().unwrap();
    let repo = repo_dir.path();
    git(repo, &["init", "-q"]);
    let good = commit(repo, "loop.c", &program(10_000_000), "v1");
    // Ten times less work: clearly not slower (an identical build could read `slower` by
    // chance): its 8 rounds' interval of the printed CPU time lies above 1 only if most
    // rounds strayed by e^2 (none of 600 by e^0.3) (tests/common/noise.rs).
    let bad = commit(repo, "loop.c", &program(1_000_000), "faster");
    let p = common::noise::p_sequential_crosses(8, &[&common::noise::tail("cpu_s", 1_000_000)], 2.0, 8);
    assert!(p < common::noise::P_MAX, "P(fail) ≤ {p:e}");
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("perflab.toml"), SUITE).unwrap();
    let bisect = |good: &str, bad: &str| {
        Command::cargo_bin("perflab")
            .unwrap()
            .current_dir(work.path())
            .env("PERFLAB_DB", work.path().join("h.db"))
            .args([
                "bisect",
                "--good",
                good,
                "--bad",
                bad,
                "--bench",
                "loop",
                "--rounds",
                "8",
                "--build",
                "cc -O1 -o loop loop.c",
                "--repo",
            ])
            .arg(repo)
            .output()
            .unwrap()
    };
    let out = bisect(&good, &bad);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not slower than --good"));
    // A stored label stands for the commit it was recorded at.
    let mut store = perflab::store::Store::open(Some(work.path().join("h.db").to_str().unwrap())).unwrap();
    let meta = perflab::store::Meta {
        label: "release-1".into(),
        benchmark: "loop".into(),
        git_commit: Some(good.clone()),
        source: "test".into(),
    };
    let spec = perflab::model::CommandSpec {
        name: "x".into(),
        argv: vec!["x".into()],
        command_line: "x".into(),
        ..Default::default()
    };
    let settings: perflab::model::Settings = serde_json::from_str(
        r#"{"seed":1,"warmup_rounds":0,"min_rounds":1,"max_rounds":1,"max_time_s":1,"threshold":0.01,"confidence":0.95,"env_padding":false,"mode":"wall"}"#,
    )
    .unwrap();
    let run = perflab::model::Run { wall_s: 0.1, ..Default::default() };
    store.begin(&meta, &perflab::machine::detect(), &settings, &[spec]).record_run(0, &run).unwrap();
    drop(store);
    let out = bisect("release-1", &bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bad"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not slower than --good release-1"));

    let out = bisect("no-such-rev", &bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`no-such-rev` is neither a commit"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
