//! `Engine::request_cancel`, the cooperative cancel (2026-07-28 era): an acknowledgement
//! that never refuses a terminal task; running work is told to stop and the task ends
//! `cancelled` when it does; work not running here is cancelled at once.

use std::time::Duration;

use mcp_tasks_engine::{EngineError, Policy, Principal, RestartPolicy, Status, TaskState};
use tokio::time::timeout;

use crate::recording::recording;
use crate::{WAIT, fixture, new_task};

const CANCELLED: &str = "The task was cancelled by request.";

#[tokio::test]
async fn request_cancel_returns_a_terminal_task_unchanged_where_cancel_refuses() {
    let mut f = recording(Policy::default(), |tool| tool);
    let alice = Principal::new("alice");
    let task = f.start("alice", 1).await;
    f.next_started().await;
    f.releases.release(1);
    let done = f.finished("alice", &task.id).await;
    assert_eq!(done.status(), Status::Completed);

    let acknowledged = f.engine.request_cancel(&alice, &task.id).await.unwrap();
    assert_eq!(acknowledged, done, "unchanged, version and all");
    assert!(matches!(f.engine.cancel(&alice, &task.id).await, Err(EngineError::Refused { .. })));
    assert!(matches!(
        f.engine.request_cancel(&Principal::new("mallory"), &task.id).await,
        Err(EngineError::NotFound(_))
    ));
}

#[tokio::test]
async fn request_cancel_of_running_work_fires_its_token_and_the_task_ends_cancelled_when_it_stops() {
    let mut f = recording(Policy::default(), |tool| tool);
    let alice = Principal::new("alice");
    let task = f.start("alice", 1).await;
    f.next_started().await;

    let acknowledged = f.engine.request_cancel(&alice, &task.id).await.unwrap();
    assert_eq!(acknowledged.status(), Status::Working, "an acknowledgement, not the end yet");
    // The recorded tool returns an error when cancelled; the task still ends cancelled.
    let done = f.finished("alice", &task.id).await;
    assert_eq!(done.state, TaskState::Cancelled);
    assert_eq!(done.status_message.as_deref(), Some(CANCELLED));
}

#[tokio::test]
async fn work_that_ignores_the_token_runs_on_and_its_task_still_ends_cancelled() {
    let mut f = fixture(RestartPolicy::Fail, true);
    let owner = Principal::new("a");
    let task = f.engine.create(new_task("a", None)).await.unwrap();
    f.engine.start(&task).unwrap();
    f.started.recv().await.unwrap();

    let acknowledged = f.engine.request_cancel(&owner, &task.id).await.unwrap();
    assert_eq!(acknowledged.status(), Status::Working);
    let mut feed = f.engine.subscribe();
    assert!(timeout(Duration::from_millis(300), feed.recv()).await.is_err(), "nothing is written while it runs");
    f.release.notify_one();
    let done = timeout(WAIT, f.engine.wait_terminal(&owner, &task.id)).await.unwrap().unwrap();
    assert_eq!(done.state, TaskState::Cancelled, "its result is not kept");
    assert_eq!(done.status_message.as_deref(), Some(CANCELLED));
}

#[tokio::test]
async fn a_task_not_started_or_queued_for_a_slot_is_cancelled_at_once() {
    let mut f = recording(Policy::default(), |tool| tool.max_concurrent(1));
    let alice = Principal::new("alice");
    let never_started = f.engine.create(crate::recording::new_task("alice", 9)).await.unwrap();
    let cancelled = f.engine.request_cancel(&alice, &never_started.id).await.unwrap();
    assert_eq!((cancelled.state.clone(), cancelled.status_message.as_deref()), (TaskState::Cancelled, Some(CANCELLED)));

    let first = f.start("alice", 1).await;
    assert_eq!(f.next_started().await, 1);
    let queued = f.start("alice", 2).await;
    f.message_until("alice", &queued.id, |message| message.starts_with("queued:")).await;
    let cancelled = f.engine.request_cancel(&alice, &queued.id).await.unwrap();
    assert_eq!(cancelled.status(), Status::Cancelled, "queued work is not running: cancelled at once");

    f.releases.release(1);
    assert_eq!(f.finished("alice", &first.id).await.status(), Status::Completed);
    assert!(f.started.try_recv().is_err(), "the cancelled task never starts");
}
