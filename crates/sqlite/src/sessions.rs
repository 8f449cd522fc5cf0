//! [`SessionStore`] for [`SqliteStore`]: the 2025-11-25 HTTP session records in their table
//! (`sessions`, migration 0015), so that any process serving HTTP on the file finds a session
//! another one made, and a DELETE through one ends it for all.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use mcp_tasks_engine::{Principal, SessionRecord, SessionStore, StoreError, TaskId, Timestamp};

use crate::store::SqliteStore;

#[async_trait]
impl SessionStore for SqliteStore {
    async fn put_session(&self, session: &SessionRecord) -> Result<(), StoreError> {
        let (id, owner, state, last_used) =
            (session.id.clone(), session.owner.as_str().to_owned(), session.state.to_string(), session.last_used.0);
        self.write(move |conn| {
            // A session stored again keeps the tasks it created.
            conn.prepare_cached(
                "INSERT INTO sessions (id, owner, state, last_used) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, state = excluded.state, last_used = excluded.last_used",
            )
            .and_then(|mut stmt| stmt.execute(params![id, owner, state, last_used]))
            .map(|_| ())
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn session(&self, id: &str, owner: &Principal) -> Result<Option<SessionRecord>, StoreError> {
        let (id, owner) = (id.to_owned(), owner.clone());
        self.read(move |conn| {
            let row: Option<(String, String, i64)> = conn
                .prepare_cached("SELECT state, created, last_used FROM sessions WHERE id = ?1 AND owner = ?2")
                .and_then(|mut stmt| {
                    stmt.query_row(params![id, owner.as_str()], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?))).optional()
                })
                .map_err(StoreError::backend)?;
            let Some((state, created, last_used)) = row else { return Ok(None) };
            let created: Vec<String> = serde_json::from_str(&created).map_err(StoreError::backend)?;
            Ok(Some(SessionRecord {
                id,
                owner,
                state: serde_json::from_str(&state).map_err(StoreError::backend)?,
                created: created.into_iter().map(TaskId::from).collect(),
                last_used: Timestamp(last_used),
            }))
        })
        .await
    }

    async fn add_session_task(&self, id: &str, task: &TaskId) -> Result<(), StoreError> {
        let (id, task) = (id.to_owned(), task.as_str().to_owned());
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE sessions SET created = json_insert(created, '$[#]', ?2) WHERE id = ?1 \
                 AND NOT EXISTS (SELECT 1 FROM json_each(sessions.created) WHERE value = ?2)",
            )
            .and_then(|mut stmt| stmt.execute(params![id, task]))
            .map(|_| ())
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn touch_sessions(&self, ids: &[String], now: Timestamp) -> Result<Vec<String>, StoreError> {
        let ids = ids.to_vec();
        self.write(move |conn| {
            let mut stored = Vec::new();
            let mut touch = conn
                .prepare_cached("UPDATE sessions SET last_used = max(last_used, ?2) WHERE id = ?1")
                .map_err(StoreError::backend)?;
            for id in ids {
                if touch.execute(params![id, now.0]).map_err(StoreError::backend)? > 0 {
                    stored.push(id);
                }
            }
            Ok(stored)
        })
        .await
    }

    async fn end_session(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_owned();
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM sessions WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute([id]))
                .map(|ended| ended > 0)
                .map_err(StoreError::backend)
        })
        .await
    }

    async fn prune_sessions(&self, idle_before: Timestamp, limit: u32) -> Result<u64, StoreError> {
        self.write(move |conn| {
            conn.prepare_cached(
                "DELETE FROM sessions WHERE id IN \
                 (SELECT id FROM sessions WHERE last_used < ?1 ORDER BY last_used LIMIT ?2)",
            )
            .and_then(|mut stmt| stmt.execute(params![idle_before.0, i64::from(limit)]))
            .map(|pruned| pruned as u64)
            .map_err(StoreError::backend)
        })
        .await
    }
}
