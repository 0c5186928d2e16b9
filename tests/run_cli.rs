//! `perflab run` end to end: suite errors, storing as it goes, baselines, kill -9 and
//! concurrent writers, on SQLite and PostgreSQL.
//!
//! Why real timed runs: storing as it goes and kill -9 need a real process tree; the one
//! asserted timed verdict compares tenfold work with its failure probability computed
//! (tests/common/noise.rs), and the instruction-count one is deterministic.

mod common;

use assert_cmd::Command;
use std::path::Path;
use std::time::{Duration, Instant};

fn perflab(dir: &Path, db: &str) -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.current_dir(dir).env("PERFLAB_DB", db);
    cmd
}

fn stored(dir: &Path, db: &str, args: &[&str]) -> Vec<perflab::store::StoredExperiment> {
    let out = perflab(dir, db).arg("export").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file: perflab::store::exchange::ExportFile = serde_json::from_slice(&out.stdout).unwrap();
    file.experiments
}

fn write_suite(dir: &Path, text: &str) {
    let spin = common::fixture("spin");
    std::fs::write(dir.join("perflab.toml"), text.replace("SPIN", spin.to_str().unwrap())).unwrap();
}

#[test]
fn suite_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.toml"),
        "[[benchmark]]\nname = \"a\"\ncommand = \"true\"\n\ncolour = \"red\"\n",
    )
    .unwrap();
    let out = perflab(dir.path(), "h.db").args(["run", "--suite", "bad.toml", "--label", "x"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.starts_with("perflab: error: bad.toml:5: unknown field `colour`"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!dir.path().join("h.db").exists(), "nothing is written for a bad suite");

    let out = perflab(dir.path(), "h.db").args(["run", "--label", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no perflab.toml here"));
}

#[test]
fn run_stores_every_benchmark_and_parameter() {
    common::pg::each_backend("run_params", |dir, db| {
        write_suite(dir, "[defaults]\nrounds = 3\nevents = [\"task-clock\"]\n[[benchmark]]\nname = \"spin\"\ncommand = \"SPIN {n}\"\nparams = { n = [1000, 20000] }\n[[benchmark]]\nname = \"other\"\ncommand = \"SPIN 10\"\n");
        let out = perflab(dir, db)
            .args(["run", "--label", "v1", "--filter", "^spin", "--json", "run.json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let exps = stored(dir, db, &["--label", "v1"]);
        let names: Vec<&str> = exps.iter().map(|e| e.benchmark.as_str()).collect();
        assert_eq!(names, ["spin[n=1000]", "spin[n=20000]"]);
        for e in &exps {
            assert!(e.complete);
            assert_eq!(e.label, "v1");
            assert_eq!(e.experiment.commands.len(), 1);
            assert_eq!(e.experiment.commands[0].runs.len(), 3);
            assert!(e.experiment.commands[0].summary.contains_key("wall_s"));
            // Counters from the suite's `events` are stored with every run (readable or
            // not: a container may forbid perf_event_open, which is recorded as a reason).
            assert!(e.experiment.commands[0].runs.iter().all(|r| r.counters.contains_key("task-clock")));
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 2);
        assert_eq!(json[1]["benchmark"], "spin[n=20000]");
        // With `--json -` stdout is only JSON.
        let out =
            perflab(dir, db).args(["run", "--label", "v2", "--filter", "=1000]", "--json", "-"]).output().unwrap();
        let from_stdout: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
        assert_eq!(from_stdout[0]["benchmark"], "spin[n=1000]");
        // The --json file imports back as the same results.
        perflab(dir, db).args(["import", "run.json", "--label", "again"]).assert().success();
        let again = stored(dir, db, &["--label", "again"]);
        let names: Vec<&str> = again.iter().map(|e| e.benchmark.as_str()).collect();
        assert_eq!(names, ["spin[n=1000]", "spin[n=20000]"]);
        assert_eq!(again[1].experiment.commands, exps[1].experiment.commands);
    });
}

#[test]
fn baseline_build_is_compared_and_the_verdict_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    write_suite(
        dir.path(),
        "[builds]\nsmall = { command = \"SPIN 10000000\" }\nbig = { command = \"SPIN 100000000\" }\n[[benchmark]]\nname = \"loop\"\ncommand = \"{build}\"\n",
    );
    let out = perflab(dir.path(), db)
        .args(["run", "--label", "big", "--baseline", "small", "--max-time", "60s"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let exps = stored(dir.path(), db, &["--label", "big"]);
    let e = &exps[0].experiment;
    let names: Vec<&str> = e.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["small", "big"]);
    // 10× the work: the metric it decided on (wall time, or uncontended time when the
    // machine was busy) is `slower` unless no look by 58 rounds cleared 1, and wall time,
    // decided on or not, says `faster` or `equivalent` only if a look's whole interval
    // fell below 1.01 (tests/common/noise.rs): P ≤ 3e-7 in all.
    let tails = [common::noise::tail("wall_s", 10_000_000), common::noise::tail("uncontended_s", 10_000_000)];
    let tails: Vec<_> = tails.iter().collect();
    let p = common::noise::p_sequential_misses(6, &tails, 2.0, 58)
        + common::noise::p_sequential_crosses(6, &tails, 1.99, 58);
    assert!(p < common::noise::P_MAX, "P(fail) ≤ {p:e}");
    let decided = e.comparisons.iter().find(|c| c.metric == e.primary_metric).expect("the decided comparison");
    assert_eq!((decided.baseline.as_str(), decided.candidate.as_str()), ("small", "big"));
    assert_eq!(decided.verdict, perflab::model::Verdict::Slower, "10× the work must be slower: {decided:?}");
    let wall = e.comparisons.iter().find(|c| c.metric == "wall_s").expect("a wall_s comparison");
    use perflab::model::Verdict;
    assert!(matches!(wall.verdict, Verdict::Slower | Verdict::Inconclusive), "{wall:?}");

    let out = perflab(dir.path(), db).args(["run", "--label", "big", "--baseline", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--baseline `nope` is not a build"));
}

#[test]
fn instruction_mode_suites_compare_instruction_counts() {
    if !common::have_valgrind() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    write_suite(
        dir.path(),
        "[defaults]\nmode = \"instructions\"\n[builds]\nsmall = \"200000\"\nbig = \"202000\"\n[[benchmark]]\nname = \"loop\"\ncommand = \"SPIN {build}\"\n",
    );
    let out = perflab(dir.path(), db).args(["run", "--label", "big", "--baseline", "small"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("slower"), "{stdout}");
    let e = &stored(dir.path(), db, &["--label", "big"])[0].experiment;
    assert_eq!(e.rounds, 1, "deterministic counts need one round");
    let primary = &e.comparisons[0];
    assert_eq!(primary.metric, "instructions");
    assert_eq!(primary.verdict, perflab::model::Verdict::Slower, "{primary:?}");
    // 1 % more loop iterations: the count ratio is a little under 1.01 (start-up is fixed).
    assert!(primary.ratio > 1.005 && primary.ratio < 1.0101, "{primary:?}");
}

/// Runs stored in `db` so far (any label), read with the store API like a second process would.
fn runs_stored(db: &str) -> usize {
    match perflab::store::Store::open(Some(db)).and_then(|mut s| s.experiments(&Default::default())) {
        Ok(exps) => exps.iter().flat_map(|e| &e.experiment.commands).map(|c| c.runs.len()).sum(),
        Err(_) => 0,
    }
}

#[test]
fn kill_9_keeps_every_completed_run() {
    common::pg::each_backend("kill9", |dir, db| {
        write_suite(dir, "[[benchmark]]\nname = \"slow\"\ncommand = \"SPIN 3000000\"\nrounds = 100000\nwarmup = 0\n");
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
            .args(["run", "--label", "k"])
            .current_dir(dir)
            .env("PERFLAB_DB", db)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let mut seen = 0;
        while seen < 5 {
            assert!(start.elapsed() < Duration::from_secs(120), "no runs stored within 2 minutes");
            std::thread::sleep(Duration::from_millis(100));
            seen = runs_stored(db);
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let exps = perflab::store::Store::open(Some(db)).unwrap().experiments(&Default::default()).unwrap();
        assert_eq!(exps.len(), 1);
        assert!(!exps[0].complete);
        assert_eq!(exps[0].experiment.stop_reason, perflab::model::StopReason::Interrupted);
        let runs = &exps[0].experiment.commands[0].runs;
        assert!(runs.len() >= seen, "{} runs after the kill, {seen} seen before", runs.len());
        let rounds: Vec<u32> = runs.iter().map(|r| r.round).collect();
        assert_eq!(rounds, (0..runs.len() as u32).collect::<Vec<_>>(), "no gap: every completed run is there");
        if !db.starts_with("postgres") {
            let conn = rusqlite::Connection::open(db).unwrap();
            let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
            assert_eq!(check, "ok");
        }
    });
}

#[test]
fn two_concurrent_runs_lose_nothing() {
    common::pg::each_backend("concurrent_run", |dir, db| {
        write_suite(dir, "[defaults]\nrounds = 15\nwarmup = 0\n[[benchmark]]\nname = \"a\"\ncommand = \"SPIN 1000\"\n[[benchmark]]\nname = \"b\"\ncommand = \"SPIN 2000\"\n");
        // The schema is created by whichever process comes first.
        let children: Vec<_> = ["one", "two"]
            .iter()
            .map(|label| {
                std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
                    .args(["run", "--label", label])
                    .current_dir(dir)
                    .env("PERFLAB_DB", db)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        let exps = stored(dir, db, &[]);
        assert_eq!(exps.len(), 4);
        for e in &exps {
            assert!(e.complete);
            assert_eq!(e.experiment.commands[0].runs.len(), 15, "{} {}", e.label, e.benchmark);
        }
    });
}

#[test]
fn compare_save_and_importing_compare_json_store_the_same_experiment() {
    common::pg::each_backend("compare_save", |dir, db| {
        let spin = common::fixture("spin");
        let spin = spin.to_str().unwrap();
        let out = perflab(dir, db)
            .args(["compare", &format!("{spin} 1000"), &format!("{spin} 3000"), "-n", "a", "-n", "b", "--rounds", "4"])
            .args(["--save", "--label", "pr-1", "--json", "c.json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("saved `a vs b` as label `pr-1`"));
        perflab(dir, db).args(["import", "c.json", "--label", "pr-1-imported"]).assert().success();
        let saved = stored(dir, db, &["--label", "pr-1"]);
        let imported = stored(dir, db, &["--label", "pr-1-imported"]);
        assert_eq!(saved.len(), 1);
        assert!(saved[0].complete);
        assert_eq!(saved[0].source, "compare");
        assert_eq!(saved[0].benchmark, "a vs b");
        let e = &saved[0].experiment;
        assert_eq!(e.commands.iter().map(|c| c.runs.len()).collect::<Vec<_>>(), [4, 4]);
        assert!(!e.comparisons.is_empty());
        // The saved record and the --json file describe the same measurements.
        let from_file = &imported[0].experiment;
        assert_eq!(e.commands, from_file.commands);
        assert_eq!(e.rounds, from_file.rounds);
        assert_eq!(e.settings, from_file.settings);
    });
}

/// A parameter value is data: `$(touch PWNED)`, backticks, `;` and `|` in a value are
/// passed as one argument to a template without shell syntax, and quoted for the shell
/// in a template with shell syntax and in a per-run hook — nothing they name runs.
#[test]
fn parameter_values_never_run_as_shell_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let values = ["$(touch PWNED1)", "`touch PWNED2`", "a; touch PWNED3", "b | touch PWNED4", "'; touch PWNED5; '"];
    let list = values.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", ");
    std::fs::write(
        d.join("perflab.toml"),
        format!(
            "[defaults]\nrounds = 1\nwarmup = 0\nprepare = \"echo {{x}} > /dev/null\"\n\
             [[benchmark]]\nname = \"plain\"\ncommand = \"echo {{x}}\"\nparams = {{ x = [{list}] }}\n\
             [[benchmark]]\nname = \"shell\"\ncommand = \"echo \\\"{{x}}\\\" '{{x}}' {{x}} | cat > /dev/null\"\nparams = {{ x = [{list}] }}\n"
        ),
    )
    .unwrap();
    let out = perflab(d, "h.db").args(["run", "--label", "v1", "--json", "run.json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let made: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("PWNED"))
        .collect();
    assert!(made.is_empty(), "parameter values ran as code: {made:?}");
    let exps = stored(d, "h.db", &["--label", "v1"]);
    assert_eq!(exps.len(), 2 * values.len());
    for (e, value) in exps.iter().take(values.len()).zip(values) {
        assert_eq!(e.experiment.commands[0].argv, ["echo", value], "{}", e.benchmark);
    }
}

/// Two builds of one program, tenfold work apart: `loop` measured as usual, `short` at 2
/// rounds (too few for any interval).
const TWO_BENCHMARKS: &str =
    "[builds]\nsmall = { command = \"SPIN 10000000\" }\nbig = { command = \"SPIN 100000000\" }\n\
     [[benchmark]]\nname = \"loop\"\ncommand = \"{build}\"\n\
     [[benchmark]]\nname = \"short\"\ncommand = \"{build}\"\nrounds = 2\n";

/// Issue #41: the run's summary, its Markdown comment and the gate's exit codes, on a
/// real two-benchmark suite. `short` runs 2 rounds, too few for any interval: undecided
/// whatever the machine does, so `--gate` on it alone exits 4. `loop` is tenfold work,
/// slower unless the noise bound of the test above fails (P ≤ 3e-7 at 95 %; the family
/// shares α between the two, which widens the looks a little).
#[test]
fn the_summary_the_markdown_comment_and_the_gate_agree() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    write_suite(dir.path(), TWO_BENCHMARKS);
    let comment = dir.path().join("comment.md");
    let out = perflab(dir.path(), db)
        .args(["run", "--label", "big", "--baseline", "small", "--max-time", "60s", "--gate", "--markdown"])
        .arg(&comment)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stderr.contains("2 compared benchmarks share 95 % confidence, so each interval is at 97.5 %"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "a regression beats an undecided benchmark\n{stdout}\n{stderr}");
    assert!(stderr.contains("gate: slower beyond the threshold: loop"), "{stderr}");
    let summary = &stdout[stdout.find("summary: ").expect("a summary")..];
    assert!(summary.starts_with("summary: `big` against `small`: 1 slower, 1 undecided;"), "{summary}");
    assert!(summary.find("changed:") < summary.find("undecided:"), "{summary}");
    let markdown = std::fs::read_to_string(&comment).unwrap();
    assert!(markdown.starts_with("### perflab: `big` against `small`: 1 slower, 1 undecided"), "{markdown}");
    // The same digits: every ratio and bound the summary printed is in the comment, and
    // the other way round.
    let ratios = |text: &str| -> Vec<String> {
        let mut found: Vec<String> = text
            .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == ',' || c == '|')
            .filter(|word| word.ends_with('×'))
            .map(String::from)
            .collect();
        found.sort();
        found
    };
    assert!(!ratios(summary).is_empty(), "{summary}");
    assert_eq!(ratios(summary), ratios(&markdown), "terminal:\n{summary}\nmarkdown:\n{markdown}");

    let out = perflab(dir.path(), db)
        .args(["run", "--label", "big", "--baseline", "small", "--filter", "short", "--gate"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "undecided, no regression: {stderr}");
    assert!(stderr.contains("gate: no regression found, but undecided: short"), "{stderr}");
    // Without --gate the run itself succeeded: 0, as before.
    let out = perflab(dir.path(), db)
        .args(["run", "--label", "big", "--baseline", "small", "--filter", "short"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Issue #41: one budget for the whole run. The two benchmarks run interleaved against
/// one deadline: the plan is said after the pilot, `loop` (tenfold work) is decided
/// `slower` long before it (the noise bound above), `short` ends after its 2 fixed
/// rounds, and the summary says how the budget was used; both are stored. How long the
/// run took is not asserted (the hour's load): the simulated tests in
/// crates/suite/src/budget.rs check the deadline. Without a baseline a budget has
/// nothing to share: exit 2.
#[test]
fn one_budget_interleaves_the_benchmarks_and_says_how_it_was_used() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    write_suite(dir.path(), TWO_BENCHMARKS);
    let out = perflab(dir.path(), db)
        .args(["run", "--label", "big", "--baseline", "small", "--budget", "2m", "--gate"])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stderr.contains("note: budget 2 min for the whole run: the 2 benchmarks run interleaved"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "loop is slower\n{stdout}\n{stderr}");
    let summary = &stdout[stdout.find("summary: ").expect("a summary")..];
    assert!(summary.starts_with("summary: `big` against `small`: 1 slower, 1 undecided;"), "{summary}");
    assert!(summary.contains("budget 2 min: every benchmark ended before the deadline; the run took "), "{summary}");
    let exps = stored(dir.path(), db, &["--label", "big"]);
    let mut names: Vec<&str> = exps.iter().map(|e| e.benchmark.as_str()).collect();
    names.sort();
    assert_eq!(names, ["loop", "short"]);
    let short = exps.iter().find(|e| e.benchmark == "short").unwrap();
    assert_eq!(short.experiment.rounds, 2, "a suite file's rounds stand under a budget");

    let out = perflab(dir.path(), db).args(["run", "--label", "big", "--budget", "2m"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`run --budget` shares a deadline among compared benchmarks: give --baseline"), "{stderr}");
}
