//! Soak and fault test of a fleet (issue #23): agents posing as two machines work through
//! a queue on a PostgreSQL of the test's own (a private cluster, so that restarting it
//! disturbs no other test) behind a proxy that can play a network partition, while the
//! server crashes and restarts, the network partitions, the server is down for seconds,
//! and one agent is killed with SIGKILL in the middle of a benchmark. Checked: every job
//! finishes exactly once per machine, every benchmark has exactly one complete result per
//! label and machine with exactly its rounds' runs (nothing lost, nothing pooled twice),
//! and the killed and the interrupted attempts' partial results are superseded, not
//! counted. Without PostgreSQL's server binaries the test is skipped (fails under CI=true).

mod common;

use common::cluster::Cluster;
use common::proxy::{Proxy, Target};
use perflab::store::{Query, Store};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 5;
const LABELS: [&str; 3] = ["l1", "l2", "l3"];
const BENCHMARKS: [&str; 3] = ["b1", "b2", "b3"];

/// b2's fourth run of each label waits while `hold-<machine>` exists (after touching
/// `blocked-<machine>-<label>`), so the test can catch an agent in the middle of it.
fn write_suite(dir: &Path) {
    let spin = common::fixture("spin");
    let script = format!(
        r#"name=$1; n=$2; key=$PERFLAB_MACHINE_ID-$PERFLAB_LABEL
count=$(cat "count-$name-$key" 2>/dev/null || echo 0); echo $((count + 1)) > "count-$name-$key"
if [ "$name" = b2 ] && [ "$count" -eq 3 ] && [ -e "hold-$PERFLAB_MACHINE_ID" ]; then
    touch "blocked-$key"
    while [ -e "hold-$PERFLAB_MACHINE_ID" ]; do sleep 0.05; done
fi
exec {} "$n"
"#,
        spin.display()
    );
    std::fs::write(dir.join("bench.sh"), script).unwrap();
    let mut suite = format!("[defaults]\nrounds = {ROUNDS}\nwarmup = 0\n");
    for (name, n) in BENCHMARKS.iter().zip([30_000_000, 20_000_000, 30_000_000]) {
        suite.push_str(&format!("[[benchmark]]\nname = \"{name}\"\ncommand = \"sh bench.sh {name} {n}\"\n"));
    }
    std::fs::write(dir.join("perflab.toml"), suite).unwrap();
}

fn perflab(dir: &Path, db: &str) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("perflab"));
    c.current_dir(dir)
        .env("PERFLAB_DB", db)
        .env("NO_COLOR", "1")
        .env("PERFLAB_PG_CONNECT_TIMEOUT", "2s")
        .env("PERFLAB_PG_STATEMENT_TIMEOUT", "2s")
        .env_remove(perflab::machine::MACHINE_ID_ENV);
    c
}

struct Agent {
    machine: &'static str,
    child: Child,
    log: std::path::PathBuf,
}

fn agent(dir: &Path, db: &str, machine: &'static str, n: usize) -> Agent {
    let log = dir.join(format!("agent-{machine}-{n}.log"));
    let child = perflab(dir, db)
        .args(["agent", "--allow-root", "--machine-id", machine, "--lease", "4s", "--poll", "0.2s"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    Agent { machine, child, log }
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// (state, attempt, agent) by (job, machine id).
type Claims = BTreeMap<(i64, String), (String, i64, String)>;

/// Every claim's state; None while the database is unreachable.
fn claim_states(db: &str) -> Option<Claims> {
    let mut store = Store::open(Some(db)).ok()?;
    let claims = store.claims().ok()?;
    Some(
        claims
            .into_iter()
            .map(|c| ((c.job, c.machine.id.clone().unwrap_or_default()), (c.state, c.attempt, c.agent)))
            .collect(),
    )
}

#[test]
fn a_fleet_outlives_restarts_partitions_and_a_killed_agent() {
    let Some(cluster) = Cluster::start_empty() else { return };
    let proxy = Proxy::start(Target::Unix(cluster.socket()));
    let db = format!("postgres://postgres@127.0.0.1:{}/postgres", proxy.port);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_suite(dir);
    for label in LABELS {
        let out = perflab(dir, &db).args(["queue", "-l", label]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let start = Instant::now();
    std::fs::write(dir.join("hold-alpha"), "").unwrap();
    std::fs::write(dir.join("hold-beta"), "").unwrap();
    let mut agents = vec![agent(dir, &db, "alpha", 1), agent(dir, &db, "alpha", 2), agent(dir, &db, "beta", 1)];
    let limit = Duration::from_secs(120);

    // An alpha agent stops in b2's fourth run (three runs committed): kill it there.
    let blocked = |machine: &str| {
        LABELS.iter().find(|l| dir.join(format!("blocked-{machine}-{l}")).exists()).map(|l| l.to_string())
    };
    wait_for("an alpha agent in b2", limit, || blocked("alpha").is_some());
    let label = blocked("alpha").unwrap();
    let job = LABELS.iter().position(|l| *l == label).unwrap() as i64 + 1;
    let states = claim_states(&db).expect("the database is up");
    let holder = &states[&(job, "alpha".to_string())].2;
    let pid: u32 = holder.rsplit(':').next().unwrap().parse().unwrap();
    let victim = agents.iter().position(|a| a.child.id() == pid).expect("the holder is one of ours");
    let mut killed = agents.remove(victim);
    killed.child.kill().unwrap(); // SIGKILL: its claim stays until the lease runs out
    killed.child.wait().unwrap();
    std::fs::remove_file(dir.join("hold-alpha")).unwrap();
    // A service manager starts a new agent in its place.
    agents.push(agent(dir, &db, "alpha", 3));

    // The server crashes and restarts while beta is in the middle of b2.
    wait_for("beta in b2", limit, || blocked("beta").is_some());
    let crash = Instant::now();
    cluster.restart_now("immediate");
    eprintln!("server restarted (immediate) in {:.1} s", crash.elapsed().as_secs_f64());
    std::fs::remove_file(dir.join("hold-beta")).unwrap();

    // A partition: nothing passes for 6 s (longer than a statement's time-out).
    std::thread::sleep(Duration::from_secs(1));
    proxy.freeze();
    std::thread::sleep(Duration::from_secs(6));
    proxy.thaw();
    // The server is down for 3 s.
    std::thread::sleep(Duration::from_secs(1));
    cluster.outage(Duration::from_secs(3));

    // Everything finishes: every job on both machines.
    wait_for("every job done on both machines", limit, || {
        claim_states(&db).is_some_and(|s| s.len() == LABELS.len() * 2 && s.values().all(|c| c.0 == "done"))
    });
    let soaked = start.elapsed();
    for a in &agents {
        // SAFETY: signalling a child this test started.
        unsafe { libc::kill(a.child.id() as i32, libc::SIGINT) };
    }
    let mut recoveries = Vec::new();
    for a in agents {
        let out = a.child.wait_with_output().unwrap();
        let log = std::fs::read_to_string(&a.log).unwrap();
        assert_eq!(out.status.code(), Some(130), "agent {} of {} ended: {log}", a.log.display(), a.machine);
        for line in log.lines().filter(|l| l.contains("reconnected to the database after")) {
            recoveries.push(line.split("after ").nth(1).unwrap_or("").to_string());
        }
        assert!(!log.contains("panicked"), "{log}");
        if std::env::var_os("SOAK_LOG").is_some() {
            eprintln!("--- {}\n{log}", a.log.display());
        }
    }

    // Exactly one complete result per label, machine and benchmark, with ROUNDS runs.
    let mut store = Store::open(Some(&db)).unwrap();
    let stored = store.experiments(&Query::default()).unwrap();
    let mut seen: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for e in &stored {
        assert!(e.complete, "{} {} incomplete and not superseded", e.label, e.benchmark);
        let runs = e.experiment.commands.iter().map(|c| c.runs.len()).sum::<usize>();
        assert_eq!(runs, ROUNDS, "{} {} on {:?}", e.label, e.benchmark, e.experiment.machine.id);
        *seen.entry((e.label.clone(), e.experiment.machine.id.clone().unwrap(), e.benchmark.clone())).or_default() += 1;
    }
    assert_eq!(seen.len(), LABELS.len() * 2 * BENCHMARKS.len(), "{seen:?}");
    assert!(seen.values().all(|&n| n == 1), "duplicated results: {seen:?}");
    let claims = claim_states(&db).unwrap();
    assert!(claims.values().all(|c| c.0 == "done"), "{claims:?}");
    let taken_over = claims.values().filter(|c| c.1 > 1).count();
    assert!(taken_over >= 1, "the killed agent's job was taken over: {claims:?}");

    // The partial attempts (the killed agent's and the one the crash interrupted) are in
    // the database but superseded: history counts ROUNDS runs for every label.
    let out = perflab(dir, &db).args(["history", "b2", "--json", "-"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let history: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for machine in history["machines"].as_array().unwrap() {
        for point in machine["benchmarks"][0]["points"].as_array().unwrap() {
            assert_eq!(point["n"], ROUNDS, "{point}");
        }
    }
    let superseded = Command::new("psql")
        .args(cluster.client_args())
        .args(["-qAtc", "SELECT COUNT(*) FROM experiments WHERE superseded_by IS NOT NULL"])
        .output()
        .unwrap();
    let superseded: usize = String::from_utf8_lossy(&superseded.stdout).trim().parse().unwrap();
    assert!(superseded >= 2, "the killed and the interrupted attempts' b2 are superseded: {superseded}");
    let export = perflab(dir, &db).args(["export"]).output().unwrap();
    let export: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    assert_eq!(export["experiments"].as_array().unwrap().len(), LABELS.len() * 2 * BENCHMARKS.len());
    eprintln!(
        "soak: {} jobs × 2 machines, 3 agents (one killed, one started in its place), a crash restart, a 6 s partition, a 3 s outage: done in {:.1} s; {taken_over} claim(s) taken over, {superseded} partial attempt(s) superseded; reconnections after: {}",
        LABELS.len(),
        soaked.as_secs_f64(),
        recoveries.join(", ")
    );
}
