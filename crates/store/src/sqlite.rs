//! The embedded SQLite backend: one file, WAL journal so readers never block the
//! writer, and a busy timeout so concurrent `perflab run` processes queue for the lock.
//! A database perflab may not write (a read-only filesystem or file) is opened read-only
//! for the commands that only read.

use super::{Backend, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection, OpenFlags, ToSql};
use std::path::Path;
use std::time::Duration;

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

pub use super::error::OpenError;

/// How a database was opened for reading when it could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOnly {
    /// `mode=ro`: SQLite still sees what other processes commit meanwhile.
    Shared,
    /// `immutable=1` (a WAL database on a read-only filesystem, where SQLite can create
    /// no WAL index): no locks; what another process commits meanwhile is not seen.
    Immutable,
    /// `immutable=1` on a writable filesystem where perflab may not create the WAL index
    /// (a file 444 in a directory 555) and no WAL holds commits: the file is all there
    /// is, but a change made meanwhile by someone who may write it would not be seen.
    ImmutableWithoutWal,
}

pub(crate) struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Sqlite, OpenError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| OpenError::CreateDir { dir: dir.into(), source })?;
        }
        super::sigbus::install();
        let conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL with synchronous=NORMAL survives a killed process (not a power cut
        // mid-commit), which is what "kill -9 loses at most the run in flight" needs.
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(OpenError::NotWal(mode));
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
        Ok(Sqlite { conn })
    }

    /// Open an existing database without writing anything: `mode=ro` first; when SQLite
    /// cannot build a WAL index there (no `-shm` and no right to create one), read the
    /// file as immutable — safe only where nothing can write it, so only when `path`'s
    /// filesystem is mounted read-only.
    pub(crate) fn open_read_only(path: &Path) -> Result<(Sqlite, ReadOnly), OpenError> {
        super::sigbus::install();
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let shared = Connection::open_with_flags(uri(path, "mode=ro"), flags).and_then(|conn| {
            // Opening is lazy: the first read is what fails without a WAL index.
            conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))?;
            Ok(conn)
        });
        let (conn, how) = match shared {
            Ok(conn) => (conn, ReadOnly::Shared),
            Err(e) if on_read_only_filesystem(path) => {
                let conn = Connection::open_with_flags(uri(path, "immutable=1"), flags).map_err(|_| e)?;
                (conn, ReadOnly::Immutable)
            }
            // Without a WAL holding commits the main file is the whole database: read it
            // immutable rather than not at all (a WAL with commits would be ignored: refused).
            Err(e) if !wal_holds_commits(path) => {
                let conn = Connection::open_with_flags(uri(path, "immutable=1"), flags).map_err(|_| e)?;
                conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))?;
                (conn, ReadOnly::ImmutableWithoutWal)
            }
            Err(e) => return Err(e.into()),
        };
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok((Sqlite { conn }, how))
    }
}

/// What `path` is when it cannot be a SQLite database, for the message refusing it:
/// not a regular file (a directory, a device, a FIFO, a socket), an empty file (unless
/// `empty_is_new`: a writer may create a database in it, as SQLite would) or a file
/// without SQLite's header. `None` for a missing path or a SQLite file. Checked before
/// SQLite opens it, which would write pages over a device or block on a FIFO.
pub fn not_a_database(path: &Path, empty_is_new: bool) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path).ok()?;
    let kind = meta.file_type();
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if !kind.is_file() {
        "not a regular file"
    } else if meta.len() == 0 {
        if empty_is_new {
            return None;
        }
        "an empty file"
    } else {
        const HEADER: &[u8; 16] = b"SQLite format 3\0";
        let mut head = [0u8; 16];
        let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
        match read {
            Ok(()) if &head == HEADER => return None,
            // Unreadable: SQLite's own error says why (permissions) when it opens it.
            Err(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => return None,
            _ => "a file that is not a SQLite database",
        }
    };
    Some(what.to_string())
}

/// Whether the database's `-wal` file exists and holds more than its header (commits
/// not yet copied into the main file).
fn wal_holds_commits(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(&wal).is_ok_and(|m| m.len() > 32)
}

/// Whether perflab may write the database file, its `-wal` and `-shm` when they exist
/// (an immutable `-wal` cannot be written even by root: access(2) says EPERM), and create
/// files beside it. A missing file counts as writable: opening it creates it.
pub fn writable(path: &Path) -> bool {
    let access = |p: &Path| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else { return false };
        // SAFETY: access(2) on a NUL-terminated path.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let beside = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        std::path::PathBuf::from(p)
    };
    let companions_writable = ["-wal", "-shm"].iter().map(|s| beside(s)).all(|p| !p.exists() || access(&p));
    (!path.exists() || access(path)) && access(dir) && companions_writable
}

fn on_read_only_filesystem(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else { return false };
    // SAFETY: statvfs on a NUL-terminated path into a zeroed struct.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_RDONLY != 0
    }
}

/// A `file:` URI for `path` with `query` (SQLite's URI filenames: `%`, `?`, `#` and
/// every byte that is not printable ASCII are %-escaped).
fn uri(path: &Path, query: &str) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::from("file:");
    for &byte in absolute.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_graphic() && !matches!(byte, b'%' | b'?' | b'#') || byte == b' ' {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("{out}?{query}")
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

/// Set `slot` to `value`, reusing the slot's text or byte buffer when it has one.
fn overwrite(slot: &mut Value, value: ValueRef) {
    match (slot, value) {
        (Value::Text(Some(text)), ValueRef::Text(v)) => {
            text.clear();
            text.push_str(&String::from_utf8_lossy(v));
        }
        (Value::Bytes(Some(bytes)), ValueRef::Blob(v)) => {
            bytes.clear();
            bytes.extend_from_slice(v);
        }
        (slot, value) => {
            *slot = match value {
                ValueRef::Integer(v) => Value::Int(Some(v)),
                ValueRef::Real(v) => Value::Real(Some(v)),
                ValueRef::Text(v) => Value::Text(Some(String::from_utf8_lossy(v).into_owned())),
                ValueRef::Blob(v) => Value::Bytes(Some(v.to_vec())),
                ValueRef::Null => Value::Text(None),
            }
        }
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
            .replace("{for_share}", "")
            .replace("{without_rowid}", " WITHOUT ROWID")
            .replace("{now}", "((julianday('now') - 2440587.5) * 86400.0)")
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<u64> {
        let mut stmt = self.conn.prepare_cached(&placeholders(sql))?;
        Ok(stmt.execute(params_from_iter(params.iter()))? as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<Vec<Vec<Value>>> {
        let mut out = Vec::new();
        self.query_each(sql, params, &mut |row| {
            out.push(row.to_vec());
            Ok(())
        })?;
        Ok(out)
    }

    fn query_each(
        &mut self,
        sql: &str,
        params: &[Value],
        each: &mut dyn FnMut(&[Value]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut stmt = self.conn.prepare_cached(&placeholders(sql))?;
        let mut values = vec![Value::Text(None); stmt.column_count()];
        let mut rows = stmt.query(params_from_iter(params.iter()))?;
        while let Some(row) = rows.next()? {
            for (i, slot) in values.iter_mut().enumerate() {
                overwrite(slot, row.get_ref(i)?);
            }
            each(&values)?;
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_escape_what_sqlite_would_read_as_syntax() {
        assert_eq!(uri(Path::new("/a b/x%?#é.db"), "mode=ro"), "file:/a b/x%25%3F%23%C3%A9.db?mode=ro");
    }

    #[test]
    fn a_database_opens_read_only_and_refuses_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd?name%.db");
        Sqlite::open(&path).unwrap().batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)").unwrap();
        let (mut db, how) = Sqlite::open_read_only(&path).unwrap();
        assert_eq!(how, ReadOnly::Shared);
        assert_eq!(db.query("SELECT x FROM t", &[]).unwrap()[0][0].as_i64(), Some(1));
        assert!(db.batch("INSERT INTO t VALUES (2)").is_err());
        assert!(writable(&path) && writable(&dir.path().join("missing.db")));
    }
}
