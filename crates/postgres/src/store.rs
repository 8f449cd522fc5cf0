//! [`PostgresStore`]: the [`TaskStore`] on a PostgreSQL database.
//!
//! Every method is one statement on a pooled connection, in autocommit, except `insert` of a
//! task with an idempotency key that is taken, which takes up to a few statements (see
//! [`PostgresStore::insert`]'s comments); the database does the concurrency, so there is no
//! writer thread as in SQLite. A returned write is committed: with PostgreSQL's default
//! `synchronous_commit = on`, flushed to its WAL (invariant 1).

use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, PoolError, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{Json, ToSql};
use tokio_postgres::{NoTls, Row};

use mcp_tasks_engine::{
    Answer, BrowseQuery, HistoryEntry, IdempotencyKey, InputKind, Inserted, KeptGroup, Lease, ListQuery, Origin, Place, PlaceHolder,
    Principal, ProcessGroup, RunningLimits, SessionRecord, Status, StoreError, TaskId, TaskRecord, TaskState,
    Timestamp, TraceContext, Update, Version, ClaimStore, RecordStore, SessionStore, ViewStore, WorkStore,
};
use tokio::sync::broadcast;

use crate::feed::Feed;
use crate::outage::backend;
use crate::{migrate, outage, sql, url};

/// The most connections one store (one replica) holds open.
const POOL_SIZE: usize = 16;

/// How long opening a connection may take, unless the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a keyed `insert` tries again when the key changed hands between its
/// statements (taken, then released by a task past its TTL, then taken again…).
const KEY_ROUNDS: usize = 4;

/// The task store on a PostgreSQL database: what lets tasks outlive the machine of one
/// server, and (in a later step) be shared by many.
///
/// A cheap handle: clones share one pool of connections. Open it with
/// [`PostgresStore::connect`]. The tables live in the connection's current schema (the first
/// of its `search_path`), `public` unless the URL says otherwise, e.g.
/// `postgres://u@host/db?options=-c%20search_path%3Dtasks`.
///
/// Connections are plain TCP or a Unix socket: this build has no TLS (`sslmode=require` is
/// refused when connecting).
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// The URL with its password hidden: the only form that is ever shown.
    shown: Arc<str>,
    /// The change feed, shared by the clones; its listener stops with the last one.
    feed: Arc<Feed>,
    /// Told of every write ([`PostgresStore::on_commit`]), shared by the clones.
    observer: Arc<OnceLock<CommitObserver>>,
    /// The channel the feeds of every replica listen on (`mcp_tasks.<schema>`).
    channel: Arc<str>,
}

/// What [`PostgresStore::on_commit`] is told of each write.
type CommitObserver = Box<dyn Fn(Commit) + Send + Sync>;

/// One write of the store: a statement in autocommit, or a transaction
/// ([`PostgresStore::on_commit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Commit {
    /// From taking a pooled connection to the end of the commit (PostgreSQL's WAL flush
    /// included) or of the failure.
    pub elapsed: Duration,
    /// How many writes it held: always 1 (each write commits on its own; there is no
    /// group commit as in SQLite's writer thread).
    pub writes: usize,
    /// Whether it committed: `false` only for a backend failure or an unreachable database
    /// (a compare-and-set that finds the task moved on, a duplicate id or a full owner
    /// committed nothing, but the database answered).
    pub committed: bool,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore").field("url", &self.shown).finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/db[?…]`, or
    /// a `key=value` connection string), checks that it answers, and migrates the schema to
    /// this build's version under an advisory lock (replicas starting together do not race).
    ///
    /// # Errors
    /// [`StoreError::Backend`] if the URL cannot be read, the server cannot be reached or
    /// refuses the login, the `search_path` names no schema, a migration fails, or the schema
    /// is newer than this build. Every message names the URL with its password hidden
    /// ([`redact`](crate::redact)), never the password.
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        let shown: Arc<str> = url::redact(url).into();
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|err| failed(&shown, "cannot read the connection URL", &err))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("mcp-tasks");
        }
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|err| failed(&shown, "cannot build the connection pool", &err))?;
        let mut client = pool
            .get()
            .await
            .map_err(|err| failed(&shown, "cannot connect to PostgreSQL", &err))?;
        let found = migrate::migrate(&mut client)
            .await
            .map_err(|err| failed(&shown, "cannot prepare the task store's schema", &err))?;
        let schema: String = client
            .query_one("SELECT current_schema()", &[])
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|err| failed(&shown, "cannot read the current schema", &err))?;
        tracing::debug!(url = %shown, schema = migrate::SCHEMA_VERSION, found, "opened the PostgreSQL task store");
        drop(client);
        // The channel every write that changes a task announces it on ([`Self::announce`]).
        let channel = format!("mcp_tasks.{schema}");
        let feed = Arc::new(Feed::start(url, channel.clone(), pool.clone()));
        Ok(PostgresStore { pool, shown, feed, observer: Arc::default(), channel: channel.into() })
    }

    /// Tells the feeds of every replica that task `id` changed, once its write committed: a
    /// statement of its own, outside the write's transaction (migration 0009 says why). A hint:
    /// if it fails, the feeds' poll finds the change within a second.
    async fn announce(&self, id: &TaskId) {
        let sent = async {
            let client = self.client().await?;
            let notify = client.prepare_cached(sql::NOTIFY).await.map_err(backend)?;
            client.execute(&notify, &[&&*self.channel, &id.as_str()]).await.map_err(backend)
        };
        if let Err(err) = sent.await {
            tracing::debug!(task = %id, error = %err, "could not announce a changed task (the feed's poll will find it)");
        }
    }

    /// Calls `observer` after every write this store (and its clones) makes, with its
    /// duration (for metrics: keep it quick). Only the first observer set is kept. Reads are
    /// not reported.
    pub fn on_commit(&self, observer: impl Fn(Commit) + Send + Sync + 'static) {
        let _ = self.observer.set(Box::new(observer));
    }

    /// Runs `write` and tells the observer, if one is set, how long it took and whether it
    /// committed.
    async fn observed<T>(&self, write: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
        let started = Instant::now();
        let result = write.await;
        if let Some(observer) = self.observer.get() {
            let committed = !matches!(result, Err(StoreError::Backend(_) | StoreError::Unavailable(_)));
            observer(Commit { elapsed: started.elapsed(), writes: 1, committed });
        }
        result
    }

    /// The URL this store was opened with, its password hidden.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// A pooled connection. While the database refuses connections (restarting, recovering,
    /// or out of reach) it tries again for up to [`CONNECT_WAIT`](outage::CONNECT_WAIT), then
    /// fails as [`StoreError::Unavailable`]; nothing was sent then.
    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        let deadline = Instant::now() + outage::CONNECT_WAIT;
        loop {
            let err = match self.pool.get().await {
                Ok(client) => return Ok(client),
                Err(err) => err,
            };
            let unreachable = match &err {
                PoolError::Backend(driver) => outage::unreachable(driver),
                PoolError::Timeout(_) => true,
                _ => false,
            };
            if !unreachable {
                return Err(failed(&self.shown, "cannot reach PostgreSQL", &err));
            }
            if Instant::now() + outage::CONNECT_RETRY > deadline {
                let waited = outage::CONNECT_WAIT.as_secs();
                let what = format!("cannot reach PostgreSQL (waited {waited} s)");
                return Err(StoreError::Unavailable(format!("{what} at {}: {}", self.shown, outage::described(&err))));
            }
            tokio::time::sleep(outage::CONNECT_RETRY).await;
        }
    }

    /// Runs a read of at most one row through the statement cache.
    async fn query_opt(
        &self,
        statement: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<TaskRecord>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(statement).await.map_err(backend)?;
        let row = client.query_opt(&statement, params).await.map_err(backend)?;
        row.as_ref().map(read_record).transpose()
    }

    /// Runs a write through the statement cache; returns how many rows it touched.
    async fn execute(&self, statement: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
        self.observed(async {
            let client = self.client().await?;
            let statement = client.prepare_cached(statement).await.map_err(backend)?;
            client.execute(&statement, params).await.map_err(backend)
        })
        .await
    }

    /// Runs a read of many rows through the statement cache.
    async fn query(
        &self,
        statement: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(statement).await.map_err(backend)?;
        let rows = client.query(&statement, params).await.map_err(backend)?;
        rows.iter().map(read_record).collect()
    }
}

/// A failure of `what`, naming the store by its shown URL, with every cause of `err` (the
/// pool's errors leave out their driver's cause, e.g. "Connection refused").
fn failed(shown: &str, what: &str, err: &(dyn std::error::Error + 'static)) -> StoreError {
    StoreError::Backend(format!("{what} at {shown}: {}", outage::described(err)).into())
}

#[async_trait]
impl RecordStore for PostgresStore {
    async fn insert(&self, task: &TaskRecord) -> Result<Inserted, StoreError> {
        let inserted = self.observed(async {
            let client = self.client().await?;
            insert_keyed(&client, task, None, None).await
        })
        .await;
        if let Ok(Inserted::New) = &inserted {
            self.announce(&task.id).await;
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
        self.query_opt(sql::GET, &[&id.as_str()]).await
    }

    async fn replace(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
    ) -> Result<TaskRecord, StoreError> {
        let written = self.observed(async {
            // A version beyond i64 cannot be stored, so no row has it: the task moved on.
            let Ok(expected) = i64::try_from(expected.0) else {
                return Err(StoreError::Conflict(id.clone()));
            };
            let written = self
                .query_opt(
                    sql::REPLACE,
                    &[
                        &Json(&update.state),
                        &update.state.status().as_str(),
                        &update.status_message,
                        &update.updated_at.0,
                        &i64::from(update.attempt),
                        &id.as_str(),
                        &expected,
                    ],
                )
                .await?;
            written.ok_or_else(|| StoreError::Conflict(id.clone()))
        })
        .await;
        if written.is_ok() {
            self.announce(id).await;
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
        // One row of `task_counts`, kept by triggers on insert and delete (migration 0001).
        let client = self.client().await?;
        let statement = client.prepare_cached(sql::COUNT).await.map_err(backend)?;
        let row = client
            .query_opt(&statement, &[&owner.as_str()])
            .await
            .map_err(backend)?;
        let count: i64 = row.map(|row| row.try_get(0)).transpose().map_err(backend)?.unwrap_or(0);
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn unfinished(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        self.query(sql::UNFINISHED, &[&i64::from(limit)]).await
    }

    async fn expired(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        self.query(sql::EXPIRED, &[&now.0, &i64::from(limit)]).await
    }

    async fn purge(&self, now: Timestamp, limit: u32) -> Result<u64, StoreError> {
        self.execute(sql::PURGE, &[&now.0, &i64::from(limit)]).await
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
            self.announce(id).await;
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
            let Ok(expected) = i64::try_from(expected.0) else {
                return Err(StoreError::Conflict(id.clone()));
            };
            let written = self
                .query_opt(
                    sql::ANSWER,
                    &[
                        &Json(&update.state),
                        &update.state.status().as_str(),
                        &update.status_message,
                        &update.updated_at.0,
                        &i64::from(update.attempt),
                        &id.as_str(),
                        &expected,
                        &key,
                        &Json(answer),
                    ],
                )
                .await?;
            written.ok_or_else(|| StoreError::Conflict(id.clone()))
        })
        .await;
        if written.is_ok() {
            self.announce(id).await;
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

#[async_trait]
impl ClaimStore for PostgresStore {
    fn shared(&self) -> bool {
        true
    }

    async fn insert_claimed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
    ) -> Result<Inserted, StoreError> {
        let inserted = self.observed(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(backend)?;
            // The owner's count row, locked until commit: the check and the insert are atomic
            // against every replica's inserts for this owner.
            let lock = tx
                .prepare_cached(sql::LOCK_COUNT)
                .await
                .map_err(backend)?;
            let retained: i64 = tx
                .query_one(&lock, &[&task.owner.as_str()])
                .await
                .and_then(|row| row.try_get(0))
                .map_err(backend)?;
            let retained = u64::try_from(retained).unwrap_or(0);
            if retained >= max_retained {
                // A retry of a retained keyed task adds nothing: it is the answer even at the limit.
                if let Some(key) = &task.idempotency_key
                    && let Some(existing) = key_holder(&tx, task.owner.as_str(), key.as_str()).await?
                    && existing.retained_at(task.created_at)
                {
                    return Ok(Inserted::Existing(existing));
                }
                return Err(StoreError::Full {
                    owner: task.owner.clone(),
                    retained,
                });
            }
            // The claim and the origin go in with the row: one round trip, not three.
            let inserted = insert_keyed(&tx, task, Some(lease), origin).await?;
            tx.commit().await.map_err(backend)?;
            Ok(inserted)
        })
        .await;
        if let Ok(Inserted::New) = &inserted {
            self.announce(&task.id).await;
        }
        inserted
    }

    async fn claim(
        &self,
        id: &TaskId,
        attempt: u32,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let taken = self.observed(async {
            self.query_opt(
                sql::CLAIM,
                &[
                    &lease.node.as_str(),
                    &lease.until.0,
                    &id.as_str(),
                    &i64::from(attempt),
                    &now.0,
                ],
            )
            .await
        })
        .await;
        if let Ok(Some(_)) = &taken {
            self.announce(id).await;
        }
        taken
    }

    async fn renew(&self, lease: &Lease, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        self.observed(async {
            let client = self.client().await?;
            let statement = client
                .prepare_cached(sql::RENEW)
                .await
                .map_err(backend)?;
            let rows = client
                .query(&statement, &[&lease.until.0, &lease.node.as_str(), &now.0])
                .await
                .map_err(backend)?;
            let slots = client.prepare_cached(sql::RENEW_SLOTS).await.map_err(backend)?;
            client
                .execute(&slots, &[&lease.until.0, &lease.node.as_str(), &now.0])
                .await
                .map_err(backend)?;
            let places = client.prepare_cached(sql::RENEW_PLACES).await.map_err(backend)?;
            client
                .execute(&places, &[&lease.until.0, &lease.node.as_str(), &now.0])
                .await
                .map_err(backend)?;
            rows.iter()
                .map(|row| {
                    row.try_get::<_, String>(0)
                        .map(TaskId::from)
                        .map_err(backend)
                })
                .collect()
        })
        .await
    }

    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        self.query(sql::LAPSED, &[&now.0, &i64::from(limit)]).await
    }

    async fn take_slot(&self, tool: &str, size: u32, id: &TaskId, lease: &Lease, now: Timestamp) -> Result<bool, StoreError> {
        self.observed(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(backend)?;
            let lock = tx.prepare_cached(sql::LOCK_SLOTS).await.map_err(backend)?;
            tx.execute(&lock, &[&tool]).await.map_err(backend)?;
            let free = tx.prepare_cached(sql::FREE_SLOTS).await.map_err(backend)?;
            tx.execute(&free, &[&tool, &now.0]).await.map_err(backend)?;
            let count = tx.prepare_cached(sql::COUNT_SLOTS).await.map_err(backend)?;
            let row = tx.query_one(&count, &[&tool, &id.as_str()]).await.map_err(backend)?;
            let (held, mine): (i64, i64) =
                (row.try_get(0).map_err(backend)?, row.try_get(1).map_err(backend)?);
            let taken = if mine > 0 {
                true
            } else if held >= i64::from(size) {
                false
            } else {
                let take = tx.prepare_cached(sql::TAKE_SLOT).await.map_err(backend)?;
                tx.execute(&take, &[&tool, &id.as_str(), &lease.node.as_str(), &lease.until.0])
                    .await
                    .map_err(backend)?;
                true
            };
            tx.commit().await.map_err(backend)?;
            Ok(taken)
        })
        .await
    }

    async fn take_place(
        &self,
        holder: &PlaceHolder,
        owner: &Principal,
        limits: &RunningLimits,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Place, StoreError> {
        self.observed(async {
            let client = self.client().await?;
            let take = client.prepare_cached(sql::TAKE_PLACE).await.map_err(backend)?;
            let limit = |limit: u32| i64::from(limit);
            let row = client
                .query_one(
                    &take,
                    &[
                        &holder.as_str(),
                        &holder.is_task(),
                        &owner.as_str(),
                        &lease.node.as_str(),
                        &lease.until.0,
                        &now.0,
                        &limit(limits.max_running),
                        &limit(limits.max_running_per_principal),
                    ],
                )
                .await
                .map_err(backend)?;
            let outcome: String = row.try_get(0).map_err(backend)?;
            let running = row.try_get::<_, i64>(1).map(|count| count.max(0).unsigned_abs()).map_err(backend)?;
            match outcome.as_str() {
                "taken" => Ok(Place::Taken),
                "full" => Ok(Place::Full { running }),
                "owner_full" => Ok(Place::OwnerFull { running }),
                other => Err(StoreError::Backend(format!("mcp_tasks_take_place answered {other:?}").into())),
            }
        })
        .await
    }

    async fn release_place(&self, holder: &PlaceHolder) -> Result<(), StoreError> {
        self.execute(sql::RELEASE_PLACE, &[&holder.as_str()]).await.map(|_| ())
    }

    async fn release_slot(&self, tool: &str, id: &TaskId) -> Result<(), StoreError> {
        self.execute(sql::RELEASE_SLOT, &[&tool, &id.as_str()]).await.map(|_| ())
    }
}

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

/// Inserts `task` through `client` (a connection or a transaction): a new task, or the
/// owner's retained task holding its idempotency key.
async fn insert_keyed(
    client: &impl GenericClient,
    task: &TaskRecord,
    claim: Option<&Lease>,
    origin: Option<&Origin>,
) -> Result<Inserted, StoreError> {
    let row = NewRow::from_record(task)?;
    let insert = client
        .prepare_cached(sql::INSERT)
        .await
        .map_err(backend)?;
    let traceparent = task.trace.as_ref().map(TraceContext::traceparent);
    let tracestate = task.trace.as_ref().and_then(TraceContext::tracestate);
    let (node, until) = (claim.map(|lease| lease.node.as_str()), claim.map(|lease| lease.until.0));
    let era = origin.map(|origin| origin.era.as_str());
    let client_name = origin.and_then(|origin| origin.client_name.as_deref());
    let client_version = origin.and_then(|origin| origin.client_version.as_deref());
    let params: [&(dyn ToSql + Sync); 24] = [
        &row.id,
        &row.owner,
        &task.tool,
        &Json(&task.arguments),
        &row.status,
        &Json(&task.state),
        &task.status_message,
        &task.created_at.0,
        &task.updated_at.0,
        &row.ttl_ms,
        &row.expires_at,
        &row.poll_interval_ms,
        &i64::from(task.attempt),
        &row.version,
        &task.error_result_fails,
        &Json(&task.input_kinds),
        &row.idempotency_key,
        &traceparent,
        &tracestate,
        &node,
        &until,
        &era,
        &client_name,
        &client_version,
    ];
    for _ in 0..KEY_ROUNDS {
        match client.execute(&insert, &params).await {
            Ok(1) => return Ok(Inserted::New),
            Ok(_) => {}
            Err(err) if is_duplicate_id(&err) => {
                return Err(StoreError::Duplicate(task.id.clone()));
            }
            Err(err) => return Err(backend(err)),
        }
        // No row and no error: the owner's key is taken (a keyless row never conflicts),
        // by a retained task, which is the answer, or by one past its TTL, which gives it
        // up. Between these statements another replica may purge the holder, or take the
        // released key: the insert then tries again, and the unique index still lets
        // exactly one of any number of racers in.
        let Some(key) = row.idempotency_key else {
            return Err(StoreError::Backend("a keyless insert wrote no row".into()));
        };
        if let Some(existing) = key_holder(client, row.owner, key).await? {
            if existing.retained_at(task.created_at) {
                return Ok(Inserted::Existing(existing));
            }
            let release = client
                .prepare_cached(sql::RELEASE_KEY)
                .await
                .map_err(backend)?;
            client
                .execute(&release, &[&row.owner, &key, &task.created_at.0])
                .await
                .map_err(backend)?;
        }
    }
    Err(StoreError::Backend(
        format!(
            "the idempotency key of task {} changed hands {KEY_ROUNDS} times during its insert",
            task.id
        )
        .into(),
    ))
}

/// The task holding `owner`'s idempotency key `key`, retained or not.
async fn key_holder(
    client: &impl GenericClient,
    owner: &str,
    key: &str,
) -> Result<Option<TaskRecord>, StoreError> {
    let holder = client
        .prepare_cached(sql::KEY_HOLDER)
        .await
        .map_err(backend)?;
    let holder = client
        .query_opt(&holder, &[&owner, &key])
        .await
        .map_err(backend)?;
    holder.as_ref().map(read_record).transpose()
}

/// The columns of a [`TaskRecord`] that need converting before they are stored.
struct NewRow<'a> {
    id: &'a str,
    owner: &'a str,
    status: &'static str,
    ttl_ms: Option<i64>,
    expires_at: Option<i64>,
    poll_interval_ms: Option<i64>,
    version: i64,
    idempotency_key: Option<&'a str>,
}

impl<'a> NewRow<'a> {
    fn from_record(task: &'a TaskRecord) -> Result<NewRow<'a>, StoreError> {
        Ok(NewRow {
            id: task.id.as_str(),
            owner: task.owner.as_str(),
            status: task.status().as_str(),
            ttl_ms: task.ttl_ms.map(to_i64).transpose()?,
            expires_at: task.expires_at().map(|at| at.0),
            poll_interval_ms: task.poll_interval_ms.map(to_i64).transpose()?,
            version: to_i64(task.version.0)?,
            idempotency_key: task.idempotency_key.as_ref().map(IdempotencyKey::as_str),
        })
    }
}

/// Whether `err` is the primary key (the id) being taken already.
fn is_duplicate_id(err: &tokio_postgres::Error) -> bool {
    err.as_db_error().is_some_and(|db| {
        db.code() == &SqlState::UNIQUE_VIOLATION && db.constraint() == Some("tasks_pkey")
    })
}

/// PostgreSQL's `BIGINT` is signed 64-bit; a larger `u64` cannot be stored.
fn to_i64(n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Backend(format!("{n} does not fit a BIGINT column").into()))
}

/// Decodes a row selected with the store's column list (`sql::columns!`).
pub(crate) fn read_record(row: &Row) -> Result<TaskRecord, StoreError> {
    decode(row).map_err(|err| StoreError::Backend(format!("a stored task cannot be read: {err}").into()))
}

fn decode(row: &Row) -> Result<TaskRecord, Box<dyn std::error::Error + Send + Sync>> {
    let unsigned = |column: usize| -> Result<Option<u64>, Box<dyn std::error::Error + Send + Sync>> {
        Ok(row.try_get::<_, Option<i64>>(column)?.map(u64::try_from).transpose()?)
    };
    Ok(TaskRecord {
        id: TaskId::from(row.try_get::<_, String>(0)?),
        owner: Principal::new(row.try_get::<_, String>(1)?),
        tool: row.try_get(2)?,
        arguments: row.try_get::<_, Json<serde_json::Value>>(3)?.0,
        state: row.try_get::<_, Json<TaskState>>(4)?.0,
        status_message: row.try_get(5)?,
        created_at: Timestamp(row.try_get(6)?),
        updated_at: Timestamp(row.try_get(7)?),
        ttl_ms: unsigned(8)?,
        poll_interval_ms: unsigned(9)?,
        attempt: u32::try_from(row.try_get::<_, i64>(10)?)?,
        version: Version(u64::try_from(row.try_get::<_, i64>(11)?)?),
        error_result_fails: row.try_get(12)?,
        input_kinds: row.try_get::<_, Json<Vec<InputKind>>>(13)?.0,
        idempotency_key: row.try_get::<_, Option<String>>(14)?.map(IdempotencyKey::new),
        // Written valid; a row edited by hand to something else reads as no trace.
        trace: match row.try_get::<_, Option<String>>(15)? {
            Some(traceparent) => TraceContext::parse(&traceparent, row.try_get::<_, Option<String>>(16)?.as_deref()),
            None => None,
        },
    })
}
