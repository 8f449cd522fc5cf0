//! The store seam: durable storage of [`TaskRecord`]s behind an object-safe async trait.
//!
//! This trait is an internal seam of mcp-tasks, not a stable API: it changes with the
//! engine. Every implementation must pass the shared store suite
//! (`mcp_tasks_testkit::store_suite!`), and should keep every query on the serving path off
//! full scans: a store retaining a million finished tasks must serve as fast as an empty one
//! (`benches/retention.sh`).

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::process::{KeptGroup, ProcessGroup};
use crate::task::{ErrorObject, IdempotencyKey, Principal, Status, TaskId, TaskRecord, TaskState, Timestamp, Version};

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

    /// [`TaskStore::get`], shared: a store that keeps records in memory hands out its own
    /// copy instead of a new one (the engine's hot path reads a task two or three times a
    /// lifecycle, mostly to look at it). The default wraps [`TaskStore::get`].
    ///
    /// # Errors
    /// As [`TaskStore::get`].
    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<TaskRecord>>, StoreError> {
        Ok(self.get(id).await?.map(Arc::new))
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

    /// [`TaskStore::replace`], answering the new record shared: a store that keeps what it
    /// writes in memory or publishes it on its feed hands out that copy instead of a new
    /// one. The default wraps [`TaskStore::replace`].
    ///
    /// # Errors
    /// As [`TaskStore::replace`].
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

    /// Records under `key` the process group a server keeps running beside its tasks (a
    /// proxy's stdio upstream), and the process that keeps it, replacing any record under
    /// that key; `None` removes the record. Durable before returning. So a server started
    /// after one that was killed can end the group it left running
    /// ([`Engine::end_kept_group`](crate::Engine::end_kept_group)). Not tied to any task.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn set_kept_group(&self, key: &str, kept: Option<&KeptGroup>) -> Result<(), StoreError>;

    /// What [`TaskStore::set_kept_group`] last recorded under `key`, if anything.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn kept_group(&self, key: &str) -> Result<Option<KeptGroup>, StoreError>;

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
    // Many nodes on one store: claims with a lease, the retention limit, cancel requests,
    // input answers and the change feed. On a store that one process owns (SQLite) the same
    // methods hold, trivially: that process holds every claim.

    /// Whether processes other than this one may run tasks on this store at the same time
    /// (PostgreSQL: yes; SQLite and the memory store: no, one process owns them). On a store
    /// that is not shared, a claim left by an earlier process is lapsed as soon as a new one
    /// starts: recovery need not wait for its lease to run out.
    fn shared(&self) -> bool;

    /// Inserts `task` like [`TaskStore::insert`], claimed by `lease` (its runner), if its
    /// owner keeps fewer than `max_retained` tasks in the store; the check and the insert
    /// are one atomic step, so of concurrent inserts from any number of handles no more are
    /// stored than the limit allows. An idempotency key that finds a retained task answers
    /// [`Inserted::Existing`] even when the owner is at the limit (it adds nothing).
    /// `origin`, where the task came from, is written with the new row (what
    /// [`TaskStore::set_origin`] would write, without a second write).
    ///
    /// # Errors
    /// [`StoreError::Full`] if the owner is at the limit (nothing is written);
    /// [`StoreError::Duplicate`]; [`StoreError::Backend`].
    async fn insert_claimed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
    ) -> Result<Inserted, StoreError>;

    /// [`TaskStore::insert_claimed`] of a task whose work started before this insert
    /// ([`ToolRuntime::start_before_commit`](crate::ToolRuntime::start_before_commit)). When
    /// the insert runs, [`EarlyEnding::take`] gives the work's outcome if it ended first: the
    /// row written is then `task` with that update (its version one up), in the same
    /// commit, and its status history the same as if the two had been written one after the
    /// other. Returns the record written with the outcome in, if it was.
    ///
    /// The default takes the outcome away first (none goes in) and inserts `task` alone: the
    /// outcome is then written on its own, as it would be without this method.
    ///
    /// # Errors
    /// As [`TaskStore::insert_claimed`].
    async fn insert_claimed_early(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        ending: Arc<dyn EarlyEnding>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        drop(ending.take());
        Ok((self.insert_claimed(task, lease, max_retained, origin).await?, None))
    }

    /// Takes unfinished task `id` over for `lease`, if its claim is absent or lapsed at `now`
    /// (its lease ends at or before `now`) and its attempt is still `attempt`: the claim
    /// becomes `lease`, the attempt is bumped (the fencing token: every write the previous
    /// runner makes carries the old attempt and is refused) and so is the version. Of racing
    /// claims exactly one gets the task. `None`: held by a live claim, finished, gone, or
    /// already taken at another attempt.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn claim(
        &self,
        id: &TaskId,
        attempt: u32,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// Extends to `lease.until` every claim of `lease.node` on an unfinished task that has not
    /// lapsed at `now`, and returns those tasks' ids (the heartbeat: one statement for all of
    /// a node's claims). A claim missing from the answer is lost: it lapsed, was taken over,
    /// or its task finished. Neither the version nor anything else of a task changes.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn renew(&self, lease: &Lease, now: Timestamp) -> Result<Vec<TaskId>, StoreError>;

    /// Unfinished tasks whose claim is absent or lapsed at `now`, oldest first (by creation
    /// time, then id), at most `limit`: what a rescuer takes over ([`TaskStore::claim`]).
    /// Replaces "every unfinished task is mine" ([`TaskStore::unfinished`]) at recovery.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError>;

    /// Records that the requestor asked unfinished task `id` to stop (a cooperative cancel),
    /// for whichever node runs its work, and bumps its version (so it is a change every node
    /// sees on the feed). `false`: the task is finished or unknown (nothing is written).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn request_cancel(&self, id: &TaskId) -> Result<bool, StoreError>;

    /// Whether a cancel was requested for task `id` ([`TaskStore::request_cancel`]).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn cancel_requested(&self, id: &TaskId) -> Result<bool, StoreError>;

    /// Replaces the task like [`TaskStore::replace`] and, in the same atomic step, stores
    /// `answer` as the answer to its input request `key` (replacing an answer stored under
    /// that key and not yet taken), so that the work waiting for it finds it wherever it
    /// runs ([`TaskStore::take_answer`]).
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

    /// Takes one of the `size` slots of `tool` (its `max_concurrent`, across every node on
    /// the store) for task `id`, held by `lease`: `true` if the task holds one now (already
    /// held, or one was free). A slot is free if no task holds it, or its holder's lease
    /// lapsed at `now`, or its holder finished. Atomic: of racing takers no more than `size`
    /// hold a slot. Renewed by [`TaskStore::renew`] with the node's claims.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn take_slot(&self, tool: &str, size: u32, id: &TaskId, lease: &Lease, now: Timestamp) -> Result<bool, StoreError>;

    /// Gives up the slot of `tool` task `id` holds, if any.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn release_slot(&self, tool: &str, id: &TaskId) -> Result<(), StoreError>;

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
    /// and time of that write. Kept by the store in the same transaction as the write it
    /// records (PostgreSQL: triggers; SQLite: its own statements, and the entry of the write
    /// that finished the task is read from the finished row), and deleted with the task.
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

    // The running limits across nodes ([`Policy::max_running`](crate::Policy::max_running)
    // and `max_running_per_principal`): a place per running task or plain call, held by a
    // node's lease like a claim. The engine takes places only on a shared store; on one that
    // one process owns its own counters are exact.

    /// Takes a running place for `holder` (of `owner`, held by `lease`) if fewer than
    /// `limits.max_running` places are held in all and fewer than
    /// `limits.max_running_per_principal` by `owner`; a place is free if its lease lapsed at
    /// `now`, or it is held by a task that is finished. Atomic: of racing takers from any
    /// number of handles no more hold a place than the limits allow. A holder that holds a
    /// place already keeps it ([`Place::Taken`]). Renewed by [`TaskStore::renew`] with the
    /// node's claims, except those of finished tasks.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn take_place(
        &self,
        holder: &PlaceHolder,
        owner: &Principal,
        limits: &RunningLimits,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Place, StoreError>;

    /// Gives up the running place of `holder`, if it holds one.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn release_place(&self, holder: &PlaceHolder) -> Result<(), StoreError>;

    // 2025-11-25 HTTP sessions (`Mcp-Session-Id`), so that any replica serves any session: the
    // record of what `initialize` negotiated and what the session changed since. The open
    // streams of a session are not stored: they stay with the process holding them.

    /// Stores `session`, or replaces the stored one with this id (its state, owner and last
    /// use; the tasks it created are kept). Durable before returning.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn put_session(&self, session: &SessionRecord) -> Result<(), StoreError>;

    /// The session `id` of `owner`, if it is stored: another owner's session is never found
    /// (as if it did not exist). One lookup by id.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn session(&self, id: &str, owner: &Principal) -> Result<Option<SessionRecord>, StoreError>;

    /// Adds `task` to the tasks session `id` created (its listing when requestors are not
    /// identified), after those recorded before; a task recorded already is not added again.
    /// Atomic, so that creations through two nodes at once both stay. An unknown session is
    /// no error (nothing is written).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn add_session_task(&self, id: &str, task: &TaskId) -> Result<(), StoreError>;

    /// Sets the last use of each of the sessions `ids` that is stored to `now` (if later than
    /// the stored one), and returns the ids of those still stored (the others were ended,
    /// perhaps through another node). At most a few hundred ids at a time.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn touch_sessions(&self, ids: &[String], now: Timestamp) -> Result<Vec<String>, StoreError>;

    /// Deletes session `id` (DELETE, or ended by its node); `false` if it was not stored.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn end_session(&self, id: &str) -> Result<bool, StoreError>;

    /// Deletes sessions last used before `idle_before`, at most `limit` (oldest first);
    /// returns how many went. Served from an index on the last use.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn prune_sessions(&self, idle_before: Timestamp, limit: u32) -> Result<u64, StoreError>;
}

/// Who holds a running place ([`TaskStore::take_place`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PlaceHolder {
    /// A task, from its creation until its work ends (or it is seen finished).
    Task(TaskId),
    /// A plain call while it runs, by a random id of its own.
    Call(String),
}

impl PlaceHolder {
    /// The holder's id as stored (a task id, or a plain call's id).
    pub fn as_str(&self) -> &str {
        match self {
            PlaceHolder::Task(id) => id.as_str(),
            PlaceHolder::Call(id) => id,
        }
    }

    /// Whether the holder is a task.
    pub fn is_task(&self) -> bool {
        matches!(self, PlaceHolder::Task(_))
    }
}

/// The running limits a [`TaskStore::take_place`] checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunningLimits {
    /// Places held in all, by every owner on every node.
    pub max_running: u32,
    /// Places held by one owner.
    pub max_running_per_principal: u32,
}

/// What [`TaskStore::take_place`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The holder holds a place now.
    Taken,
    /// Every place is held: `running` in all (nothing was written).
    Full {
        /// Places held in all.
        running: u64,
    },
    /// The owner holds `running` places, its limit (nothing was written).
    OwnerFull {
        /// Places the owner holds.
        running: u64,
    },
}

/// A stored 2025-11-25 HTTP session ([`TaskStore::put_session`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRecord {
    /// The `Mcp-Session-Id` (128 random bits).
    pub id: String,
    /// The principal the session belongs to.
    pub owner: Principal,
    /// What the era's codec needs to serve the session's requests (negotiated version,
    /// client capabilities and info, log level), as it writes it.
    pub state: Value,
    /// The tasks the session created, oldest first ([`TaskStore::add_session_task`]).
    pub created: Vec<TaskId>,
    /// When a request of the session was last served, as far as the store knows.
    pub last_used: Timestamp,
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

/// The answer to an input request: the client's response, or its error.
pub type Answer = Result<Value, ErrorObject>;

/// A node (one process incarnation: a replica or a worker) that runs tasks. A fresh random
/// id per process, so that a restarted process never mistakes its predecessor's claims for
/// its own.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(String);

impl NodeId {
    /// A fresh random node id.
    pub fn random() -> NodeId {
        NodeId(TaskId::random().to_string())
    }

    /// Wraps a stored node id.
    pub fn new(id: impl Into<String>) -> NodeId {
        NodeId(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A claim's lease: who runs a task, and until when the claim holds unless renewed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The node that runs the task.
    pub node: NodeId,
    /// The claim lapses at this time (a claim whose `until` is at or before `now` has lapsed).
    pub until: Timestamp,
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

/// The outcome of a task's work that may have ended before the task's insert ran
/// ([`TaskStore::insert_claimed_early`]).
pub trait EarlyEnding: Send + Sync {
    /// Called once, by the insert, inside its transaction: the update the work's ending
    /// makes to the new task (from `working`, version 1), if the work ended first. After this
    /// call no ending goes in with the insert: a later one is written on its own.
    fn take(&self) -> Option<Update>;
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

impl Update {
    /// Makes `record` what [`TaskStore::replace`] with this update writes of it: its state,
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
    /// The storage under the store is full: nothing of the write was stored, and what was
    /// stored before is intact. Writes succeed again once space is freed.
    #[error("the task store's disk is full: {0}")]
    DiskFull(String),
    /// The owner keeps `retained` tasks, at or over the limit of an
    /// [`insert_claimed`](TaskStore::insert_claimed); nothing was written.
    #[error("{owner} keeps {retained} tasks, the most allowed")]
    Full {
        /// The task's owner.
        owner: Principal,
        /// How many tasks the owner keeps.
        retained: u64,
    },
    /// The database cannot be reached for now (down, restarting, recovering from a crash, or
    /// the connection dropped): the request may be retried once it is back, which the store
    /// finds out by itself. A write whose connection dropped while it ran may have committed
    /// or not; one that could not get a connection stored nothing.
    #[error("the task store is unreachable: {0}")]
    Unavailable(String),
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
