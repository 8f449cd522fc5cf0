//! The schema a store makes and migrates at connect.

use std::sync::Arc;

use serde_json::json;

use mcp_tasks_engine::{RecordStore, StoreError, TaskState, Timestamp, Update, Version};
use mcp_tasks_postgres::PostgresStore;
use mcp_tasks_testkit::store_suite::sample_task;

use crate::db::{self, Schema};

/// The versions recorded in the schema's `mcp_tasks_schema`.
async fn versions(schema: &Schema) -> Vec<i32> {
    schema
        .client()
        .await
        .query("SELECT version FROM mcp_tasks_schema ORDER BY version", &[])
        .await
        .expect("the version table")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_survive_reconnecting_and_the_migration_runs_once() {
    let Some(server) = db::database_url() else { return };
    let schema = Schema::create(&server).await;
    let store = PostgresStore::connect(&schema.url()).await.expect("the store connects");
    let task = sample_task("alice");
    store.insert(&task).await.expect("insert succeeds");
    let update = Update {
        state: TaskState::Cancelled,
        status_message: Some("stopped".to_owned()),
        updated_at: Timestamp(task.created_at.0 + 1),
        attempt: 1,
    };
    let replaced = store.replace(&task.id, task.version, &update).await.expect("replace succeeds");
    drop(store);

    // Connecting again does not run the migration again (it would fail: the table exists).
    let again = PostgresStore::connect(&schema.url()).await.expect("the store connects again");
    assert_eq!(again.get(&task.id).await.expect("get succeeds"), Some(replaced.clone()));
    assert_eq!(replaced.version, Version(2));
    assert_eq!(versions(&schema).await, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
}

/// Replicas starting together on an empty schema: every one connects, and the migration is
/// applied once (the advisory lock queues them; each after the first finds the work done).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_connecting_at_once_migrate_once() {
    let Some(server) = db::database_url() else { return };
    let schema = Arc::new(Schema::create(&server).await);
    let start = Arc::new(tokio::sync::Barrier::new(8));
    let replicas: Vec<_> = (0..8)
        .map(|_| {
            let (url, start) = (schema.url(), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                PostgresStore::connect(&url).await
            })
        })
        .collect();
    let mut stores = Vec::new();
    for replica in replicas {
        stores.push(replica.await.expect("no panic").expect("every replica connects"));
    }
    assert_eq!(versions(&schema).await, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    let task = sample_task("alice");
    stores[0].insert(&task).await.expect("insert succeeds");
    assert_eq!(stores[7].get(&task.id).await.expect("get succeeds"), Some(task));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_refuses_a_schema_newer_than_this_build() {
    let Some(server) = db::database_url() else { return };
    let schema = Schema::create(&server).await;
    drop(PostgresStore::connect(&schema.url()).await.expect("the store connects"));
    schema
        .client()
        .await
        .execute("INSERT INTO mcp_tasks_schema (version) VALUES (99)", &[])
        .await
        .expect("a version from the future");
    let err = PostgresStore::connect(&schema.url()).await.expect_err("a newer schema is refused");
    let message = err.to_string();
    assert!(message.contains("version 99") && message.contains("newer mcp-tasks"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_refuses_a_search_path_without_a_schema() {
    let Some(server) = db::database_url() else { return };
    let url = db::with_search_path(&server, "mcp_tasks_test_no_such_schema");
    let err = PostgresStore::connect(&url).await.expect_err("no schema to create the tables in");
    let message = err.to_string();
    assert!(message.contains("search_path names no existing schema"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_checks_the_status_column() {
    let Some(server) = db::database_url() else { return };
    let schema = Schema::create(&server).await;
    let store = PostgresStore::connect(&schema.url()).await.expect("the store connects");
    store.insert(&sample_task("alice")).await.expect("insert succeeds");
    let client = schema.client().await;
    let status: String = client.query_one("SELECT status FROM tasks", &[]).await.expect("one row").get(0);
    assert_eq!(status, "working");
    let bad = client.execute("UPDATE tasks SET status = 'done'", &[]).await;
    assert!(bad.is_err(), "the CHECK constraint rejects unknown statuses");
    let bad = client.execute("UPDATE tasks SET attempt = -1", &[]).await;
    assert!(bad.is_err(), "the CHECK constraint keeps attempt a u32");
}

/// Arguments are kept as written (`json`, not `jsonb`): a `\u0000` escape inside a string,
/// which `jsonb` refuses, round-trips.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_with_a_nul_escape_round_trip() {
    let Some(server) = db::database_url() else { return };
    let schema = Schema::create(&server).await;
    let store = PostgresStore::connect(&schema.url()).await.expect("the store connects");
    let mut task = sample_task("alice");
    task.arguments = json!({"text": "a\u{0}b"});
    store.insert(&task).await.expect("insert succeeds");
    assert_eq!(store.get(&task.id).await.expect("get succeeds"), Some(task));
}

/// Counters that do not fit PostgreSQL's signed BIGINT are refused before anything is
/// written, and a replace expecting such a version finds no task at it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_beyond_bigint_are_refused_without_writing() {
    let Some(server) = db::database_url() else { return };
    let schema = Schema::create(&server).await;
    let store = PostgresStore::connect(&schema.url()).await.expect("the store connects");
    let mut task = sample_task("alice");
    task.ttl_ms = Some(u64::MAX);
    match store.insert(&task).await {
        Err(StoreError::Backend(err)) => assert!(err.to_string().contains("BIGINT"), "{err}"),
        other => panic!("expected a backend error, got {other:?}"),
    }
    assert_eq!(store.get(&task.id).await.expect("get succeeds"), None);
    let task = sample_task("alice");
    store.insert(&task).await.expect("insert succeeds");
    let update = Update {
        state: TaskState::Cancelled,
        status_message: None,
        updated_at: task.updated_at,
        attempt: 1,
    };
    assert!(matches!(
        store.replace(&task.id, Version(u64::MAX), &update).await,
        Err(StoreError::Conflict(_))
    ));
}
