//! [`PostgresStore`]: the [`TaskStore`](mcp_tasks_engine::TaskStore) on a PostgreSQL
//! database: the handle, connecting, the pool, and the statement helpers every role uses.
//! The trait's methods are implemented by role beside it (`records`, `claims`, `view`,
//! `work`, `sessions`).
//!
//! Every method is one statement on a pooled connection, in autocommit, except `insert` of a
//! task with an idempotency key that is taken, which takes up to a few statements (see
//! [`insert_keyed`](crate::rows::insert_keyed)'s comments); the database does the
//! concurrency, so there is no writer thread as in SQLite. Creations (`insert_placed`) and
//! compare-and-set writes (`replace`) made at once by this replica's callers go together, one
//! statement for many (group commit, [`crate::group`]). A returned write is committed:
//! with PostgreSQL's default `synchronous_commit = on`, flushed to its WAL (invariant 1).

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod};

use crate::conn::{Conn, Connections, Session as _, Statements};
use tokio_postgres::types::ToSql;

use mcp_tasks_engine::store::implement::{Commit, CommitObserver};
use mcp_tasks_engine::{StoreError, TaskId, TaskRecord};

use crate::feed::Feed;
use crate::group::{Group, Grouped};
use crate::claims::Creations;
use crate::records::Replaces;
use crate::tls;
use crate::outage::backend;
use crate::rows::read_record;
use crate::{migrate, outage, sql, url};

/// The most connections one store (one replica) holds open.
const POOL_SIZE: usize = 16;

/// How long opening a connection may take, unless the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The task store on a PostgreSQL database: what lets tasks outlive the machine of one
/// server, and (in a later step) be shared by many.
///
/// A cheap handle: clones share one pool of connections. Open it with
/// [`PostgresStore::connect`]. The tables live in the connection's current schema (the first
/// of its `search_path`), `public` unless the URL says otherwise, e.g.
/// `postgres://u@host/db?options=-c%20search_path%3Dtasks`.
///
/// Connections are TCP, TLS as the URL's `sslmode` and `sslrootcert` say (libpq's meaning,
/// through rustls: [`crate::tls`]), or a Unix socket.
#[derive(Clone)]
pub struct PostgresStore {
    connections: Connections,
    /// The URL with its password hidden: the only form that is ever shown.
    shown: Arc<str>,
    /// The change feed, shared by the clones; its listener stops with the last one.
    pub(crate) feed: Arc<Feed>,
    /// Told of every write ([`PostgresStore::on_commit`]), shared by the clones.
    observer: Arc<OnceLock<CommitObserver>>,
    /// The announcements to send (`announce`), to the notifier task; it ends when the last
    /// clone is dropped.
    notifier: tokio::sync::mpsc::UnboundedSender<String>,
    /// The connections' TLS, as the URL's `sslmode` asked.
    tls: tls::Mode,
    /// Whether the writes record webhook deliveries ([`crate::deliveries`]), shared by the
    /// clones.
    pub(crate) deliveries: Arc<std::sync::atomic::AtomicBool>,
    pooling: Pooling,
    /// The writes sent in groups ([`crate::group`]), shared by the clones.
    pub(crate) groups: Arc<Groups>,
}

/// The queues of the writes sent in groups.
#[derive(Default)]
pub(crate) struct Groups {
    pub(crate) replaces: Group<Replaces>,
    pub(crate) creations: Group<Creations>,
}

/// Whether the store is behind a transaction pooler, and whether its change feed listens.
#[derive(Clone, Copy, Debug)]
struct Pooling {
    pooled: bool,
    listens: bool,
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
        let tls::Connection { mut config, tls, mode, pooled, listen_url } = tls::connection(url)
            .map_err(|err| StoreError::Backend(format!("cannot read the connection URL {shown}: {err}").into()))?;
        // The change feed's own connection: `listen_url` behind a transaction pooler (none
        // there: the feed polls), else the store's URL.
        let listener = match (&listen_url, pooled) {
            (Some(direct), _) => {
                let tls::Connection { mut config, tls, .. } = tls::connection(direct).map_err(|err| {
                    StoreError::Backend(format!("cannot read listen_url {} of {shown}: {err}", url::redact(direct)).into())
                })?;
                if config.get_connect_timeout().is_none() {
                    config.connect_timeout(CONNECT_TIMEOUT);
                }
                Some((config, tls))
            }
            (None, true) => None,
            (None, false) => Some((config.clone(), tls.clone())),
        };
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("mcp-tasks");
        }
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
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
        // The simple query protocol: no statement to prepare, whatever pools the connection.
        let schema = client
            .simple_query("SELECT current_schema()")
            .await
            .map_err(|err| failed(&shown, "cannot read the current schema", &err))?
            .into_iter()
            .find_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .ok_or_else(|| StoreError::Backend(format!("{shown}: the connection has no current schema").into()))?;
        tracing::debug!(url = %shown, schema = migrate::SCHEMA_VERSION, found, tls = mode.describe(), "opened the PostgreSQL task store");
        drop(client);
        // The channel every write that changes a task announces it on ([`Self::announce`]).
        let channel = format!("mcp_tasks.{schema}");
        let connections = Connections::new(pool, Statements::new(pooled));
        let listens = listener.is_some();
        let feed = Arc::new(Feed::start(listener, channel.clone(), connections.clone()));
        let (notifier, announcements) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(notify(connections.clone(), channel, announcements));
        Ok(PostgresStore {
            connections,
            shown,
            feed,
            observer: Arc::default(),
            notifier,
            tls: mode,
            deliveries: Arc::default(),
            pooling: Pooling { pooled, listens },
            groups: Arc::default(),
        })
    }

    /// Tells the feeds of every other replica that task `id` changed, once its write committed
    /// (if another listens: [`Feed::others_listen`]): a statement of its own, outside the write's transaction (migration 0009 says why), sent
    /// by the notifier task with every announcement gathered while the previous ones were
    /// sent (one round trip for many writes; the write does not wait for it). A hint: if it
    /// fails, the feeds' poll finds the change within a second.
    ///
    /// With `written` (the record the write left, when the write returns it), this replica's
    /// feed sends it at once and does not read it back, and the notification carries its
    /// version, so that a feed that knows it already reads nothing.
    pub(crate) async fn announce(&self, id: &TaskId, written: Option<&TaskRecord>) {
        if let Some(record) = written {
            self.feed.wrote(Arc::new(record.clone()));
        }
        // Only while another replica listens: a lone one's subscribers have it already.
        if !self.feed.others_listen() {
            return;
        }
        let payload = match written {
            Some(record) => format!("{id} {}", record.version.0),
            None => id.as_str().to_owned(),
        };
        // Sent by the notifier, with the others gathered meanwhile; the write does not wait.
        let _ = self.notifier.send(payload);
    }

    /// Calls `observer` after every write this store (and its clones) makes, with its
    /// duration (for metrics: keep it quick). Only the first observer set is kept. Reads are
    /// not reported.
    pub fn on_commit(&self, observer: impl Fn(Commit) + Send + Sync + 'static) {
        let _ = self.observer.set(Box::new(observer));
    }

    /// Runs `write` and tells the observer, if one is set, how long it took and whether it
    /// committed.
    pub(crate) async fn observed<T>(&self, write: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
        let started = Instant::now();
        let result = write.await;
        self.tell(started, 1, &result);
        result
    }

    /// Tells the observer, if one is set, of a statement of `writes` writes started at
    /// `started` that ended with `result`.
    pub(crate) fn tell<T>(&self, started: Instant, writes: usize, result: &Result<T, StoreError>) {
        if let Some(observer) = self.observer.get() {
            let committed = !matches!(result, Err(StoreError::Backend(_) | StoreError::Unavailable(_)));
            observer(Commit { elapsed: started.elapsed(), writes, committed });
        }
    }

    /// How creations (`insert_placed`) and compare-and-set writes (`replace`) went in groups
    /// since the store opened ([`crate::group`]): for tests and benchmarks.
    #[doc(hidden)]
    pub fn grouped(&self) -> (Grouped, Grouped) {
        (self.groups.creations.grouped(), self.groups.replaces.grouped())
    }

    /// The URL this store was opened with, its password hidden.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The connections' TLS, as the URL's `sslmode` asked ([`tls`]).
    pub fn tls(&self) -> tls::Mode {
        self.tls
    }

    /// How the store reaches the database, for start-up to say: directly, or behind a
    /// transaction pooler (`pooler=transaction`), and then how its change feed learns of other
    /// replicas' changes: by `LISTEN` on `listen_url`, or without it by polling every second.
    pub fn pooling(&self) -> &'static str {
        match (self.pooling.pooled, self.pooling.listens) {
            (false, _) => "direct connections",
            (true, true) => "behind a transaction pooler (unnamed statements); change feed LISTENs on listen_url",
            (true, false) => {
                "behind a transaction pooler (unnamed statements); no listen_url, so the change feed cannot LISTEN \
                 and polls every second: other replicas' changes reach waiters up to a second late"
            }
        }
    }

    /// A pooled connection. While the database refuses connections (restarting, recovering,
    /// or out of reach) it tries again for up to [`CONNECT_WAIT`](outage::CONNECT_WAIT), then
    /// fails as [`StoreError::Unavailable`]; nothing was sent then.
    pub(crate) async fn client(&self) -> Result<Conn, StoreError> {
        let deadline = Instant::now() + outage::CONNECT_WAIT;
        loop {
            let err = match self.connections.get().await {
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
                return Err(StoreError::Unavailable(format!("{what} at {}: {}", self.shown, mcp_tasks_tls::with_causes(&err))));
            }
            tokio::time::sleep(outage::CONNECT_RETRY).await;
        }
    }

    /// Runs a read of at most one row through the statement cache.
    pub(crate) async fn query_opt(
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
    pub(crate) async fn execute(&self, statement: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
        self.observed(async {
            let client = self.client().await?;
            let statement = client.prepare_cached(statement).await.map_err(backend)?;
            client.execute(&statement, params).await.map_err(backend)
        })
        .await
    }

    /// Runs a read of one number (a count) through the statement cache.
    pub(crate) async fn query_scalar(&self, statement: &str, params: &[&(dyn ToSql + Sync)]) -> Result<i64, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(statement).await.map_err(backend)?;
        client.query_one(&statement, params).await.and_then(|row| row.try_get(0)).map_err(backend)
    }

    /// Runs a read of many rows through the statement cache.
    pub(crate) async fn query(
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
    StoreError::Backend(format!("{what} at {shown}: {}", mcp_tasks_tls::with_causes(err)).into())
}

/// The most announcements sent in one statement.
const NOTIFY_BATCH: usize = 1024;

/// The notifier task: sends the announcements as they come, each batch those gathered while
/// the previous one was sent, in one statement (`sql::NOTIFY`); ends when every store handle
/// is gone. A batch that cannot be sent is dropped (logged): the feeds' poll finds those
/// changes within a second.
async fn notify(pool: Connections, channel: String, mut announcements: tokio::sync::mpsc::UnboundedReceiver<String>) {
    let mut batch = Vec::new();
    while let Some(first) = announcements.recv().await {
        batch.push(first);
        while batch.len() < NOTIFY_BATCH {
            match announcements.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let sent = async {
            let client = pool.get().await.map_err(|err| err.to_string())?;
            let statement = client.prepare_cached(sql::NOTIFY).await.map_err(|err| err.to_string())?;
            client.execute(&statement, &[&channel, &batch]).await.map_err(|err| err.to_string())
        };
        if let Err(error) = sent.await {
            tracing::debug!(%error, count = batch.len(), "could not announce changed tasks (the feed's poll will find them)");
        }
        batch.clear();
    }
}
