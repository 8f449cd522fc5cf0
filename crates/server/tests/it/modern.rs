//! 2026-07-28 with the tasks extension, over the stdio pipe, on the same server (and the same
//! tasks) as 2025-11-25: per-request `_meta`, `server/discover`, `resultType` on every
//! result, the server deciding tasks, DetailedTask, `tasks/update`, `tasks/cancel`, and the
//! errors of the era. Every result is checked against the 2026-07-28 schema and the tasks
//! extension's schema.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Context, Outcome};
use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_testkit_server::peer::assert_era_schema;
use mcp_tasks_testkit_server::{Era, TestPeer};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::sqlite_engine;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The per-request `_meta` of a client with `capabilities`.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "modern-test", "version": "0"},
    })
}

/// `params` with the `_meta` of a client that declared the tasks extension (and elicitation).
fn with_tasks(mut params: Value) -> Value {
    params["_meta"] = meta(json!({"extensions": {TASKS: {}}, "elicitation": {}}));
    params
}

/// `params` with the `_meta` of a client that declared nothing.
fn plain(mut params: Value) -> Value {
    params["_meta"] = meta(json!({}));
    params
}

/// A server with: `echo` (optional, answers at once), `gate` (optional, waits for a signal
/// or its cancellation), `asks` (optional, a task at once, elicits once), `fails`
/// (required, reports a tool error), `never` (forbidden).
fn server(release: Arc<Notify>, inline_wait: Duration) -> (Server, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let schema = json!({"type": "object"});
    let echo = ToolDef::new("echo", "Echoes", schema.clone(), handler_fn(|arguments, _ctx| async move {
        Outcome::Result(json!({"content": [{"type": "text", "text": arguments["text"].as_str().unwrap_or("")}]}))
    }))
    .task_mode(TaskMode::Optional);
    let gate = ToolDef::new("gate", "Waits for the test", schema.clone(), handler_fn(move |_arguments, ctx: Context| {
        let release = Arc::clone(&release);
        async move {
            tokio::select! {
                () = release.notified() => Outcome::Result(json!({"content": [{"type": "text", "text": "released"}]})),
                () = ctx.cancelled() => Outcome::Result(json!({"content": [{"type": "text", "text": "stopped"}]})),
            }
        }
    }))
    .task_mode(TaskMode::Optional);
    let asks = ToolDef::new("asks", "Asks a name", schema.clone(), handler_fn(|_arguments, ctx: Context| async move {
        let form = json!({"mode": "form", "message": "Your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}});
        match ctx.elicit(form).await {
            Ok(answer) => Outcome::Result(json!({"content": [{"type": "text", "text": format!("hello {}", answer["content"]["name"].as_str().unwrap_or("?"))}]})),
            Err(error) => error.into(),
        }
    }))
    .task_mode(TaskMode::Optional)
    .inline_wait(Duration::ZERO);
    let fails = ToolDef::new("fails", "Reports a tool error", schema.clone(), handler_fn(|_arguments, _ctx| async move {
        Outcome::Result(json!({"content": [{"type": "text", "text": "disk on fire"}], "isError": true}))
    }))
    .task_mode(TaskMode::Required);
    let never = ToolDef::new("never", "Plain only", schema, handler_fn(|_arguments, _ctx| async move {
        Outcome::Result(json!({"content": [{"type": "text", "text": "plain"}]}))
    }));
    let server = Server::builder(engine)
        .name("modern-test")
        .inline_wait(inline_wait)
        .tool(echo)
        .tool(gate)
        .tool(asks)
        .tool(fails)
        .tool(never)
        .build()
        .unwrap();
    (server, dir)
}

fn check(def: &str, result: &Value) {
    assert_era_schema(Era::Modern, def, result);
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "modern-test", "{result}");
}

#[tokio::test]
async fn modern_22_25_server_discover_lists_the_versions_served_per_request_and_the_tasks_extension() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::from_secs(1));
    let mut peer = TestPeer::connect(server);
    let result = peer.result("server/discover", plain(json!({}))).await;
    check("DiscoverResult", &result);
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(result["capabilities"]["extensions"][TASKS], json!({}));
    assert!(result["capabilities"].get("tasks").is_none(), "no 2025-11-25 tasks capability: {result}");
    assert_eq!(result["resultType"], "complete");
}

#[tokio::test]
async fn modern_13_23_a_request_without_meta_or_of_another_version_is_refused_and_the_server_goes_on() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::from_secs(1));
    let mut peer = TestPeer::connect(server);
    let error = peer.error("server/discover", json!({})).await;
    assert_eq!(error["code"], -32602, "{error}");
    let mut other = plain(json!({}));
    other["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let error = peer.error("tools/list", other).await;
    assert_eq!(error["code"], -32022, "{error}");
    assert_eq!(error["data"], json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}));
    let mut no_caps = plain(json!({}));
    no_caps["_meta"].as_object_mut().unwrap().remove("io.modelcontextprotocol/clientCapabilities");
    assert_eq!(peer.error("tools/list", no_caps).await["code"], -32602);
    for removed in ["ping", "tasks/result", "tasks/list", "logging/setLevel", "resources/subscribe", "no/such"] {
        let error = peer.error(removed, plain(json!({}))).await;
        assert_eq!(error["code"], -32601, "{removed}: {error}");
    }
    check("ListToolsResult", &peer.result("tools/list", plain(json!({}))).await);
}

#[tokio::test]
async fn modern_4_33_tools_list_has_result_type_cache_hints_and_no_execution() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::from_secs(1));
    let mut peer = TestPeer::connect(server);
    let result = peer.result("tools/list", plain(json!({}))).await;
    check("ListToolsResult", &result);
    let tools = result["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 5);
    assert!(tools.iter().all(|tool| tool.get("execution").is_none()), "{result}");
    assert_eq!((result["resultType"].clone(), result["cacheScope"].clone()), (json!("complete"), json!("private")));
}

#[tokio::test]
async fn modern_tasks_without_the_extension_a_call_is_plain_and_tasks_methods_are_32021() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::from_secs(1));
    let mut peer = TestPeer::connect(server);
    let result = peer.result("tools/call", plain(json!({"name": "echo", "arguments": {"text": "hi"}, "task": {}}))).await;
    check("CallToolResult", &result);
    assert_eq!(result["content"][0]["text"], "hi");
    assert!(result.get("taskId").is_none(), "a legacy params.task never makes a task: {result}");
    let error = peer.error("tools/call", plain(json!({"name": "fails"}))).await;
    assert_eq!(error["code"], -32021, "{error}");
    assert_eq!(error["data"]["requiredCapabilities"]["extensions"][TASKS], json!({}));
    for name in ["tasks/get", "tasks/cancel"] {
        assert_eq!(peer.error(name, plain(json!({"taskId": "x"}))).await["code"], -32021, "{name}");
    }
    let update = plain(json!({"taskId": "x", "inputResponses": {}}));
    assert_eq!(peer.error("tasks/update", update).await["code"], -32021);
}

#[tokio::test]
async fn modern_tasks_an_optional_tool_that_ends_within_the_inline_wait_answers_inline() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::from_secs(30));
    let mut peer = TestPeer::connect(server);
    let result = peer.result("tools/call", with_tasks(json!({"name": "echo", "arguments": {"text": "inline"}}))).await;
    check("CallToolResult", &result);
    assert_eq!((result["resultType"].clone(), result["content"][0]["text"].clone()), (json!("complete"), json!("inline")));
}

#[tokio::test]
async fn modern_tasks_a_slow_call_becomes_a_task_read_with_tasks_get_until_its_result_is_inlined() {
    let release = Arc::new(Notify::new());
    let (server, _dir) = server(Arc::clone(&release), Duration::ZERO);
    let mut peer = TestPeer::connect(server);
    let created = peer.result("tools/call", with_tasks(json!({"name": "gate"}))).await;
    assert_era_schema(Era::Modern, "CreateTaskResult", &created);
    assert_eq!(created["resultType"], "task");
    assert!(created.get("ttl").is_none() && created.get("ttlMs").is_some() && created.get("task").is_none(), "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let working = peer.result("tasks/get", with_tasks(json!({"taskId": id}))).await;
    assert_era_schema(Era::Modern, "GetTaskResult", &working);
    assert_eq!((working["status"].clone(), working.get("result")), (json!("working"), None));
    release.notify_one();
    let done = loop {
        let task = peer.result("tasks/get", with_tasks(json!({"taskId": id}))).await;
        if task["status"] != "working" {
            break task;
        }
    };
    assert_era_schema(Era::Modern, "GetTaskResult", &done);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!((done["result"]["content"][0]["text"].clone(), done["result"]["resultType"].clone()), (json!("released"), json!("complete")));
    assert!(done["result"]["_meta"].get("io.modelcontextprotocol/related-task").is_none(), "{done}");
    assert!(done.get("requestState").is_none());
}

#[tokio::test]
async fn modern_tasks_a_tool_error_completes_the_task_with_is_error() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::ZERO);
    let mut peer = TestPeer::connect(server);
    let created = peer.result("tools/call", with_tasks(json!({"name": "fails"}))).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let done = loop {
        let task = peer.result("tasks/get", with_tasks(json!({"taskId": id}))).await;
        if task["status"] != "working" {
            break task;
        }
    };
    assert_era_schema(Era::Modern, "GetTaskResult", &done);
    assert_eq!((done["status"].clone(), done["result"]["isError"].clone()), (json!("completed"), json!(true)), "{done}");
}

#[tokio::test]
async fn modern_tasks_input_is_asked_in_input_requests_and_answered_through_tasks_update() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::ZERO);
    let mut peer = TestPeer::connect(server);
    let created = peer.result("tools/call", with_tasks(json!({"name": "asks"}))).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let asking = loop {
        let task = peer.result("tasks/get", with_tasks(json!({"taskId": id}))).await;
        if task["status"] == "input_required" {
            break task;
        }
        assert_eq!(task["status"], "working", "{task}");
    };
    assert_era_schema(Era::Modern, "GetTaskResult", &asking);
    let requests = asking["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1);
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    let ignored = json!({"no-such-key": {"action": "decline"}});
    let ack = peer.result("tasks/update", with_tasks(json!({"taskId": id, "inputResponses": ignored}))).await;
    assert_era_schema(Era::Modern, "UpdateTaskResult", &ack);
    let answer = json!({key.clone(): {"action": "accept", "content": {"name": "Ada"}}});
    let ack = peer.result("tasks/update", with_tasks(json!({"taskId": id, "inputResponses": answer}))).await;
    assert_eq!(ack["resultType"], "complete");
    let done = loop {
        let task = peer.result("tasks/get", with_tasks(json!({"taskId": id}))).await;
        if task["status"] == "completed" {
            break task;
        }
    };
    assert_eq!(done["result"]["content"][0]["text"], "hello Ada", "{done}");
}

#[tokio::test]
async fn modern_tasks_cancel_is_an_ack_that_stops_the_work_and_is_idempotent_on_a_terminal_task() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::ZERO);
    let mut peer = TestPeer::connect(server);
    let created = peer.result("tools/call", with_tasks(json!({"name": "gate"}))).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        let ack = peer.result("tasks/cancel", with_tasks(json!({"taskId": id}))).await;
        assert_era_schema(Era::Modern, "CancelTaskResult", &ack);
        assert_eq!(ack.as_object().unwrap().keys().filter(|key| *key != "_meta").count(), 1, "{ack}");
    }
    let task = loop {
        let task = peer.result("tasks/get", with_tasks(json!({"taskId": id}))).await;
        if task["status"] != "working" {
            break task;
        }
    };
    assert_eq!(task["status"], "cancelled");
    let error = peer.error("tasks/get", with_tasks(json!({"taskId": "no-such-task"}))).await;
    assert_eq!(error["code"], -32602);
}

#[tokio::test]
async fn one_task_two_eras_a_task_made_in_a_legacy_session_is_read_by_modern_requests_and_back() {
    let release = Arc::new(Notify::new());
    let (server, _dir) = server(Arc::clone(&release), Duration::ZERO);
    let mut peer = TestPeer::start(server).await;
    let legacy = peer.result("tools/call", json!({"name": "gate", "task": {"ttl": 60000}})).await;
    let legacy_id = legacy["task"]["taskId"].as_str().unwrap().to_owned();
    let read = peer.result("tasks/get", with_tasks(json!({"taskId": legacy_id}))).await;
    assert_era_schema(Era::Modern, "GetTaskResult", &read);
    assert_eq!((read["status"].clone(), read["ttlMs"].clone()), (json!("working"), json!(60000)));
    let modern = peer.result("tools/call", with_tasks(json!({"name": "gate"}))).await;
    let modern_id = modern["taskId"].as_str().unwrap().to_owned();
    let read = peer.result("tasks/get", json!({"taskId": modern_id})).await;
    assert_eq!(read["status"], "working", "the Legacy session reads the Modern task: {read}");
    assert!(read.get("ttl").is_some() && read.get("resultType").is_none(), "{read}");
    release.notify_waiters();
}

#[tokio::test]
async fn modern_15_a_plain_call_whose_work_needs_an_undeclared_capability_is_32021() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::ZERO);
    let mut peer = TestPeer::connect(server);
    let error = peer.error("tools/call", plain(json!({"name": "asks"}))).await;
    assert_eq!(error["code"], -32021, "{error}");
    assert_eq!(error["data"]["requiredCapabilities"], json!({"elicitation": {}}));
    // `initialize` that names its revision per request is a 2026-07-28 request: unknown there.
    let error = peer.error("initialize", plain(json!({"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}))).await;
    assert_eq!(error["code"], -32601, "{error}");
}

/// `params` with the `_meta` of a client that declared elicitation but not the tasks extension.
fn elicits(mut params: Value) -> Value {
    params["_meta"] = meta(json!({"elicitation": {}}));
    params
}

#[tokio::test]
async fn modern_mrtr_a_plain_call_that_asks_answers_input_required_and_the_retry_continues_the_same_work() {
    let (server, _dir) = server(Arc::new(Notify::new()), Duration::ZERO);
    let mut peer = TestPeer::connect(server);
    let round = peer.result("tools/call", elicits(json!({"name": "asks"}))).await;
    assert_era_schema(Era::Modern, "InputRequiredResult", &round);
    assert_eq!(round["resultType"], "input_required", "{round}");
    let requests = round["inputRequests"].as_object().unwrap();
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!((requests.len(), request["method"].clone()), (1, json!("elicitation/create")));
    let state = round["requestState"].as_str().unwrap().to_owned();
    // A retry without the answer asks again, under a new state; the old one is used up.
    let again = peer.result("tools/call", elicits(json!({"name": "asks", "requestState": state, "inputResponses": {}}))).await;
    assert_eq!(again["resultType"], "input_required");
    let state2 = again["requestState"].as_str().unwrap().to_owned();
    assert_ne!(state, state2);
    let replayed = peer.error("tools/call", elicits(json!({"name": "asks", "requestState": state, "inputResponses": {}}))).await;
    assert_eq!(replayed["code"], -32602, "a used requestState is refused: {replayed}");
    let forged = peer.error("tools/call", elicits(json!({"name": "asks", "requestState": "made-up", "inputResponses": {}}))).await;
    assert_eq!(forged["code"], -32602);
    let other_tool = peer.error("tools/call", elicits(json!({"name": "echo", "requestState": state2, "inputResponses": {}}))).await;
    assert_eq!(other_tool["code"], -32602, "a state names one call of one tool: {other_tool}");
    let answer = json!({key.clone(): {"action": "accept", "content": {"name": "Ada"}}});
    let done = peer.result("tools/call", elicits(json!({"name": "asks", "requestState": state2, "inputResponses": answer}))).await;
    assert_era_schema(Era::Modern, "CallToolResult", &done);
    assert_eq!((done["resultType"].clone(), done["content"][0]["text"].clone()), (json!("complete"), json!("hello Ada")), "{done}");
}

#[tokio::test]
async fn modern_mrtr_a_roots_question_is_a_roots_list_input_request_and_needs_the_roots_capability() {
    let (engine, _dir) = sqlite_engine();
    let roots = ToolDef::new("roots", "Lists the client's roots", json!({"type": "object"}), handler_fn(|_arguments, ctx: Context| async move {
        match ctx.list_roots().await {
            Ok(roots) => Outcome::Result(json!({"content": [{"type": "text", "text": format!("{} roots", roots["roots"].as_array().map_or(0, Vec::len))}]})),
            Err(error) => error.into(),
        }
    }));
    let server = Server::builder(engine).name("modern-test").tool(roots).build().unwrap();
    let mut peer = TestPeer::connect(server);
    let mut declared = json!({"name": "roots"});
    declared["_meta"] = meta(json!({"roots": {}}));
    let round = peer.result("tools/call", declared.clone()).await;
    assert_era_schema(Era::Modern, "InputRequiredResult", &round);
    let (key, request) = round["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(request["method"], "roots/list", "{round}");
    declared["requestState"] = round["requestState"].clone();
    declared["inputResponses"] = json!({key.clone(): {"roots": [{"uri": "file:///work"}]}});
    let done = peer.result("tools/call", declared).await;
    assert_eq!(done["content"][0]["text"], "1 roots", "{done}");
    let error = peer.error("tools/call", plain(json!({"name": "roots"}))).await;
    assert_eq!((error["code"].clone(), error["data"]["requiredCapabilities"].clone()), (json!(-32021), json!({"roots": {}})));
}

/// `params` with the `_meta` of a client that declared the tasks extension with `settings`.
fn with_tasks_settings(mut params: Value, settings: &Value) -> Value {
    params["_meta"] = meta(json!({"extensions": {TASKS: settings}, "elicitation": {}}));
    params
}

/// SEP-3392 revision_05/06, the server side: tasks settings with a `revision` this server
/// does not know (or one that is not a string) leave the extension off for that request, as
/// if the client had not declared it: a call is served as to a client without tasks (no task
/// handle; a tool that needs a task is -32021 naming the extension), and the task methods are
/// -32021. No `revision` (the initial one) and extra keys are fine; `server/discover`
/// advertises the settings as the 2026-07-28 schema allows them (`{}`).
#[tokio::test]
async fn revision_05_06_an_unknown_tasks_revision_leaves_the_extension_off_for_that_request() {
    let release = Arc::new(Notify::new());
    let (server, _dir) = server(Arc::clone(&release), Duration::ZERO);
    let mut peer = TestPeer::connect(server);
    let discovered = peer.result("server/discover", plain(json!({}))).await;
    assert_eq!(discovered["capabilities"]["extensions"][TASKS], json!({}), "{discovered}");
    for settings in [json!({"revision": "99"}), json!({"revision": 2}), json!({"revision": null})] {
        let result = peer.result("tools/call", with_tasks_settings(json!({"name": "echo", "arguments": {"text": "hi"}}), &settings)).await;
        check("CallToolResult", &result);
        assert_eq!((result["resultType"].clone(), result["content"][0]["text"].clone()), (json!("complete"), json!("hi")), "{settings}");
        let error = peer.error("tools/call", with_tasks_settings(json!({"name": "fails"}), &settings)).await;
        assert_eq!(error["code"], -32021, "{settings}: {error}");
        assert_eq!(error["data"]["requiredCapabilities"]["extensions"][TASKS], json!({}), "{error}");
        let error = peer.error("tasks/get", with_tasks_settings(json!({"taskId": "x"}), &settings)).await;
        assert_eq!(error["code"], -32021, "{settings}: {error}");
    }
    // The initial revision, with a key this build does not know: tasks as usual.
    let created = peer.result("tools/call", with_tasks_settings(json!({"name": "gate"}), &json!({"eventStreams": true}))).await;
    assert_eq!(created["resultType"], "task", "{created}");
    release.notify_one();
}
