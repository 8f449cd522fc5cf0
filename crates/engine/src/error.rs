//! Errors of the engine. They name domain failures; the server maps them to JSON-RPC once.

use crate::store::StoreError;
use crate::task::{EventKind, Status, TaskId};

/// What can go wrong in an engine call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// No such task for this principal (also: another principal's task, or purged).
    #[error("task not found: {0}")]
    NotFound(TaskId),
    /// The task's state does not allow this.
    #[error("cannot {event} task {id}: already in terminal status '{from}'")]
    Refused {
        /// The task.
        id: TaskId,
        /// Its status.
        from: Status,
        /// What was tried.
        event: EventKind,
    },
    /// No tool (handler) of this name is registered.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// The task kept changing under us; the caller may retry.
    #[error("task {0} kept changing while we tried to update it")]
    Contended(TaskId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
