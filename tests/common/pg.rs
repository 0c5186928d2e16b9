//! A scratch PostgreSQL database per test, from `PERFLAB_TEST_PG`.
//!
//! Without `PERFLAB_TEST_PG` the PostgreSQL part of a test is skipped and counted as
//! such (tests/common/skip.rs), except when `CI=true`: then a missing or unreachable
//! server fails the test.

const UNSET: &str = "PERFLAB_TEST_PG is not set (scripts/test sets it: `eval \"$(scripts/ci/postgres.sh)\"`)";

/// The URL of a freshly created, empty database named after `test`, or `None` (the
/// whole test skipped, said and counted) when no server is configured outside CI.
pub fn scratch_db(test: &str) -> Option<String> {
    let url = server_url();
    if url.is_none() {
        super::skip(UNSET);
    }
    Some(scratch_db_at(url?, test))
}

fn server_url() -> Option<String> {
    std::env::var("PERFLAB_TEST_PG").ok().filter(|url| !url.is_empty())
}

fn scratch_db_at(base: String, test: &str) -> String {
    let mut client = postgres::Client::connect(&base, postgres::NoTls)
        .unwrap_or_else(|e| panic!("PERFLAB_TEST_PG={base} is unreachable: {e:?}"));
    let name = format!("perflab_t_{}_{}", test.replace(|c: char| !c.is_ascii_alphanumeric(), "_"), std::process::id());
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).expect("drop scratch database");
    client.batch_execute(&format!("CREATE DATABASE {name}")).expect("create scratch database (role needs CREATEDB)");
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h, format!("?{q}")),
        None => (base.as_str(), String::new()),
    };
    let server = head.rsplit_once('/').map_or(head, |(server, _db)| server);
    format!("{server}/{name}{query}")
}

/// Drop a database made by [`scratch_db`] once a test passed (a failed test keeps its
/// database for inspection).
pub fn drop_scratch(url: &str) {
    let base = std::env::var("PERFLAB_TEST_PG").expect("scratch databases come from PERFLAB_TEST_PG");
    let name = url.split('?').next().and_then(|u| u.rsplit('/').next()).expect("database name in URL");
    let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("connect to PERFLAB_TEST_PG");
    // A test that kills perflab leaves its server backend alive until the server notices
    // the closed socket; FORCE ends it, and a retry covers the moment in between.
    let mut attempts = 0;
    while let Err(e) = client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")) {
        attempts += 1;
        assert!(attempts < 50, "drop scratch database {name}: {e}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Run `body(dir, db)` against a fresh SQLite file and, when PostgreSQL is configured,
/// against a scratch PostgreSQL database: the same test for both backends.
pub fn each_backend(test: &str, body: impl Fn(&std::path::Path, &str)) {
    let dir = tempfile::tempdir().unwrap();
    body(dir.path(), dir.path().join("h.db").to_str().unwrap());
    let Some(base) = server_url() else {
        super::skip_part("the PostgreSQL half", UNSET);
        return;
    };
    let url = scratch_db_at(base, test);
    let dir = tempfile::tempdir().unwrap();
    body(dir.path(), &url);
    drop_scratch(&url);
}
