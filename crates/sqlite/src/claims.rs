//! [`ClaimStore`] for [`SqliteStore`]: claims with a lease, the claimed insert under the
//! retention limit (with the outcome of work that ended early), a tool's slots, and the
//! running places (`running_places`), across every process on the file.
//!
//! A claim, slot or place lapses when its lease does, or at once when its node's process is
//! gone (`node_gone`, [`crate::peers`]): on one machine the kernel says whether a process
//! lives, so a killed server's tasks are taken over on the next rescuer pass.

use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use mcp_tasks_engine::store::implement::EarlyEnding;
use mcp_tasks_engine::{
    ClaimStore, Inserted, Lease, Origin, Place, PlaceHolder, Placing, Principal, RunningLimits, StoreError, TaskId,
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
        // Any number of processes serve one file, each a node with its own claims.
        true
    }

    /// A place per plain call would be two commits (two fsyncs) per call, more than the call
    /// costs: plain calls count toward their own process's running limits only (tasks count
    /// toward every process's, in their insert: `counted_place`).
    fn places_for_calls(&self) -> bool {
        false
    }

    /// A gone node is known at once (`node_gone`): the rescuer looks every second, or every
    /// half lease if that is sooner.
    fn rescue_every(&self, lease: std::time::Duration) -> std::time::Duration {
        (lease / 2).min(std::time::Duration::from_secs(1))
    }

    async fn insert_claimed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
    ) -> Result<Inserted, StoreError> {
        self.insert_claimed_with(task, lease, max_retained, origin, None, None).await.map(|(inserted, _)| inserted)
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
        self.insert_claimed_with(task, lease, max_retained, origin, Some(ending), None).await
    }

    /// The place is taken in the insert's write: one transaction, one commit, and no row of
    /// its own (`counted_place`).
    async fn insert_placed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        placing: &Placing,
        ending: Option<Arc<dyn EarlyEnding>>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        self.inner.nodes.hold(placing.lease.node.as_str())?;
        self.insert_claimed_with(task, lease, max_retained, origin, ending, Some(placing.clone())).await
    }

    async fn claim(
        &self,
        id: &TaskId,
        attempt: u32,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.nodes.hold(lease.node.as_str())?;
        let id = id.as_str().to_owned();
        let (node, until) = (lease.node.as_str().to_owned(), lease.until.0);
        let taken = self
            .write(move |tx| {
                tx.evict(TaskId::from(id.clone()));
                tx.prepare_cached(&format!(
                    "UPDATE tasks SET claim_node = ?1, lease_until = ?2, attempt = attempt + 1, \
                     version = version + 1 \
                     WHERE id = ?3 AND attempt = ?4 AND status IN {UNFINISHED} \
                     AND (lease_until IS NULL OR lease_until <= ?5 OR node_gone(claim_node)) \
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
        self.inner.nodes.hold(lease.node.as_str())?;
        let (node, until) = (lease.node.as_str().to_owned(), lease.until.0);
        self.write(move |conn| {
            let renewed = conn
                .prepare_cached(&format!(
                    "UPDATE tasks SET lease_until = ?1 \
                     WHERE claim_node = ?2 AND lease_until > ?3 AND status IN {UNFINISHED} RETURNING id"
                ))
                .and_then(|mut stmt| {
                    stmt.query_map(params![until, node, now.0], |row| row.get::<_, String>(0))?
                        .map(|id| id.map(TaskId::from))
                        .collect::<rusqlite::Result<Vec<TaskId>>>()
                })
                .map_err(StoreError::backend)?;
            conn.prepare_cached("UPDATE tool_slots SET lease_until = ?1 WHERE node = ?2 AND lease_until > ?3")
                .and_then(|mut stmt| stmt.execute(params![until, node, now.0]))
                .map_err(StoreError::backend)?;
            // A place of a finished (or purged) task lapses instead.
            conn.prepare_cached(&format!(
                "UPDATE running_places SET lease_until = ?1 WHERE node = ?2 AND lease_until > ?3 \
                 AND (NOT is_task OR EXISTS (SELECT 1 FROM tasks WHERE tasks.id = running_places.holder \
                 AND tasks.status IN {UNFINISHED}))"
            ))
            .and_then(|mut stmt| stmt.execute(params![until, node, now.0]))
            .map_err(StoreError::backend)?;
            Ok(renewed)
        })
        .await
    }

    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::from(limit);
        self.read(move |conn| {
            // The few unfinished tasks, through `tasks_unfinished`.
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE status IN {UNFINISHED} \
                 AND (lease_until IS NULL OR lease_until <= ?1 OR node_gone(claim_node)) ORDER BY created_at, id LIMIT ?2"
            ))
            .and_then(|mut stmt| collect(stmt.query_map(params![now.0, limit], read_record)?))
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn take_slot(&self, tool: &str, size: u32, id: &TaskId, lease: &Lease, now: Timestamp) -> Result<bool, StoreError> {
        self.inner.nodes.hold(lease.node.as_str())?;
        let (tool, id) = (tool.to_owned(), id.as_str().to_owned());
        let (node, until) = (lease.node.as_str().to_owned(), lease.until.0);
        self.write(move |conn| {
            // In one transaction under the write lock: freeing, counting and taking are atomic
            // across every process.
            conn.prepare_cached(&format!(
                "DELETE FROM tool_slots WHERE tool = ?1 AND (lease_until <= ?2 OR node_gone(node) OR NOT EXISTS \
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
        self.inner.nodes.hold(lease.node.as_str())?;
        let (holder, owner) = (holder.clone(), owner.clone());
        let (limits, lease) = (*limits, lease.clone());
        self.write(move |conn| take_place_in(conn, &holder, &owner, &limits, &lease, now)).await
    }

    /// A task created through `insert_placed` holds no row (it holds its place by being
    /// unfinished): looked up first, so that giving up a place nobody holds writes nothing.
    async fn release_place(&self, holder: &PlaceHolder) -> Result<(), StoreError> {
        let holder = holder.as_str().to_owned();
        let looked_up = holder.clone();
        let held = self
            .read(move |conn| {
                conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM running_places WHERE holder = ?1)")
                    .and_then(|mut stmt| stmt.query_row([looked_up], |row| row.get::<_, bool>(0)))
                    .map_err(StoreError::backend)
            })
            .await?;
        if !held {
            return Ok(());
        }
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM running_places WHERE holder = ?1")
                .and_then(|mut stmt| stmt.execute([holder]))
                .map(|_| ())
                .map_err(StoreError::backend)
        })
        .await
    }
}

impl SqliteStore {
    /// [`ClaimStore::insert_claimed`], with the early ending of
    /// [`ClaimStore::insert_claimed_early`] if there is one, and the running place of
    /// [`ClaimStore::insert_placed`] if `placing`.
    async fn insert_claimed_with(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        ending: Option<Arc<dyn EarlyEnding>>,
        placing: Option<Placing>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        self.inner.nodes.hold(lease.node.as_str())?;
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
                // In one transaction under the write lock the count, the insert and the claim
                // are atomic across every process, and the next insert of the batch sees this
                // one counted.
                if let Some(existing) = retained_holder(conn, &owner, key.as_deref(), Timestamp(row.created_at))? {
                    return Ok((Inserted::Existing(existing), None));
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
                // The place after the count, so that a refusal for either writes nothing.
                if let Some(placing) = &placing {
                    match counted_place(conn, &owner, &placing.limits, placing.now)? {
                        Place::Taken => {}
                        refused => return Err(StoreError::NoPlace(refused)),
                    }
                }
                // Work that started early and ended while this insert waited: its outcome
                // goes in with the row, as the replace that would have followed writes it,
                // and the events it reported before, as the appends before it would have.
                let (written, merged, events) = match ending.as_ref().and_then(|ending| ending.take()) {
                    None => (written, None, None),
                    Some(end) => {
                        let ended = Arc::new(ended_early(&written, end.update));
                        row.end_early(&ended).map_err(StoreError::backend)?;
                        (Arc::clone(&ended), Some(ended), Some((end.events, end.limits)))
                    }
                };
                let inserted = insert_keyed(conn, &row, written)?;
                if inserted == Inserted::New {
                    conn.counted(owner, u64::try_from(retained).unwrap_or(0).saturating_add(1));
                    if let Some((events, limits)) = events.filter(|(events, _)| !events.is_empty()) {
                        crate::events::append_rows(conn, &row.id, &crate::events::rows_of(&events), limits)
                            .map_err(StoreError::backend)?;
                    }
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

/// The place of a new task, inside its insert's transaction (under the write lock, so exact
/// across every process): a task holds its place by being unfinished, so nothing is written
/// for it. Counted: the unfinished tasks (through `tasks_unfinished`, whatever the number of
/// finished ones; a gone node's count
/// until the rescuer resolves them, within a second) and the live places of
/// [`ClaimStore::take_place`] (plain calls, and tasks not stored: those of stored tasks are
/// their tasks, counted once).
fn counted_place(conn: &Tx<'_, '_>, owner: &Principal, limits: &RunningLimits, now: Timestamp) -> Result<Place, StoreError> {
    let prepared = conn.prepared;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    // The tasks from the index alone (no row read): the owner's count only when it may matter.
    let (running, places, my_places): (i64, i64, i64) = prepared
        .query_row(Sql::CountRunning, params![owner.as_str(), now.0], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .map_err(StoreError::backend)?
        .unwrap_or((0, 0, 0));
    let all = running + places;
    if all >= i64::from(limits.max_running) {
        return Ok(Place::Full { running: count(all) });
    }
    if all < i64::from(limits.max_running_per_principal) {
        return Ok(Place::Taken);
    }
    let mine: i64 =
        prepared.query_row(Sql::CountRunningOf, [owner.as_str()], |row| row.get(0)).map_err(StoreError::backend)?.unwrap_or(0)
            + my_places;
    if mine >= i64::from(limits.max_running_per_principal) {
        return Ok(Place::OwnerFull { running: count(mine) });
    }
    Ok(Place::Taken)
}

/// [`ClaimStore::take_place`] inside a write's transaction (under the write lock), as
/// PostgreSQL's `mcp_tasks_take_place`: frees the lapsed places, those of gone nodes and
/// of finished tasks, counts, takes.
fn take_place_in(
    conn: &Tx<'_, '_>,
    holder: &PlaceHolder,
    owner: &Principal,
    limits: &RunningLimits,
    lease: &Lease,
    now: Timestamp,
) -> Result<Place, StoreError> {
    let (holder, is_task, owner) = (holder.as_str(), holder.is_task(), owner.as_str());
    let (node, until) = (lease.node.as_str(), lease.until.0);
    let (max_running, max_mine) = (i64::from(limits.max_running), i64::from(limits.max_running_per_principal));
    conn.prepare_cached(&format!(
        "DELETE FROM running_places WHERE lease_until <= ?1 OR node_gone(node) OR (is_task AND EXISTS \
         (SELECT 1 FROM tasks WHERE tasks.id = running_places.holder AND NOT tasks.status IN {UNFINISHED}))"
    ))
    .and_then(|mut stmt| stmt.execute([now.0]))
    .map_err(StoreError::backend)?;
    let (running, mine, held): (i64, i64, i64) = conn
        .prepare_cached(
            "SELECT count(*), count(*) FILTER (WHERE owner = ?1), count(*) FILTER (WHERE holder = ?2) FROM running_places",
        )
        .and_then(|mut stmt| stmt.query_row(params![owner, holder], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?))))
        .map_err(StoreError::backend)?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    if held > 0 {
        conn.prepare_cached("UPDATE running_places SET lease_until = ?1, node = ?2 WHERE holder = ?3")
            .and_then(|mut stmt| stmt.execute(params![until, node, holder]))
            .map_err(StoreError::backend)?;
        return Ok(Place::Taken);
    }
    if running >= max_running {
        return Ok(Place::Full { running: count(running) });
    }
    if mine >= max_mine {
        return Ok(Place::OwnerFull { running: count(mine) });
    }
    conn.prepare_cached("INSERT INTO running_places (holder, is_task, owner, node, lease_until) VALUES (?1, ?2, ?3, ?4, ?5)")
        .and_then(|mut stmt| stmt.execute(params![holder, is_task, owner, node, until]))
        .map_err(StoreError::backend)?;
    Ok(Place::Taken)
}

/// The owner's task holding idempotency key `key`, if it is retained at `now` (a creation
/// with the key answers it instead of inserting).
fn retained_holder(conn: &Tx<'_, '_>, owner: &Principal, key: Option<&str>, now: Timestamp) -> Result<Option<TaskRecord>, StoreError> {
    let Some(key) = key else { return Ok(None) };
    let holder = conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND idempotency_key = ?2"))
        .and_then(|mut stmt| stmt.query_row(params![owner.as_str(), key], read_record).optional())
        .map_err(StoreError::backend)?;
    Ok(holder.filter(|holder| holder.retained_at(now)))
}
