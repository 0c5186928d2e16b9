//! The PostgreSQL backend, for a team's fleet of benchmark machines writing one
//! history. Same schema and SQL as SQLite (see `store/mod.rs`).
//!
//! Nothing waits forever: connecting (TCP, start-up and authentication) has a time-out,
//! and so has every statement — on the server (`statement_timeout`, which cancels a slow
//! statement and keeps the connection) and on the client a little later (a server that
//! accepts and never answers, or a network partition). The client side is why this talks
//! to `tokio-postgres` on a runtime of its own: the blocking `postgres` client has no
//! time limit past the socket's connect. A connection that timed out on the client is
//! abandoned; its errors say the database is unavailable ([`is_unavailable`]), which is
//! what an agent reconnects on.

use super::{Backend, Value};
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, NoTls};

/// Any constant works; it only has to be the same for every perflab process.
const SCHEMA_LOCK_KEY: i64 = 0x0070_6572_666c_6162; // "perflab" in ASCII

/// Environment variables overriding the time-outs (durations: `10s`, `2m`, `500ms`).
pub(crate) const CONNECT_TIMEOUT_ENV: &str = "PERFLAB_PG_CONNECT_TIMEOUT";
pub(crate) const STATEMENT_TIMEOUT_ENV: &str = "PERFLAB_PG_STATEMENT_TIMEOUT";
/// libpq's default is to wait forever; psql users set `connect_timeout` to a few seconds.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Long enough for the largest read (a report of 100,000 experiments takes seconds),
/// short enough that a stalled server is noticed within a minute.
pub(crate) const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a PostgreSQL operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PgError {
    #[error("{0}")]
    BadUrl(String),
    #[error("{name}: `{value}` is not a duration (e.g. 10s, 2m, 500ms)")]
    BadTimeout { name: &'static str, value: String },
    #[error("no answer within {} while connecting (connect time-out: `connect_timeout` in the URL or {CONNECT_TIMEOUT_ENV})", seconds(*.0))]
    ConnectTimeout(Duration),
    #[error("no answer within {} to a statement (statement time-out: {STATEMENT_TIMEOUT_ENV}); connection abandoned", seconds(*.0))]
    StatementTimeout(Duration),
    #[error("the connection was abandoned after an earlier time-out")]
    Abandoned,
    #[error(
        "the server asks for a password and none was given: put it in the URL (postgres://user:PASSWORD@host/db), PGPASSWORD or ~/.pgpass"
    )]
    NoPassword,
    #[error("unexpected column type {ty} for {column}")]
    ColumnType { ty: Type, column: String },
    #[error("cannot start the client's runtime")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Postgres(#[from] tokio_postgres::Error),
}

fn seconds(d: Duration) -> String {
    perflab_model::units::format_seconds(d.as_secs_f64())
}

impl PgError {
    /// True when the server could not be reached or stopped answering (restart,
    /// shutdown, partition, time-out): trying again later may work. False for errors of
    /// the request itself.
    pub fn is_unavailable(&self) -> bool {
        match self {
            PgError::ConnectTimeout(_) | PgError::StatementTimeout(_) | PgError::Abandoned => true,
            PgError::Postgres(e) => postgres_unavailable(e),
            PgError::BadUrl(_)
            | PgError::BadTimeout { .. }
            | PgError::ColumnType { .. }
            | PgError::Runtime(_)
            | PgError::NoPassword => false,
        }
    }
}

fn postgres_unavailable(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if missing_password(e) {
        return false;
    }
    if let Some(code) = e.code() {
        // Class 08: connection exceptions; 57P01–57P03: the server is shutting down,
        // crashed or still starting; 53300: too many connections right now.
        return code.code().starts_with("08")
            || [
                SqlState::ADMIN_SHUTDOWN,
                SqlState::CRASH_SHUTDOWN,
                SqlState::CANNOT_CONNECT_NOW,
                SqlState::TOO_MANY_CONNECTIONS,
            ]
            .contains(code);
    }
    // No SQLSTATE: the socket failed (refused, reset, unreachable) or the stream ended.
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()) || e.as_db_error().is_none()
}

/// True when connecting failed because the server asked for a password the client does
/// not have — a configuration error, not an outage: waiting would not bring a password.
/// (tokio-postgres gives its error kinds no accessor; its message is the only sign.)
fn missing_password(e: &tokio_postgres::Error) -> bool {
    let cause = std::error::Error::source(e).map(|c| c.to_string()).unwrap_or_default();
    e.as_db_error().is_none() && (e.to_string().contains("password missing") || cause.contains("password missing"))
}

/// Fill in what the URL leaves out from libpq's environment variables, as libpq does:
/// `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD`, then the password file
/// (`PGPASSFILE`, default `~/.pgpass`, ignored when group- or world-readable as libpq
/// ignores it); the user defaults to the login name and the host to the local socket
/// directory. A URL's own parts always win. `var` reads a variable (set and non-empty).
pub(crate) fn libpq_environment(config: &mut Config, var: &dyn Fn(&str) -> Option<String>) {
    if config.get_hosts().is_empty() {
        match var("PGHOST") {
            Some(hosts) => hosts.split(',').for_each(|h| {
                config.host(h.trim());
            }),
            None => {
                config.host(if std::path::Path::new("/var/run/postgresql").is_dir() {
                    "/var/run/postgresql"
                } else {
                    "localhost"
                });
            }
        }
    }
    if config.get_ports().is_empty() {
        if let Some(port) = var("PGPORT").and_then(|p| p.trim().parse::<u16>().ok()) {
            config.port(port);
        }
    }
    if config.get_user().is_none() {
        let login = var("PGUSER").or_else(|| var("USER")).or_else(|| var("LOGNAME"));
        if let Some(user) = login {
            config.user(&user);
        }
    }
    if config.get_dbname().is_none() {
        if let Some(db) = var("PGDATABASE") {
            config.dbname(&db);
        }
    }
    if config.get_password().is_none() {
        if let Some(password) = var("PGPASSWORD") {
            config.password(password);
        } else if let Some(password) = password_file(config, var) {
            config.password(password);
        }
    }
}

/// The password `PGPASSFILE` (default `~/.pgpass`) gives for the first host, port,
/// database and user of `config`: its lines are `host:port:database:user:password`,
/// `*` matching anything and `\` escaping `:` and `\` (libpq's format).
fn password_file(config: &Config, var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let path = var("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| var("HOME").map(|h| std::path::Path::new(&h).join(".pgpass")))?;
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = perflab_sys::files::read_regular_to_string(&path).ok()?;
    let host = match config.get_hosts().first()? {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        // libpq matches a socket directory as `localhost`.
        tokio_postgres::config::Host::Unix(_) => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user()?.to_string();
    let dbname = config.get_dbname().map_or_else(|| user.clone(), str::to_string);
    let wanted = [host, port, dbname, user];
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => field.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
                c => field.push(c),
            }
        }
        fields.push(field);
        (fields.len() == 5 && fields[..4].iter().zip(&wanted).all(|(f, w)| f == "*" || f == w))
            .then(|| fields.pop().unwrap_or_default())
    })
}

/// True when `err` (anywhere in its chain) says the database is unavailable rather than
/// the request wrong: see `PgError::is_unavailable`.
pub fn is_unavailable(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.downcast_ref::<PgError>().is_some_and(PgError::is_unavailable)
            || cause.downcast_ref::<tokio_postgres::Error>().is_some_and(postgres_unavailable)
    })
}

/// How long to wait for a connection and for each statement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Timeouts {
    pub connect: Duration,
    pub statement: Duration,
}

impl Timeouts {
    /// The environment's time-outs over `connect_timeout` from the URL over the defaults.
    pub fn from_env(config: &Config) -> Result<Timeouts, PgError> {
        let read = |name: &'static str| -> Result<Option<Duration>, PgError> {
            match std::env::var(name) {
                Ok(value) if !value.trim().is_empty() => perflab_model::units::parse_duration(&value)
                    .ok()
                    .filter(|s| *s > 0.0 && s.is_finite())
                    .map(|s| Some(Duration::from_secs_f64(s)))
                    .ok_or(PgError::BadTimeout { name, value }),
                _ => Ok(None),
            }
        };
        let from_url = config.get_connect_timeout().copied().filter(|d| !d.is_zero());
        Ok(Timeouts {
            connect: read(CONNECT_TIMEOUT_ENV)?.or(from_url).unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            statement: read(STATEMENT_TIMEOUT_ENV)?.unwrap_or(DEFAULT_STATEMENT_TIMEOUT),
        })
    }

    /// The client's own limit: the server's `statement_timeout` plus time for its
    /// cancellation to travel back, so a slow statement ends with the server's error
    /// (the connection stays usable) and only a silent server hits this one.
    fn client_deadline(&self) -> Duration {
        self.statement + (self.statement / 10).max(Duration::from_secs(2))
    }
}

pub(crate) struct Postgres {
    runtime: tokio::runtime::Runtime,
    /// None once abandoned after a client-side time-out.
    client: Option<Client>,
    timeouts: Timeouts,
}

impl Postgres {
    pub fn connect(url: &str) -> Result<Postgres, PgError> {
        let mut config: Config = url.parse().map_err(|e: tokio_postgres::Error| PgError::BadUrl(e.to_string()))?;
        libpq_environment(&mut config, &|name| std::env::var(name).ok().filter(|v| !v.is_empty()));
        let timeouts = Timeouts::from_env(&config)?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(PgError::Runtime)?;
        let client = runtime.block_on(async {
            let (client, connection) = tokio::time::timeout(timeouts.connect, config.connect(NoTls))
                .await
                .map_err(|_| PgError::ConnectTimeout(timeouts.connect))?
                .map_err(|e| if missing_password(&e) { PgError::NoPassword } else { PgError::Postgres(e) })?;
            // Driven whenever the runtime runs, i.e. during every statement below.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            let millis = timeouts.statement.as_millis();
            tokio::time::timeout(timeouts.connect, client.batch_execute(&format!("SET statement_timeout = {millis}")))
                .await
                .map_err(|_| PgError::ConnectTimeout(timeouts.connect))??;
            Ok::<_, PgError>(client)
        })?;
        Ok(Postgres { runtime, client: Some(client), timeouts })
    }

    /// The outcome of a statement run within the client's deadline: a time-out abandons
    /// the connection — whatever the server does with the statement now, this
    /// connection's protocol state is unknown (dropping the client ends its task).
    fn settle<T>(
        &mut self,
        outcome: Result<Result<T, tokio_postgres::Error>, tokio::time::error::Elapsed>,
    ) -> Result<T, PgError> {
        match outcome {
            Ok(result) => Ok(result?),
            Err(_) => {
                self.client = None;
                Err(PgError::StatementTimeout(self.timeouts.client_deadline()))
            }
        }
    }

    fn params(params: &[Value]) -> Vec<Box<dyn ToSql + Sync>> {
        params
            .iter()
            .map(|v| -> Box<dyn ToSql + Sync> {
                match v {
                    Value::Int(v) => Box::new(*v),
                    Value::Real(v) => Box::new(*v),
                    Value::Text(v) => Box::new(v.clone()),
                    Value::Bytes(v) => Box::new(v.clone()),
                }
            })
            .collect()
    }
}

/// Run the statement `$call` (an expression using `$client`) on `$pg`'s connection
/// within the client's deadline. (A macro: the future borrows the client, which a
/// closure could only hand out for a lifetime it cannot name.)
macro_rules! within_deadline {
    ($pg:expr, |$client:ident| $call:expr) => {{
        let deadline = $pg.timeouts.client_deadline();
        let outcome = match $pg.client.as_ref() {
            Some($client) => Ok($pg.runtime.block_on(async { tokio::time::timeout(deadline, $call).await })),
            None => Err(PgError::Abandoned),
        };
        match outcome {
            Ok(outcome) => $pg.settle(outcome),
            Err(e) => Err(e),
        }
    }};
}

fn row_values(row: &tokio_postgres::Row) -> Result<Vec<Value>, PgError> {
    let mut values = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        values.push(if *ty == Type::INT8 {
            Value::Int(row.try_get(i)?)
        } else if *ty == Type::INT4 {
            Value::Int(row.try_get::<_, Option<i32>>(i)?.map(i64::from))
        } else if *ty == Type::FLOAT8 {
            Value::Real(row.try_get(i)?)
        } else if *ty == Type::TEXT || *ty == Type::VARCHAR {
            Value::Text(row.try_get(i)?)
        } else if *ty == Type::BYTEA {
            Value::Bytes(row.try_get(i)?)
        } else {
            return Err(PgError::ColumnType { ty: ty.clone(), column: column.name().to_string() });
        });
    }
    Ok(values)
}

impl Backend for Postgres {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn dialect(&self, ddl: &str) -> String {
        ddl.replace("{id}", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
            .replace("{int}", "BIGINT")
            .replace("{real}", "DOUBLE PRECISION")
            .replace("{blob}", "BYTEA")
            .replace("{for_share}", " FOR SHARE")
            .replace("{without_rowid}", "")
            .replace("{now}", "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)")
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<u64> {
        let boxed = Self::params(params);
        let refs: Vec<&(dyn ToSql + Sync)> = boxed.iter().map(|b| b.as_ref() as &(dyn ToSql + Sync)).collect();
        Ok(within_deadline!(self, |client| client.execute(sql, &refs))?)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<Vec<Vec<Value>>> {
        let boxed = Self::params(params);
        let refs: Vec<&(dyn ToSql + Sync)> = boxed.iter().map(|b| b.as_ref() as &(dyn ToSql + Sync)).collect();
        let rows = within_deadline!(self, |client| client.query(sql, &refs))?;
        Ok(rows.iter().map(row_values).collect::<Result<_, _>>()?)
    }

    fn batch(&mut self, sql: &str) -> anyhow::Result<()> {
        Ok(within_deadline!(self, |client| client.batch_execute(sql))?)
    }

    fn begin_write(&mut self) -> anyhow::Result<()> {
        self.batch("BEGIN")
    }

    fn lock_schema(&mut self) -> anyhow::Result<()> {
        // Concurrent CREATE TABLE IF NOT EXISTS can still collide in PostgreSQL's
        // catalogs; a transaction-scoped advisory lock makes migrations take turns.
        within_deadline!(self, |client| client.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK_KEY]))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_outs_come_from_the_url_the_environment_or_the_defaults() {
        let config: Config = "postgres://u@h/db".parse().unwrap();
        let defaults = Timeouts { connect: DEFAULT_CONNECT_TIMEOUT, statement: DEFAULT_STATEMENT_TIMEOUT };
        // The test environment may set the variables: only check what it does not set.
        if std::env::var_os(CONNECT_TIMEOUT_ENV).is_none() && std::env::var_os(STATEMENT_TIMEOUT_ENV).is_none() {
            assert_eq!(Timeouts::from_env(&config).unwrap(), defaults);
            let config: Config = "postgres://u@h/db?connect_timeout=3".parse().unwrap();
            assert_eq!(Timeouts::from_env(&config).unwrap().connect, Duration::from_secs(3));
        }
        let t = Timeouts { connect: Duration::from_secs(1), statement: Duration::from_secs(60) };
        assert_eq!(t.client_deadline(), Duration::from_secs(66));
        let t = Timeouts { statement: Duration::from_secs(1), ..t };
        assert_eq!(t.client_deadline(), Duration::from_secs(3));
    }

    #[test]
    fn a_refused_connection_is_unavailable_and_a_bad_url_is_not() {
        // Port 1 on localhost: nothing listens there.
        let refused = Postgres::connect("postgres://u@127.0.0.1:1/db").err().expect("refused");
        assert!(refused.is_unavailable(), "{refused:?}");
        assert!(is_unavailable(&anyhow::Error::from(refused).context("opening")));
        let bad = Postgres::connect("postgres://u@h/db?nonsense=1").err().expect("bad url");
        assert!(!bad.is_unavailable(), "{bad:?}");
    }
}
