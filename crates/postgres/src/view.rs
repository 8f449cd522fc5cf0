//! [`ViewStore`] for [`PostgresStore`]: what the web view reads (pages newest first with
//! filters, counts by status, a task's status history kept by triggers, its origin).

use async_trait::async_trait;
use crate::conn::Session;
use tokio_postgres::types::ToSql;

use mcp_tasks_engine::{
    BrowseQuery, HistoryEntry, Origin, Principal, Status, StoreError, TaskId, TaskRecord, Timestamp, Version, ViewStore,
};

use crate::outage::backend;
use crate::sql;
use crate::store::PostgresStore;

#[async_trait]
impl ViewStore for PostgresStore {
    async fn browse(&self, query: &BrowseQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let status = query.status.map(Status::as_str);
        let text = query.text.as_deref().map(str::to_ascii_lowercase);
        let (at, id) = match &query.before {
            Some(cursor) => (Some(cursor.created_at.0), Some(cursor.id.as_str())),
            None => (None, None),
        };
        let params: [&(dyn ToSql + Sync); 7] = [
            &query.owner.as_str(),
            &status,
            &query.tool,
            &text,
            &at,
            &id,
            &i64::from(query.limit),
        ];
        self.query(sql::BROWSE, &params).await
    }

    async fn status_counts(&self, owner: &Principal) -> Result<Vec<(Status, u64)>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(sql::STATUS_COUNTS)
            .await
            .map_err(backend)?;
        let rows = client
            .query(&statement, &[&owner.as_str()])
            .await
            .map_err(backend)?;
        let mut counts = Vec::new();
        for row in rows {
            let status: String = row.try_get(0).map_err(backend)?;
            let n: i64 = row.try_get(1).map_err(backend)?;
            if let (Some(status), Ok(n)) = (Status::parse(&status), u64::try_from(n)) {
                counts.push((status, n));
            }
        }
        Ok(counts)
    }

    async fn history(&self, id: &TaskId) -> Result<Vec<HistoryEntry>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(sql::HISTORY)
            .await
            .map_err(backend)?;
        let rows = client
            .query(&statement, &[&id.as_str()])
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let decode =
                    || -> Result<HistoryEntry, Box<dyn std::error::Error + Send + Sync>> {
                        let status: String = row.try_get(2)?;
                        Ok(HistoryEntry {
                            version: Version(u64::try_from(row.try_get::<_, i64>(0)?)?),
                            at: Timestamp(row.try_get(1)?),
                            status: Status::parse(&status)
                                .ok_or_else(|| format!("unknown status {status:?}"))?,
                            message: row.try_get(3)?,
                        })
                    };
                decode().map_err(StoreError::Backend)
            })
            .collect()
    }

    async fn set_origin(&self, id: &TaskId, origin: &Origin) -> Result<(), StoreError> {
        self.execute(sql::SET_ORIGIN, &[&origin.era, &origin.client_name, &origin.client_version, &id.as_str()])
            .await
            .map(|_| ())
    }

    async fn origin(&self, id: &TaskId) -> Result<Option<Origin>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(sql::ORIGIN)
            .await
            .map_err(backend)?;
        let row = client
            .query_opt(&statement, &[&id.as_str()])
            .await
            .map_err(backend)?;
        let Some(row) = row else { return Ok(None) };
        let era: Option<String> = row.try_get(0).map_err(backend)?;
        let client_name: Option<String> = row.try_get(1).map_err(backend)?;
        let client_version: Option<String> = row.try_get(2).map_err(backend)?;
        Ok(era.map(|era| Origin {
            era,
            client_name,
            client_version,
        }))
    }
}
