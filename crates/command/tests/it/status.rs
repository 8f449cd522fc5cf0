//! Status messages that follow the process, from `started (pid N)` to the way it ended.

use super::*;

// ---- status messages ----

/// The tool as the server registers it: a result with `isError: true` reports a failure,
/// with its first text as the detail (the server's MCP tool wrapper, in short).
struct AsMcpTool(CommandTool);

#[async_trait]
impl Handler for AsMcpTool {
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome {
        self.0.call(arguments, ctx).await
    }
    fn reported_failure(&self, result: &Value) -> Option<String> {
        (result["isError"] == true).then(|| result["content"][0]["text"].as_str().unwrap_or("no details").to_owned())
    }
}

/// Runs `tool` with `arguments` as a task of an engine over a fresh SQLite store, and
/// returns the task's status messages in the order they were set, and its final record.
/// When the status message becomes `release_on`, a line is written to the fifo `release`.
async fn status_messages(
    tool: CommandTool,
    arguments: Value,
    release: Option<(&str, &Path)>,
) -> (Vec<String>, TaskRecord) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).expect("a store");
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
    engine.register("t", ToolRuntime::new(AsMcpTool(tool)));
    let mut feed = engine.subscribe();
    let task = engine
        .create(NewTask {
            trace: None,
            origin: None,
            owner: Principal::new("alice"),
            tool: "t".into(),
            arguments,
            requested_ttl_ms: None,
            error_result_fails: true,
            input_kinds: vec![],
        })
        .await
        .expect("the task is created");
    engine.start(&task).expect("the task starts");
    let mut messages: Vec<String> = Vec::new();
    loop {
        let change = tokio::time::timeout(Duration::from_secs(10), feed.recv())
            .await
            .expect("the task changes in time")
            .expect("the feed keeps up");
        let Change::Task(record) = change else {
            continue;
        };
        if record.id != task.id {
            continue;
        }
        if let Some(message) = &record.status_message
            && messages.last() != Some(message)
        {
            messages.push(message.clone());
            if let Some((on, fifo)) = release
                && on == message
            {
                let fifo = fifo.to_owned();
                tokio::task::spawn_blocking(move || std::fs::write(fifo, "go\n"))
                    .await
                    .expect("the writer task")
                    .expect("write to the fifo");
            }
        }
        if record.status().is_terminal() {
            return (messages, (*record).clone());
        }
    }
}

/// `started (pid N)`: N, or a panic.
fn started_pid(message: &str) -> u32 {
    message
        .strip_prefix("started (pid ")
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("not a start message: {message:?}"))
}

/// The messages after `started (pid N)`: the tool's `last` one, then the engine's own
/// message for a failed task, which quotes the result.
fn assert_process_then_engine(messages: &[String], last: &str) {
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1], last, "{messages:?}");
    assert!(
        messages[2].starts_with("The tool reported an error: "),
        "{messages:?}"
    );
}

#[tokio::test]
async fn status_messages_follow_the_process_from_start_to_exit() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("go");
    mkfifo(&fifo);
    let script = element(
        r#"
echo '@mcp-tasks {"status": "compiling"}'
echo '@mcp-tasks {"progress": 1, "total": 2, "message": "step 1 of 2"}'
read -r go < "$1"
echo done
"#,
    );
    let tool = tool(&["sh", "-c", &script, "_", "{fifo}"], &["fifo"], None);
    let arguments = json!({"fifo": fifo.to_str().unwrap()});
    let (messages, record) =
        status_messages(tool, arguments, Some(("step 1 of 2", fifo.as_path()))).await;
    assert_eq!(record.status().to_string(), "completed", "{record:?}");
    assert_eq!(messages.len(), 4, "{messages:?}");
    started_pid(&messages[0]);
    assert_eq!(
        messages[1..],
        ["compiling", "step 1 of 2", "exited (code 0)"],
        "{messages:?}"
    );
}

#[tokio::test]
async fn a_failing_exit_is_the_last_status_message() {
    let tool = tool(&["sh", "-c", "exit 3"], &[], None);
    let (messages, record) = status_messages(tool, json!({}), None).await;
    assert_eq!(record.status().to_string(), "failed", "{record:?}");
    started_pid(&messages[0]);
    assert_process_then_engine(&messages, "exited (code 3)");
}

#[tokio::test]
async fn a_death_by_signal_is_the_last_status_message() {
    for signal in ["TERM", "KILL"] {
        let script = format!("kill -{signal} $$");
        let tool = tool(&["sh", "-c", &script], &[], None);
        let (messages, _) = status_messages(tool, json!({}), None).await;
        started_pid(&messages[0]);
        assert_process_then_engine(&messages, &format!("killed (SIG{signal})"));
    }
}

#[tokio::test]
async fn a_timeout_is_the_last_status_message() {
    let tool = tool(&["sleep", "30"], &[], Some(Duration::from_millis(200)));
    let (messages, record) = status_messages(tool, json!({}), None).await;
    assert_eq!(record.status().to_string(), "failed", "{record:?}");
    started_pid(&messages[0]);
    assert_process_then_engine(&messages, "timed out after 200ms");
}

// ---- the line protocol ----
