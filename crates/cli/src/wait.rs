//! Waiting for a task in the foreground: [`TaskHandle::wait`], with the display fed by the
//! server's notifications (`notifications/progress` under the task's progress token,
//! `notifications/tasks/status`) and by `tasks/get` polls; Ctrl-C asks whether to cancel
//! the task or detach from it (on a terminal), or cancels it (without one).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use mcp_tasks_client::{ClientError, ServerNotification, TaskHandle, TaskStatus};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::args::{ConnectArgs, LedgerArgs};
use crate::ledger::Tracker;
use crate::remote::{CANCELLED, DETACHED, Display, FAILED, Progress, report};
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
    } = waiting;
    let mut interrupts = terminal::listen_for_ctrl_c().context("listening for Ctrl-C")?;
    let interactive = terminal::interactive();
    let hint = if interactive {
        "Ctrl-C to cancel or detach"
    } else {
        "Ctrl-C cancels it"
    };
    eprintln!("mcp-tasks: task {} is running; {hint}", handle.id());
    display.start(handle.id());
    let follower = display
        .enabled()
        .then(|| tokio::spawn(follow(handle.clone(), Arc::clone(display), notifications)));
    let wait = handle.wait();
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
    if let Some(follower) = follower {
        follower.abort();
    }
    display.finish();
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
                return Ok(unanswered(handle, &method, &message, &resume, json));
            }
            report(outcome, handle.id(), json, handle.era())
        }
        Ok(Choice::Detach) => Ok(detach(handle, &resume, stdio)),
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
    handle: TaskHandle,
    display: Arc<Display>,
    mut notifications: broadcast::Receiver<ServerNotification>,
) {
    let token = handle.progress_token().map(str::to_owned);
    let mut next_poll = Instant::now();
    let mut listening = true;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(next_poll) => {
                let pause = match handle.status().await {
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
