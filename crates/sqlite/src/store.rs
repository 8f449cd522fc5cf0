//! [`SqliteStore`]: the [`TaskStore`] on one SQLite file.
//!
//! rusqlite is synchronous, so every call runs on Tokio's blocking pool and takes the one
//! connection's lock there; async code never blocks on the database.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

use mcp_tasks_engine::{
    ListQuery, Principal, StoreError, TaskId, TaskRecord, TaskState, TaskStore, Timestamp, Update,
    Version,
};

use crate::migrate;

/// How long a write waits for another process's lock on the file (say, an operator's
/// `sqlite3` shell) before it fails with `SQLITE_BUSY`. Within this process there is one
/// connection, so there is never contention on the file from here.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The columns every read selects, in the order [`read_record`] decodes them.
const COLUMNS: &str = "id, owner, tool, arguments, state, status_message, created_at, \
                       updated_at, ttl_ms, poll_interval_ms, attempt, version, error_result_fails, \
                       input_methods";

/// The statuses of tasks that may still change, as an SQL list. It must match the
/// `WHERE` of the partial index `tasks_unfinished` word for word, or SQLite will not use it.
const UNFINISHED: &str = "('working', 'input_required')";

/// The statuses that never change again.
const TERMINAL: &str = "('completed', 'failed', 'cancelled')";

/// How a commit reaches the disk: SQLite's `PRAGMA synchronous`, in WAL mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synchronous {
    /// Every commit fsyncs the WAL before it returns: a returned write survives a power
    /// loss. The production setting (invariant 1).
    #[default]
    Full,
    /// The WAL is fsynced only at checkpoints: a returned write survives a crash of the
    /// process, not of the machine. For comparison in benchmarks only.
    Normal,
}

impl Synchronous {
    /// The pragma's value, as benchmark names show it (`FULL`, `NORMAL`).
    pub fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// The task store on one SQLite file: the embedded default of mcp-tasks.
///
/// A cheap handle: clones share one connection. Open it with [`SqliteStore::open`].
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// The one connection. A std mutex, not Tokio's: it is only ever locked inside
    /// `spawn_blocking`, for one synchronous statement or transaction, and so is never held
    /// across an `.await`. One connection also serializes this process's writes, which is
    /// all SQLite allows at a time anyway.
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (or creates) the store at `path`, creating missing parent directories, and
    /// migrates its schema to this build's version.
    ///
    /// Blocking file I/O: call it at start-up, not from a busy async task.
    ///
    /// # Errors
    /// [`StoreError::Backend`] if a directory cannot be created, the file cannot be opened
    /// as a database, WAL mode is unavailable, a migration fails, or the schema is newer
    /// than this build.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Synchronous::Full)
    }

    /// Opens the store like [`SqliteStore::open`], with the durability of commits given by
    /// `synchronous`. Production uses [`Synchronous::Full`] (what [`SqliteStore::open`]
    /// does); [`Synchronous::Normal`] exists for comparison in benchmarks.
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub fn open_with(path: &Path, synchronous: Synchronous) -> Result<SqliteStore, StoreError> {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            fs::create_dir_all(parent).map_err(StoreError::backend)?;
        }
        let mut conn = Connection::open(path).map_err(StoreError::backend)?;
        configure(&conn, synchronous)?;
        migrate::migrate(&mut conn)?;
        tracing::debug!(path = %path.display(), schema = migrate::SCHEMA_VERSION, "opened the SQLite task store");
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                path: path.to_owned(),
            }),
        })
    }

    /// The file this store was opened on.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The current value of `PRAGMA <name>` on the store's connection, as text (for
    /// diagnostics and tests: `journal_mode` is `wal`, `synchronous` is `2`, i.e. FULL).
    ///
    /// # Errors
    /// [`StoreError::Backend`] if `name` is not an identifier or the pragma returns no row.
    pub async fn pragma(&self, name: &str) -> Result<String, StoreError> {
        let name = name.to_owned();
        self.call(move |conn| {
            conn.pragma_query_value(None, &name, |row| {
                Ok(match row.get_ref(0)? {
                    rusqlite::types::ValueRef::Null => String::new(),
                    rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                    rusqlite::types::ValueRef::Real(x) => x.to_string(),
                    rusqlite::types::ValueRef::Text(text)
                    | rusqlite::types::ValueRef::Blob(text) => {
                        String::from_utf8_lossy(text).into_owned()
                    }
                })
            })
            .map_err(StoreError::backend)
        })
        .await
    }

    /// Runs `f` with the connection on the blocking pool.
    async fn call<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            // A panic while the lock was held cannot leave a half-done write behind: a
            // statement is atomic, and a dropped rusqlite transaction rolls back.
            let mut conn = inner.conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut conn)
        })
        .await
        .map_err(StoreError::backend)?
    }
}

/// Sets the connection's pragmas. They are per connection (except `journal_mode=WAL`, which
/// sticks to the file), so this runs on every open.
fn configure(conn: &Connection, synchronous: Synchronous) -> Result<(), StoreError> {
    // Invariant 1: a task is committed, durably, before its CreateTaskResult leaves. In WAL
    // mode, `synchronous=NORMAL` survives a crash of the process but may lose the last
    // commits on power loss or an OS crash, because it fsyncs the WAL only at checkpoints.
    // `FULL` fsyncs the WAL on every commit, so a returned `insert` or `replace` is on disk.
    // We choose FULL and pay one fsync per write; grouping commits for throughput may come
    // later.
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(StoreError::backend)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Backend(
            format!("SQLite refused WAL mode (journal_mode is {mode}); is the file on a network filesystem?").into(),
        ));
    }
    conn.pragma_update(None, "synchronous", synchronous.pragma())
        .map_err(StoreError::backend)?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(StoreError::backend)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(StoreError::backend)?;
    Ok(())
}

#[async_trait]
impl TaskStore for SqliteStore {
    async fn insert(&self, task: &TaskRecord) -> Result<(), StoreError> {
        let row = NewRow::from_record(task).map_err(StoreError::backend)?;
        let id = task.id.clone();
        self.call(move |conn| {
            let inserted = conn
                .prepare_cached(
                    "INSERT INTO tasks (id, owner, tool, arguments, status, state, status_message, \
                     created_at, updated_at, ttl_ms, expires_at, poll_interval_ms, attempt, version, \
                     error_result_fails, input_methods) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        row.id,
                        row.owner,
                        row.tool,
                        row.arguments,
                        row.status,
                        row.state,
                        row.status_message,
                        row.created_at,
                        row.updated_at,
                        row.ttl_ms,
                        row.expires_at,
                        row.poll_interval_ms,
                        row.attempt,
                        row.version,
                        row.error_result_fails,
                        row.input_methods,
                    ])
                });
            match inserted {
                Ok(_) => Ok(()),
                Err(err) if is_duplicate_key(&err) => Err(StoreError::Duplicate(id)),
                Err(err) => Err(StoreError::backend(err)),
            }
        })
        .await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        let id = id.as_str().to_owned();
        self.call(move |conn| {
            conn.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))
                .and_then(|mut stmt| stmt.query_row([id], read_record).optional())
                .map_err(StoreError::backend)
        })
        .await
    }

    async fn replace(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
    ) -> Result<TaskRecord, StoreError> {
        let task = id.clone();
        let expected = to_i64(expected.0).map_err(StoreError::backend)?;
        let state = to_json(&update.state).map_err(StoreError::backend)?;
        let status = update.state.status().as_str();
        let message = update.status_message.clone();
        let updated_at = update.updated_at.0;
        let attempt = update.attempt;
        self.call(move |conn| {
            // One statement: the compare-and-set and the read of the new row are atomic.
            let written = conn
                .prepare_cached(&format!(
                    "UPDATE tasks SET state = ?1, status = ?2, status_message = ?3, updated_at = ?4, \
                     attempt = ?5, version = version + 1 \
                     WHERE id = ?6 AND version = ?7 \
                     RETURNING {COLUMNS}"
                ))
                .and_then(|mut stmt| {
                    stmt.query_row(
                        params![state, status, message, updated_at, attempt, task.as_str(), expected],
                        read_record,
                    )
                    .optional()
                })
                .map_err(StoreError::backend)?;
            written.ok_or(StoreError::Conflict(task))
        })
        .await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let owner = query.owner.as_str().to_owned();
        let after = query
            .after
            .as_ref()
            .map(|cursor| (cursor.created_at.0, cursor.id.as_str().to_owned()));
        let limit = i64::from(query.limit);
        self.call(move |conn| {
            let read = match after {
                None => conn
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 \
                         ORDER BY created_at, id LIMIT ?2"
                    ))
                    .and_then(|mut stmt| collect(stmt.query_map(params![owner, limit], read_record)?)),
                Some((created_at, id)) => conn
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND (created_at, id) > (?2, ?3) \
                         ORDER BY created_at, id LIMIT ?4"
                    ))
                    .and_then(|mut stmt| {
                        collect(stmt.query_map(params![owner, created_at, id, limit], read_record)?)
                    }),
            };
            read.map_err(StoreError::backend)
        })
        .await
    }

    async fn count(&self, owner: &Principal) -> Result<u64, StoreError> {
        let owner = owner.as_str().to_owned();
        self.call(move |conn| {
            // Answered from the index `tasks_by_owner` alone (a covering scan of the
            // owner's entries); the rows themselves are not read.
            let count: i64 = conn
                .prepare_cached("SELECT COUNT(*) FROM tasks WHERE owner = ?1")
                .and_then(|mut stmt| stmt.query_row([owner], |row| row.get(0)))
                .map_err(StoreError::backend)?;
            Ok(u64::try_from(count).unwrap_or(0))
        })
        .await
    }

    async fn unfinished(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::from(limit);
        self.call(move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE status IN {UNFINISHED} \
                 ORDER BY created_at, id LIMIT ?1"
            ))
            .and_then(|mut stmt| collect(stmt.query_map([limit], read_record)?))
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn expired(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::from(limit);
        self.call(move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE status IN {UNFINISHED} AND expires_at <= ?1 \
                 ORDER BY expires_at, id LIMIT ?2"
            ))
            .and_then(|mut stmt| collect(stmt.query_map(params![now.0, limit], read_record)?))
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn purge(&self, now: Timestamp, limit: u32) -> Result<u64, StoreError> {
        let limit = i64::from(limit);
        self.call(move |conn| {
            // SQLite's `DELETE … LIMIT` needs a compile-time option; a subquery does not.
            let deleted = conn
                .prepare_cached(&format!(
                    "DELETE FROM tasks WHERE rowid IN (\
                         SELECT rowid FROM tasks WHERE status IN {TERMINAL} AND expires_at <= ?1 \
                         ORDER BY expires_at LIMIT ?2)"
                ))
                .and_then(|mut stmt| stmt.execute(params![now.0, limit]))
                .map_err(StoreError::backend)?;
            Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
        })
        .await
    }
}

/// A [`TaskRecord`] as the `tasks` table stores it.
struct NewRow {
    id: String,
    owner: String,
    tool: String,
    arguments: String,
    status: &'static str,
    state: String,
    status_message: Option<String>,
    created_at: i64,
    updated_at: i64,
    ttl_ms: Option<i64>,
    expires_at: Option<i64>,
    poll_interval_ms: Option<i64>,
    attempt: u32,
    version: i64,
    error_result_fails: bool,
    input_methods: String,
}

impl NewRow {
    fn from_record(task: &TaskRecord) -> rusqlite::Result<NewRow> {
        Ok(NewRow {
            id: task.id.as_str().to_owned(),
            owner: task.owner.as_str().to_owned(),
            tool: task.tool.clone(),
            arguments: to_json(&task.arguments)?,
            status: task.status().as_str(),
            state: to_json(&task.state)?,
            status_message: task.status_message.clone(),
            created_at: task.created_at.0,
            updated_at: task.updated_at.0,
            ttl_ms: task.ttl_ms.map(to_i64).transpose()?,
            expires_at: task.expires_at().map(|at| at.0),
            poll_interval_ms: task.poll_interval_ms.map(to_i64).transpose()?,
            attempt: task.attempt,
            version: to_i64(task.version.0)?,
            error_result_fails: task.error_result_fails,
            input_methods: to_json(&task.input_methods)?,
        })
    }
}

/// Decodes a row selected with [`COLUMNS`].
fn read_record(row: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    let arguments: String = row.get(3)?;
    let state: String = row.get(4)?;
    Ok(TaskRecord {
        id: TaskId::from(row.get::<_, String>(0)?),
        owner: Principal::new(row.get::<_, String>(1)?),
        tool: row.get(2)?,
        arguments: from_json(3, &arguments)?,
        state: from_json::<TaskState>(4, &state)?,
        status_message: row.get(5)?,
        created_at: Timestamp(row.get(6)?),
        updated_at: Timestamp(row.get(7)?),
        ttl_ms: row
            .get::<_, Option<i64>>(8)?
            .map(|n| to_u64(8, n))
            .transpose()?,
        poll_interval_ms: row
            .get::<_, Option<i64>>(9)?
            .map(|n| to_u64(9, n))
            .transpose()?,
        attempt: row.get(10)?,
        version: Version(to_u64(11, row.get(11)?)?),
        error_result_fails: row.get(12)?,
        input_methods: from_json(13, &row.get::<_, String>(13)?)?,
    })
}

/// Collects rows, stopping at the first error.
fn collect(
    rows: impl Iterator<Item = rusqlite::Result<TaskRecord>>,
) -> rusqlite::Result<Vec<TaskRecord>> {
    rows.collect()
}

/// Whether `err` is the primary key (the id) being taken already.
fn is_duplicate_key(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_extended_error_code(),
        Some(rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY | rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE)
    )
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> rusqlite::Result<String> {
    serde_json::to_string(value)
        .map_err(|err| rusqlite::Error::ToSqlConversionFailure(Box::new(err)))
}

fn from_json<T: serde::de::DeserializeOwned>(column: usize, text: &str) -> rusqlite::Result<T> {
    serde_json::from_str(text)
        .map_err(|err| rusqlite::Error::FromSqlConversionFailure(column, Type::Text, Box::new(err)))
}

/// SQLite integers are signed 64-bit; a larger `u64` cannot be stored.
fn to_i64(n: u64) -> rusqlite::Result<i64> {
    i64::try_from(n).map_err(|err| rusqlite::Error::ToSqlConversionFailure(Box::new(err)))
}

fn to_u64(column: usize, n: i64) -> rusqlite::Result<u64> {
    u64::try_from(n).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(column, n))
}
