//! A client peer over an in-memory stdio pipe: it writes JSON-RPC lines to a [`Server`]
//! served by `stdio::serve` on a tokio duplex, and reads every line back, keeping them all
//! for schema validation at the end of a test.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Engine, Policy, SystemClock};
use mcp_tasks_server::{Server, stdio};
use mcp_tasks_sqlite::SqliteStore;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::time::timeout;

/// An engine over a fresh SQLite file; keep the directory alive for the test's length.
pub(crate) fn sqlite_engine() -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
    (Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default()), dir)
}

pub(crate) struct Peer {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    next_id: i64,
    /// Every message received, in order.
    pub(crate) seen: Vec<Value>,
}

impl Peer {
    /// Serves `server` on a pipe and connects to it, without initializing.
    pub(crate) fn connect(server: Server) -> Peer {
        let (client_write, server_read) = tokio::io::duplex(1 << 16);
        let (server_write, client_read) = tokio::io::duplex(1 << 16);
        tokio::spawn(stdio::serve(BufReader::new(server_read), server_write, server));
        Peer { writer: client_write, lines: BufReader::new(client_read).lines(), next_id: 1, seen: Vec::new() }
    }

    /// Connects and initializes with no client capabilities.
    pub(crate) async fn start(server: Server) -> Peer {
        let mut peer = Peer::connect(server);
        peer.initialize(json!({})).await;
        peer
    }

    /// `initialize` with `capabilities`, then `notifications/initialized`; returns the
    /// `initialize` response.
    pub(crate) async fn initialize(&mut self, capabilities: Value) -> Value {
        let client = json!({"name": "t", "version": "0"});
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": client});
        let (_, response) = self.request("initialize", params).await;
        self.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        response
    }

    /// Sends a request (with no `params` member when `params` is `null`); returns its id.
    pub(crate) async fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.write(&message).await;
        id
    }

    /// Answers a request the server sent us.
    pub(crate) async fn send_result(&mut self, id: &Value, result: Value) {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
    }

    async fn write(&mut self, message: &Value) {
        let line = message.to_string() + "\n";
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    pub(crate) async fn recv(&mut self) -> Value {
        let line =
            timeout(Duration::from_secs(10), self.lines.next_line()).await.expect("message in time").unwrap().unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        self.seen.push(value.clone());
        value
    }

    /// Sends a request; returns (messages received before the response, the response).
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.send_request(method, params).await;
        let mut before = Vec::new();
        loop {
            let message = self.recv().await;
            if message["id"] == id && message.get("method").is_none() {
                return (before, message);
            }
            before.push(message);
        }
    }

    /// Sends a request; returns its `result`, panicking on an error response.
    pub(crate) async fn result(&mut self, method: &str, params: Value) -> Value {
        let (_, response) = self.request(method, params).await;
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// Sends a request; returns its `error`, panicking on a result.
    pub(crate) async fn error(&mut self, method: &str, params: Value) -> Value {
        let (_, response) = self.request(method, params).await;
        assert!(response.get("result").is_none(), "{method} should fail: {response}");
        response["error"].clone()
    }

    /// Receives until `pred` holds; returns everything received, the match last.
    pub(crate) async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut got = Vec::new();
        loop {
            let message = self.recv().await;
            let done = pred(&message);
            got.push(message);
            if done {
                return got;
            }
        }
    }

    /// Checks every message received against the 2025-11-25 schema (`JSONRPCMessage`, and
    /// the notification's own definition for progress and log messages).
    pub(crate) fn validate(&self) {
        if !mcp_tasks_testkit::schema::schemas_available_or_skip() {
            return;
        }
        for message in &self.seen {
            if let Err(errors) = mcp_tasks_testkit::schema::validate_legacy("JSONRPCMessage", message) {
                panic!("schema rejects {message}: {errors}");
            }
            let def = match message["method"].as_str() {
                Some("notifications/progress") => "ProgressNotification",
                Some("notifications/message") => "LoggingMessageNotification",
                Some("notifications/resources/updated") => "ResourceUpdatedNotification",
                Some("sampling/createMessage") => "CreateMessageRequest",
                Some("elicitation/create") => "ElicitRequest",
                _ => continue,
            };
            if let Err(errors) = mcp_tasks_testkit::schema::validate_legacy(def, message) {
                panic!("schema rejects {message}: {errors}");
            }
        }
    }
}

/// Validates `value` against schema definition `def` (skipped without the schemas).
pub(crate) fn assert_schema(def: &str, value: &Value) {
    if mcp_tasks_testkit::schema::schemas_available_or_skip()
        && let Err(errors) = mcp_tasks_testkit::schema::validate_legacy(def, value)
    {
        panic!("{errors}\nin {value}");
    }
}
