//! Store-suite cases of what the web view reads: newest-first pages with filters, counts by
//! status, status history, origin.

use std::sync::Arc;

use serde_json::json;

use mcp_tasks_engine::{
    BrowseQuery, Cursor, HistoryEntry, Inserted, Lease, NodeId, Origin, Principal, Status, TaskId, TaskRecord,
    TaskState, TaskStore, Timestamp, Update, Version,
};

use super::fixtures::*;

fn query(owner: &str, limit: u32) -> BrowseQuery {
    BrowseQuery {
        owner: Principal::new(owner),
        status: None,
        tool: None,
        text: None,
        before: None,
        limit,
    }
}

/// `browse` pages newest first (ties on the creation time by id, descending), resumes
/// before a cursor, filters by status, tool and text (case-insensitive, in the id, tool,
/// status message and arguments), combines filters, and never shows another owner's task.
pub async fn browse_pages_newest_first_with_filters(store: Arc<dyn TaskStore>) {
    let mut tasks = alices_six_tasks();
    tasks[5].status_message = Some("Uploading the NEEDLE".to_owned());
    let mut foreign = task_at("bob", T0.0 + 10, None, TaskState::Working);
    foreign.tool = "build".to_owned();
    insert_all(&*store, &tasks).await;
    insert_all(&*store, std::slice::from_ref(&foreign)).await;

    let mut newest_first = tasks.clone();
    newest_first.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
    let all = store
        .browse(&query("alice", 10))
        .await
        .expect("browse succeeds");
    assert_eq!(
        ids(&all),
        ids(&newest_first),
        "newest first, the owner's only"
    );

    pages_join_without_a_gap_or_repeat(&*store, &newest_first).await;
    filters_apply_and_combine(&*store, &tasks, &newest_first).await;
    let bobs = store.browse(&query("bob", 10)).await.expect("browse");
    assert_eq!(ids(&bobs), [foreign.id.clone()]);
    assert!(
        store
            .browse(&query("carol", 10))
            .await
            .expect("browse")
            .is_empty()
    );
}

/// Six tasks of alice's, two per creation time, `working` and `completed` by turns, three of
/// tool `build` and three of `deploy`, each with its own target in its arguments.
fn alices_six_tasks() -> Vec<TaskRecord> {
    let mut tasks = Vec::new();
    for n in 0..6 {
        let state = if n % 2 == 0 {
            TaskState::Working
        } else {
            completed()
        };
        let mut task = task_at("alice", T0.0 + n / 2, None, state);
        task.tool = if n < 3 {
            "build".to_owned()
        } else {
            "deploy".to_owned()
        };
        task.arguments = json!({"target": format!("Target-{n}")});
        tasks.push(task);
    }
    tasks
}

/// Two pages of alice's tasks, the second before the first's last, join into `newest_first`.
async fn pages_join_without_a_gap_or_repeat(store: &dyn TaskStore, newest_first: &[TaskRecord]) {
    let first = store
        .browse(&query("alice", 4))
        .await
        .expect("browse succeeds");
    let last = first.last().expect("a full page");
    let cursor = Cursor {
        created_at: last.created_at,
        id: last.id.clone(),
    };
    let rest = store
        .browse(&BrowseQuery {
            before: Some(cursor),
            ..query("alice", 4)
        })
        .await
        .expect("browse succeeds");
    assert_eq!(
        [ids(&first), ids(&rest)].concat(),
        ids(newest_first),
        "pages join without a gap or repeat"
    );
}

/// Filters by status, by tool, both, and by text (case-insensitive, in the id, tool, status
/// message and arguments) over alice's `tasks`.
async fn filters_apply_and_combine(store: &dyn TaskStore, tasks: &[TaskRecord], newest_first: &[TaskRecord]) {
    let working = store
        .browse(&BrowseQuery {
            status: Some(Status::Working),
            ..query("alice", 10)
        })
        .await
        .expect("browse");
    let expected: Vec<TaskId> = newest_first
        .iter()
        .filter(|t| t.status() == Status::Working)
        .map(|t| t.id.clone())
        .collect();
    assert_eq!(ids(&working), expected, "by status");

    let deploys = store
        .browse(&BrowseQuery {
            tool: Some("deploy".into()),
            ..query("alice", 10)
        })
        .await
        .expect("browse");
    let expected: Vec<TaskId> = newest_first
        .iter()
        .filter(|t| t.tool == "deploy")
        .map(|t| t.id.clone())
        .collect();
    assert_eq!(ids(&deploys), expected, "by tool");

    let both = BrowseQuery {
        tool: Some("deploy".into()),
        status: Some(Status::Completed),
        ..query("alice", 10)
    };
    let got = store.browse(&both).await.expect("browse");
    assert_eq!(
        ids(&got),
        [tasks[5].id.clone(), tasks[3].id.clone()],
        "filters combine"
    );

    for (text, expected) in [
        ("needle", vec![tasks[5].id.clone()]),
        ("target-2", vec![tasks[2].id.clone()]),
        ("DEPLOY", ids(&deploys)),
        (&tasks[1].id.as_str()[..12], vec![tasks[1].id.clone()]),
        ("nothing like it", vec![]),
    ] {
        let got = store
            .browse(&BrowseQuery {
                text: Some(text.to_owned()),
                ..query("alice", 10)
            })
            .await
            .expect("browse");
        assert_eq!(ids(&got), expected, "text {text:?}");
    }
}

/// `status_counts` counts the owner's tasks by status (none of another owner's), and
/// follows writes and purges.
pub async fn status_counts_follow_writes(store: Arc<dyn TaskStore>) {
    let tasks = [
        task_at("alice", T0.0, Some(10), TaskState::Working),
        task_at("alice", T0.0, Some(10), TaskState::Working),
        task_at("alice", T0.0, Some(10), input_required()),
        task_at("alice", T0.0, Some(10), failed()),
        task_at("bob", T0.0, Some(10), TaskState::Working),
    ];
    insert_all(&*store, &tasks).await;
    let counts = |store: Arc<dyn TaskStore>| async move {
        let mut counts = store
            .status_counts(&Principal::new("alice"))
            .await
            .expect("counts succeed");
        counts.sort_by_key(|(status, _)| status.as_str());
        counts
    };
    assert_eq!(
        counts(Arc::clone(&store)).await,
        [
            (Status::Failed, 1),
            (Status::InputRequired, 1),
            (Status::Working, 2)
        ]
    );
    let done = Update {
        state: completed(),
        status_message: None,
        updated_at: Timestamp(T0.0 + 1),
        attempt: 1,
    };
    store
        .replace(&tasks[0].id, tasks[0].version, &done)
        .await
        .expect("replace succeeds");
    assert_eq!(
        counts(Arc::clone(&store)).await,
        [
            (Status::Completed, 1),
            (Status::Failed, 1),
            (Status::InputRequired, 1),
            (Status::Working, 1)
        ]
    );
    assert_eq!(
        store
            .purge(Timestamp(T0.0 + 1_000), 10)
            .await
            .expect("purge succeeds"),
        2
    );
    assert_eq!(
        counts(Arc::clone(&store)).await,
        [(Status::InputRequired, 1), (Status::Working, 1)]
    );
    assert!(
        store
            .status_counts(&Principal::new("carol"))
            .await
            .expect("counts")
            .is_empty()
    );
}

/// A task whose tool reported an error (a `completed` state whose result has `isError`, as
/// 2026-07-28 keeps it) is `failed` to the operator: counted and browsed as failed, with the
/// history's entry saying so, while the task reads back as written (issue 42).
pub async fn a_tool_error_is_counted_browsed_and_recorded_as_failed(store: Arc<dyn TaskStore>) {
    let (tool_error, fine) = (task_at("alice", T0.0, Some(10), TaskState::Working), task_at("alice", T0.0 + 1, Some(10), TaskState::Working));
    insert_all(&*store, &[tool_error.clone(), fine.clone()]).await;
    let ended = |result: serde_json::Value| Update {
        state: TaskState::Completed { result },
        status_message: None,
        updated_at: Timestamp(T0.0 + 2),
        attempt: 1,
    };
    let written = store
        .replace(&tool_error.id, tool_error.version, &ended(serde_json::json!({"content": [], "isError": true})))
        .await
        .expect("replace succeeds");
    store.replace(&fine.id, fine.version, &ended(serde_json::json!({"content": []}))).await.expect("replace succeeds");
    assert_eq!(written.status(), Status::Completed, "the task as its era's wire says");
    let mut counts = store.status_counts(&Principal::new("alice")).await.expect("counts succeed");
    counts.sort_by_key(|(status, _)| status.as_str());
    assert_eq!(counts, [(Status::Completed, 1), (Status::Failed, 1)]);
    let page = |status: Status| {
        let store = Arc::clone(&store);
        async move { ids(&store.browse(&BrowseQuery { status: Some(status), ..query("alice", 10) }).await.expect("browse")) }
    };
    assert_eq!(page(Status::Failed).await, ids(std::slice::from_ref(&tool_error)));
    assert_eq!(page(Status::Completed).await, ids(std::slice::from_ref(&fine)));
    let history = store.history(&tool_error.id).await.expect("history");
    assert_eq!(history.last().map(|entry| entry.status), Some(Status::Failed), "{history:?}");
    assert_eq!(store.get(&tool_error.id).await.expect("get").map(|task| task.status()), Some(Status::Completed));
}

/// A write of `state` and `message` at `T0 + at`, attempt 1.
fn update_at(state: TaskState, message: Option<&str>, at: i64) -> Update {
    Update {
        state,
        status_message: message.map(str::to_owned),
        updated_at: Timestamp(T0.0 + at),
        attempt: 1,
    }
}

/// The history entry of version `v`, written at `T0 + at`.
fn entry(v: u64, at: i64, status: Status, message: Option<&str>) -> HistoryEntry {
    HistoryEntry {
        version: Version(v),
        at: Timestamp(T0.0 + at),
        status,
        message: message.map(str::to_owned),
    }
}

/// The status history has the insert and each write that changed the status or the
/// message, in order, with the version and time of each; a write that changes neither
/// adds nothing; it goes with its task when purged.
pub async fn the_status_history_records_each_change_and_goes_with_its_task(
    store: Arc<dyn TaskStore>,
) {
    let task = task_at("alice", T0.0, Some(10), TaskState::Working);
    insert_all(&*store, std::slice::from_ref(&task)).await;
    let writes = [
        (TaskState::Working, Some("compiling"), 5),
        (TaskState::Working, Some("compiling"), 6), // no change: not recorded
        (input_required(), Some("compiling"), 7),
        (TaskState::Working, None, 8),
        (completed(), Some("done"), 9),
    ];
    let mut version = task.version;
    for (state, message, at) in writes {
        version = store
            .replace(&task.id, version, &update_at(state, message, at))
            .await
            .expect("replace succeeds")
            .version;
    }
    assert_eq!(
        store.history(&task.id).await.expect("history succeeds"),
        [
            entry(1, 0, Status::Working, None),
            entry(2, 5, Status::Working, Some("compiling")),
            entry(4, 7, Status::InputRequired, Some("compiling")),
            entry(5, 8, Status::Working, None),
            entry(6, 9, Status::Completed, Some("done")),
        ]
    );
    assert!(
        store
            .history(&TaskId::random())
            .await
            .expect("history succeeds")
            .is_empty()
    );
    assert_eq!(
        store
            .purge(Timestamp(T0.0 + 1_000), 10)
            .await
            .expect("purge succeeds"),
        1
    );
    assert!(
        store
            .history(&task.id)
            .await
            .expect("history succeeds")
            .is_empty(),
        "gone with its task"
    );
}

/// A write through `answer` (the task's question answered) that changes the status is in
/// the history like any other; and a finished task written again (which the store allows,
/// though the engine never does it) keeps the entry of its finishing write as well as the
/// entry of each later change.
pub async fn the_history_has_answers_and_every_change_of_a_finished_task(store: Arc<dyn TaskStore>) {
    let task = task_at("alice", T0.0, Some(10), input_required());
    insert_all(&*store, std::slice::from_ref(&task)).await;
    let answered = store
        .answer(&task.id, task.version, &update_at(TaskState::Working, None, 3), "q1", &Ok(json!({"action": "accept"})))
        .await
        .expect("answer succeeds");
    let mut version = answered.version;
    for (state, message, at) in [
        (completed(), Some("done"), 5),
        (completed(), Some("done"), 6), // no change: not recorded
        (failed(), Some("failed after all"), 7),
    ] {
        version = store
            .replace(&task.id, version, &update_at(state, message, at))
            .await
            .expect("replace succeeds")
            .version;
    }
    assert_eq!(
        store.history(&task.id).await.expect("history succeeds"),
        [
            entry(1, 0, Status::InputRequired, None),
            entry(2, 3, Status::Working, None),
            entry(3, 5, Status::Completed, Some("done")),
            entry(5, 7, Status::Failed, Some("failed after all")),
        ]
    );
}

/// A recorded origin reads back without changing the task (not even its version); an
/// unknown id is no error and gets none; it goes with its task when purged.
pub async fn an_origin_is_recorded_with_its_task_and_goes_with_it(store: Arc<dyn TaskStore>) {
    let task = task_at("alice", T0.0, Some(10), completed());
    insert_all(&*store, std::slice::from_ref(&task)).await;
    assert_eq!(
        store.origin(&task.id).await.expect("read succeeds"),
        None,
        "none recorded yet"
    );
    let origin = Origin {
        era: "2026-07-28".into(),
        client_name: Some("inspector".into()),
        client_version: None,
    };
    store
        .set_origin(&task.id, &origin)
        .await
        .expect("record succeeds");
    assert_eq!(
        store.origin(&task.id).await.expect("read succeeds"),
        Some(origin.clone())
    );
    assert_eq!(
        store.get(&task.id).await.expect("get").as_ref(),
        Some(&task),
        "the task itself unchanged"
    );
    let unknown = TaskId::random();
    store
        .set_origin(&unknown, &origin)
        .await
        .expect("an unknown id is no error");
    assert_eq!(store.origin(&unknown).await.expect("read succeeds"), None);
    assert_eq!(
        store
            .purge(Timestamp(T0.0 + 1_000), 10)
            .await
            .expect("purge succeeds"),
        1
    );
    assert_eq!(
        store.origin(&task.id).await.expect("read succeeds"),
        None,
        "gone with its task"
    );
}

/// An origin given to the claimed insert is written with the row: it reads back like a
/// recorded one, the task reads back as inserted, and a task inserted without one has none.
pub async fn an_origin_given_at_the_insert_reads_back_with_the_task(store: Arc<dyn TaskStore>) {
    let origin = Origin {
        era: "2025-11-25".into(),
        client_name: Some("vscode".into()),
        client_version: Some("1.107".into()),
    };
    let lease = Lease {
        node: NodeId::random(),
        until: Timestamp(T0.0 + 60_000),
    };
    let with = sample_task("alice");
    let without = sample_task("alice");
    for (task, origin) in [(&with, Some(&origin)), (&without, None)] {
        let inserted = store
            .insert_claimed(task, &lease, u64::MAX, origin)
            .await
            .expect("the claimed insert succeeds");
        assert_eq!(inserted, Inserted::New);
    }
    assert_eq!(
        store.origin(&with.id).await.expect("read succeeds"),
        Some(origin)
    );
    assert_eq!(store.origin(&without.id).await.expect("read succeeds"), None);
    assert_eq!(
        store.get(&with.id).await.expect("get").as_ref(),
        Some(&with),
        "the task reads back as inserted"
    );
}
