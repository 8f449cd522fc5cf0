//! `mcp-tasks tasks watch ID`: follows a task's events (the draft `tasks/stream`, SEP-2694,
//! served in MCP 2026-07-28 with the tasks extension): the lines its command printed, on
//! stdout as they came; its progress and status changes on stderr; with `--json`, each event
//! as a JSON line. A server that goes away (a restart) is connected to again, and the stream
//! resumed after the last event shown, for up to [`RECONNECT_FOR`](crate::reconnect::RECONNECT_FOR). Exits with the task's
//! outcome, as `tasks wait` does.

use anyhow::Context as _;
use mcp_tasks_client::{ClientError, TaskEvent, TaskStatus};
use serde_json::{Value, json};

use crate::args::{EraArg, TaskArgs};
use crate::reconnect::{RECONNECT_FOR, Reconnecting};
use crate::remote::{self, CANCELLED, COMPLETED, Display, FAILED};

pub(crate) async fn watch(args: TaskArgs) -> anyhow::Result<u8> {
    let json = args.remote.json;
    let display = Display::new(true);
    let mut server = crate::tasks::server_of(&args).await?;
    // The stream is served in 2026-07-28 (to a task made in either era): the era the ledger
    // recorded does not pin the watch to 2025-11-25.
    if args.remote.connect.era == EraArg::Auto {
        server.connect.era = EraArg::Auto;
    }
    // The last event shown, kept across broken streams: a resumed one starts after it.
    let shown: std::sync::Mutex<Option<u64>> = std::sync::Mutex::new(None);
    let mut reconnecting = Reconnecting::default();
    loop {
        let last = *shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let attempt = async {
            let client = remote::connect(&server, None, &display).await.map_err(|err| {
                // A server not there (yet): as a lost stream.
                ClientError::Transport(format!("{err:#}"))
            })?;
            let handle = client.task(&args.id);
            let end = handle
                .stream_events(last, |event| {
                    *shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(event.seq);
                    show(&event, json);
                })
                .await;
            Ok::<_, ClientError>((client, handle, end))
        };
        let failure = match attempt.await {
            Ok((client, handle, Ok(end))) => {
                if !end.complete {
                    continue;
                }
                let task = handle.status().await.with_context(|| format!("getting task {}", args.id))?;
                drop(client);
                return Ok(match task.status {
                    TaskStatus::Completed => COMPLETED,
                    TaskStatus::Cancelled => CANCELLED,
                    _ => FAILED,
                });
            }
            Ok((_, _, Err(err))) | Err(err) => err,
        };
        if let Some(earliest) = events_gone(&failure) {
            eprintln!("mcp-tasks: the events of task {} before {earliest} are no longer kept; going on from there", args.id);
            *shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = earliest.checked_sub(1);
            continue;
        }
        if let ClientError::Rpc { .. } = failure {
            return Err(anyhow::Error::new(failure).context(format!("watching task {}", args.id)));
        }
        // The server went away: tried again, resuming after the last event shown.
        if !reconnecting.pause(&failure, |line| eprintln!("{line}")).await {
            return Err(anyhow::Error::new(failure).context(format!(
                "watching task {}: the server did not come back within {} s; watch again with: mcp-tasks tasks watch {}",
                args.id,
                RECONNECT_FOR.as_secs(),
                args.id
            )));
        }
    }
}

/// The `earliestSeq` of an `events_gone` refusal.
fn events_gone(error: &ClientError) -> Option<u64> {
    match error {
        ClientError::Rpc { data: Some(data), .. } if data.get("reason") == Some(&json!("events_gone")) => {
            data.get("earliestSeq").and_then(Value::as_u64)
        }
        _ => None,
    }
}

/// Shows one event: output lines on stdout as printed, the rest on stderr; with `json`, the
/// event as a JSON line on stdout.
fn show(event: &TaskEvent, json: bool) {
    if json {
        println!("{}", json!({"seq": event.seq, "type": event.kind, "payload": event.payload}));
        return;
    }
    let payload = &event.payload;
    match event.kind.as_str() {
        "dev.mcp-tasks.output" => {
            for line in payload.get("lines").and_then(Value::as_array).into_iter().flatten() {
                println!("{}", line.as_str().unwrap_or_default());
            }
        }
        "dev.mcp-tasks.progress" => {
            let progress = payload.get("progress").and_then(Value::as_f64).unwrap_or_default();
            let total = payload.get("total").and_then(Value::as_f64).map(|total| format!("/{total}")).unwrap_or_default();
            let message = payload.get("message").and_then(Value::as_str).map(|message| format!(" {message}")).unwrap_or_default();
            eprintln!("mcp-tasks: progress {progress}{total}{message}");
        }
        "dev.mcp-tasks.status" => {
            let status = payload.get("status").and_then(Value::as_str).unwrap_or_default();
            let message = payload.get("statusMessage").and_then(Value::as_str).map(|message| format!(": {message}")).unwrap_or_default();
            eprintln!("mcp-tasks: task {status}{message}");
        }
        other => eprintln!("mcp-tasks: {other} {payload}"),
    }
}
