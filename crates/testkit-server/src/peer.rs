//! [`TestPeer`]: a client peer of a [`Server`] over an in-memory stdio pipe
//! ([`TestServer::stdio`]). It writes JSON-RPC lines, reads every line back and keeps them
//! all, so that a test can check each against its era's official schema at the end.
//!
//! Eras: [`Era::Legacy`] opens a session with [`TestPeer::initialize`]; [`Era::Modern`] has
//! no session: every request it sends gets the per-request `_meta` (revision, the
//! capabilities set by [`TestPeer::declare`], client info) unless its params carry their own.
//!
//! Every method panics when the server breaks the exchange (a closed pipe, a line that is
//! not JSON, no message within [`RECV_WAIT`]): a test helper's failure is the test's.

use std::time::Duration;

use mcp_tasks_server::Server;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::time::timeout;

use mcp_tasks_testkit::era::Era;
use mcp_tasks_testkit::schema;
use crate::server::TestServer;

/// How long [`TestPeer::recv`] waits for the server's next message.
pub const RECV_WAIT: Duration = Duration::from_secs(10);

/// The client side of a stdio pipe to a [`Server`].
pub struct TestPeer {
    era: Era,
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    next_id: i64,
    /// [`Era::Modern`]: the client capabilities every request declares.
    capabilities: Value,
    /// Every message received, in order.
    pub seen: Vec<Value>,
    /// The server; kept so that it lives as long as the peer.
    _server: TestServer,
}

impl TestPeer {
    /// Serves `server` on a pipe and connects to it as a [`Era::Legacy`] client, without
    /// initializing.
    pub fn connect(server: Server) -> TestPeer {
        let (server, pipe) = TestServer::stdio(server);
        TestPeer {
            era: Era::Legacy,
            writer: pipe.to_server,
            lines: BufReader::new(pipe.from_server).lines(),
            next_id: 1,
            capabilities: json!({}),
            seen: Vec::new(),
            _server: server,
        }
    }

    /// Serves `server` on a pipe and connects to it as a client of `era`, without
    /// initializing (a [`Era::Modern`] client never does).
    pub fn connect_era(era: Era, server: Server) -> TestPeer {
        TestPeer { era, ..TestPeer::connect(server) }
    }

    /// [`Era::Modern`]: the client capabilities later requests declare in their `_meta`
    /// (e.g. `{"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}`).
    pub fn declare(&mut self, capabilities: Value) {
        self.capabilities = capabilities;
    }

    /// Connects as a [`Era::Legacy`] client and initializes with no client capabilities.
    pub async fn start(server: Server) -> TestPeer {
        let mut peer = TestPeer::connect(server);
        peer.initialize(json!({})).await;
        peer
    }

    /// The era this peer speaks.
    pub fn era(&self) -> Era {
        self.era
    }

    /// `initialize` with `capabilities`, then `notifications/initialized`; returns the
    /// `initialize` response.
    ///
    /// # Panics
    /// On a [`Era::Modern`] peer: that era has no `initialize`.
    pub async fn initialize(&mut self, capabilities: Value) -> Value {
        assert_eq!(self.era, Era::Legacy, "a 2026-07-28 client does not initialize");
        let client = json!({"name": "t", "version": "0"});
        let params = json!({
            "protocolVersion": self.era.revision(),
            "capabilities": capabilities,
            "clientInfo": client,
        });
        let (_, response) = self.request("initialize", params).await;
        self.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        response
    }

    /// Sends a request (with no `params` member when `params` is `null`, in
    /// [`Era::Legacy`]); returns its id. A [`Era::Modern`] peer adds the per-request `_meta`.
    pub async fn send_request(&mut self, method: &str, mut params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        if self.era == Era::Modern {
            if params.is_null() {
                params = json!({});
            }
            if params.get("_meta").is_none() {
                params["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": self.era.revision(),
                    "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
                });
            }
        }
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.write(&message).await;
        id
    }

    /// Sends a notification.
    pub async fn send_notification(&mut self, method: &str, params: Value) {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// Answers a request the server sent us.
    pub async fn send_result(&mut self, id: &Value, result: Value) {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// Writes one message as a line.
    async fn write(&mut self, message: &Value) {
        let line = message.to_string() + "\n";
        self.writer
            .write_all(line.as_bytes())
            .await
            .expect("the server reads its input");
    }

    /// The server's next message (kept in [`TestPeer::seen`]).
    pub async fn recv(&mut self) -> Value {
        let line = timeout(RECV_WAIT, self.lines.next_line())
            .await
            .expect("a message in time")
            .expect("the pipe reads")
            .expect("the server keeps its output open");
        let value: Value = serde_json::from_str(&line).expect("the server writes JSON lines");
        self.seen.push(value.clone());
        value
    }

    /// Sends a request; returns (messages received before the response, the response).
    pub async fn request(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
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
    pub async fn result(&mut self, method: &str, params: Value) -> Value {
        let (_, response) = self.request(method, params).await;
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// Sends a request; returns its `error`, panicking on a result.
    pub async fn error(&mut self, method: &str, params: Value) -> Value {
        let (_, response) = self.request(method, params).await;
        assert!(
            response.get("result").is_none(),
            "{method} should fail: {response}"
        );
        response["error"].clone()
    }

    /// Receives until `pred` holds; returns everything received, the match last.
    pub async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
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

    /// Checks every message received against the era's schema (`JSONRPCMessage`, and the
    /// message's own definition for progress, log and resource notifications and for the
    /// server's sampling and elicitation requests). Skipped without the schemas, except on
    /// CI.
    ///
    /// # Panics
    /// On the first message the schema rejects.
    pub fn validate(&self) {
        if !schema::era_schemas_available_or_skip(self.era) {
            return;
        }
        for message in &self.seen {
            if let Err(errors) = schema::validate(self.era, "JSONRPCMessage", message) {
                panic!("schema rejects {message}: {errors}");
            }
            let def = match message["method"].as_str() {
                Some("notifications/progress") => "ProgressNotification",
                Some("notifications/message") => "LoggingMessageNotification",
                Some("notifications/resources/updated") => "ResourceUpdatedNotification",
                Some("sampling/createMessage") => "CreateMessageRequest",
                Some("elicitation/create") => "ElicitRequest",
                Some("notifications/tools/list_changed") => "ToolListChangedNotification",
                Some("notifications/subscriptions/acknowledged") => "SubscriptionsAcknowledgedNotification",
                Some("notifications/tasks") => "TaskStatusNotification",
                Some("notifications/tasks/status") => "TaskStatusNotification",
                _ => continue,
            };
            if let Err(errors) = schema::validate(self.era, def, message) {
                panic!("schema rejects {message}: {errors}");
            }
        }
    }
}

/// Validates `value` against the 2025-11-25 schema's definition `def` (skipped without the
/// schemas, except on CI).
///
/// # Panics
/// When the schema rejects `value`.
pub fn assert_schema(def: &str, value: &Value) {
    assert_era_schema(Era::Legacy, def, value);
}

/// Validates `value` against `era`'s schema definition `def` (skipped without the schemas,
/// except on CI).
///
/// # Panics
/// When the schema rejects `value`.
pub fn assert_era_schema(era: Era, def: &str, value: &Value) {
    if schema::era_schemas_available_or_skip(era)
        && let Err(errors) = schema::validate(era, def, value)
    {
        panic!("{errors}\nin {value}");
    }
}
