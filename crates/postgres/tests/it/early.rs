//! Work started before its task's creation commits (`ToolRuntime::start_before_commit`) on
//! PostgreSQL, which writes no ending with its insert: work that ends while the insert waits
//! has its outcome, and the events it reported, written on their own once the creation is
//! answered, as if it had ended after.
//!
//! The insert is held back by another connection holding a `SHARE` lock on `tasks` (reads go
//! on; the creation's `INSERT` waits for the lock).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use mcp_tasks_engine::{Engine, Policy, RecordStore, Status, SystemClock, ToolRuntime, Version};
use mcp_tasks_testkit::early::{Chatty, chatty_log, log_of, new_task};

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_work_that_ends_while_its_insert_waits_has_its_outcome_and_its_log_written_once_answered() {
    let Some((store, schema)) = crate::fresh().await else { return };
    let engine = Engine::new(store.clone(), Arc::new(SystemClock), Policy::default());
    let (ran, mut has_run) = mpsc::unbounded_channel();
    engine.register("chatty", ToolRuntime::new(Chatty(ran)).start_before_commit(true));

    let locker = schema.client().await;
    locker.batch_execute("BEGIN; LOCK TABLE tasks IN SHARE MODE").await.unwrap();
    let creating = tokio::spawn({
        let (engine, task) = (engine.clone(), new_task("chatty"));
        async move { engine.create(task).await }
    });
    tokio::time::timeout(WAIT, has_run.recv()).await.expect("the work runs before the insert commits").unwrap();
    locker.batch_execute("ROLLBACK").await.unwrap();
    let task = tokio::time::timeout(WAIT, creating).await.unwrap().unwrap().expect("the creation commits");
    assert_eq!((task.status(), task.version), (Status::Working, Version(1)));
    let stored = store.get(&task.id).await.unwrap().expect("the task is stored");
    assert_eq!(stored.status(), Status::Working, "nothing of the work is written before the answer");

    // Answered: the ending is written, after what the work reported.
    engine.start(&task).unwrap();
    let finished = tokio::time::timeout(WAIT, engine.wait_terminal(&task.owner, &task.id)).await.unwrap().unwrap();
    assert_eq!(finished.status(), Status::Completed, "the outcome of the work is written");
    let (log, complete) = log_of(&engine, &task.owner, &task.id).await;
    assert_eq!(log, chatty_log(), "every report of the work, in order, then the ending");
    assert!(complete, "the log is complete");
}
