//! Ending the whole process group: on timeout, cancellation, after the grace, after a normal
//! exit, and when the call is dropped.

use super::*;

// ---- ending the process group ----

const TWO_SLEEPERS: &str = "echo $$ > \"$1\"; sleep 30 & sleep 30 & wait";

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let tool = tool(
        &["sh", "-c", TWO_SLEEPERS, "_", "{pid_file}"],
        &["pid_file"],
        Some(Duration::from_secs(1)),
    );
    let started = Instant::now();
    let (is_error, text) = call(
        &tool,
        json!({"pid_file": pid_file.to_str().unwrap()}),
        CancellationToken::new(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(is_error);
    assert_eq!(text, "timed out after 1s; the process group got SIGTERM");
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn cancellation_through_the_context_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pid");
    mkfifo(&fifo);
    let tool = tool(
        &["sh", "-c", TWO_SLEEPERS, "_", "{pid_file}"],
        &["pid_file"],
        None,
    );
    let cancel = CancellationToken::new();
    let arguments = json!({"pid_file": fifo.to_str().unwrap()});
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { call(&tool, arguments, cancel).await }
    });
    let pgid = read_pid(&fifo).await;
    assert!(!group_is_gone(pgid), "the group runs until cancelled");
    cancel.cancel();
    let (is_error, text) = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap();
    assert!(is_error);
    assert_eq!(text, "cancelled");
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn a_call_cancelled_before_it_starts_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let tool = tool(&["touch", "{path}"], &["path"], None);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (is_error, text) = call(&tool, json!({"path": marker.to_str().unwrap()}), cancel).await;
    assert!(is_error);
    assert_eq!(text, "cancelled");
    assert!(!marker.exists());
}

#[tokio::test]
async fn processes_that_ignore_sigterm_are_killed_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = "trap '' TERM; echo $$ > \"$1\"; sleep 30 & wait; wait";
    let tool = tool(
        &["sh", "-c", script, "_", "{pid_file}"],
        &["pid_file"],
        Some(Duration::from_millis(300)),
    );
    let started = Instant::now();
    let (is_error, text) = call(
        &tool,
        json!({"pid_file": pid_file.to_str().unwrap()}),
        CancellationToken::new(),
    )
    .await;
    let elapsed = started.elapsed();
    assert!(is_error);
    assert_eq!(
        text,
        "timed out after 300ms; the process group got SIGTERM, then SIGKILL after the 2s grace"
    );
    assert!(
        elapsed >= Duration::from_secs(2),
        "SIGKILL came before the grace: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn kill_grace_sets_the_time_between_sigterm_and_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let tool = configured(
        r#"
[[tools]]
name = "stubborn"
command = ["sh", "-c", "trap '' TERM; echo $$ > \"$1\"; sleep 30 & wait; wait", "_", "{pid_file}"]
timeout = "200ms"
kill_grace = "300ms"
input_schema = { type = "object", properties = { pid_file = { type = "string" } } }
"#,
    );
    let started = Instant::now();
    let (is_error, text) = call(
        &tool,
        json!({"pid_file": pid_file.to_str().unwrap()}),
        CancellationToken::new(),
    )
    .await;
    let elapsed = started.elapsed();
    assert!(is_error);
    assert_eq!(
        text,
        "timed out after 200ms; the process group got SIGTERM, then SIGKILL after the 300ms grace"
    );
    assert!(elapsed >= Duration::from_millis(500), "took {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(2),
        "the 2s default grace was used: {elapsed:?}"
    );
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn a_death_by_sigterm_is_an_error_naming_it() {
    let tool = tool(
        &["sh", "-c", "echo started; kill -TERM $$; sleep 5"],
        &[],
        None,
    );
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    assert_eq!(
        text,
        "command was killed by signal SIGTERM\n--- stdout ---\nstarted\n"
    );
}

#[tokio::test]
async fn background_processes_left_by_a_finished_command_are_ended() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = "echo $$ > \"$1\"; sleep 30 & echo done";
    let tool = tool(
        &["sh", "-c", script, "_", "{pid_file}"],
        &["pid_file"],
        None,
    );
    let started = Instant::now();
    let (is_error, text) = call(
        &tool,
        json!({"pid_file": pid_file.to_str().unwrap()}),
        CancellationToken::new(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(!is_error, "{text}");
    assert_eq!(text, "done\n");
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn a_dropped_call_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pid");
    mkfifo(&fifo);
    let tool = tool(
        &["sh", "-c", TWO_SLEEPERS, "_", "{pid_file}"],
        &["pid_file"],
        None,
    );
    let arguments = json!({"pid_file": fifo.to_str().unwrap()});
    let running =
        tokio::spawn(async move { call(&tool, arguments, CancellationToken::new()).await });
    let pgid = read_pid(&fifo).await;
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    // The drop guard SIGKILLs the group and reaps it in the background; killing is not
    // instant, so this is a bounded wait for the kill to land.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !group_is_gone(pgid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}
