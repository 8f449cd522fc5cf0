//! [`ViewStore`]: what a person's view of the tasks reads (the web view): pages newest first
//! with filters, counts by status, a task's status history, and where it came from (its
//! origin, written once at its creation).

use async_trait::async_trait;

use super::{Cursor, StoreError};
use crate::task::{Principal, Status, TaskId, TaskRecord, Timestamp, Version};

/// The operator's reads ([`TaskStore`](super::TaskStore)'s part for the web view), and the
/// origin record they show.
#[async_trait]
pub trait ViewStore: Send + Sync + 'static {
    /// A page of the owner's tasks for a person to look through (the web view): newest
    /// first (by creation time, then id, both descending), only those matching every
    /// filter of `query`, before its cursor. Served from an index (`tasks_by_owner`, or
    /// one per filtered column); a text filter reads rows until the page is full.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn browse(&self, query: &BrowseQuery) -> Result<Vec<TaskRecord>, StoreError>;

    /// How many of the owner's stored tasks are in each status as an operator is told it
    /// (a tool error is `failed` in every era; statuses with none are left out), read from
    /// an index of owner and status.
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

    /// What [`ViewStore::set_origin`] recorded for task `id`, if anything.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn origin(&self, id: &TaskId) -> Result<Option<Origin>, StoreError>;
}

/// A page request for [`ViewStore::browse`]: newest first, filtered.
#[derive(Clone, Debug, PartialEq)]
pub struct BrowseQuery {
    /// Only this principal's tasks.
    pub owner: Principal,
    /// Only tasks in this status, as an operator is told it (a tool error is `failed`).
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

/// One entry of a task's status history ([`ViewStore::history`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The task's version after the write.
    pub version: Version,
    /// The time of the write (the task's `updated_at` then).
    pub at: Timestamp,
    /// The status after the write, as an operator is told it
    /// ([`TaskState::operator_status`](crate::TaskState::operator_status)).
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
        self.status.is_none_or(|status| task.state.operator_status() == status)
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
