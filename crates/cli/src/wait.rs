//! Waiting for a task in the foreground: [`TaskHandle::wait`] with a spinner fed by
//! `tasks/get`, and Ctrl-C cancelling the task.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use mcp_tasks_client::protocol::TaskStatus;
use mcp_tasks_client::{ClientError, TaskHandle};

use crate::ledger::Tracker;
use crate::remote::{CANCELLED, Display, report};

/// The fastest the spinner polls `tasks/get`, whatever `pollInterval` says.
const MIN_POLL: Duration = Duration::from_millis(250);

/// Waits for the task to end, prints its result, and returns the exit status; the status
/// learned at the end goes to the ledger (`tracker`).
pub(crate) async fn drive(
    handle: &TaskHandle,
    display: &Arc<Display>,
    json: bool,
    tracker: Option<&Tracker>,
) -> anyhow::Result<u8> {
    let mut interrupt = Interrupt::listen().context("listening for Ctrl-C")?;
    eprintln!(
        "mcp-tasks: task {} is running; Ctrl-C cancels it",
        handle.id()
    );
    display.start(handle.id());
    let follower = display
        .enabled()
        .then(|| tokio::spawn(follow(handle.clone(), Arc::clone(display))));
    let outcome = tokio::select! {
        outcome = handle.wait() => Some(outcome),
        () = interrupt.recv() => None,
    };
    if let Some(follower) = follower {
        follower.abort();
    }
    display.finish();
    match outcome {
        Some(outcome) => {
            if let Some(tracker) = tracker
                && let Some(status) = learned(handle, &outcome).await
            {
                tracker.note(handle.id(), status).await;
            }
            report(outcome, json)
        }
        None => {
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
            crate::remote::print_task(&task, json);
            Ok(CANCELLED)
        }
    }
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

/// Keeps the spinner's message at the task's status, polling at its `pollInterval`.
async fn follow(handle: TaskHandle, display: Arc<Display>) {
    loop {
        let pause = match handle.status().await {
            Ok(task) => {
                display.show(&task);
                task.poll_interval
                    .map_or(Duration::from_secs(1), Duration::from_millis)
            }
            Err(_) => Duration::from_secs(1),
        };
        tokio::time::sleep(pause.max(MIN_POLL)).await;
    }
}

/// Ctrl-C, listened for from creation on (a SIGINT that comes before the first poll is not
/// lost, and does not kill the process).
struct Interrupt {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupt {
    fn listen() -> std::io::Result<Interrupt> {
        #[cfg(unix)]
        {
            let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
            Ok(Interrupt { signal })
        }
        #[cfg(not(unix))]
        Ok(Interrupt {})
    }

    async fn recv(&mut self) {
        #[cfg(unix)]
        {
            if self.signal.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
