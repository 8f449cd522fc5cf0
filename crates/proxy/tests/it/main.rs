//! The proxy as a library, in process: an upstream `mcp-tasks` server (with tools defined in
//! code, over Streamable HTTP on 127.0.0.1) behind a [`Proxy`] whose downstream server is
//! reached with our client. Every wait is bounded and woken by the event it waits for.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_client::{Called, Client, Era};
use mcp_tasks_engine::{Engine, FakeClock, Outcome, Policy, Timestamp};
use mcp_tasks_proxy::{Proxy, ProxyOptions, ToolPolicy, UpstreamSpec};
use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_testkit_server::{MemoryStore, TestServer};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

fn engine() -> Engine {
    Engine::new(Arc::new(MemoryStore::new()), Arc::new(FakeClock::new(Timestamp(1_764_000_000_000))), Policy::default())
}

fn echo(name: &str) -> ToolDef {
    let reply = name.to_owned();
    ToolDef::new(
        name,
        "Says its name and the text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        handler_fn(move |arguments: Value, _ctx| {
            let reply = reply.clone();
            async move {
                let text = arguments["text"].as_str().unwrap_or_default().to_owned();
                Outcome::Result(json!({"content": [{"type": "text", "text": format!("{reply}: {text}")}]}))
            }
        }),
    )
}

fn text(result: &mcp_tasks_client::protocol::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned()
}

/// An upstream with the tool `first`, a proxy of it (with `options`), the proxy's server
/// over HTTP, and a client of it in `era`.
async fn proxied(options: ProxyOptions, era: Era) -> (Server, TestServer, Proxy, TestServer, Client) {
    let upstream = Server::builder(engine()).tool(echo("first")).build().unwrap();
    let upstream_http = TestServer::http(upstream.clone()).await.unwrap();
    let proxy = Proxy::new(UpstreamSpec::http(upstream_http.url().unwrap()), options);
    let downstream = Server::builder(engine()).catalog_upstream(proxy.catalog()).build().unwrap();
    let names = proxy.start(&downstream).await.unwrap();
    assert_eq!(names, ["first"]);
    let downstream_http = TestServer::http(downstream).await.unwrap();
    let client = Client::builder().era(era).connect_http(&downstream_http.url().unwrap()).await.unwrap();
    (upstream, upstream_http, proxy, downstream_http, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_upstream_adds_is_served_after_its_list_changed_and_one_it_removes_is_not() {
    let (upstream, _up, proxy, _down, client) = proxied(ProxyOptions::new(), Era::Legacy).await;
    let mut notes = client.notifications();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["first"]);
    assert_eq!(tools[0].task_mode, mcp_tasks_client::TaskMode::Optional, "every upstream tool may be a task");

    upstream.tools().insert(echo("later")).unwrap();
    // The upstream's list_changed reaches the proxy, which re-lists and changes its own set:
    // its clients get theirs.
    tokio::time::timeout(WAIT, async {
        loop {
            if notes.recv().await.unwrap().method == "notifications/tools/list_changed"
                && client.list_tools().await.unwrap().iter().any(|t| t.name == "later")
            {
                break;
            }
        }
    })
    .await
    .expect("the new tool is listed downstream");
    let called = client.call("later", json!({"text": "hi"})).await.unwrap();
    let Called::Task(task) = called else { panic!("a task: {called:?}") };
    assert_eq!(text(&task.wait().await.unwrap()), "later: hi");

    assert!(upstream.tools().remove("first"));
    tokio::time::timeout(WAIT, async {
        loop {
            if notes.recv().await.unwrap().method == "notifications/tools/list_changed"
                && client.list_tools().await.unwrap().iter().all(|t| t.name != "first")
            {
                break;
            }
        }
    })
    .await
    .expect("the removed tool is no longer listed downstream");
    let gone = client.call_tool("first", json!({"text": "x"})).await.unwrap_err();
    assert!(gone.to_string().contains("first"), "{gone}");
    proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_tool_policies_set_task_support_and_a_modern_client_is_served_whatever_the_upstream_speaks() {
    let mut options = ProxyOptions::new();
    let mut plain = ToolPolicy::default();
    plain.task_mode = TaskMode::Forbidden;
    options.tools.insert("first".into(), plain);
    options.era = Some(Era::Legacy);
    let (_upstream, _up, proxy, down, legacy) = proxied(options, Era::Legacy).await;
    assert_eq!(proxy.upstream_era(), Some(Era::Legacy), "pinned upstream");
    let tools = legacy.list_tools().await.unwrap();
    assert_eq!(tools[0].task_mode, mcp_tasks_client::TaskMode::Forbidden, "the policy's task support");
    assert!(matches!(legacy.call("first", json!({"text": "a"})).await.unwrap(), Called::Result(_)), "forbidden: plain");
    // The same proxy to a 2026-07-28 client.
    let modern = Client::builder().era(Era::Modern).connect_http(&down.url().unwrap()).await.unwrap();
    assert_eq!(modern.era(), Era::Modern);
    assert_eq!(text(&modern.call_tool("first", json!({"text": "b"})).await.unwrap()), "first: b");
    // Bad arguments are refused by the mirrored schema before the upstream is asked.
    let refused = modern.call_tool("first", json!({"text": 7})).await.unwrap_err();
    assert!(refused.to_string().contains("-32602"), "{refused}");
    proxy.shutdown().await;
}
