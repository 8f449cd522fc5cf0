//! `CommandTool` against real processes: argv building, results, the environment, and
//! ending the whole process group on timeout, cancellation, exit and drop.

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_tasks_config::{CommandTool, TaskSupport, ToolConfig};
use mcp_tasks_engine::{Context, Handler, Outcome, RestartPolicy};
use nix::errno::Errno;
use nix::sys::signal::killpg;
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A tool running `command`, whose schema has a string property for each of `properties`.
fn tool(command: &[&str], properties: &[&str], timeout: Option<Duration>) -> CommandTool {
    let properties: serde_json::Map<String, Value> = properties
        .iter()
        .map(|name| (name.to_string(), json!({"type": "string"})))
        .collect();
    CommandTool::new(&ToolConfig {
        name: "test".into(),
        description: String::new(),
        input_schema: json!({"type": "object", "properties": properties}),
        command: command.iter().map(|s| s.to_string()).collect(),
        task_support: TaskSupport::Optional,
        timeout,
        on_restart: RestartPolicy::Fail,
    })
}

/// Runs a plain call and returns `(isError, text)` of its `CallToolResult`.
async fn call(tool: &CommandTool, arguments: Value, cancel: CancellationToken) -> (bool, String) {
    match tool.call(arguments, Context::plain(cancel, None)).await {
        Outcome::Result(result) => {
            let is_error = result["isError"].as_bool().expect("isError is a boolean");
            let content = result["content"].as_array().expect("content is an array");
            assert_eq!(content.len(), 1, "{result}");
            assert_eq!(content[0]["type"], "text");
            (
                is_error,
                content[0]["text"].as_str().expect("text").to_owned(),
            )
        }
        Outcome::Error(err) => panic!("expected a result, got error {err:?}"),
    }
}

/// Splits NUL-terminated output into its elements.
fn nul_separated(text: &str) -> Vec<&str> {
    let mut elements: Vec<&str> = text.split('\0').collect();
    assert_eq!(elements.pop(), Some(""), "output ends with a NUL: {text:?}");
    elements
}

/// Whether `pgid`'s process group is gone (`killpg` with signal 0 says ESRCH).
fn group_is_gone(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None) == Err(Errno::ESRCH)
}

/// Reads the pid a script wrote to `fifo`; blocks until the script has started.
async fn read_pid(fifo: &Path) -> i32 {
    let fifo = fifo.to_owned();
    let text = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo))
        .await
        .expect("reader task")
        .expect("read fifo");
    text.trim().parse().expect("a pid")
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success());
}

const PRINT_ARGV: &str = "printf '%s\\0' \"$@\"";

// ---- argv ----

#[test]
fn an_exact_placeholder_becomes_one_argv_element() {
    let tool = tool(&["prog", "{x}", "--flag"], &["x"], None);
    assert_eq!(
        tool.argv(&json!({"x": "a b  c"})).unwrap(),
        ["prog", "a b  c", "--flag"]
    );
}

#[test]
fn an_embedded_placeholder_is_replaced_inside_its_element_only() {
    let tool = tool(
        &["prog", "--out={dir}/{name}.txt", "{{literal}}"],
        &["dir", "name"],
        None,
    );
    assert_eq!(
        tool.argv(&json!({"dir": "/tmp/x y", "name": "n"})).unwrap(),
        ["prog", "--out=/tmp/x y/n.txt", "{literal}"]
    );
}

#[test]
fn an_absent_argument_drops_an_exact_element_and_empties_an_embedded_one() {
    let tool = tool(&["prog", "{x}", "--y={y}", "end"], &["x", "y"], None);
    assert_eq!(tool.argv(&json!({})).unwrap(), ["prog", "--y=", "end"]);
    assert_eq!(
        tool.argv(&json!({"x": null})).unwrap(),
        ["prog", "--y=", "end"]
    );
    assert_eq!(tool.argv(&Value::Null).unwrap(), ["prog", "--y=", "end"]);
}

#[test]
fn numbers_booleans_arrays_and_objects_arrive_as_json_text() {
    let tool = tool(
        &["prog", "{n}", "{f}", "{b}", "{a}", "{o}", "-n={n}"],
        &["n", "f", "b", "a", "o"],
        None,
    );
    let argv = tool
        .argv(&json!({"n": 42, "f": 1.5, "b": true, "a": [1, "two"], "o": {"k": "v", "n": null}}))
        .unwrap();
    assert_eq!(
        argv,
        [
            "prog",
            "42",
            "1.5",
            "true",
            "[1,\"two\"]",
            "{\"k\":\"v\",\"n\":null}",
            "-n=42"
        ]
    );
}

#[test]
fn arguments_that_are_not_an_object_are_invalid_params() {
    let tool = tool(&["prog"], &[], None);
    for arguments in [json!([1]), json!("x"), json!(3)] {
        let err = tool.argv(&arguments).unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(
            err.message.contains("arguments must be a JSON object"),
            "{}",
            err.message
        );
    }
}

#[tokio::test]
async fn a_call_with_arguments_that_are_not_an_object_is_an_invalid_params_error() {
    let tool = tool(&["true"], &[], None);
    match tool
        .call(json!([1]), Context::plain(CancellationToken::new(), None))
        .await
    {
        Outcome::Error(err) => assert_eq!(err.code, -32602),
        Outcome::Result(result) => panic!("expected an error, got {result}"),
    }
}

#[tokio::test]
async fn shell_metacharacters_arrive_verbatim_as_one_argv_element_each() {
    let hostile = [
        "; rm -rf /",
        "$(id)",
        "`id`",
        "line one\nline two",
        "'single' \"double\" * ? ~ | & > < \\",
        "",
    ];
    let tool = tool(
        &[
            "sh", "-c", PRINT_ARGV, "_", "{a}", "{b}", "{c}", "{d}", "{e}", "{f}",
        ],
        &["a", "b", "c", "d", "e", "f"],
        None,
    );
    let arguments = json!({
        "a": hostile[0], "b": hostile[1], "c": hostile[2], "d": hostile[3], "e": hostile[4], "f": hostile[5],
    });
    let (is_error, text) = call(&tool, arguments, CancellationToken::new()).await;
    assert!(!is_error, "{text}");
    assert_eq!(nul_separated(&text), hostile);
}

// ---- results ----

#[tokio::test]
async fn exit_zero_returns_stdout_as_text() {
    let tool = tool(
        &["sh", "-c", "echo \"$1\"; echo noise >&2", "_", "{msg}"],
        &["msg"],
        None,
    );
    let (is_error, text) = call(
        &tool,
        json!({"msg": "hello $USER"}),
        CancellationToken::new(),
    )
    .await;
    assert!(!is_error);
    assert_eq!(text, "hello $USER\n");
}

#[tokio::test]
async fn a_nonzero_exit_is_an_error_with_the_code_and_the_stderr_tail() {
    let script = "head -c 5000 /dev/zero | tr '\\0' x >&2; echo END >&2; echo partial; exit 3";
    let tool = tool(&["sh", "-c", script], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    let (stderr, stdout) = text
        .strip_prefix("command exited with code 3\n--- stderr (last 4 KiB) ---\n")
        .unwrap_or_else(|| panic!("unexpected text: {text:.200}"))
        .split_once("\n--- stdout ---\n")
        .expect("a stdout section");
    assert_eq!(stderr.len(), 4096);
    assert!(stderr.ends_with("xxxEND\n"), "{stderr:.100}");
    assert_eq!(stdout, "partial\n");
}

#[tokio::test]
async fn a_nonzero_exit_without_output_is_just_the_code() {
    let tool = tool(&["false"], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    assert_eq!(text, "command exited with code 1");
}

#[tokio::test]
async fn a_program_that_does_not_exist_is_an_error_result_naming_it() {
    let tool = tool(&["/nonexistent/mcp-tasks-no-such-program", "x"], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    assert!(
        text.starts_with("could not start `/nonexistent/mcp-tasks-no-such-program`: "),
        "{text}"
    );
    assert!(text.contains("No such file or directory"), "{text}");
}

#[tokio::test]
async fn a_death_by_signal_is_an_error_naming_the_signal() {
    let tool = tool(&["sh", "-c", "kill -KILL $$"], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    assert_eq!(text, "command was killed by signal SIGKILL");
}

#[tokio::test]
async fn the_servers_environment_does_not_leak_into_tools() {
    const SECRET: &str = "MCP_TASKS_SECRET_TEST";
    if std::env::var_os(SECRET).is_none() {
        // A test cannot set a variable in its own process (`set_var` is unsafe, and unsafe
        // code is forbidden), so it runs itself again in a child that has the secret.
        let output = tokio::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "the_servers_environment_does_not_leak_into_tools",
                "--nocapture",
            ])
            .env(SECRET, "hunter2")
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            stdout.contains("1 passed"),
            "the inner run ran no test: {stdout}"
        );
        return;
    }
    let tool = tool(&["env"], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(!is_error, "{text}");
    assert!(
        !text.contains(SECRET) && !text.contains("hunter2"),
        "{text}"
    );
    assert!(text.lines().any(|line| line.starts_with("PATH=")), "{text}");
    for line in text.lines() {
        let key = line.split('=').next().unwrap_or_default();
        assert!(
            ["PATH", "HOME", "LANG", "TZ", "PWD", "SHLVL", "_"].contains(&key),
            "leaked: {line}"
        );
    }
}

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
    assert_eq!(text, "timed out after 1s");
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
    assert_eq!(text, "timed out after 300ms");
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
