//! Adoption ([`Engine::adopt`]): a plain call that already runs becomes a task's work without
//! being stopped or run again: its end is the task's outcome, cancelling the task stops it,
//! its reports go to the task, and it is not counted twice against the running limits.

use std::sync::Arc;

use mcp_tasks_engine::{
    Change, ClientLink, Context, EngineError, InputKind, LimitExceeded, NewTask, Outcome, Policy,
    Principal, Progress, Status, TaskState,
};
use serde_json::json;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

use crate::WAIT;
use crate::recording::{TOOL, new_task, recording};

/// Runs call `n` of `owner` plainly in the background, as a server's plain `tools/call` does,
/// stopped by `cancel`; returns its outcome when it ends.
fn plain_call(
    f: &crate::recording::Recording,
    owner: &str,
    n: u64,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<Result<Outcome, EngineError>> {
    let (engine, owner) = (f.engine.clone(), Principal::new(owner));
    let ctx = Context::plain(cancel.clone(), None);
    tokio::spawn(async move { engine.call_plain(&owner, TOOL, json!({"n": n}), ctx).await })
}

async fn outcome_of(call: tokio::task::JoinHandle<Result<Outcome, EngineError>>) -> Outcome {
    call.await.unwrap().unwrap()
}

#[tokio::test]
async fn adopted_work_ends_as_its_task_without_running_again() {
    let mut f = recording(Policy::default(), |tool| tool);
    let cancel = CancellationToken::new();
    let call = plain_call(&f, "alice", 1, &cancel);
    assert_eq!(timeout(WAIT, f.started.recv()).await.unwrap(), Some(1));

    let (task, link) = f
        .engine
        .adopt(new_task("alice", 1), cancel.clone(), outcome_of(call))
        .await
        .unwrap();
    assert_eq!(task.status(), Status::Working);
    assert_eq!(link.task_id(), &task.id);
    let owner = Principal::new("alice");
    assert_eq!(
        f.engine.get(&owner, &task.id).await.unwrap().status(),
        Status::Working,
        "committed at once"
    );

    f.releases.release(1);
    let done = timeout(WAIT, f.engine.wait_terminal(&owner, &task.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        done.state,
        TaskState::Completed {
            result: json!({"content": [{"type": "text", "text": "call 1 done"}]})
        }
    );
    assert_eq!(done.attempt, 1);
    assert!(
        f.started.try_recv().is_err(),
        "the work ran once: adoption does not start it again"
    );
}

#[tokio::test]
async fn cancelling_an_adopted_task_stops_the_running_work() {
    let mut f = recording(Policy::default(), |tool| tool);
    let cancel = CancellationToken::new();
    let call = plain_call(&f, "alice", 1, &cancel);
    timeout(WAIT, f.started.recv()).await.unwrap();
    let (task, _link) = f
        .engine
        .adopt(new_task("alice", 1), cancel.clone(), outcome_of(call))
        .await
        .unwrap();

    let owner = Principal::new("alice");
    f.engine.request_cancel(&owner, &task.id).await.unwrap();
    assert!(
        cancel.is_cancelled(),
        "the cancel reached the work's own token"
    );
    let done = timeout(WAIT, f.engine.wait_terminal(&owner, &task.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status(), Status::Cancelled);
    // Another principal sees no such task, adopted or not.
    let mallory = Principal::new("mallory");
    assert!(matches!(
        f.engine.request_cancel(&mallory, &task.id).await,
        Err(EngineError::NotFound(_))
    ));
}

#[tokio::test]
async fn an_adopted_tasks_link_reports_progress_and_asks_through_the_task() {
    let mut f = recording(Policy::default(), |tool| tool);
    let cancel = CancellationToken::new();
    let call = plain_call(&f, "alice", 1, &cancel);
    timeout(WAIT, f.started.recv()).await.unwrap();
    let new = NewTask {
        trace: None,
        origin: None,
        input_kinds: vec![InputKind::Elicitation],
        ..new_task("alice", 1)
    };
    let (task, link) = f
        .engine
        .adopt(new, cancel.clone(), outcome_of(call))
        .await
        .unwrap();
    let owner = Principal::new("alice");
    let mut feed = f.engine.subscribe();

    link.progress(Progress {
        progress: 3.0,
        total: Some(10.0),
        message: Some("three".into()),
    });
    let reported = timeout(WAIT, async {
        loop {
            if let Ok(Change::Progress { id, progress, .. }) = feed.recv().await
                && id == task.id
            {
                return progress;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(reported.progress, 3.0);

    let link: Arc<dyn ClientLink> = Arc::new(link);
    let asking = {
        let link = Arc::clone(&link);
        tokio::spawn(async move {
            link.request_named("approve", InputKind::Elicitation, json!({"message": "ok?"}))
                .await
        })
    };
    let waiting = timeout(WAIT, async {
        loop {
            let record = f.engine.get(&owner, &task.id).await.unwrap();
            if let TaskState::InputRequired { requests } = &record.state {
                return requests.keys().cloned().collect::<Vec<_>>();
            }
            let _ = feed.recv().await;
        }
    })
    .await
    .unwrap();
    assert_eq!(waiting, vec!["approve".to_owned()]);
    let answer = json!({"action": "accept", "content": {}});
    assert!(
        f.engine
            .answer(&owner, &task.id, "approve", Ok(answer.clone()))
            .await
            .unwrap()
    );
    assert_eq!(
        timeout(WAIT, asking).await.unwrap().unwrap().unwrap(),
        answer
    );
    assert_eq!(
        f.engine.get(&owner, &task.id).await.unwrap().status(),
        Status::Working
    );
    f.releases.release(1);
    timeout(WAIT, f.engine.wait_terminal(&owner, &task.id))
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn adoption_is_not_counted_twice_against_the_running_limits() {
    let policy = Policy {
        max_running_per_principal: 1,
        ..Policy::default()
    };
    let mut f = recording(policy, |tool| tool);
    let cancel = CancellationToken::new();
    let call = plain_call(&f, "alice", 1, &cancel);
    timeout(WAIT, f.started.recv()).await.unwrap();
    // At the limit with the plain call, the task that adopts it is still admitted...
    let (task, _link) = f
        .engine
        .adopt(new_task("alice", 1), cancel.clone(), outcome_of(call))
        .await
        .unwrap();
    // ...and counts once: one more is refused, as it was before the adoption.
    let refused = f.engine.create(new_task("alice", 2)).await.unwrap_err();
    assert!(
        matches!(
            refused,
            EngineError::Limit(LimitExceeded::RunningPerPrincipal {
                running: 1,
                limit: 1,
                ..
            })
        ),
        "{refused:?}"
    );
    f.releases.release(1);
    let owner = Principal::new("alice");
    timeout(WAIT, f.engine.wait_terminal(&owner, &task.id))
        .await
        .unwrap()
        .unwrap();
    f.engine
        .create(new_task("alice", 3))
        .await
        .expect("room again once the adopted work ended");
}
