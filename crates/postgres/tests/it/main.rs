//! Integration tests of `mcp-tasks-postgres` against a real PostgreSQL (`TEST_DATABASE_URL`):
//! the shared store suite on a fresh schema per test, and what only a PostgreSQL store has
//! (the schema and its migrations, query plans, several handles on one database, URLs that
//! carry a password, the database out of reach for a while).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod db;
mod early;
mod explain;
mod group;
mod handles;
mod outage;
mod peers;
mod pooled;
mod running;
mod schema;
mod urls;

use std::sync::Arc;

use mcp_tasks_postgres::PostgresStore;

use db::Schema;

/// A store on a fresh schema of the test server, with the schema's guard; `None` (skip) when
/// no server is named outside CI.
async fn fresh() -> Option<(Arc<PostgresStore>, Schema)> {
    let server = db::database_url()?;
    let schema = Schema::create(&server).await;
    let store = PostgresStore::connect(&schema.url()).await.expect("the store connects");
    Some((Arc::new(store), schema))
}

/// Two stores (two pools, as two replicas have) on one fresh schema, with its guard.
async fn fresh_pair() -> Option<mcp_tasks_testkit::store_suite::Handles<PostgresStore, Schema>> {
    let (first, guard) = fresh().await?;
    let second = PostgresStore::connect(&guard.url()).await.expect("the second store connects");
    Some(mcp_tasks_testkit::store_suite::Handles { first, second: Arc::new(second), guard })
}

mcp_tasks_testkit::store_suite!(optional: async { fresh_pair().await });
mcp_tasks_testkit::delivery_suite!(async { fresh_pair().await });
