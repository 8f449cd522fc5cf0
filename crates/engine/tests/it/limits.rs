//! The admission limits of [`Policy`]: tasks kept per principal, tasks and calls running
//! overall and per principal. A refusal writes nothing.

use mcp_tasks_engine::{
    Context, EngineError, LimitExceeded, ListQuery, Outcome, Policy, Principal, Status, TaskRecord,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::recording::{Recording, TOOL, new_task, recording};

fn policy(max_running: u32, per_principal: u32, retained: u64) -> Policy {
    Policy {
        max_running,
        max_running_per_principal: per_principal,
        max_retained_per_principal: retained,
        ..Policy::default()
    }
}

async fn stored(f: &Recording, owner: &str) -> Vec<TaskRecord> {
    let query = ListQuery { owner: Principal::new(owner), after: None, limit: 100 };
    f.engine.list(&query).await.unwrap()
}

fn limit(err: EngineError) -> LimitExceeded {
    match err {
        EngineError::Limit(limit) => limit,
        other => panic!("expected a limit, got {other:?}"),
    }
}

#[tokio::test]
async fn a_task_over_max_retained_per_principal_is_refused_and_nothing_is_written() {
    let mut f = recording(policy(64, 16, 2), |tool| tool);
    let first = f.start("alice", 1).await;
    f.next_started().await;
    f.releases.release(1);
    f.finished("alice", &first.id).await; // finished tasks still count until purged
    f.start("alice", 2).await;
    let before = stored(&f, "alice").await;

    let refused = limit(f.engine.create(new_task("alice", 3)).await.unwrap_err());
    assert_eq!(refused, LimitExceeded::RetainedPerPrincipal { owner: Principal::new("alice"), retained: 2, limit: 2 });
    assert_eq!(stored(&f, "alice").await, before, "the refusal leaves the store unchanged");
    f.engine.create(new_task("bob", 4)).await.expect("another principal has room");
}

#[tokio::test]
async fn a_task_over_max_running_per_principal_is_refused_until_one_of_its_tasks_ends() {
    let mut f = recording(policy(64, 2, 100), |tool| tool);
    let first = f.start("alice", 1).await;
    let second = f.start("alice", 2).await;
    let before = stored(&f, "alice").await;

    let refused = limit(f.engine.create(new_task("alice", 3)).await.unwrap_err());
    assert_eq!(refused, LimitExceeded::RunningPerPrincipal { owner: Principal::new("alice"), running: 2, limit: 2 });
    assert_eq!(stored(&f, "alice").await, before, "the refusal leaves the store unchanged");
    f.start("bob", 4).await; // another principal has its own allowance

    // A task that finishes frees its place; so does one that is cancelled.
    f.next_started().await;
    f.next_started().await;
    f.releases.release(1);
    f.finished("alice", &first.id).await;
    let third = f.start("alice", 5).await;
    assert!(matches!(f.engine.create(new_task("alice", 6)).await, Err(EngineError::Limit(_))));
    f.engine.cancel(&Principal::new("alice"), &second.id).await.unwrap();
    f.start("alice", 7).await;
    assert_eq!(f.engine.get(&Principal::new("alice"), &third.id).await.unwrap().status(), Status::Working);
}

#[tokio::test]
async fn a_task_over_max_running_is_refused_whoever_asks() {
    let f = recording(policy(2, 16, 100), |tool| tool);
    f.start("alice", 1).await;
    f.start("bob", 2).await;
    let refused = limit(f.engine.create(new_task("carol", 3)).await.unwrap_err());
    assert_eq!(refused, LimitExceeded::Running { running: 2, limit: 2 });
    assert!(stored(&f, "carol").await.is_empty(), "nothing was created");
}

#[tokio::test]
async fn plain_calls_count_towards_the_running_limits_and_a_refused_one_does_not_run() {
    let mut f = recording(policy(64, 1, 100), |tool| tool);
    let alice = Principal::new("alice");
    let plain = {
        let engine = f.engine.clone();
        let alice = alice.clone();
        tokio::spawn(async move {
            let ctx = Context::plain(CancellationToken::new(), None);
            engine.call_plain(&alice, TOOL, json!({"n": 1}), ctx).await
        })
    };
    assert_eq!(f.next_started().await, 1);

    // While the plain call runs, alice can neither create a task nor make another call.
    let refused = limit(f.engine.create(new_task("alice", 2)).await.unwrap_err());
    assert_eq!(refused, LimitExceeded::RunningPerPrincipal { owner: alice.clone(), running: 1, limit: 1 });
    let ctx = Context::plain(CancellationToken::new(), None);
    let refused = f.engine.call_plain(&alice, TOOL, json!({"n": 3}), ctx).await.unwrap_err();
    assert!(matches!(refused, EngineError::Limit(LimitExceeded::RunningPerPrincipal { .. })), "{refused:?}");
    assert!(f.started.try_recv().is_err(), "the refused call never ran");

    // Once the plain call returns, its place is free again.
    f.releases.release(1);
    let outcome = plain.await.unwrap().unwrap();
    assert!(matches!(outcome, Outcome::Result(_)), "{outcome:?}");
    f.start("alice", 4).await;
}
