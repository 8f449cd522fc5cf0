//! [`RecordStore`]: the task records themselves, what every request reads and writes:
//! insert (with idempotency keys), read, compare-and-set replace, listing, counting, the
//! recovery and TTL scans, purge, cooperative cancel requests, stored input answers, and the
//! change feed. The values these methods take and give ([`Update`], [`Inserted`],
//! [`ListQuery`], [`Cursor`], [`Answer`]) live here too.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::broadcast;

use super::StoreError;
use crate::task::{ErrorObject, IdempotencyKey, Principal, TaskId, TaskRecord, TaskState, Timestamp, Version};

/// Durable storage of the task records: the core of the [`TaskStore`](super::TaskStore).
///
/// Every method is atomic on its own; none holds a lock across calls. The many-node
/// methods (cancel requests, input answers, the change feed) hold on a store that one
/// process owns (SQLite) too, trivially.
#[async_trait]
pub trait RecordStore: Send + Sync + 'static {
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

    /// [`RecordStore::get`], shared: a store that keeps records in memory hands out its own
    /// copy instead of a new one (the engine's hot path reads a task two or three times a
    /// lifecycle, mostly to look at it). The default wraps [`RecordStore::get`].
    ///
    /// # Errors
    /// As [`RecordStore::get`].
    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<TaskRecord>>, StoreError> {
        Ok(self.get(id).await?.map(Arc::new))
    }

    /// The task as this store last knew it, for a compare-and-set only: it may be an older
    /// version than the stored one (the write then fails with a conflict, and the writer reads
    /// again with [`RecordStore::get_shared`]). A store that keeps what it wrote and saw
    /// answers from memory; the default is [`RecordStore::get_shared`].
    ///
    /// # Errors
    /// As [`RecordStore::get`].
    async fn get_known(&self, id: &TaskId) -> Result<Option<Arc<TaskRecord>>, StoreError> {
        self.get_shared(id).await
    }

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

    /// [`RecordStore::replace`], answering the new record shared: a store that keeps what it
    /// writes in memory or publishes it on its feed hands out that copy instead of a new
    /// one. The default wraps [`RecordStore::replace`].
    ///
    /// # Errors
    /// As [`RecordStore::replace`].
    async fn replace_shared(&self, id: &TaskId, expected: Version, update: &Update) -> Result<Arc<TaskRecord>, StoreError> {
        self.replace(id, expected, update).await.map(Arc::new)
    }

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

    /// Records that the requestor asked unfinished task `id` to stop (a cooperative cancel),
    /// for whichever node runs its work, and bumps its version (so it is a change every node
    /// sees on the feed). `false`: the task is finished or unknown (nothing is written).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn request_cancel(&self, id: &TaskId) -> Result<bool, StoreError>;

    /// Whether a cancel was requested for task `id` ([`RecordStore::request_cancel`]).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn cancel_requested(&self, id: &TaskId) -> Result<bool, StoreError>;

    /// Replaces the task like [`RecordStore::replace`] and, in the same atomic step, stores
    /// `answer` as the answer to its input request `key` (replacing an answer stored under
    /// that key and not yet taken), so that the work waiting for it finds it wherever it
    /// runs ([`RecordStore::take_answer`]).
    ///
    /// # Errors
    /// [`StoreError::Conflict`] as for `replace` (nothing is stored then); [`StoreError::Backend`].
    async fn answer(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
        key: &str,
        answer: &Answer,
    ) -> Result<TaskRecord, StoreError>;

    /// Removes and returns the answer stored for input request `key` of task `id`, if any.
    /// Answers go with their task when it is purged.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn take_answer(&self, id: &TaskId, key: &str) -> Result<Option<Answer>, StoreError>;

    /// The change feed: every task inserted or written from now on, through any handle on
    /// this store (SQLite, memory: this process's writes, published after they commit;
    /// PostgreSQL: `LISTEN/NOTIFY` as a hint, a polling backstop for what it misses): for each
    /// write a record of its task at least as new (a store that reads the record when told of
    /// the change may fold writes close together into the newest), and the last write of a
    /// task exactly as it stands. A slow subscriber may lag (then it re-reads what it waits
    /// for).
    fn changes(&self) -> broadcast::Receiver<Arc<TaskRecord>>;
}

/// The answer to an input request: the client's response, or its error.
pub type Answer = Result<Value, ErrorObject>;


/// What [`RecordStore::insert`] did.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per insert, returned and matched at once, never kept
pub enum Inserted {
    /// The task is stored now.
    New,
    /// Nothing was written: the owner's retained task with the same idempotency key, as it
    /// stands.
    Existing(TaskRecord),
}


/// The new values written by [`RecordStore::replace`].
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

impl Update {
    /// Makes `record` what [`RecordStore::replace`] with this update writes of it: its state,
    /// status message, time and attempt, one version later.
    pub fn apply(self, record: &mut TaskRecord) {
        record.state = self.state;
        record.status_message = self.status_message;
        record.updated_at = self.updated_at;
        record.attempt = self.attempt;
        record.version = Version(record.version.0 + 1);
    }
}

/// Where a listing resumes: after the task with this creation time and id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// Creation time of the last task already seen.
    pub created_at: Timestamp,
    /// Id of the last task already seen.
    pub id: TaskId,
}

/// A page request for [`RecordStore::list`].
#[derive(Clone, Debug, PartialEq)]
pub struct ListQuery {
    /// Only this principal's tasks.
    pub owner: Principal,
    /// Resume after this task.
    pub after: Option<Cursor>,
    /// At most this many.
    pub limit: u32,
}
