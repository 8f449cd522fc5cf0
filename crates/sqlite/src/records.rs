//! [`RecordStore`] for [`SqliteStore`]: the task records (insert with idempotency keys,
//! reads, the compare-and-set replace, listing, counting, the scans, purge, cancel requests,
//! input answers, the change feed).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::broadcast;

use mcp_tasks_engine::{
    Answer, IdempotencyKey, Inserted, ListQuery, Principal, RecordStore, StoreError, TaskId, TaskRecord, Timestamp,
    Update, Version,
};

use crate::hot::Size;
use crate::rows::{
    Entry, NewRow, collect, event_of, from_json, insert_row, is_duplicate_key, read_record, record_change, to_i64, to_json,
};
use crate::sql::{COLUMN_COUNT, COLUMNS, REPLACE, Sql, TERMINAL, UNFINISHED};
use crate::store::SqliteStore;
use crate::writer::Tx;

#[async_trait]
impl RecordStore for SqliteStore {
    async fn insert(&self, task: &TaskRecord) -> Result<Inserted, StoreError> {
        let row = NewRow::from_record(task).map_err(StoreError::backend)?;
        // One copy, shared by the cache and the change feed.
        let record = Arc::new(task.clone());
        let written = Arc::clone(&record);
        // One write on the writer thread: the lookup of a held key and the insert are
        // atomic, and a concurrent insert with the same key, queued behind this one, sees
        // this one's row.
        let inserted = self
            .write(move |tx| {
                let owner = written.owner.clone();
                let inserted = insert_keyed(tx, &row, written)?;
                if inserted == Inserted::New {
                    tx.uncounted(owner);
                }
                Ok(inserted)
            })
            .await?;
        if inserted == Inserted::New {
            self.publish_shared(record);
        }
        Ok(inserted)
    }

    async fn find_by_key(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let (owner, key) = (owner.as_str().to_owned(), key.as_str().to_owned());
        self.read(move |conn| {
            // One lookup in `tasks_by_idempotency_key` (migration 0004).
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND idempotency_key = ?2 \
                 AND (expires_at IS NULL OR expires_at > ?3)"
            ))
            .and_then(|mut stmt| stmt.query_row(params![owner, key, now.0], read_record).optional())
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.get_shared(id).await?.map(Arc::unwrap_or_clone))
    }

    /// The cache's own copy when it keeps the task, not a new one.
    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<TaskRecord>>, StoreError> {
        if let Some((record, _)) = self.inner.hot.get_sized(id) {
            return Ok(Some(record));
        }
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            conn.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))
                .and_then(|mut stmt| stmt.query_row([id], read_record).optional())
                .map_err(StoreError::backend)
        })
        .await
        .map(|record| record.map(Arc::new))
    }

    async fn replace(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
    ) -> Result<TaskRecord, StoreError> {
        self.replace_shared(id, expected, update).await.map(Arc::unwrap_or_clone)
    }

    /// The record written is the one the cache keeps and the feed carries.
    async fn replace_shared(&self, id: &TaskId, expected: Version, update: &Update) -> Result<Arc<TaskRecord>, StoreError> {
        let task = id.clone();
        let expected_version = expected.0;
        let expected = to_i64(expected.0).map_err(StoreError::backend)?;
        let state = to_json(&update.state).map_err(StoreError::backend)?;
        let status = update.state.operator_status().as_str();
        let update = update.clone();
        let written = self.write(move |tx| {
            // The row at the expected version and the length of its arguments: as the cache
            // knows it, or else read first (the writer thread is the only writer: nothing
            // changes the row between this read and the write below). The new record is that
            // one with the update, and the compare-and-set needs no RETURNING (whose
            // ephemeral table and row decoding were a tenth of a lifecycle's SQLite cost).
            let current = match tx.current(&task).filter(|(record, _)| record.version.0 == expected_version) {
                Some((record, size)) => Some((TaskRecord::clone(&record), size.arguments)),
                None => tx
                    .prepare_cached(&format!("SELECT {COLUMNS}, length(arguments) FROM tasks WHERE id = ?1 AND version = ?2"))
                    .and_then(|mut stmt| {
                        stmt.query_row(params![task.as_str(), expected], |row| {
                            Ok((read_record(row)?, row.get::<_, i64>(COLUMN_COUNT)?))
                        })
                        .optional()
                    })
                    .map_err(StoreError::backend)?
                    .map(|(record, arguments)| (record, usize::try_from(arguments).unwrap_or(usize::MAX / 2))),
            };
            let Some((mut record, arguments)) = current else {
                return Err(StoreError::Conflict(task));
            };
            let (message, updated_at) = (&update.status_message, update.updated_at.0);
            let changed = tx
                .prepared
                .execute(Sql::Replace, params![state, status, message, updated_at, update.attempt, task.as_str(), expected])
                .map_err(StoreError::backend)?;
            if changed == 0 {
                return Err(StoreError::Conflict(task));
            }
            let before = Entry::of(&record);
            let after = Entry { version: expected + 1, at: updated_at, status, message: message.as_deref(), event: event_of(&update.state) };
            record_change(tx, tx.prepared, task.as_str(), &before, &after).map_err(StoreError::backend)?;
            update.apply(&mut record);
            // One copy, shared by the cache and the change feed.
            let record = Arc::new(record);
            tx.put(Arc::clone(&record), Size { state: state.len(), arguments });
            Ok(record)
        })
        .await?;
        self.publish_shared(Arc::clone(&written));
        Ok(written)
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let owner = query.owner.as_str().to_owned();
        let after = query
            .after
            .as_ref()
            .map(|cursor| (cursor.created_at.0, cursor.id.as_str().to_owned()));
        let limit = i64::from(query.limit);
        self.read(move |conn| {
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
        // Admission asks before every creation: the writer's last committed count, when it
        // is kept, saves the hop to a reader.
        if let Some(count) = self.inner.hot.count(owner) {
            return Ok(count);
        }
        let owner = owner.as_str().to_owned();
        self.read(move |conn| {
            // One row of `task_counts`, kept by the insert and the purge (migrations 0003
            // and 0012): counting an owner's million tasks costs what counting ten does.
            let count: Option<i64> = conn
                .prepare_cached("SELECT tasks FROM task_counts WHERE owner = ?1")
                .and_then(|mut stmt| stmt.query_row([owner], |row| row.get(0)).optional())
                .map_err(StoreError::backend)?;
            Ok(count.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
        })
        .await
    }

    async fn unfinished(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::from(limit);
        self.read(move |conn| {
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
        self.read(move |conn| {
            conn.prepare_cached(&format!(
                // Through `tasks_unfinished`, which holds `expires_at` (migration 0013): the
                // unfinished tasks are read in its order, the finished ones never.
                // Named: without statistics SQLite would take `tasks_by_expiry`, every task
                // with a TTL, finished ones included.
                "SELECT {COLUMNS} FROM tasks INDEXED BY tasks_unfinished \
                 WHERE status IN {UNFINISHED} AND expires_at <= ?1 ORDER BY created_at, id LIMIT ?2"
            ))
            .and_then(|mut stmt| collect(stmt.query_map(params![now.0, limit], read_record)?))
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn purge(&self, now: Timestamp, limit: u32) -> Result<u64, StoreError> {
        let limit = i64::from(limit);
        self.write(move |tx| {
            // SQLite's `DELETE … LIMIT` needs a compile-time option; a subquery does not.
            let deleted = tx
                .prepare_cached(&format!(
                    "DELETE FROM tasks WHERE rowid IN (\
                         SELECT rowid FROM tasks WHERE status IN {TERMINAL} AND expires_at <= ?1 \
                         ORDER BY expires_at LIMIT ?2) RETURNING id, owner"
                ))
                .and_then(|mut stmt| {
                    stmt.query_map(params![now.0, limit], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))?
                        .collect::<rusqlite::Result<Vec<(String, String)>>>()
                })
                .map_err(StoreError::backend)?;
            let count = deleted.len();
            // What the triggers did before migration 0012: each task's history (and, since 0017, its
            // event log) goes with it,
            // each owner's count goes down by its tasks purged (its row gone at zero).
            let mut owners: HashMap<String, i64> = HashMap::new();
            for (id, owner) in deleted {
                for table in ["task_history", "task_events", "task_event_heads"] {
                    tx.prepare_cached(&format!("DELETE FROM {table} WHERE task_id = ?1"))
                        .and_then(|mut stmt| stmt.execute([&id]))
                        .map_err(StoreError::backend)?;
                }
                tx.evict(TaskId::from(id));
                *owners.entry(owner).or_insert(0) += 1;
            }
            for (owner, purged) in owners {
                tx.prepare_cached("UPDATE task_counts SET tasks = tasks - ?2 WHERE owner = ?1")
                    .and_then(|mut stmt| stmt.execute(params![owner, purged]))
                    .and_then(|_| tx.prepare_cached("DELETE FROM task_counts WHERE owner = ?1 AND tasks <= 0"))
                    .and_then(|mut stmt| stmt.execute([&owner]))
                    .map_err(StoreError::backend)?;
                tx.uncounted(Principal::new(owner));
            }
            Ok(u64::try_from(count).unwrap_or(u64::MAX))
        })
        .await
    }

    async fn request_cancel(&self, id: &TaskId) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let written = self
            .write(move |tx| {
                tx.evict(TaskId::from(id.clone()));
                tx.prepare_cached(&format!(
                    "UPDATE tasks SET cancel_requested = 1, version = version + 1 \
                     WHERE id = ?1 AND status IN {UNFINISHED} RETURNING {COLUMNS}"
                ))
                .and_then(|mut stmt| stmt.query_row([id], read_record).optional())
                .map_err(StoreError::backend)
            })
            .await?;
        if let Some(written) = &written {
            self.publish(written);
        }
        Ok(written.is_some())
    }

    async fn cancel_requested(&self, id: &TaskId) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let asked: Option<bool> = conn
                .prepare_cached("SELECT cancel_requested FROM tasks WHERE id = ?1")
                .and_then(|mut stmt| stmt.query_row([id], |row| row.get(0)).optional())
                .map_err(StoreError::backend)?;
            Ok(asked.unwrap_or(false))
        })
        .await
    }

    async fn answer(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
        key: &str,
        answer: &Answer,
    ) -> Result<TaskRecord, StoreError> {
        let task = id.clone();
        let expected = to_i64(expected.0).map_err(StoreError::backend)?;
        let state = to_json(&update.state).map_err(StoreError::backend)?;
        let status = update.state.operator_status().as_str();
        let message = update.status_message.clone();
        let event = event_of(&update.state);
        let (updated_at, attempt) = (update.updated_at.0, update.attempt);
        let (key, answer) = (
            key.to_owned(),
            to_json(answer).map_err(StoreError::backend)?,
        );
        let written = self
            .write(move |conn| {
                conn.evict(task.clone());
                // Two statements, undone together if the second fails (a savepoint inside
                // the batch's transaction), so the answer is stored exactly with its write.
                conn.execute_batch("SAVEPOINT answer").map_err(StoreError::backend)?;
                let done = (|| {
                    // The row before the write, for the status history.
                    let before = conn
                        .prepare_cached("SELECT version, updated_at, status, status_message FROM tasks WHERE id = ?1 AND version = ?2")
                        .and_then(|mut stmt| {
                            stmt.query_row(params![task.as_str(), expected], |row| {
                                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get::<_, String>(2)?, row.get::<_, Option<String>>(3)?))
                            })
                            .optional()
                        })
                        .map_err(StoreError::backend)?
                        .ok_or_else(|| StoreError::Conflict(task.clone()))?;
                    let written = conn
                        .prepare_cached(&format!(
                            "{REPLACE} RETURNING {COLUMNS}"
                        ))
                        .and_then(|mut stmt| {
                            stmt.query_row(
                                params![state, status, message, updated_at, attempt, task.as_str(), expected],
                                read_record,
                            )
                            .optional()
                        })
                        .map_err(StoreError::backend)?;
                    let written = written.ok_or_else(|| StoreError::Conflict(task.clone()))?;
                    let (version, at, ref was, ref said) = before;
                    let before = Entry { version, at, status: was, message: said.as_deref(), event: None };
                    let after = Entry { version: expected + 1, at: updated_at, status, message: message.as_deref(), event };
                    record_change(conn, conn.prepared, task.as_str(), &before, &after).map_err(StoreError::backend)?;
                    conn.prepare_cached("INSERT OR REPLACE INTO task_answers (task_id, key, answer) VALUES (?1, ?2, ?3)")
                        .and_then(|mut stmt| stmt.execute(params![task.as_str(), key, answer]))
                        .map_err(StoreError::backend)?;
                    Ok(written)
                })();
                let end = if done.is_ok() { "RELEASE answer" } else { "ROLLBACK TO answer; RELEASE answer" };
                conn.execute_batch(end).map_err(StoreError::backend)?;
                done
            })
            .await?;
        self.publish(&written);
        Ok(written)
    }

    async fn take_answer(&self, id: &TaskId, key: &str) -> Result<Option<Answer>, StoreError> {
        let (id, key) = (id.as_str().to_owned(), key.to_owned());
        let taken: Option<String> = self
            .write(move |conn| {
                conn.prepare_cached(
                    "DELETE FROM task_answers WHERE task_id = ?1 AND key = ?2 RETURNING answer",
                )
                .and_then(|mut stmt| {
                    stmt.query_row(params![id, key], |row| row.get(0))
                        .optional()
                })
                .map_err(StoreError::backend)
            })
            .await?;
        taken
            .map(|text| from_json(0, &text).map_err(StoreError::backend))
            .transpose()
    }

    fn changes(&self) -> broadcast::Receiver<Arc<TaskRecord>> {
        self.inner.feed.subscribe()
    }
}

/// Inserts `row` (task `id`): a new task, or the owner's retained task holding its
/// idempotency key. One write of the writer thread, so the key's lookup and the insert are
/// atomic.
/// Inserts `record` (encoded as `row`) unless its idempotency key is held by a retained
/// task, which it then returns; the key of an expired holder is released first.
pub(crate) fn insert_keyed(tx: &mut Tx<'_, '_>, row: &NewRow, record: Arc<TaskRecord>) -> Result<Inserted, StoreError> {
    let conn: &Connection = tx;
    let prepared = tx.prepared;
    let size = Size { state: row.state.len(), arguments: row.arguments.len() };
    let id = record.id.clone();
    match insert_row(prepared, row) {
        Ok(1) => {
            tx.put(record, size);
            return Ok(Inserted::New);
        }
        Ok(_) => {}
        Err(err) if is_duplicate_key(&err) => return Err(StoreError::Duplicate(id)),
        Err(err) => return Err(StoreError::backend(err)),
    }
    // The key is taken (a keyless row never conflicts): by a retained task, which is the
    // answer, or by one past its TTL, which gives it up.
    let (owner, key) = (row.owner.as_str(), row.idempotency_key.as_deref());
    let holder = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND idempotency_key = ?2"
        ))
        .and_then(|mut stmt| stmt.query_row(params![owner, key], read_record).optional())
        .map_err(StoreError::backend)?;
    match holder {
        Some(existing) if existing.retained_at(Timestamp(row.created_at)) => {
            Ok(Inserted::Existing(existing))
        }
        holder => {
            if let Some(holder) = holder {
                tx.evict(holder.id);
            }
            let conn: &Connection = tx;
            conn.prepare_cached(
                "UPDATE tasks SET idempotency_key = NULL WHERE owner = ?1 AND idempotency_key = ?2",
            )
            .and_then(|mut stmt| stmt.execute(params![owner, key]))
            .map_err(StoreError::backend)?;
            match insert_row(prepared, row) {
                Ok(_) => {
                    tx.put(record, size);
                    Ok(Inserted::New)
                }
                Err(err) if is_duplicate_key(&err) => Err(StoreError::Duplicate(id)),
                Err(err) => Err(StoreError::backend(err)),
            }
        }
    }
}
