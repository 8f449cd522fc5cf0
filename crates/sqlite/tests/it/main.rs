//! Integration tests of `mcp-tasks-sqlite`: the shared store suite on a fresh file per
//! test, and what only a file-backed SQLite store has (reopening, pragmas, migrations).

mod early;
mod engine_creates;
mod group_commit;
mod hot;
mod operator_status;

use std::path::Path;
use std::sync::Arc;

use mcp_tasks_engine::{Principal, RecordStore, TaskState, TaskStore, Timestamp, Update, Version, ViewStore};
use mcp_tasks_sqlite::{SqliteStore, Synchronous};
use mcp_tasks_testkit::store_suite::sample_task;
use tempfile::TempDir;

/// A fresh store in its own temporary directory, which lives as long as the store.
fn fresh() -> (Arc<SqliteStore>, TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join("tasks.db")).expect("the store opens");
    (Arc::new(store), dir)
}

/// Two handles on one fresh file, sharing nothing but the file (each its own connections,
/// writer thread, cache, mapping of the commit counter and node locks): what two processes
/// on one file are to each other. The many-node cases run on them as on PostgreSQL's two
/// pools; the processes themselves are tested from outside (`crates/cli/tests/it/processes.rs`).
fn fresh_pair() -> mcp_tasks_testkit::store_suite::Handles<SqliteStore, TempDir> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let first = SqliteStore::open(&path).expect("the store opens");
    let second = SqliteStore::open(&path).expect("a second handle opens beside the first");
    mcp_tasks_testkit::store_suite::Handles { first: Arc::new(first), second: Arc::new(second), guard: dir }
}

mcp_tasks_testkit::store_suite!(async { fresh_pair() });
mcp_tasks_testkit::delivery_suite!(async { Some(fresh_pair()) });

#[tokio::test]
async fn tasks_survive_closing_and_reopening_the_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).expect("the store opens");
    let task = sample_task("alice");
    store.insert(&task).await.expect("insert succeeds");
    let update = Update {
        state: TaskState::Cancelled,
        status_message: Some("stopped".to_owned()),
        updated_at: Timestamp(task.created_at.0 + 1),
        attempt: 1,
    };
    let replaced = store
        .replace(&task.id, task.version, &update)
        .await
        .expect("replace succeeds");
    drop(store);

    let reopened = SqliteStore::open(&path).expect("the store opens again");
    assert_eq!(
        reopened.get(&task.id).await.expect("get succeeds"),
        Some(replaced.clone())
    );
    assert_eq!(replaced.version, Version(2));
    // Reopening does not run the migration again (it would fail: the table exists).
    assert_eq!(reopened.pragma("user_version").await.expect("pragma"), "18");
}

#[tokio::test]
async fn an_opened_store_is_in_wal_mode_with_synchronous_full() {
    let (_, dir) = fresh();
    let store = SqliteStore::open(&dir.path().join("durable.db")).expect("the store opens");
    assert_eq!(store.pragma("journal_mode").await.expect("pragma"), "wal");
    assert_eq!(
        store.pragma("synchronous").await.expect("pragma"),
        "2",
        "2 is FULL"
    );
    assert_eq!(store.pragma("foreign_keys").await.expect("pragma"), "1");
    // No `busy_timeout` (0): the store's own busy handler waits for another connection's
    // write lock instead (up to 5 s: `crates/cli/tests/it/store_faults.rs` sees the refusal
    // after it). A lock held for a while is waited for, and the write goes in.
    assert_eq!(store.pragma("busy_timeout").await.expect("pragma"), "0");
    let holder = rusqlite_connection(store.path());
    holder.execute_batch("BEGIN IMMEDIATE").expect("the other connection takes the write lock");
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        holder.execute_batch("ROLLBACK").expect("release");
    });
    store.insert(&sample_task("alice")).await.expect("the write waits for the lock, then goes in");
    release.join().expect("the holder");
    // WAL sticks to the file: another connection sees it too.
    let other = rusqlite_connection(store.path());
    let mode: String = other
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .expect("pragma");
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn open_creates_missing_parent_directories() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("a/b/c/tasks.db");
    let store = SqliteStore::open(&path).expect("the store opens");
    store
        .insert(&sample_task("alice"))
        .await
        .expect("insert succeeds");
    assert!(path.is_file());
    assert_eq!(store.path(), path);
}

#[tokio::test]
async fn open_refuses_a_schema_newer_than_this_build() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    drop(SqliteStore::open(&path).expect("the store opens"));
    rusqlite_connection(&path)
        .pragma_update(None, "user_version", 99)
        .expect("set user_version");
    let err = SqliteStore::open(&path).expect_err("a newer schema is refused");
    assert!(err.to_string().contains("version 99"), "{err}");
}

#[tokio::test]
async fn the_schema_checks_the_status_column() {
    let (store, dir) = fresh();
    store
        .insert(&sample_task("alice"))
        .await
        .expect("insert succeeds");
    let conn = rusqlite_connection(&dir.path().join("tasks.db"));
    let status: String = conn
        .query_row("SELECT status FROM tasks", [], |row| row.get(0))
        .expect("one row");
    assert_eq!(status, "working");
    let bad = conn.execute("UPDATE tasks SET status = 'done'", []);
    assert!(
        bad.is_err(),
        "the CHECK constraint rejects unknown statuses"
    );
}

/// The writes of every task open no ephemeral table: SQLite evaluates an IN list of more
/// than two constants through one, opened, filled and closed per row (migration 0010 took
/// the status CHECK's list out). Counted over the statements' programs, triggers included.
#[tokio::test]
async fn a_task_s_insert_and_status_update_open_no_ephemeral_table() {
    let (_, dir) = fresh();
    let conn = rusqlite_connection(&dir.path().join("tasks.db"));
    let ephemeral = |sql: &str| -> usize {
        let mut stmt = conn.prepare(&format!("EXPLAIN {sql}")).expect("explain");
        let opcodes = stmt.query_map([], |row| row.get::<_, String>(1)).expect("program");
        opcodes
            .map(|opcode| opcode.expect("opcode"))
            .filter(|opcode| opcode == "OpenEphemeral")
            .count()
    };
    let insert = "INSERT INTO tasks (id, owner, tool, arguments, status, state, created_at, \
                  updated_at, attempt, version, error_result_fails, input_methods) \
                  VALUES ('x', 'a', 'noop', '{}', 'working', '\"working\"', 1, 1, 1, 1, 0, '[]')";
    assert_eq!(ephemeral(insert), 0, "{insert}");
    let update = "UPDATE tasks SET status = 'completed', state = '{}', version = version + 1 \
                  WHERE id = 'x' AND version = 1";
    assert_eq!(ephemeral(update), 0, "{update}");
    // The check itself is the same: the statement runs, an unknown status is refused.
    conn.execute(insert, []).expect("a working task goes in");
    conn.execute(update, []).expect("and completes");
    let bad = conn.execute("UPDATE tasks SET status = 'done'", []).expect_err("refused");
    assert!(bad.to_string().contains("CHECK constraint failed"), "{bad}");
}

#[tokio::test]
async fn the_listing_counting_and_sweeping_queries_use_the_indexes() {
    let (_, dir) = fresh();
    let conn = rusqlite_connection(&dir.path().join("tasks.db"));
    let plan = |sql: &str| -> String {
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("explain");
        let rows = stmt
            .query_map([], |row| row.get::<_, String>(3))
            .expect("plan");
        rows.collect::<Result<Vec<_>, _>>()
            .expect("plan rows")
            .join("; ")
    };
    let list = plan(
        "SELECT * FROM tasks WHERE owner = 'a' AND (created_at, id) > (1, 'x') ORDER BY created_at, id LIMIT 5",
    );
    assert!(
        list.contains("tasks_by_owner") && !list.contains("TEMP B-TREE"),
        "{list}"
    );
    let get = plan("SELECT * FROM tasks WHERE id = 'x'");
    assert!(
        get.contains("USING INDEX sqlite_autoindex_tasks_1 (id=?)"),
        "{get}"
    );
    // The retention limit counts on every creation: one row of the counts, whatever the
    // number of the owner's tasks.
    let count = plan("SELECT tasks FROM task_counts WHERE owner = 'a'");
    assert!(count.contains("USING PRIMARY KEY (owner=?)"), "{count}");
    let unfinished = plan(
        "SELECT * FROM tasks WHERE status IN ('working', 'input_required') ORDER BY created_at, id LIMIT 5",
    );
    assert!(
        unfinished.contains("tasks_unfinished") && !unfinished.contains("TEMP B-TREE"),
        "{unfinished}"
    );
    // Since migration 0013 `tasks_unfinished` holds `expires_at`: the sweeper reads the few
    // unfinished tasks in its order and never a finished one (`tasks_by_expiry` holds them).
    let expired = plan(
        "SELECT * FROM tasks INDEXED BY tasks_unfinished WHERE status IN ('working', 'input_required') AND expires_at <= 5 \
         ORDER BY created_at, id LIMIT 5",
    );
    assert!(
        expired.contains("USING INDEX tasks_unfinished")
            && !expired.contains("tasks_by_expiry")
            && !expired.contains("TEMP B-TREE"),
        "only unfinished tasks are stepped over: {expired}"
    );
    let purge = plan(
        "SELECT rowid FROM tasks WHERE status IN ('completed', 'failed', 'cancelled') AND expires_at <= 5 ORDER BY expires_at LIMIT 5",
    );
    assert!(purge.contains("tasks_by_expiry (expires_at<?)"), "{purge}");
    let unfinished_ids = plan("SELECT id FROM tasks WHERE status IN ('working', 'input_required')");
    assert!(
        unfinished_ids.contains("USING INDEX tasks_unfinished"),
        "a partial index of unfinished tasks, never the table: {unfinished_ids}"
    );
}

/// A store written by a build before migration 0003 (schema version 2), with tasks of two
/// owners, gets its per-owner counts filled in when this build opens it.
#[tokio::test]
async fn migration_0003_counts_the_tasks_already_stored() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    {
        let conn = rusqlite_connection(&path);
        conn.execute_batch(include_str!("../../migrations/0001_tasks.sql"))
            .expect("migration 1");
        conn.execute_batch(include_str!("../../migrations/0002_input_methods.sql"))
            .expect("migration 2");
        conn.pragma_update(None, "user_version", 2)
            .expect("user_version");
        for (n, owner) in ["alice", "alice", "bob", "alice"].iter().enumerate() {
            conn.execute(
                "INSERT INTO tasks (id, owner, tool, arguments, status, state, created_at, \
                 updated_at, attempt, version, error_result_fails) \
                 VALUES (?1, ?2, 'echo', '{}', 'cancelled', '\"cancelled\"', 1, 1, 1, 1, 0)",
                rusqlite::params![format!("t{n}"), owner],
            )
            .expect("a version 2 row");
        }
    }
    let store = SqliteStore::open(&path).expect("the store opens and migrates");
    assert_eq!(store.pragma("user_version").await.expect("pragma"), "18");
    let count = |owner: &'static str| {
        let store = store.clone();
        async move { store.count(&Principal::new(owner)).await.expect("count") }
    };
    assert_eq!((count("alice").await, count("bob").await), (3, 1));
    store
        .insert(&sample_task("bob"))
        .await
        .expect("insert succeeds");
    assert_eq!(count("bob").await, 2, "and keeps them from then on");
}

/// Since migration 0012 no trigger keeps `task_counts` or `task_history`: the store's own
/// statements do, on both paths of `replace` (the cached row, and the row read first when
/// the cache is off: a second store of this process on the same file turns it off). The
/// suite's history and count cases pass through either handle.
#[tokio::test]
async fn counts_and_history_are_kept_by_the_store_with_no_trigger_on_either_path() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let cached = SqliteStore::open(&path).expect("the store opens");
    let triggers: i64 = rusqlite_connection(&path)
        .query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'", [], |row| row.get(0))
        .expect("the schema reads");
    assert_eq!(triggers, 0);
    let store: Arc<dyn TaskStore> = Arc::new(cached.clone());
    mcp_tasks_testkit::store_suite::the_status_history_records_each_change_and_goes_with_its_task(Arc::clone(&store)).await;
    mcp_tasks_testkit::store_suite::count_stays_exact_through_claimed_inserts_refusals_and_purges(store).await;
    let uncached: Arc<dyn TaskStore> = Arc::new(SqliteStore::open(&path).expect("a second store on the file"));
    mcp_tasks_testkit::store_suite::the_status_history_records_each_change_and_goes_with_its_task(Arc::clone(&uncached)).await;
    mcp_tasks_testkit::store_suite::count_stays_exact_through_duplicates_and_purges_to_zero(uncached).await;
}

/// A second, independent connection to the store's file.
fn rusqlite_connection(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).expect("a second connection opens")
}

#[tokio::test]
async fn open_with_normal_sets_synchronous_normal_for_comparison_only() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open_with(&dir.path().join("tasks.db"), Synchronous::Normal)
        .expect("the store opens");
    assert_eq!(
        store.pragma("synchronous").await.expect("pragma"),
        "1",
        "1 is NORMAL"
    );
    assert_eq!(
        Synchronous::default(),
        Synchronous::Full,
        "production stays FULL"
    );
}

/// Rows written by builds before `InputKind` named input requests by their 2025-11-25
/// method, in the `input_methods` column and inside the `state` JSON, and stored the
/// engine's own failures as `-32603` error objects: they read back with the same meaning.
#[tokio::test]
async fn rows_in_the_format_of_earlier_builds_read_back_with_the_same_meaning() {
    use mcp_tasks_engine::{ErrorObject, InputKind, InputRequest, Outcome};
    use serde_json::json;

    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).expect("the store opens");
    let waiting = sample_task("alice");
    let failed = sample_task("alice");
    store.insert(&waiting).await.expect("insert succeeds");
    store.insert(&failed).await.expect("insert succeeds");
    // The rows are rewritten with the store closed: a serving store keeps the tasks it wrote
    // last in memory, and nothing else may write the file under it.
    drop(store);
    // Exactly what the earlier build wrote.
    let old_waiting = r#"{"status":"input_required","requests":{"q1":{"method":"elicitation/create","params":{"message":"Which file?"}},"q2":{"method":"sampling/createMessage","params":{"maxTokens":5}}}}"#;
    let old_failed = r#"{"status":"failed","outcome":{"error":{"code":-32603,"message":"Task expired: its TTL elapsed before the work finished"}}}"#;
    {
        let conn = rusqlite_connection(&path);
        let set = "UPDATE tasks SET status = ?1, state = ?2, input_methods = ?3 WHERE id = ?4";
        let methods = r#"["elicitation/create","sampling/createMessage"]"#;
        conn.execute(set, rusqlite::params!["input_required", old_waiting, methods, waiting.id.as_str()])
            .expect("an old input_required row");
        conn.execute(set, rusqlite::params!["failed", old_failed, r#"["sampling/createMessage"]"#, failed.id.as_str()])
            .expect("an old failed row");
    }
    let store = SqliteStore::open(&path).expect("the store opens again");

    let read = store.get(&waiting.id).await.expect("get succeeds").expect("the task");
    assert_eq!(read.input_kinds, vec![InputKind::Elicitation, InputKind::Sampling]);
    let TaskState::InputRequired { requests } = &read.state else { panic!("{:?}", read.state) };
    assert_eq!(
        requests["q1"],
        InputRequest { kind: InputKind::Elicitation, params: json!({"message": "Which file?"}) }
    );
    assert_eq!(requests["q2"], InputRequest { kind: InputKind::Sampling, params: json!({"maxTokens": 5}) });

    let read = store.get(&failed.id).await.expect("get succeeds").expect("the task");
    assert_eq!(read.input_kinds, vec![InputKind::Sampling]);
    let expected = ErrorObject {
        code: -32603,
        message: "Task expired: its TTL elapsed before the work finished".to_owned(),
        data: None,
    };
    assert_eq!(read.state, TaskState::Failed { outcome: Outcome::Error(expected) });

    // A write of an old row's state stores the new form, which reads back the same.
    let old = store.get(&waiting.id).await.expect("get succeeds").expect("the task");
    let update = Update {
        state: old.state.clone(),
        status_message: None,
        updated_at: old.updated_at,
        attempt: old.attempt,
    };
    let rewritten = store
        .replace(&waiting.id, old.version, &update)
        .await
        .expect("replace succeeds");
    assert_eq!(rewritten.state, old.state);
    let (state, methods): (String, String) = rusqlite_connection(&path)
        .query_row(
            "SELECT state, input_methods FROM tasks WHERE id = ?1",
            [waiting.id.as_str()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .expect("the row");
    assert!(state.contains(r#""kind":"elicitation""#) && !state.contains("method"), "{state}");
    assert_eq!(
        methods, r#"["elicitation/create","sampling/createMessage"]"#,
        "a replace never rewrites the column, which keeps reading as it was"
    );
    assert_eq!(store.get(&waiting.id).await.expect("get").expect("the task"), rewritten);
}

/// A store written before migration 0004 (schema version 3) reads its rows back without a
/// key, and from then on keeps one retained task per owner and key.
#[tokio::test]
async fn migration_0004_keeps_old_rows_readable_and_adds_idempotency_keys() {
    use mcp_tasks_engine::{IdempotencyKey, Inserted};

    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    {
        let conn = rusqlite_connection(&path);
        for sql in [
            include_str!("../../migrations/0001_tasks.sql"),
            include_str!("../../migrations/0002_input_methods.sql"),
            include_str!("../../migrations/0003_retention_at_scale.sql"),
        ] {
            conn.execute_batch(sql).expect("an earlier migration");
        }
        conn.pragma_update(None, "user_version", 3).expect("user_version");
        conn.execute(
            "INSERT INTO tasks (id, owner, tool, arguments, status, state, created_at, \
             updated_at, attempt, version, error_result_fails, input_methods) \
             VALUES ('old', 'alice', 'echo', '{}', 'cancelled', '{\"status\":\"cancelled\"}', 1, 1, 1, 1, 0, '[]')",
            [],
        )
        .expect("a version 3 row");
    }
    let store = SqliteStore::open(&path).expect("the store opens and migrates");
    assert_eq!(store.pragma("user_version").await.expect("pragma"), "18");
    let old = store
        .get(&"old".into())
        .await
        .expect("get succeeds")
        .expect("the old row");
    assert_eq!((old.state, old.idempotency_key), (TaskState::Cancelled, None));
    let mut keyed = sample_task("alice");
    keyed.idempotency_key = Some(IdempotencyKey::new("k"));
    assert_eq!(store.insert(&keyed).await.expect("insert succeeds"), Inserted::New);
    let mut retry = sample_task("alice");
    retry.idempotency_key = Some(IdempotencyKey::new("k"));
    assert_eq!(
        store.insert(&retry).await.expect("insert succeeds"),
        Inserted::Existing(keyed)
    );
}

/// The key is in the task's row: after the file is closed and reopened, a retry with the
/// key still gets the task made before.
#[tokio::test]
async fn an_idempotency_key_survives_closing_and_reopening_the_file() {
    use mcp_tasks_engine::{IdempotencyKey, Inserted};

    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let mut task = sample_task("alice");
    task.idempotency_key = Some(IdempotencyKey::new("deploy-42"));
    {
        let store = SqliteStore::open(&path).expect("the store opens");
        assert_eq!(store.insert(&task).await.expect("insert succeeds"), Inserted::New);
    }
    let reopened = SqliteStore::open(&path).expect("the store opens again");
    let key = IdempotencyKey::new("deploy-42");
    assert_eq!(
        reopened
            .find_by_key(&task.owner, &key, task.created_at)
            .await
            .expect("find succeeds"),
        Some(task.clone())
    );
    let mut retry = sample_task("alice");
    retry.idempotency_key = Some(key);
    assert_eq!(
        reopened.insert(&retry).await.expect("insert succeeds"),
        Inserted::Existing(task)
    );
}

/// `find_by_key` is one lookup in the unique index, whatever the number of tasks.
#[tokio::test]
async fn find_by_key_uses_the_unique_index_of_owner_and_key() {
    let (_, dir) = fresh();
    let conn = rusqlite_connection(&dir.path().join("tasks.db"));
    let plan: String = conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT * FROM tasks WHERE owner = 'a' AND idempotency_key = 'k' \
             AND (expires_at IS NULL OR expires_at > 5)",
        )
        .expect("explain")
        .query_map([], |row| row.get::<_, String>(3))
        .expect("plan")
        .collect::<Result<Vec<_>, _>>()
        .expect("plan rows")
        .join("; ");
    assert!(
        plan.contains("USING INDEX tasks_by_idempotency_key (owner=? AND idempotency_key=?)"),
        "{plan}"
    );
}

/// Every page of the web view (`browse`, with each filter and a cursor) and its counts by
/// status are served from an index, newest first without sorting the page: an index of the
/// owner's tasks, or for an unfinished status the partial index of the few unfinished tasks
/// (migration 0013). Planned on the very statements the store runs.
#[tokio::test]
async fn the_web_views_pages_and_counts_use_the_indexes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join("tasks.db")).expect("the store opens");
    let cases = browse_cases();
    for (query, index) in cases {
        let plan = store.browse_plan(&query).await.expect("plan");
        assert!(
            plan.contains(&format!("USING INDEX {index}")),
            "{query:?}: {plan}"
        );
        assert!(
            !plan.contains("TEMP B-TREE FOR ORDER BY"),
            "the page is read in order, not sorted: {plan}"
        );
    }
    counts_use_the_indexes(&dir.path().join("tasks.db"));
}

/// The web view's queries of [`the_web_views_pages_and_counts_use_the_indexes`], each with
/// the index that must serve it.
fn browse_cases() -> Vec<(mcp_tasks_engine::BrowseQuery, &'static str)> {
    use mcp_tasks_engine::{BrowseQuery, Cursor, Principal, Status, TaskId, Timestamp};
    let base = BrowseQuery {
        owner: Principal::new("a"),
        status: None,
        tool: None,
        text: None,
        before: None,
        limit: 50,
    };
    let cursor = Some(Cursor {
        created_at: Timestamp(5),
        id: TaskId::from("x"),
    });
    vec![
        (base.clone(), "tasks_by_owner (owner=?"),
        (
            BrowseQuery {
                before: cursor.clone(),
                ..base.clone()
            },
            "tasks_by_owner (owner=?",
        ),
        (
            BrowseQuery {
                text: Some("needle".into()),
                ..base.clone()
            },
            "tasks_by_owner (owner=?",
        ),
        (
            BrowseQuery {
                status: Some(Status::Failed),
                ..base.clone()
            },
            "tasks_finished_by_owner_status (owner=? AND status=?",
        ),
        (
            BrowseQuery {
                status: Some(Status::Working),
                ..base.clone()
            },
            "tasks_unfinished",
        ),
        (
            BrowseQuery {
                status: Some(Status::InputRequired),
                before: cursor.clone(),
                ..base.clone()
            },
            "tasks_unfinished",
        ),
        (
            BrowseQuery {
                status: Some(Status::Failed),
                before: cursor.clone(),
                ..base.clone()
            },
            "tasks_finished_by_owner_status (owner=? AND status=?",
        ),
        (
            BrowseQuery {
                tool: Some("build".into()),
                ..base.clone()
            },
            "tasks_by_owner_tool (owner=?",
        ),
    ]
}

/// The counts by status of the store at `path`: the finished tasks from the owner's entries
/// of the partial index alone, the unfinished ones from `tasks_unfinished`, neither sorted.
fn counts_use_the_indexes(path: &Path) {
    let conn = rusqlite_connection(path);
    let plan = |sql: &str| -> String {
        conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .and_then(|mut stmt| stmt.query_map([], |row| row.get::<_, String>(3))?.collect::<Result<Vec<_>, _>>())
            .expect("plan")
            .join("; ")
    };
    // The counts: the finished tasks from the owner's entries of the partial index alone, the
    // unfinished ones from the few entries of `tasks_unfinished`, neither sorted.
    let finished = plan(
        "SELECT status, COUNT(*) FROM tasks WHERE owner = 'a' AND status NOT IN ('working', 'input_required') GROUP BY status",
    );
    assert!(
        finished.contains("USING COVERING INDEX tasks_finished_by_owner_status (owner=?)"),
        "{finished}"
    );
    assert!(!finished.contains("TEMP B-TREE"), "{finished}");
    let unfinished = plan(
        "SELECT status FROM tasks INDEXED BY tasks_unfinished WHERE status IN ('working', 'input_required') AND owner = 'a'",
    );
    assert!(unfinished.contains("USING INDEX tasks_unfinished"), "{unfinished}");
    assert!(!unfinished.contains("TEMP B-TREE"), "{unfinished}");
}

/// A store written before migration 0013 (schema version 12: the status in
/// `tasks_by_owner_status`, two partial indexes of unfinished tasks) is migrated when this
/// build opens it, and its counts by status and its pages filtered by status are the same
/// as before, read from the new indexes.
#[tokio::test]
async fn migration_0013_keeps_the_counts_and_pages_of_a_store_written_before_it() {
    use mcp_tasks_engine::{BrowseQuery, Status, TaskRecord};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let tasks = tasks_of_every_status();
    let statuses = [Status::Working, Status::InputRequired, Status::Completed, Status::Failed, Status::Cancelled];
    let page = |store: SqliteStore, status: Status| async move {
        let query = BrowseQuery { owner: Principal::new("alice"), status: Some(status), tool: None, text: None, before: None, limit: 50 };
        let ids: Vec<String> = store.browse(&query).await.expect("browse").iter().map(|task| task.id.to_string()).collect();
        ids
    };
    let mut before_pages = Vec::new();
    {
        let store = SqliteStore::open(&path).expect("the store opens");
        for task in &tasks {
            store.insert(task).await.expect("insert");
        }
        for status in statuses {
            before_pages.push(page(store.clone(), status).await);
        }
    }
    back_to_schema_12(&path);
    let store = SqliteStore::open(&path).expect("the store opens and migrates");
    assert_eq!(store.pragma("user_version").await.expect("pragma"), "18");
    assert_the_indexes_of_0013(&path);
    // Each of alice's ten tasks in its status's page, newest first, and the same pages as
    // before the migration.
    for (status, before) in statuses.into_iter().zip(before_pages) {
        let after = page(store.clone(), status).await;
        assert_eq!(after.len(), 2, "{status:?}: {after:?}");
        assert_eq!(after, before, "{status:?}");
        let mut want: Vec<&TaskRecord> =
            tasks.iter().filter(|task| task.owner.as_str() == "alice" && task.state.status() == status).collect();
        want.sort_by_key(|task| std::cmp::Reverse(task.created_at));
        assert_eq!(after, want.iter().map(|task| task.id.to_string()).collect::<Vec<_>>(), "{status:?}");
    }
    let counts = store.status_counts(&Principal::new("alice")).await.expect("counts");
    assert_eq!(counts, vec![
        (Status::Cancelled, 2),
        (Status::Completed, 2),
        (Status::Failed, 2),
        (Status::InputRequired, 2),
        (Status::Working, 2),
    ]);
    let bob = store.status_counts(&Principal::new("bob")).await.expect("counts");
    assert_eq!(bob.iter().map(|(_, n)| n).sum::<u64>(), 5, "{bob:?}");
    // The sweeper finds the unfinished tasks past their TTL, never the finished ones.
    let expired = store.expired(Timestamp(i64::MAX), 100).await.expect("expired");
    assert_eq!(expired.len(), 6, "alice's and bob's working and input_required tasks");
    assert!(expired.iter().all(|task| !task.state.status().is_terminal()));
}

/// Three owners' tasks (alice twice) in each status, created one after another.
fn tasks_of_every_status() -> Vec<mcp_tasks_engine::TaskRecord> {
    use mcp_tasks_engine::{InputRequests, Outcome, TaskRecord, WorkError};
    let states = [
        TaskState::Working,
        TaskState::InputRequired { requests: InputRequests::new() },
        TaskState::Completed { result: serde_json::json!({"content": []}) },
        TaskState::Failed { outcome: Outcome::Failure(WorkError::Expired) },
        TaskState::Cancelled,
    ];
    let mut tasks: Vec<TaskRecord> = Vec::new();
    for (n, owner) in ["alice", "alice", "bob"].into_iter().enumerate() {
        for (k, state) in states.iter().enumerate() {
            let mut task = sample_task(owner);
            task.created_at = Timestamp(1_000 + i64::try_from(n * 10 + k).expect("small"));
            task.state = state.clone();
            tasks.push(task);
        }
    }
    tasks
}

/// Takes the store at `path` back to schema 12, as a build before 0013 left it.
fn back_to_schema_12(path: &Path) {
    let conn = rusqlite_connection(path);
    conn.execute_batch(
        "DROP INDEX tasks_finished_by_owner_status;
         DROP INDEX tasks_unfinished;
         CREATE INDEX tasks_unfinished ON tasks (created_at, id) WHERE status IN ('working', 'input_required');
         CREATE INDEX tasks_unfinished_by_expiry ON tasks (expires_at, id) WHERE status IN ('working', 'input_required');
         CREATE INDEX tasks_by_owner_status ON tasks (owner, status, created_at);
         ALTER TABLE tasks DROP COLUMN creation_in_history;
         DROP TABLE task_changes;
         DROP TABLE running_places;
         DROP TABLE sessions;
         DROP TABLE webhook_deliveries;
         DROP TABLE task_events;
         DROP TABLE task_event_heads;
         PRAGMA user_version = 12;",
    )
    .expect("the schema of version 12");
}

/// The indexes of 0013 are there, those it replaced gone.
fn assert_the_indexes_of_0013(path: &Path) {
    let conn = rusqlite_connection(path);
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tasks' ORDER BY name")
        .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
        .expect("the indexes");
    assert!(indexes.contains(&"tasks_finished_by_owner_status".to_owned()), "{indexes:?}");
    assert!(indexes.contains(&"tasks_unfinished".to_owned()), "{indexes:?}");
    assert!(!indexes.contains(&"tasks_by_owner_status".to_owned()), "{indexes:?}");
    assert!(!indexes.contains(&"tasks_unfinished_by_expiry".to_owned()), "{indexes:?}");
}

/// A store written before migration 0014 keeps every task's history as it was: each
/// creation entry is a row of `task_history` there (the column's default says so), so none
/// is read twice; a task created after it has its usual creation entry read from its row,
/// and one that finishes writes no history row at all.
#[tokio::test]
async fn migration_0014_keeps_the_history_written_before_it_and_writes_none_for_a_plain_lifecycle() {
    use mcp_tasks_engine::{HistoryEntry, Status, Version};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let old = sample_task("alice");
    {
        let store = SqliteStore::open(&path).expect("the store opens");
        store.insert(&old).await.expect("insert");
    }
    // Back to schema 13, as a build before 0014 left it: the creation entry stored.
    {
        let conn = rusqlite_connection(&path);
        conn.execute_batch(&format!(
            "ALTER TABLE tasks DROP COLUMN creation_in_history;
             INSERT INTO task_history (task_id, version, at, status, message) VALUES ('{}', 1, {}, 'working', NULL);
             DROP TABLE task_changes;
             DROP TABLE running_places;
             DROP TABLE sessions;
             DROP TABLE webhook_deliveries;
             DROP TABLE task_events;
             DROP TABLE task_event_heads;
             PRAGMA user_version = 13;",
            old.id, old.created_at.0
        ))
        .expect("the schema of version 13");
    }
    let store = SqliteStore::open(&path).expect("the store opens and migrates");
    assert_eq!(store.pragma("user_version").await.expect("pragma"), "18");
    let done = Update {
        state: TaskState::Completed { result: serde_json::json!({"content": []}) },
        status_message: None,
        updated_at: Timestamp(old.created_at.0 + 5),
        attempt: 1,
    };
    let entry = |version: u64, at: i64, status: Status| HistoryEntry { version: Version(version), at: Timestamp(at), status, message: None };
    store.replace(&old.id, Version(1), &done).await.expect("replace");
    assert_eq!(
        store.history(&old.id).await.expect("history"),
        [entry(1, old.created_at.0, Status::Working), entry(2, old.created_at.0 + 5, Status::Completed)]
    );
    let new = sample_task("alice");
    store.insert(&new).await.expect("insert");
    store.replace(&new.id, Version(1), &done).await.expect("replace");
    assert_eq!(
        store.history(&new.id).await.expect("history"),
        [entry(1, new.created_at.0, Status::Working), entry(2, old.created_at.0 + 5, Status::Completed)]
    );
    let conn = rusqlite_connection(&path);
    let rows = |id: &str| -> i64 {
        conn.query_row("SELECT count(*) FROM task_history WHERE task_id = ?1", [id], |row| row.get(0)).expect("count")
    };
    assert_eq!(rows(old.id.as_str()), 1, "the old task's creation, as it was");
    assert_eq!(rows(new.id.as_str()), 0, "a plain lifecycle writes no history row");
}

