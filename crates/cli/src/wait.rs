//! Waiting for a task in the foreground: [`TaskHandle::wait`], with the display fed by the
//! server's notifications (`notifications/progress` under the task's progress token,
//! `notifications/tasks/status`) and by `tasks/get` polls; Ctrl-C asks whether to cancel
//! the task or detach from it (on a terminal), or cancels it (without one).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use mcp_tasks_client::protocol::CallToolResult;
use mcp_tasks_client::{Client, ClientError, ServerNotification, TaskHandle, TaskStatus};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::args::{AnswerArgs, ConnectArgs, LedgerArgs, RemoteArgs};
use crate::ledger::Tracker;
use crate::reconnect::{Reconnecting, server_lost};
use crate::remote::{self, CANCELLED, DETACHED, Display, FAILED, Progress, report};
use crate::terminal::{self, Read};

/// The fastest the display polls `tasks/get`, whatever `pollInterval` says.
const MIN_POLL: Duration = Duration::from_millis(250);

/// How the waiting is done and what it may say.
pub(crate) struct Waiting<'a> {
    pub(crate) display: &'a Arc<Display>,
    pub(crate) json: bool,
    /// Where learned statuses go.
    pub(crate) tracker: Option<&'a Tracker>,
    /// The server's notifications, subscribed to before the task was created.
    pub(crate) notifications: broadcast::Receiver<ServerNotification>,
    /// The command that resumes the wait after a detach.
    pub(crate) resume: String,
    /// The server is a child process (`--cmd`): it stops when this command ends.
    pub(crate) stdio: bool,
    /// How to reach the server again when it goes away during the wait (a restart): the
    /// same wait then goes on, on a new connection.
    pub(crate) again: Option<Again<'a>>,
    /// `--follow`: the lines the task's command prints are shown on stderr as they come.
    pub(crate) lines: bool,
}

/// How to connect to the task's server again: where it is, and how to answer its questions.
pub(crate) struct Again<'a> {
    pub(crate) server: &'a RemoteArgs,
    pub(crate) answer: Option<&'a AnswerArgs>,
}

/// The handle the wait goes on with: replaced by one on a new connection when the server
/// came back after going away; the clients of those connections, kept until the end.
#[derive(Clone)]
struct Slot(Arc<Mutex<(TaskHandle, Vec<Client>)>>);

impl Slot {
    fn handle(&self) -> TaskHandle {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).0.clone()
    }

    fn replace(&self, handle: TaskHandle, client: Client) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        slot.0 = handle;
        slot.1.push(client);
    }

    /// The clients of the connections made again, to be closed.
    fn clients(&self) -> Vec<Client> {
        std::mem::take(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner).1)
    }
}

/// What Ctrl-C led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    Cancel,
    Detach,
}

/// Waits for the task to end, prints its result, and returns the exit status; the status
/// learned at the end goes to the ledger.
pub(crate) async fn drive(handle: &TaskHandle, waiting: Waiting<'_>) -> anyhow::Result<u8> {
    let Waiting {
        display,
        json,
        tracker,
        notifications,
        resume,
        stdio,
        again,
        lines,
    } = waiting;
    let mut interrupts = terminal::listen_for_ctrl_c().context("listening for Ctrl-C")?;
    let interactive = terminal::interactive();
    announce(handle, interactive);
    display.start(handle.id());
    let slot = Slot(Arc::new(Mutex::new((handle.clone(), Vec::new()))));
    let watchers = Watchers::start(&slot, display, notifications, lines);
    let wait = wait_through_restarts(&slot, again.as_ref(), display, tracker);
    tokio::pin!(wait);
    let choice = tokio::select! {
        outcome = &mut wait => Err(outcome),
        changed = interrupts.changed() => {
            if changed.is_err() {
                // No Ctrl-C can come any more: just wait.
                Err(wait.await)
            } else if !interactive {
                Ok(Choice::Cancel)
            } else {
                let (id, prompt_display) = (handle.id().to_owned(), Arc::clone(display));
                let mut asked = tokio::task::spawn_blocking(move || {
                    prompt_display.suspend(|| ask_cancel_or_detach(&id, stdio))
                });
                tokio::select! {
                    outcome = &mut wait => {
                        // The wait ended while the question was open: it is moot.
                        terminal::abandon_prompts();
                        let _ = asked.await;
                        Err(outcome)
                    }
                    asked = &mut asked => Ok(asked.unwrap_or(Choice::Cancel)),
                }
            }
        }
    };
    // A question still open (an elicitation form) is moot now; its prompt must let go of
    // the display before it is cleared.
    terminal::abandon_prompts();
    watchers.stop(choice.is_err()).await;
    display.finish();
    let handle = &slot.handle();
    let ended = ended(handle, choice, tracker, &resume, json, stdio).await;
    if let Some(again) = &again {
        for client in slot.clients() {
            remote::close(client, &again.server.connect).await;
        }
    }
    ended
}

/// Says on stderr what the task is doing as the wait begins.
fn announce(handle: &TaskHandle, interactive: bool) {
    let hint = if interactive { "Ctrl-C to cancel or detach" } else { "Ctrl-C cancels it" };
    match handle.last_seen() {
        Some(task) if task.status.is_terminal() => eprintln!("mcp-tasks: task {} has ended ({})", handle.id(), task.status),
        Some(task) if task.status == TaskStatus::InputRequired => {
            eprintln!("mcp-tasks: task {} is running, waiting for input; {hint}", handle.id());
        }
        _ => eprintln!("mcp-tasks: task {} is running; {hint}", handle.id()),
    }
}

/// What keeps the display up to date while the wait goes on: the follower of the task's
/// status and notifications, and (2026-07-28) the reader of its event stream, which brings
/// its progress with a total (a bar) and, with `--follow`, its command's lines (a server that
/// does not serve the stream shows neither).
struct Watchers {
    follower: Option<tokio::task::JoinHandle<()>>,
    events: Option<tokio::task::JoinHandle<()>>,
    lines: bool,
}

impl Watchers {
    fn start(slot: &Slot, display: &Arc<Display>, notifications: broadcast::Receiver<ServerNotification>, lines: bool) -> Watchers {
        let follower = display.enabled().then(|| tokio::spawn(follow(slot.clone(), Arc::clone(display), notifications)));
        let modern = slot.handle().era() == mcp_tasks_client::Era::Modern;
        let events = (modern && (display.enabled() || lines)).then(|| tokio::spawn(events(slot.clone(), Arc::clone(display), lines)));
        if lines && !modern {
            eprintln!("mcp-tasks: --follow reads the task's event stream, which MCP 2025-11-25 does not have: its lines are not shown");
        }
        Watchers { follower, events, lines }
    }

    /// Stops them; when the task `ended`, its last lines are let through first (the stream
    /// ends after them), for up to 2 s.
    async fn stop(self, ended: bool) {
        if let Some(follower) = self.follower {
            follower.abort();
        }
        let Some(events) = self.events else { return };
        if ended && self.lines {
            let abort = events.abort_handle();
            if tokio::time::timeout(Duration::from_secs(2), events).await.is_err() {
                abort.abort();
            }
        } else {
            events.abort();
        }
    }
}

/// What the wait came to: the result printed, the question left open, the detach or the
/// cancel; the status learned goes to the ledger.
async fn ended(
    handle: &TaskHandle,
    choice: Result<Choice, Result<CallToolResult, ClientError>>,
    tracker: Option<&Tracker>,
    resume: &str,
    json: bool,
    stdio: bool,
) -> anyhow::Result<u8> {
    match choice {
        Err(outcome) => {
            if let Some(tracker) = tracker
                && let Some(status) = learned(handle, &outcome).await
            {
                tracker.note(handle.id(), status).await;
                if let Ok(result) = &outcome {
                    tracker.keep(handle.id(), result).await;
                }
            }
            if let Err(ClientError::InputUnanswered { method, message }) = outcome {
                return Ok(unanswered(handle, &method, &message, resume, json));
            }
            if let Err(error) = &outcome
                && server_lost(error)
            {
                eprintln!("mcp-tasks: task {} may still be running on its server; resume the wait with: {resume}", handle.id());
            }
            report(outcome, handle.id(), json, handle.era())
        }
        Ok(Choice::Detach) => Ok(detach(handle, resume, stdio)),
        Ok(Choice::Cancel) => cancel(handle, tracker, json).await,
    }
}

/// A question of the task (2026-07-28 `inputRequests`) that this run could not answer: the
/// era has no way to send the server an error for it, so it stays open, to be answered by a
/// later `tasks wait` (or the task cancelled). Exit status 1, as when (in 2025-11-25) the
/// server gets the error and the tool fails.
fn unanswered(handle: &TaskHandle, method: &str, message: &str, resume: &str, json: bool) -> u8 {
    let id = handle.id();
    if json {
        let unanswered = serde_json::json!({"method": method, "message": message});
        println!(
            "{}",
            serde_json::json!({"taskId": id, "status": "input_required", "unanswered": unanswered, "era": handle.era().revision()})
        );
    }
    eprintln!("mcp-tasks: task {id} asks {method}, and this run could not answer: {message}");
    eprintln!(
        "mcp-tasks: MCP 2026-07-28 has no way to send the server an error for a question, so it stays open: answer \
         it with: {resume} {}; or cancel the task: mcp-tasks tasks cancel {id}",
        answering(method)
    );
    FAILED
}

/// The option that answers the server's requests of `method`.
pub(crate) fn answering(method: &str) -> &'static str {
    match method {
        "sampling/createMessage" => "--sampling-cmd CMD",
        "elicitation/create" => "--answer JSON (or at a terminal)",
        _ => "a client that answers it",
    }
}

/// Leaves the task running (or, over `--cmd`, to the next server on its store) and says
/// how to resume the wait.
fn detach(handle: &TaskHandle, resume: &str, stdio: bool) -> u8 {
    if stdio {
        eprintln!(
            "mcp-tasks: detached from task {}; the --cmd server stops with mcp-tasks, so the task is \
             interrupted now and the next server on its store resumes or fails it (the tool's \
             on_restart); resume with: {resume}",
            handle.id()
        );
    } else {
        eprintln!(
            "mcp-tasks: detached from task {} (it keeps running); resume with: {resume}",
            handle.id()
        );
    }
    DETACHED
}

/// Cancels the task after a Ctrl-C, notes its status, and prints it.
async fn cancel(handle: &TaskHandle, tracker: Option<&Tracker>, json: bool) -> anyhow::Result<u8> {
    eprintln!("mcp-tasks: interrupted: cancelling task {}", handle.id());
    let task = handle.cancel().await.with_context(|| {
        format!(
            "cancelling task {} (it may still run: mcp-tasks tasks cancel {})",
            handle.id(),
            handle.id()
        )
    })?;
    if let Some(tracker) = tracker {
        tracker.note(handle.id(), task.status).await;
    }
    crate::remote::print_task(&task, json, handle.era());
    Ok(CANCELLED)
}

/// Asks on the terminal what Ctrl-C is for; a second Ctrl-C (or the end of input) cancels.
fn ask_cancel_or_detach(id: &str, stdio: bool) -> Choice {
    let since = terminal::mark();
    eprintln!();
    eprintln!("mcp-tasks: task {id} is still running.");
    if stdio {
        eprintln!(
            "  (its server was started with --cmd and stops when mcp-tasks ends: a detached task is \
             interrupted, and resumed or failed per the tool's on_restart when you resume)"
        );
    }
    loop {
        eprint!("cancel the task or detach? [c]ancel/[d]etach ");
        match terminal::read_line(since) {
            Read::Line(line) => match line.trim().to_ascii_lowercase().as_str() {
                "c" | "cancel" => return Choice::Cancel,
                "d" | "detach" => return Choice::Detach,
                _ => {}
            },
            Read::Eof | Read::Interrupted => {
                eprintln!();
                return Choice::Cancel;
            }
        }
    }
}

/// The command that waits for task `id` again: `mcp-tasks tasks wait ID` when the ledger
/// has it (with `--ledger` if one was given), else with the server's `--url` or `--cmd`.
/// Tokens are never printed: `--token TOKEN` stands for the one given.
pub(crate) fn resume_command(
    id: &str,
    connect: &ConnectArgs,
    ledger: &LedgerArgs,
    in_ledger: bool,
) -> String {
    let quote = |word: &str| {
        shlex::try_quote(word).map_or_else(|_| word.to_owned(), |quoted| quoted.into_owned())
    };
    let mut command = format!("mcp-tasks tasks wait {}", quote(id));
    if in_ledger {
        if let Some(path) = &ledger.ledger {
            command.push_str(&format!(" --ledger {}", quote(&path.display().to_string())));
        }
    } else if let Some(cmd) = &connect.cmd {
        command.push_str(&format!(" --cmd {}", quote(cmd)));
    } else if let Some(url) = &connect.url {
        command.push_str(&format!(" --url {}", quote(url)));
    }
    if connect.token.is_some() {
        command.push_str(" --token TOKEN");
    }
    command
}

/// The task's status after a wait: what the server says now, else what the outcome means.
async fn learned(
    handle: &TaskHandle,
    outcome: &Result<mcp_tasks_client::protocol::CallToolResult, ClientError>,
) -> Option<TaskStatus> {
    if let Some(task) = handle.last_seen().filter(|task| task.status.is_terminal()) {
        return Some(task.status);
    }
    match outcome {
        Ok(result) => Some(match handle.status().await {
            Ok(task) if task.status.is_terminal() => task.status,
            _ if result.is_error == Some(true) => TaskStatus::Failed,
            _ => TaskStatus::Completed,
        }),
        Err(ClientError::TaskCancelled { .. }) => Some(TaskStatus::Cancelled),
        Err(ClientError::TaskFailed { .. }) => Some(TaskStatus::Failed),
        Err(_) => handle.last_seen().map(|task| task.status),
    }
}

/// Keeps the display up to date: the task's progress and status from the server's
/// notifications as they come, and its status from `tasks/get` at its `pollInterval`.
async fn follow(
    slot: Slot,
    display: Arc<Display>,
    mut notifications: broadcast::Receiver<ServerNotification>,
) {
    let handle = slot.handle();
    let token = handle.progress_token().map(str::to_owned);
    let mut next_poll = Instant::now();
    let mut listening = true;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(next_poll) => {
                let pause = match slot.handle().status().await {
                    Ok(task) => {
                        display.show(&task);
                        task.poll_interval_ms.map_or(Duration::from_secs(1), Duration::from_millis)
                    }
                    Err(_) => Duration::from_secs(1),
                };
                next_poll = Instant::now() + pause.max(MIN_POLL);
            }
            received = notifications.recv(), if listening => match received {
                Ok(notification) => shown(&notification, &handle, token.as_deref(), &display),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => listening = false,
            },
        }
    }
}

/// Shows a notification about the task (others are ignored).
fn shown(
    notification: &ServerNotification,
    handle: &TaskHandle,
    token: Option<&str>,
    display: &Display,
) {
    match notification.method.as_str() {
        "notifications/progress"
            if token.is_some() && notification.progress_token().as_deref() == token =>
        {
            let params = &notification.params;
            let Some(progress) = params.get("progress").and_then(Value::as_f64) else {
                return;
            };
            display.progress(Progress {
                progress,
                total: params.get("total").and_then(Value::as_f64),
                message: params
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
        "notifications/tasks/status" if notification.task_id().as_deref() == Some(handle.id()) => {
            if let Some(task) = notification.task_status() {
                display.show(&task);
            }
        }
        _ => {}
    }
}

/// [`TaskHandle::wait`], gone on with on a new connection when the server goes away (a
/// restart) and `again` says how to reach it: tried again with backoff for a bounded time,
/// saying so on stderr; then the last failure is returned.
async fn wait_through_restarts(
    slot: &Slot,
    again: Option<&Again<'_>>,
    display: &Arc<Display>,
    tracker: Option<&Tracker>,
) -> Result<CallToolResult, ClientError> {
    let mut reconnecting = Reconnecting::default();
    let mut since_found = Instant::now();
    loop {
        let handle = slot.handle();
        let (again, mut failure) = match (again, handle.wait().await) {
            (Some(again), Err(error)) if server_lost(&error) => (again, error),
            (_, outcome) => return outcome,
        };
        // A server that answers, then goes away again at once, does not restart the clock.
        if reconnecting.lost() && since_found.elapsed() > Duration::from_secs(5) {
            reconnecting.found();
        }
        // Spoken in the era the task is driven in, whatever --era said.
        let server = RemoteArgs {
            connect: ConnectArgs { era: handle.era().into(), ..again.server.connect.clone() },
            json: again.server.json,
        };
        loop {
            if !reconnecting.pause(&failure, |line| display.note(line)).await {
                return Err(failure);
            }
            match remote::connect(&server, again.answer, display).await {
                Ok(client) => {
                    let next = client.task(handle.id());
                    let next = match tracker {
                        Some(tracker) => tracker.remember(next),
                        None => next,
                    };
                    display.note(&format!("mcp-tasks: the server is back; still waiting for task {}", handle.id()));
                    slot.replace(next, client);
                    since_found = Instant::now();
                    break;
                }
                Err(err) => failure = ClientError::Transport(format!("{err:#}")),
            }
        }
    }
}

/// Follows the task's event stream (`tasks/stream`): its progress to the display and, with
/// `lines`, its command's output lines to stderr, each once, resumed after the last event
/// taken when the stream breaks (a restart of the server), until the task's log is complete.
/// A server that does not serve the stream (`-32601`, or any refusal) ends it quietly.
async fn events(slot: Slot, display: Arc<Display>, lines: bool) {
    let mut after: Option<u64> = None;
    let mut breaks = 0;
    loop {
        let handle = slot.handle();
        let streamed = handle
            .stream_events(after, |event| {
                after = Some(event.seq);
                shown_event(&event, &display, lines);
            })
            .await;
        match streamed {
            Ok(end) if end.complete => return,
            Ok(_) => {}
            Err(ClientError::Rpc { .. } | ClientError::NotInEra { .. }) => return,
            Err(error) => {
                tracing::debug!(%error, "the task's event stream broke");
                breaks += 1;
                if breaks > 100 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// Shows one event of the task's log: progress on the display, output lines (with `lines`)
/// on stderr above it.
fn shown_event(event: &mcp_tasks_client::TaskEvent, display: &Display, lines: bool) {
    let payload = &event.payload;
    match event.kind.as_str() {
        "dev.mcp-tasks.progress" => {
            if let Some(progress) = payload.get("progress").and_then(Value::as_f64) {
                display.progress(Progress {
                    progress,
                    total: payload.get("total").and_then(Value::as_f64),
                    message: payload.get("message").and_then(Value::as_str).map(str::to_owned),
                });
            }
        }
        "dev.mcp-tasks.output" if lines => {
            for line in payload.get("lines").and_then(Value::as_array).into_iter().flatten() {
                display.note(line.as_str().unwrap_or_default());
            }
        }
        _ => {}
    }
}
