//! What a person's view of the tasks reads (the web view `/ui`): pages newest first with
//! filters, counts by status, a task's status history and origin. Every read is scoped to
//! the owner like [`Engine::get`]: another principal's task is not found.

use crate::TaskRecord;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::store::{BrowseQuery, HistoryEntry, Origin};
use crate::task::{Principal, Status, TaskId};

impl Engine {
    /// A page of the owner's tasks, newest first, filtered ([`ViewStore::browse`](crate::ViewStore::browse)).
    ///
    /// # Errors
    /// A store failure.
    pub async fn browse(&self, query: &BrowseQuery) -> Result<Vec<TaskRecord>, EngineError> {
        Ok(self.inner.store.browse(query).await?)
    }

    /// How many of the owner's tasks are in each status, every status listed (zero too),
    /// in the order working, input_required, completed, failed, cancelled.
    ///
    /// # Errors
    /// A store failure.
    pub async fn status_counts(
        &self,
        owner: &Principal,
    ) -> Result<Vec<(Status, u64)>, EngineError> {
        let stored = self.inner.store.status_counts(owner).await?;
        let all = [
            Status::Working,
            Status::InputRequired,
            Status::Completed,
            Status::Failed,
            Status::Cancelled,
        ];
        Ok(all
            .into_iter()
            .map(|status| {
                let count = stored
                    .iter()
                    .filter(|(s, _)| *s == status)
                    .map(|(_, n)| n)
                    .sum();
                (status, count)
            })
            .collect())
    }

    /// The owner's task `id` with its status history (oldest first) and origin.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] for an unknown or foreign id; a store failure.
    pub async fn inspect(&self, owner: &Principal, id: &TaskId) -> Result<Inspected, EngineError> {
        let record = self.get(owner, id).await?;
        let history = self.inner.store.history(id).await?;
        let origin = self.inner.store.origin(id).await?;
        Ok(Inspected {
            record,
            history,
            origin,
        })
    }
}

/// A task as [`Engine::inspect`] reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Inspected {
    /// The task as it stands.
    pub record: TaskRecord,
    /// Its status history, oldest first.
    pub history: Vec<HistoryEntry>,
    /// Where it came from, if recorded.
    pub origin: Option<Origin>,
}
