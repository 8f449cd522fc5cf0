//! The 2025-11-25 HTTP session records of the store, for the transport: so that on a shared
//! store (many replicas) any replica serves any session, and a DELETE through one ends it for
//! all ([`SessionStore::put_session`](crate::SessionStore::put_session) and the rest). Times come
//! from the engine's clock.

use std::time::Duration;

use serde_json::Value;

use crate::engine::Engine;
use crate::error::EngineError;
use crate::store::SessionRecord;
use crate::task::{Principal, TaskId, Timestamp};

impl Engine {
    /// Whether other processes serve this store too ([`ClaimStore::shared`](crate::ClaimStore::shared)):
    /// then a session must be stored to be served by them.
    pub fn shares_store(&self) -> bool {
        self.inner.store.shared()
    }

    /// Stores session `id` of `owner` with the codec's `state`, used now (replacing a stored
    /// one's state; the tasks it created are kept).
    ///
    /// # Errors
    /// [`EngineError::Store`].
    pub async fn save_session(&self, id: &str, owner: &Principal, state: Value) -> Result<(), EngineError> {
        let record = SessionRecord {
            id: id.to_owned(),
            owner: owner.clone(),
            state,
            created: Vec::new(),
            last_used: self.inner.clock.now(),
        };
        Ok(self.inner.store.put_session(&record).await?)
    }

    /// The stored session `id` of `owner`; `None` if it is not stored, or another
    /// principal's.
    ///
    /// # Errors
    /// [`EngineError::Store`].
    pub async fn stored_session(&self, id: &str, owner: &Principal) -> Result<Option<SessionRecord>, EngineError> {
        Ok(self.inner.store.session(id, owner).await?)
    }

    /// Records that session `id` created `task` (its listing when requestors are not identified).
    ///
    /// # Errors
    /// [`EngineError::Store`].
    pub async fn add_session_task(&self, id: &str, task: &TaskId) -> Result<(), EngineError> {
        Ok(self.inner.store.add_session_task(id, task).await?)
    }

    /// Marks sessions `ids` used now; returns those still stored (a few hundred at a time).
    ///
    /// # Errors
    /// [`EngineError::Store`].
    pub async fn touch_sessions(&self, ids: &[String]) -> Result<Vec<String>, EngineError> {
        Ok(self.inner.store.touch_sessions(ids, self.inner.clock.now()).await?)
    }

    /// Deletes stored session `id`; whether it was stored.
    ///
    /// # Errors
    /// [`EngineError::Store`].
    pub async fn end_stored_session(&self, id: &str) -> Result<bool, EngineError> {
        Ok(self.inner.store.end_session(id).await?)
    }

    /// Deletes stored sessions unused for `idle` (by any node), at most `limit`; how many went.
    ///
    /// # Errors
    /// [`EngineError::Store`].
    pub async fn prune_sessions(&self, idle: Duration, limit: u32) -> Result<u64, EngineError> {
        let idle_ms = i64::try_from(idle.as_millis()).unwrap_or(i64::MAX);
        let before = Timestamp(self.inner.clock.now().0.saturating_sub(idle_ms));
        Ok(self.inner.store.prune_sessions(before, limit).await?)
    }
}
