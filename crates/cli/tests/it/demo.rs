//! The demo config of the README, over stdio with the real binary: every tool does what the
//! README says.

use std::path::PathBuf;

use serde_json::json;

use crate::harness::{Server, create_task};

fn demo() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let config = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.toml"));
    let server = Server::start(&config, &dir.path().join("tasks.sqlite3"));
    (dir, server)
}

#[test]
fn demo_countdown_reports_progress_with_the_callers_token_then_lifts_off() {
    let (_dir, mut server) = demo();
    server.initialize();
    let created = server.call(
        "tools/call",
        json!({"name": "countdown", "arguments": {"seconds": 2}, "task": {}, "_meta": {"progressToken": "count"}}),
    );
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let result = server.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "liftoff\n");
    let progress: Vec<f64> = server
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress" && n["params"]["progressToken"] == "count")
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, vec![0.0, 1.0]);
    server.validate_received();
}

#[test]
fn demo_confirm_cleanup_asks_and_does_what_the_answer_says() {
    let (_dir, mut server) = demo();
    server.initialize_with(json!({"elicitation": {}}));
    let id = create_task(&mut server, "confirm_cleanup", json!({"project": "web"}));
    let waiting = server.send_request("tasks/result", json!({"taskId": id}));
    let asked = server.notification(|n| n["method"] == "elicitation/create");
    assert_eq!(asked["params"]["message"], "Delete the cache of web (3 stale files)?");
    server.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirm": true}}}));
    let response = server.response(waiting);
    assert_eq!(response["result"]["content"][0]["text"], "Deleted 3 stale files of web\n");
    server.validate_received();
}

#[test]
fn demo_flaky_build_fails_with_its_exit_code_and_stderr() {
    let (_dir, mut server) = demo();
    server.initialize();
    let id = create_task(&mut server, "flaky_build", json!({}));
    let result = server.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("code 2") && text.contains("linker exploded"), "{text}");
    assert_eq!(server.call("tasks/get", json!({"taskId": id}))["status"], "failed");
    server.validate_received();
}

#[test]
fn demo_disk_report_answers_structured_json_and_refuses_a_bad_path() {
    let (_dir, mut server) = demo();
    server.initialize();
    let result = server.call("tools/call", json!({"name": "disk_report", "arguments": {"path": "."}}));
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["path"], ".");
    assert!(result["structuredContent"]["kilobytes"].is_u64());
    // To this client, which speaks no tasks, a tool whose calls may be handed off lists no
    // outputSchema (the handoff answer could not match it); a client with tasks sees it.
    let tools = server.call("tools/list", json!({}));
    let listed = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "disk_report").unwrap().clone();
    assert!(listed.get("outputSchema").is_none(), "{listed}");
    let (_tasks_dir, mut with_tasks) = demo();
    with_tasks.initialize_with(json!({"tasks": {"list": {}, "cancel": {}}}));
    let tools = with_tasks.call("tools/list", json!({}));
    let listed = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "disk_report").unwrap().clone();
    assert_eq!(listed["outputSchema"]["required"], json!(["path", "kilobytes"]));
    let refused = server.call_err("tools/call", json!({"name": "disk_report", "arguments": {"path": "$(id)"}, "task": {}}));
    assert_eq!(refused["code"], -32602);
    assert!(refused["message"].as_str().unwrap().contains("/path"), "{refused}");
    assert!(server.call("tasks/list", json!({}))["tasks"].as_array().unwrap().is_empty(), "no task created");
    server.validate_received();
}
