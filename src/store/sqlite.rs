//! The embedded SQLite backend: one file, WAL journal so readers never block the
//! writer, and a busy timeout so concurrent `perflab run` processes queue for the lock.

use super::{Backend, Value};
use anyhow::Context;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection, ToSql};
use std::path::Path;
use std::time::Duration;

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    pub fn open(path: &Path) -> anyhow::Result<Sqlite> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL with synchronous=NORMAL survives a killed process (not a power cut
        // mid-commit), which is what "kill -9 loses at most the run in flight" needs.
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            anyhow::bail!("could not switch to WAL journaling (got {mode})");
        }
        // Reading through a memory map saves copying every page out of the page cache
        // (a report reads a few hundred MB).
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA mmap_size = 1073741824;")?;
        Ok(Sqlite { conn })
    }
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Int(Some(v)) => ToSqlOutput::from(*v),
            // SQLite has no NaN (it would store NULL anyway); NULL reads back as NaN.
            Value::Real(Some(v)) if v.is_nan() => ToSqlOutput::from(rusqlite::types::Null),
            Value::Real(Some(v)) => ToSqlOutput::from(*v),
            Value::Text(Some(v)) => ToSqlOutput::from(v.as_str()),
            Value::Bytes(Some(v)) => ToSqlOutput::from(v.as_slice()),
            Value::Int(None) | Value::Real(None) | Value::Text(None) | Value::Bytes(None) => {
                ToSqlOutput::from(rusqlite::types::Null)
            }
        })
    }
}

/// `$n` placeholders are written `?n` in SQLite.
fn placeholders(sql: &str) -> String {
    sql.replace('$', "?")
}

impl Backend for Sqlite {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn dialect(&self, ddl: &str) -> String {
        // WITHOUT ROWID stores composite-key rows once, in the key's b-tree, instead of
        // a rowid table plus an index (counters shrink by about a third).
        ddl.replace("{id}", "INTEGER PRIMARY KEY")
            .replace("{int}", "INTEGER")
            .replace("{real}", "REAL")
            .replace("{blob}", "BLOB")
            .replace("{without_rowid}", " WITHOUT ROWID")
            .replace("{now}", "((julianday('now') - 2440587.5) * 86400.0)")
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<u64> {
        let mut stmt = self.conn.prepare_cached(&placeholders(sql))?;
        Ok(stmt.execute(params_from_iter(params.iter()))? as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<Vec<Vec<Value>>> {
        let mut stmt = self.conn.prepare_cached(&placeholders(sql))?;
        let columns = stmt.column_count();
        let mut rows = stmt.query(params_from_iter(params.iter()))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(match row.get_ref(i)? {
                    ValueRef::Integer(v) => Value::Int(Some(v)),
                    ValueRef::Real(v) => Value::Real(Some(v)),
                    ValueRef::Text(v) => Value::Text(Some(String::from_utf8_lossy(v).into_owned())),
                    ValueRef::Blob(v) => Value::Bytes(Some(v.to_vec())),
                    ValueRef::Null => Value::Text(None),
                });
            }
            out.push(values);
        }
        Ok(out)
    }

    fn batch(&mut self, sql: &str) -> anyhow::Result<()> {
        Ok(self.conn.execute_batch(sql)?)
    }

    fn begin_write(&mut self) -> anyhow::Result<()> {
        Ok(self.conn.execute_batch("BEGIN IMMEDIATE")?)
    }

    fn lock_schema(&mut self) -> anyhow::Result<()> {
        // BEGIN IMMEDIATE already holds the database's only write lock.
        Ok(())
    }
}
