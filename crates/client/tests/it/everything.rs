//! Against a peer written by others: `@modelcontextprotocol/server-everything` (2026.8.31,
//! TypeScript SDK 1.32.2) over stdio, whose `trigger-elicitation-request-async` and
//! `trigger-sampling-request-async` make this client the task receiver: the server sends the
//! request with `params.task`, polls the client's `tasks/get` every second, then reads
//! `tasks/result`. Skipped (with a message) when `interop/install.sh` has not been run.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_tasks_client::protocol::Content;
use mcp_tasks_client::{Client, ElicitationHandler, RpcError, SamplingHandler, ServerRequest};
use serde_json::{Value, json};

use crate::harness::bounded;

/// node 22 and server-everything's entry point, when installed under `interop/.peers`.
fn everything() -> Option<(PathBuf, PathBuf)> {
    let modules = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/.peers/npm-main/node_modules");
    let node = modules.join("node/bin/node");
    let server = modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    (node.is_file() && server.is_file()).then_some((node, server))
}

#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<ServerRequest>>>,
}

#[async_trait]
impl ElicitationHandler for Recorder {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, RpcError> {
        self.seen.lock().unwrap().push(request);
        Ok(json!({"action": "accept", "content": {"name": "Ada", "favoriteColor": "Blue", "agreeToTerms": true}}))
    }
}

#[async_trait]
impl SamplingHandler for Recorder {
    async fn create_message(&self, request: ServerRequest) -> Result<Value, RpcError> {
        self.seen.lock().unwrap().push(request);
        Ok(json!({"role": "assistant", "content": {"type": "text", "text": "a sampled reply"}, "model": "recorder-1"}))
    }
}

fn texts(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(|content| match content {
            Content::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn everything_server_runs_elicitation_and_sampling_as_tasks_hosted_by_this_client() {
    let Some((node, server)) = everything() else {
        eprintln!("skipped: server-everything is not installed under interop/.peers (run bash interop/install.sh)");
        return;
    };
    let recorder = Recorder::default();
    let client = bounded(
        Client::builder()
            .elicitation(recorder.clone())
            .sampling(recorder.clone())
            .connect_process(&node.display().to_string(), &[server.display().to_string(), "stdio".into()]),
    )
    .await
    .unwrap();
    // The async tools are registered once the server has our capabilities.
    let tools = bounded(client.list_tools()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert!(names.contains(&"trigger-elicitation-request-async"), "{names:?}");
    assert!(names.contains(&"trigger-sampling-request-async"), "{names:?}");

    let elicited = bounded(client.call_tool("trigger-elicitation-request-async", json!({}))).await.unwrap();
    let text = texts(&elicited.content);
    assert!(text.contains("[COMPLETED]"), "{text}");
    assert!(text.contains("- Name: Ada") && text.contains("- Favorite Color: Blue"), "{text}");
    assert!(!text.contains("[SYNC]"), "answered as a task, not synchronously: {text}");

    let sampled =
        bounded(client.call_tool("trigger-sampling-request-async", json!({"prompt": "hello", "maxTokens": 20}))).await.unwrap();
    let text = texts(&sampled.content);
    assert!(text.contains("[COMPLETED] Async sampling completed!"), "{text}");
    assert!(text.contains("a sampled reply") && text.contains("recorder-1"), "{text}");
    assert!(text.contains("io.modelcontextprotocol/related-task"), "the related-task _meta reached the server: {text}");

    let seen = recorder.seen.lock().unwrap();
    let methods: Vec<&str> = seen.iter().map(|request| request.method.as_str()).collect();
    assert_eq!(methods, ["elicitation/create", "sampling/createMessage"]);
    assert!(seen.iter().all(|request| request.params.get("task").is_some()), "both came with params.task");
}
