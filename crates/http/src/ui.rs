//! The web view `/ui`: a page for a person to see and steer their tasks, served from the
//! binary (hand-written HTML, CSS and JS in `ui/`, embedded with `include_str!`: no build
//! step, no CDN), and the small JSON API under `/ui/api/` it reads.
//!
//! Every API request goes through the same guard as `/mcp` (Host, Origin, bearer token:
//! [`guard`]) and through the engine, scoped to the principal: another principal's task is
//! answered exactly like an unknown id. The page itself carries no data and is behind the
//! Host and Origin checks only, so that it can ask for a token.
//!
//! - `GET /ui/api/tasks?status=&tool=&q=&before=&limit=`: a page newest first, the counts by
//!   status and the tools; `before` is the `next` of the previous page.
//! - `GET /ui/api/tasks/{id}`: the task with its arguments, outcome, input requests, status
//!   history, origin (era, client), and the live tail of its output and its last progress.
//! - `POST /ui/api/tasks/{id}/cancel`, `POST /ui/api/tasks/{id}/answer` (`key`, `action`,
//!   `content`: an elicitation answered from the page, checked against its schema).
//! - `GET /ui/api/events`: an SSE stream of the principal's task changes, progress and output.
//!
//! The live tail is kept here, in memory, from the engine's output feed
//! ([`Engine::subscribe_output`]): the last [`TAIL_BYTES`] of each of the last [`TAILS_KEPT`] tasks
//! that wrote output. A task not seen live here (run by another process, or before a
//! restart) shows the tail its event log keeps ([`Engine::output_tail`]).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use mcp_tasks_engine::{
    BrowseQuery, Change, Cursor, Engine, EngineError, HistoryEntry, InputKind, Outcome, Output, Principal, Progress, Status,
    TaskId, TaskRecord, TaskState, Timestamp,
};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::App;
use super::guard::{guard, guard_host};

/// The most tasks one page may ask for.
pub(crate) const MAX_LIMIT: u32 = 200;
/// The page size when none is asked for.
const DEFAULT_LIMIT: u32 = 50;
/// The longest text filter, tool name or answer key accepted, in bytes.
const MAX_FILTER: usize = 200;
/// The largest answer body, in bytes.
const MAX_ANSWER: usize = 256 * 1024;
/// How much of a task's output the live tail keeps.
pub(crate) const TAIL_BYTES: usize = 16 * 1024;
/// How many of the last events of a task's log are read for its output, when it was not
/// seen live here.
const LOGGED_EVENTS_READ: u32 = 200;
/// How many tasks' tails are kept (the oldest is dropped first).
const TAILS_KEPT: usize = 512;
/// The most history entries a task's page shows.
const MAX_HISTORY: usize = 500;
/// Interval of the keep-alive comments on the event stream.
const KEEPALIVE: Duration = Duration::from_secs(15);

const PAGE: &str = include_str!("ui/index.html");
const SCRIPT: &str = include_str!("ui/ui.js");
const STYLE: &str = include_str!("ui/ui.css");

/// The web view's live state: the output tails and last progress of running tasks.
pub(super) struct Ui {
    live: Mutex<Live>,
}

#[derive(Default)]
struct Live {
    tasks: HashMap<TaskId, Tail>,
    /// Tasks in the order their tail was started, for dropping the oldest.
    order: VecDeque<TaskId>,
}

#[derive(Default)]
struct Tail {
    output: String,
    progress: Option<Progress>,
}

impl Ui {
    /// The live state, kept from `engine`'s change feed by a Tokio task that ends with the
    /// last handle (called inside a runtime; outside one nothing is kept).
    pub(super) fn start(engine: &Engine) -> Arc<Ui> {
        let ui = Arc::new(Ui { live: Mutex::new(Live::default()) });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            // Progress only: woken for every task change, it would drop all but these.
            let (mut changes, mut outputs) = (engine.subscribe_progress(), engine.subscribe_output());
            let weak = Arc::downgrade(&ui);
            runtime.spawn(async move {
                loop {
                    tokio::select! {
                        change = changes.recv() => {
                            let Some(ui) = Weak::upgrade(&weak) else { return };
                            match change {
                                Ok(Change::Progress { id, progress, .. }) => ui.live().progress(id, progress),
                                Ok(Change::Task(_)) => {}
                                Err(RecvError::Lagged(missed)) => tracing::debug!(missed, "the web view's progress fell behind"),
                                Err(RecvError::Closed) => return,
                            }
                        }
                        output = outputs.recv() => {
                            let Some(ui) = Weak::upgrade(&weak) else { return };
                            match output {
                                Ok(Output { id, text, .. }) => ui.live().output(id, &text),
                                Err(RecvError::Lagged(missed)) => tracing::debug!(missed, "the web view's output tail fell behind"),
                                Err(RecvError::Closed) => return,
                            }
                        }
                    }
                }
            });
        }
        ui
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Live {
    fn entry(&mut self, id: TaskId) -> &mut Tail {
        if !self.tasks.contains_key(&id) {
            if self.order.len() >= TAILS_KEPT
                && let Some(oldest) = self.order.pop_front()
            {
                self.tasks.remove(&oldest);
            }
            self.order.push_back(id.clone());
        }
        self.tasks.entry(id).or_default()
    }

    fn output(&mut self, id: TaskId, text: &str) {
        let tail = &mut self.entry(id).output;
        tail.push_str(text);
        keep_tail(tail);
    }

    fn progress(&mut self, id: TaskId, progress: Progress) {
        self.entry(id).progress = Some(progress);
    }
}

/// The routes of `/ui` and `/ui/api/…`.
pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/ui", get(page))
        .route("/ui/", get(page))
        .route("/ui/ui.js", get(script))
        .route("/ui/ui.css", get(style))
        .route("/ui/api/tasks", get(list))
        .route("/ui/api/tasks/{id}", get(detail))
        .route("/ui/api/tasks/{id}/cancel", post(cancel))
        .route("/ui/api/tasks/{id}/answer", post(answer))
        .route("/ui/api/events", get(events))
}

/// An asset, after the Host and Origin checks (no token: the page asks for it).
fn asset(app: &App, headers: &HeaderMap, media: &'static str, body: &'static str) -> Response {
    if let Err(rejection) = guard_host(&app.options, headers) {
        return *rejection;
    }
    let headers = [
        (header::CONTENT_TYPE, media),
        (header::CACHE_CONTROL, "no-cache"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
        ),
    ];
    (headers, body).into_response()
}

async fn page(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    asset(&app, &headers, "text/html; charset=utf-8", PAGE)
}

async fn script(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    asset(&app, &headers, "text/javascript; charset=utf-8", SCRIPT)
}

async fn style(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    asset(&app, &headers, "text/css; charset=utf-8", STYLE)
}

/// A 4xx or 5xx answer of the API: `{"error": message}`.
fn problem(status: StatusCode, message: impl Into<String>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json!({"error": message.into()}).to_string()).into_response()
}

fn ok(value: &Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-store")], value.to_string()).into_response()
}

/// An engine failure as the API answers it; an unknown id and another's look the same.
fn failure(err: &EngineError) -> Response {
    match err {
        EngineError::NotFound(id) => problem(StatusCode::NOT_FOUND, format!("no task {id}")),
        EngineError::Refused { from, .. } => {
            problem(StatusCode::CONFLICT, format!("the task is {from} already; it cannot be cancelled"))
        }
        other => {
            tracing::error!(error = %other, "the web view's request failed");
            problem(StatusCode::INTERNAL_SERVER_ERROR, "the task store failed; see the server's log")
        }
    }
}

/// The principal of an API request, after the checks of `/mcp`.
async fn principal(app: &App, headers: &HeaderMap) -> Result<Principal, Response> {
    // The rejections of `/mcp` as they are (their text says what was wrong).
    guard(&app.options, headers).await.map_err(|rejection| *rejection)
}

/// `GET /ui/api/tasks`.
async fn list(State(app): State<Arc<App>>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Response {
    let owner = match principal(&app, &headers).await {
        Ok(owner) => owner,
        Err(rejection) => return rejection,
    };
    let query = match parse_list_query(&owner, raw.as_deref().unwrap_or("")) {
        Ok(query) => query,
        Err(message) => return problem(StatusCode::BAD_REQUEST, message),
    };
    let engine = app.server.engine();
    // One more than shown: whether there is a next page.
    let page = BrowseQuery { limit: query.limit + 1, ..query.clone() };
    let tasks = match engine.browse(&page).await {
        Ok(tasks) => tasks,
        Err(err) => return failure(&err),
    };
    let counts = match engine.status_counts(&owner).await {
        Ok(counts) => counts,
        Err(err) => return failure(&err),
    };
    let more = tasks.len() > query.limit as usize;
    let shown = &tasks[..tasks.len().min(query.limit as usize)];
    let next = shown.last().filter(|_| more).map(|last| format!("{}.{}", last.created_at.0, last.id));
    let now = now_ms();
    let counts: Map<String, Value> = counts.into_iter().map(|(status, n)| (status.as_str().to_owned(), json!(n))).collect();
    ok(&json!({
        "principal": owner.as_str(),
        "counts": counts,
        "tools": app.server.tools().names(),
        "tasks": shown.iter().map(|task| summary(task, now)).collect::<Vec<_>>(),
        "next": next,
    }))
}

/// The filters of a list request, each checked; the error says which one is wrong.
fn parse_list_query(owner: &Principal, raw: &str) -> Result<BrowseQuery, String> {
    let mut query = BrowseQuery { owner: owner.clone(), status: None, tool: None, text: None, before: None, limit: DEFAULT_LIMIT };
    for pair in raw.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(value).ok_or_else(|| format!("parameter {name:?} is not valid percent-encoded UTF-8"))?;
        if value.is_empty() {
            continue;
        }
        match name {
            "status" => {
                query.status = Some(Status::parse(&value).ok_or_else(|| {
                    format!("status {value:?} is not one of working, input_required, completed, failed, cancelled")
                })?);
            }
            "tool" => query.tool = Some(bounded("tool", value)?),
            "q" => query.text = Some(bounded("q", value)?),
            "before" => query.before = Some(parse_cursor(&value)?),
            "limit" => {
                query.limit = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| format!("limit {value:?} is not a whole number from 1 to {MAX_LIMIT}"))?;
            }
            other => {
                return Err(format!("unknown parameter {other:?}; the parameters are status, tool, q, before and limit"));
            }
        }
    }
    Ok(query)
}

fn bounded(name: &str, value: String) -> Result<String, String> {
    if value.len() > MAX_FILTER {
        return Err(format!("{name} is longer than {MAX_FILTER} bytes"));
    }
    Ok(value)
}

/// A cursor as `next` gives it: `<created_at ms>.<task id>`.
fn parse_cursor(value: &str) -> Result<Cursor, String> {
    let bad = || format!("before {value:?} is not a cursor of this server (pass the `next` of the previous page)");
    let (at, id) = value.split_once('.').ok_or_else(bad)?;
    let created_at = at.parse::<i64>().map_err(|_| bad())?;
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(bad());
    }
    Ok(Cursor { created_at: Timestamp(created_at), id: TaskId::from(id) })
}

/// Percent-decoding of a query value (`+` is a space, as forms send it).
fn decode(value: &str) -> Option<String> {
    let spaced = value.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced).decode_utf8().ok().map(|text| text.into_owned())
}

/// `GET /ui/api/tasks/{id}`.
async fn detail(State(app): State<Arc<App>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let owner = match principal(&app, &headers).await {
        Ok(owner) => owner,
        Err(rejection) => return rejection,
    };
    let id = TaskId::from(id);
    let inspected = match app.server.engine().inspect(&owner, &id).await {
        Ok(inspected) => inspected,
        Err(err) => return failure(&err),
    };
    let record = &inspected.record;
    let mut task = summary(record, now_ms());
    let live = match app.ui.as_ref().map(|ui| ui.live()) {
        Some(live) => live.tasks.get(&id).map(|tail| (tail.output.clone(), tail.progress.clone())),
        None => None,
    };
    // Not seen live here (it ran on another process, or before a restart): its log's tail.
    let (output, progress) = match live {
        Some((output, progress)) => (Some(output), progress),
        None => match app.server.engine().output_tail(&owner, &id, LOGGED_EVENTS_READ).await {
            Ok((mut output, progress)) => {
                keep_tail(&mut output);
                ((!output.is_empty()).then_some(output), progress)
            }
            Err(err) => {
                tracing::debug!(task = %id, error = %err, "could not read the task's log for its output");
                (None, None)
            }
        },
    };
    let fields = [
        ("arguments", record.arguments.clone()),
        ("ttlMs", json!(record.ttl_ms)),
        ("pollIntervalMs", json!(record.poll_interval_ms)),
        ("inputRequests", input_requests(&record.state)),
        (
            "history",
            shown_history(&inspected.history)
                .iter()
                .map(|entry| {
                    json!({"version": entry.version.0, "at": entry.at.0, "status": entry.status.as_str(), "message": entry.message})
                })
                .collect(),
        ),
        ("era", json!(inspected.origin.as_ref().map(|origin| origin.era.as_str()))),
        ("extension", extension_of(inspected.origin.as_ref().map(|origin| origin.era.as_str()))),
        (
            "client",
            match &inspected.origin {
                Some(origin) if origin.client_name.is_some() => {
                    json!({"name": origin.client_name, "version": origin.client_version})
                }
                _ => Value::Null,
            },
        ),
        ("output", json!(output)),
        (
            "progress",
            progress.map_or(Value::Null, |p| json!({"progress": p.progress, "total": p.total, "message": p.message})),
        ),
    ];
    if let Value::Object(map) = &mut task {
        map.extend(fields.into_iter().map(|(name, value)| (name.to_owned(), value)));
        match &record.state {
            TaskState::Completed { result } => {
                map.insert("result".into(), result.clone());
            }
            TaskState::Failed { outcome } => {
                let (name, value) = match outcome {
                    Outcome::Result(result) => ("result", result.clone()),
                    Outcome::Error(error) => ("error", json!({"code": error.code, "message": error.message, "data": error.data})),
                    Outcome::Failure(work) => ("error", json!({"message": work.to_string()})),
                };
                map.insert(name.into(), value);
            }
            _ => {}
        }
    }
    ok(&task)
}

/// The history the page shows: the first entry and the newest [`MAX_HISTORY`] - 1 (a task
/// that reports progress all day has an entry per message; the store keeps them all).
fn shown_history(history: &[HistoryEntry]) -> Vec<&HistoryEntry> {
    if history.len() <= MAX_HISTORY {
        return history.iter().collect();
    }
    history[..1].iter().chain(&history[history.len() - (MAX_HISTORY - 1)..]).collect()
}

/// Cuts `tail` to its last [`TAIL_BYTES`], on a character boundary.
fn keep_tail(tail: &mut String) {
    if tail.len() > TAIL_BYTES {
        let mut cut = tail.len() - TAIL_BYTES;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail.drain(..cut);
    }
}

/// The questions a task waits on, with their keys.
fn input_requests(state: &TaskState) -> Value {
    let TaskState::InputRequired { requests } = state else { return json!([]) };
    requests.iter().map(|(key, request)| json!({"key": key, "kind": request.kind.as_str(), "params": request.params})).collect()
}

/// What the list shows of a task.
fn summary(task: &TaskRecord, now: i64) -> Value {
    let end = if task.status().is_terminal() { task.updated_at.0 } else { now };
    // The status an operator is told: a tool error is `failed` whatever era made the task;
    // what the task's own era says on the wire, when that differs (2026-07-28: `completed`
    // with `isError`), is beside it.
    let status = task.state.operator_status();
    let mut summary = json!({
        "id": task.id.as_str(),
        "tool": task.tool,
        "status": status.as_str(),
        "statusMessage": task.status_message,
        "createdAt": task.created_at.0,
        "updatedAt": task.updated_at.0,
        "durationMs": end.saturating_sub(task.created_at.0).max(0),
        "attempt": task.attempt,
    });
    if status != task.status() {
        summary["wireStatus"] = json!(task.status().as_str());
    }
    summary
}

/// The tasks extension a task of `era` was made under, and its revision (SEP-3392): a
/// 2026-07-28 task exists only for a request that declared the extension in a revision this
/// build knows, and the only one it knows is the initial one (no `revision`, revision_05), so
/// the era records it; a 2025-11-25 task is of the core Tasks of its era.
fn extension_of(era: Option<&str>) -> Value {
    match era {
        Some("2026-07-28") => json!({"name": "io.modelcontextprotocol/tasks", "revision": "initial"}),
        _ => Value::Null,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
}

/// `POST /ui/api/tasks/{id}/cancel`: cancelled now, its work stopped (its process group
/// ended), as 2025-11-25 `tasks/cancel` does.
async fn cancel(State(app): State<Arc<App>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let owner = match principal(&app, &headers).await {
        Ok(owner) => owner,
        Err(rejection) => return rejection,
    };
    if !json_body(&headers) {
        return problem(StatusCode::UNSUPPORTED_MEDIA_TYPE, "send the cancel as application/json (the body may be {})");
    }
    match app.server.engine().cancel(&owner, &TaskId::from(id)).await {
        Ok(record) => ok(&summary(&record, now_ms())),
        Err(err) => failure(&err),
    }
}

/// Whether the request's body is declared JSON. The API's writes ask for it: a page of
/// another site can send a form or plain text without asking first, never JSON (the
/// browser's preflight, which this server does not answer, comes first), on top of the
/// Origin check.
fn json_body(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("application/json"))
}

/// `POST /ui/api/tasks/{id}/answer` with `{"key", "action", "content"}`: the answer to an
/// elicitation of the task, given as the client would (an `ElicitResult`).
async fn answer(State(app): State<Arc<App>>, headers: HeaderMap, Path(id): Path<String>, body: Body) -> Response {
    let owner = match principal(&app, &headers).await {
        Ok(owner) => owner,
        Err(rejection) => return rejection,
    };
    if !json_body(&headers) {
        return problem(StatusCode::UNSUPPORTED_MEDIA_TYPE, "send the answer as application/json");
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ANSWER).await else {
        return problem(StatusCode::PAYLOAD_TOO_LARGE, format!("the answer is larger than {MAX_ANSWER} bytes"));
    };
    let id = TaskId::from(id);
    let engine = app.server.engine();
    let record = match engine.get(&owner, &id).await {
        Ok(record) => record,
        Err(err) => return failure(&err),
    };
    let (key, response) = match parse_answer(&bytes, &record) {
        Ok(answer) => answer,
        Err((status, message)) => return problem(status, message),
    };
    match engine.answer(&owner, &id, &key, Ok(response)).await {
        Ok(true) => ok(&json!({"answered": key})),
        Ok(false) => problem(StatusCode::CONFLICT, format!("question {key:?} is no longer waiting for an answer")),
        Err(err) => failure(&err),
    }
}

/// The key and the `ElicitResult` of an answer to `task`, checked: the question exists,
/// is an elicitation, the action is one of the three, and accepted content fits the
/// question's `requestedSchema`.
fn parse_answer(bytes: &Bytes, task: &TaskRecord) -> Result<(String, Value), (StatusCode, String)> {
    let bad = |message: String| (StatusCode::BAD_REQUEST, message);
    let body: Value = serde_json::from_slice(bytes).map_err(|err| bad(format!("the answer is not JSON: {err}")))?;
    let Value::Object(body) = body else { return Err(bad("the answer must be a JSON object".into())) };
    let key = match body.get("key") {
        Some(Value::String(key)) if !key.is_empty() && key.len() <= MAX_FILTER => key.clone(),
        _ => return Err(bad(format!("\"key\" must be the key of a question (a string of 1 to {MAX_FILTER} bytes)"))),
    };
    let TaskState::InputRequired { requests } = &task.state else {
        return Err((StatusCode::CONFLICT, format!("the task is {}: it waits for no answer", task.status())));
    };
    let Some(request) = requests.get(&key) else {
        return Err((StatusCode::CONFLICT, format!("question {key:?} is not waiting for an answer")));
    };
    if request.kind != InputKind::Elicitation {
        return Err(bad(format!("question {key:?} asks for {}; only elicitations are answered here", request.kind)));
    }
    let action = match body.get("action").and_then(Value::as_str) {
        Some(action @ ("accept" | "decline" | "cancel")) => action,
        _ => return Err(bad("\"action\" must be \"accept\", \"decline\" or \"cancel\"".into())),
    };
    if action != "accept" {
        return Ok((key, json!({"action": action})));
    }
    let content = body.get("content").cloned().unwrap_or_else(|| json!({}));
    if !content.is_object() {
        return Err(bad("\"content\" must be an object of the fields asked for".into()));
    }
    if let Some(schema) = request.params.get("requestedSchema") {
        let validator = jsonschema::validator_for(schema)
            .map_err(|err| (StatusCode::CONFLICT, format!("the question's schema cannot be checked: {err}")))?;
        if let Some(error) = validator.iter_errors(&content).next() {
            return Err(bad(format!("the answer does not fit the question: {error} (at {})", error.instance_path())));
        }
    }
    Ok((key, json!({"action": "accept", "content": content})))
}

/// `GET /ui/api/events`: the principal's changes as SSE (`task`, `progress`, `output`, and
/// `lagged` when some were missed: the page reads again), until the client goes or the
/// server stops.
async fn events(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let owner = match principal(&app, &headers).await {
        Ok(owner) => owner,
        Err(rejection) => return rejection,
    };
    let feeds = (app.server.engine().subscribe(), app.server.engine().subscribe_output());
    let stop = app.stop.clone();
    let mut keepalive = tokio::time::interval(KEEPALIVE);
    keepalive.reset();
    let first = Some(Bytes::from_static(b": mcp-tasks web view\n\n"));
    let stream = futures_util::stream::unfold((feeds, stop, keepalive, first, owner), |state| async move {
        let ((mut changes, mut outputs), stop, mut keepalive, first, owner) = state;
        if let Some(first) = first {
            return Some((Ok::<_, Infallible>(first), ((changes, outputs), stop, keepalive, None, owner)));
        }
        loop {
            let frame = tokio::select! {
                () = stop.cancelled() => return None,
                _ = keepalive.tick() => Some(": keep-alive\n\n".to_owned()),
                change = changes.recv() => match change {
                    Ok(change) => event_of(&change, &owner),
                    Err(RecvError::Lagged(_)) => Some("event: lagged\ndata: {}\n\n".to_owned()),
                    Err(RecvError::Closed) => return None,
                },
                output = outputs.recv() => match output {
                    Ok(output) if output.owner == owner => {
                        Some(format!("event: output\ndata: {}\n\n", json!({"id": output.id.as_str(), "text": &*output.text})))
                    }
                    // Output missed is output missed: the tail is read again with the task.
                    Ok(_) | Err(RecvError::Lagged(_)) => None,
                    Err(RecvError::Closed) => return None,
                },
            };
            if let Some(frame) = frame {
                return Some((Ok(Bytes::from(frame)), ((changes, outputs), stop, keepalive, None, owner)));
            }
        }
    });
    let headers = [
        (header::CONTENT_TYPE, "text/event-stream"),
        (header::CACHE_CONTROL, "no-cache"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ];
    (StatusCode::OK, headers, Body::from_stream(stream)).into_response()
}

/// The SSE frame of `change` if it concerns `owner`'s tasks.
fn event_of(change: &Change, owner: &Principal) -> Option<String> {
    let (name, data) = match change {
        Change::Task(record) if &record.owner == owner => ("task", summary(record, now_ms())),
        Change::Progress { id, owner: of, progress } if of == owner => (
            "progress",
            json!({"id": id.as_str(), "progress": progress.progress, "total": progress.total, "message": progress.message}),
        ),
        _ => return None,
    };
    Some(format!("event: {name}\ndata: {data}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes_on_a_char_boundary() {
        let mut live = Live::default();
        let id = TaskId::from("t");
        live.output(id.clone(), &"é".repeat(TAIL_BYTES));
        live.output(id.clone(), "end\n");
        let tail = &live.tasks[&id].output;
        assert!(tail.len() <= TAIL_BYTES && tail.ends_with("end\n"), "{}", tail.len());
    }

    #[test]
    fn only_the_oldest_tails_are_dropped() {
        let mut live = Live::default();
        for n in 0..=TAILS_KEPT {
            live.output(TaskId::from(n.to_string()), "x");
        }
        assert_eq!(live.tasks.len(), TAILS_KEPT);
        assert!(!live.tasks.contains_key(&TaskId::from("0")));
        assert!(live.tasks.contains_key(&TaskId::from(TAILS_KEPT.to_string())));
    }
}
