//! 2025-11-25 HTTP sessions on a store one process owns (SQLite): kept in the server's memory
//! alone, as before stored sessions existed. The replicas' side (sessions stored on
//! PostgreSQL, served by any replica) is tested against the real binary
//! (`crates/cli/tests/it/replicas.rs`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Engine, Policy, Principal, SystemClock, TaskStore};
use mcp_tasks_server::Server;
use mcp_tasks_server::http::ANONYMOUS_PRINCIPAL;
use mcp_tasks_sqlite::SqliteStore;
use mcp_tasks_testkit::TestServer;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const DEADLINE: Duration = Duration::from_secs(10);

/// POSTs `body` to `/mcp` (naming `session` if given); the status, the `Mcp-Session-Id` it
/// answered with, and the body.
async fn post(addr: SocketAddr, session: Option<&str>, body: &str) -> (u16, Option<String>, String) {
    let session = session.map(|id| format!("Mcp-Session-Id: {id}\r\n")).unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut answer)).await.expect("an answer in time").unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (headers, body) = answer.split_once("\r\n\r\n").expect("a complete HTTP response");
    let status = headers.split(' ').nth(1).and_then(|code| code.parse().ok()).expect("a status code");
    let id = headers
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, value)| value.trim().to_owned());
    (status, id, body.to_owned())
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
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (status, id, body) = post(addr, None, &initialize.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let id = id.expect("an Mcp-Session-Id");
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
