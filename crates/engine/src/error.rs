//! Errors of the engine. They name domain failures; the server maps them to JSON-RPC once.

use crate::store::StoreError;
use crate::task::{EventKind, Principal, Status, TaskId};

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
    /// A limit of the engine's [`Policy`](crate::Policy) refused a new task or call; nothing
    /// was created or started. The requestor may try again later.
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
    /// The task kept changing under us; the caller may retry.
    #[error("task {0} kept changing while we tried to update it")]
    Contended(TaskId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Which limit of the [`Policy`](crate::Policy) refused a task or call, and by how much.
///
/// The requestor's problem, not the server's: it has too much going on. Checked before
/// anything is written, so a refusal leaves the store as it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitExceeded {
    /// [`Policy::max_running`](crate::Policy::max_running): this process runs as many tasks
    /// and plain calls as it may.
    #[error("{running} tasks and calls are running, the most this server allows (max_running = {limit})")]
    Running {
        /// Tasks and plain calls running in this process now.
        running: usize,
        /// The limit.
        limit: u32,
    },
    /// [`Policy::max_running_per_principal`](crate::Policy::max_running_per_principal): the
    /// principal runs as many tasks and plain calls as one principal may.
    #[error(
        "principal {owner} has {running} tasks and calls running, the most one principal may \
         (max_running_per_principal = {limit})"
    )]
    RunningPerPrincipal {
        /// The principal.
        owner: Principal,
        /// Its tasks and plain calls running in this process now.
        running: usize,
        /// The limit.
        limit: u32,
    },
    /// [`Policy::max_retained_per_principal`](crate::Policy::max_retained_per_principal):
    /// the store keeps as many of the principal's tasks (finished or not) as it may.
    #[error(
        "principal {owner} has {retained} tasks in the store, the most one principal may keep \
         (max_retained_per_principal = {limit})"
    )]
    RetainedPerPrincipal {
        /// The principal.
        owner: Principal,
        /// Its tasks in the store now.
        retained: u64,
        /// The limit.
        limit: u64,
    },
}
