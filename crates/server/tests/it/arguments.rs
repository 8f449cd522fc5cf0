//! `tools/call` arguments are checked against the tool's `inputSchema` before anything
//! starts: a violation is `-32602` naming the field and the rule, and creates no task.

use serde_json::{Value, json};
use tokio::sync::mpsc;

use mcp_tasks_engine::Outcome;
use mcp_tasks_server::{BuildError, Server, TaskMode, ToolDef, handler_fn};

use mcp_tasks_testkit_server::TestPeer;

use crate::sqlite_engine;

fn run_tests_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"package": {"type": "string"}, "jobs": {"type": "integer", "minimum": 1}},
        "required": ["package"],
    })
}

/// A server with `run_tests`, which reports each call's arguments on the returned channel.
async fn start() -> (TestPeer, mpsc::UnboundedReceiver<Value>, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let (tx, calls) = mpsc::unbounded_channel();
    let tool = ToolDef::new(
        "run_tests",
        "Runs a package's tests.",
        run_tests_schema(),
        handler_fn(move |arguments: Value, _ctx| {
            let _ = tx.send(arguments);
            async { Outcome::Result(json!({"content": [{"type": "text", "text": "ok"}]})) }
        }),
    )
    .task_mode(TaskMode::Optional);
    let server = Server::builder(engine).tool(tool).build().unwrap();
    (TestPeer::start(server).await, calls, dir)
}

#[tokio::test]
async fn a_task_call_whose_arguments_break_the_schema_is_refused_with_32602_and_creates_no_task() {
    let (mut peer, mut calls, _dir) = start().await;
    let error = peer.error("tools/call", json!({"name": "run_tests", "arguments": {"package": 5}, "task": {}})).await;
    assert_eq!(error["code"], -32602);
    assert_eq!(error["message"], r#"Invalid arguments for tool run_tests: /package: 5 is not of type "string""#);
    assert_eq!(error["data"], json!([{"path": "/package", "message": r#"5 is not of type "string""#}]));
    assert_eq!(peer.result("tasks/list", json!({})).await["tasks"], json!([]), "no task was created");
    assert!(calls.try_recv().is_err(), "the tool never ran");
    peer.validate();
}

#[tokio::test]
async fn a_plain_call_without_a_required_argument_is_refused_before_the_tool_runs() {
    let (mut peer, mut calls, _dir) = start().await;
    let error = peer.error("tools/call", json!({"name": "run_tests"})).await;
    assert_eq!(error["code"], -32602);
    assert_eq!(error["message"], r#"Invalid arguments for tool run_tests: "package" is a required property"#);
    assert_eq!(error["data"][0]["path"], "", "the arguments object itself");
    assert!(calls.try_recv().is_err(), "the tool never ran");
}

#[tokio::test]
async fn every_violation_of_a_call_is_listed_in_the_error_data() {
    let (mut peer, _calls, _dir) = start().await;
    let error = peer.error("tools/call", json!({"name": "run_tests", "arguments": {"package": [], "jobs": 0}})).await;
    let paths: Vec<&str> = error["data"].as_array().unwrap().iter().map(|v| v["path"].as_str().unwrap()).collect();
    assert_eq!(paths.len(), 2, "{error}");
    assert!(paths.contains(&"/package") && paths.contains(&"/jobs"), "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("/jobs: 0 is less than the minimum of 1"), "{message}");
}

#[tokio::test]
async fn valid_arguments_reach_the_tool_as_a_task_and_as_a_plain_call() {
    let (mut peer, mut calls, _dir) = start().await;
    let arguments = json!({"package": "core", "jobs": 2});
    peer.result("tools/call", json!({"name": "run_tests", "arguments": arguments})).await;
    assert_eq!(calls.recv().await.unwrap(), arguments);
    let created = peer.result("tools/call", json!({"name": "run_tests", "arguments": arguments, "task": {}})).await;
    assert_eq!(created["task"]["status"], "working");
    assert_eq!(calls.recv().await.unwrap(), arguments);
}

#[tokio::test]
async fn a_tool_whose_input_schema_is_not_valid_json_schema_refuses_the_build() {
    let (engine, _dir) = sqlite_engine();
    let noop = handler_fn(|_: Value, _| async { Outcome::Result(json!({"content": []})) });
    let bad = ToolDef::new("bad", "Its schema has a typo.", json!({"type": "object", "properties": {"n": {"type": "integr"}}}), noop);
    let err = Server::builder(engine).tool(bad).build().err().expect("the build is refused");
    assert!(matches!(&err, BuildError::InvalidInputSchema { tool, .. } if tool == "bad"), "{err:?}");
    assert!(err.to_string().starts_with("tool bad: its inputSchema is not a valid JSON Schema: "), "{err}");
}

#[tokio::test]
async fn a_tool_whose_input_schema_is_not_an_object_schema_refuses_the_build() {
    let (engine, _dir) = sqlite_engine();
    let noop = handler_fn(|_: Value, _| async { Outcome::Result(json!({"content": []})) });
    let bad = ToolDef::new("scalar", "Takes a bare string.", json!({"type": "string"}), noop);
    let err = Server::builder(engine).tool(bad).build().err().expect("the build is refused");
    assert_eq!(err, BuildError::InputSchemaNotObject { tool: "scalar".into() });
}
