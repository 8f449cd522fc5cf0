//! Migration 0018: the status column is the status an operator is told.

use mcp_tasks_engine::{Principal, TaskState, Timestamp, Update, ViewStore, RecordStore};
use mcp_tasks_sqlite::SqliteStore;
use mcp_tasks_testkit::store_suite::sample_task;

use crate::rusqlite_connection;

/// A store written before migration 0018 kept a 2026-07-28 tool error as `completed` in its
/// status column; the migration makes it `failed` there and in the history's last entry (the
/// status an operator is told), while the task read back is unchanged (`completed` with
/// `isError`, as its era's wire says). A plain completion stays `completed`.
#[tokio::test]
async fn migration_0018_makes_a_stored_tool_error_failed_for_the_operator_and_keeps_its_state() {
    use mcp_tasks_engine::{BrowseQuery, Status, Version};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let (tool_error, fine) = (sample_task("alice"), sample_task("alice"));
    let ended = |result: serde_json::Value| Update {
        state: TaskState::Completed { result },
        status_message: None,
        updated_at: Timestamp(tool_error.created_at.0 + 5),
        attempt: 1,
    };
    {
        let store = SqliteStore::open(&path).expect("the store opens");
        for task in [&tool_error, &fine] {
            store.insert(task).await.expect("insert");
        }
        store.replace(&tool_error.id, Version(1), &ended(serde_json::json!({"content": [], "isError": true}))).await.expect("replace");
        store.replace(&fine.id, Version(1), &ended(serde_json::json!({"content": []}))).await.expect("replace");
    }
    // Back to schema 17, as a build before 0018 wrote it: the column said `completed`.
    {
        let conn = rusqlite_connection(&path);
        conn.execute_batch(
            "UPDATE tasks SET status = 'completed' WHERE status = 'failed';
             UPDATE task_history SET status = 'completed' WHERE status = 'failed';
             PRAGMA user_version = 17;",
        )
        .expect("the schema of version 17");
    }
    let store = SqliteStore::open(&path).expect("the store opens and migrates");
    assert_eq!(store.pragma("user_version").await.expect("pragma"), "18");
    let counts = store.status_counts(&Principal::new("alice")).await.expect("counts");
    assert_eq!(counts, [(Status::Completed, 1), (Status::Failed, 1)]);
    let failed = BrowseQuery { owner: Principal::new("alice"), status: Some(Status::Failed), tool: None, text: None, before: None, limit: 10 };
    let page = store.browse(&failed).await.expect("browse");
    assert_eq!(page.iter().map(|task| &task.id).collect::<Vec<_>>(), [&tool_error.id]);
    assert_eq!(page[0].status(), Status::Completed, "the task itself is as its era's wire says");
    assert_eq!(store.history(&tool_error.id).await.expect("history").last().map(|entry| entry.status), Some(Status::Failed));
}
