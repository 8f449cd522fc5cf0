//! [`RecordStore`] for [`PostgresStore`]: the task records (insert with idempotency keys,
//! reads, the compare-and-set replace, listing, counting, the scans, purge, cancel requests,
//! input answers, the change feed across replicas).

use std::sync::Arc;

use async_trait::async_trait;
use crate::conn::Session;
use tokio::sync::broadcast;
use tokio_postgres::types::{Json, ToSql};

use mcp_tasks_engine::{
    Answer, IdempotencyKey, Inserted, ListQuery, Principal, RecordStore, StoreError, TaskId, TaskRecord, Timestamp,
    Update, Version,
};

use crate::outage::backend;
use crate::conn::Conn;
use crate::group::{self, Group, Kind};
use crate::rows::{ReplaceColumns, ReplaceValues, insert_keyed, read_record};
use crate::sql;
use crate::store::PostgresStore;

#[async_trait]
impl RecordStore for PostgresStore {
    async fn insert(&self, task: &TaskRecord) -> Result<Inserted, StoreError> {
        let inserted = self.observed(async {
            let client = self.client().await?;
            insert_keyed(&client, task, None, None, self.recording()).await
        })
        .await;
        if let Ok(Inserted::New) = &inserted {
            self.announce(&task.id, Some(task)).await;
        }
        inserted
    }

    async fn find_by_key(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.query_opt(sql::FIND_BY_KEY, &[&owner.as_str(), &key.as_str(), &now.0]).await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.get_shared(id).await?.map(Arc::unwrap_or_clone))
    }

    /// A finished task this replica wrote or saw on its feed lately is answered from the
    /// feed's copy (it never changes again); any other is read.
    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<TaskRecord>>, StoreError> {
        if let Some(settled) = self.feed.settled(id, crate::feed::wall_clock()) {
            return Ok(Some(settled));
        }
        Ok(self.query_opt(sql::GET, &[&id.as_str()]).await?.map(Arc::new))
    }

    /// The task as this replica last wrote or saw it (its own write, most often), else read.
    async fn get_known(&self, id: &TaskId) -> Result<Option<Arc<TaskRecord>>, StoreError> {
        match self.feed.known(id) {
            Some(known) => Ok(Some(known)),
            None => self.get_shared(id).await,
        }
    }

    async fn replace(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
    ) -> Result<TaskRecord, StoreError> {
        // A version beyond i64 cannot be stored, so no row has it: the task moved on.
        if ReplaceValues::new(id, expected, update, false).is_none() {
            return Err(StoreError::Conflict(id.clone()));
        }
        let write = Replace { id: id.clone(), expected, update: update.clone() };
        let written = group::write::<Replaces>(self, write).await;
        let written = written.and_then(|written| written.ok_or_else(|| StoreError::Conflict(id.clone())));
        if let Ok(written) = &written {
            self.announce(id, Some(written)).await;
        }
        written
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let owner = query.owner.as_str();
        let limit = i64::from(query.limit);
        match &query.after {
            None => self.query(sql::LIST_FIRST, &[&owner, &limit]).await,
            Some(cursor) => {
                self.query(sql::LIST_AFTER, &[&owner, &cursor.created_at.0, &cursor.id.as_str(), &limit])
                    .await
            }
        }
    }

    async fn count(&self, owner: &Principal) -> Result<u64, StoreError> {
        // The owner's rows of `task_counts`, kept by the statements that insert and purge.
        let count = self.query_scalar(sql::COUNT, &[&owner.as_str()]).await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn unfinished(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        self.query(sql::UNFINISHED, &[&i64::from(limit)]).await
    }

    async fn expired(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        self.query(sql::EXPIRED, &[&now.0, &i64::from(limit)]).await
    }

    async fn purge(&self, now: Timestamp, limit: u32) -> Result<u64, StoreError> {
        let purged = self
            .observed(async {
                let client = self.client().await?;
                let statement = client.prepare_cached(sql::PURGE).await.map_err(backend)?;
                let rows = client.query(&statement, &[&now.0, &i64::from(limit)]).await.map_err(backend)?;
                rows.iter().map(|row| row.try_get::<_, String>(0).map(TaskId::from).map_err(backend)).collect::<Result<Vec<_>, _>>()
            })
            .await?;
        self.feed.purged(&purged);
        Ok(u64::try_from(purged.len()).unwrap_or(u64::MAX))
    }

    async fn request_cancel(&self, id: &TaskId) -> Result<bool, StoreError> {
        let requested = self.observed(async {
            let client = self.client().await?;
            let statement = client
                .prepare_cached(sql::REQUEST_CANCEL)
                .await
                .map_err(backend)?;
            let row = client
                .query_opt(&statement, &[&id.as_str()])
                .await
                .map_err(backend)?;
            Ok(row.is_some())
        })
        .await;
        if let Ok(true) = &requested {
            self.announce(id, None).await;
        }
        requested
    }

    async fn cancel_requested(&self, id: &TaskId) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(sql::CANCEL_REQUESTED)
            .await
            .map_err(backend)?;
        let row = client
            .query_opt(&statement, &[&id.as_str()])
            .await
            .map_err(backend)?;
        row.map(|row| row.try_get::<_, bool>(0))
            .transpose()
            .map(|asked| asked.unwrap_or(false))
            .map_err(backend)
    }

    async fn answer(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
        key: &str,
        answer: &Answer,
    ) -> Result<TaskRecord, StoreError> {
        let written = self.observed(async {
            let values =
                ReplaceValues::new(id, expected, update, self.recording()).ok_or_else(|| StoreError::Conflict(id.clone()))?;
            let answer = Json(answer);
            let [state, status, message, updated_at, attempt, task, version] = values.params();
            let written = if self.recording() {
                let params: [&(dyn ToSql + Sync); 10] =
                    [state, status, message, updated_at, attempt, task, version, &key, &answer, values.event()];
                self.query_opt(sql::ANSWER_RECORDING, &params).await?
            } else {
                let params: [&(dyn ToSql + Sync); 9] = [state, status, message, updated_at, attempt, task, version, &key, &answer];
                self.query_opt(sql::ANSWER, &params).await?
            };
            written.ok_or_else(|| StoreError::Conflict(id.clone()))
        })
        .await;
        if let Ok(written) = &written {
            self.announce(id, Some(written)).await;
        }
        written
    }

    async fn take_answer(&self, id: &TaskId, key: &str) -> Result<Option<Answer>, StoreError> {
        self.observed(async {
            let client = self.client().await?;
            let statement = client
                .prepare_cached(sql::TAKE_ANSWER)
                .await
                .map_err(backend)?;
            let row = client
                .query_opt(&statement, &[&id.as_str(), &key])
                .await
                .map_err(backend)?;
            row.map(|row| row.try_get::<_, Json<Answer>>(0).map(|json| json.0))
                .transpose()
                .map_err(backend)
        })
        .await
    }

    fn changes(&self) -> broadcast::Receiver<Arc<TaskRecord>> {
        self.feed.sender.subscribe()
    }
}

/// A compare-and-set write of `replace`, owning what it writes, queued for its group.
pub(crate) struct Replace {
    id: TaskId,
    expected: Version,
    update: Update,
}

impl Replace {
    fn values(&self, recording: bool) -> Result<ReplaceValues<'_>, StoreError> {
        ReplaceValues::new(&self.id, self.expected, &self.update, recording).ok_or_else(|| StoreError::Conflict(self.id.clone()))
    }
}

/// `replace` in groups ([`crate::group`]): answers each task's new row, or none if its
/// version moved on.
pub(crate) struct Replaces;

#[async_trait]
impl Kind for Replaces {
    type Item = Replace;
    type Answer = Option<TaskRecord>;

    fn group(store: &PostgresStore) -> &Group<Replaces> {
        &store.groups.replaces
    }

    fn apart(item: &Replace, other: &Replace) -> bool {
        item.id == other.id
    }

    async fn one(store: &PostgresStore, client: &Conn, item: &Replace) -> Result<Option<TaskRecord>, StoreError> {
        let recording = store.recording();
        let values = item.values(recording)?;
        let mut params = values.params().to_vec();
        if recording {
            params.push(values.event());
        }
        let statement = client
            .prepare_cached(if recording { sql::REPLACE_RECORDING } else { sql::REPLACE })
            .await
            .map_err(backend)?;
        let row = client.query_opt(&statement, &params).await.map_err(backend)?;
        row.as_ref().map(read_record).transpose()
    }

    async fn many(store: &PostgresStore, client: &Conn, items: &[&Replace]) -> Result<Vec<Option<TaskRecord>>, StoreError> {
        let recording = store.recording();
        let values = items.iter().map(|item| item.values(recording)).collect::<Result<Vec<_>, _>>()?;
        let columns = ReplaceColumns::new(&values);
        let params = columns.params();
        let (statement, params) = if recording {
            (sql::REPLACE_GROUP_RECORDING, &params[..])
        } else {
            (sql::REPLACE_GROUP, &params[..7])
        };
        let statement = client.prepare_cached(statement).await.map_err(backend)?;
        let rows = client.query(&statement, params).await.map_err(backend)?;
        let mut written = rows.iter().map(read_record).collect::<Result<Vec<_>, _>>()?;
        Ok(items
            .iter()
            .map(|item| written.iter().position(|row| row.id == item.id).map(|at| written.swap_remove(at)))
            .collect())
    }
}
