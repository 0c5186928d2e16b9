//! `perflab queue` and `perflab agent` on a live PostgreSQL (PERFLAB_TEST_PG, from
//! scripts/ci/postgres.sh): agents on this host pose as machines with `--machine-id`,
//! one is killed with SIGKILL in the middle of a job, and the builds × machines view of
//! `perflab history` reads the results. Without PERFLAB_TEST_PG the tests are skipped
//! (and fail under CI=true).
//!
//! Why real timed runs: agents are processes that claim, run and store jobs. What the
//! builds × machines view is asserted on is the work each run prints (`work=N`, read
//! with `output_metric`): 1.5× exactly, whatever the load — the matrix, its sessions and
//! its verdicts are the same code for any metric, and a timed ratio of separately
//! measured labels beside another agent is the hour's noise.

mod common;

use perflab::store::fleet::ClaimStatus;
use perflab::store::{Query, Store};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a claim stays valid without a heartbeat, for these tests: long enough for a
/// probe agent to start while it lasts on a loaded machine (under a second beside two
/// burners; ten times that is allowed), short enough to wait out.
const LEASE: &str = "10s";

fn perflab(dir: &Path, db: &str) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("perflab"));
    c.current_dir(dir).env("PERFLAB_DB", db).env_remove(perflab::machine::MACHINE_ID_ENV);
    c
}

fn agent(dir: &Path, db: &str, id: &str) -> Child {
    perflab(dir, db)
        .args(["agent", "--allow-root", "--machine-id", id, "--lease", LEASE, "--poll", "0.2s", "--exit-when-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait for an agent and return its stderr; it must exit 0 within two minutes.
fn finish(mut child: Child, what: &str) -> String {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("{what} did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what} failed: {stderr}");
    stderr
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(120), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn claims(db: &str) -> Vec<ClaimStatus> {
    Store::open(Some(db)).unwrap().claims().unwrap()
}

fn claim<'a>(claims: &'a [ClaimStatus], job: i64, id: &str) -> &'a ClaimStatus {
    claims
        .iter()
        .find(|c| c.job == job && c.machine.id.as_deref() == Some(id))
        .unwrap_or_else(|| panic!("no claim of job {job} by {id}: {claims:?}"))
}

/// Two builds made by their `prepare` (shell wrappers around the spin fixture that print
/// the work they do, `work=N`; `new` does 1.5 times the work); three benchmarks, the
/// second of which waits in its setup while a file `hold-<machine id>` exists, so a test
/// can catch an agent mid-job.
fn write_suite(dir: &Path) {
    let spin = common::fixture("spin");
    let prepare = |name: &str, factor: &str| {
        format!(
            "mkdir -p build-{name} && printf '#!/bin/sh\\necho work=$(( $1 * {factor} ))\\nexec {} $(( $1 * {factor} ))\\n' > build-{name}/spin.$$ \
             && chmod +x build-{name}/spin.$$ && mv build-{name}/spin.$$ build-{name}/spin",
            spin.display()
        )
    };
    let suite = format!(
        r#"[defaults]
rounds = 5
warmup = 0
output_metric = "work=(?<work>[0-9]+)"
[builds]
old = {{ path = "build-old/spin", prepare = "{}" }}
new = {{ path = "build-new/spin", prepare = "{}" }}
[[benchmark]]
name = "b1"
command = "{{build}} 20000000"
[[benchmark]]
name = "b2"
command = "{{build}} 16000000"
setup = "touch started-$PERFLAB_MACHINE_ID-$PERFLAB_LABEL; while [ -e hold-$PERFLAB_MACHINE_ID ]; do sleep 0.05; done"
[[benchmark]]
name = "b3"
command = "{{build}} 12000000"
"#,
        prepare("old", "2 / 2"),
        prepare("new", "3 / 2")
    );
    std::fs::write(dir.join("perflab.toml"), suite).unwrap();
}

fn queue(dir: &Path, db: &str, label: &str) {
    let out = perflab(dir, db).args(["queue", "-l", label]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn two_agents_as_two_machines_one_killed_mid_job() {
    let Some(db) = common::pg::scratch_db("fleet_two_agents") else { return };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_suite(dir);
    queue(dir, &db, "old");
    let job = 1;

    // alpha stops in b2's setup (b1 done); beta runs the whole job.
    std::fs::write(dir.join("hold-alpha"), "").unwrap();
    let mut alpha = agent(dir, &db, "alpha");
    let beta = agent(dir, &db, "beta");
    wait_for("alpha to reach b2", || dir.join("started-alpha-old").exists());
    let lease_at_kill = claim(&claims(&db), job, "alpha").lease_until;
    alpha.kill().unwrap(); // SIGKILL: no chance to give the claim back
    alpha.wait().unwrap();

    // Another agent of the same machine finds nothing to do while the lease lasts.
    let probe = finish(agent(dir, &db, "alpha"), "the probe agent");
    assert!(probe.contains("no job for this machine"), "{probe}");
    assert_eq!(claim(&claims(&db), job, "alpha").attempt, 1);
    finish(beta, "beta");

    std::fs::remove_file(dir.join("hold-alpha")).unwrap();
    wait_for("alpha's lease to expire", || claim(&claims(&db), job, "alpha").state == "expired");
    queue(dir, &db, "new");
    let (alpha, beta) = (agent(dir, &db, "alpha"), agent(dir, &db, "beta"));
    let resumed = finish(alpha, "the second alpha agent");
    assert!(resumed.contains("resuming: 1 benchmark(s) were completed by an earlier attempt"), "{resumed}");
    finish(beta, "the second beta agent");

    let all = claims(&db);
    let a = claim(&all, job, "alpha");
    assert_eq!((a.state.as_str(), a.attempt), ("done", 2), "{all:?}");
    assert!(a.claimed_at >= lease_at_kill, "taken over at {} before the lease ended at {lease_at_kill}", a.claimed_at);
    for (job, id) in [(1, "beta"), (2, "alpha"), (2, "beta")] {
        let c = claim(&all, job, id);
        assert_eq!((c.state.as_str(), c.attempt), ("done", 1), "{all:?}");
    }

    // Exactly one complete result per benchmark, label and machine: b1 on alpha was not
    // measured again, and the killed attempt left nothing half-done (it waited in a setup).
    let stored = Store::open(Some(&db)).unwrap().experiments(&Query::default()).unwrap();
    let mut seen: Vec<(String, String, String)> = stored
        .iter()
        .map(|e| {
            assert!(e.complete, "{} {} incomplete", e.label, e.benchmark);
            (e.label.clone(), e.experiment.machine.id.clone().unwrap(), e.benchmark.clone())
        })
        .collect();
    seen.sort();
    let mut expected = Vec::new();
    for label in ["new", "old"] {
        for id in ["alpha", "beta"] {
            for b in ["b1", "b2", "b3"] {
                expected.push((label.to_string(), id.to_string(), b.to_string()));
            }
        }
    }
    assert_eq!(seen, expected);
    assert!(stored.iter().all(|e| e.source.starts_with("fleet:")));
    let fingerprints: std::collections::BTreeSet<&str> =
        stored.iter().map(|e| e.machine_fingerprint.as_str()).collect();
    assert_eq!(fingerprints.len(), 2, "two machines, two fingerprints");

    // The builds × machines view: new ÷ old per machine, side by side — of the work the
    // runs printed: exactly 1.5 on both machines, `slower` (less work is better).
    let out = perflab(dir, &db)
        .args(["history", "--metric", "work", "--reference", "old", "-l", "new", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &h["matrix"];
    let names: Vec<&str> = m["machines"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alpha", "beta"]);
    for row in m["rows"].as_array().unwrap() {
        for cell in row["cells"].as_array().unwrap() {
            assert!((cell["ratio"].as_f64().unwrap() - 1.5).abs() < 1e-9, "{row}");
            let (lo, hi) = (cell["ci_low"].as_f64().unwrap(), cell["ci_high"].as_f64().unwrap());
            assert!(lo > 1.0 && lo <= 1.5 && 1.5 <= hi, "{row}");
            assert_eq!(cell["verdict"], "slower", "{row}");
        }
    }
    // Every run of every label and machine is in it: 5 rounds × 3 benchmarks × 2 × 2.
    let runs: usize = stored.iter().map(|e| e.experiment.commands.iter().map(|c| c.runs.len()).sum::<usize>()).sum();
    assert_eq!(runs, 5 * 3 * 2 * 2);
    let out = perflab(dir, &db).args(["history", "--reference", "old", "-l", "new"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // The metric the sessions decided on (uncontended_s when they ran busy, as here).
    assert!(text.contains("new ÷ old (") && text.contains(") on each machine") && text.contains("alpha on "), "{text}");

    let out = perflab(dir, &db).args(["queue", "--list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("job 1: label `old`") && text.contains("done     attempt 2"), "{text}");
    common::pg::drop_scratch(&db);
}

#[test]
fn two_agents_of_one_machine_split_the_work_and_never_run_a_job_twice() {
    let Some(db) = common::pg::scratch_db("fleet_one_machine") else { return };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_suite(dir);
    for label in ["old", "new"] {
        queue(dir, &db, label);
    }
    let agents = [agent(dir, &db, "gamma"), agent(dir, &db, "gamma")];
    for (i, a) in agents.into_iter().enumerate() {
        finish(a, &format!("agent {i}"));
    }
    let all = claims(&db);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all.iter().all(|c| c.state == "done" && c.attempt == 1), "{all:?}");
    let stored = Store::open(Some(&db)).unwrap().experiments(&Query::default()).unwrap();
    assert_eq!(stored.len(), 6, "two labels × three benchmarks, each once");

    // Bad requests are one-line usage errors, and nothing is queued.
    for (args, needle) in [
        (&["queue", "-l", "nope", "--baseline", "old"][..], "--baseline needs a build"),
        (&["queue", "-l", "old", "--machine", "["], "is not a glob pattern"),
        (&["queue", "-l", "old", "--filter", "("], "is not a regular expression"),
        (&["queue", "--cancel", "99"], "no job 99"),
    ] {
        let out = perflab(dir, &db).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle) && stderr.trim_end().lines().count() == 1, "{args:?}: {stderr}");
    }
    assert_eq!(Store::open(Some(&db)).unwrap().jobs().unwrap().len(), 2);
    common::pg::drop_scratch(&db);
}

/// An agent runs every queued job's commands as its user: as root it refuses to start
/// without `--allow-root` (one line, exit 2, before touching any database).
#[test]
fn an_agent_refuses_to_run_as_root_unless_told() {
    if !common::is_root() {
        common::skip::skip("not root: the refusal is for root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = perflab(dir.path(), "q.db").args(["agent", "--exit-when-idle"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("refusing to run an agent as root") && stderr.contains("--allow-root"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!dir.path().join("q.db").exists(), "no database opened");
}

/// The PostgreSQL URL of `PERFLAB_TEST_PG` split into (URL without password, password).
fn without_password(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let (auth, host) = rest.split_once('@')?;
    let (user, password) = auth.split_once(':')?;
    Some((format!("{scheme}://{user}@{host}"), password.to_string()))
}

/// A URL without a password, to a server that asks for one, is a configuration error:
/// the agent exits 2 at once (it used to retry forever). libpq's variables fill in what
/// the URL leaves out: `PGPASSWORD`, a `PGPASSFILE`, `PGHOST`/`PGPORT`/`PGUSER`/`PGDATABASE`.
#[test]
fn a_url_without_password_exits_2_and_libpq_variables_are_honoured() {
    let Some(db) = common::pg::scratch_db("fleet_no_password") else { return };
    let Some((bare, password)) = without_password(&db) else {
        common::skip::skip("PERFLAB_TEST_PG has no password to leave out");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A store to read (reading commands never create one).
    let hyperfine = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hyperfine-1.15.json");
    let made = perflab(d, &db).arg("import").arg(&hyperfine).args(["--label", "v1"]).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let clean = |c: &mut Command| {
        for v in ["PGPASSWORD", "PGPASSFILE", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE"] {
            c.env_remove(v);
        }
        c.env("HOME", d);
    };
    let mut agent = perflab(d, &bare);
    clean(&mut agent);
    let start = Instant::now();
    let out = agent
        .args(["agent", "--allow-root", "--exit-when-idle"])
        .env("PERFLAB_PG_CONNECT_TIMEOUT", "20s")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        common::skip::skip("the server lets this role in without a password (trust authentication)");
        common::pg::drop_scratch(&db);
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the server asks for a password and none was given"), "{stderr}");
    assert!(!stderr.contains("reconnecting"), "not waited for: {stderr}");
    assert!(start.elapsed() < Duration::from_secs(15), "{:?}", start.elapsed());

    // PGPASSWORD.
    let mut with_env = perflab(d, &bare);
    clean(&mut with_env);
    let out = with_env.args(["queue", "--list"]).env("PGPASSWORD", &password).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A password file (0600), as libpq reads it.
    let parsed: postgres::Config = bare.parse().unwrap();
    let host = match &parsed.get_hosts()[0] {
        postgres::config::Host::Tcp(h) => h.clone(),
        _ => "localhost".into(),
    };
    let port = parsed.get_ports().first().copied().unwrap_or(5432);
    let (user, dbname) = (parsed.get_user().unwrap(), parsed.get_dbname().unwrap());
    let passfile = d.join("pgpass");
    std::fs::write(&passfile, format!("# comment\nother:*:*:*:wrong\n{host}:{port}:{dbname}:{user}:{password}\n"))
        .unwrap();
    std::fs::set_permissions(&passfile, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut with_file = perflab(d, &bare);
    clean(&mut with_file);
    let out = with_file.args(["queue", "--list"]).env("PGPASSFILE", &passfile).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Everything from the environment: `postgres://` alone.
    let mut from_env = perflab(d, "postgres://");
    clean(&mut from_env);
    let out = from_env
        .args(["queue", "--list"])
        .env("PGHOST", &host)
        .env("PGPORT", port.to_string())
        .env("PGUSER", user)
        .env("PGDATABASE", dbname)
        .env("PGPASSWORD", &password)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    common::pg::drop_scratch(&db);
}
