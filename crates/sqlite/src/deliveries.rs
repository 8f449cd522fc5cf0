//! [`DeliveryStore`] for [`SqliteStore`]: the webhooks' deliveries in their table
//! (`webhook_deliveries`, migration 0016), written by the writer thread with the task writes
//! that cause them (`rows::record_delivery`) once [`DeliveryStore::record_deliveries`] is
//! called, claimed by one node at a time across every process on the file.

use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use mcp_tasks_engine::{Delivery, DeliveryStore, NodeId, Status, StoreError, TaskId, Timestamp, Version};

use crate::rows::read_record;
use crate::sql::COLUMNS;
use crate::store::SqliteStore;

#[async_trait]
impl DeliveryStore for SqliteStore {
    fn record_deliveries(&self) {
        self.inner.deliveries.store(true, Ordering::Relaxed);
    }

    /// One write of the writer thread: the claim and the reads of the claimed tasks. A claim
    /// of a node whose process is gone (`node_gone`) lapses at once.
    async fn claim_deliveries(
        &self,
        node: &NodeId,
        now: Timestamp,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        self.inner.nodes.hold(node.as_str())?;
        let node = node.as_str().to_owned();
        let until = now.plus_ms(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX)).0;
        self.write(move |conn| {
            let claimed = conn
                .prepare_cached(
                    "UPDATE webhook_deliveries SET claim_node = ?1, lease_until = ?2 WHERE id IN \
                     (SELECT id FROM webhook_deliveries WHERE next_at <= ?3 \
                      AND (lease_until IS NULL OR lease_until <= ?3 OR node_gone(claim_node)) \
                      ORDER BY next_at, id LIMIT ?4) \
                     RETURNING id, task_id, version, event, at, message, attempts, done",
                )
                .and_then(|mut stmt| {
                    stmt.query_map(params![node, until, now.0, limit], |row| {
                        Ok((
                            row.get::<_, i64>(0)?,
                            row.get::<_, String>(1)?,
                            row.get::<_, i64>(2)?,
                            row.get::<_, String>(3)?,
                            row.get::<_, i64>(4)?,
                            row.get::<_, Option<String>>(5)?,
                            row.get::<_, u32>(6)?,
                            row.get::<_, String>(7)?,
                        ))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(StoreError::backend)?;
            let mut read = conn
                .prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))
                .map_err(StoreError::backend)?;
            let mut deliveries = Vec::with_capacity(claimed.len());
            for (id, task, version, event, at, message, attempts, done) in claimed {
                let record = read.query_row([&task], read_record).optional().map_err(StoreError::backend)?;
                deliveries.push(Delivery {
                    id,
                    task: TaskId::from(task),
                    version: Version(u64::try_from(version).unwrap_or(0)),
                    event: Status::parse(&event).ok_or_else(|| StoreError::Backend(format!("delivery {id} has an unknown event {event:?}").into()))?,
                    at: Timestamp(at),
                    message,
                    attempts,
                    done: serde_json::from_str(&done).map_err(StoreError::backend)?,
                    record,
                });
            }
            Ok(deliveries)
        })
        .await
    }

    async fn finish_delivery(&self, id: i64, node: &NodeId) -> Result<(), StoreError> {
        let node = node.as_str().to_owned();
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM webhook_deliveries WHERE id = ?1 AND claim_node = ?2")
                .and_then(|mut stmt| stmt.execute(params![id, node]))
                .map(|_| ())
                .map_err(StoreError::backend)
        })
        .await
    }

    async fn retry_delivery(
        &self,
        id: i64,
        node: &NodeId,
        done: &[String],
        next_at: Timestamp,
        error: &str,
    ) -> Result<(), StoreError> {
        let (node, error) = (node.as_str().to_owned(), error.to_owned());
        let done = serde_json::to_string(done).map_err(StoreError::backend)?;
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = ?3, done = ?4, last_error = ?5, \
                 claim_node = NULL, lease_until = NULL WHERE id = ?1 AND claim_node = ?2",
            )
            .and_then(|mut stmt| stmt.execute(params![id, node, next_at.0, done, error]))
            .map(|_| ())
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn next_delivery_at(&self) -> Result<Option<Timestamp>, StoreError> {
        self.read(|conn| {
            conn.query_row("SELECT min(max(next_at, coalesce(lease_until, 0))) FROM webhook_deliveries", [], |row| {
                row.get::<_, Option<i64>>(0)
            })
            .map(|at| at.map(Timestamp))
            .map_err(StoreError::backend)
        })
        .await
    }
}
