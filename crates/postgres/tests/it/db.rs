//! A real PostgreSQL for the tests: the server named by `TEST_DATABASE_URL`, and a fresh
//! schema per test, dropped when the test ends.
//!
//! Without the variable the tests skip with a message; under `CI=true` they fail instead, since
//! a suite that quietly skips on CI is worse than none.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio_postgres::{Client, NoTls};

/// The variable naming the test server, e.g. `postgres://postgres@127.0.0.1:5432/postgres`.
pub(crate) const URL_VAR: &str = "TEST_DATABASE_URL";

/// The test server's URL, or `None` (after saying so) when it is not set outside CI.
///
/// # Panics
/// Under `CI=true` when the variable is not set.
pub(crate) fn database_url() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("CI=true but {URL_VAR} is not set: the PostgreSQL tests cannot run (.ci/run exports it)")
        }
        _ => {
            eprintln!("skipped: set {URL_VAR}=postgres://… to run the PostgreSQL store tests");
            None
        }
    }
}

/// `url` with `search_path` set to `schema` through the connection's `options`.
pub(crate) fn with_search_path(url: &str, schema: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}")
}

/// A uniquely named, empty schema on the test server, dropped (with everything in it) when
/// this guard is dropped.
pub(crate) struct Schema {
    server: String,
    name: String,
}

impl Schema {
    /// Creates a fresh schema on the server at `server`.
    pub(crate) async fn create(server: &str) -> Schema {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.subsec_nanos());
        let name = format!(
            "mcp_tasks_test_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        connect(server)
            .await
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .expect("the test schema is created");
        Schema { server: server.to_owned(), name }
    }

    /// The URL of a store in this schema.
    pub(crate) fn url(&self) -> String {
        with_search_path(&self.server, &self.name)
    }

    /// A plain connection whose `search_path` is this schema (to look at the tables).
    pub(crate) async fn client(&self) -> Client {
        connect(&self.url()).await
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // Drop is synchronous: the schema goes on a thread of its own with its own runtime,
        // which works whatever runtime (if any) the test runs on.
        let (server, name) = (self.server.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(async {
                let client = connect(&server).await;
                client.batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE")).await
            })?;
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("the test schema {} was not dropped", self.name);
        }
    }
}

/// A plain connection to `url`, its connection task spawned.
pub(crate) async fn connect(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("the test server answers");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}
