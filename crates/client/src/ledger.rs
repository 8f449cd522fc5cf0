//! [`Ledger`]: a local SQLite file where a host records every task it starts, so that after
//! a crash (or a `--detach`) it knows which tasks are still out there and where they live.
//!
//! The ledger is the host's memory, not the server's: it holds what the host last learned
//! (status, time), never more. Arguments are not kept, only their digest
//! ([`arguments_digest`]: SHA-256 of their canonical JSON), enough to tell two calls apart
//! without writing secrets or large inputs to disk. A task is recorded as soon as its `CreateTaskResult` arrives,
//! before any wait starts, and its status is updated whenever the host learns one. Tasks
//! whose last known status is not terminal are [`Ledger::pending`].
//!
//! Like the task store of `mcp-tasks serve`, rusqlite runs on Tokio's blocking pool, on one
//! connection behind a std mutex (never held across an `.await`), in WAL mode with a busy
//! timeout, so that several host processes can share one ledger file.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_tasks_client::Client;
//! use mcp_tasks_client::ledger::{Endpoint, Ledger};
//! let ledger = Ledger::open(&Ledger::default_path().ok_or("no data directory")?)?;
//! let url = "http://127.0.0.1:8765/mcp";
//! let client = Client::connect_http(url, None).await?;
//! let arguments = serde_json::json!({"scene": 1});
//! let task = client.call_tool_as_task("render", arguments.clone(), None).await?;
//! let endpoint = Endpoint::Url(url.to_owned());
//! ledger.record(&endpoint, task.id(), "render", &arguments, task.last_seen().map(|t| t.status)).await?;
//! // … after a crash, in another process:
//! for entry in ledger.pending().await? {
//!     println!("{} on {} ({})", entry.task_id, entry.endpoint, entry.status);
//! }
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension as _, Row, params};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::types::TaskStatus;

mod host;

pub use host::{Submission, new_idempotency_key};
use mcp_tasks_protocol::era::Era;

/// How long a write waits for another process's lock on the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema version this build writes (`PRAGMA user_version`). Version 1 kept the
/// arguments in full; [`migrate_v1`] turns them into digests. Version 2 had no era;
/// [`migrate_v2`] adds the column, unknown (NULL) for the tasks recorded before. Version 3
/// also adds the calls sent but not yet answered (`submissions`), the input requests
/// answered (`answers`, by key) and the kept results (`results`).
const SCHEMA_VERSION: i64 = 3;

/// The largest result [`Ledger::keep_result`] keeps, as JSON bytes.
pub const MAX_KEPT_RESULT: usize = 1024 * 1024;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    endpoint_kind TEXT NOT NULL CHECK (endpoint_kind IN ('url', 'cmd')),
    endpoint TEXT NOT NULL,
    task_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments_digest TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    status TEXT NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    era TEXT,
    PRIMARY KEY (endpoint_kind, endpoint, task_id)
);
CREATE INDEX IF NOT EXISTS tasks_by_id ON tasks (task_id);
CREATE TABLE IF NOT EXISTS submissions (
    key TEXT PRIMARY KEY,
    endpoint_kind TEXT NOT NULL CHECK (endpoint_kind IN ('url', 'cmd')),
    endpoint TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS answers (
    endpoint_kind TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    task_id TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (endpoint_kind, endpoint, task_id, key)
);
CREATE TABLE IF NOT EXISTS results (
    endpoint_kind TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    task_id TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (endpoint_kind, endpoint, task_id)
);
";

/// The columns every read selects, in the order [`read_entry`] decodes them.
const COLUMNS: &str = "endpoint_kind, endpoint, task_id, tool, arguments_digest, created_at_ms, status, last_seen_ms, era";

/// Where a task lives: the server to reconnect to.
///
/// No token is recorded (the ledger is not a secret store): a host passes it again.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// A Streamable HTTP endpoint, e.g. `http://127.0.0.1:8765/mcp`.
    Url(String),
    /// A stdio server's command line, as given to [`crate::ClientBuilder::connect_command`]
    /// (a server whose tasks outlive the process, e.g. `mcp-tasks serve --stdio`).
    Command(String),
}

impl Endpoint {
    fn kind(&self) -> &'static str {
        match self {
            Endpoint::Url(_) => "url",
            Endpoint::Command(_) => "cmd",
        }
    }

    /// The URL or the command line.
    pub fn address(&self) -> &str {
        match self {
            Endpoint::Url(address) | Endpoint::Command(address) => address,
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Url(url) => write!(f, "--url {url}"),
            Endpoint::Command(command) => write!(f, "--cmd {command:?}"),
        }
    }
}

/// One recorded task.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerEntry {
    /// Where the task lives.
    pub endpoint: Endpoint,
    /// The task id the server gave.
    pub task_id: String,
    /// The tool called.
    pub tool: String,
    /// [`arguments_digest`] of the arguments it was called with.
    pub arguments_digest: String,
    /// When the host recorded it (just after the server created it).
    pub created_at: SystemTime,
    /// The last status the host learned.
    pub status: TaskStatus,
    /// When the host last learned the task's status.
    pub last_seen_at: SystemTime,
    /// The protocol revision the task was created in; `None` when not recorded (by
    /// [`Ledger::record`], or before the ledger kept it).
    pub era: Option<Era>,
}

/// A ledger that could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The file or its directory could not be created or opened, or a statement failed.
    #[error("ledger {path}: {source}")]
    Database {
        /// The ledger file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The file was written by a newer build.
    #[error("ledger {path} has schema version {found}, newer than this build's {SCHEMA_VERSION}")]
    NewerSchema {
        /// The ledger file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
    },
}

/// The local record of the tasks a host started. Cheap to clone: clones share one
/// connection.
#[derive(Clone)]
pub struct Ledger {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger").field("path", &self.inner.path).finish_non_exhaustive()
    }
}

impl Ledger {
    /// `<platform data dir>/mcp-tasks/ledger.sqlite3` (e.g. `~/.local/share/mcp-tasks/`),
    /// or `None` when the platform has no data directory.
    pub fn default_path() -> Option<PathBuf> {
        dirs::data_dir().map(|dir| dir.join("mcp-tasks").join("ledger.sqlite3"))
    }

    /// Opens (or creates) the ledger at `path`, creating missing parent directories.
    ///
    /// Blocking file I/O: call it at start-up.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the directory or file cannot be created or opened as a
    /// database; [`LedgerError::NewerSchema`] for a file of a newer build.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        let fail = |source: Box<dyn std::error::Error + Send + Sync>| LedgerError::Database { path: path.to_owned(), source };
        if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| fail(e.into()))?;
        }
        let mut conn = Connection::open(path).map_err(|e| fail(e.into()))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(e.into()))?;
        // WAL lets a `tasks pending` read while a waiting host writes; NORMAL is enough for
        // a ledger (a commit survives the process being killed; only power loss may lose
        // the last one).
        let _mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)).map_err(|e| fail(e.into()))?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| fail(e.into()))?;
        let found: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(|e| fail(e.into()))?;
        if found > SCHEMA_VERSION {
            return Err(LedgerError::NewerSchema { path: path.to_owned(), found });
        }
        if found < SCHEMA_VERSION {
            upgrade(&mut conn, found).map_err(|e| fail(e.into()))?;
        }
        Ok(Ledger { inner: Arc::new(Inner { conn: Mutex::new(conn), path: path.to_owned() }) })
    }

    /// The file this ledger was opened on.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Records a task the host just created (its status `working` unless `status` says
    /// otherwise), with the [`arguments_digest`] of `arguments` (not the arguments).
    /// Recording it again replaces the entry.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the write fails.
    pub async fn record(
        &self,
        endpoint: &Endpoint,
        task_id: &str,
        tool: &str,
        arguments: &Value,
        status: Option<TaskStatus>,
    ) -> Result<(), LedgerError> {
        self.insert(endpoint, task_id, tool, arguments, status, None).await
    }

    /// [`Ledger::record`], with the protocol revision the task was created in
    /// ([`crate::TaskHandle::era`]), shown by [`LedgerEntry::era`].
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the write fails.
    pub async fn record_in_era(
        &self,
        endpoint: &Endpoint,
        task_id: &str,
        tool: &str,
        arguments: &Value,
        status: Option<TaskStatus>,
        era: Era,
    ) -> Result<(), LedgerError> {
        self.insert(endpoint, task_id, tool, arguments, status, Some(era)).await
    }

    async fn insert(
        &self,
        endpoint: &Endpoint,
        task_id: &str,
        tool: &str,
        arguments: &Value,
        status: Option<TaskStatus>,
        era: Option<Era>,
    ) -> Result<(), LedgerError> {
        let era = era.map(Era::revision);
        let (kind, address) = (endpoint.kind(), endpoint.address().to_owned());
        let (task_id, tool) = (task_id.to_owned(), tool.to_owned());
        let digest = arguments_digest(arguments);
        let status = status.unwrap_or(TaskStatus::Working).as_str();
        let now = millis(SystemTime::now());
        self.call(move |conn| {
            conn.execute(
                "INSERT OR REPLACE INTO tasks
                 (endpoint_kind, endpoint, task_id, tool, arguments_digest, created_at_ms, status, last_seen_ms, era)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?6, ?8)",
                params![kind, address, task_id, tool, digest, now, status, era],
            )
            .map(|_| ())
        })
        .await
    }

    /// Notes the status the host just learned for a recorded task, and when. Returns
    /// whether the ledger had the task (tasks it did not record are left out).
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the write fails.
    pub async fn update_status(&self, endpoint: &Endpoint, task_id: &str, status: TaskStatus) -> Result<bool, LedgerError> {
        let (kind, address, task_id) = (endpoint.kind(), endpoint.address().to_owned(), task_id.to_owned());
        let now = millis(SystemTime::now());
        self.call(move |conn| {
            conn.execute(
                "UPDATE tasks SET status = ?1, last_seen_ms = ?2 WHERE endpoint_kind = ?3 AND endpoint = ?4 AND task_id = ?5",
                params![status.as_str(), now, kind, address, task_id],
            )
            .map(|changed| changed > 0)
        })
        .await
    }

    /// The entry of one task, if recorded.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the read fails.
    pub async fn get(&self, endpoint: &Endpoint, task_id: &str) -> Result<Option<LedgerEntry>, LedgerError> {
        let (kind, address, task_id) = (endpoint.kind(), endpoint.address().to_owned(), task_id.to_owned());
        self.call(move |conn| {
            conn.query_row(
                &format!("SELECT {COLUMNS} FROM tasks WHERE endpoint_kind = ?1 AND endpoint = ?2 AND task_id = ?3"),
                params![kind, address, task_id],
                read_entry,
            )
            .optional()
        })
        .await
    }

    /// Every entry with this task id, on whichever server (ids are unique per server
    /// only), the most recent first.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the read fails.
    pub async fn find(&self, task_id: &str) -> Result<Vec<LedgerEntry>, LedgerError> {
        let task_id = task_id.to_owned();
        self.call(move |conn| {
            let mut statement =
                conn.prepare(&format!("SELECT {COLUMNS} FROM tasks WHERE task_id = ?1 ORDER BY created_at_ms DESC"))?;
            statement.query_map(params![task_id], read_entry)?.collect()
        })
        .await
    }

    /// The tasks not known to be terminal (`working` or `input_required` when last
    /// seen), oldest first.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the read fails.
    pub async fn pending(&self) -> Result<Vec<LedgerEntry>, LedgerError> {
        self.call(move |conn| {
            let mut statement = conn.prepare(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE status NOT IN ('completed', 'failed', 'cancelled')
                 ORDER BY created_at_ms, task_id"
            ))?;
            statement.query_map([], read_entry)?.collect()
        })
        .await
    }

    /// The `limit` most recently started tasks (of `endpoint` only, if given), whatever their
    /// status, newest first.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the read fails.
    pub async fn recent(&self, limit: u32, endpoint: Option<&Endpoint>) -> Result<Vec<LedgerEntry>, LedgerError> {
        let endpoint = endpoint.map(|endpoint| (endpoint.kind(), endpoint.address().to_owned()));
        self.call(move |conn| {
            let (kind, address) = endpoint.unzip();
            let mut statement = conn.prepare(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE ?1 IS NULL OR (endpoint_kind = ?1 AND endpoint = ?2)
                 ORDER BY created_at_ms DESC, task_id LIMIT ?3"
            ))?;
            statement.query_map(params![kind, address, limit], read_entry)?.collect()
        })
        .await
    }

    /// Removes a task from the ledger (e.g. one its server no longer knows). Returns
    /// whether it was there.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the write fails.
    pub async fn forget(&self, endpoint: &Endpoint, task_id: &str) -> Result<bool, LedgerError> {
        let (kind, address, task_id) = (endpoint.kind(), endpoint.address().to_owned(), task_id.to_owned());
        self.call(move |conn| {
            conn.execute(
                "DELETE FROM tasks WHERE endpoint_kind = ?1 AND endpoint = ?2 AND task_id = ?3",
                params![kind, address, task_id],
            )
            .map(|changed| changed > 0)
        })
        .await
    }

    /// Runs `f` on the connection, on the blocking pool.
    async fn call<T, F>(&self, f: F) -> Result<T, LedgerError>
    where
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let path = inner.path.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let mut conn = inner.conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut conn)
        })
        .await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(LedgerError::Database { path, source: e.into() }),
            Err(e) => Err(LedgerError::Database { path, source: e.into() }),
        }
    }
}

/// The SHA-256, in lower-case hex, of the canonical JSON of `arguments`: object keys sorted
/// by their UTF-8 bytes, no whitespace, strings and numbers as `serde_json` writes them. Equal
/// JSON values (whatever their key order) have equal digests.
pub fn arguments_digest(arguments: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(arguments, &mut canonical);
    let digest = Sha256::digest(canonical.as_bytes());
    digest.iter().fold(String::with_capacity(64), |mut hex, byte| {
        hex.push_str(&format!("{byte:02x}"));
        hex
    })
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Brings a ledger of schema version `found` (0: a new file) to [`SCHEMA_VERSION`], in one
/// transaction.
fn upgrade(conn: &mut Connection, found: i64) -> rusqlite::Result<()> {
    if found == 1 {
        // The arguments being dropped may hold secrets: overwrite them, do not just free them.
        conn.pragma_update(None, "secure_delete", "ON")?;
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    if found == 1 {
        migrate_v1(&tx)?;
    }
    if (1..=2).contains(&found) {
        migrate_v2(&tx)?;
    }
    tx.execute_batch(&format!("{SCHEMA} PRAGMA user_version = {SCHEMA_VERSION};"))?;
    tx.commit()
}

/// Version 1 to 2: each row's arguments become their digest, and the arguments column goes.
fn migrate_v1(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch("ALTER TABLE tasks ADD COLUMN arguments_digest TEXT NOT NULL DEFAULT ''")?;
    let rows: Vec<(i64, String)> = {
        let mut statement = tx.prepare("SELECT rowid, arguments FROM tasks")?;
        statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<rusqlite::Result<_>>()?
    };
    for (rowid, arguments) in rows {
        let arguments = serde_json::from_str(&arguments).unwrap_or(Value::String(arguments));
        tx.execute("UPDATE tasks SET arguments_digest = ?1 WHERE rowid = ?2", params![arguments_digest(&arguments), rowid])?;
    }
    tx.execute_batch("ALTER TABLE tasks DROP COLUMN arguments")
}

/// Version 2 to 3: the era column (NULL, unknown, for the tasks already recorded). Nothing
/// else changes.
fn migrate_v2(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch("ALTER TABLE tasks ADD COLUMN era TEXT")
}

fn read_entry(row: &Row<'_>) -> rusqlite::Result<LedgerEntry> {
    let kind: String = row.get(0)?;
    let address: String = row.get(1)?;
    let endpoint = if kind == "cmd" { Endpoint::Command(address) } else { Endpoint::Url(address) };
    let status: String = row.get(6)?;
    let status = serde_json::from_value(Value::String(status.clone())).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, format!("status {status:?}: {e}").into())
    })?;
    Ok(LedgerEntry {
        endpoint,
        task_id: row.get(2)?,
        tool: row.get(3)?,
        arguments_digest: row.get(4)?,
        created_at: from_millis(row.get(5)?),
        status,
        last_seen_at: from_millis(row.get(7)?),
        era: row.get::<_, Option<String>>(8)?.as_deref().and_then(era),
    })
}

/// The era of a revision as the ledger writes it (another is unknown: `None`).
fn era(revision: &str) -> Option<Era> {
    [Era::Legacy, Era::Modern].into_iter().find(|era| era.revision() == revision)
}

fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn from_millis(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn records_updates_and_lists_pending_tasks_across_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("ledger.sqlite3");
        let ledger = Ledger::open(&path).unwrap();
        let url = Endpoint::Url("http://127.0.0.1:1/mcp".into());
        let cmd = Endpoint::Command("mcp-tasks serve --stdio".into());
        ledger.record_in_era(&url, "t1", "slow", &serde_json::json!({"seconds": 2}), None, Era::Modern).await.unwrap();
        ledger.record(&cmd, "t1", "echo", &Value::Null, Some(TaskStatus::InputRequired)).await.unwrap();
        ledger.record(&url, "t2", "slow", &Value::Null, None).await.unwrap();
        assert!(ledger.update_status(&url, "t2", TaskStatus::Completed).await.unwrap());
        assert!(!ledger.update_status(&url, "unknown", TaskStatus::Completed).await.unwrap());
        drop(ledger);

        let ledger = Ledger::open(&path).unwrap();
        let pending = ledger.pending().await.unwrap();
        let ids: Vec<(&str, &Endpoint)> = pending.iter().map(|e| (e.task_id.as_str(), &e.endpoint)).collect();
        assert_eq!(ids, [("t1", &url), ("t1", &cmd)]);
        assert_eq!(pending[0].arguments_digest, arguments_digest(&serde_json::json!({"seconds": 2})));
        assert_eq!(pending[1].arguments_digest, arguments_digest(&Value::Null));
        assert_eq!(pending[1].status, TaskStatus::InputRequired);
        assert_eq!((pending[0].era, pending[1].era), (Some(Era::Modern), None), "the era, when recorded");
        assert_eq!(ledger.find("t1").await.unwrap().len(), 2);
        assert_eq!(ledger.get(&url, "t2").await.unwrap().unwrap().status, TaskStatus::Completed);
        assert!(ledger.forget(&cmd, "t1").await.unwrap());
        assert_eq!(ledger.pending().await.unwrap().len(), 1);
    }

    #[test]
    fn the_arguments_digest_ignores_key_order_and_whitespace_but_not_values() {
        let a: Value = serde_json::from_str(r#"{"b": [1, {"y": 2, "x": "é"}], "a": null}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#).unwrap();
        assert_eq!(arguments_digest(&a), arguments_digest(&b));
        assert_ne!(arguments_digest(&a), arguments_digest(&serde_json::json!({"a": null, "b": [1, {"x": "é", "y": 3}]})));
        // SHA-256 of the canonical text `{"seconds":2}`, computed independently
        // (printf '{"seconds":2}' | sha256sum).
        assert_eq!(arguments_digest(&serde_json::json!({"seconds": 2})), SECONDS_2_DIGEST);
        assert_eq!(arguments_digest(&a).len(), 64);
    }

    const SECONDS_2_DIGEST: &str = "10189b390681fcc635b6bf6c55614f4b6989fa2e29cf27e2944d8a9acca3ab96";

    #[tokio::test]
    async fn a_version_1_ledger_is_migrated_to_digests_and_loses_its_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.sqlite3");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE tasks (
                    endpoint_kind TEXT NOT NULL CHECK (endpoint_kind IN ('url', 'cmd')),
                    endpoint TEXT NOT NULL, task_id TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL,
                    created_at_ms INTEGER NOT NULL, status TEXT NOT NULL, last_seen_ms INTEGER NOT NULL,
                    PRIMARY KEY (endpoint_kind, endpoint, task_id));
                 CREATE INDEX tasks_by_id ON tasks (task_id);
                 INSERT INTO tasks VALUES ('url', 'http://127.0.0.1:1/mcp', 'old', 'slow', '{\"seconds\": 2, \"token\": \"s3cret\"}', 5, 'working', 6);
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        }
        let ledger = Ledger::open(&path).unwrap();
        let pending = ledger.pending().await.unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].task_id, "old");
        assert_eq!(pending[0].arguments_digest, arguments_digest(&serde_json::json!({"token": "s3cret", "seconds": 2})));
        assert_eq!(pending[0].created_at, from_millis(5));
        assert_eq!(pending[0].era, None, "no era was recorded in version 1");
        drop(ledger);
        let conn = Connection::open(&path).unwrap();
        let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let columns: Vec<String> = {
            let mut statement = conn.prepare("SELECT name FROM pragma_table_info('tasks')").unwrap();
            statement.query_map([], |row| row.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
        };
        assert!(!columns.iter().any(|c| c == "arguments"), "{columns:?}");
        drop(conn);
        for file in std::fs::read_dir(dir.path()).unwrap() {
            let bytes = std::fs::read(file.unwrap().path()).unwrap();
            assert!(!bytes.windows(6).any(|w| w == b"s3cret"), "the secret argument is gone from the files");
        }
    }

    #[tokio::test]
    async fn a_submission_keeps_its_arguments_until_settled_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.sqlite3");
        let endpoint = Endpoint::Url("http://127.0.0.1:1/mcp".into());
        let key = new_idempotency_key();
        assert!(key.starts_with("mcp-tasks-") && key.len() == "mcp-tasks-".len() + 32, "{key}");
        assert_ne!(key, new_idempotency_key());
        {
            let ledger = Ledger::open(&path).unwrap();
            ledger.submit(&endpoint, &key, "slow", &serde_json::json!({"seconds": 2})).await.unwrap();
        }
        let ledger = Ledger::open(&path).unwrap();
        let submitted = ledger.submission(&key).await.unwrap().unwrap();
        assert_eq!((submitted.tool.as_str(), submitted.arguments.clone()), ("slow", serde_json::json!({"seconds": 2})));
        assert_eq!(ledger.submissions().await.unwrap(), vec![submitted]);
        assert!(ledger.settle(&key).await.unwrap());
        assert!(!ledger.settle(&key).await.unwrap());
        assert!(ledger.submissions().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_kept_result_is_read_back_and_an_oversized_one_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&dir.path().join("ledger.sqlite3")).unwrap();
        let endpoint = Endpoint::Command("mcp-tasks serve --stdio".into());
        let result = serde_json::json!({"content": [{"type": "text", "text": "done"}]});
        assert!(ledger.keep_result(&endpoint, "t1", &result).await.unwrap());
        assert_eq!(ledger.kept_result(&endpoint, "t1").await.unwrap(), Some(result));
        assert_eq!(ledger.kept_result(&endpoint, "t2").await.unwrap(), None);
        let huge = serde_json::json!({"content": [{"type": "text", "text": "x".repeat(MAX_KEPT_RESULT)}]});
        assert!(!ledger.keep_result(&endpoint, "t3", &huge).await.unwrap());
        assert_eq!(ledger.kept_result(&endpoint, "t3").await.unwrap(), None);
    }
}

#[cfg(test)]
mod era_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_version_2_ledger_gains_the_era_column_its_tasks_of_unknown_era() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.sqlite3");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE tasks (
                    endpoint_kind TEXT NOT NULL CHECK (endpoint_kind IN ('url', 'cmd')),
                    endpoint TEXT NOT NULL, task_id TEXT NOT NULL, tool TEXT NOT NULL,
                    arguments_digest TEXT NOT NULL, created_at_ms INTEGER NOT NULL,
                    status TEXT NOT NULL, last_seen_ms INTEGER NOT NULL,
                    PRIMARY KEY (endpoint_kind, endpoint, task_id));
                 CREATE INDEX tasks_by_id ON tasks (task_id);
                 INSERT INTO tasks VALUES ('url', 'http://127.0.0.1:1/mcp', 'old', 'slow', 'd', 5, 'working', 6);
                 PRAGMA user_version = 2;",
            )
            .unwrap();
        }
        let ledger = Ledger::open(&path).unwrap();
        let url = Endpoint::Url("http://127.0.0.1:1/mcp".into());
        ledger.record_in_era(&url, "new", "slow", &Value::Null, None, Era::Legacy).await.unwrap();
        let pending = ledger.pending().await.unwrap();
        let eras: Vec<(&str, Option<Era>)> = pending.iter().map(|e| (e.task_id.as_str(), e.era)).collect();
        assert_eq!(eras, [("old", None), ("new", Some(Era::Legacy))]);
        assert_eq!((pending[0].arguments_digest.as_str(), pending[0].last_seen_at), ("d", from_millis(6)));
        drop(ledger);
        let conn = Connection::open(&path).unwrap();
        let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }
}
