//! [`SessionStore`] for [`PostgresStore`]: the 2025-11-25 HTTP session records in their
//! table, so that any replica serves any session and a DELETE through one ends it for all.

use async_trait::async_trait;
use crate::conn::Session;

use mcp_tasks_engine::{Principal, SessionRecord, SessionStore, StoreError, TaskId, Timestamp};

use crate::outage::backend;
use crate::sql;
use crate::store::PostgresStore;

#[async_trait]
impl SessionStore for PostgresStore {
    async fn put_session(&self, session: &SessionRecord) -> Result<(), StoreError> {
        let state = session.state.to_string();
        self.execute(sql::PUT_SESSION, &[&session.id, &session.owner.as_str(), &state, &session.last_used.0])
            .await
            .map(|_| ())
    }

    async fn session(&self, id: &str, owner: &Principal) -> Result<Option<SessionRecord>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::SESSION).await.map_err(backend)?;
        let Some(row) = client.query_opt(&statement, &[&id, &owner.as_str()]).await.map_err(backend)? else {
            return Ok(None);
        };
        let state: String = row.try_get(0).map_err(backend)?;
        let created: Vec<String> = row.try_get(1).map_err(backend)?;
        Ok(Some(SessionRecord {
            id: id.to_owned(),
            owner: owner.clone(),
            state: serde_json::from_str(&state).map_err(backend)?,
            created: created.into_iter().map(TaskId::from).collect(),
            last_used: Timestamp(row.try_get(2).map_err(backend)?),
        }))
    }

    async fn add_session_task(&self, id: &str, task: &TaskId) -> Result<(), StoreError> {
        self.execute(sql::ADD_SESSION_TASK, &[&id, &task.as_str()]).await.map(|_| ())
    }

    async fn touch_sessions(&self, ids: &[String], now: Timestamp) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::TOUCH_SESSIONS).await.map_err(backend)?;
        let rows = client.query(&statement, &[&ids, &now.0]).await.map_err(backend)?;
        rows.iter().map(|row| row.try_get::<_, String>(0).map_err(backend)).collect()
    }

    async fn end_session(&self, id: &str) -> Result<bool, StoreError> {
        self.execute(sql::END_SESSION, &[&id]).await.map(|ended| ended > 0)
    }

    async fn prune_sessions(&self, idle_before: Timestamp, limit: u32) -> Result<u64, StoreError> {
        self.execute(sql::PRUNE_SESSIONS, &[&idle_before.0, &i64::from(limit)]).await
    }
}
