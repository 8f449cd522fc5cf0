//! [`WorkStore`] for [`PostgresStore`]: a task's process group and checkpoint (in its row),
//! the process groups kept by key (`kept_groups`), and each task's event log (`task_events`,
//! `task_event_heads`, migration 0014).

use async_trait::async_trait;
use tokio_postgres::types::ToSql;

use mcp_tasks_engine::{
    EventLimits, EventPage, KeptGroup, LoggedEvent, NewEvent, ProcessGroup, StoreError, TaskId, Timestamp, WorkStore,
};

use crate::conn::Session;

use crate::outage::backend;
use crate::sql;
use crate::store::PostgresStore;

#[async_trait]
impl WorkStore for PostgresStore {
    async fn set_process_group(&self, id: &TaskId, group: &ProcessGroup) -> Result<(), StoreError> {
        self.observed(async {
            let start = i64::try_from(group.start_time).map_err(backend)?;
            let client = self.client().await?;
            let statement = client.prepare_cached(sql::SET_PROCESS_GROUP).await.map_err(backend)?;
            client
                .execute(&statement, &[&i64::from(group.pgid), &start, &id.as_str()])
                .await
                .map(|_| ())
                .map_err(backend)
        })
        .await
    }

    async fn process_group(&self, id: &TaskId) -> Result<Option<ProcessGroup>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::PROCESS_GROUP).await.map_err(backend)?;
        let row = client.query_opt(&statement, &[&id.as_str()]).await.map_err(backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let pgid: Option<i64> = row.try_get(0).map_err(backend)?;
        let start: Option<i64> = row.try_get(1).map_err(backend)?;
        Ok(pgid
            .and_then(|pgid| u32::try_from(pgid).ok())
            .zip(start.and_then(|start| u64::try_from(start).ok()))
            .map(|(pgid, start_time)| ProcessGroup { pgid, start_time }))
    }

    async fn set_kept_group(&self, key: &str, kept: Option<&KeptGroup>) -> Result<(), StoreError> {
        self.observed(async {
            let client = self.client().await?;
            match kept {
                Some(kept) => {
                    let start = i64::try_from(kept.group.start_time).map_err(backend)?;
                    let keeper_start = i64::try_from(kept.keeper_start).map_err(backend)?;
                    let statement = client.prepare_cached(sql::SET_KEPT_GROUP).await.map_err(backend)?;
                    let params: [&(dyn ToSql + Sync); 5] =
                        [&key, &i64::from(kept.group.pgid), &start, &i64::from(kept.keeper_pid), &keeper_start];
                    client.execute(&statement, &params).await
                }
                None => {
                    let statement = client.prepare_cached(sql::FORGET_KEPT_GROUP).await.map_err(backend)?;
                    client.execute(&statement, &[&key]).await
                }
            }
            .map(|_| ())
            .map_err(backend)
        })
        .await
    }

    async fn kept_group(&self, key: &str) -> Result<Option<KeptGroup>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::KEPT_GROUP).await.map_err(backend)?;
        let row = client.query_opt(&statement, &[&key]).await.map_err(backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let column = |index: usize| row.try_get::<_, i64>(index).map_err(backend);
        let (pgid, start, keeper, keeper_start) = (column(0)?, column(1)?, column(2)?, column(3)?);
        Ok((|| {
            Some(KeptGroup {
                group: ProcessGroup { pgid: u32::try_from(pgid).ok()?, start_time: u64::try_from(start).ok()? },
                keeper_pid: u32::try_from(keeper).ok()?,
                keeper_start: u64::try_from(keeper_start).ok()?,
            })
        })())
    }

    async fn set_checkpoint(&self, id: &TaskId, attempt: u32, checkpoint: &serde_json::Value) -> Result<bool, StoreError> {
        let text = checkpoint.to_string();
        self.execute(sql::SET_CHECKPOINT, &[&text, &id.as_str(), &i64::from(attempt)])
            .await
            .map(|written| written == 1)
    }

    async fn checkpoint(&self, id: &TaskId) -> Result<Option<serde_json::Value>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::CHECKPOINT).await.map_err(backend)?;
        let row = client.query_opt(&statement, &[&id.as_str()]).await.map_err(backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let text: Option<String> = row.try_get(0).map_err(backend)?;
        text.map(|text| serde_json::from_str(&text).map_err(backend)).transpose()
    }

    /// One statement appends (`APPEND_EVENTS`); a second prunes, when the head says the log
    /// is past a limit (`PRUNE_EVENTS`).
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
        let kinds: Vec<&str> = events.iter().map(|event| event.kind.as_str()).collect();
        let payloads: Vec<String> = events.iter().map(|event| event.payload.to_string()).collect();
        let times: Vec<i64> = events.iter().map(|event| event.at.0).collect();
        let count = i64::try_from(events.len()).unwrap_or(i64::MAX);
        let bytes: i64 = payloads.iter().map(|payload| i64::try_from(payload.len()).unwrap_or(i64::MAX)).sum();
        let head = self
            .observed(async {
                let client = self.client().await?;
                let append = client.prepare_cached(sql::APPEND_EVENTS).await.map_err(backend)?;
                client
                    .query_opt(&append, &[&id.as_str(), &i64::from(attempt), &count, &bytes, &kinds, &payloads, &times])
                    .await
                    .map_err(backend)
            })
            .await?;
        let Some(head) = head else { return Ok(None) };
        let (first, next, earliest, kept): (i64, i64, i64, i64) = (
            head.try_get(0).map_err(backend)?,
            head.try_get(1).map_err(backend)?,
            head.try_get(2).map_err(backend)?,
            head.try_get(3).map_err(backend)?,
        );
        let (max_events, max_bytes) =
            (i64::try_from(limits.events.max(1)).unwrap_or(i64::MAX), i64::try_from(limits.bytes).unwrap_or(i64::MAX));
        if next - earliest.max(1) > max_events || kept > max_bytes {
            self.execute(sql::PRUNE_EVENTS, &[&id.as_str(), &max_events, &max_bytes]).await?;
        }
        Ok(u64::try_from(first).ok())
    }

    async fn logged_events(&self, id: &TaskId, after: u64, limit: u32) -> Result<EventPage, StoreError> {
        let client = self.client().await?;
        let head = client.prepare_cached(sql::EVENT_HEAD).await.map_err(backend)?;
        let Some(head) = client.query_opt(&head, &[&id.as_str()]).await.map_err(backend)? else {
            return Ok(EventPage { events: Vec::new(), earliest: 0, next: 1 });
        };
        let (next, earliest): (i64, i64) = (head.try_get(0).map_err(backend)?, head.try_get(1).map_err(backend)?);
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let read = client.prepare_cached(sql::EVENTS_AFTER).await.map_err(backend)?;
        let rows = client.query(&read, &[&id.as_str(), &after, &i64::from(limit)]).await.map_err(backend)?;
        let events = rows
            .iter()
            .map(|row| {
                let payload: String = row.try_get(2).map_err(backend)?;
                Ok(LoggedEvent {
                    seq: u64::try_from(row.try_get::<_, i64>(0).map_err(backend)?).unwrap_or(0),
                    kind: row.try_get(1).map_err(backend)?,
                    payload: serde_json::from_str(&payload).map_err(backend)?,
                    at: Timestamp(row.try_get(3).map_err(backend)?),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(EventPage { events, earliest: u64::try_from(earliest).unwrap_or(0), next: u64::try_from(next).unwrap_or(1) })
    }
}
