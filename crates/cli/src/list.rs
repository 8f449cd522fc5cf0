//! `mcp-tasks tasks list`: your tasks with their live state. Without a server given, the
//! tasks the ledger recorded (newest first), each unfinished one asked of the server the
//! ledger names for it (one connection per server, bounded in time; a server that does not
//! answer leaves the ledger's last-seen state, said so). With `--url` or `--cmd`: the server's
//! own list where the era has one (2025-11-25 `tasks/list`), else the ledger's tasks of that
//! server, asked of it.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use mcp_tasks_client::ledger::{Endpoint, Ledger, LedgerEntry};
use mcp_tasks_client::{Client, Era, TaskStatus};
use serde_json::{Value, json};

use crate::args::{ConnectArgs, EraArg, ListArgs, RemoteArgs};
use crate::remote::{self, COMPLETED, Display};

/// How long one server may take to answer for all of its tasks.
const ASK_FOR: Duration = Duration::from_secs(10);

/// One task as listed: the ledger's entry, and what its server said of it now.
struct Listed {
    entry: LedgerEntry,
    now: Now,
}

/// What the server said of a task.
enum Now {
    /// Finished when last seen: not asked again.
    Finished,
    /// The server's answer: its status and status message.
    Live(TaskStatus, Option<String>),
    /// The server no longer knows it (its TTL ran out).
    Gone,
    /// The server could not be asked (why).
    Unreachable(String),
}

pub(crate) async fn list(args: ListArgs) -> anyhow::Result<u8> {
    let json = args.remote.json;
    let given = &args.remote.connect;
    let display = Display::new(json);
    let ledger = crate::ledger::open(&args.ledger)?;
    let endpoint = crate::ledger::endpoint(given);
    let entries = ledger
        .recent(args.limit, endpoint.as_ref())
        .await
        .with_context(|| format!("reading the ledger {}", ledger.path().display()))?;
    if endpoint.is_some() {
        let client = remote::connect(&args.remote, None, &display).await?;
        if client.era() == Era::Legacy {
            return server_list(&client, json).await;
        }
        // 2026-07-28 has no tasks/list: the ledger's tasks of this server, asked of it.
        let listed = ask(&ledger, &client, entries).await;
        remote::close(client, given).await;
        return Ok(show(&listed, json, &ledger));
    }
    let mut by_server: BTreeMap<String, (Endpoint, Vec<LedgerEntry>)> = BTreeMap::new();
    let mut listed = Vec::new();
    for entry in entries {
        if entry.status.is_terminal() {
            listed.push(Listed { entry, now: Now::Finished });
        } else {
            by_server.entry(entry.endpoint.to_string()).or_insert_with(|| (entry.endpoint.clone(), Vec::new())).1.push(entry);
        }
    }
    for (endpoint, entries) in by_server.into_values() {
        listed.extend(ask_server(&ledger, &endpoint, given, entries, &display).await);
    }
    listed.sort_by(|a, b| b.entry.created_at.cmp(&a.entry.created_at).then_with(|| a.entry.task_id.cmp(&b.entry.task_id)));
    Ok(show(&listed, json, &ledger))
}

/// The 2025-11-25 server's own `tasks/list`.
async fn server_list(client: &Client, json: bool) -> anyhow::Result<u8> {
    let tasks = client.list_tasks().await.context("listing the tasks")?;
    if json {
        println!("{}", json!({ "tasks": tasks }));
    } else if tasks.is_empty() {
        eprintln!("mcp-tasks: no tasks (a server without bearer tokens lists each connection's own tasks only)");
    } else {
        let rows: Vec<Vec<String>> = tasks
            .iter()
            .map(|task| {
                vec![task.id.clone(), task.status.to_string(), task.last_updated_at.clone(), task.status_message.clone().unwrap_or_default()]
            })
            .collect();
        remote::print_table(&["ID", "STATUS", "UPDATED", "MESSAGE"], &rows);
    }
    Ok(COMPLETED)
}

/// Asks `endpoint` for each of `entries` (connected to in the era they were made in, with the
/// token and CA given now), within [`ASK_FOR`].
async fn ask_server(
    ledger: &Ledger,
    endpoint: &Endpoint,
    given: &ConnectArgs,
    entries: Vec<LedgerEntry>,
    display: &std::sync::Arc<Display>,
) -> Vec<Listed> {
    let era = EraArg::Auto.or_made_in(entries.iter().find_map(|entry| entry.era));
    let server = RemoteArgs { connect: crate::tasks::reconnect(endpoint, given, era), json: true };
    let asked = tokio::time::timeout(ASK_FOR, async {
        let client = remote::connect(&server, None, display).await?;
        let listed = ask(ledger, &client, entries.clone()).await;
        remote::close(client, &server.connect).await;
        Ok::<_, anyhow::Error>(listed)
    })
    .await;
    let why = match asked {
        Ok(Ok(listed)) => return listed,
        Ok(Err(err)) => format!("{err:#}"),
        Err(_) => format!("no answer within {} s", ASK_FOR.as_secs()),
    };
    entries.into_iter().map(|entry| Listed { entry, now: Now::Unreachable(why.clone()) }).collect()
}

/// Asks `client` for each of `entries`; what it learns goes to the ledger.
async fn ask(ledger: &Ledger, client: &Client, entries: Vec<LedgerEntry>) -> Vec<Listed> {
    let mut listed = Vec::with_capacity(entries.len());
    for entry in entries {
        let now = match client.task(&entry.task_id).status().await {
            Ok(task) => {
                if let Err(err) = ledger.update_status(&entry.endpoint, &entry.task_id, task.status).await {
                    tracing::warn!(error = %err, "noting a task's status in the ledger");
                }
                Now::Live(task.status, task.status_message)
            }
            Err(mcp_tasks_client::ClientError::Rpc { code: -32602, .. }) => Now::Gone,
            Err(err) => Now::Unreachable(err.to_string()),
        };
        listed.push(Listed { entry, now });
    }
    listed
}

/// Prints the list (a table, or JSON); exit status 0.
fn show(listed: &[Listed], json: bool, ledger: &Ledger) -> u8 {
    if json {
        let tasks: Vec<Value> = listed.iter().map(task_json).collect();
        println!("{}", json!({ "tasks": tasks }));
        return COMPLETED;
    }
    if listed.is_empty() {
        eprintln!("mcp-tasks: no tasks in the ledger {} (tasks started with `mcp-tasks call` are recorded there)", ledger.path().display());
        return COMPLETED;
    }
    let rows: Vec<Vec<String>> = listed
        .iter()
        .map(|listed| {
            let entry = &listed.entry;
            let (status, note) = match &listed.now {
                Now::Finished => (entry.status.to_string(), String::new()),
                Now::Live(status, message) => (status.to_string(), message.clone().unwrap_or_default()),
                Now::Gone => (entry.status.to_string(), "no longer kept by its server".to_owned()),
                Now::Unreachable(_) => {
                    (entry.status.to_string(), format!("as last seen {}; its server did not answer", ago(entry.last_seen_at)))
                }
            };
            vec![entry.task_id.clone(), status, entry.tool.clone(), ago(entry.created_at), entry.endpoint.to_string(), note]
        })
        .collect();
    remote::print_table(&["ID", "STATUS", "TOOL", "STARTED", "SERVER", "NOTE"], &rows);
    COMPLETED
}

fn task_json(listed: &Listed) -> Value {
    let entry = &listed.entry;
    let (status, live, message, note) = match &listed.now {
        Now::Finished => (entry.status, false, None, None),
        Now::Live(status, message) => (*status, true, message.clone(), None),
        Now::Gone => (entry.status, false, None, Some("no longer kept by its server".to_owned())),
        Now::Unreachable(why) => (entry.status, false, None, Some(format!("its server did not answer: {why}"))),
    };
    let task = json!({
        "taskId": entry.task_id,
        "status": status.as_str(),
        "live": live,
        "statusMessage": message,
        "note": note,
        "tool": entry.tool,
        "era": entry.era.map(Era::revision),
        "createdAt": crate::ledger::time(entry.created_at),
        "lastSeenAt": crate::ledger::time(entry.last_seen_at),
    });
    crate::ledger::with_endpoint(task, &entry.endpoint)
}

/// How long ago `at` was, in words: `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`.
pub(crate) fn ago(at: SystemTime) -> String {
    let seconds = SystemTime::now().duration_since(at).unwrap_or_default().as_secs();
    match seconds {
        0..60 => format!("{seconds} s ago"),
        60..3_600 => format!("{} min ago", seconds / 60),
        3_600..86_400 => format!("{} h ago", seconds / 3_600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}
