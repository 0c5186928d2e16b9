//! The boundary to a database: SQL values that keep their type when null, and the few
//! operations a backend ([`super::sqlite`], [`super::postgres`]) must provide. Every
//! statement is shared SQL; a backend only executes it.

/// A SQL value crossing the backend boundary. Nulls keep their type because
/// PostgreSQL checks the type of every parameter, null or not.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An integer.
    Int(Option<i64>),
    /// A floating-point number.
    Real(Option<f64>),
    /// Text.
    Text(Option<String>),
    /// A blob.
    Bytes(Option<Vec<u8>>),
}

impl Value {
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => *v,
            Value::Real(v) => v.map(|v| v as i64),
            Value::Text(_) | Value::Bytes(_) => None,
        }
    }
    /// The number, from an integer or a real; None for null, text or bytes.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => v.map(|v| v as f64),
            Value::Real(v) => *v,
            Value::Text(_) | Value::Bytes(_) => None,
        }
    }
    /// The text; None for null or another type.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(v) => v.as_deref(),
            _ => None,
        }
    }
    /// The bytes; None for null or another type.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(v) => v.as_deref(),
            _ => None,
        }
    }
}

pub(crate) fn int(v: impl TryInto<i64>) -> Value {
    Value::Int(v.try_into().ok())
}
pub(crate) fn opt_int(v: Option<i32>) -> Value {
    Value::Int(v.map(i64::from))
}
pub(crate) fn real(v: f64) -> Value {
    Value::Real(Some(v))
}
pub(crate) fn opt_real(v: Option<f64>) -> Value {
    Value::Real(v)
}
pub(crate) fn text(v: impl Into<String>) -> Value {
    Value::Text(Some(v.into()))
}
pub(crate) fn opt_text(v: Option<&str>) -> Value {
    Value::Text(v.map(str::to_string))
}
pub(crate) fn bytes(v: Vec<u8>) -> Value {
    Value::Bytes(Some(v))
}

/// What a database must do for the store; everything else is shared SQL.
///
/// Statements use `$1, $2, …` placeholders (in order of first use) and the DDL uses
/// `{id}`, `{int}`, `{real}`, `{blob}` for the types that differ between databases; `{now}` (through
/// [`Backend::dialect`]) is the database's clock in seconds since the epoch; `{for_share}`
/// locks the rows a SELECT read until the transaction ends (PostgreSQL; SQLite's one
/// writer needs no row locks).
pub trait Backend {
    /// `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
    /// Replace the `{id}`/`{int}`/`{real}`/`{blob}`/`{without_rowid}`/`{now}`/`{for_share}` tokens.
    fn dialect(&self, ddl: &str) -> String;
    /// Run one statement with `params`; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<u64>;
    /// Run a query with `params`; every row it returned.
    fn query(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<Vec<Vec<Value>>>;
    /// Run a query and hand its rows to `each` one at a time, without keeping them (a
    /// report reads 100,000 experiments: holding every row costs as much as reading it).
    /// A backend may reuse the row's buffers from one row to the next.
    fn query_each(
        &mut self,
        sql: &str,
        params: &[Value],
        each: &mut dyn FnMut(&[Value]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.query(sql, params)?.iter().try_for_each(|row| each(row))
    }
    /// Run several `;`-separated statements without parameters.
    fn batch(&mut self, sql: &str) -> anyhow::Result<()>;
    /// Start a write transaction that holds the write lock from the start (so two
    /// writers queue instead of failing when one upgrades a read lock).
    fn begin_write(&mut self) -> anyhow::Result<()>;
    /// Commit the transaction.
    fn commit(&mut self) -> anyhow::Result<()> {
        self.batch("COMMIT")
    }
    /// Roll the transaction back.
    fn rollback(&mut self) -> anyhow::Result<()> {
        self.batch("ROLLBACK")
    }
    /// Serialize schema migrations between processes (inside a write transaction).
    fn lock_schema(&mut self) -> anyhow::Result<()>;
}
