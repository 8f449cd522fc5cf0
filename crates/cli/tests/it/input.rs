//! Command tools that ask questions through the line protocol, over stdio with the real
//! binary: the 2025-11-25 input_required flow end to end.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Server, Workdir, create_task, started_pid};

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn statuses(server: &Server, id: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for note in &server.notifications {
        if note["method"] == "notifications/tasks/status" && note["params"]["taskId"] == id {
            let status = note["params"]["status"].as_str().unwrap().to_owned();
            if seen.last() != Some(&status) {
                seen.push(status);
            }
        }
    }
    seen
}

fn is_status<'a>(id: &'a str, status: &'static str) -> impl Fn(&Value) -> bool + 'a {
    move |n| n["method"] == "notifications/tasks/status" && n["params"]["taskId"] == id && n["params"]["status"] == status
}

#[test]
fn legacy_33_36_a_command_asks_and_the_task_goes_working_input_required_working_completed() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize_with(json!({"elicitation": {}}));
    let id = create_task(&mut server, "confirm", json!({}));
    server.notification(is_status(&id, "input_required"));
    let waiting = server.send_request("tasks/result", json!({"taskId": id}));
    let asked = server.notification(|n| n["method"] == "elicitation/create");
    assert_eq!(asked["params"]["message"], "Really?");
    assert_eq!(asked["params"]["_meta"][RELATED]["taskId"], id.as_str(), "legacy_34");
    server.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"ok": true}},
        "_meta": {RELATED: {"taskId": id}}}));
    let response = server.response(waiting);
    let text = response["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "answer: {\"action\":\"accept\",\"content\":{\"ok\":true}}\n");
    server.notification(is_status(&id, "completed"));
    let seen = statuses(&server, &id);
    let from = seen.iter().position(|s| s == "input_required").unwrap();
    assert_eq!(seen[from..], ["input_required", "working", "completed"], "each change notified: {seen:?}");
    server.validate_received();
}

#[test]
fn legacy_a_client_without_elicitation_gets_a_failed_task_not_a_hang() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize(); // no capabilities
    let id = create_task(&mut server, "confirm", json!({}));
    let result = server.call("tasks/result", json!({"taskId": id}));
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("\"action\":\"error\""), "the command was told: {text}");
    assert!(text.contains("did not declare"), "{text}");
    server.validate_received();
}

#[test]
fn legacy_cancel_while_waiting_for_input_ends_cancelled_and_kills_the_command() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize_with(json!({"elicitation": {}}));
    let id = create_task(&mut server, "confirm", json!({}));
    let group = started_pid(&mut server, &id);
    server.notification(is_status(&id, "input_required"));
    let cancelled = server.call("tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["status"], "cancelled");
    let deadline = Instant::now() + Duration::from_secs(10);
    while nix::sys::signal::killpg(group, None).is_ok() {
        assert!(Instant::now() < deadline, "the command still runs after the cancel");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.call("tasks/get", json!({"taskId": id}))["status"], "cancelled");
    server.validate_received();
}
