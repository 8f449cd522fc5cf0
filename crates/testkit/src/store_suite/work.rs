//! Store-suite cases of [`WorkStore`]: what the running work keeps beside its task (a task's
//! process group and checkpoint, going with their task when it is purged) and the process
//! groups kept by key.

use std::sync::Arc;

use serde_json::json;

use mcp_tasks_engine::{KeptGroup, ProcessGroup, TaskId, TaskState, TaskStore, Timestamp, Update};

use super::fixtures::*;

/// A recorded process group reads back, a second record replaces the first, nothing else
/// of the task changes (not even its version), an unknown id is no error and gets none, and
/// the record goes with its task when it is purged.
pub async fn a_process_group_is_recorded_with_its_task_and_goes_with_it(store: Arc<dyn TaskStore>) {
    let task = task_at("alice", T0.0, Some(10), TaskState::Working);
    insert_all(&*store, std::slice::from_ref(&task)).await;
    assert_eq!(store.process_group(&task.id).await.expect("read succeeds"), None, "none recorded yet");
    let first = ProcessGroup { pgid: 4_294_967_295, start_time: u64::try_from(i64::MAX).unwrap_or(u64::MAX) };
    store.set_process_group(&task.id, &first).await.expect("record succeeds");
    assert_eq!(store.process_group(&task.id).await.expect("read succeeds"), Some(first));
    let second = ProcessGroup { pgid: 4242, start_time: 987_654 };
    store.set_process_group(&task.id, &second).await.expect("record succeeds");
    assert_eq!(store.process_group(&task.id).await.expect("read succeeds"), Some(second), "replaced");
    assert_eq!(store.get(&task.id).await.expect("get succeeds").as_ref(), Some(&task), "the task itself unchanged");

    let unknown = TaskId::random();
    store.set_process_group(&unknown, &second).await.expect("an unknown id is no error");
    assert_eq!(store.process_group(&unknown).await.expect("read succeeds"), None);

    let done = Update { state: completed(), status_message: None, updated_at: Timestamp(T0.0 + 1), attempt: task.attempt };
    store.replace(&task.id, task.version, &done).await.expect("replace succeeds");
    assert_eq!(store.purge(Timestamp(T0.0 + 1_000), 10).await.expect("purge succeeds"), 1);
    assert_eq!(store.process_group(&task.id).await.expect("read succeeds"), None, "gone with its task");
}

/// A kept group recorded under a key reads back (every field, at the ends of its range), a
/// second record under the key replaces the first, keys are independent, `None` removes the
/// record (removing an absent one is no error), and no task is involved.
pub async fn a_kept_group_is_recorded_by_key_replaced_and_removed(store: Arc<dyn TaskStore>) {
    assert_eq!(store.kept_group("boot:proxy a").await.expect("read succeeds"), None, "none recorded yet");
    let far = u64::try_from(i64::MAX).unwrap_or(u64::MAX);
    let first = KeptGroup { group: ProcessGroup { pgid: 4_294_967_295, start_time: far }, keeper_pid: 4_294_967_295, keeper_start: far };
    store.set_kept_group("boot:proxy a", Some(&first)).await.expect("record succeeds");
    assert_eq!(store.kept_group("boot:proxy a").await.expect("read succeeds"), Some(first));
    let second = KeptGroup { group: ProcessGroup { pgid: 4242, start_time: 987_654 }, keeper_pid: 17, keeper_start: 12 };
    store.set_kept_group("boot:proxy a", Some(&second)).await.expect("record succeeds");
    assert_eq!(store.kept_group("boot:proxy a").await.expect("read succeeds"), Some(second), "replaced");
    store.set_kept_group("boot:proxy b", Some(&first)).await.expect("record succeeds");
    assert_eq!(store.kept_group("boot:proxy a").await.expect("read succeeds"), Some(second), "keys are independent");
    store.set_kept_group("boot:proxy a", None).await.expect("remove succeeds");
    assert_eq!(store.kept_group("boot:proxy a").await.expect("read succeeds"), None, "removed");
    assert_eq!(store.kept_group("boot:proxy b").await.expect("read succeeds"), Some(first), "the other key kept");
    store.set_kept_group("boot:proxy a", None).await.expect("removing an absent record is no error");
    assert!(store.unfinished(10).await.expect("unfinished succeeds").is_empty(), "no task written");
}

/// A checkpoint written by the task's current attempt reads back and a second replaces it;
/// a stale attempt's is refused (`false`, the note unchanged), so is one for a finished or an
/// unknown task; nothing else of the task changes (not its version); the checkpoint outlives
/// the attempt that wrote it (a retry reads it) and goes with its task when it is purged.
pub async fn a_checkpoint_is_fenced_by_the_attempt_and_goes_with_its_task(store: Arc<dyn TaskStore>) {
    let task = task_at("alice", T0.0, Some(10), TaskState::Working);
    insert_all(&*store, std::slice::from_ref(&task)).await;
    assert_eq!(store.checkpoint(&task.id).await.expect("read succeeds"), None, "none recorded yet");
    let first = json!({"upstream_task": "t-1", "nested": {"n": [1, 2.5, null, "é"]}});
    assert!(store.set_checkpoint(&task.id, task.attempt, &first).await.expect("write succeeds"));
    assert_eq!(store.checkpoint(&task.id).await.expect("read succeeds"), Some(first.clone()));
    let second = json!("t-2");
    assert!(store.set_checkpoint(&task.id, task.attempt, &second).await.expect("write succeeds"));
    assert_eq!(store.checkpoint(&task.id).await.expect("read succeeds"), Some(second.clone()), "replaced");
    let stale = store.set_checkpoint(&task.id, task.attempt + 1, &json!("other")).await.expect("write runs");
    assert!(!stale, "another attempt's checkpoint is refused");
    assert_eq!(store.checkpoint(&task.id).await.expect("read succeeds"), Some(second.clone()), "unchanged");
    assert_eq!(store.get(&task.id).await.expect("get succeeds").as_ref(), Some(&task), "the task itself unchanged");

    let retried = Update { state: TaskState::Working, status_message: None, updated_at: Timestamp(T0.0 + 1), attempt: task.attempt + 1 };
    let retried = store.replace(&task.id, task.version, &retried).await.expect("replace succeeds");
    assert_eq!(store.checkpoint(&task.id).await.expect("read succeeds"), Some(second), "the next attempt reads it");
    let old = store.set_checkpoint(&task.id, task.attempt, &json!("late")).await.expect("write runs");
    assert!(!old, "the interrupted attempt can no longer write");

    let unknown = TaskId::random();
    assert!(!store.set_checkpoint(&unknown, 1, &json!(1)).await.expect("an unknown id is no error"));
    assert_eq!(store.checkpoint(&unknown).await.expect("read succeeds"), None);

    let done = Update { state: completed(), status_message: None, updated_at: Timestamp(T0.0 + 2), attempt: retried.attempt };
    store.replace(&task.id, retried.version, &done).await.expect("replace succeeds");
    let finished = store.set_checkpoint(&task.id, retried.attempt, &json!("after")).await.expect("write runs");
    assert!(!finished, "a finished task takes no checkpoint");
    assert_eq!(store.purge(Timestamp(T0.0 + 1_000), 10).await.expect("purge succeeds"), 1);
    assert_eq!(store.checkpoint(&task.id).await.expect("read succeeds"), None, "gone with its task");
}
