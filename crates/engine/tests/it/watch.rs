//! `Engine::watch_tasks`: changes routed by task id. A watcher hears its tasks' changes in
//! order and no others; its watch on a task ends with the task; dropping it unregisters it.

use mcp_tasks_engine::{Change, Principal, RestartPolicy, Status, Watched};
use tokio::time::timeout;

use crate::{WAIT, fixture, new_task};

async fn next_status(watch: &mcp_tasks_engine::TaskWatch) -> (String, Status) {
    loop {
        match timeout(WAIT, watch.recv()).await.expect("a change within the wait") {
            Watched::Change(Change::Task(record)) => return (record.id.to_string(), record.status()),
            Watched::Change(Change::Progress { .. }) => {}
            Watched::Lagged => panic!("no lag with two changes"),
        }
    }
}

#[tokio::test]
async fn a_watch_hears_its_tasks_changes_in_order_and_not_another_tasks() {
    let mut f = fixture(RestartPolicy::Fail, true);
    let owner = Principal::new("a");
    let watched = f.engine.create(new_task("a", None)).await.unwrap();
    let other = f.engine.create(new_task("a", None)).await.unwrap();
    let watch = f.engine.watch_task(&watched.id);
    assert_eq!(f.engine.watched_ids(), 1);

    f.engine.start(&other).unwrap();
    f.started.recv().await.unwrap();
    f.engine.cancel(&owner, &other.id).await.unwrap();
    f.engine.start(&watched).unwrap();
    f.started.recv().await.unwrap();
    f.engine.cancel(&owner, &watched.id).await.unwrap();

    // The other task's cancel came first; the watch hears only its own task's.
    assert_eq!(next_status(&watch).await, (watched.id.to_string(), Status::Cancelled));
    assert_eq!(f.engine.watched_ids(), 0, "a terminal task's watch ends by itself");
    assert!(timeout(std::time::Duration::from_millis(100), watch.recv()).await.is_err(), "nothing more");
}

#[tokio::test]
async fn dropping_a_watch_unregisters_it_and_leaves_the_others() {
    let f = fixture(RestartPolicy::Fail, true);
    let owner = Principal::new("a");
    let task = f.engine.create(new_task("a", None)).await.unwrap();
    let first = f.engine.watch_tasks();
    first.add(&task.id);
    first.add(&task.id); // twice: still one registration
    let second = f.engine.watch_task(&task.id);
    assert_eq!(f.engine.watched_ids(), 1);
    drop(first);
    assert_eq!(f.engine.watched_ids(), 1, "the second watch still watches it");
    f.engine.cancel(&owner, &task.id).await.unwrap();
    assert_eq!(next_status(&second).await.1, Status::Cancelled);
    drop(second);
    assert_eq!(f.engine.watched_ids(), 0);

    let again = f.engine.create(new_task("a", None)).await.unwrap();
    let watch = f.engine.watch_task(&again.id);
    drop(watch);
    assert_eq!(f.engine.watched_ids(), 0, "a dropped watch leaves no route behind");
}

#[tokio::test]
async fn waits_on_a_task_leave_no_watch_behind() {
    let mut f = fixture(RestartPolicy::Fail, false);
    let owner = Principal::new("a");
    let task = f.engine.create(new_task("a", None)).await.unwrap();
    f.engine.start(&task).unwrap();
    f.started.recv().await.unwrap();
    let waiter = {
        let (engine, owner, id) = (f.engine.clone(), owner.clone(), task.id.clone());
        tokio::spawn(async move { engine.wait_terminal(&owner, &id).await })
    };
    // The waiter is registered once it has read the task; then the task ends.
    timeout(WAIT, async {
        while f.engine.watched_ids() == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the waiter watches the task");
    f.release.notify_one();
    let done = timeout(WAIT, waiter).await.unwrap().unwrap().unwrap();
    assert_eq!(done.status(), Status::Completed);
    assert_eq!(f.engine.watched_ids(), 0);
}

/// Reports one step of progress, then ends.
struct OneStep;

#[async_trait::async_trait]
impl mcp_tasks_engine::Handler for OneStep {
    async fn call(&self, _arguments: serde_json::Value, ctx: mcp_tasks_engine::Context) -> mcp_tasks_engine::Outcome {
        ctx.progress(mcp_tasks_engine::Progress { progress: 1.0, total: Some(2.0), message: Some("half".into()) });
        mcp_tasks_engine::Outcome::Result(serde_json::json!({"content": []}))
    }
}

#[tokio::test]
async fn a_progress_subscriber_hears_the_progress_reports_and_no_task_change() {
    let f = fixture(RestartPolicy::Fail, true);
    f.engine.register("one_step", mcp_tasks_engine::ToolRuntime::new(OneStep));
    let mut progress = f.engine.subscribe_progress();
    let mut everything = f.engine.subscribe();
    let task = f.engine.create(mcp_tasks_engine::NewTask { tool: "one_step".into(), ..new_task("a", None) }).await.unwrap();
    f.engine.start(&task).unwrap();
    let done = timeout(WAIT, f.engine.wait_terminal(&task.owner, &task.id)).await.unwrap().unwrap();
    assert_eq!(done.status(), Status::Completed);

    match progress.try_recv() {
        Ok(Change::Progress { id, progress, .. }) => {
            assert_eq!(id, task.id);
            assert_eq!((progress.progress, progress.message.as_deref()), (1.0, Some("half")));
        }
        other => panic!("expected the progress report, got {other:?}"),
    }
    assert!(progress.try_recv().is_err(), "no task change on the progress feed");
    // The feed of every change had the creation, the report and the completion.
    let mut kinds = Vec::new();
    while let Ok(change) = everything.try_recv() {
        kinds.push(matches!(change, Change::Progress { .. }));
    }
    assert_eq!(kinds, [false, true, false]);
}
