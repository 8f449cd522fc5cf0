//! Interop driver: the official Rust SDK, rmcp 3.11.0, as a 2026-07-28 tasks client
//! (`io.modelcontextprotocol/tasks`, SEP-2663) against a server over Streamable HTTP.
//!
//! ```text
//! rmcp-tasks-client --url http://127.0.0.1:PORT/mcp [--token TOKEN] [--timeout SECONDS]
//! ```
//!
//! It connects in `ClientLifecycleMode::Discover` (`server/discover`, then every request carries
//! its revision, client info and capabilities in `_meta`), declaring the tasks extension and
//! form elicitation, and drives the interop fixture's tools (`interop/fixtures/mcp-tasks.toml`)
//! with rmcp's low-level task calls (`call_tool_once`, `get_task`, `update_task`,
//! `cancel_task`; rmcp has no polling helper):
//!
//! * `accept` / `decline`: `interop_confirm_later {item: "widget" | "gadget"}` (it asks after
//!   ~2 s, longer than the server's inline wait) → a task; `tasks/get`
//!   until `input_required` with one `elicitation/create` ("Confirm ITEM?"); `tasks/update`
//!   answering accept `{confirm: true}` / decline; `tasks/get` until `completed`, the inlined
//!   result read as rmcp's `CallToolResult`, text `confirmed widget: …` / `declined gadget: …`
//!   naming the answer the command read on stdin;
//! * `mrtr`: `interop_confirm {item: "gizmo"}` (it asks at once) → an `InputRequiredResult`
//!   round before any task (one `elicitation/create` and a `requestState`); the retry with the
//!   answer and the state ends `confirmed gizmo: …` (inline, or as a task that completes);
//! * `sleep`: `interop_sleep {seconds: 2}` → a task that completes with `slept`, no input asked;
//! * `cancel`: `interop_sleep {seconds: 60}` → a task, seen `working`, `tasks/cancel`, then
//!   `tasks/get` until `cancelled`; a second `tasks/cancel` is acknowledged too (idempotent);
//! * `tasks/get` of an unknown id is a JSON-RPC error.
//!
//! Polling honours the task's `pollIntervalMs` (clamped to 50..=2000 ms) and every wait has a
//! deadline. PASS/FAIL lines go to stderr, one JSON summary line to stdout; exit 0 only if every
//! check held (1 otherwise, 2 on a usage error).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, ElicitationCapability, ExtensionCapabilities, FormElicitationCapability,
    GetTaskParams, GetTaskResult, Implementation, InputResponses, JsonObject, ProtocolVersion,
    TASKS_EXTENSION_ID, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};

const DRIVER: &str = "rmcp_client";
const PEER: &str = "rmcp==3.11.0";

struct Options {
    url: String,
    token: Option<String>,
    timeout: Duration,
}

fn parse_args() -> Result<Options, String> {
    let mut url = std::env::var("MCP_URL").ok();
    let mut token = None;
    let mut timeout = Duration::from_secs(120);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--url" => url = Some(value()?),
            "--token" => token = Some(value()?),
            "--timeout" => {
                let s = value()?;
                let secs: f64 = s
                    .parse()
                    .map_err(|_| format!("--timeout: not a number: {s}"))?;
                timeout = Duration::from_secs_f64(secs);
            }
            _ => return Err(format!("unknown argument {arg}")),
        }
    }
    let url = url.ok_or("--url is required")?;
    Ok(Options {
        url,
        token: token.filter(|t| !t.is_empty()),
        timeout,
    })
}

/// The checks of one run and its summary (the JSON line).
struct Run {
    checks: Vec<Value>,
    info: serde_json::Map<String, Value>,
    started: Instant,
}

impl Run {
    fn check(&mut self, name: &str, ok: bool, detail: Value) {
        eprintln!(
            "[{DRIVER}] {} {name} {detail}",
            if ok { "PASS" } else { "FAIL" }
        );
        self.checks
            .push(json!({"name": name, "ok": ok, "detail": detail}));
    }

    fn summary(&self, url: &str) -> Value {
        let passed = self.checks.iter().filter(|c| c["ok"] == true).count();
        let failed = self.checks.len() - passed;
        let mut s = json!({
            "driver": DRIVER, "peer": PEER, "url": url,
            "ok": passed > 0 && failed == 0, "passed": passed, "failed": failed,
            "elapsedMs": self.started.elapsed().as_millis() as u64,
        });
        let obj = s.as_object_mut().expect("an object");
        obj.extend(self.info.clone());
        obj.insert("checks".into(), Value::Array(self.checks.clone()));
        s
    }
}

fn err(e: &ServiceError) -> Value {
    match e {
        ServiceError::McpError(data) => json!({"code": data.code.0, "message": data.message}),
        other => json!({"message": other.to_string()}),
    }
}

fn text_of(result: &JsonObject) -> String {
    let items = result.get("content").and_then(Value::as_array);
    items
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "text")
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn status_name(status: TaskStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{status:?}"))
}

fn client_info() -> ClientConfig {
    let mut extensions = ExtensionCapabilities::new();
    extensions.insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    let mut capabilities = ClientCapabilities::default();
    capabilities.extensions = Some(extensions);
    capabilities.elicitation =
        Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
    ClientConfig::new(
        capabilities,
        Implementation::new("mcp-tasks-interop-rmcp", "1.0.0"),
    )
}

async fn connect(o: &Options) -> Result<RunningService<RoleClient, ClientConfig>, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(o.url.clone());
    if let Some(token) = &o.token {
        config = config.auth_header(token.clone());
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    tokio::time::timeout(
        Duration::from_secs(30),
        client_info().serve_with_lifecycle(transport, lifecycle),
    )
    .await
    .map_err(|_| "server/discover did not answer within 30 s".to_owned())?
    .map_err(|e| e.to_string())
}

/// Polls `tasks/get` until `done` holds, within `within`; returns the last answer and the
/// statuses seen (runs of one status compressed as `status*n`).
async fn poll(
    peer: &Peer<RoleClient>,
    task_id: &str,
    within: Duration,
    done: impl Fn(&GetTaskResult) -> bool,
) -> (Result<GetTaskResult, String>, Vec<String>) {
    let deadline = Instant::now() + within;
    let mut seen: Vec<(String, usize)> = Vec::new();
    let summary = |seen: &[(String, usize)]| {
        seen.iter()
            .map(|(s, n)| {
                if *n > 1 {
                    format!("{s}*{n}")
                } else {
                    s.clone()
                }
            })
            .collect()
    };
    loop {
        let got = match peer.get_task(GetTaskParams::new(task_id)).await {
            Ok(got) => got,
            Err(e) => return (Err(format!("tasks/get: {}", err(&e))), summary(&seen)),
        };
        let status = status_name(got.task.status());
        match seen.last_mut() {
            Some((last, n)) if *last == status => *n += 1,
            _ => seen.push((status, 1)),
        }
        if done(&got) {
            return (Ok(got), summary(&seen));
        }
        if got.task.status().is_terminal() {
            return (
                Err(format!(
                    "terminal too early: {}",
                    status_name(got.task.status())
                )),
                summary(&seen),
            );
        }
        if Instant::now() >= deadline {
            return (
                Err(format!("not reached within {} s", within.as_secs())),
                summary(&seen),
            );
        }
        let interval = got
            .task
            .task
            .poll_interval_ms
            .unwrap_or(500)
            .clamp(50, 2000);
        tokio::time::sleep(Duration::from_millis(interval)).await;
    }
}

/// `tools/call` that must answer a task (`resultType: "task"`); returns its id.
async fn create(
    run: &mut Run,
    peer: &Peer<RoleClient>,
    name: &str,
    tool: &'static str,
    arguments: Value,
) -> Option<String> {
    let Value::Object(arguments) = arguments else {
        unreachable!("arguments are an object")
    };
    let params = CallToolRequestParams::new(tool).with_arguments(arguments);
    match peer.call_tool_once(params).await {
        Ok(CallToolResponse::Task(created)) => {
            let t = &created.task;
            let id = t.task_id.clone();
            run.check(
                &format!("{name}:create"),
                !id.is_empty()
                    && matches!(t.status, TaskStatus::Working | TaskStatus::InputRequired),
                json!({"taskId": id, "status": status_name(t.status), "ttlMs": t.ttl_ms,
                       "pollIntervalMs": t.poll_interval_ms, "createdAt": t.created_at}),
            );
            Some(id)
        }
        Ok(CallToolResponse::Complete(result)) => {
            run.check(
                &format!("{name}:create"),
                false,
                json!({"expected": "a task", "got": "complete", "result": result}),
            );
            None
        }
        Ok(CallToolResponse::InputRequired(result)) => {
            run.check(
                &format!("{name}:create"),
                false,
                json!({"expected": "a task", "got": "input_required", "result": result}),
            );
            None
        }
        Ok(other) => {
            run.check(
                &format!("{name}:create"),
                false,
                json!({"expected": "a task", "got": format!("{other:?}")}),
            );
            None
        }
        Err(e) => {
            run.check(&format!("{name}:create"), false, err(&e));
            None
        }
    }
}

/// Checks a `completed` task's inlined result: read as rmcp's `CallToolResult`, not an
/// error, its text starting with `want`.
fn check_completed(run: &mut Run, name: &str, got: &GetTaskResult, want: &str) {
    let TaskPayload::Completed { result } = &got.task.payload else {
        run.check(
            name,
            false,
            json!({"status": status_name(got.task.status())}),
        );
        return;
    };
    let text = text_of(result);
    let parsed = serde_json::from_value::<CallToolResult>(Value::Object(result.clone()));
    // not checked (rmcp accepts a result without it); the TS ext-tasks client requires it
    let inlined = run
        .info
        .entry("inlinedResultType")
        .or_insert_with(|| json!({}));
    inlined[name] = result.get("resultType").cloned().unwrap_or(Value::Null);
    run.check(
        name,
        parsed.as_ref().is_ok_and(|r| r.is_error != Some(true)) && text.starts_with(want),
        json!({"text": text, "expect": want, "isError": result.get("isError"),
               "asCallToolResult": parsed.as_ref().map_or_else(ToString::to_string, |_| "ok".to_owned())}),
    );
}

/// One task that asks `Confirm ITEM?` and gets `answer` through `tasks/update`.
struct Ask {
    scenario: &'static str,
    /// A tool that asks only after the server's inline wait, so the call is a task first.
    tool: &'static str,
    item: &'static str,
    answer: Value,
    /// The start of the result text: `<verdict> ITEM: `.
    verdict: &'static str,
}

async fn task_with_input(run: &mut Run, peer: &Peer<RoleClient>, ask: Ask) {
    let sc = ask.scenario;
    let name = |check: &str| format!("{sc}:{check}");
    let arguments = json!({"item": ask.item});
    let Some(id) = create(run, peer, sc, ask.tool, arguments).await else {
        return;
    };
    let (got, seen) = poll(peer, &id, Duration::from_secs(30), |g| {
        g.task.status() == TaskStatus::InputRequired
    })
    .await;
    let got = match got {
        Ok(got) => got,
        Err(e) => {
            let detail = json!({"error": e, "statuses": seen});
            return run.check(&name("input_required"), false, detail);
        }
    };
    let TaskPayload::InputRequired { input_requests } = &got.task.payload else {
        unreachable!("polled until input_required")
    };
    let requests = serde_json::to_value(input_requests).unwrap_or(Value::Null);
    let one = input_requests.len() == 1;
    let (key, request) = match input_requests.iter().next() {
        Some((k, r)) => (k.clone(), serde_json::to_value(r).unwrap_or(Value::Null)),
        None => (String::new(), Value::Null),
    };
    let asks = one
        && request["method"] == "elicitation/create"
        && request["params"]["message"] == format!("Confirm {}?", ask.item).as_str()
        && request["params"]["requestedSchema"]["properties"]["confirm"]["type"] == "boolean";
    let detail = json!({"statuses": seen, "inputRequests": requests});
    run.check(&name("input_required"), asks, detail);
    if !one {
        return;
    }
    let mut responses = InputResponses::new();
    responses.insert(key.clone(), ask.answer.clone());
    let update = UpdateTaskParams::new(id.clone(), responses);
    match peer.update_task(update).await {
        Ok(()) => run.check(
            &name("update"),
            true,
            json!({"key": key, "answer": ask.answer}),
        ),
        Err(e) => return run.check(&name("update"), false, err(&e)),
    }
    let (got, seen) = poll(peer, &id, Duration::from_secs(30), |g| {
        g.task.status() == TaskStatus::Completed
    })
    .await;
    let got = match got {
        Ok(got) => got,
        Err(e) => {
            let detail = json!({"error": e, "statuses": seen});
            return run.check(&name("result"), false, detail);
        }
    };
    let want = format!("{} {}: ", ask.verdict, ask.item);
    check_completed(run, &name("result"), &got, &want);
    // the command echoes the answer line it read on stdin
    let text = match &got.task.payload {
        TaskPayload::Completed { result } => text_of(result),
        _ => String::new(),
    };
    let action = format!(r#""action":{}"#, ask.answer["action"]);
    let content_ok = ask.answer.get("content").is_none() || text.contains(r#""confirm":true"#);
    let detail = json!({"text": text, "expect": action});
    run.check(
        &name("answer-delivered"),
        text.contains(&action) && content_ok,
        detail,
    );
}

/// A tool that asks at once (`interop_confirm`), called with the extension declared: the
/// question is a round of the call (MRTR, `InputRequiredResult`) before any task is shown; the
/// retry with the answer and the echoed `requestState` then ends inline, or as a task that
/// completes.
async fn mrtr_before_task(run: &mut Run, peer: &Peer<RoleClient>) {
    let Value::Object(arguments) = json!({"item": "gizmo"}) else {
        unreachable!("an object")
    };
    let params = CallToolRequestParams::new("interop_confirm").with_arguments(arguments);
    let round1 = match peer.call_tool_once(params.clone()).await {
        Ok(CallToolResponse::InputRequired(r)) => r,
        Ok(other) => {
            let detail = json!({"expected": "input_required", "got": format!("{other:?}")});
            return run.check("mrtr:input_required", false, detail);
        }
        Err(e) => return run.check("mrtr:input_required", false, err(&e)),
    };
    let requests = round1.input_requests.clone().unwrap_or_default();
    let (key, request) = match requests.iter().next() {
        Some((k, r)) => (k.clone(), serde_json::to_value(r).unwrap_or(Value::Null)),
        None => (String::new(), Value::Null),
    };
    let state = round1.request_state.clone();
    let asks = requests.len() == 1
        && request["method"] == "elicitation/create"
        && request["params"]["message"] == "Confirm gizmo?"
        && state.as_deref().is_some_and(|s| !s.is_empty());
    let detail = json!({"inputRequests": requests, "requestState": state.is_some()});
    run.check("mrtr:input_required", asks, detail);
    if requests.len() != 1 {
        return;
    }
    let mut responses = InputResponses::new();
    responses.insert(
        key,
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    let mut retry = params.with_input_responses(responses);
    if let Some(state) = state {
        retry = retry.with_request_state(state);
    }
    let (shape, result) = match peer.call_tool_once(retry).await {
        Ok(CallToolResponse::Complete(r)) => ("complete", serde_json::to_value(&r).ok()),
        Ok(CallToolResponse::Task(t)) => {
            let id = t.task.task_id.clone();
            let (got, seen) = poll(peer, &id, Duration::from_secs(30), |g| {
                g.task.status() == TaskStatus::Completed
            })
            .await;
            run.info.insert("mrtrTaskStatuses".into(), json!(seen));
            let result = got.ok().and_then(|g| match g.task.payload {
                TaskPayload::Completed { result } => Some(Value::Object(result)),
                _ => None,
            });
            ("task", result)
        }
        Ok(other) => ("other", Some(json!(format!("{other:?}")))),
        Err(e) => ("error", Some(err(&e))),
    };
    let text = match &result {
        Some(Value::Object(r)) => text_of(r),
        _ => String::new(),
    };
    let ok = matches!(shape, "complete" | "task")
        && text.starts_with("confirmed gizmo: ")
        && text.contains(r#""confirm":true"#);
    let detail = json!({"retryAnswered": shape, "text": text, "result": result});
    run.check("mrtr:result", ok, detail);
}

async fn task_without_input(run: &mut Run, peer: &Peer<RoleClient>) {
    let Some(id) = create(run, peer, "sleep", "interop_sleep", json!({"seconds": 2})).await else {
        return;
    };
    let (got, seen) = poll(peer, &id, Duration::from_secs(30), |g| {
        g.task.status() == TaskStatus::Completed
    })
    .await;
    match got {
        Ok(got) => {
            let asked = seen.iter().any(|s| s.starts_with("input_required"));
            run.check("sleep:no-input", !asked, json!({"statuses": seen}));
            check_completed(run, "sleep:result", &got, "slept");
        }
        Err(e) => run.check("sleep:result", false, json!({"error": e, "statuses": seen})),
    }
}

async fn cancel_running(run: &mut Run, peer: &Peer<RoleClient>) {
    let Some(id) = create(run, peer, "cancel", "interop_sleep", json!({"seconds": 60})).await
    else {
        return;
    };
    match peer.get_task(GetTaskParams::new(id.clone())).await {
        Ok(got) => run.check(
            "cancel:running",
            got.task.status() == TaskStatus::Working,
            json!({"status": status_name(got.task.status())}),
        ),
        Err(e) => run.check("cancel:running", false, err(&e)),
    }
    let t0 = Instant::now();
    match peer.cancel_task(CancelTaskParams::new(id.clone())).await {
        Ok(()) => run.check("cancel:ack", true, json!({})),
        Err(e) => return run.check("cancel:ack", false, err(&e)),
    }
    let (got, seen) = poll(peer, &id, Duration::from_secs(15), |g| {
        g.task.status() == TaskStatus::Cancelled
    })
    .await;
    run.check(
        "cancel:cancelled",
        got.is_ok(),
        json!({"statuses": seen, "error": got.as_ref().err(), "afterMs": t0.elapsed().as_millis() as u64}),
    );
    match peer.cancel_task(CancelTaskParams::new(id.clone())).await {
        Ok(()) => run.check("cancel:again-ack", true, json!({})),
        Err(e) => run.check("cancel:again-ack", false, err(&e)),
    }
}

async fn drive(run: &mut Run, o: &Options) {
    let client = match connect(o).await {
        Ok(client) => client,
        Err(e) => return run.check("connect", false, json!({"error": e})),
    };
    let info = client.peer_info();
    let version = info.as_ref().map(|i| i.protocol_version.to_string());
    run.check(
        "connect",
        version.as_deref() == Some("2026-07-28"),
        json!({"protocolVersion": version,
               "server": info.as_ref().and_then(|i| i.server_info.as_ref()).map(|s| s.name.clone())}),
    );
    run.check(
        "server-tasks-extension",
        info.as_ref()
            .is_some_and(|i| i.capabilities.supports_tasks()),
        json!({"extensions": info.as_ref().and_then(|i| i.capabilities.extensions.as_ref())
                  .map(|e| e.keys().cloned().collect::<Vec<_>>())}),
    );
    let peer = client.peer().clone();
    match peer.list_all_tools().await {
        Ok(tools) => {
            let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
            let has = |n: &str| names.iter().any(|x| x == n);
            run.check(
                "tools-list",
                has("interop_confirm") && has("interop_confirm_later") && has("interop_sleep"),
                json!({"count": names.len(), "names": names}),
            );
        }
        Err(e) => run.check("tools-list", false, err(&e)),
    }
    let accept = Ask {
        scenario: "accept",
        tool: "interop_confirm_later",
        item: "widget",
        answer: json!({"action": "accept", "content": {"confirm": true}}),
        verdict: "confirmed",
    };
    task_with_input(run, &peer, accept).await;
    let decline = Ask {
        scenario: "decline",
        tool: "interop_confirm_later",
        item: "gadget",
        answer: json!({"action": "decline"}),
        verdict: "declined",
    };
    task_with_input(run, &peer, decline).await;
    mrtr_before_task(run, &peer).await;
    task_without_input(run, &peer).await;
    cancel_running(run, &peer).await;
    match peer
        .get_task(GetTaskParams::new("no-such-task-00000000"))
        .await
    {
        Ok(got) => run.check(
            "get-unknown-error",
            false,
            json!({"got": serde_json::to_value(&got).unwrap_or(Value::Null)}),
        ),
        Err(e) => run.check(
            "get-unknown-error",
            matches!(e, ServiceError::McpError(_)),
            err(&e),
        ),
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel()).await;
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "rmcp-tasks-client: {e}\nusage: rmcp-tasks-client --url URL [--token TOKEN] [--timeout SECONDS]"
            );
            return ExitCode::from(2);
        }
    };
    let mut run = Run {
        checks: Vec::new(),
        info: serde_json::Map::new(),
        started: Instant::now(),
    };
    if tokio::time::timeout(o.timeout, drive(&mut run, &o))
        .await
        .is_err()
    {
        let t = o.timeout.as_secs();
        run.check(
            "overall-timeout",
            false,
            json!(format!("run exceeded {t}s")),
        );
    }
    let s = run.summary(&o.url);
    println!("{s}");
    if s["ok"] == true {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
