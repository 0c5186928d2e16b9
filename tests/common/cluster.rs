//! A throwaway PostgreSQL cluster of a test's own: initdb into a temporary directory,
//! a server on a Unix socket there (no TCP port to collide with anything), pgbench's
//! tables at scale 1, and a stop when the test ends, passed or failed.
//!
//! The server's own programs (initdb, pg_ctl) refuse to run as root; under root they
//! run as the `postgres` user via runuser. Clients connect as the `postgres` role
//! (trust authentication, socket only). Without PostgreSQL's server binaries the test is
//! skipped with a message, except when `CI=true`: then it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// The user the server runs as when perflab's tests run as root.
    owner: Option<String>,
    pub port: u16,
}

/// The newest installed PostgreSQL's bin directory (Debian keeps them versioned).
fn server_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Quote for `sh -c`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl Cluster {
    /// A running cluster with pgbench's tables, or `None` when PostgreSQL is not
    /// installed (outside CI).
    pub fn start() -> Option<Cluster> {
        let cluster = Cluster::start_empty()?;
        let init = Command::new("pgbench").args(cluster.client_args()).args(["-i", "-q", "-s", "1"]).output().unwrap();
        assert!(init.status.success(), "pgbench -i: {}", String::from_utf8_lossy(&init.stderr));
        Some(cluster)
    }

    /// A running cluster with nothing in it but the `postgres` database.
    pub fn start_empty() -> Option<Cluster> {
        let Some(bin) = server_bin() else {
            super::skip("PostgreSQL's server binaries (/usr/lib/postgresql/*/bin) are not installed");
            return None;
        };
        // SAFETY: geteuid cannot fail.
        let owner = (unsafe { libc::geteuid() } == 0).then(|| "postgres".to_string());
        let dir = tempfile::Builder::new().prefix("perflab-pg-").tempdir().unwrap();
        if let Some(user) = &owner {
            let status = Command::new("chown").args([user.as_str(), dir.path().to_str().unwrap()]).status().unwrap();
            assert!(status.success(), "chown the cluster directory to {user}");
        }
        // A port number only names the socket file in our own directory.
        let port = 40000 + (std::process::id() % 20000) as u16;
        let cluster = Cluster { dir, bin, owner, port };
        cluster.owner_run(&format!("{} -D {} -A trust -U postgres --no-sync", cluster.tool("initdb"), cluster.data()));
        cluster.owner_run(&format!(
            "{} -D {} -l {} -w -o {} start",
            cluster.tool("pg_ctl"),
            cluster.data(),
            cluster.dir.path().join("log").display(),
            quote(&cluster.server_options())
        ));
        Some(cluster)
    }

    fn server_options(&self) -> String {
        format!("-p {} -k {} -c listen_addresses=''", self.port, self.dir.path().display())
    }

    /// Restart the server now: `immediate` is a crash (no checkpoint, every connection
    /// dropped), `fast` a clean shutdown; waits until it accepts connections again.
    pub fn restart_now(&self, mode: &str) {
        self.owner_run(&format!(
            "{} -D {} -l {} -m {mode} -w -o {} restart",
            self.tool("pg_ctl"),
            self.data(),
            self.dir.path().join("log").display(),
            quote(&self.server_options())
        ));
    }

    /// Stop the server (`immediate`: as a crash) and start it again after `down`.
    pub fn outage(&self, down: std::time::Duration) {
        self.owner_run(&format!("{} -D {} -m immediate -w stop", self.tool("pg_ctl"), self.data()));
        std::thread::sleep(down);
        self.owner_run(&format!(
            "{} -D {} -l {} -w -o {} start",
            self.tool("pg_ctl"),
            self.data(),
            self.dir.path().join("log").display(),
            quote(&self.server_options())
        ));
    }

    /// The server's Unix socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join(format!(".s.PGSQL.{}", self.port))
    }

    fn tool(&self, name: &str) -> String {
        self.bin.join(name).display().to_string()
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// `command` as a shell command line run as the server's owner.
    pub fn as_owner(&self, command: &str) -> String {
        match &self.owner {
            Some(user) => format!("runuser -u {user} -- sh -c {}", quote(command)),
            None => command.to_string(),
        }
    }

    fn owner_run(&self, command: &str) {
        let out = Command::new("sh").args(["-c", &self.as_owner(command)]).output().unwrap();
        assert!(out.status.success(), "`{command}` failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A shell command line restarting the server (fast shutdown, waiting until it is
    /// up; its log to the log file, not to the hook's captured stderr).
    pub fn restart(&self) -> String {
        let log = self.dir.path().join("log");
        self.as_owner(&format!("{} -D {} -l {} -m fast -w restart", self.tool("pg_ctl"), self.data(), log.display()))
    }

    /// The connection options of psql and pgbench, database last (GNU getopt takes
    /// options after it too).
    pub fn client_args(&self) -> Vec<String> {
        let socket = self.dir.path().display().to_string();
        ["-h", &socket, "-p", &self.port.to_string(), "-U", "postgres", "postgres"].map(String::from).to_vec()
    }

    /// `program` with the connection options, as one shell command line.
    pub fn client(&self, program: &str) -> String {
        format!("{program} {}", self.client_args().join(" "))
    }

    /// The environment that points psql and pgbench at this cluster (for suites).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("PGHOST", self.dir.path().display().to_string()),
            ("PGPORT", self.port.to_string()),
            ("PGUSER", "postgres".into()),
            ("PGDATABASE", "postgres".into()),
        ]
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let stop = format!("{} -D {} -m immediate -w stop", self.tool("pg_ctl"), self.data());
        let _ = Command::new("sh").args(["-c", &self.as_owner(&stop)]).output();
    }
}
