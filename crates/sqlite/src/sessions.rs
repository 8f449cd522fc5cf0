//! [`SessionStore`] for [`SqliteStore`]: the 2025-11-25 HTTP session records, kept in memory
//! ([`LocalSessions`](mcp_tasks_engine::store::implement::LocalSessions)): this process is
//! their only reader, and a session does not outlive its server.

use async_trait::async_trait;

use mcp_tasks_engine::{Principal, SessionRecord, SessionStore, StoreError, TaskId, Timestamp};

use crate::store::SqliteStore;

#[async_trait]
impl SessionStore for SqliteStore {
    async fn put_session(&self, session: &SessionRecord) -> Result<(), StoreError> {
        self.inner.sessions.put(session);
        Ok(())
    }

    async fn session(&self, id: &str, owner: &Principal) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self.inner.sessions.get(id, owner))
    }

    async fn add_session_task(&self, id: &str, task: &TaskId) -> Result<(), StoreError> {
        self.inner.sessions.add_task(id, task);
        Ok(())
    }

    async fn touch_sessions(&self, ids: &[String], now: Timestamp) -> Result<Vec<String>, StoreError> {
        Ok(self.inner.sessions.touch(ids, now))
    }

    async fn end_session(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.inner.sessions.end(id))
    }

    async fn prune_sessions(&self, idle_before: Timestamp, limit: u32) -> Result<u64, StoreError> {
        Ok(self.inner.sessions.prune(idle_before, limit))
    }
}
