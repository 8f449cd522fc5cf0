//! `on_restart = retry` with `max_attempts`: a task interrupted on its last attempt fails
//! instead of running again.

use mcp_tasks_engine::{Outcome, Policy, Principal, RestartPolicy, Status, TaskState, WorkError};

use crate::recording::recording;

#[tokio::test]
async fn a_retried_task_interrupted_on_its_last_attempt_fails_saying_how_often_it_was_interrupted() {
    let mut f = recording(Policy::default(), |tool| tool.on_restart(RestartPolicy::Retry).max_attempts(3));
    let alice = Principal::new("alice");
    let task = f.start("alice", 1).await;
    f.next_started().await;
    // Each recovery stands for a server that died while the task ran (the older attempts
    // still running here are fenced off and can no longer write).
    for attempt in [2, 3] {
        let recovery = f.engine.recover().await.unwrap();
        assert_eq!((recovery.retried, recovery.failed), (1, 0), "attempt {attempt} runs");
        f.next_started().await;
        assert_eq!(f.engine.get(&alice, &task.id).await.unwrap().attempt, attempt);
    }
    let recovery = f.engine.recover().await.unwrap();
    assert_eq!((recovery.retried, recovery.failed), (0, 1), "no fourth attempt");

    let failed = f.engine.get(&alice, &task.id).await.unwrap();
    assert_eq!(failed.status(), Status::Failed);
    let expected = WorkError::InterruptedRepeatedly { times: 3, max_attempts: 3 };
    let message = expected.to_string();
    assert!(message.contains("interrupted by a server restart 3 times"), "{message}");
    assert!(message.contains("not retried again"), "{message}");
    assert_eq!(failed.state, TaskState::Failed { outcome: Outcome::Failure(expected.clone()) });
    assert_eq!(failed.status_message.as_deref(), Some(message.as_str()));
    assert!(f.started.try_recv().is_err(), "it did not run again");
    assert_eq!(f.engine.recover().await.unwrap(), Default::default(), "nothing left to recover");
}

#[tokio::test]
async fn with_max_attempts_one_a_retried_tool_is_not_run_again_after_a_restart() {
    let mut f = recording(Policy::default(), |tool| tool.on_restart(RestartPolicy::Retry).max_attempts(1));
    let task = f.start("alice", 1).await;
    f.next_started().await;
    let recovery = f.engine.recover().await.unwrap();
    assert_eq!((recovery.retried, recovery.failed), (0, 1));
    let failed = f.engine.get(&Principal::new("alice"), &task.id).await.unwrap();
    assert_eq!(failed.state, TaskState::Failed { outcome: Outcome::Failure(WorkError::InterruptedRepeatedly { times: 1, max_attempts: 1 }) });
}
