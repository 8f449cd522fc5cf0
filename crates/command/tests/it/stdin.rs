//! `stdin = { arg = "…" }`: one argument written to stdin, which is then closed.

use super::*;

// ---- stdin ----

const STDIN_TOOL: &str = r#"
[[tools]]
name = "cat"
command = ["sh", "-c", "cat; echo '|end'"]
stdin = { arg = "text" }
input_schema = { type = "object", properties = { text = { type = "string" }, n = { type = "integer" } } }
"#;

#[tokio::test]
async fn a_stdin_argument_is_written_verbatim_then_stdin_is_closed() {
    let tool = configured(STDIN_TOOL);
    let text = "line one\n$(id); rm -rf / `id`\n\ttabbed, no newline at the end";
    let (is_error, output) = call(&tool, json!({"text": text}), CancellationToken::new()).await;
    assert!(!is_error, "{output}");
    assert_eq!(output, format!("{text}|end\n"));
}

#[tokio::test]
async fn an_absent_stdin_argument_is_an_empty_closed_stdin() {
    let tool = configured(STDIN_TOOL);
    let (is_error, output) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(!is_error, "{output}");
    assert_eq!(output, "|end\n");
}

#[tokio::test]
async fn a_non_string_stdin_argument_is_written_as_json() {
    let tool = configured(&STDIN_TOOL.replace("arg = \"text\"", "arg = \"n\""));
    let (is_error, output) = call(&tool, json!({"n": 42}), CancellationToken::new()).await;
    assert!(!is_error, "{output}");
    assert_eq!(output, "42|end\n");
}

#[tokio::test]
async fn a_stdin_argument_larger_than_a_pipe_is_written_whole() {
    let tool = configured(&STDIN_TOOL.replace("cat; echo '|end'", "wc -c"));
    let big = "x".repeat(1 << 20);
    let (is_error, output) = call(&tool, json!({"text": big}), CancellationToken::new()).await;
    assert!(!is_error, "{output}");
    assert_eq!(output.trim(), "1048576");
}

#[tokio::test]
async fn a_tool_whose_stdin_is_an_argument_asks_no_question() {
    let tool = configured(
        r#"
[[tools]]
name = "ask"
command = ["sh", "-c", """
read -r first
echo '@mcp-tasks {{"elicit": {{"message": "sure?"}}}}'
if read -r answer; then echo "answer: $answer"; else echo "no answer after $first"; fi
"""]
stdin = { arg = "text" }
input_schema = { type = "object", properties = { text = { type = "string" } } }
"#,
    );
    let link = TestLink::accepting(json!({"action": "accept"}));
    let client: Arc<dyn ClientLink> = link.clone();
    let (is_error, output) = call_linked(
        &tool,
        json!({"text": "input\n"}),
        CancellationToken::new(),
        Some(client),
    )
    .await;
    assert!(!is_error, "{output}");
    assert_eq!(output, "no answer after input\n");
    assert!(link.requests().is_empty(), "{:?}", link.requests());
}
