//! Long calls that survive a host's timeout, for clients that speak no tasks (either era):
//!
//! - **Heartbeats.** A plain call whose request carried a progress token gets a progress
//!   notification at least every [`ServerBuilder::heartbeat`](crate::ServerBuilder::heartbeat)
//!   while it runs, which many hosts take as a reason to reset their request timeout.
//! - **Handoff.** A plain call of an `optional` tool still running after the sync wait
//!   ([`ServerBuilder::sync_wait`](crate::ServerBuilder::sync_wait), or the tool's own) is
//!   answered with an ordinary `CallToolResult` that says the job goes on as task `ID` and
//!   how to collect it, while the work runs on, adopted by that task
//!   ([`Engine::adopt`](mcp_tasks_engine::Engine::adopt)): durable from then on, recovered
//!   after a crash by its tool's restart policy, cancellable, bound to the caller.
//! - **Helper tools** `task_status`, `task_result` and `task_cancel` (argument `task_id`;
//!   names from [`TaskTools`]), with which any agent in any host collects the job later.
//!   Listed only to clients that speak no tasks; bound to the principal like every task
//!   method (another's task reads exactly like an unknown one).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_engine::{
    ClientLink, EngineError, ErrorObject, InputKind, NewTask, Outcome, Progress, TaskId,
    TaskRecord, TaskState, WorkError,
};
use mcp_tasks_protocol::jsonrpc::RpcError;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::context::RequestContext;
use crate::errors::{rpc_error, work_error};
use crate::ops;
use crate::registry::{Entry, TaskMode, ToolSpec};

/// The names of the helper tools for clients without tasks (defaults `task_status`,
/// `task_result`, `task_cancel`; `mcp-tasks serve` maps `[server.task_tools]` onto them). A
/// tool of the server with one of these names hides the helper of that name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskTools {
    /// Reads a task's status.
    pub status: String,
    /// Waits a while for a task's result and returns it.
    pub result: String,
    /// Cancels a task.
    pub cancel: String,
}

impl Default for TaskTools {
    fn default() -> TaskTools {
        TaskTools { status: "task_status".to_owned(), result: "task_result".to_owned(), cancel: "task_cancel".to_owned() }
    }
}

/// What the server does for long plain calls.
#[derive(Clone, Debug)]
pub(crate) struct LongCalls {
    /// How often a plain call with a progress token hears from the server at least; zero:
    /// never.
    pub(crate) heartbeat: Duration,
    /// How long a plain call of an optional tool runs before it is handed off to a task;
    /// zero: never (and no helper tools are listed).
    pub(crate) sync_wait: Duration,
    /// The helper tools' names.
    pub(crate) tools: TaskTools,
}

/// How much a heartbeat moves the progress on when the work reported some of its own: too
/// little to change what a host shows, enough to keep the values strictly increasing (as
/// the progress rule of both eras demands).
const HEARTBEAT_STEP: f64 = 1e-3;

/// The link of a plain call that may be handed off: the request's link until then, the
/// task's after. Progress passing through it is kept strictly increasing, so that the
/// heartbeats it sends in between never break the progress rule.
struct SwitchLink {
    request: Arc<dyn ClientLink>,
    task: OnceLock<Arc<dyn ClientLink>>,
    sent: Mutex<Sent>,
}

/// The last progress sent to the requestor.
struct Sent {
    progress: f64,
    total: Option<f64>,
    at: Instant,
    /// Whether the work reported progress itself (heartbeats then step by
    /// [`HEARTBEAT_STEP`], else by 1).
    by_work: bool,
    /// Whether anything was sent yet (the first value passes as it is).
    any: bool,
}

impl SwitchLink {
    fn new(request: Arc<dyn ClientLink>) -> SwitchLink {
        let sent = Sent {
            progress: 0.0,
            total: None,
            at: Instant::now(),
            by_work: false,
            any: false,
        };
        SwitchLink {
            request,
            task: OnceLock::new(),
            sent: Mutex::new(sent),
        }
    }

    fn sent(&self) -> std::sync::MutexGuard<'_, Sent> {
        self.sent.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends a heartbeat if nothing went to the requestor for `every`, and the call is not
    /// handed off.
    fn heartbeat(&self, every: Duration, running_for: Duration) {
        if self.task.get().is_some() {
            return;
        }
        let mut sent = self.sent();
        // A tenth of slack: a tick that comes a hair early must not skip a whole period.
        if sent.at.elapsed() < every.mul_f64(0.9) {
            return;
        }
        sent.progress += if sent.by_work { HEARTBEAT_STEP } else { 1.0 };
        sent.at = Instant::now();
        sent.any = true;
        let message = format!(
            "still running ({} so far)",
            humantime::format_duration(whole_seconds(running_for))
        );
        self.request.progress(Progress {
            progress: sent.progress,
            total: sent.total,
            message: Some(message),
        });
    }
}

#[async_trait]
impl ClientLink for SwitchLink {
    fn progress(&self, progress: Progress) {
        if let Some(task) = self.task.get() {
            return task.progress(progress);
        }
        let mut sent = self.sent();
        // The work's own values, raised just above the last heartbeat if they fell behind it.
        let value = if !sent.any || progress.progress > sent.progress {
            progress.progress
        } else {
            sent.progress + HEARTBEAT_STEP
        };
        *sent = Sent {
            progress: value,
            total: progress.total,
            at: Instant::now(),
            by_work: true,
            any: true,
        };
        self.request.progress(Progress {
            progress: value,
            ..progress
        });
    }

    fn notify(&self, method: &str, params: Value) {
        match self.task.get() {
            Some(task) => task.notify(method, params),
            None => self.request.notify(method, params),
        }
    }

    async fn request(&self, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        match self.task.get() {
            Some(task) => task.request(kind, params).await,
            None => self.request.request(kind, params).await,
        }
    }

    async fn request_named(
        &self,
        key: &str,
        kind: InputKind,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        match self.task.get() {
            Some(task) => task.request_named(key, kind, params).await,
            None => self.request.request_named(key, kind, params).await,
        }
    }
}

/// A plain call, as the era's codec hands it over.
pub(crate) struct PlainCall {
    /// The tool.
    pub(crate) tool: Arc<Entry>,
    /// Its arguments (already checked).
    pub(crate) arguments: Value,
    /// Where the work's messages go while the request is open.
    pub(crate) link: Arc<dyn ClientLink>,
    /// Whether the request carried a progress token (heartbeats go only there).
    pub(crate) progress_token: bool,
    /// The era's rule for a task made by a handoff: a result with `isError` fails it.
    pub(crate) error_result_fails: bool,
}

/// What a long plain call may get: heartbeats, a handoff, or both.
pub(crate) struct Long {
    sync_wait: Duration,
    heartbeat: Duration,
    tool: String,
    arguments: Value,
    error_result_fails: bool,
}

impl Long {
    /// What a plain call of `tool` with `arguments` gets: a handoff after the sync wait
    /// (for an `optional` tool), heartbeats (if the request carried a progress token);
    /// `None` if neither.
    pub(crate) fn of(
        ctx: &RequestContext,
        tool: &Entry,
        arguments: &Value,
        progress_token: bool,
        error_result_fails: bool,
    ) -> Option<Long> {
        let long = &ctx.server().inner.long_calls;
        let sync_wait = sync_wait_of(ctx, tool);
        let heartbeat = if progress_token {
            tool.def.heartbeat.unwrap_or(long.heartbeat)
        } else {
            Duration::ZERO
        };
        (!sync_wait.is_zero() || !heartbeat.is_zero()).then(|| Long {
            sync_wait,
            heartbeat,
            tool: tool.def.spec.name.clone(),
            arguments: arguments.clone(),
            error_result_fails,
        })
    }
}

/// A long plain call under way: its switchable link, and its work's outcome once it ends.
pub(crate) struct LongRun {
    long: Long,
    switch: Arc<SwitchLink>,
    outcome: watch::Receiver<Option<Outcome>>,
    /// Where the work's outcome goes.
    ended: Option<watch::Sender<Option<Outcome>>>,
    /// The work's own stop; the task that adopts the work fires it on cancel.
    cancel: CancellationToken,
}

impl LongRun {
    /// A run of `long` whose messages go to `request` until it is handed off; the work must
    /// use [`LongRun::link`] and stop on [`LongRun::cancel`], and its outcome goes to
    /// [`LongRun::ended`].
    pub(crate) fn new(
        long: Long,
        request: Arc<dyn ClientLink>,
        cancel: CancellationToken,
    ) -> LongRun {
        let (ended, outcome) = watch::channel(None);
        LongRun {
            long,
            switch: Arc::new(SwitchLink::new(request)),
            outcome,
            ended: Some(ended),
            cancel,
        }
    }

    /// The link the work must use.
    pub(crate) fn link(&self) -> Arc<dyn ClientLink> {
        Arc::clone(&self.switch) as Arc<dyn ClientLink>
    }

    /// Where the work's outcome must go when it ends (taken once).
    pub(crate) fn ended(&mut self) -> Option<watch::Sender<Option<Outcome>>> {
        self.ended.take()
    }

    /// When a request that starts waiting now hands the work off; `None`: never.
    pub(crate) fn handoff_at(&self, now: Instant) -> Option<Instant> {
        (!self.long.sync_wait.is_zero()).then(|| now + self.long.sync_wait)
    }

    /// Heartbeats for a request that starts waiting now; `None`: none.
    pub(crate) fn beats(&self, now: Instant) -> Option<tokio::time::Interval> {
        (!self.long.heartbeat.is_zero()).then(|| {
            let mut beats =
                tokio::time::interval_at(now + self.long.heartbeat, self.long.heartbeat);
            beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            beats
        })
    }

    /// Sends a heartbeat if nothing else went to the requestor lately.
    pub(crate) fn beat(&self, running_for: Duration) {
        self.switch.heartbeat(self.long.heartbeat, running_for);
    }

    /// Hands the work off to a new task of the requestor: the task adopts the running work,
    /// its messages go to the task from now on, and the answer for the call is returned,
    /// with the link of the task. `None`: no task could be made (logged); the call goes on
    /// as the plain call it was.
    pub(crate) async fn hand_off(
        &self,
        ctx: &RequestContext,
    ) -> Option<(Value, Arc<dyn ClientLink>)> {
        let new = NewTask {
            trace: None,
            origin: Some(ops::call::origin_of(ctx)),
            owner: ctx.principal.clone(),
            tool: self.long.tool.clone(),
            arguments: self.long.arguments.clone(),
            requested_ttl_ms: None,
            error_result_fails: self.long.error_result_fails,
            input_kinds: ops::call::input_kinds(ctx),
        };
        let mut outcome = self.outcome.clone();
        let work = async move { ended_with(&mut outcome).await };
        match ctx
            .server()
            .engine()
            .adopt(new, self.cancel.clone(), work)
            .await
        {
            Ok((record, link)) => {
                let link: Arc<dyn ClientLink> = Arc::new(link);
                let _ = self.switch.task.set(Arc::clone(&link));
                ctx.server().metrics().task_created(&record, ctx.era);
                let after = self.long.sync_wait;
                tracing::info!(task = %record.id, tool = %record.tool, ?after, "plain call handed off to a task");
                Some((
                    handoff_answer(&record, after, &ctx.server().inner.long_calls.tools),
                    link,
                ))
            }
            Err(err) => {
                tracing::warn!(tool = %self.long.tool, error = %err, "could not hand a long call off to a task");
                None
            }
        }
    }
}

/// Runs a plain call for a client: its outcome as the call's answer; or, for an optional
/// tool still running after the sync wait, the handoff answer while the work goes on as a
/// task. Heartbeats go out meanwhile if the request carried a progress token. With neither
/// configured, the call runs exactly as a plain call does.
///
/// # Errors
/// The call's JSON-RPC error (the work's, or a limit of the engine).
pub(crate) async fn call(ctx: &RequestContext, call: PlainCall) -> Result<Value, RpcError> {
    let name = call.tool.def.spec.name.clone();
    let Some(long) = Long::of(
        ctx,
        &call.tool,
        &call.arguments,
        call.progress_token,
        call.error_result_fails,
    ) else {
        let outcome =
            ops::call::call_plain(ctx, &name, call.arguments, call.link, ctx.cancel.clone()).await;
        return answer(outcome);
    };
    let mut run = LongRun::new(long, call.link, CancellationToken::new());
    {
        let (ctx, link, cancel, ended) = (ctx.clone(), run.link(), run.cancel.clone(), run.ended());
        tokio::spawn(async move {
            let outcome =
                match ops::call::call_plain(&ctx, &name, call.arguments, link, cancel).await {
                    Ok(outcome) => outcome,
                    // Refused before the work began (a limit, an unknown tool): said as is.
                    Err(err) => Outcome::Error(error_object(rpc_error(&err))),
                };
            if let Some(ended) = ended {
                let _ = ended.send(Some(outcome));
            }
        });
    }
    let started = Instant::now();
    let mut handoff_at = run.handoff_at(started);
    let mut beats = run.beats(started);
    let mut outcome = run.outcome.clone();
    loop {
        tokio::select! {
            biased;
            done = ended_with(&mut outcome) => return answer(Ok(done)),
            () = ctx.cancel.cancelled(), if !run.cancel.is_cancelled() => run.cancel.cancel(),
            () = sleep_until(handoff_at), if handoff_at.is_some() => {
                handoff_at = None;
                if let Some((answer, _)) = run.hand_off(ctx).await {
                    return Ok(answer);
                }
            }
            () = tick(&mut beats), if beats.is_some() => run.beat(started.elapsed()),
        }
    }
}

/// The next heartbeat, if there are any.
pub(crate) async fn tick(beats: &mut Option<tokio::time::Interval>) {
    match beats {
        Some(beats) => {
            beats.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The work's outcome once it ends (a crash of the task running it: the handler's).
pub(crate) async fn ended_with(outcome: &mut watch::Receiver<Option<Outcome>>) -> Outcome {
    let ended = outcome
        .wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|done| done.clone());
    ended.unwrap_or(Outcome::Failure(WorkError::HandlerCrashed))
}

/// Sleeps until `at`; forever if `None`.
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A plain call's outcome as its answer (in either era).
pub(crate) fn answer(outcome: Result<Outcome, EngineError>) -> Result<Value, RpcError> {
    match outcome {
        Ok(Outcome::Result(result)) => Ok(result),
        Ok(Outcome::Error(error)) => Err(RpcError {
            code: error.code,
            message: error.message,
            data: error.data,
        }),
        Ok(Outcome::Failure(failure)) => Err(work_error(&failure)),
        Err(err) => Err(rpc_error(&err)),
    }
}

fn error_object(error: RpcError) -> ErrorObject {
    ErrorObject {
        code: error.code,
        message: error.message,
        data: error.data,
    }
}

fn whole_seconds(duration: Duration) -> Duration {
    Duration::from_secs(duration.as_secs())
}

/// The answer to a call handed off: for the model to follow (what happened, the id, which
/// tool to call next and when), with the same facts as structured content.
fn handoff_answer(record: &TaskRecord, after: Duration, tools: &TaskTools) -> Value {
    let poll = Duration::from_millis(record.poll_interval_ms.unwrap_or(1_000).max(1_000));
    let text = format!(
        "The tool {tool} is still running after {after}, so it goes on in the background as task {id}; nothing \
         was lost. Do not call {tool} again for this. To get its result, call the tool {result} with \
         {{\"task_id\": \"{id}\"}}: it waits a while and returns the result once the job is done (if it says the job \
         is still running, call it again). Call {status} with the same task_id to see how it is doing, or {cancel} \
         to stop it. The result is kept for {ttl}.",
        tool = record.tool,
        after = humantime::format_duration(whole_seconds(after)),
        id = record.id,
        result = tools.result,
        status = tools.status,
        cancel = tools.cancel,
        ttl = humantime::format_duration(Duration::from_millis(record.ttl_ms.unwrap_or(0))),
    );
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {
            "taskId": record.id.as_str(),
            "status": record.status().to_string(),
            "resultTool": tools.result,
            "statusTool": tools.status,
            "cancelTool": tools.cancel,
            "pollIntervalMs": duration_ms(poll),
        },
    })
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// How `tool` is listed to this request's client. To a client that speaks no tasks, a tool
/// whose plain calls may be handed off lists no `outputSchema`: the handoff answer (a text
/// naming the task) cannot match the tool's schema, and a client that validates structured
/// results against it (as the TypeScript SDK does) would refuse the answer. Its results keep
/// their `structuredContent`; `task_result` returns them as they are. Clients that speak tasks
/// see the tool as defined.
pub(crate) fn listed_spec<'a>(ctx: &RequestContext, tool: &'a Entry) -> std::borrow::Cow<'a, ToolSpec> {
    let spec = &tool.def.spec;
    if spec.output_schema.is_some() && !sync_wait_of(ctx, tool).is_zero() && !ctx.client.tasks {
        std::borrow::Cow::Owned(ToolSpec { output_schema: None, ..spec.clone() })
    } else {
        std::borrow::Cow::Borrowed(spec)
    }
}

/// How long a plain call of `tool` runs before it is handed off: the tool's own sync wait or
/// the server's, for an `optional` tool; zero (never) for the others.
fn sync_wait_of(ctx: &RequestContext, tool: &Entry) -> Duration {
    match tool.def.spec.task_mode {
        TaskMode::Optional => tool.def.sync_wait.unwrap_or(ctx.server().inner.long_calls.sync_wait),
        TaskMode::Forbidden | TaskMode::Required => Duration::ZERO,
    }
}

/// Whether the helper tools are served to this request's client: handoffs are on and the
/// client speaks no tasks.
pub(crate) fn helpers_listed(ctx: &RequestContext) -> bool {
    !ctx.server().inner.long_calls.sync_wait.is_zero() && !ctx.client.tasks
}

/// The helper tools' specs, for `tools/list` (those not hidden by a tool of the server).
pub(crate) fn helper_specs(ctx: &RequestContext) -> Vec<ToolSpec> {
    let tools = &ctx.server().inner.long_calls.tools;
    let registry = ctx.server().tools();
    let spec = |name: &str, description: String| ToolSpec {
        name: name.to_owned(),
        title: None,
        description: Some(description),
        input_schema: json!({
            "type": "object",
            "properties": {"task_id": {"type": "string", "description": "The task id a handed-off call answered with"}},
            "required": ["task_id"],
            "additionalProperties": false,
        }),
        output_schema: None,
        annotations: None,
        task_mode: TaskMode::Forbidden,
    };
    [
        spec(
            &tools.status,
            "The status of a long-running job that a tool call handed off as a task: working, waiting for input, \
             completed, failed or cancelled, with its latest status message."
                .to_owned(),
        ),
        spec(
            &tools.result,
            "The result of a long-running job that a tool call handed off as a task. Waits a while for the job to \
             end; if it is still running, says so, and you call this again."
                .to_owned(),
        ),
        spec(&tools.cancel, "Cancels a long-running job that a tool call handed off as a task.".to_owned()),
    ]
    .into_iter()
    .filter(|spec| registry.get(&spec.name).is_none())
    .collect()
}

/// Which helper tool `name` is, if it is one and no tool of the server hides it.
fn helper(ctx: &RequestContext, name: &str) -> Option<Helper> {
    let long = &ctx.server().inner.long_calls;
    if long.sync_wait.is_zero() || ctx.server().tools().get(name).is_some() {
        return None;
    }
    [
        (&long.tools.status, Helper::Status),
        (&long.tools.result, Helper::Result),
        (&long.tools.cancel, Helper::Cancel),
    ]
    .into_iter()
    .find_map(|(helper_name, helper)| (helper_name == name).then_some(helper))
}

#[derive(Clone, Copy)]
enum Helper {
    Status,
    Result,
    Cancel,
}

/// Serves a call of a helper tool, if `name` is one: `None` otherwise. Its answer is always
/// a `CallToolResult` (an unknown task, or one still running, is said in its text, for the
/// model to read); bad arguments are `-32602`.
pub(crate) async fn call_helper(
    ctx: &RequestContext,
    name: &str,
    arguments: &Value,
) -> Option<Result<Value, RpcError>> {
    let helper = helper(ctx, name)?;
    let Some(id) = arguments
        .get("task_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
    else {
        return Some(Err(RpcError::invalid_params(format!(
            "Invalid arguments for tool {name}: task_id (a string, the task id a handed-off call answered with) is required"
        ))));
    };
    let id = TaskId::from(id);
    let record = match helper {
        Helper::Status => ops::tasks::get(ctx, &id).await,
        Helper::Result => wait_a_while(ctx, &id).await,
        Helper::Cancel => ops::tasks::request_cancel(ctx, &id).await.map(Arc::new),
    };
    Some(Ok(match record {
        Ok(record) => match helper {
            Helper::Status => status_answer(&record, &ctx.server().inner.long_calls.tools),
            Helper::Result => result_answer(&record, &ctx.server().inner.long_calls.tools),
            Helper::Cancel => cancel_answer(&record),
        },
        Err(EngineError::NotFound(_)) => tool_error(format!(
            "There is no task {id} for you: it never existed, its result expired, or it belongs to someone else. \
             Check the task_id against the one the handed-off call answered with."
        )),
        Err(err) => tool_error(format!(
            "Could not read task {id}: {err}. Try again in a moment."
        )),
    }))
}

/// The task once it ends, or as it stands after the sync wait.
async fn wait_a_while(ctx: &RequestContext, id: &TaskId) -> Result<Arc<TaskRecord>, EngineError> {
    let feed = ops::tasks::changes(ctx, id);
    let record = ops::tasks::get(ctx, id).await?;
    if record.status().is_terminal() {
        return Ok(record);
    }
    let wait = ctx.server().inner.long_calls.sync_wait;
    let ended = tokio::time::timeout(wait, async {
        loop {
            let record = ops::tasks::next_change(ctx, &feed, id).await?;
            if record.status().is_terminal() || matches!(record.state, TaskState::InputRequired { .. }) {
                return Ok(record);
            }
        }
    })
    .await;
    match ended {
        Ok(record) => record,
        Err(_) => ops::tasks::get(ctx, id).await,
    }
}

fn text_result(text: String, is_error: bool, structured: Value) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error, "structuredContent": structured})
}

fn tool_error(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

fn facts(record: &TaskRecord) -> Value {
    json!({
        "taskId": record.id.as_str(),
        "tool": record.tool,
        "status": record.status().to_string(),
        "statusMessage": record.status_message,
        "createdAt": record.created_at.0,
        "lastUpdatedAt": record.updated_at.0,
    })
}

fn status_line(record: &TaskRecord) -> String {
    let mut line = format!("Task {} (tool {}) is {}", record.id, record.tool, record.status());
    if !record.status().is_terminal() {
        // The wall clock: task timestamps are milliseconds since the Unix epoch.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |now| now.as_millis());
        let age = u64::try_from(now.saturating_sub(u128::try_from(record.created_at.0).unwrap_or(0))).unwrap_or(0);
        let age = humantime::format_duration(whole_seconds(Duration::from_millis(age)));
        line.push_str(&format!(", for {age} so far"));
    } else {
        let took = u64::try_from(record.updated_at.0 - record.created_at.0).unwrap_or(0);
        line.push_str(&format!(" (after {})", humantime::format_duration(whole_seconds(Duration::from_millis(took)))));
    }
    if let Some(message) = &record.status_message {
        line.push_str(&format!(". Status message: {message}"));
    }
    line.push('.');
    line
}

fn waiting_for_input(record: &TaskRecord) -> Option<String> {
    let TaskState::InputRequired { requests } = &record.state else {
        return None;
    };
    let questions: Vec<String> = requests
        .iter()
        .map(
            |(key, request)| match request.params.get("message").and_then(Value::as_str) {
                Some(message) => format!("{key}: {message}"),
                None => format!("{key} ({})", request.kind),
            },
        )
        .collect();
    Some(format!(
        " It waits for an answer to: {}. This client cannot answer it through MCP; a person can answer it with a \
         tasks-capable client of the same account (for example `mcp-tasks tasks wait {}`).",
        questions.join("; "),
        record.id
    ))
}

fn status_answer(record: &TaskRecord, tools: &TaskTools) -> Value {
    let mut text = status_line(record);
    if let Some(waiting) = waiting_for_input(record) {
        text.push_str(&waiting);
    } else if record.status().is_terminal() {
        text.push_str(&format!(
            " Call {} with this task_id to get its result.",
            tools.result
        ));
    } else {
        text.push_str(&format!(
            " Call {} with this task_id to wait for its result.",
            tools.result
        ));
    }
    text_result(text, false, facts(record))
}

/// A finished task's own result (as the call would have answered), or what keeps it.
fn result_answer(record: &TaskRecord, tools: &TaskTools) -> Value {
    match &record.state {
        TaskState::Completed { result }
        | TaskState::Failed {
            outcome: Outcome::Result(result),
        } => result.clone(),
        TaskState::Failed {
            outcome: Outcome::Error(error),
        } => text_result(
            format!("Task {} failed: {}", record.id, error.message),
            true,
            facts(record),
        ),
        TaskState::Failed {
            outcome: Outcome::Failure(failure),
        } => text_result(
            format!("Task {} failed: {failure}", record.id),
            true,
            facts(record),
        ),
        TaskState::Cancelled => text_result(
            format!(
                "Task {} was cancelled before it finished; it has no result.",
                record.id
            ),
            true,
            facts(record),
        ),
        TaskState::Working | TaskState::InputRequired { .. } => {
            let mut text = status_line(record);
            match waiting_for_input(record) {
                Some(waiting) => text.push_str(&waiting),
                None => text.push_str(&format!(
                    " It is still running: call {} again to keep waiting.",
                    tools.result
                )),
            }
            text_result(text, false, facts(record))
        }
    }
}

fn cancel_answer(record: &TaskRecord) -> Value {
    let text = if record.status().is_terminal() {
        format!(
            "Task {} had already ended ({}); nothing was cancelled.",
            record.id,
            record.status()
        )
    } else {
        format!("Cancelling task {}: its work was asked to stop.", record.id)
    };
    text_result(text, false, facts(record))
}
