//! [`DeliveryStore`] for [`PostgresStore`]: the webhooks' deliveries in their table
//! (`webhook_deliveries`, migration 0013), written by the statements that take a task into an
//! event status (`sql::delivery!`) once [`DeliveryStore::record_deliveries`] is called, and
//! claimed by one replica at a time (`FOR UPDATE SKIP LOCKED`: racing replicas take disjoint
//! rows); a dead replica's are taken over when their lease lapses.

use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;

use mcp_tasks_engine::{Delivery, DeliveryStore, NodeId, Status, StoreError, TaskId, Timestamp, Version};

use crate::outage::backend;
use crate::sql;
use crate::conn::Session as _;
use crate::store::PostgresStore;

impl PostgresStore {
    /// Whether this replica's writes record webhook deliveries.
    pub(crate) fn recording(&self) -> bool {
        self.deliveries.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl DeliveryStore for PostgresStore {
    fn record_deliveries(&self) {
        self.deliveries.store(true, Ordering::Relaxed);
    }

    /// The claim, then the claimed tasks in one read.
    async fn claim_deliveries(
        &self,
        node: &NodeId,
        now: Timestamp,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        let until = now.plus_ms(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX)).0;
        let rows = self
            .observed(async {
                let client = self.client().await?;
                let claim = client.prepare_cached(sql::CLAIM_DELIVERIES).await.map_err(backend)?;
                client.query(&claim, &[&node.as_str(), &until, &now.0, &i64::from(limit)]).await.map_err(backend)
            })
            .await?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = rows.iter().map(|row| row.try_get::<_, String>(1)).collect::<Result<_, _>>().map_err(backend)?;
        let records = self.query(sql::GET_MANY, &[&ids]).await?;
        rows.iter()
            .map(|row| {
                let id: i64 = row.try_get(0).map_err(backend)?;
                let task = TaskId::from(row.try_get::<_, String>(1).map_err(backend)?);
                let event: String = row.try_get(3).map_err(backend)?;
                Ok(Delivery {
                    id,
                    version: Version(u64::try_from(row.try_get::<_, i64>(2).map_err(backend)?).unwrap_or(0)),
                    event: Status::parse(&event)
                        .ok_or_else(|| StoreError::Backend(format!("delivery {id} has an unknown event {event:?}").into()))?,
                    at: Timestamp(row.try_get(4).map_err(backend)?),
                    message: row.try_get(5).map_err(backend)?,
                    attempts: u32::try_from(row.try_get::<_, i32>(6).map_err(backend)?).unwrap_or(0),
                    done: row.try_get(7).map_err(backend)?,
                    record: records.iter().find(|record| record.id == task).cloned(),
                    task,
                })
            })
            .collect()
    }

    async fn finish_delivery(&self, id: i64, node: &NodeId) -> Result<(), StoreError> {
        self.execute(sql::FINISH_DELIVERY, &[&id, &node.as_str()]).await.map(|_| ())
    }

    async fn retry_delivery(
        &self,
        id: i64,
        node: &NodeId,
        done: &[String],
        next_at: Timestamp,
        error: &str,
    ) -> Result<(), StoreError> {
        self.execute(sql::RETRY_DELIVERY, &[&id, &node.as_str(), &next_at.0, &done, &error]).await.map(|_| ())
    }

    async fn next_delivery_at(&self) -> Result<Option<Timestamp>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::NEXT_DELIVERY).await.map_err(backend)?;
        let row = client.query_one(&statement, &[]).await.map_err(backend)?;
        row.try_get::<_, Option<i64>>(0).map(|at| at.map(Timestamp)).map_err(backend)
    }
}
