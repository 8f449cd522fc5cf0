//! The webhooks' outbox: each delivery not yet made, in its own SQLite file (WAL,
//! `synchronous=FULL`), so that a delivery survives a restart of the server whatever store
//! keeps the tasks. One row per delivery, keyed so that an event is queued once per webhook;
//! a row goes when its POST is answered 2xx (or it is given up).
//!
//! A separate file rather than the task store: deliveries are the server's business, not
//! the engine's, and the store seam (with its two backends and a concurrent change to it)
//! stays as it is.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, params};

/// A queued delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Delivery {
    pub(crate) id: i64,
    pub(crate) url: String,
    pub(crate) event: String,
    pub(crate) body: String,
    /// Attempts made so far.
    pub(crate) attempts: u32,
}

/// The outbox file, behind one connection (a std mutex, used from the blocking pool).
#[derive(Clone)]
pub(crate) struct Outbox {
    conn: Arc<Mutex<Connection>>,
}

/// Its failures, as text for the log.
pub(crate) type OutboxError = String;

impl Outbox {
    /// Opens (or creates) the outbox at `path`.
    pub(crate) fn open(path: &Path) -> Result<Outbox, OutboxError> {
        if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|err| format!("creating {}: {err}", parent.display()))?;
        }
        let conn = Connection::open(path).map_err(|err| format!("opening {}: {err}", path.display()))?;
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
            .and_then(|()| conn.pragma_update(None, "synchronous", "FULL"))
            .and_then(|()| {
                conn.execute_batch(
                    "CREATE TABLE IF NOT EXISTS deliveries (
                         -- AUTOINCREMENT: a delivery id is never reused (receivers may dedupe by it)
                         id       INTEGER PRIMARY KEY AUTOINCREMENT,
                         -- webhook url, task, event and the task's version: an event once per webhook
                         dedupe   TEXT    NOT NULL UNIQUE,
                         url      TEXT    NOT NULL,
                         event    TEXT    NOT NULL,
                         body     TEXT    NOT NULL,
                         attempts INTEGER NOT NULL DEFAULT 0,
                         next_at  INTEGER NOT NULL,
                         last_error TEXT
                     ) STRICT;
                     CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_at);",
                )
            })
            .map_err(|err| format!("preparing {}: {err}", path.display()))?;
        Ok(Outbox { conn: Arc::new(Mutex::new(conn)) })
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, OutboxError> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&conn).map_err(|err| err.to_string())
        })
        .await
        .map_err(|err| err.to_string())?
    }

    /// Queues deliveries (`dedupe`, `url`, `event`, `body`) due at `now`, in one durable
    /// transaction; one still queued under the same `dedupe` is not queued twice.
    pub(crate) async fn enqueue(&self, rows: Vec<(String, String, String, String)>, now: i64) -> Result<(), OutboxError> {
        self.with(move |conn| {
            let tx = conn.unchecked_transaction()?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR IGNORE INTO deliveries (dedupe, url, event, body, next_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for (dedupe, url, event, body) in &rows {
                    insert.execute(params![dedupe, url, event, body, now])?;
                }
            }
            tx.commit()
        })
        .await
    }

    /// Up to `limit` deliveries due at `now`, the longest due first.
    pub(crate) async fn due(&self, now: i64, limit: u32) -> Result<Vec<Delivery>, OutboxError> {
        self.with(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id, url, event, body, attempts FROM deliveries WHERE next_at <= ?1 ORDER BY next_at, id LIMIT ?2",
            )?;
            stmt.query_map(params![now, limit], |row| {
                Ok(Delivery {
                    id: row.get(0)?,
                    url: row.get(1)?,
                    event: row.get(2)?,
                    body: row.get(3)?,
                    attempts: row.get(4)?,
                })
            })?
            .collect()
        })
        .await
    }

    /// When the next delivery is due, if any is queued.
    pub(crate) async fn next_due(&self) -> Result<Option<i64>, OutboxError> {
        self.with(|conn| conn.query_row("SELECT MIN(next_at) FROM deliveries", [], |row| row.get(0)).optional().map(Option::flatten))
            .await
    }

    /// Removes delivery `id` (made, or given up).
    pub(crate) async fn remove(&self, id: i64) -> Result<(), OutboxError> {
        self.with(move |conn| conn.execute("DELETE FROM deliveries WHERE id = ?1", [id]).map(|_| ())).await
    }

    /// Records a failed attempt of delivery `id`: tried again at `next_at`.
    pub(crate) async fn retry_at(&self, id: i64, next_at: i64, error: String) -> Result<(), OutboxError> {
        self.with(move |conn| {
            conn.execute(
                "UPDATE deliveries SET attempts = attempts + 1, next_at = ?2, last_error = ?3 WHERE id = ?1",
                params![id, next_at, error],
            )
            .map(|_| ())
        })
        .await
    }
}
