//! [`WorkStore`] for [`SqliteStore`]: what the running work keeps beside its task (a task's
//! process group and checkpoint, in its row), the process groups kept by key
//! (`kept_groups`), and each task's event log ([`crate::events`]).

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use mcp_tasks_engine::{EventLimits, EventPage, KeptGroup, NewEvent, ProcessGroup, StoreError, TaskId, WorkStore};

use crate::rows::to_i64;
use crate::sql::UNFINISHED;
use crate::store::SqliteStore;

#[async_trait]
impl WorkStore for SqliteStore {
    async fn set_process_group(&self, id: &TaskId, group: &ProcessGroup) -> Result<(), StoreError> {
        let id = id.as_str().to_owned();
        let pgid = i64::from(group.pgid);
        let start = to_i64(group.start_time).map_err(StoreError::backend)?;
        self.write(move |conn| {
            conn.prepare_cached("UPDATE tasks SET process_group = ?1, process_start = ?2 WHERE id = ?3")
                .and_then(|mut stmt| stmt.execute(params![pgid, start, id]))
                .map(|_| ())
                .map_err(StoreError::backend)
        })
        .await
    }

    async fn process_group(&self, id: &TaskId) -> Result<Option<ProcessGroup>, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let found: Option<(Option<i64>, Option<i64>)> = conn
                .prepare_cached("SELECT process_group, process_start FROM tasks WHERE id = ?1")
                .and_then(|mut stmt| stmt.query_row([id], |row| Ok((row.get(0)?, row.get(1)?))).optional())
                .map_err(StoreError::backend)?;
            Ok(match found {
                Some((Some(pgid), Some(start))) => u32::try_from(pgid)
                    .ok()
                    .zip(u64::try_from(start).ok())
                    .map(|(pgid, start_time)| ProcessGroup { pgid, start_time }),
                _ => None,
            })
        })
        .await
    }

    async fn set_kept_group(&self, key: &str, kept: Option<&KeptGroup>) -> Result<(), StoreError> {
        let key = key.to_owned();
        let row = match kept {
            Some(kept) => Some((
                i64::from(kept.group.pgid),
                to_i64(kept.group.start_time).map_err(StoreError::backend)?,
                i64::from(kept.keeper_pid),
                to_i64(kept.keeper_start).map_err(StoreError::backend)?,
            )),
            None => None,
        };
        self.write(move |conn| {
            let done = match row {
                Some((pgid, start, keeper, keeper_start)) => conn
                    .prepare_cached(
                        "INSERT INTO kept_groups (key, process_group, process_start, keeper_pid, keeper_start) \
                         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key) DO UPDATE SET process_group = excluded.process_group, \
                         process_start = excluded.process_start, keeper_pid = excluded.keeper_pid, keeper_start = excluded.keeper_start",
                    )
                    .and_then(|mut stmt| stmt.execute(params![key, pgid, start, keeper, keeper_start])),
                None => conn.prepare_cached("DELETE FROM kept_groups WHERE key = ?1").and_then(|mut stmt| stmt.execute([key])),
            };
            done.map(|_| ()).map_err(StoreError::backend)
        })
        .await
    }

    async fn kept_group(&self, key: &str) -> Result<Option<KeptGroup>, StoreError> {
        let key = key.to_owned();
        self.read(move |conn| {
            let found: Option<(i64, i64, i64, i64)> = conn
                .prepare_cached("SELECT process_group, process_start, keeper_pid, keeper_start FROM kept_groups WHERE key = ?1")
                .and_then(|mut stmt| stmt.query_row([key], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))).optional())
                .map_err(StoreError::backend)?;
            Ok(found.and_then(|(pgid, start, keeper, keeper_start)| {
                Some(KeptGroup {
                    group: ProcessGroup { pgid: u32::try_from(pgid).ok()?, start_time: u64::try_from(start).ok()? },
                    keeper_pid: u32::try_from(keeper).ok()?,
                    keeper_start: u64::try_from(keeper_start).ok()?,
                })
            }))
        })
        .await
    }

    async fn set_checkpoint(&self, id: &TaskId, attempt: u32, checkpoint: &serde_json::Value) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let text = checkpoint.to_string();
        self.write(move |conn| {
            conn.prepare_cached(&format!(
                "UPDATE tasks SET checkpoint = ?1 WHERE id = ?2 AND attempt = ?3 AND status IN {UNFINISHED}"
            ))
            .and_then(|mut stmt| stmt.execute(params![text, id, i64::from(attempt)]))
            .map(|written| written == 1)
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn checkpoint(&self, id: &TaskId) -> Result<Option<serde_json::Value>, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let found: Option<Option<String>> = conn
                .prepare_cached("SELECT checkpoint FROM tasks WHERE id = ?1")
                .and_then(|mut stmt| stmt.query_row([id], |row| row.get(0)).optional())
                .map_err(StoreError::backend)?;
            found.flatten().map(|text| serde_json::from_str(&text).map_err(StoreError::backend)).transpose()
        })
        .await
    }

    /// One write of the writer thread: the fence, the log's head, the events, the pruning.
    async fn append_events(
        &self,
        id: &TaskId,
        attempt: u32,
        events: &[NewEvent],
        limits: EventLimits,
    ) -> Result<Option<u64>, StoreError> {
        if events.is_empty() {
            return Ok(None);
        }
        let id = id.as_str().to_owned();
        let rows = crate::events::rows_of(events);
        self.write(move |conn| crate::events::append(conn, &id, attempt, &rows, limits).map_err(StoreError::backend)).await
    }

    async fn logged_events(&self, id: &TaskId, after: u64, limit: u32) -> Result<EventPage, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| crate::events::page(conn, &id, after, limit).map_err(StoreError::backend)).await
    }
}
