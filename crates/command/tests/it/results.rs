//! Results: stdout as text, failures with their code, stderr and stdout, missing programs,
//! deaths by signal.

use super::*;

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
async fn a_nonzero_exit_is_an_error_with_the_code_the_stderr_and_the_stdout() {
    let script = "head -c 5000 /dev/zero | tr '\\0' x >&2; echo END >&2; echo partial; exit 3";
    let tool = tool(&["sh", "-c", script], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    let (stderr, stdout) = text
        .strip_prefix("command exited with code 3\n--- stderr ---\n")
        .unwrap_or_else(|| panic!("unexpected text: {text:.200}"))
        .split_once("\n--- stdout ---\n")
        .expect("a stdout section");
    assert_eq!(stderr, format!("{}END\n", "x".repeat(5000)));
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
