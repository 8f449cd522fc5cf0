//! The CLI's use of the [`Ledger`]: record each task started, note each status learned,
//! `tasks pending`, `tasks forget`, and finding where a task lives for `tasks wait ID`.

use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::{Context as _, bail};
use mcp_tasks_client::ledger::{Endpoint, Ledger, LedgerEntry, Submission};
use mcp_tasks_client::{Era, TaskStatus};
use serde_json::{Value, json};

use crate::args::{ConnectArgs, ForgetArgs, LedgerArgs, PendingArgs};
use crate::remote::COMPLETED;

fn path(args: &LedgerArgs) -> anyhow::Result<PathBuf> {
    match &args.ledger {
        Some(path) => Ok(path.clone()),
        None => Ledger::default_path()
            .context("this platform has no data directory for the ledger: give --ledger PATH"),
    }
}

/// Opens the ledger; an error when it cannot be.
pub(crate) fn open(args: &LedgerArgs) -> anyhow::Result<Ledger> {
    let path = path(args)?;
    Ledger::open(&path).with_context(|| format!("opening the ledger {}", path.display()))
}

/// Where `connect` points, if it points anywhere.
pub(crate) fn endpoint(connect: &ConnectArgs) -> Option<Endpoint> {
    match (&connect.cmd, &connect.url) {
        (Some(cmd), _) => Some(Endpoint::Command(cmd.clone())),
        (None, Some(url)) => Some(Endpoint::Url(url.clone())),
        (None, None) => None,
    }
}

/// The ledger and the server of one command: records and notes tasks, warning (never
/// failing the command) when the ledger cannot be written.
pub(crate) struct Tracker {
    ledger: Ledger,
    endpoint: Endpoint,
    /// `--keep`: finished results go to the ledger too.
    keep: bool,
}

impl Tracker {
    pub(crate) fn new(ledger: Ledger, endpoint: Endpoint, args: &LedgerArgs) -> Tracker {
        Tracker { ledger, endpoint, keep: args.keep }
    }

    /// A tracker for the server of `connect`, or `None` (with a warning) when the ledger
    /// cannot be opened.
    pub(crate) fn open(args: &LedgerArgs, connect: &ConnectArgs) -> Option<Tracker> {
        let endpoint = endpoint(connect)?;
        match open(args) {
            Ok(ledger) => Some(Tracker { ledger, endpoint, keep: args.keep }),
            Err(err) => {
                eprintln!("mcp-tasks: warning: tasks are not recorded: {err:#}");
                None
            }
        }
    }

    /// Records a task just created, before anything waits for it; whether it was.
    pub(crate) async fn record(
        &self,
        task_id: &str,
        tool: &str,
        arguments: &Value,
        status: Option<TaskStatus>,
        era: Era,
    ) -> bool {
        match self
            .ledger
            .record_in_era(&self.endpoint, task_id, tool, arguments, status, era)
            .await
        {
            Ok(()) => true,
            Err(err) => {
                eprintln!(
                    "mcp-tasks: warning: task {task_id} is not recorded in the ledger: {err}"
                );
                false
            }
        }
    }

    /// Records a call about to be sent with idempotency `key` (with its arguments, until
    /// [`Tracker::settle`]); whether it was.
    pub(crate) async fn submit(&self, key: &str, tool: &str, arguments: &Value) -> bool {
        match self.ledger.submit(&self.endpoint, key, tool, arguments).await {
            Ok(()) => true,
            Err(err) => {
                eprintln!("mcp-tasks: warning: the call is not recorded in the ledger: {err}");
                false
            }
        }
    }

    /// The call of `key` got its answer: its submission goes.
    pub(crate) async fn settle(&self, key: &str) {
        if let Err(err) = self.ledger.settle(key).await {
            eprintln!("mcp-tasks: warning: cannot update the ledger: {err}");
        }
    }

    /// `handle`, remembering in the ledger the input requests it answers (a restarted CLI
    /// does not ask them again).
    pub(crate) fn remember(&self, handle: mcp_tasks_client::TaskHandle) -> mcp_tasks_client::TaskHandle {
        handle.remembering(self.ledger.clone(), self.endpoint.clone())
    }

    /// With `--keep`, keeps the result of a finished task.
    pub(crate) async fn keep(&self, task_id: &str, result: &mcp_tasks_client::protocol::CallToolResult) {
        if !self.keep {
            return;
        }
        let value = serde_json::to_value(result).unwrap_or(Value::Null);
        match self.ledger.keep_result(&self.endpoint, task_id, &value).await {
            Ok(true) => {}
            Ok(false) => eprintln!("mcp-tasks: warning: the result of task {task_id} is over 1 MiB: not kept"),
            Err(err) => eprintln!("mcp-tasks: warning: the result of task {task_id} is not kept: {err}"),
        }
    }

    /// The result kept for a task (`--keep`), if any.
    pub(crate) async fn kept(&self, task_id: &str) -> Option<Value> {
        self.ledger.kept_result(&self.endpoint, task_id).await.ok().flatten()
    }

    /// Notes a status just learned (for tasks in the ledger; others are left out).
    pub(crate) async fn note(&self, task_id: &str, status: TaskStatus) {
        if let Err(err) = self
            .ledger
            .update_status(&self.endpoint, task_id, status)
            .await
        {
            eprintln!("mcp-tasks: warning: cannot update task {task_id} in the ledger: {err}");
        }
    }
}

/// Where the ledger says task `id` lives; an error when it does not know, or knows
/// several servers with that id.
pub(crate) async fn locate(ledger: &Ledger, id: &str) -> anyhow::Result<LedgerEntry> {
    let mut entries = ledger
        .find(id)
        .await
        .with_context(|| format!("reading the ledger {}", ledger.path().display()))?;
    match entries.len() {
        0 => bail!(
            "task {id} is not in the ledger {}: give its server with --url URL or --cmd \"COMMAND ARGS\"",
            ledger.path().display()
        ),
        1 => Ok(entries.remove(0)),
        _ => {
            let places: Vec<String> = entries.iter().map(|e| e.endpoint.to_string()).collect();
            bail!(
                "the ledger knows task {id} on several servers; pick one: {}",
                places.join(" | ")
            )
        }
    }
}

/// `mcp-tasks tasks pending`.
pub(crate) async fn pending(args: PendingArgs) -> anyhow::Result<u8> {
    let ledger = open(&args.ledger)?;
    let entries = ledger
        .pending()
        .await
        .with_context(|| format!("reading the ledger {}", ledger.path().display()))?;
    let submissions = ledger
        .submissions()
        .await
        .with_context(|| format!("reading the ledger {}", ledger.path().display()))?;
    if args.json {
        let tasks: Vec<Value> = entries.iter().map(entry_json).collect();
        let sent: Vec<Value> = submissions.iter().map(submission_json).collect();
        println!("{}", json!({ "tasks": tasks, "submissions": sent }));
        return Ok(COMPLETED);
    }
    if !submissions.is_empty() {
        let rows: Vec<Vec<String>> = submissions
            .iter()
            .map(|submission| {
                vec![submission.key.clone(), submission.tool.clone(), submission.endpoint.to_string(), crate::list::ago(submission.created_at)]
            })
            .collect();
        crate::remote::print_table(&["SENT WITHOUT AN ANSWER (KEY)", "TOOL", "SERVER", "SENT"], &rows);
        eprintln!(
            "mcp-tasks: a call sent without an answer (the CLI stopped before it came) is sent again, with the same \
             idempotency key, by: mcp-tasks tasks wait KEY (the server gives back its one task)"
        );
    }
    if entries.is_empty() {
        eprintln!(
            "mcp-tasks: no pending tasks in the ledger {}",
            ledger.path().display()
        );
    } else {
        let rows: Vec<Vec<String>> = entries
            .iter()
            .map(|entry| {
                vec![
                    entry.task_id.clone(),
                    entry.status.as_str().to_owned(),
                    entry.tool.clone(),
                    entry.endpoint.to_string(),
                    era_text(entry.era),
                    crate::list::ago(entry.last_seen_at),
                ]
            })
            .collect();
        crate::remote::print_table(&["ID", "STATUS WHEN LAST SEEN", "TOOL", "SERVER", "ERA", "LAST SEEN"], &rows);
        eprintln!("mcp-tasks: their state now: mcp-tasks tasks list; collect one with: mcp-tasks tasks wait ID");
    }
    Ok(COMPLETED)
}

/// `mcp-tasks tasks forget ID`: removes the entry (of the server given, or the only one
/// with that id); an error (exit status 2) when the ledger has none.
pub(crate) async fn forget(args: ForgetArgs) -> anyhow::Result<u8> {
    let ledger = open(&args.ledger)?;
    let endpoint = match endpoint(&args.connect) {
        Some(endpoint) => endpoint,
        None => locate(&ledger, &args.id).await?.endpoint,
    };
    let removed = ledger
        .forget(&endpoint, &args.id)
        .await
        .with_context(|| format!("writing the ledger {}", ledger.path().display()))?;
    if !removed {
        bail!(
            "task {} of {endpoint} is not in the ledger {}",
            args.id,
            ledger.path().display()
        );
    }
    eprintln!(
        "mcp-tasks: forgot task {} ({endpoint}); the server was not asked",
        args.id
    );
    Ok(COMPLETED)
}

fn entry_json(entry: &LedgerEntry) -> Value {
    let object = json!({
        "taskId": entry.task_id,
        "status": entry.status.as_str(),
        "tool": entry.tool,
        "argumentsDigest": entry.arguments_digest,
        "createdAt": time(entry.created_at),
        "lastSeenAt": time(entry.last_seen_at),
        "era": entry.era.map(Era::revision),
    });
    with_endpoint(object, &entry.endpoint)
}

fn submission_json(submission: &Submission) -> Value {
    let object = json!({
        "idempotencyKey": submission.key,
        "tool": submission.tool,
        "createdAt": time(submission.created_at),
    });
    with_endpoint(object, &submission.endpoint)
}

/// `object` with the server it names: `url` or `cmd`.
pub(crate) fn with_endpoint(mut object: Value, endpoint: &Endpoint) -> Value {
    let (key, address) = match endpoint {
        Endpoint::Url(url) => ("url", url),
        Endpoint::Command(cmd) => ("cmd", cmd),
    };
    object[key] = Value::String(address.clone());
    object
}

/// The era of an entry, for the text listing (`era unknown` for one recorded before the
/// ledger kept it).
fn era_text(era: Option<Era>) -> String {
    era.map_or_else(|| "era unknown".to_owned(), |era| format!("MCP {era}"))
}

pub(crate) fn time(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}
