//! [`WorkStore`] for [`PostgresStore`]: a task's process group and checkpoint (in its row)
//! and the process groups kept by key (`kept_groups`).

use async_trait::async_trait;
use crate::conn::Session;
use tokio_postgres::types::ToSql;

use mcp_tasks_engine::{KeptGroup, ProcessGroup, StoreError, TaskId, WorkStore};

use crate::outage::backend;
use crate::sql;
use crate::store::PostgresStore;

#[async_trait]
impl WorkStore for PostgresStore {
    async fn set_process_group(&self, id: &TaskId, group: &ProcessGroup) -> Result<(), StoreError> {
        self.observed(async {
            let start = i64::try_from(group.start_time).map_err(backend)?;
            let client = self.client().await?;
            let statement = client.prepare_cached(sql::SET_PROCESS_GROUP).await.map_err(backend)?;
            client
                .execute(&statement, &[&i64::from(group.pgid), &start, &id.as_str()])
                .await
                .map(|_| ())
                .map_err(backend)
        })
        .await
    }

    async fn process_group(&self, id: &TaskId) -> Result<Option<ProcessGroup>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::PROCESS_GROUP).await.map_err(backend)?;
        let row = client.query_opt(&statement, &[&id.as_str()]).await.map_err(backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let pgid: Option<i64> = row.try_get(0).map_err(backend)?;
        let start: Option<i64> = row.try_get(1).map_err(backend)?;
        Ok(pgid
            .and_then(|pgid| u32::try_from(pgid).ok())
            .zip(start.and_then(|start| u64::try_from(start).ok()))
            .map(|(pgid, start_time)| ProcessGroup { pgid, start_time }))
    }

    async fn set_kept_group(&self, key: &str, kept: Option<&KeptGroup>) -> Result<(), StoreError> {
        self.observed(async {
            let client = self.client().await?;
            match kept {
                Some(kept) => {
                    let start = i64::try_from(kept.group.start_time).map_err(backend)?;
                    let keeper_start = i64::try_from(kept.keeper_start).map_err(backend)?;
                    let statement = client.prepare_cached(sql::SET_KEPT_GROUP).await.map_err(backend)?;
                    let params: [&(dyn ToSql + Sync); 5] =
                        [&key, &i64::from(kept.group.pgid), &start, &i64::from(kept.keeper_pid), &keeper_start];
                    client.execute(&statement, &params).await
                }
                None => {
                    let statement = client.prepare_cached(sql::FORGET_KEPT_GROUP).await.map_err(backend)?;
                    client.execute(&statement, &[&key]).await
                }
            }
            .map(|_| ())
            .map_err(backend)
        })
        .await
    }

    async fn kept_group(&self, key: &str) -> Result<Option<KeptGroup>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::KEPT_GROUP).await.map_err(backend)?;
        let row = client.query_opt(&statement, &[&key]).await.map_err(backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let column = |index: usize| row.try_get::<_, i64>(index).map_err(backend);
        let (pgid, start, keeper, keeper_start) = (column(0)?, column(1)?, column(2)?, column(3)?);
        Ok((|| {
            Some(KeptGroup {
                group: ProcessGroup { pgid: u32::try_from(pgid).ok()?, start_time: u64::try_from(start).ok()? },
                keeper_pid: u32::try_from(keeper).ok()?,
                keeper_start: u64::try_from(keeper_start).ok()?,
            })
        })())
    }

    async fn set_checkpoint(&self, id: &TaskId, attempt: u32, checkpoint: &serde_json::Value) -> Result<bool, StoreError> {
        let text = checkpoint.to_string();
        self.execute(sql::SET_CHECKPOINT, &[&text, &id.as_str(), &i64::from(attempt)])
            .await
            .map(|written| written == 1)
    }

    async fn checkpoint(&self, id: &TaskId) -> Result<Option<serde_json::Value>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::CHECKPOINT).await.map_err(backend)?;
        let row = client.query_opt(&statement, &[&id.as_str()]).await.map_err(backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let text: Option<String> = row.try_get(0).map_err(backend)?;
        text.map(|text| serde_json::from_str(&text).map_err(backend)).transpose()
    }
}
