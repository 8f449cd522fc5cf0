//! A `tasks/result` stream that breaks: resumed with `Last-Event-ID`, or, when resumption
//! is refused, the task is polled with `tasks/get` and its result fetched again. The tool
//! runs once either way.

use std::sync::atomic::Ordering;


use mcp_tasks_client::protocol::Content;
use serde_json::json;

use crate::harness::{bounded, proxy, start};

async fn drive_through_a_cut(refuse_resume: bool) -> usize {
    let server = start().await;
    let mut proxy = proxy(&server, refuse_resume).await;
    let client = bounded(crate::harness::legacy_http(&proxy.url, None)).await.unwrap();
    let task = bounded(client.call_tool_as_task("gated", json!({}), None)).await.unwrap();
    let waiting = tokio::spawn({
        let task = task.clone();
        async move { task.wait().await }
    });
    bounded(proxy.cut.recv()).await.unwrap();
    server.gate.notify_one();
    let result = bounded(waiting).await.unwrap().unwrap();
    assert!(matches!(result.content.first(), Some(Content::Text { text, .. }) if text == "through"));
    assert_eq!(server.gated_runs.load(Ordering::SeqCst), 1);
    proxy.resumptions()
}

#[tokio::test]
async fn a_broken_result_stream_is_resumed_with_last_event_id() {
    assert!(drive_through_a_cut(false).await >= 1);
}

#[tokio::test]
async fn a_result_stream_that_cannot_be_resumed_falls_back_to_polling() {
    assert_eq!(drive_through_a_cut(true).await, 1);
}
