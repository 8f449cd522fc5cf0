//! 2025-11-25 HTTP sessions without a session store (`http::Options::sessions` is `None`, as
//! on SQLite): kept in the server's memory alone, as before stored sessions existed. The replicas' side (sessions stored on
//! PostgreSQL, served by any replica) is tested against the real binary
//! (`crates/cli/tests/it/replicas.rs`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Engine, Policy, Principal, SessionStore, SystemClock, TaskStore};
use mcp_tasks_server::Server;
use mcp_tasks_http::ANONYMOUS_PRINCIPAL;
use mcp_tasks_sqlite::SqliteStore;
use mcp_tasks_testkit_server::TestServer;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const DEADLINE: Duration = Duration::from_secs(10);

/// POSTs `body` to `/mcp` (naming `session` if given); the status, the `Mcp-Session-Id` it
/// answered with, and the body.
async fn post(addr: SocketAddr, session: Option<&str>, body: &str) -> (u16, Option<String>, String) {
    let (headers, mut answer, mut stream) = post_head(addr, session, body).await;
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut answer)).await.expect("an answer in time").unwrap();
    let body = String::from_utf8(answer).unwrap();
    let status = headers.split(' ').nth(1).and_then(|code| code.parse().ok()).expect("a status code");
    let id = headers
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, value)| value.trim().to_owned());
    (status, id, body)
}

/// POSTs `body` to `/mcp` (naming `session` if given) and returns the raw response head once
/// it has arrived, what came after it so far, and the connection to read the rest from.
async fn post_head(addr: SocketAddr, session: Option<&str>, body: &str) -> (String, Vec<u8>, TcpStream) {
    let session = session.map(|id| format!("Mcp-Session-Id: {id}\r\n")).unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        let n = tokio::time::timeout(DEADLINE, stream.read(&mut chunk)).await.expect("a response head in time").unwrap();
        assert_ne!(n, 0, "the connection closed before a complete HTTP response head");
        received.extend_from_slice(&chunk[..n]);
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(received[..end].to_vec()).unwrap();
            return (head, received[end + 4..].to_vec(), stream);
        }
    }
}

/// Initializes a 2025-11-25 session and returns its id.
async fn initialize(addr: SocketAddr) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (status, id, body) = post(addr, None, &initialize.to_string()).await;
    assert_eq!(status, 200, "{body}");
    id.expect("an Mcp-Session-Id")
}

/// On SQLite a session is served from memory and never written to the store: the store's
/// session records stay empty after `initialize` and the requests of the session (the hot
/// path is as fast as before stored sessions), and an unknown id is still 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_on_a_store_one_process_owns_lives_in_memory_and_never_touches_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap());
    let engine = Engine::new(Arc::clone(&store) as Arc<dyn TaskStore>, Arc::new(SystemClock), Policy::default());
    let http = TestServer::http(Server::builder(engine).build().unwrap()).await.unwrap();
    let addr = http.addr().unwrap();
    let id = initialize(addr).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    for _ in 0..3 {
        let (status, _, body) = post(addr, Some(&id), &list).await;
        assert_eq!(status, 200, "{body}");
    }
    let anonymous = Principal::new(ANONYMOUS_PRINCIPAL);
    assert_eq!(store.session(&id, &anonymous).await.expect("read"), None, "never stored");
    let (status, _, body) = post(addr, Some("0123456789abcdef0123456789abcdef"), &list).await;
    assert_eq!(status, 404, "{body}");
}

/// A streamed POST whose reply comes a little after the request (here a tool that sleeps
/// 1 ms, past the handler's first polls) is still answered as one complete SSE body (a
/// `Content-Length`, no chunks): the priming event and the reply leave with the headers. One
/// whose reply takes longer (a tool that waits until the test has seen the headers) streams:
/// its headers and priming event arrive while the tool still runs, its reply after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_comes_soon_leaves_with_its_headers_and_a_slow_one_streams() {
    let (engine, _dir) = crate::sqlite_engine();
    let release = Arc::new(tokio::sync::Notify::new());
    let waiting = Arc::clone(&release);
    let soon = mcp_tasks_server::ToolDef::new(
        "soon",
        "Answers after 1 ms.",
        json!({"type": "object"}),
        mcp_tasks_server::handler_fn(|_arguments, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            mcp_tasks_engine::Outcome::Result(json!({"content": [{"type": "text", "text": "soon"}]}))
        }),
    );
    let slow = mcp_tasks_server::ToolDef::new(
        "slow",
        "Answers once the test lets it.",
        json!({"type": "object"}),
        mcp_tasks_server::handler_fn(move |_arguments, _ctx| {
            let waiting = Arc::clone(&waiting);
            async move {
                waiting.notified().await;
                mcp_tasks_engine::Outcome::Result(json!({"content": [{"type": "text", "text": "slow"}]}))
            }
        }),
    );
    let http = TestServer::http(Server::builder(engine).tool(soon).tool(slow).build().unwrap()).await.unwrap();
    let addr = http.addr().unwrap();
    let session = initialize(addr).await;

    let call = |id: u64, name: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}}).to_string();
    let (head, mut body, mut stream) = post_head(addr, Some(&session), &call(2, "soon")).await;
    let lower = head.to_ascii_lowercase();
    assert!(lower.starts_with("http/1.1 200") && lower.contains("text/event-stream"), "{head}");
    assert!(lower.contains("content-length:") && !lower.contains("transfer-encoding"), "one complete body: {head}");
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut body)).await.expect("the body in time").unwrap();
    let body = String::from_utf8(body).unwrap();
    assert!(body.starts_with("id: ") && body.contains("retry: ") && body.contains("\"soon\""), "priming event, then the reply: {body}");

    let (head, body, mut stream) = post_head(addr, Some(&session), &call(3, "slow")).await;
    let lower = head.to_ascii_lowercase();
    assert!(lower.starts_with("http/1.1 200") && lower.contains("transfer-encoding: chunked"), "a stream: {head}");
    assert!(!String::from_utf8_lossy(&body).contains("\"slow\""), "no reply before the tool ends");
    release.notify_one();
    let mut rest = body;
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut rest)).await.expect("the rest in time").unwrap();
    assert!(String::from_utf8_lossy(&rest).contains("\"slow\""), "the reply, streamed after the headers");
}

/// A `tools/call` with `params.task` is answered as plain JSON even when the client accepts
/// SSE: its one message is the `CreateTaskResult`, and nothing goes on its stream before it
/// (the transport lets the server pick either; the client MUST take both). The same call
/// with `"task": null` is a plain call, and it and `tasks/result` still stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_is_answered_as_json_and_a_plain_call_and_tasks_result_still_stream() {
    let (engine, _dir) = crate::sqlite_engine();
    let echo = mcp_tasks_server::ToolDef::new(
        "echo",
        "Answers at once.",
        json!({"type": "object"}),
        mcp_tasks_server::handler_fn(|_arguments, _ctx| async move {
            mcp_tasks_engine::Outcome::Result(json!({"content": [{"type": "text", "text": "echoed"}]}))
        }),
    )
    .task_mode(mcp_tasks_server::TaskMode::Optional);
    let http = TestServer::http(Server::builder(engine).tool(echo).build().unwrap()).await.unwrap();
    let addr = http.addr().unwrap();
    let session = initialize(addr).await;
    let content_type = |head: &str| {
        head.lines()
            .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("content-type")))
            .map(|(_, value)| value.trim().to_owned())
            .unwrap_or_default()
    };

    let task_call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}, "task": {}}});
    let (head, mut body, mut stream) = post_head(addr, Some(&session), &task_call.to_string()).await;
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut body)).await.expect("the body in time").unwrap();
    assert_eq!(content_type(&head), "application/json", "{head}");
    let created: serde_json::Value = serde_json::from_slice(&body).expect("one JSON object");
    assert_eq!(created["id"], 2);
    let task_id = created["result"]["task"]["taskId"].as_str().expect("a CreateTaskResult").to_owned();

    let result = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": task_id}});
    let (head, mut body, mut stream) = post_head(addr, Some(&session), &result.to_string()).await;
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut body)).await.expect("the body in time").unwrap();
    assert!(content_type(&head).starts_with("text/event-stream"), "{head}");
    assert!(String::from_utf8_lossy(&body).contains("echoed"), "the task's result");

    let plain = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "echo", "arguments": {}, "task": null}});
    let (head, mut body, mut stream) = post_head(addr, Some(&session), &plain.to_string()).await;
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut body)).await.expect("the body in time").unwrap();
    assert!(content_type(&head).starts_with("text/event-stream"), "{head}");
    let body = String::from_utf8(body).unwrap();
    assert!(body.contains("echoed") && !body.contains("taskId"), "a plain call's result: {body}");
}
