//! [`DeliveryStore`]: the webhooks' deliveries, kept in the task store itself. A store that
//! records them ([`DeliveryStore::record_deliveries`]) writes a delivery in the same
//! transaction as each write that takes a task into an event status, so that no committed
//! event is lost at any instant of a crash; every process delivers, each delivery claimed by
//! one live node at a time (a lease), and a dead node's are taken over when its lease lapses.
//!
//! It serves the webhooks (`mcp-tasks-webhooks`) only: the engine never calls it, and it is
//! not part of [`TaskStore`](super::TaskStore). SQLite and PostgreSQL implement it; the
//! memory store does not (nothing that delivers webhooks runs on it).

use std::time::Duration;

use async_trait::async_trait;

use super::{NodeId, StoreError};
use crate::task::{Status, TaskId, TaskRecord, Timestamp, Version};

/// One event waiting for its webhook deliveries: the write that took task `task` to
/// `event` at version `version`, with what the write said.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The delivery's number in the store: never reused, the same on every attempt (the
    /// receivers' deduplication id).
    pub id: i64,
    /// The task the event happened to.
    pub task: TaskId,
    /// The version the event's write gave the task.
    pub version: Version,
    /// The event: the task's status as an operator is told it
    /// ([`TaskState::operator_status`](crate::TaskState::operator_status)), never `working`.
    pub event: Status,
    /// When the write happened (its `updated_at`).
    pub at: Timestamp,
    /// The status message the write set.
    pub message: Option<String>,
    /// Attempts made so far.
    pub attempts: u32,
    /// The receivers (by URL) that already answered this delivery 2xx.
    pub done: Vec<String>,
    /// The task as stored now, read with the claim (`None`: purged since).
    pub record: Option<TaskRecord>,
}

/// The deliveries of the webhooks, in the task store.
///
/// Every method is atomic on its own; none holds a lock across calls.
#[async_trait]
pub trait DeliveryStore: Send + Sync + 'static {
    /// From now on, every write through this handle that changes a task's status to one an
    /// operator is told of as `completed`, `failed`, `cancelled` or `input_required` (the
    /// task's [`operator_status`](crate::TaskState::operator_status)), and every insert of a
    /// task already in one, records a [`Delivery`] in its own transaction. Off until called:
    /// a server without webhooks writes none. Every process on the store that writes tasks
    /// must call it for none of their events to be missed (configure the same webhooks on
    /// every replica).
    fn record_deliveries(&self);

    /// Claims up to `limit` deliveries due at `now` (their next attempt is due, and no live
    /// claim holds them) for `node` until `now + lease`, the longest due first; each comes
    /// with its task as stored now. A claim held by a node whose process is known to be
    /// gone lapses at once. Two racing claimers never get the same delivery.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn claim_deliveries(
        &self,
        node: &NodeId,
        now: Timestamp,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError>;

    /// Delivery `id`, claimed by `node`, is done (every receiver answered, or it is given
    /// up): it goes. Nothing happens if `node` no longer holds it (another node took it
    /// over and delivers it again: at least once).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn finish_delivery(&self, id: i64, node: &NodeId) -> Result<(), StoreError>;

    /// An attempt of delivery `id`, claimed by `node`, failed for some receiver: it is
    /// tried again at `next_at` (the claim released), with `done` the receivers answered
    /// so far and `error` the last failure. Nothing happens if `node` no longer holds it.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn retry_delivery(
        &self,
        id: i64,
        node: &NodeId,
        done: &[String],
        next_at: Timestamp,
        error: &str,
    ) -> Result<(), StoreError>;

    /// When the next delivery may be claimed (its next attempt, or the end of the claim
    /// holding it), if any is stored.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn next_delivery_at(&self) -> Result<Option<Timestamp>, StoreError>;
}
