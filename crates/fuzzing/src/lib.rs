//! The entry points of the fuzz targets in `fuzz/` (`cargo +nightly fuzz run NAME`), one
//! function per target, each taking the fuzzer's bytes. They live here, not in `fuzz/`, so
//! that the regression corpus (`fuzz/corpus/NAME/*`, every input that once crashed or is
//! worth keeping) runs as ordinary tests (`tests/corpus.rs`) on stable Rust in CI.
//!
//! Each entry must not panic, hang or allocate without bound on any input; where the code
//! under test has a property that can be checked, the entry checks it (the SSE parser gives
//! the same events however its input is cut), so a violation is a crash too.

use std::io::ErrorKind;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_tasks_engine::{Engine, Policy, SystemClock};
use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_testkit_server::{MemoryStore, TestServer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::runtime::Runtime;

/// How long the server may take to answer the closing `ping` of one input.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// The JSON-RPC decoder: any text.
pub fn jsonrpc(data: &[u8]) {
    let _ = mcp_tasks_protocol::jsonrpc::parse(&String::from_utf8_lossy(data));
}

/// The TOML config loader: any text.
pub fn config(data: &[u8]) {
    let _ = mcp_tasks_config::Config::parse(&String::from_utf8_lossy(data));
}

/// The client's SSE reader: the first byte says how many cut points follow (each a piece
/// length), the rest is the stream. The events must be the same whole and cut.
///
/// # Panics
/// When they differ: a bug of the incremental parser.
pub fn sse(data: &[u8]) {
    let Some((&count, rest)) = data.split_first() else { return };
    let (cuts, stream) = rest.split_at(usize::from(count % 16).min(rest.len()));
    let (whole, pieces) = mcp_tasks_client::fuzzing::sse(stream, cuts);
    assert_eq!(whole, pieces, "the SSE parser must not depend on how its input is cut");
}

/// The command line protocol: the JSON of a marker line.
pub fn line_protocol(data: &[u8]) {
    let _ = mcp_tasks_command::fuzzing::line_protocol(data);
}

/// A 2025-11-25 session: `initialize`, then the input's lines, then a `ping` that must be
/// answered (the server still serves).
pub fn legacy_session(data: &[u8]) {
    let init = json!({"jsonrpc": "2.0", "id": "fuzz-init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "fuzz", "version": "0"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ping = json!({"jsonrpc": "2.0", "id": "fuzz-end", "method": "ping"});
    session(&[init, initialized], data, &ping);
}

/// 2026-07-28 requests (no handshake): the input's lines, then a `ping` with this era's
/// `_meta`, which must be answered.
pub fn modern_requests(data: &[u8]) {
    let ping = json!({"jsonrpc": "2.0", "id": "fuzz-end", "method": "ping", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"}}}});
    session(&[], data, &ping);
}

/// One connection to the shared server over an in-memory stdio pipe: `before`, the input,
/// then `last`, whose answer is awaited (the lines the server writes are read meanwhile,
/// so it never blocks on a full pipe).
///
/// # Panics
/// If the server stops answering, or closes the connection before answering `last`.
fn session(before: &[Value], data: &[u8], last: &Value) {
    let (runtime, server) = shared();
    runtime.block_on(async {
        let (_serving, pipe) = TestServer::stdio(server.clone());
        let (mut to_server, from_server) = (pipe.to_server, pipe.from_server);
        let reading = tokio::spawn(async move {
            let mut lines = BufReader::new(from_server).lines();
            while let Some(line) = lines.next_line().await? {
                if serde_json::from_str::<Value>(&line).is_ok_and(|message| message["id"] == "fuzz-end") {
                    return Ok(true);
                }
            }
            Ok::<bool, std::io::Error>(false)
        });
        let mut input = Vec::new();
        for message in before {
            input.extend(serde_json::to_vec(message).unwrap_or_default());
            input.push(b'\n');
        }
        input.extend_from_slice(data);
        input.extend_from_slice(b"\n");
        input.extend(serde_json::to_vec(last).unwrap_or_default());
        input.push(b'\n');
        let written = to_server.write_all(&input).await;
        // The server may close the pipe on bad framing (an oversized line): that is an answer.
        if let Err(err) = &written {
            assert_eq!(err.kind(), ErrorKind::BrokenPipe, "writing to the server failed: {err}");
            return;
        }
        let answered = tokio::time::timeout(ANSWER_WITHIN, reading).await;
        let answered = answered.expect("the server stopped answering").expect("the reader task").expect("reading");
        assert!(answered, "the server closed the connection without answering the last request");
    });
}

/// One runtime and one server for every input (building them per input would make the
/// fuzzer slow): an in-memory store, an `echo` tool that may run as a task, and the
/// server's own methods.
fn shared() -> &'static (Runtime, Server) {
    static SHARED: OnceLock<(Runtime, Server)> = OnceLock::new();
    SHARED.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let server = runtime.block_on(async {
            let engine = Engine::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock), Policy::default());
            let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
            let echo = ToolDef::new("echo", "Echoes its text", schema, handler_fn(|arguments, _ctx| async move {
                let text = arguments["text"].as_str().unwrap_or_default().to_owned();
                mcp_tasks_engine::Outcome::Result(json!({"content": [{"type": "text", "text": text}]}))
            }))
            .task_mode(TaskMode::Optional);
            Server::builder(engine).name("fuzz").tool(echo).build().expect("server")
        });
        (runtime, server)
    })
}
