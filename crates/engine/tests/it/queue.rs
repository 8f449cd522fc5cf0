//! A tool's `max_concurrent`: extra tasks wait in `working` with a status message saying
//! they are queued, and start in the order they were started when a slot frees.

use mcp_tasks_engine::{Context, Outcome, Policy, Principal, Status};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::recording::{TOOL, recording};

fn is_queued(message: &str) -> bool {
    message.starts_with("queued:")
}

#[tokio::test]
async fn with_one_slot_the_second_and_third_tasks_wait_queued_and_start_in_order() {
    let mut f = recording(Policy::default(), |tool| tool.max_concurrent(1));
    let first = f.start("alice", 1).await;
    let second = f.start("alice", 2).await;
    let third = f.start("alice", 3).await;
    assert_eq!(f.next_started().await, 1);

    for task in [&second, &third] {
        let message = f.message_until("alice", &task.id, is_queued).await;
        assert_eq!(message, format!("queued: waiting for the only slot of tool {TOOL}"));
        let stored = f.engine.get(&Principal::new("alice"), &task.id).await.unwrap();
        assert_eq!(stored.status(), Status::Working, "a queued task is working");
    }
    assert!(f.started.try_recv().is_err(), "nothing else started");

    f.releases.release(1);
    assert_eq!(f.next_started().await, 2, "the oldest waiter goes first");
    let message = f.message_until("alice", &second.id, |message| !is_queued(message)).await;
    assert_eq!(message, format!("started: a slot of tool {TOOL} came free"));
    assert_eq!(f.finished("alice", &first.id).await.status(), Status::Completed);
    assert!(f.started.try_recv().is_err(), "the third still waits");
    assert!(is_queued(&f.engine.get(&Principal::new("alice"), &third.id).await.unwrap().status_message.unwrap()));

    f.releases.release(2);
    assert_eq!(f.next_started().await, 3);
    f.releases.release(3);
    assert_eq!(f.finished("alice", &third.id).await.status(), Status::Completed);
}

#[tokio::test]
async fn the_queued_message_counts_the_slots_of_a_tool_with_several() {
    let mut f = recording(Policy::default(), |tool| tool.max_concurrent(2));
    f.start("alice", 1).await;
    f.start("alice", 2).await;
    let third = f.start("alice", 3).await;
    let message = f.message_until("alice", &third.id, is_queued).await;
    assert_eq!(message, format!("queued: waiting for one of 2 slots of tool {TOOL}"));
    assert_eq!(f.next_started().await + f.next_started().await, 3, "calls 1 and 2 run at once");
}

#[tokio::test]
async fn a_task_cancelled_while_queued_never_runs_and_gives_its_place_to_the_next() {
    let mut f = recording(Policy::default(), |tool| tool.max_concurrent(1));
    let alice = Principal::new("alice");
    f.start("alice", 1).await;
    let second = f.start("alice", 2).await;
    let third = f.start("alice", 3).await;
    assert_eq!(f.next_started().await, 1);
    f.message_until("alice", &second.id, is_queued).await;

    let cancelled = f.engine.cancel(&alice, &second.id).await.unwrap();
    assert_eq!(cancelled.status(), Status::Cancelled);
    f.releases.release(1);
    assert_eq!(f.next_started().await, 3, "the cancelled task was skipped");
    f.releases.release(3);
    f.finished("alice", &third.id).await;
    assert!(f.started.try_recv().is_err(), "the cancelled task never ran");
    assert_eq!(f.engine.get(&alice, &second.id).await.unwrap().status(), Status::Cancelled);
}

#[tokio::test]
async fn a_plain_call_takes_a_slot_of_the_tool_too_and_waits_its_turn() {
    let mut f = recording(Policy::default(), |tool| tool.max_concurrent(1));
    let task = f.start("alice", 1).await;
    assert_eq!(f.next_started().await, 1);
    let plain = {
        let engine = f.engine.clone();
        tokio::spawn(async move {
            let ctx = Context::plain(CancellationToken::new(), None);
            engine.call_plain(&Principal::new("bob"), TOOL, json!({"n": 2}), ctx).await
        })
    };
    tokio::task::yield_now().await;
    assert!(f.started.try_recv().is_err(), "the plain call waits for the slot");
    f.releases.release(1);
    f.finished("alice", &task.id).await;
    assert_eq!(f.next_started().await, 2);
    f.releases.release(2);
    assert!(matches!(plain.await.unwrap().unwrap(), Outcome::Result(_)));
}
