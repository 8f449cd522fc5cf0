//! A handler that panics never leaves the client without an answer: a tool's handler (plain
//! call or task), a prompt's or a resource's handler each panic here, and the request gets a
//! `-32603` error over stdio and over Streamable HTTP, after which the server goes on serving.

use std::net::SocketAddr;
use std::time::Duration;

use mcp_tasks_engine::Outcome;
use mcp_tasks_http as http;
use mcp_tasks_server::{GetPromptResult, PromptDef, ResourceDef, Server, TaskMode, ToolDef, handler_fn};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use mcp_tasks_testkit_server::TestPeer;

use crate::sqlite_engine;

/// A tool, a prompt and a resource whose handlers panic.
fn panicking_server(engine: mcp_tasks_engine::Engine) -> Server {
    let tool = ToolDef::new(
        "boom",
        "Panics.",
        json!({"type": "object"}),
        handler_fn(|_arguments, _ctx| async move {
            if true {
                panic!("the boom tool panics on purpose");
            }
            Outcome::Result(json!({"content": []}))
        }),
    )
    .task_mode(TaskMode::Optional);
    let prompt = PromptDef::new("boom", |_request| async move {
        if true {
            panic!("the boom prompt panics on purpose");
        }
        Ok(GetPromptResult::new(Vec::new()))
    });
    let resource = ResourceDef::new("mem://boom", "boom", |_request| async move {
        if true {
            panic!("the boom resource panics on purpose");
        }
        Ok(Vec::new())
    });
    Server::builder(engine).tool(tool).prompt(prompt).resource(resource).build().unwrap()
}

/// The requests whose handler panics, and what their error message says.
fn panicking_requests() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("tools/call", json!({"name": "boom", "arguments": {}}), "the tool's handler crashed"),
        ("prompts/get", json!({"name": "boom"}), "Internal error"),
        ("resources/read", json!({"uri": "mem://boom"}), "Internal error"),
    ]
}

fn assert_internal_error(method: &str, error: &Value, says: &str) {
    assert_eq!(error["code"], -32603, "{method}: {error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(says), "{method}: {message:?} should say {says:?}");
}

#[tokio::test]
async fn over_stdio_a_handler_that_panics_is_answered_with_32603_and_the_server_goes_on() {
    let (engine, _dir) = sqlite_engine();
    let mut peer = TestPeer::start(panicking_server(engine)).await;
    for (method, params, says) in panicking_requests() {
        let error = peer.error(method, params).await;
        assert_internal_error(method, &error, says);
        assert_eq!(peer.result("ping", json!({})).await, json!({}));
    }
    // A task whose handler panics fails with the same message.
    let created = peer.result("tools/call", json!({"name": "boom", "arguments": {}, "task": {}})).await;
    let id = created["task"]["taskId"].clone();
    let error = peer.error("tasks/result", json!({"taskId": id})).await;
    assert_internal_error("tasks/result", &error, "the tool's handler crashed");
    peer.validate();
}

#[tokio::test]
async fn over_http_a_handler_that_panics_is_answered_with_32603_and_the_server_goes_on() {
    let (engine, _dir) = sqlite_engine();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = panicking_server(engine);
    tokio::spawn(http::serve(listener, server, http::Options::default(), std::future::pending()));
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let (status, headers, _) = post(addr, None, &request(0, "initialize", &init)).await;
    assert_eq!(status, 200);
    let session = header(&headers, "mcp-session-id").expect("a session id");
    for (n, (method, params, says)) in panicking_requests().into_iter().enumerate() {
        let (status, _, body) = post(addr, Some(&session), &request(n + 1, method, &params)).await;
        assert_eq!(status, 200, "{method}: {body}");
        let reply: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(reply["id"], n + 1, "{reply}");
        assert_internal_error(method, &reply["error"], says);
    }
    let (status, _, body) = post(addr, Some(&session), &request(99, "ping", &json!({}))).await;
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()["result"].clone()), (200, json!({})));
}

fn request(id: usize, method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn header(headers: &str, name: &str) -> Option<String> {
    headers.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
    })
}

/// One HTTP/1.1 POST to `/mcp` asking for a JSON answer, on its own connection; returns the
/// status, the header block and the body. Fails the test if no full answer comes in time.
async fn post(addr: SocketAddr, session: Option<&str>, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let session = session.map(|id| format!("Mcp-Session-Id: {id}\r\n")).unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n{session}\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("an answer in time")
        .unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (headers, body) = answer.split_once("\r\n\r\n").expect("a complete HTTP response");
    let status = headers.split(' ').nth(1).and_then(|code| code.parse().ok()).expect("a status code");
    (status, headers.to_owned(), body.to_owned())
}
