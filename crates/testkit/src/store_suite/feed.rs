//! Store-suite cases of [`RecordStore`] across two handles on one database (`a`, `b`; a
//! store one process owns passes the same handle twice): cancel requests, stored input
//! answers, and the change feed.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use mcp_tasks_engine::{
    ErrorObject, InputKind, InputRequest, InputRequests, NodeId, StoreError, TaskId, TaskRecord, TaskState, TaskStore,
    Update, Version,
};

use super::fixtures::*;

/// How long a case waits for a change on the feed before it fails (bounds the whole wait).
const FEED_DEADLINE: Duration = Duration::from_secs(10);

/// A cancel request written through one handle is read through the other and bumps the
/// version (a change); a finished or unknown task takes none.
pub async fn a_cancel_request_is_seen_through_the_other_handle(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let (task, mut done) = (sample_task("alice"), sample_task("alice"));
    done.state = completed();
    insert_claimed(&*a, &task, &lease(&NodeId::random(), 60_000)).await;
    a.insert(&done).await.expect("insert succeeds");
    assert!(
        !b.cancel_requested(&task.id).await.expect("read succeeds"),
        "none asked yet"
    );
    assert!(a.request_cancel(&task.id).await.expect("request succeeds"));
    assert!(b.cancel_requested(&task.id).await.expect("read succeeds"));
    let got = b
        .get(&task.id)
        .await
        .expect("get succeeds")
        .expect("the task is there");
    assert_eq!(
        (got.version, got.state),
        (Version(2), TaskState::Working),
        "a change, not a transition"
    );
    assert!(
        !a.request_cancel(&done.id).await.expect("request succeeds"),
        "a finished task takes none"
    );
    assert!(!b.cancel_requested(&done.id).await.expect("read succeeds"));
    assert!(
        !a.request_cancel(&TaskId::random())
            .await
            .expect("an unknown id is no error")
    );
}

/// An answer is stored with its write and taken once, through the other handle; a stale
/// version stores neither; a purged task takes its answers with it.
pub async fn an_answer_is_stored_with_its_write_and_taken_once(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let (task, requests) = waiting_on_two_questions();
    insert_claimed(&*a, &task, &lease(&NodeId::random(), 60_000)).await;

    let mut rest = requests.clone();
    rest.remove("q1");
    let update = Update {
        state: TaskState::InputRequired { requests: rest },
        status_message: None,
        updated_at: at(1),
        attempt: 1,
    };
    let answer = Ok(json!({"action": "accept", "content": {"file": "ünï.txt"}}));
    let written = a
        .answer(&task.id, task.version, &update, "q1", &answer)
        .await
        .expect("answer succeeds");
    assert_eq!(
        (written.version, &written.state),
        (Version(2), &update.state)
    );
    let refused = ErrorObject {
        code: -1,
        message: "declined".to_owned(),
        data: None,
    };
    let stale = b
        .answer(&task.id, task.version, &update, "q2", &Err(refused.clone()))
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict(_))),
        "a stale version: {stale:?}"
    );
    assert_eq!(
        b.take_answer(&task.id, "q2").await.expect("take succeeds"),
        None,
        "nothing stored by a conflict"
    );
    assert_eq!(
        b.take_answer(&task.id, "q1").await.expect("take succeeds"),
        Some(answer)
    );
    assert_eq!(
        a.take_answer(&task.id, "q1").await.expect("take succeeds"),
        None,
        "taken once"
    );

    answers_go_with_their_task(&*a, &*b, &task, refused).await;
}

/// A task of alice's with a TTL of 10 ms, waiting on two input requests, `q1` and `q2`.
fn waiting_on_two_questions() -> (TaskRecord, InputRequests) {
    let mut requests = InputRequests::new();
    requests.insert(
        "q1".to_owned(),
        InputRequest {
            kind: InputKind::Elicitation,
            params: json!({"message": "?"}),
        },
    );
    requests.insert(
        "q2".to_owned(),
        InputRequest {
            kind: InputKind::Sampling,
            params: json!({}),
        },
    );
    let mut task = sample_task("alice");
    task.state = TaskState::InputRequired {
        requests: requests.clone(),
    };
    task.ttl_ms = Some(10);
    (task, requests)
}

/// Answering `task`'s last request (version 2) and finishing it, then purging it: the answer
/// stored with the last write goes with the task.
async fn answers_go_with_their_task(a: &dyn TaskStore, b: &dyn TaskStore, task: &TaskRecord, refused: ErrorObject) {
    let last = Update {
        state: TaskState::Working,
        status_message: None,
        updated_at: at(2),
        attempt: 1,
    };
    b.answer(&task.id, Version(2), &last, "q2", &Err(refused.clone()))
        .await
        .expect("answer succeeds");
    let done = Update {
        state: completed(),
        status_message: None,
        updated_at: at(3),
        attempt: 1,
    };
    a.replace(&task.id, Version(3), &done)
        .await
        .expect("replace succeeds");
    assert_eq!(a.purge(at(1_000), 10).await.expect("purge succeeds"), 1);
    assert_eq!(
        b.take_answer(&task.id, "q2").await.expect("take succeeds"),
        None,
        "gone with its task"
    );
}

/// The change feed of one handle carries the inserts and writes made through the other: for
/// each write, a record of its task at least as new (writes close together may arrive folded
/// into the newest), and each task's last write exactly as it stands.
pub async fn the_change_feed_carries_the_writes_of_either_handle(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let mut feed = b.changes();
    let task = sample_task("alice");
    let node = NodeId::random();
    insert_claimed(&*a, &task, &lease(&node, 10)).await;
    let done = Update {
        state: completed(),
        status_message: Some("done".to_owned()),
        updated_at: at(1),
        attempt: 1,
    };
    let other = sample_task("bob");
    a.insert(&other).await.expect("insert succeeds");
    let taken = b
        .claim(&other.id, 1, &lease(&node, 60_000), at(0))
        .await
        .expect("claim succeeds")
        .expect("taken");
    let written = a
        .replace(&task.id, task.version, &done)
        .await
        .expect("replace succeeds");
    let mut last = vec![taken, written];
    let seen = tokio::time::timeout(FEED_DEADLINE, async {
        while !last.is_empty() {
            let change = feed.recv().await.expect("the feed stays open and keeps up");
            assert!(
                change.id == task.id || change.id == other.id,
                "only the tasks written: {change:?}"
            );
            last.retain(|record| record != &*change);
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "every change arrives within {FEED_DEADLINE:?}; missing: {last:?}"
    );
}
