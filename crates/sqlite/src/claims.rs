//! [`ClaimStore`] for [`SqliteStore`]: claims with a lease, the claimed insert under the
//! retention limit (with the outcome of work that ended early), a tool's slots, and the
//! running places, kept in memory ([`LocalPlaces`](mcp_tasks_engine::store::implement::LocalPlaces)):
//! one process owns the file.

use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use mcp_tasks_engine::store::implement::EarlyEnding;
use mcp_tasks_engine::{
    ClaimStore, Inserted, Lease, Origin, Place, PlaceHolder, Principal, RecordStore, RunningLimits, StoreError, TaskId,
    TaskRecord, Timestamp, Update,
};

use crate::records::insert_keyed;
use crate::rows::{NewRow, collect, read_record};
use crate::sql::{COLUMNS, Sql, UNFINISHED};
use crate::store::SqliteStore;
use crate::writer::Tx;

#[async_trait]
impl ClaimStore for SqliteStore {
    fn shared(&self) -> bool {
        // One process owns the file: the writer thread is the only writer.
        false
    }

    async fn insert_claimed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
    ) -> Result<Inserted, StoreError> {
        self.insert_claimed_with(task, lease, max_retained, origin, None).await.map(|(inserted, _)| inserted)
    }

    /// The ending is taken inside the insert's write, on the writer thread: an ending that
    /// comes while the insert waits in the queue (most of a quick tool's, under load) goes
    /// in with it, and the lifecycle is one row written and one commit.
    async fn insert_claimed_early(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        ending: Arc<dyn EarlyEnding>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        self.insert_claimed_with(task, lease, max_retained, origin, Some(ending)).await
    }

    async fn claim(
        &self,
        id: &TaskId,
        attempt: u32,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let id = id.as_str().to_owned();
        let (node, until) = (lease.node.as_str().to_owned(), lease.until.0);
        let taken = self
            .write(move |tx| {
                tx.evict(TaskId::from(id.clone()));
                tx.prepare_cached(&format!(
                    "UPDATE tasks SET claim_node = ?1, lease_until = ?2, attempt = attempt + 1, \
                     version = version + 1 \
                     WHERE id = ?3 AND attempt = ?4 AND status IN {UNFINISHED} \
                     AND (lease_until IS NULL OR lease_until <= ?5) \
                     RETURNING {COLUMNS}"
                ))
                .and_then(|mut stmt| stmt.query_row(params![node, until, id, attempt, now.0], read_record).optional())
                .map_err(StoreError::backend)
            })
            .await?;
        if let Some(taken) = &taken {
            self.publish(taken);
        }
        Ok(taken)
    }

    async fn renew(&self, lease: &Lease, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        let (node, until) = (lease.node.as_str().to_owned(), lease.until.0);
        let renewed = self.write(move |conn| {
            conn.prepare_cached(&format!(
                "UPDATE tasks SET lease_until = ?1 \
                 WHERE claim_node = ?2 AND lease_until > ?3 AND status IN {UNFINISHED} RETURNING id"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![until, node, now.0], |row| row.get::<_, String>(0))?
                    .map(|id| id.map(TaskId::from))
                    .collect::<rusqlite::Result<Vec<TaskId>>>()
            })
            .and_then(|renewed| {
                conn.prepare_cached("UPDATE tool_slots SET lease_until = ?1 WHERE node = ?2 AND lease_until > ?3")?
                    .execute(params![until, node, now.0])?;
                Ok(renewed)
            })
            .map_err(StoreError::backend)
        })
        .await?;
        let unfinished = self.holders_where(|task| !task.status().is_terminal()).await?;
        self.inner.places.renew(lease, now, &unfinished);
        Ok(renewed)
    }

    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::from(limit);
        self.read(move |conn| {
            // The few unfinished tasks, through `tasks_unfinished`.
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE status IN {UNFINISHED} \
                 AND (lease_until IS NULL OR lease_until <= ?1) ORDER BY created_at, id LIMIT ?2"
            ))
            .and_then(|mut stmt| collect(stmt.query_map(params![now.0, limit], read_record)?))
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn take_slot(&self, tool: &str, size: u32, id: &TaskId, lease: &Lease, now: Timestamp) -> Result<bool, StoreError> {
        let (tool, id) = (tool.to_owned(), id.as_str().to_owned());
        let (node, until) = (lease.node.as_str().to_owned(), lease.until.0);
        self.write(move |conn| {
            // On the one writer thread: freeing, counting and taking are atomic.
            conn.prepare_cached(&format!(
                "DELETE FROM tool_slots WHERE tool = ?1 AND (lease_until <= ?2 OR NOT EXISTS \
                 (SELECT 1 FROM tasks WHERE tasks.id = tool_slots.task_id AND tasks.status IN {UNFINISHED}))"
            ))
            .and_then(|mut stmt| stmt.execute(params![tool, now.0]))
            .map_err(StoreError::backend)?;
            let (held, mine): (i64, i64) = conn
                .prepare_cached("SELECT count(*), count(*) FILTER (WHERE task_id = ?2) FROM tool_slots WHERE tool = ?1")
                .and_then(|mut stmt| stmt.query_row(params![tool, id], |row| Ok((row.get(0)?, row.get(1)?))))
                .map_err(StoreError::backend)?;
            if mine > 0 {
                return Ok(true);
            }
            if held >= i64::from(size) {
                return Ok(false);
            }
            conn.prepare_cached("INSERT INTO tool_slots (tool, task_id, node, lease_until) VALUES (?1, ?2, ?3, ?4)")
                .and_then(|mut stmt| stmt.execute(params![tool, id, node, until]))
                .map_err(StoreError::backend)?;
            Ok(true)
        })
        .await
    }

    async fn release_slot(&self, tool: &str, id: &TaskId) -> Result<(), StoreError> {
        let (tool, id) = (tool.to_owned(), id.as_str().to_owned());
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM tool_slots WHERE tool = ?1 AND task_id = ?2")
                .and_then(|mut stmt| stmt.execute(params![tool, id]))
                .map(|_| ())
                .map_err(StoreError::backend)
        })
        .await
    }

    async fn take_place(
        &self,
        holder: &PlaceHolder,
        owner: &Principal,
        limits: &RunningLimits,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Place, StoreError> {
        let finished = self.holders_where(|task| task.status().is_terminal()).await?;
        Ok(self.inner.places.take(holder, owner, limits, lease, now, &finished))
    }

    async fn release_place(&self, holder: &PlaceHolder) -> Result<(), StoreError> {
        self.inner.places.release(holder);
        Ok(())
    }
}

impl SqliteStore {
    /// [`ClaimStore::insert_claimed`], with the early ending of
    /// [`ClaimStore::insert_claimed_early`] if there is one.
    async fn insert_claimed_with(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        ending: Option<Arc<dyn EarlyEnding>>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        let mut row = NewRow::from_record(task).map_err(StoreError::backend)?;
        // The claim and the origin go in with the row: one statement, not three.
        row.claim = Some((lease.node.as_str().to_owned(), lease.until.0));
        row.origin = origin.cloned();
        // One copy, shared by the cache and the change feed.
        let record = Arc::new(task.clone());
        let (written, owner) = (Arc::clone(&record), task.owner.clone());
        let key = task
            .idempotency_key
            .as_ref()
            .map(|key| key.as_str().to_owned());
        let limit = i64::try_from(max_retained).unwrap_or(i64::MAX);
        let inserted = self
            .write(move |conn| {
                let conn: &mut Tx<'_, '_> = conn;
                let mut row = row;
                // On the one writer thread the count, the insert and the claim are atomic,
                // and the next insert of the batch sees this one counted.
                if let Some(key) = &key {
                    let holder = conn
                        .prepare_cached(&format!(
                            "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND idempotency_key = ?2"
                        ))
                        .and_then(|mut stmt| {
                            stmt.query_row(params![owner.as_str(), key], read_record)
                                .optional()
                        })
                        .map_err(StoreError::backend)?;
                    if let Some(existing) =
                        holder.filter(|holder| holder.retained_at(Timestamp(row.created_at)))
                    {
                        return Ok((Inserted::Existing(existing), None));
                    }
                }
                let retained: i64 = conn
                    .prepared
                    .query_row(Sql::CountOf, [owner.as_str()], |row| row.get(0))
                    .map_err(StoreError::backend)?
                    .unwrap_or(0);
                if retained >= limit {
                    return Err(StoreError::Full {
                        owner,
                        retained: u64::try_from(retained).unwrap_or(0),
                    });
                }
                // Work that started early and ended while this insert waited: its outcome
                // goes in with the row, as the replace that would have followed writes it.
                let (written, merged) = match ending.as_ref().and_then(|ending| ending.take()) {
                    None => (written, None),
                    Some(update) => {
                        let ended = Arc::new(ended_early(&written, update));
                        row.end_early(&ended).map_err(StoreError::backend)?;
                        (Arc::clone(&ended), Some(ended))
                    }
                };
                let inserted = insert_keyed(conn, &row, written)?;
                if inserted == Inserted::New {
                    conn.counted(owner, u64::try_from(retained).unwrap_or(0).saturating_add(1));
                }
                Ok((inserted, merged))
            })
            .await?;
        if inserted.0 == Inserted::New {
            // The creation as it was made: the outcome written with it is published by the
            // engine once the creation is answered.
            self.publish_shared(record);
        }
        Ok(inserted)
    }
}

/// `created` (a new task, version 1) as `update`, the ending of its early work, leaves it.
fn ended_early(created: &TaskRecord, update: Update) -> TaskRecord {
    let mut ended = TaskRecord::clone(created);
    update.apply(&mut ended);
    ended
}

impl SqliteStore {
    /// The tasks holding a running place that are stored and pass `test` (a read each: the
    /// places are few, and the engine takes none on this store).
    async fn holders_where(&self, test: impl Fn(&TaskRecord) -> bool) -> Result<Vec<TaskId>, StoreError> {
        let mut passing = Vec::new();
        for id in self.inner.places.task_holders() {
            if self.get(&id).await?.as_ref().is_some_and(&test) {
                passing.push(id);
            }
        }
        Ok(passing)
    }
}
