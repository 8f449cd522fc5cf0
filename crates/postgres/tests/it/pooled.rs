//! The store behind PgBouncer in transaction mode (`TEST_PGBOUNCER_URL`, started by
//! `scripts/pgbouncer.sh`): the whole store suite and the delivery suite pass through it, on a
//! fresh database per test (PgBouncer passes no `search_path`, so a schema per test cannot
//! be told apart), with `pooler=transaction` (unnamed statements) and the change feed's
//! `LISTEN` on a direct connection (`listen_url`); and without `listen_url` the feed still
//! carries another handle's writes, by its poll.
//!
//! Without the variable the tests skip with a message; under `CI=true` they fail instead.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_tasks_engine::RecordStore;
use mcp_tasks_postgres::PostgresStore;
use mcp_tasks_testkit::store_suite::{Handles, sample_task};

use crate::db;

/// The variable naming the pooler, e.g. `postgres://postgres@127.0.0.1:6432/`.
const URL_VAR: &str = "TEST_PGBOUNCER_URL";

/// The pooler's URL (without a database), or `None` (after saying so) outside CI.
fn pooler_url() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim_end_matches('/').to_owned()),
        _ if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("CI=true but {URL_VAR} is not set: the store cannot be tested behind PgBouncer (.ci/run starts it)")
        }
        _ => {
            eprintln!("skipped: run scripts/pgbouncer.sh and set {URL_VAR} to test the store behind PgBouncer");
            None
        }
    }
}

/// A fresh database on the test server, reached directly and through the pooler; dropped
/// (its connections ended) when the guard is dropped.
pub(crate) struct Database {
    server: String,
    pooler: String,
    name: String,
}

impl Database {
    async fn create() -> Option<Database> {
        let (server, pooler) = (db::database_url()?, pooler_url()?);
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.subsec_nanos());
        let name = format!("mcp_tasks_pgb_{}_{}_{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        db::connect(&server).await.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("the test database is created");
        Some(Database { server, pooler, name })
    }

    /// The server's URL with this database instead of the one it names.
    fn direct(&self) -> String {
        let base = self.server.rsplit_once('/').map_or(self.server.as_str(), |(base, _)| base);
        format!("{base}/{}", self.name)
    }

    /// The store's URL through the pooler, with `listen_url` when `listen`.
    fn url(&self, listen: bool) -> String {
        let mut url = format!("{}/{}?pooler=transaction", self.pooler, self.name);
        if listen {
            url.push_str("&listen_url=");
            url.push_str(&encode(&self.direct()));
        }
        url
    }
}

/// `text` percent-encoded for a URL's query.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(byte).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

impl Drop for Database {
    fn drop(&mut self) {
        let (server, name) = (self.server.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(async {
                let client = db::connect(&server).await;
                client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await
            })?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("warning: the test database {} was not dropped", self.name);
        }
    }
}

/// Two stores (two pools, as two replicas have) on one fresh database, both through the
/// pooler, the feed listening directly.
async fn pooled_pair() -> Option<Handles<PostgresStore, Database>> {
    let database = Database::create().await?;
    let first = PostgresStore::connect(&database.url(true)).await.expect("the store connects through the pooler");
    let second = PostgresStore::connect(&database.url(true)).await.expect("the second store connects through the pooler");
    Some(Handles { first: Arc::new(first), second: Arc::new(second), guard: database })
}

mcp_tasks_testkit::store_suite!(optional: async { pooled_pair().await });
mcp_tasks_testkit::delivery_suite!(async { pooled_pair().await });

/// Without `listen_url` the store says at start that its feed polls, and another handle's
/// write still reaches its feed (within the poll's second, bounded here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_listen_url_the_feed_polls_and_says_so() {
    let Some(database) = Database::create().await else { return };
    let listening = PostgresStore::connect(&database.url(true)).await.expect("connects");
    assert!(listening.pooling().contains("LISTENs on listen_url"), "{}", listening.pooling());
    let a = PostgresStore::connect(&database.url(false)).await.expect("connects");
    let b = PostgresStore::connect(&database.url(false)).await.expect("connects");
    assert!(a.pooling().contains("no listen_url"), "{}", a.pooling());
    assert!(a.pooling().contains("polls every second"), "{}", a.pooling());
    let mut feed = a.changes();
    let task = sample_task("alice");
    b.insert(&task).await.expect("insert through b");
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match feed.recv().await {
                Ok(record) if record.id == task.id => return record,
                Ok(_) => {}
                Err(err) => panic!("the feed ended: {err}"),
            }
        }
    })
    .await
    .expect("b's write reaches a's feed by its poll");
    assert_eq!(seen.version, task.version);
}

/// A replica that cannot listen (no `listen_url`) hears no other replica's hello, so it
/// announces every write: a replica that listens learns of them at once, not by its poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_cannot_listen_announces_every_write() {
    let Some(database) = Database::create().await else { return };
    let (_watcher, mut watched) = crate::peers::watch_channel(&database.direct(), "mcp_tasks.public").await;
    let store = PostgresStore::connect(&database.url(false)).await.expect("connects");
    let task = sample_task("alice");
    store.insert(&task).await.expect("insert");
    assert_eq!(crate::peers::next(&mut watched).await, format!("{} 1", task.id), "announced with its version");
}

/// A direct URL keeps prepared statements; `pooler=` with anything but `transaction` or
/// `none` is refused with what to write.
#[tokio::test]
async fn an_unknown_pooler_is_refused_with_what_to_write() {
    let err = PostgresStore::connect("postgres://postgres@127.0.0.1:1/db?pooler=session").await.expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("pooler=session is not known") && text.contains("pooler=transaction"), "{text}");
}

/// Behind the pooler without `pooler=transaction`, a statement prepared on one server
/// connection and run on another fails; the error says what to add to the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooler_the_url_does_not_name_is_an_error_that_says_what_to_add() {
    let Some(database) = Database::create().await else { return };
    let url = database.url(true).replace("pooler=transaction", "pooler=none");
    let store = Arc::new(PostgresStore::connect(&url).await.expect("connects"));
    // Many writes at once, so that the pooler hands statements to other server connections;
    // again (up to 20 rounds) until one does: how the pooler deals them out is its own.
    let mut hint = None;
    for _ in 0..20 {
        let writes: Vec<_> = (0..64)
            .map(|_| {
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.insert(&sample_task("alice")).await })
            })
            .collect();
        for write in writes {
            if let Err(err) = write.await.expect("the write's task") {
                hint = Some(err.to_string());
            }
        }
        if hint.is_some() {
            break;
        }
    }
    let hint = hint.expect("a prepared statement met another server connection");
    assert!(hint.contains("does not exist") && hint.contains("Add pooler=transaction to the store's URL"), "{hint}");
}
