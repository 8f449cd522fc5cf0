//! The store seam: durable storage of [`TaskRecord`]s behind an object-safe async trait.
//!
//! This trait is an internal seam of mcp-tasks, not a stable API: it changes with the
//! engine. Every implementation must pass the shared store suite
//! (`mcp_tasks_testkit::store_suite!`), and should keep every query on the serving path off
//! full scans: a store retaining a million finished tasks must serve as fast as an empty one
//! (`benches/retention.sh`).

use std::error::Error as StdError;

use async_trait::async_trait;
use serde_json::Value;

use crate::process::ProcessGroup;
use crate::task::{IdempotencyKey, Principal, TaskId, TaskRecord, TaskState, Timestamp, Version};

/// Durable storage for tasks.
///
/// Every method is atomic on its own; none holds a lock across calls.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Inserts a new task and makes it durable before returning (invariant 1: a task is
    /// committed before its CreateTaskResult leaves).
    ///
    /// Idempotency keys: if `task` has one and the store holds a task of the same owner
    /// with the same key that is retained at `task.created_at`
    /// ([`TaskRecord::retained_at`]), nothing is written and that task is returned as
    /// [`Inserted::Existing`]. The check and the insert are one atomic step, so of
    /// concurrent inserts with one owner and key exactly one is [`Inserted::New`] (SQLite: a
    /// unique index on owner and key). A task past its TTL but not yet purged gives its key
    /// up to the new task. Keyless tasks never conflict with each other.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists; [`StoreError::Backend`] otherwise.
    async fn insert(&self, task: &TaskRecord) -> Result<Inserted, StoreError>;

    /// The task of `owner` created with `key`, if the store holds one that is retained at
    /// `now` ([`TaskRecord::retained_at`]). Another owner's task with the same key is never
    /// found. Served from an index (one lookup), not a scan.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn find_by_key(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// Reads a task. `None` if it never existed or has been purged.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError>;

    /// Replaces state, message, update time and attempt if the stored version still equals
    /// `expected`, bumps the version, and returns the new record. Atomic and durable.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] if the task moved on (or vanished) in the meantime.
    async fn replace(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
    ) -> Result<TaskRecord, StoreError>;

    /// The owner's tasks after the cursor, oldest first (by creation time, then id).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn list(&self, query: &ListQuery) -> Result<Vec<TaskRecord>, StoreError>;

    /// How many tasks of `owner` the store holds, in any status (finished tasks count
    /// until they are purged). Checked on every task creation, so it must not read the
    /// tasks themselves, nor one index entry per task: the SQLite store keeps a count per
    /// owner.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn count(&self, owner: &Principal) -> Result<u64, StoreError>;

    /// Tasks not yet terminal, oldest first, at most `limit` (restart recovery).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn unfinished(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError>;

    /// Tasks not yet terminal whose TTL has run out at `now`, at most `limit`.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn expired(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError>;

    /// Deletes terminal tasks whose TTL has run out at `now`, at most `limit`; returns how
    /// many went.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn purge(&self, now: Timestamp, limit: u32) -> Result<u64, StoreError>;

    /// Records the process group the work of task `id` started, replacing any recorded
    /// before, so that a server started after a crash can end it
    /// ([`Engine::recover`](crate::Engine::recover)). Durable before returning. Neither
    /// the version nor anything else of the task changes; an unknown id is no error (nothing
    /// is written). The record goes with its task when it is purged.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn set_process_group(&self, id: &TaskId, group: &ProcessGroup) -> Result<(), StoreError>;

    /// The process group last recorded for task `id`, if any.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn process_group(&self, id: &TaskId) -> Result<Option<ProcessGroup>, StoreError>;

    /// Records `checkpoint` (a handler's note of where its work stands, e.g. the id of the
    /// upstream task it drives) with task `id`, replacing any recorded before, if the task is
    /// still unfinished and its attempt is still `attempt` (fenced by the claim, as every
    /// write of a runner: a stale attempt's note is not written). Durable before returning.
    /// Neither the version nor anything else of the task changes. Returns whether it was
    /// written (`false` for a stale attempt, a finished or an unknown task). The record goes
    /// with its task when it is purged.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn set_checkpoint(&self, id: &TaskId, attempt: u32, checkpoint: &Value) -> Result<bool, StoreError>;

    /// The checkpoint last recorded for task `id`, if any.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn checkpoint(&self, id: &TaskId) -> Result<Option<Value>, StoreError>;
}

/// What [`TaskStore::insert`] did.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per insert, returned and matched at once, never kept
pub enum Inserted {
    /// The task is stored now.
    New,
    /// Nothing was written: the owner's retained task with the same idempotency key, as it
    /// stands.
    Existing(TaskRecord),
}

/// The new values written by [`TaskStore::replace`].
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// The state after the transition.
    pub state: TaskState,
    /// The status message after the write.
    pub status_message: Option<String>,
    /// The time of the write (becomes `updated_at`).
    pub updated_at: Timestamp,
    /// The runner's claim after the write.
    pub attempt: u32,
}

/// Where a listing resumes: after the task with this creation time and id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// Creation time of the last task already seen.
    pub created_at: Timestamp,
    /// Id of the last task already seen.
    pub id: TaskId,
}

/// A page request for [`TaskStore::list`].
#[derive(Clone, Debug, PartialEq)]
pub struct ListQuery {
    /// Only this principal's tasks.
    pub owner: Principal,
    /// Resume after this task.
    pub after: Option<Cursor>,
    /// At most this many.
    pub limit: u32,
}

/// What can go wrong in a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A task with this id already exists.
    #[error("task {0} already exists")]
    Duplicate(TaskId),
    /// The task's version changed (or the task vanished) since it was read.
    #[error("task {0} changed since it was read")]
    Conflict(TaskId),
    /// The database failed.
    #[error("task store failed: {0}")]
    Backend(#[source] Box<dyn StdError + Send + Sync>),
}

impl StoreError {
    /// Wraps a driver error.
    pub fn backend(err: impl StdError + Send + Sync + 'static) -> StoreError {
        StoreError::Backend(Box::new(err))
    }
}
