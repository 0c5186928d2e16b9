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

fn program(iterations: u64) -> String {
    format!(
        "int main(void) {{\n    unsigned long x = 1;\n    for (unsigned long i = 0; i < {iterations}UL; i++) {{\n        x = x * 6364136223846793005UL + 1442695040888963407UL;\n        __asm__ volatile(\"\" : \"+r\"(x));\n    }}\n    return (int)(x & 1) * 0;\n}}\n"
    )
}

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
    let culprit = commit(repo, "loop.c", &(program(300_000_000) + "/* tidy */\n"), "loop thirty times longer");
    commit(repo, "README", "a longer loop\n", "update the README");
    let bad = commit(repo, "loop.c", &(program(300_000_000) + "/* tidy again */\n"), "tidy again");

    // Each step compares a commit with the good one on the sequential design, its first
    // look at 20 rounds (at most 200; a 20 % threshold lets an unchanged build be called
    // `equivalent` in a few rounds instead of running to the time limit). A step with
    // the change (~27× the wall time, e^3 assumed) is misread as good only if no look by
    // 58 rounds cleared 1 (≤ 60 s beside two burners) or its ratio read below bisect's
    // halfway mark (√27 ≈ 5.2: 1.6 below the truth); an unchanged one is misread as bad
    // only if a look's whole interval cleared 5.2. At most 4 steps (tests/common/noise.rs):
    let tails = [common::noise::tail("wall_s", 10_000_000), common::noise::tail("uncontended_s", 10_000_000)];
    let tails: Vec<_> = tails.iter().collect();
    let p_step = common::noise::p_sequential_misses(20, &tails, 3.0, 58)
        + common::noise::p_sequential_estimate_off(20, &tails, 1.6, 58)
        + common::noise::p_sequential_crosses(20, &tails, 1.6, 200);
    assert!(4.0 * p_step < common::noise::P_MAX, "P(fail) ≤ {:e}", 4.0 * p_step);

    let work = tempfile::tempdir().unwrap();
    let suite = "[defaults]\nthreshold = 20\nmin_rounds = 20\nmax_rounds = 200\n[[benchmark]]\nname = \"loop\"\ncommand = \"{build}/loop\"\n";
    std::fs::write(work.path().join("perflab.toml"), suite).unwrap();
    let out = Command::cargo_bin("perflab")
        .unwrap()
        .current_dir(work.path())
        .args(["bisect", "--good", &good, "--bad", &bad, "--bench", "loop", "--max-time", "90s", "--repo"])
        .arg(repo)
        .args(["--build", "cc -O1 -o loop loop.c && echo {commit} > built-at"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("first bad commit: {culprit} loop thirty times longer")), "{stdout}");
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
    let good = commit(repo, "loop.c", &program(2_000_000), "v1");
    // Ten times less work: clearly not slower (an identical build could read `slower` by chance).
    let bad = commit(repo, "loop.c", &program(200_000), "faster");
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("perflab.toml"), "[[benchmark]]\nname = \"loop\"\ncommand = \"{build}/loop\"\n")
        .unwrap();
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
    store.begin(&meta, &perflab::model::Machine::detect(), &settings, &[spec]).record_run(0, &run).unwrap();
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
