//! Trace context: the W3C `traceparent` of a `tools/call` (its `_meta`, in either era, or the
//! HTTP `traceparent` header) is kept with the task and handed to its command as
//! `TRACEPARENT` (same trace id and flags, a new span id) and `TRACESTATE`, also when the
//! task runs again after a restart; a malformed one is ignored, never an error.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Server, Workdir};
use crate::http::{Client, HttpServer};
use crate::http_peer;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

const CONFIG: &str = r#"
[server]
name = "trace-test"
inline_wait = "20s"

[[tools]]
name = "trace_env"
description = "Prints TRACEPARENT and TRACESTATE."
command = ["sh", "-c", "printf '%s|%s' \"${{TRACEPARENT-unset}}\" \"${{TRACESTATE-unset}}\""]

[[tools]]
name = "trace_retry"
on_restart = "retry"
description = "First run: leaves a marker and hangs. Later runs: print TRACEPARENT."
command = ["sh", "-c", "if [ -e \"$1\" ]; then printf '%s' \"${{TRACEPARENT-unset}}\"; else touch \"$1\"; sleep 60; fi", "_", "{marker}"]
[tools.input_schema]
type = "object"
properties = { marker = { type = "string" } }
"#;

fn workdir() -> Workdir {
    let work = Workdir::new();
    std::fs::write(work.config(), CONFIG).expect("write config");
    work
}

/// Splits the `trace_env` output `TRACEPARENT|TRACESTATE`.
fn printed(result: &Value) -> (String, String) {
    let text = result["content"][0]["text"].as_str().expect("text content").to_owned();
    let (parent, state) = text.split_once('|').expect("two fields");
    (parent.to_owned(), state.to_owned())
}

/// Checks that `seen` continues the test's trace: its trace id and flags, a new span id.
fn assert_child(seen: &str) {
    let parts: Vec<&str> = seen.split('-').collect();
    assert_eq!(parts.len(), 4, "{seen}");
    assert_eq!((parts[0], parts[1], parts[3]), ("00", TRACE_ID, "01"), "{seen}");
    assert!(parts[2].len() == 16 && parts[2] != PARENT_ID && parts[2] != "0000000000000000", "a new span id: {seen}");
}

#[test]
fn traces_a_legacy_task_over_stdio_passes_the_meta_traceparent_to_its_command() {
    let work = workdir();
    let mut server = work.start();
    server.initialize();
    let meta = json!({"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7"});
    let created = server.call("tools/call", json!({"name": "trace_env", "arguments": {}, "task": {}, "_meta": meta}));
    let id = created["task"]["taskId"].as_str().expect("taskId").to_owned();
    let (parent, state) = printed(&server.call("tasks/result", json!({"taskId": id})));
    assert_child(&parent);
    assert_eq!(state, "rojo=00f067aa0ba902b7");
    // Without trace context the command gets none.
    let created = server.call("tools/call", json!({"name": "trace_env", "arguments": {}, "task": {}}));
    let id = created["task"]["taskId"].as_str().expect("taskId").to_owned();
    assert_eq!(printed(&server.call("tasks/result", json!({"taskId": id}))), ("unset".to_owned(), "unset".to_owned()));
}

#[test]
fn traces_a_malformed_traceparent_is_ignored_and_the_task_runs() {
    let work = workdir();
    let mut server = work.start();
    server.initialize();
    for bad in [json!("00-zz-nope-01"), json!(42), json!("00-00000000000000000000000000000000-00f067aa0ba902b7-01")] {
        let meta = json!({"traceparent": bad, "tracestate": "k=v"});
        let created = server.call("tools/call", json!({"name": "trace_env", "arguments": {}, "task": {}, "_meta": meta}));
        let id = created["task"]["taskId"].as_str().expect("a task, not an error").to_owned();
        let result = server.call("tasks/result", json!({"taskId": id}));
        assert_eq!(printed(&result), ("unset".to_owned(), "unset".to_owned()), "{bad}");
    }
}

#[test]
fn traces_the_http_traceparent_header_reaches_the_command_in_both_eras() {
    let work = workdir();
    let server = HttpServer::start(&work);
    // 2025-11-25, a session: the header of the tools/call POST.
    let mut client = Client::new(&server, None);
    client.initialize();
    let body = client.message("tools/call", json!({"name": "trace_env", "arguments": {}, "task": {}}));
    let reply = client.post_with(&body, &[("traceparent", TRACEPARENT), ("tracestate", "congo=t61rcWkgMzE")]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let created = sse_or_json(&reply);
    let id = created["result"]["task"]["taskId"].as_str().expect("taskId").to_owned();
    let (parent, state) = printed(&client.result("tasks/result", json!({"taskId": id})));
    assert_child(&parent);
    assert_eq!(state, "congo=t61rcWkgMzE");

    // 2026-07-28: the header, and `_meta`'s own traceparent, which wins over it.
    let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for (meta_trace, expected_trace) in [(None, TRACE_ID), (Some(other), "0af7651916cd43dd8448eb211c80319c")] {
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        });
        if let Some(trace) = meta_trace {
            meta["traceparent"] = json!(trace);
        }
        let params = json!({"name": "trace_env", "arguments": {}, "_meta": meta});
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "trace_env"),
            ("traceparent", TRACEPARENT),
        ];
        let reply = http_peer::request(server.addr, "POST", &headers, Some(&body));
        assert_eq!(reply.status, 200, "{}", reply.body);
        let result = sse_or_json(&reply)["result"].clone();
        assert_eq!(result["resultType"], "complete", "done within the inline wait: {result}");
        let (parent, _) = printed(&result);
        assert_eq!(parent.split('-').nth(1), Some(expected_trace), "{parent}");
    }
}

/// The JSON-RPC response of a reply (a JSON body, or the last message of an SSE body).
fn sse_or_json(reply: &http_peer::Reply) -> Value {
    if reply.header("content-type").is_some_and(|kind| kind.starts_with("text/event-stream")) {
        let data = reply.body.lines().rev().find_map(|line| line.strip_prefix("data: ")).expect("an event");
        serde_json::from_str(data).expect("JSON")
    } else {
        reply.json()
    }
}

#[test]
fn traces_a_task_retried_after_a_restart_gets_the_stored_traceparent() {
    let work = workdir();
    let marker = work.path("first-run-marker");
    let mut server = Server::start(&work.config(), &work.store());
    server.initialize();
    let params = json!({
        "name": "trace_retry",
        "arguments": {"marker": marker.to_str().expect("utf-8 path")},
        "task": {"ttl": 60000},
        "_meta": {"traceparent": TRACEPARENT},
    });
    let id = server.call("tools/call", params)["task"]["taskId"].as_str().expect("taskId").to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the first run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill();

    let mut again = Server::start(&work.config(), &work.store());
    again.initialize();
    let result = again.call("tasks/result", json!({"taskId": id}));
    let seen = result["content"][0]["text"].as_str().expect("text").to_owned();
    assert_child(&seen);
}
