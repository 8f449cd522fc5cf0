//! 2026-07-28 custom headers from tool parameters (SEP-2243) against our real server, which
//! refuses a `tools/call` whose `x-mcp-header` arguments are not mirrored as `Mcp-Param-*`
//! (`-32020` HeaderMismatch): the client mirrors them (Base64 where needed), and drops from
//! `tools/list` a tool whose annotation breaks the rules.

use std::sync::Arc;

use mcp_tasks_client::{Client, Era};
use mcp_tasks_engine::{Context, Engine, Outcome, Policy, SystemClock};
use mcp_tasks_server::{Server, ToolDef, handler_fn};
use mcp_tasks_sqlite::SqliteStore;
use mcp_tasks_testkit_server::TestServer;
use serde_json::{Value, json};

use crate::harness::bounded;

/// `where` (a string `region` marked `Region`, an integer `priority` marked `Priority`, an
/// unmarked `query`) and `bad` (its annotation has a space: a client must drop it).
async fn served() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
    let echo = || {
        handler_fn(|args: Value, _ctx: Context| async move {
            Outcome::Result(json!({"content": [{"type": "text", "text": format!("{} {}", args["region"], args["priority"])}]}))
        })
    };
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "query": {"type": "string"}
    }});
    let bad_schema = json!({"type": "object", "properties": {"v": {"type": "string", "x-mcp-header": "My Region"}}});
    let server = Server::builder(engine)
        .tool(ToolDef::new("where", "Echoes its region and priority.", schema, echo()))
        .tool(ToolDef::new("bad", "An invalid x-mcp-header.", bad_schema, echo()))
        .build()
        .unwrap();
    (TestServer::http(server).await.unwrap(), dir)
}

#[tokio::test]
async fn modern_call_mirrors_x_mcp_header_arguments_so_the_server_accepts_it() {
    let (server, _dir) = served().await;
    let client = bounded(Client::builder().era(Era::Modern).connect_http(&server.url().unwrap())).await.unwrap();
    // Not listed first: the client lists the tools itself to learn the annotations.
    let arguments = json!({"region": "Zürich west", "priority": 7, "query": "q"});
    let result = bounded(client.call_tool("where", arguments)).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
    assert_eq!(text, "\"Zürich west\" 7");
}

#[tokio::test]
async fn modern_tools_list_drops_a_tool_with_an_invalid_x_mcp_header() {
    let (server, _dir) = served().await;
    let client = bounded(Client::builder().era(Era::Modern).connect_http(&server.url().unwrap())).await.unwrap();
    let names: Vec<String> = bounded(client.list_tools()).await.unwrap().into_iter().map(|tool| tool.name).collect();
    assert_eq!(names, ["where"]);
}

#[tokio::test]
async fn modern_a_tool_whose_annotations_changed_since_it_was_listed_is_listed_again_and_the_call_retried() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
    let echo = || {
        handler_fn(|args: Value, _ctx: Context| async move {
            Outcome::Result(json!({"content": [{"type": "text", "text": format!("region {}", args["region"])}]}))
        })
    };
    let unmarked = json!({"type": "object", "properties": {"region": {"type": "string"}}});
    let server = Server::builder(engine).tool(ToolDef::new("where", "Echoes its region.", unmarked, echo())).build().unwrap();
    let tools = server.clone();
    let served = TestServer::http(server).await.unwrap();
    let client = bounded(Client::builder().era(Era::Modern).connect_http(&served.url().unwrap())).await.unwrap();
    bounded(client.list_tools()).await.unwrap();
    // The server marks `region` for a header after the client listed the tool.
    let marked = json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
    tools.tools().insert(ToolDef::new("where", "Echoes its region.", marked, echo())).unwrap();
    let result = bounded(client.call_tool("where", json!({"region": "eu-west"}))).await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "region \"eu-west\"");
}
