//! The rmcp 3.11 peer of the issue 7 benchmark: the same two tools as our bench server
//! (`noop` answers the text "ok" at once; `sleep` waits `ms` milliseconds and answers
//! `slept <ms> ms; done_at_us=<unix µs>`), served by rmcp's `StreamableHttpService` at
//! `http://ADDR/mcp` with its default configuration (stateful sessions for protocol versions
//! before 2026-07-28, SSE answers), on axum over keep-alive HTTP/1.1 with `TCP_NODELAY` (as our
//! server sets it; without it every SSE answer waits ~40 ms for a delayed ACK).
//!
//! ```text
//! rmcp-bench-peer --listen 127.0.0.1:PORT [--ttl-ms MS]
//! ```
//!
//! `--ttl-ms` is the TTL of its tasks (default: rmcp's, `DEFAULT_TASK_TTL_MS` = 300 000 ms).
//! rmcp's `TaskManager` evicts a finished task one TTL after it finished, so a benchmark that
//! keeps tens of thousands of finished tasks for longer than 5 minutes sets it higher (ours
//! keep theirs for an hour by default).
//!
//! Both tools are plain tools. A client that declares the tasks extension (SEP-2663, the
//! "Modern" dialect rmcp 3.11 implements) gets them as task tools instead, on rmcp's
//! in-memory `TaskManager` (create, then `tasks/get` until terminal); rmcp 3.11 ignores the
//! 2025-11-25 `params.task`, so a Legacy client always gets the plain answer.
//!
//! It prints `listening on http://<address>/mcp` to stderr once it serves, and stops on
//! SIGTERM or Ctrl-C.

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::serve::ListenerExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock, CreateTaskResult,
    GetTaskParams, GetTaskResult, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_router};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The longest `sleep` accepted, in ms (as in our bench server).
const MAX_SLEEP_MS: u64 = 60_000;

/// The arguments of `sleep`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

/// The server: one per session (rmcp builds it from the factory), sharing one task manager.
#[derive(Clone)]
struct BenchPeer {
    tool_router: ToolRouter<BenchPeer>,
    tasks: TaskManager,
    /// The TTL of its tasks (`None`: rmcp's default).
    ttl_ms: Option<u64>,
}

#[tool_router]
impl BenchPeer {
    fn new(tasks: TaskManager, ttl_ms: Option<u64>) -> Self {
        Self {
            tool_router: Self::tool_router(),
            tasks,
            ttl_ms,
        }
    }

    /// Answers "ok" at once.
    #[tool(description = "Answers \"ok\" at once.")]
    async fn noop(&self) -> Result<CallToolResult, ErrorData> {
        Ok(noop_result())
    }

    /// Sleeps `ms` milliseconds.
    #[tool(description = "Sleeps `ms` milliseconds, then answers with its completion time.")]
    async fn sleep(&self, Parameters(SleepArgs { ms }): Parameters<SleepArgs>) -> Result<CallToolResult, ErrorData> {
        check_ms(ms)?;
        Ok(sleep_result(ms).await)
    }
}

fn noop_result() -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text("ok")])
}

async fn sleep_result(ms: u64) -> CallToolResult {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    let done_at_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros());
    CallToolResult::success(vec![ContentBlock::text(format!(
        "slept {ms} ms; done_at_us={done_at_us}"
    ))])
}

fn check_ms(ms: u64) -> Result<(), ErrorData> {
    if ms > MAX_SLEEP_MS {
        return Err(ErrorData::invalid_params(
            format!("ms must be at most {MAX_SLEEP_MS}"),
            None,
        ));
    }
    Ok(())
}

impl ServerHandler for BenchPeer {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let as_task = context.client_capabilities().is_some_and(|caps| caps.supports_tasks());
        if as_task && (request.name == "noop" || request.name == "sleep") {
            let sleep_ms = if request.name == "sleep" {
                let args: SleepArgs =
                    serde_json::from_value(serde_json::Value::Object(request.arguments.clone().unwrap_or_default()))
                        .map_err(|err| ErrorData::invalid_params(err.to_string(), None))?;
                check_ms(args.ms)?;
                Some(args.ms)
            } else {
                None
            };
            let options = match self.ttl_ms {
                Some(ttl_ms) => TaskOptions::new().with_ttl_ms(ttl_ms),
                None => TaskOptions::new(),
            };
            let task = self.tasks.spawn(options, move |ctx| {
                Box::pin(async move {
                    let work = async move {
                        match sleep_ms {
                            Some(ms) => sleep_result(ms).await,
                            None => noop_result(),
                        }
                    };
                    tokio::select! {
                        () = ctx.cancelled() => Err(TaskExit::Cancelled),
                        result = work => Ok(result),
                    }
                })
            });
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        self.tool_router
            .call(ToolCallContext::new(self, request, context))
            .await
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        Ok(rmcp::model::ListToolsResult::with_all_items(
            self.tool_router.list_all(),
        ))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tasks().build())
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut listen = String::from("127.0.0.1:0");
    let mut ttl_ms = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--listen", Some(value)) => listen = value,
            ("--ttl-ms", Some(value)) if value.parse::<u64>().is_ok() => ttl_ms = value.parse().ok(),
            _ => {
                eprintln!("usage: rmcp-bench-peer --listen ADDR [--ttl-ms MS]");
                return ExitCode::from(2);
            }
        }
    }
    let listener = match TcpListener::bind(&listen).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("rmcp-bench-peer: cannot listen on {listen}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let addr = listener
        .local_addr()
        .map_or_else(|_| listen.clone(), |addr| addr.to_string());
    let stop = CancellationToken::new();
    let tasks = TaskManager::new();
    let service: StreamableHttpService<BenchPeer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(BenchPeer::new(tasks.clone(), ttl_ms)),
        Default::default(),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    // As our server does: no Nagle delay between a response's head and its SSE body chunks.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    eprintln!("listening on http://{addr}/mcp");
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
            eprintln!("rmcp-bench-peer: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGTERM or Ctrl-C.
async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
