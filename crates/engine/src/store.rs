//! The store seam: durable storage of [`TaskRecord`]s behind an object-safe async trait.
//!
//! This trait is an internal seam of mcp-tasks, not a stable API: it changes with the
//! engine. Every implementation must pass the shared store suite
//! (`mcp_tasks_testkit::store_suite!`), and should keep every query on the serving path off
//! full scans: a store retaining a million finished tasks must serve as fast as an empty one
//! (`benches/retention.sh`).

use std::error::Error as StdError;

use async_trait::async_trait;

use crate::process::ProcessGroup;
use crate::task::{
    IdempotencyKey, Principal, Status, TaskId, TaskRecord, TaskState, Timestamp, Version,
};

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

    /// A page of the owner's tasks for a person to look through (the web view): newest
    /// first (by creation time, then id, both descending), only those matching every
    /// filter of `query`, before its cursor. Served from an index (`tasks_by_owner`, or
    /// one per filtered column); a text filter reads rows until the page is full.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn browse(&self, query: &BrowseQuery) -> Result<Vec<TaskRecord>, StoreError>;

    /// How many of the owner's stored tasks are in each status (statuses with none are
    /// left out), read from an index of owner and status.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn status_counts(&self, owner: &Principal) -> Result<Vec<(Status, u64)>, StoreError>;

    /// The status history of task `id`, oldest first: one entry for its creation and one
    /// for every write that changed its status or status message, each with the version
    /// and time of that write. Kept by the store in the same statement as the write it
    /// records (SQLite and PostgreSQL: triggers), and deleted with the task.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn history(&self, id: &TaskId) -> Result<Vec<HistoryEntry>, StoreError>;

    /// Records where task `id` came from (the era and the client that created it), once,
    /// after its insert. Neither the version nor anything else of the task changes; an
    /// unknown id is no error (nothing is written).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn set_origin(&self, id: &TaskId, origin: &Origin) -> Result<(), StoreError>;

    /// What [`TaskStore::set_origin`] recorded for task `id`, if anything.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn origin(&self, id: &TaskId) -> Result<Option<Origin>, StoreError>;
}

/// A page request for [`TaskStore::browse`]: newest first, filtered.
#[derive(Clone, Debug, PartialEq)]
pub struct BrowseQuery {
    /// Only this principal's tasks.
    pub owner: Principal,
    /// Only tasks in this status.
    pub status: Option<Status>,
    /// Only tasks of this tool (exact name).
    pub tool: Option<String>,
    /// Only tasks whose id, tool, status message or arguments contain this text (ASCII
    /// case-insensitive).
    pub text: Option<String>,
    /// Resume before this task (the last one of the previous page).
    pub before: Option<Cursor>,
    /// At most this many.
    pub limit: u32,
}

/// One entry of a task's status history ([`TaskStore::history`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The task's version after the write.
    pub version: Version,
    /// The time of the write (the task's `updated_at` then).
    pub at: Timestamp,
    /// The status after the write.
    pub status: Status,
    /// The status message after the write.
    pub message: Option<String>,
}

/// Where a task came from: the protocol era of the request that created it and the
/// client that sent it, as that client named itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The era's protocol revision, e.g. `2025-11-25`.
    pub era: String,
    /// The client's `name` (2025-11-25 `initialize` `clientInfo`, 2026-07-28 `_meta`).
    pub client_name: Option<String>,
    /// The client's `version`.
    pub client_version: Option<String>,
}

impl BrowseQuery {
    /// Whether `task` passes every filter of the query (the cursor and owner aside); the
    /// definition every store's `WHERE` follows.
    pub fn matches(&self, task: &TaskRecord) -> bool {
        self.status.is_none_or(|status| task.status() == status)
            && self.tool.as_ref().is_none_or(|tool| &task.tool == tool)
            && self.text.as_ref().is_none_or(|text| {
                let needle = text.to_ascii_lowercase();
                let contains = |hay: &str| hay.to_ascii_lowercase().contains(&needle);
                contains(task.id.as_str())
                    || contains(&task.tool)
                    || task.status_message.as_deref().is_some_and(contains)
                    || contains(&task.arguments.to_string())
            })
    }
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
