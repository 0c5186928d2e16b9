//! End-to-end tests of `perflab compare --layouts N --build CMD` with a real compiler and
//! linker: gcc builds tests/fixtures/layout_loop.c once per layout seed, lld's
//! `--shuffle-sections=*=SEED` placing its functions (docs/suites.md, "Code layouts").
//!
//! What is asserted does not depend on the hour's noise: how many builds ran and that
//! they differ, the experiment's structure (versions, layouts, seeds, one comparison per
//! version across its layouts), exit codes and messages of bad input. The one verdict
//! asserted is between versions whose work differs tenfold (see
//! `a_tenfold_change_is_slower_across_layouts`). Whether layouts move the times, and how
//! often a one-layout comparison is wrong, is measured by scripts/eval-layouts, not here.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1");
    // Never the user's layout cache: one of this process's own under cargo's directory for
    // tests' files (keys name the temporary directories, so tests never share an entry
    // unless they mean to).
    cmd.env(
        "PERFLAB_LAYOUT_CACHE",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("layout-cache-{}", std::process::id())),
    );
    cmd
}

/// gcc and lld, or why the test is skipped (scripts/test installs both).
fn toolchain() -> Option<()> {
    for tool in ["gcc", "ld.lld"] {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            common::skip::skip(&format!("{tool} is not installed (scripts/test installs it)"));
            return None;
        }
    }
    Some(())
}

/// The build of one layout of the fixture into `dir/<name>-{layout}`, `defines` added.
fn build_command(dir: &Path, name: &str, defines: &str) -> String {
    format!(
        "gcc -O2 -ffunction-sections -falign-functions=1 -falign-loops=1 {defines} -fuse-ld=lld \
         '-Wl,--shuffle-sections=*={{layout}}' -o {}/{name}-{{layout}} {}",
        dir.display(),
        common::fixtures_dir().join("layout_loop.c").display()
    )
}

fn program(dir: &Path, name: &str, args: &str) -> String {
    format!("{}/{name}-{{layout}} {args}", dir.display())
}

/// `--build` and the two named commands of program `p` at one and ten times its work.
fn tenfold_pair(dir: &Path) -> Vec<String> {
    let named = ["-n", "small", "-n", "large"].map(String::from);
    [
        vec!["--build".into(), build_command(dir, "p", "")],
        named.to_vec(),
        vec![program(dir, "p", "1 4"), program(dir, "p", "1 40")],
    ]
    .concat()
}

fn json_of(output: &[u8]) -> Value {
    serde_json::from_slice(output).expect("valid JSON on stdout")
}

#[test]
fn every_layout_is_built_and_the_versions_are_compared_across_them() {
    let Some(()) = toolchain() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = perflab()
        .args(["compare", "--layouts", "3", "--seed", "11", "-r", "6", "--no-progress", "--json", "-"])
        .args(["--build", &build_command(dir.path(), "a", ""), "--build", &build_command(dir.path(), "b", "")])
        .args(["-n", "master", "-n", "v3", &program(dir.path(), "a", "1 1"), &program(dir.path(), "b", "1 1")])
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    for (i, name) in ["master@L1", "master@L2", "master@L3", "v3@L1", "v3@L2", "v3@L3"].iter().enumerate() {
        assert!(stderr.contains(&format!("perflab: building {name} ({}/6): gcc", i + 1)), "{stderr}");
    }
    // Six programs, all different files (check_distinct refuses identical ones).
    let built: Vec<Vec<u8>> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
    assert_eq!(built.len(), 6);
    assert!((0..6).all(|i| (0..i).all(|j| built[i] != built[j])), "two layouts linked the same program");

    let json = json_of(&out.stdout);
    let commands: Vec<&str> =
        json["commands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(commands, ["master@L1", "master@L2", "master@L3", "v3@L1", "v3@L2", "v3@L3"]);
    assert_eq!(json["rounds"], 6);
    assert_eq!(json["stop_reason"], "fixed_rounds");
    // Every command ran once per measured round.
    for c in json["commands"].as_array().unwrap() {
        assert_eq!(c["runs"].as_array().unwrap().len(), 6, "{}", c["name"]);
    }
    // One comparison per metric: v3 against master across their layouts, never layout by layout.
    let comparisons = json["comparisons"].as_array().unwrap();
    assert!(comparisons.iter().all(|c| c["baseline"] == "master" && c["candidate"] == "v3"), "{comparisons:?}");
    let primary = json["primary_metric"].as_str().unwrap();
    let c = comparisons.iter().find(|c| c["metric"] == primary).unwrap();
    let notes = c["flags"].to_string();
    assert!(notes.contains("across layouts: 3 + 3 layouts in 6 rounds") && notes.contains("Mann–Whitney"), "{notes}");
    // 3 + 3 layouts cannot reach 95 % whatever they measure (P(U = 0) = 1/20): said, no verdict.
    assert!(notes.contains("3 + 3 layouts cannot reach 95.0 % confidence"), "{notes}");
    assert!(c["verdict"] != "slower" && c["verdict"] != "faster", "{c}");
    // The layouts' analysis: both versions, three seeds each, the seeds in the builds' paths.
    let layouts = &json["layouts"];
    let versions = layouts["versions"].as_array().unwrap();
    assert_eq!(versions.iter().map(|v| v["name"].as_str().unwrap()).collect::<Vec<_>>(), ["master", "v3"]);
    for v in versions {
        let levels = v["layouts"].as_array().unwrap();
        assert_eq!(levels.len(), 3, "{v}");
        for level in levels {
            let seed = level["seed"].as_u64().unwrap();
            assert!((1..1 << 31).contains(&seed), "lld reads the seed as a positive 32-bit integer: {seed}");
            let prefix = if v["name"] == "master" { "a" } else { "b" };
            assert!(dir.path().join(format!("{prefix}-{seed}")).is_file(), "no build for seed {seed}");
        }
    }
    // The environment keeps which commands were which version's layouts.
    assert!(
        json["environment"]["layouts"].as_str().is_some_and(|s| s.contains("\"master\"")),
        "{}",
        json["environment"]
    );
}

/// The candidate does ten times the steady work of the baseline in every layout (steady
/// 40 vs 4 million multiplies; the hot loop the layouts move, 1 million iterations, is
/// the same): every one of its 4 layouts is slower than every one of the baseline's
/// unless a layout or the load moved a program ×5, and then (complete separation)
/// Mann–Whitney's p = 2/70 < 5 % with the fixed rounds' single look at 95 %.
#[test]
fn a_tenfold_change_is_slower_across_layouts() {
    let Some(()) = toolchain() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = perflab()
        .args(["compare", "--layouts", "4", "--seed", "5", "-r", "6", "--no-progress", "--json", "-"])
        .args(tenfold_pair(dir.path()))
        .assert()
        .success()
        .get_output()
        .clone();
    let json = json_of(&out.stdout);
    let primary = json["primary_metric"].as_str().unwrap();
    let c = json["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == primary).unwrap().clone();
    assert_eq!((c["baseline"].as_str(), c["candidate"].as_str()), (Some("small"), Some("large")));
    assert_eq!(c["verdict"], "slower", "{c}");
    assert!(c["ci_low"].as_f64().unwrap() > 1.5, "{c}");
    assert!((c["p_value"].as_f64().unwrap() - 2.0 / 70.0).abs() < 1e-9, "complete separation: {c}");
}

#[test]
fn bad_layout_arguments_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let build = build_command(dir.path(), "a", "");
    let run = |args: &[&str]| {
        let out = perflab().arg("compare").args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let cmd = program(dir.path(), "a", "1 1");
    let (code, err) = run(&["--layouts", "1", "--build", &build, &cmd, &cmd]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--layouts must be at least 2"), "{err}");
    let (code, err) = run(&["--layouts", "2", "--build", &build, "true", &cmd]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("every command must name its layout's program with {layout}"), "{err}");
    let (code, err) = run(&["--layouts", "2", "--build", &build, "--build", &build, "--build", &build, &cmd, &cmd]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--build is given 3 times for 2 commands"), "{err}");
    let (code, err) = run(&["--layouts", "2", &cmd, &cmd]);
    assert_eq!(code, Some(2), "clap: --layouts requires --build: {err}");
    let (code, err) = run(&["--layouts", "2", "--build", &build, &cmd, &cmd]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("two versions named"), "{err}");
    let (code, err) = run(&["--layouts", "many", "--build", &build, &cmd, &cmd]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("expected a number of layouts or `auto`, got `many`"), "{err}");
    let (code, err) = run(&["--layouts", "auto", "--build", &build, "-n", "a", "-n", "b", "-n", "c", &cmd, &cmd, &cmd]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--layouts auto compares two versions"), "{err}");
    let (code, err) = run(&["--layouts", "auto", "-r", "5", "--build", &build, "-n", "a", "-n", "b", &cmd, &cmd]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--layouts auto chooses each pair's rounds itself"), "{err}");
    let (code, err) =
        run(&["--layouts", "4", "--max-layouts", "8", "--build", &build, "-n", "a", "-n", "b", &cmd, &cmd]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--max-layouts is the budget of --layouts auto"), "{err}");
    let (code, err) = run(&["--build", &build, "-n", "a", "-n", "b", "true", &cmd]);
    assert_eq!(code, Some(2), "--build alone checks its commands too: {err}");
    assert!(err.contains("every command must name its layout's program with {layout}"), "{err}");
    // Nothing was built for any of them.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_failing_build_stops_before_any_round() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = program(dir.path(), "a", "1 1");
    let out = perflab()
        .args(["compare", "--layouts", "2", "--build", "exit 7", "-n", "a", "-n", "b", &cmd, &cmd])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("building ") && err.contains("@L1 failed"), "{err}");
    assert!(!err.contains("@L2 (2/4)"), "stopped at the first failure: {err}");
}

/// A build whose `{layout}` reaches only the output path links one program N times: the
/// experiment would measure no layout spread, so it is refused before any round.
#[test]
fn layouts_that_are_the_same_program_are_refused() {
    let Some(()) = toolchain() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ignores_seed = format!(
        "gcc -O2 -o {}/a-{{layout}} {}",
        dir.path().display(),
        common::fixtures_dir().join("layout_loop.c").display()
    );
    let cmd = program(dir.path(), "a", "1 1");
    let out = perflab()
        .args([
            "compare",
            "--layouts",
            "2",
            "--no-progress",
            "--build",
            &ignores_seed,
            "-n",
            "a",
            "-n",
            "b",
            &cmd,
            &cmd,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("rounds"), "no round was run: {err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("perflab: error: layouts `a@L1` and `a@L2` of build `a` built identical programs"),
        "{err}"
    );
    assert!(last.contains("{layout} does not reach the linker"), "{err}");
}

/// A suite with `layouts = 2` in `[builds]`: each build's `prepare` links its layouts,
/// `perflab run --baseline` compares the versions across them, and what it stored is what
/// a later comparison of one build each is checked against (`Store::layout_spreads`),
/// matched by the program's file name (the seed is in the directory, as docs/suites.md's
/// example puts it).
#[test]
fn a_suite_with_layouts_stores_the_layout_spread_for_later_comparisons() {
    let Some(()) = toolchain() else { return };
    common::pg::each_backend("layouts_suite", |dir, db| {
        let prepare = |version: &str| {
            format!(
                "mkdir -p out/{version}-{{layout}} && gcc -O2 -ffunction-sections -falign-functions=1 -falign-loops=1 \
                 -fuse-ld=lld '-Wl,--shuffle-sections=*={{layout}}' -o out/{version}-{{layout}}/prog {}",
                common::fixtures_dir().join("layout_loop.c").display()
            )
        };
        let suite = format!(
            "[builds]\nlayouts = 2\nmaster = {{ path = \"out/master-{{layout}}/prog\", prepare = {:?} }}\n\
             v3 = {{ path = \"out/v3-{{layout}}/prog\", prepare = {:?} }}\n\
             [[benchmark]]\nname = \"loop\"\ncommand = \"{{build}} 1 4\"\n",
            prepare("master"),
            prepare("v3")
        );
        std::fs::write(dir.join("perflab.toml"), suite).unwrap();
        let out = Command::cargo_bin("perflab")
            .unwrap()
            .current_dir(dir)
            .env("PERFLAB_DB", db)
            .args(["run", "--label", "v3", "--baseline", "master", "--rounds", "5", "--seed", "3"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(std::fs::read_dir(dir.join("out")).unwrap().count(), 4, "2 versions × 2 layouts built");

        let mut store = perflab::store::Store::open(Some(db)).unwrap();
        let spreads = store.layout_spreads(&perflab::machine::detect()).unwrap();
        assert_eq!(spreads.len(), 1, "{spreads:?}");
        let s = &spreads[0];
        assert_eq!((s.benchmark.as_str(), s.program.as_str()), ("loop", "prog"), "{s:?}");
        assert!(s.spread.is_finite() && s.spread >= 0.0, "{s:?}");
        assert!(!s.metric.is_empty());
    });
}

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

/// `bisect --layouts 8`: every commit built in 8 layouts; a step is bad when it is
/// slower beyond the threshold across its layouts (no halfway rule). The culprit makes
/// the steady work 10× longer (EXTRA_PERCENT 900); the threshold is 20 %, so a commit of
/// the same source is bad only if its layouts read > ×1.2 slower across all of them,
/// which layouts that move the hot loop (a fifth of the time) by 13 % cannot produce.
#[test]
fn bisect_across_layouts_finds_the_culprit() {
    let Some(()) = toolchain() else { return };
    let repo_dir = tempfile::tempdir().unwrap();
    let repo = repo_dir.path();
    let source = std::fs::read_to_string(common::fixtures_dir().join("layout_loop.c")).unwrap();
    let slow = source.replace("#define EXTRA_PERCENT 0\n", "#define EXTRA_PERCENT 900\n");
    assert_ne!(source, slow);
    let commit = |text: &str, message: &str| {
        std::fs::write(repo.join("loop.c"), text).unwrap();
        git(repo, &["add", "loop.c"]);
        git(repo, &["commit", "-q", "-m", message]);
        git(repo, &["rev-parse", "HEAD"])
    };
    git(repo, &["init", "-q"]);
    let good = commit(&source, "first version");
    commit(&(source.clone() + "/* tidy */\n"), "tidy");
    let culprit = commit(&(slow.clone() + "/* tidy */\n"), "ten times the steady work");
    let bad = commit(&(slow + "/* tidy again */\n"), "tidy again");

    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("perflab.toml"),
        "[defaults]\nthreshold = 20\n[[benchmark]]\nname = \"loop\"\ncommand = \"{build}/loop 1 4\"\n",
    )
    .unwrap();
    let build = "gcc -O2 -ffunction-sections -falign-functions=1 -falign-loops=1 -fuse-ld=lld \
                 '-Wl,--shuffle-sections=*={layout}' -o loop loop.c";
    let out = Command::cargo_bin("perflab")
        .unwrap()
        .current_dir(work.path())
        .env("NO_COLOR", "1")
        .args(["bisect", "--good", &good, "--bad", &bad, "--bench", "loop", "--rounds", "5", "--layouts", "8"])
        .args(["--seed", "9", "--build", build, "--repo"])
        .arg(repo)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("first bad commit: {culprit} ten times the steady work")), "{stdout}");
    let steps: Vec<&str> = stdout.lines().filter(|l| l.contains(" → ")).collect();
    assert!(steps[0].starts_with(&bad[..10]) && steps[0].contains("→ bad (layouts ±"), "{stdout}");
    assert!(steps.iter().any(|l| l.contains("→ good (layouts ±")), "{stdout}");
    assert!(steps.iter().all(|l| !l.contains("halfway")), "no halfway rule with layouts: {stdout}");
    assert_eq!(git(repo, &["worktree", "list"]).lines().count(), 1);
}

/// `--layouts auto` on a tenfold change (see `a_tenfold_change_is_slower_across_layouts`):
/// every pair's ratio is far above 1, so the signed-rank interval on the pairs leaves 1×
/// behind at the first look, after 8 pairs (all 8 ratios above 1: p = 2/2⁸ < 2.5 %, the
/// first look's α) — whatever the load, unless a layout or the load moved a program ×5.
/// Then the same comparison again: every layout comes from the cache, none is rebuilt,
/// even after the programs were deleted.
#[test]
fn layouts_auto_decides_at_the_first_look_and_reuses_the_cached_layouts() {
    let Some(()) = toolchain() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    // Run outside any git repository: the cache's key holds the working directory's
    // commit and diff, which an edit of this repository while the test runs would change.
    let run = || {
        perflab()
            .current_dir(dir.path())
            .env("PERFLAB_LAYOUT_CACHE", cache.path())
            .args(["compare", "--layouts", "auto", "--seed", "5", "--max-time", "10m", "--json", "-"])
            .args(tenfold_pair(dir.path()))
            .assert()
            .success()
            .get_output()
            .clone()
    };
    let first = run();
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(stderr.matches("perflab: building ").count(), 16, "8 pairs built: {stderr}");
    // Its rounds follow the noise measured (1–60 by the rule's guards), so only the pair
    // is asserted, not how many rounds it got.
    assert!(stderr.contains("perflab: layout pair 8 (large@L8 vs small@L8): "), "{stderr}");
    let json = json_of(&first.stdout);
    let c = &json["comparisons"][0];
    assert_eq!(
        (c["baseline"].as_str(), c["candidate"].as_str(), c["verdict"].as_str()),
        (Some("small"), Some("large"), Some("slower")),
        "{c}"
    );
    assert!(c["ci_low"].as_f64().unwrap() > 1.5, "{c}");
    assert!((c["p_value"].as_f64().unwrap() - 2.0 / 256.0).abs() < 1e-9, "every pair above 1: {c}");
    assert_eq!(json["stop_reason"], "decided");
    let auto = &json["layouts"]["auto"];
    assert_eq!((auto["stop"].as_str(), auto["pairs"].as_array().unwrap().len()), (Some("decided"), 8), "{auto}");
    // The first two pairs get 10 rounds; then each pair's rounds follow the variances.
    let rounds: Vec<u64> = auto["pairs"].as_array().unwrap().iter().map(|p| p["rounds"].as_u64().unwrap()).collect();
    assert_eq!(&rounds[..2], [10, 10], "{rounds:?}");
    assert!(rounds[2..].iter().all(|&r| (1..=60).contains(&r)), "{rounds:?}");
    // Only the first pair warms up.
    let warm: Vec<u64> =
        auto["pairs"].as_array().unwrap().iter().map(|p| p["warmup_rounds"].as_u64().unwrap()).collect();
    assert_eq!((warm[0], warm[1..].iter().sum::<u64>()), (1, 0), "{warm:?}");
    assert_eq!(json["layouts"]["contrasts"][0]["reading"], "real_change");
    assert_eq!(json["commands"].as_array().unwrap().len(), 16);

    // Again, with every program deleted: all 16 come back from the cache.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    let again = run();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!stderr.contains("perflab: building "), "nothing rebuilt: {stderr}");
    assert_eq!(stderr.matches("2 of 2 layouts from the layout cache").count(), 8, "{stderr}");
    let json = json_of(&again.stdout);
    assert_eq!(json["layouts"]["auto"]["cached"], 16);
    assert_eq!(json["comparisons"][0]["verdict"], "slower");
    let programs = std::fs::read_dir(dir.path()).unwrap().filter(|e| e.as_ref().unwrap().path().is_file()).count();
    assert_eq!(programs, 16, "every program restored");
    // --no-layout-cache builds afresh.
    let fresh = perflab()
        .current_dir(dir.path())
        .env("PERFLAB_LAYOUT_CACHE", cache.path())
        .args(["compare", "--layouts", "auto", "--no-layout-cache", "--seed", "5", "--max-layouts", "2", "--json", "-"])
        .args(tenfold_pair(dir.path()))
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&fresh.stderr);
    assert_eq!(stderr.matches("perflab: building ").count(), 4, "{stderr}");
    let json = json_of(&fresh.stdout);
    assert_eq!(
        (json["stop_reason"].as_str(), json["layouts"]["auto"]["stop"].as_str()),
        (Some("max_layouts"), Some("max_layouts"))
    );
    assert_eq!(json["comparisons"][0]["verdict"], "inconclusive", "2 pairs reach no look");
    let text = String::from_utf8_lossy(&fresh.stdout);
    assert!(!text.contains("ruled out: a change"), "no interval, nothing ruled out");
}

/// `--build` without `--layouts`: one layout of each version is compared, and with no
/// spread of the program stored, a pilot of two layouts per version says how much layout
/// moves it. A tenfold change is far beyond any layout effect: one short line.
#[test]
fn a_build_comparison_gets_a_layout_pilot() {
    let Some(()) = toolchain() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    // The seed in a directory, the program's name the same in every layout (`prog`).
    let build = format!(
        "mkdir -p {0}/p-{{layout}} && gcc -O2 -ffunction-sections -falign-functions=1 -falign-loops=1 -fuse-ld=lld \
         '-Wl,--shuffle-sections=*={{layout}}' -o {0}/p-{{layout}}/prog {1}",
        dir.path().display(),
        common::fixtures_dir().join("layout_loop.c").display()
    );
    let out = perflab()
        .current_dir(dir.path())
        .env("PERFLAB_DB", &db)
        .args(["compare", "--seed", "3", "-r", "6", "--no-progress", "--build", &build])
        .args(["-n", "small", "-n", "large"])
        .args([
            &format!("{}/p-{{layout}}/prog 1 4", dir.path().display()),
            &format!("{}/p-{{layout}}/prog 1 40", dir.path().display()),
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a pilot of 2 layouts of each version, 10 rounds"), "{stderr}");
    // Layout 1 of each version built for the comparison, then layout 2 for the pilot.
    assert_eq!(stderr.matches("perflab: building ").count(), 4, "{stderr}");
    assert!(stderr.contains("2 of 4 layouts from the layout cache"), "the compared layouts reused: {stderr}");
    let line = stdout.lines().find(|l| l.contains("layout pilot")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("layout pilot (2 layouts of each version, 10 rounds): layouts move `prog` by ±"), "{line}");
    assert!(line.contains("`large` vs `small`: ") && line.ends_with("far beyond that"), "{line}");
    // The comparison itself is of one layout each, not across layouts.
    assert!(!stdout.contains("across layouts"), "{stdout}");
}
