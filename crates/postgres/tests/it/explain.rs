//! The store's own statements (`mcp_tasks_postgres::sql`) are served from indexes, never a
//! full scan of `tasks`: a store retaining a million finished tasks serves as fast as an empty
//! one. Planned on a store that retains what such a store does (many finished tasks of a few
//! owners, few unfinished ones), analyzed, with `enable_seqscan = off`, which leaves a
//! sequential scan only where no index can serve; and both as a custom plan (the values bound)
//! and as the generic plan a cached statement switches to.

use serde_json::json;
use tokio_postgres::Client;
use tokio_postgres::types::{Json, ToSql};

use mcp_tasks_engine::TaskState;
use mcp_tasks_postgres::{PostgresStore, sql};

use crate::db::{self, Schema};

/// The plan of `statement` with `params`, as EXPLAIN's text, one line per node.
async fn plan(client: &Client, statement: &str, params: &[&(dyn ToSql + Sync)]) -> String {
    client
        .query(&format!("EXPLAIN {statement}"), params)
        .await
        .unwrap_or_else(|err| panic!("EXPLAIN {statement}: {err}"))
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts that `plan` uses `index` and neither scans a table nor sorts (`ordered`).
fn assert_served_by(plan: &str, index: &str, ordered: bool) {
    assert!(plan.contains(index), "uses {index}:\n{plan}");
    assert!(!plan.contains("Seq Scan"), "no full scan:\n{plan}");
    if ordered {
        assert!(!plan.contains("Sort"), "read in index order, not sorted:\n{plan}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_queries_use_the_indexes() {
    let Some(server) = db::database_url() else { return };
    let schema = Schema::create(&server).await;
    drop(PostgresStore::connect(&schema.url()).await.expect("the store connects"));
    let client = schema.client().await;
    // 20,000 finished tasks (half with a key), 200 unfinished ones, over 10 owners.
    client
        .batch_execute(
            "INSERT INTO tasks (id, owner, tool, arguments, status, state, created_at, updated_at, \
             ttl_ms, expires_at, attempt, version, error_result_fails, input_kinds, idempotency_key) \
             SELECT md5(n::text), 'owner' || (n % 10), 'echo', '{}', \
                    CASE WHEN n % 100 = 0 THEN 'working' ELSE 'completed' END, '{\"status\":\"working\"}', \
                    1764028800123 + n, 1764028800123 + n, 60000, 1764028860123 + n, 1, 1, false, '[]', \
                    CASE WHEN n % 2 = 0 THEN 'key' || n END \
             FROM generate_series(1, 20000) AS n; \
             ANALYZE tasks; ANALYZE task_counts; SET enable_seqscan = off",
        )
        .await
        .expect("a store with a history");
    let state = Json(TaskState::Working);
    for mode in ["force_custom_plan", "force_generic_plan"] {
        client.batch_execute(&format!("SET plan_cache_mode = {mode}")).await.expect("set");
        task_plans(&client, &state).await;
        node_plans(&client, &state).await;
        view_and_session_plans(&client).await;
    }
    let lock = plan(&client, sql::LOCK_COUNT, &[&"owner3"]).await;
    assert!(lock.contains("Conflict Arbiter Indexes: task_counts_pkey"), "{lock}");
    // The insert has nothing to plan but the arbiter index it names.
    let insert = plan(
        &client,
        sql::INSERT,
        &[
            &"id", &"alice", &"echo", &Json(json!({})), &"working", &state, &None::<String>, &1_i64, &1_i64,
            &None::<i64>, &None::<i64>, &None::<i64>, &1_i64, &1_i64, &false, &Json(json!([])), &Some("k"),
            &None::<String>, &None::<String>, &Some("node"), &Some(1_i64), &Some("2026-07-28"),
            &None::<String>, &None::<String>,
        ],
    )
    .await;
    assert!(insert.contains("Conflict Arbiter Indexes: tasks_by_idempotency_key"), "{insert}");
    creation_plans(&client, &state).await;
}

/// The plans of a placed creation: the owner's slot, counts and shards from their primary
/// keys, the running tasks from the 64 rows of `running_counts` (never from `tasks`, whose
/// partial index keeps the dead entries of every task finished since the last vacuum); and of
/// its refusal's statements.
async fn creation_plans(client: &Client, state: &Json<TaskState>) {
    let (at, limit) = (1_764_028_810_123_i64, 16_i64);
    let create = plan(
        client,
        sql::CREATE,
        &[
            &"id", &OWNER, &"echo", &Json(json!({})), &"working", state, &None::<String>, &at, &at,
            &None::<i64>, &None::<i64>, &None::<i64>, &1_i64, &1_i64, &false, &Json(json!([])), &None::<String>,
            &None::<String>, &None::<String>, &Some("node"), &Some(at), &Some("2026-07-28"),
            &None::<String>, &None::<String>, &at, &limit, &limit, &limit,
        ],
    )
    .await;
    // `running_places` holds only the plain calls running now: read whole, as taking a place
    // reads it; so is `running_counts`, 64 rows. Nothing else is scanned, and no index of
    // `tasks` but its primary key (the insert's conflict) and its key index.
    for index in ["owner_slots_pkey", "task_counts_pkey"] {
        assert!(create.contains(index), "uses {index}:\n{create}");
    }
    for index in ["tasks_unfinished", "tasks_by_claim"] {
        assert!(!create.contains(index), "reads no unfinished tasks through {index}:\n{create}");
    }
    let counted = create.lines().filter(|line| line.contains("Seq Scan on running_counts")).count();
    assert!(counted >= 1, "sums running_counts:\n{create}");
    assert_scans_only_small_tables(&create);
    // A group of creations: the same tables, through the same keys.
    let one = |value: i64| vec![value];
    let group = plan(
        client,
        sql::CREATE_GROUP,
        &[
            &vec!["id"], &vec![OWNER], &vec!["echo"], &vec![Json(json!({}))], &vec!["working"], &vec![state],
            &vec![None::<String>], &one(at), &one(at), &vec![None::<i64>], &vec![None::<i64>], &vec![None::<i64>],
            &one(1), &one(1), &vec![false], &vec![Json(json!([]))], &vec![None::<String>], &vec![None::<String>],
            &vec![None::<String>], &vec![Some("node")], &vec![Some(at)], &vec![Some("2026-07-28")],
            &vec![None::<String>], &vec![None::<String>], &at, &limit, &limit, &limit,
        ],
    )
    .await;
    for index in ["owner_slots_pkey", "task_counts_pkey"] {
        assert!(group.contains(index), "uses {index}:\n{group}");
    }
    for index in ["tasks_unfinished", "tasks_by_claim"] {
        assert!(!group.contains(index), "reads no unfinished tasks through {index}:\n{group}");
    }
    assert_scans_only_small_tables(&group);
    assert_served_by(&plan(client, sql::MAKE_SLOTS, &[&OWNER, &limit]).await, "owner_slots_pkey", false);
    let running_of = plan(client, sql::RUNNING_OF, &[&OWNER, &at]).await;
    assert!(running_of.contains("tasks_by_owner_status"), "{running_of}");
    assert_scans_only_small_tables(&running_of);
}

/// Asserts that the only tables `plan` reads whole are `running_places` (the plain calls
/// running now) and `running_counts` (64 rows).
fn assert_scans_only_small_tables(plan: &str) {
    let scans: Vec<&str> = plan.lines().filter(|line| line.contains("Seq Scan")).collect();
    assert!(
        scans.iter().all(|line| line.contains("Seq Scan on running_places") || line.contains("Seq Scan on running_counts")),
        "no full scan of a task table:\n{plan}"
    );
}

/// The values every plan below is made with.
const OWNER: &str = "owner3";
const ID: &str = "0123abcd";

/// The plans of a task's own statements: by id, by key, listing, counting, retention.
async fn task_plans(client: &Client, state: &Json<TaskState>) {
    let (owner, id, key, at, limit) = ("owner3", "0123abcd", "key42", 1_764_028_810_123_i64, 5_i64);
    assert_served_by(&plan(client, sql::GET, &[&id]).await, "tasks_pkey", false);
    assert_served_by(
        &plan(client, sql::FIND_BY_KEY, &[&owner, &key, &at]).await,
        "tasks_by_idempotency_key",
        false,
    );
    assert_served_by(&plan(client, sql::KEY_HOLDER, &[&owner, &key]).await, "tasks_by_idempotency_key", false);
    assert_served_by(
        &plan(client, sql::RELEASE_KEY, &[&owner, &key, &at]).await,
        "tasks_by_idempotency_key",
        false,
    );
    let replace = plan(
        client,
        sql::REPLACE,
        &[&state, &"working", &None::<String>, &at, &1_i64, &id, &1_i64],
    )
    .await;
    assert_served_by(&replace, "tasks_pkey", false);
    let recording = plan(
        client,
        sql::REPLACE_RECORDING,
        &[&state, &"completed", &None::<String>, &at, &1_i64, &id, &1_i64, &Some("completed")],
    )
    .await;
    assert_served_by(&recording, "tasks_pkey", false);
    // A group of writes: each row by its key.
    let group = plan(
        client,
        sql::REPLACE_GROUP_RECORDING,
        &[
            &vec![state], &vec!["completed"], &vec![None::<String>], &vec![at], &vec![1_i64], &vec![id], &vec![1_i64],
            &vec![Some("completed")],
        ],
    )
    .await;
    assert_served_by(&group, "tasks_pkey", false);
    assert_served_by(&plan(client, sql::LIST_FIRST, &[&owner, &limit]).await, "tasks_by_owner", true);
    assert_served_by(
        &plan(client, sql::LIST_AFTER, &[&owner, &at, &id, &limit]).await,
        "tasks_by_owner",
        true,
    );
    // The retention limit counts on every creation: one row of the counts, whatever the
    // number of the owner's tasks.
    assert_served_by(&plan(client, sql::COUNT, &[&owner]).await, "task_counts_pkey", false);
    assert_served_by(&plan(client, sql::UNFINISHED, &[&limit]).await, "tasks_unfinished", true);
    let expired = plan(client, sql::EXPIRED, &[&at, &limit]).await;
    assert_served_by(&expired, "tasks_unfinished_by_expiry", true);
    assert_served_by(&plan(client, sql::PURGE, &[&at, &limit]).await, "tasks_finished_by_expiry", false);
}

/// The plans of many nodes' statements: claims, the heartbeat, the rescuer, cancel requests,
/// answers, the feed's backstop and the tools' slots.
async fn node_plans(client: &Client, state: &Json<TaskState>) {
    let (id, at, limit) = (ID, 1_764_028_810_123_i64, 5_i64);
    // Many nodes: claims, the heartbeat, the rescuer, cancel requests, answers, the feed's
    // backstop and the tools' slots.
    let node = "node-1";
    assert_served_by(&plan(client, sql::CLAIM, &[&node, &at, &id, &1_i64, &at]).await, "tasks_pkey", false);
    assert_served_by(&plan(client, sql::RENEW, &[&at, &node, &at]).await, "tasks_by_claim", false);
    assert_served_by(&plan(client, sql::LAPSED, &[&at, &limit]).await, "tasks_unfinished", true);
    assert_served_by(&plan(client, sql::REQUEST_CANCEL, &[&id]).await, "tasks_pkey", false);
    assert_served_by(&plan(client, sql::CANCEL_REQUESTED, &[&id]).await, "tasks_pkey", false);
    let answer = plan(
        client,
        sql::ANSWER,
        &[&state, &"working", &None::<String>, &at, &1_i64, &id, &1_i64, &"q1", &Json(json!({"Ok": {}}))],
    )
    .await;
    assert_served_by(&answer, "tasks_pkey", false);
    assert_served_by(&plan(client, sql::TAKE_ANSWER, &[&id, &"q1"]).await, "task_answers_pkey", false);
    assert_served_by(&plan(client, sql::CHANGED_SINCE, &[&at, &limit]).await, "tasks_by_change", true);
    let ids = vec![id.to_owned()];
    assert_served_by(&plan(client, sql::GET_CHANGED_ANY, &[&ids]).await, "tasks_pkey", false);
    assert_served_by(&plan(client, sql::FREE_SLOTS, &[&"echo", &at]).await, "tool_slots_pkey", false);
    assert_served_by(&plan(client, sql::COUNT_SLOTS, &[&"echo", &id]).await, "tool_slots_pkey", false);
    assert_served_by(&plan(client, sql::RENEW_SLOTS, &[&at, &node, &at]).await, "tool_slots_by_node", false);
    assert_served_by(&plan(client, sql::RELEASE_SLOT, &[&"echo", &id]).await, "tool_slots_pkey", false);
    // The webhooks' deliveries: due ones from their index, one by its key, their tasks by id.
    assert_served_by(&plan(client, sql::CLAIM_DELIVERIES, &[&node, &at, &at, &limit]).await, "webhook_deliveries_due", true);
    assert_served_by(&plan(client, sql::FINISH_DELIVERY, &[&1_i64, &node]).await, "webhook_deliveries_pkey", false);
    let done: Vec<String> = Vec::new();
    let retry = plan(client, sql::RETRY_DELIVERY, &[&1_i64, &node, &at, &done, &"answered 500"]).await;
    assert_served_by(&retry, "webhook_deliveries_pkey", false);
    assert_served_by(&plan(client, sql::GET_MANY, &[&ids]).await, "tasks_pkey", false);
}

/// The plans of the web view's reads, 2025-11-25 HTTP sessions and running places.
async fn view_and_session_plans(client: &Client) {
    let (owner, id, at, limit, node) = (OWNER, ID, 1_764_028_810_123_i64, 5_i64, "node-1");
    // The web view: its pages newest first from the owner's index, and its counts.
    let none = None::<String>;
    let browse = plan(client, sql::BROWSE, &[&owner, &none, &none, &none, &None::<i64>, &none, &limit]).await;
    assert_served_by(&browse, "tasks_by_owner", true);
    let page = plan(client, sql::BROWSE, &[&owner, &Some("completed"), &none, &none, &Some(at), &Some(id), &limit]).await;
    assert_served_by(&page, "tasks_by_owner", false);
    let counts = plan(client, sql::STATUS_COUNTS, &[&owner]).await;
    assert_served_by(&counts, "tasks_by_owner", false);
    assert_served_by(&plan(client, sql::HISTORY, &[&id]).await, "task_history_pkey", false);
    // 2025-11-25 HTTP sessions: each request's lookup, its writes, and the idle sweep.
    let session = "0123456789abcdef";
    assert_served_by(&plan(client, sql::SESSION, &[&session, &owner]).await, "sessions_pkey", false);
    assert_served_by(&plan(client, sql::ADD_SESSION_TASK, &[&session, &id]).await, "sessions_pkey", false);
    let touched = vec![session.to_owned()];
    assert_served_by(&plan(client, sql::TOUCH_SESSIONS, &[&touched, &at]).await, "sessions_pkey", false);
    assert_served_by(&plan(client, sql::END_SESSION, &[&session]).await, "sessions_pkey", false);
    assert_served_by(&plan(client, sql::PRUNE_SESSIONS, &[&at, &limit]).await, "sessions_by_last_use", true);
    // The running places: the heartbeat's renewal and a release. (Taking one reads the
    // whole of `running_places`, which holds only the places in use, under its lock.)
    assert_served_by(&plan(client, sql::RENEW_PLACES, &[&at, &node, &at]).await, "running_places_by_node", false);
    assert_served_by(&plan(client, sql::RELEASE_PLACE, &[&id]).await, "running_places_pkey", false);
}
