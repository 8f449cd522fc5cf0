//! [`TestServer`] and [`TestPeer`] against a real [`Server`] on the memory store.

use std::sync::Arc;

use mcp_tasks_engine::{Engine, Policy, SystemClock};
use mcp_tasks_server::Server;
use mcp_tasks_testkit_server::{Era, MemoryStore, TestPeer, TestServer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server with no tools, over a fresh memory store.
fn server() -> Server {
    let engine = Engine::new(
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
        Policy::default(),
    );
    Server::builder(engine).build().expect("the server builds")
}

#[tokio::test]
async fn a_legacy_peer_opens_a_session_over_stdio_and_what_it_got_fits_the_schema() {
    let mut peer = TestPeer::start(server()).await;
    assert_eq!(peer.era(), Era::Legacy);
    let initialized = &peer.seen[0];
    assert_eq!(initialized["result"]["protocolVersion"], "2025-11-25");
    let tools = peer.result("tools/list", json!({})).await;
    assert_eq!(tools["tools"], json!([]));
    let unknown = peer.error("no/such/method", json!({})).await;
    assert_eq!(unknown["code"], -32601, "{unknown}");
    peer.validate();
}

#[tokio::test]
async fn a_modern_peer_sends_the_per_request_meta_and_never_initializes() {
    let mut peer = TestPeer::connect_era(Era::Modern, server());
    assert_eq!(peer.era(), Era::Modern);
    let discover = peer.result("server/discover", json!(null)).await;
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]), "{discover}");
    assert_eq!(discover["resultType"], "complete");
    peer.declare(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let unknown = peer.result("tools/list", json!({})).await;
    assert_eq!(unknown["tools"], json!([]));
    // A request that brings its own _meta keeps it: here one of another revision.
    let other = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}});
    assert_eq!(peer.error("tools/list", other).await["code"], -32022);
    peer.validate();
}

#[tokio::test]
async fn an_http_test_server_answers_on_a_free_port_until_it_is_shut_down() {
    let served = TestServer::http(server()).await.expect("a port binds");
    let addr = served.addr().expect("an HTTP address");
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    assert_eq!(served.url(), Some(format!("http://{addr}/mcp")));

    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut tcp = TcpStream::connect(addr).await.expect("the server accepts");
    tcp.write_all(request.as_bytes())
        .await
        .expect("the request is sent");
    let mut response = String::new();
    tcp.read_to_string(&mut response)
        .await
        .expect("the response is read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("\"protocolVersion\":\"2025-11-25\""),
        "{response}"
    );

    served.shutdown().await.expect("a clean shutdown");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "nothing listens on {addr} after the shutdown"
    );
}

#[tokio::test]
async fn a_stdio_test_server_ends_when_its_input_does() {
    let (served, pipe) = TestServer::stdio(server());
    assert_eq!((served.addr(), served.url()), (None, None));
    drop(pipe);
    served
        .shutdown()
        .await
        .expect("the server ends cleanly at the end of its input");
}
