//! [`WorkStore`]: what the running work keeps in the store beside its task, so that a
//! server started after a crash can take over: the process group a task's command started,
//! the process groups a server keeps beside its tasks (a proxy's stdio upstream, by key), and
//! a handler's checkpoint.

use async_trait::async_trait;
use serde_json::Value;

use super::StoreError;
use crate::process::{KeptGroup, ProcessGroup};
use crate::task::TaskId;

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
}
