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

/// The README's first tool (`examples/first.toml`, the README's block word for word), called
/// as the README says but over `--cmd`: it answers `Hello, Ada!`. The `--cmd` server's own
/// log lines stay off the user's terminal unless `-v` asks for them (issue 42).
#[test]
fn first_tool_of_the_readme_answers_and_its_cmd_server_logs_only_with_v() {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let file = std::fs::read_to_string(root.join("examples/first.toml")).unwrap();
    let body: String = file.lines().filter(|line| !line.starts_with('#')).map(|line| format!("{line}\n")).collect();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains(&format!("```toml\n{body}```")), "the README's first tool is examples/first.toml:\n{body}");
    assert!(body.lines().count() <= 6, "a six-line first tool:\n{body}");
    let dir = tempfile::tempdir().unwrap();
    let server = format!(
        "{} serve --stdio --config {} --store {}",
        env!("CARGO_BIN_EXE_mcp-tasks"),
        root.join("examples/first.toml").display(),
        dir.path().join("tasks.sqlite3").display()
    );
    let call = |verbose: bool| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
        command.args(["call", "hello", "--arg", "name=Ada", "--cmd", &server]).env("MCP_TASKS_LEDGER", dir.path().join("ledger.sqlite3")).env_remove("RUST_LOG");
        if verbose {
            command.arg("-v");
        }
        command.output().expect("run mcp-tasks call")
    };
    let quiet = call(false);
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(quiet.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&quiet.stdout).trim_end(), "Hello, Ada!");
    assert!(!stderr.contains("serving 1 tool on stdio"), "the server's log stays off the terminal: {stderr}");
    let verbose = call(true);
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    assert!(verbose.status.success(), "{stderr}");
    assert!(stderr.contains("serving 1 tool on stdio"), "-v shows the server's log: {stderr}");
}

/// A `--cmd` server that fails to start: its own words are shown, though it is quiet.
#[test]
fn a_cmd_server_that_fails_to_start_is_shown_with_its_last_words() {
    let dir = tempfile::tempdir().unwrap();
    let server = format!("{} serve --stdio --config {}", env!("CARGO_BIN_EXE_mcp-tasks"), dir.path().join("missing.toml").display());
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["tools", "--cmd", &server])
        .env("MCP_TASKS_LEDGER", dir.path().join("ledger.sqlite3"))
        .output()
        .expect("run mcp-tasks tools");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("its last lines on stderr") && stderr.contains("missing.toml"), "{stderr}");
}
