//! Interop peer: the official Rust SDK, rmcp 3.11.0, as a 2026-07-28 server with the tasks
//! extension (`io.modelcontextprotocol/tasks`, SEP-2663) advertised, for testing a Modern client
//! (ours: `mcp-tasks call --era modern`).
//!
//! ```text
//! rmcp-tasks-server [--listen 127.0.0.1:0] [--serve-legacy]
//! ```
//!
//! It prints `listening on http://ADDR/mcp` on stdout once bound, serves rmcp's
//! `StreamableHttpService` at `/mcp` (requests of 2026-07-28 are served statelessly) and stops on
//! SIGTERM or Ctrl-C. Its supported versions are 2026-07-28 only (`supported_protocol_versions`),
//! so that a client that falls back to a 2025-era `initialize` cannot pass for a Modern one;
//! `--serve-legacy` restores rmcp's default (every known version; sessions for the older ones).
//!
//! Tools. The task tools become tasks through rmcp's `TaskManager` (`poll_interval_ms` 200)
//! only when the request's `_meta` client capabilities declare the tasks extension; otherwise
//! they answer `-32021` (missing required client capability), as rmcp does for `tasks/*`.
//!
//! * `rmcp_done {delay_ms?=300}`: a task that completes with the text `rmcp_done: finished`;
//! * `rmcp_fails {delay_ms?=300}`: a task that ends `failed`, its inlined `error` a JSON-RPC
//!   error -32603 `rmcp_fails: deliberate failure` (`TaskExit::Error`);
//! * `rmcp_is_error {delay_ms?=300}`: a task that ends `completed` with a `CallToolResult`
//!   with `isError: true`, text `rmcp_is_error: deliberate tool error`;
//! * `rmcp_slow {seconds?=60}`: a task that sleeps, then completes `rmcp_slow: slept N s`; on
//!   `tasks/cancel` it stops at once and ends `cancelled`;
//! * `rmcp_asks {item?="widget"}`: a task that asks through `TaskContext::request_input` under
//!   the key `confirm` (an `elicitation/create` form, message `Confirm ITEM?`, a boolean
//!   `confirm`), then completes with `rmcp_asks ITEM: <the inputResponse as JSON>`;
//! * `rmcp_plain {text?="hello"}`: a plain tool, answered inline `rmcp_plain: TEXT`.

use std::borrow::Cow;
use std::process::ExitCode;
use std::time::Duration;

use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, GetTaskParams, GetTaskResult, Implementation, InputRequest,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskFuture, TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The suggested polling interval of every task, in ms.
const POLL_INTERVAL_MS: u64 = 200;
/// The longest `rmcp_slow` accepted, in seconds.
const MAX_SLOW_SECONDS: u64 = 600;

/// One handler per session (rmcp builds it from the factory), all sharing one task manager.
#[derive(Clone)]
struct Peer {
    tasks: TaskManager,
    /// Whether 2025-era `initialize` is served too (`--serve-legacy`).
    serve_legacy: bool,
}

impl Peer {
    fn tools() -> Vec<Tool> {
        let delay = json!({"delay_ms": {"type": "integer", "minimum": 0, "description": "Work time before the end, ms (default 300)."}});
        vec![
            tool("rmcp_done", "A task that completes with the text `rmcp_done: finished`.", delay.clone()),
            tool("rmcp_fails", "A task that ends failed (JSON-RPC error -32603 inlined).", delay.clone()),
            tool("rmcp_is_error", "A task that completes with a CallToolResult with isError: true.", delay),
            tool(
                "rmcp_slow",
                "A task that sleeps `seconds` (default 60), then completes; tasks/cancel ends it cancelled.",
                json!({"seconds": {"type": "integer", "minimum": 0}}),
            ),
            tool(
                "rmcp_asks",
                "A task that asks `Confirm ITEM?` (input key `confirm`, boolean), then completes with the answer.",
                json!({"item": {"type": "string"}}),
            ),
            tool("rmcp_plain", "A plain tool: answers `rmcp_plain: TEXT` inline.", json!({"text": {"type": "string"}})),
        ]
    }

    /// Spawns `request`'s task, or `None` if `request` names no task tool.
    fn spawn(&self, request: &CallToolRequestParams) -> Result<Option<rmcp::model::Task>, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let delay = Duration::from_millis(uint_arg(&args, "delay_ms")?.unwrap_or(300));
        let make: Box<dyn FnOnce(rmcp::task_manager::TaskContext) -> TaskFuture + Send> = match request.name.as_ref() {
            "rmcp_done" => Box::new(move |ctx| {
                Box::pin(async move {
                    work(&ctx, delay).await?;
                    Ok(text_result("rmcp_done: finished"))
                })
            }),
            "rmcp_fails" => Box::new(move |ctx| {
                Box::pin(async move {
                    work(&ctx, delay).await?;
                    Err(TaskExit::Error(ErrorData::internal_error("rmcp_fails: deliberate failure", None)))
                })
            }),
            "rmcp_is_error" => Box::new(move |ctx| {
                Box::pin(async move {
                    work(&ctx, delay).await?;
                    Ok(CallToolResult::error(vec![ContentBlock::text("rmcp_is_error: deliberate tool error")]))
                })
            }),
            "rmcp_slow" => {
                let seconds = uint_arg(&args, "seconds")?.unwrap_or(60);
                if seconds > MAX_SLOW_SECONDS {
                    return Err(ErrorData::invalid_params(format!("seconds must be at most {MAX_SLOW_SECONDS}"), None));
                }
                Box::new(move |ctx| {
                    Box::pin(async move {
                        work(&ctx, Duration::from_secs(seconds)).await?;
                        Ok(text_result(format!("rmcp_slow: slept {seconds} s")))
                    })
                })
            }
            "rmcp_asks" => {
                let item = str_arg(&args, "item")?.unwrap_or("widget").to_owned();
                let question = confirm_request(&item)?;
                Box::new(move |ctx| {
                    Box::pin(async move {
                        let answer = ctx.request_input("confirm", question).await?;
                        Ok(text_result(format!("rmcp_asks {item}: {answer}")))
                    })
                })
            }
            _ => return Ok(None),
        };
        let options = TaskOptions::new().with_poll_interval_ms(POLL_INTERVAL_MS);
        Ok(Some(self.tasks.spawn(options, make)))
    }
}

impl ServerHandler for Peer {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "rmcp_plain" {
            let args = request.arguments.clone().unwrap_or_default();
            let text = str_arg(&args, "text")?.unwrap_or("hello");
            return Ok(text_result(format!("rmcp_plain: {text}")).into());
        }
        if !Self::tools().iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(format!("unknown tool {}", request.name), None));
        }
        if !context.client_capabilities().is_some_and(|caps| caps.supports_tasks()) {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        match self.spawn(&request)? {
            Some(task) => Ok(CallToolResponse::Task(CreateTaskResult::new(task))),
            None => Err(ErrorData::invalid_params(format!("unknown tool {}", request.name), None)),
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Self::tools()))
    }

    async fn get_task(&self, request: GetTaskParams, _context: RequestContext<RoleServer>) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(&self, request: UpdateTaskParams, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.tasks.update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(&self, request: CancelTaskParams, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.serve_legacy {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        } else {
            Cow::Owned(vec![ProtocolVersion::V_2026_07_28])
        }
    }

    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tasks().build());
        info.server_info = Implementation::new("rmcp-tasks-server", "0.0.0");
        info
    }
}

fn tool(name: &'static str, description: &'static str, properties: Value) -> Tool {
    let schema = json!({"type": "object", "properties": properties});
    let Value::Object(schema) = schema else { unreachable!("json!({{..}}) is an object") };
    Tool::new(name, description, schema)
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

/// Sleeps `time`, or ends the task `cancelled` as soon as `tasks/cancel` arrives.
async fn work(ctx: &rmcp::task_manager::TaskContext, time: Duration) -> Result<(), TaskExit> {
    tokio::select! {
        () = ctx.cancelled() => Err(TaskExit::Cancelled),
        () = tokio::time::sleep(time) => Ok(()),
    }
}

/// The `elicitation/create` form that `rmcp_asks` puts under the key `confirm`.
fn confirm_request(item: &str) -> Result<InputRequest, ErrorData> {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": format!("Confirm {item}?"),
            "requestedSchema": {
                "type": "object",
                "properties": {"confirm": {"type": "boolean", "description": "Confirm the item"}},
                "required": ["confirm"]
            }
        }
    }))
    .map_err(|err| ErrorData::internal_error(format!("building the input request: {err}"), None))
}

fn uint_arg(args: &JsonObject, key: &str) -> Result<Option<u64>, ErrorData> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ErrorData::invalid_params(format!("{key} must be a non-negative integer"), None)),
    }
}

fn str_arg<'a>(args: &'a JsonObject, key: &str) -> Result<Option<&'a str>, ErrorData> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_str()
            .map(Some)
            .ok_or_else(|| ErrorData::invalid_params(format!("{key} must be a string"), None)),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut listen = String::from("127.0.0.1:0");
    let mut serve_legacy = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" if let Some(value) = args.next() => listen = value,
            "--serve-legacy" => serve_legacy = true,
            _ => {
                eprintln!("usage: rmcp-tasks-server [--listen ADDR] [--serve-legacy]");
                return ExitCode::from(2);
            }
        }
    }
    let listener = match TcpListener::bind(&listen).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("rmcp-tasks-server: cannot listen on {listen}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let addr = listener.local_addr().map_or_else(|_| listen.clone(), |addr| addr.to_string());
    let stop = CancellationToken::new();
    let tasks = TaskManager::new();
    let service: StreamableHttpService<Peer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(Peer { tasks: tasks.clone(), serve_legacy }),
        Default::default(),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    // println! flushes at the newline only on a terminal; the runners read a pipe or a file.
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on http://{addr}/mcp");
        let _ = out.flush();
    }
    let shutdown = {
        let stop = stop.clone();
        async move {
            stop_signal().await;
            stop.cancel();
        }
    };
    match axum::serve(listener, router).with_graceful_shutdown(shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("rmcp-tasks-server: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGTERM or Ctrl-C.
async fn stop_signal() {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
