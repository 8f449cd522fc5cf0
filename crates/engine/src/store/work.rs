//! [`WorkStore`]: what the running work keeps in the store beside its task, so that a
//! server started after a crash can take over: the process group a task's command started,
//! the process groups a server keeps beside its tasks (a proxy's stdio upstream, by key), a
//! handler's checkpoint, and the task's event log (what the work printed and reported, as
//! numbered events any process can read: [`LoggedEvent`]).

use async_trait::async_trait;
use serde_json::Value;

use super::StoreError;
use crate::process::{KeptGroup, ProcessGroup};
use crate::task::{TaskId, Timestamp};

/// An event to add to a task's log ([`WorkStore::append_events`]).
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    /// Its type, vendor-prefixed (`dev.mcp-tasks.output`, …).
    pub kind: String,
    /// Its payload: a JSON object.
    pub payload: Value,
    /// When it happened.
    pub at: Timestamp,
}

/// An event of a task's log as stored: its number in the log and what it says.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedEvent {
    /// Its number: the task's first stored event is 1 (0 is the task's creation, read from the
    /// task itself), each next one one more, never reused.
    pub seq: u64,
    /// Its type.
    pub kind: String,
    /// Its payload.
    pub payload: Value,
    /// When it happened.
    pub at: Timestamp,
}

/// Stored events of a task's log ([`WorkStore::logged_events`]) with the log's bounds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventPage {
    /// The stored events asked for, in order.
    pub events: Vec<LoggedEvent>,
    /// The first number still kept: 0 while nothing was pruned (then the creation's event,
    /// number 0, is kept too), else one past the last event pruned.
    pub earliest: u64,
    /// The number the next stored event gets (1 for a log with nothing stored).
    pub next: u64,
}

/// How much of its log a task keeps: the oldest stored events are pruned past either bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventLimits {
    /// The most events kept.
    pub events: u64,
    /// The most payload bytes kept (as stored JSON text).
    pub bytes: u64,
}

impl Default for EventLimits {
    /// 10,000 events and 4 MiB of payloads per task.
    fn default() -> EventLimits {
        EventLimits { events: 10_000, bytes: 4 << 20 }
    }
}

/// Records of the running work ([`TaskStore`](super::TaskStore)'s part for process groups,
/// kept groups and checkpoints).
#[async_trait]
pub trait WorkStore: Send + Sync + 'static {
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

    /// What [`WorkStore::set_kept_group`] last recorded under `key`, if anything.
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

    /// Appends `events` to the log of task `id`, numbered on from its last, if the task is
    /// still unfinished and its attempt is still `attempt` (fenced as a checkpoint is), then
    /// prunes its oldest stored events past `limits`, all in one transaction: durable before
    /// returning. Returns the number the first one got, or `None` if nothing was written (a
    /// stale attempt, a finished or an unknown task: a finished task's log never changes,
    /// since its last event is read from the task itself). The log goes with its task when it
    /// is purged.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn append_events(
        &self,
        id: &TaskId,
        attempt: u32,
        events: &[NewEvent],
        limits: EventLimits,
    ) -> Result<Option<u64>, StoreError>;

    /// Up to `limit` stored events of task `id` numbered after `after`, in order, with the
    /// log's bounds (an unknown task's log is empty: earliest 0, next 1).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn logged_events(&self, id: &TaskId, after: u64, limit: u32) -> Result<EventPage, StoreError>;
}
