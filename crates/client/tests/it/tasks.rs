//! Connect, list, call plainly and as a task, answer an elicitation, cancel.

use std::sync::{Arc, Mutex};

use mcp_tasks_client::protocol::Content;
use mcp_tasks_client::{ClientError, Era, TaskMode, TaskStatus};
use serde_json::json;

use crate::harness::{Accept, bounded, start};

fn first_text(content: &[Content]) -> String {
    match content.first() {
        Some(Content::Text { text, .. }) => text.clone(),
        other => panic!("not a text content: {other:?}"),
    }
}

#[tokio::test]
async fn connects_and_lists_tools_with_their_task_support() {
    let server = start().await;
    let client = bounded(crate::harness::legacy_http(&server.url, None)).await.unwrap();
    let server = client.server();
    assert!(server.runs_tool_tasks && server.lists_tasks && server.cancels_tasks, "{server:?}");
    assert_eq!(server.era, Era::Legacy);
    let tools = bounded(client.list_tools()).await.unwrap();
    let support = |name: &str| tools.iter().find(|tool| tool.name == name).unwrap().task_mode;
    assert_eq!(support("echo"), TaskMode::Optional);
    assert_eq!(support("plain_echo"), TaskMode::Forbidden);
}

#[tokio::test]
async fn a_plain_call_returns_the_tool_result() {
    let server = start().await;
    let client = bounded(crate::harness::legacy_http(&server.url, None)).await.unwrap();
    let result = bounded(client.call_tool("plain_echo", json!({"text": "hi"}))).await.unwrap();
    assert_eq!(first_text(&result.content), "echo: hi");
    assert_ne!(result.is_error, Some(true));
}

#[tokio::test]
async fn a_task_call_is_driven_to_its_result() {
    let server = start().await;
    let client = bounded(crate::harness::legacy_http(&server.url, None)).await.unwrap();
    let task = bounded(client.call_tool_as_task("echo", json!({"text": "later"}), None)).await.unwrap();
    assert_eq!(task.last_seen().unwrap().status, TaskStatus::Working);
    let result = bounded(task.wait()).await.unwrap();
    assert_eq!(first_text(&result.content), "echo: later");
    assert_eq!(bounded(task.status()).await.unwrap().status, TaskStatus::Completed);
    let listed = bounded(client.list_tasks()).await.unwrap();
    assert!(listed.iter().any(|listed| listed.id == task.id()));
}

#[tokio::test]
async fn a_tool_that_forbids_tasks_is_refused_before_the_call() {
    let server = start().await;
    let client = bounded(crate::harness::legacy_http(&server.url, None)).await.unwrap();
    let refused = bounded(client.call_tool_as_task("plain_echo", json!({}), None)).await.unwrap_err();
    assert!(matches!(refused, ClientError::TasksUnsupported { .. }), "{refused}");
    let unknown = bounded(client.call_tool_as_task("nope", json!({}), None)).await.unwrap_err();
    assert!(matches!(unknown, ClientError::UnknownTool(_)), "{unknown}");
}

#[tokio::test]
async fn an_elicitation_inside_a_task_reaches_the_handler_and_its_answer_the_tool() {
    let server = start().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client = crate::harness::legacy().elicitation(Accept { seen: Arc::clone(&seen) });
    let client = bounded(client.connect_http(&server.url)).await.unwrap();
    let task = bounded(client.call_tool_as_task("ask", json!({}), None)).await.unwrap();
    let result = bounded(task.wait()).await.unwrap();
    assert_eq!(first_text(&result.content), r#"answer: "accept" {"ok":true}"#);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "elicitation/create");
    assert_eq!(seen[0].params["message"], "Go ahead?");
    assert_eq!(seen[0].related_task.as_deref(), Some(task.id()));
}

#[tokio::test]
async fn a_running_task_is_working_then_cancelled() {
    let server = start().await;
    let client = bounded(crate::harness::legacy_http(&server.url, None)).await.unwrap();
    let task = bounded(client.call_tool_as_task("block", json!({}), None)).await.unwrap();
    assert_eq!(bounded(task.status()).await.unwrap().status, TaskStatus::Working);
    let waiting = tokio::spawn({
        let task = task.clone();
        async move { task.wait().await }
    });
    let cancelled = bounded(task.cancel()).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    let outcome = bounded(waiting).await.unwrap().unwrap_err();
    assert!(matches!(outcome, ClientError::TaskCancelled { .. }), "{outcome}");
}

#[tokio::test]
async fn progress_notifications_carry_the_tasks_progress_token() {
    let server = start().await;
    let client = bounded(crate::harness::legacy_http(&server.url, None)).await.unwrap();
    let mut notifications = client.notifications();
    let task = bounded(client.call_tool_as_task("steps", json!({}), None)).await.unwrap();
    let token = task.progress_token().expect("a task this client created has a progress token").to_owned();
    let result = bounded(task.wait()).await.unwrap();
    assert_eq!(first_text(&result.content), "three steps");
    let mut seen = Vec::new();
    while let Ok(notification) = notifications.try_recv() {
        if notification.method == "notifications/progress" {
            assert_eq!(notification.progress_token().as_deref(), Some(token.as_str()), "{notification:?}");
            seen.push(notification.params["progress"].as_f64().unwrap());
        }
    }
    assert_eq!(seen, [1.0, 2.0, 3.0], "every step arrives, in order, before the result");
}
