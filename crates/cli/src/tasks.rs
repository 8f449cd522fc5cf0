//! `mcp-tasks tasks list|get|result|cancel|wait|pending|forget`: the tasks a server keeps for us,
//! and those the ledger remembers we started.

use anyhow::{Context as _, bail};

use crate::args::{ConnectArgs, EraArg, RemoteArgs, TaskArgs, TasksCommand, WaitArgs};
use crate::ledger::Tracker;
use crate::remote::{self, COMPLETED, Display};

pub(crate) async fn run(command: TasksCommand) -> anyhow::Result<u8> {
    match command {
        TasksCommand::List(args) => crate::list::list(args).await,
        TasksCommand::Get(args) => get(args).await,
        TasksCommand::Result(args) => result(args).await,
        TasksCommand::Cancel(args) => cancel(args).await,
        TasksCommand::Wait(args) => wait(args).await,
        TasksCommand::Watch(args) => crate::watch::watch(args).await,
        TasksCommand::Pending(args) => crate::ledger::pending(args).await,
        TasksCommand::Forget(args) => crate::ledger::forget(args).await,
    }
}

/// The server of task `args.id`: --url or --cmd, or else the one the ledger recorded for it
/// (the token given now, if any; the era the task was made in, unless --era names one).
pub(crate) async fn server_of(args: &TaskArgs) -> anyhow::Result<RemoteArgs> {
    let given = &args.remote.connect;
    if given.url.is_some() || given.cmd.is_some() {
        return Ok(RemoteArgs { connect: given.clone(), json: args.remote.json });
    }
    let ledger = crate::ledger::open(&args.ledger)?;
    let entry = crate::ledger::locate(&ledger, &args.id).await?;
    let era = given.era.or_made_in(entry.era);
    eprintln!("mcp-tasks: task {} lives at {}", entry.task_id, entry.endpoint);
    Ok(RemoteArgs { connect: reconnect(&entry.endpoint, given, era), json: args.remote.json })
}

async fn get(args: TaskArgs) -> anyhow::Result<u8> {
    let display = Display::new(args.remote.json);
    let server = server_of(&args).await?;
    let client = remote::connect(&server, None, &display).await?;
    let task = client
        .task(&args.id)
        .status()
        .await
        .with_context(|| format!("getting task {}", args.id))?;
    note(&args, &server.connect, &task).await;
    remote::print_task(&task, args.remote.json, client.era());
    Ok(COMPLETED)
}

/// Notes a status learned in the ledger, for a task it recorded at `server`.
async fn note(args: &TaskArgs, server: &ConnectArgs, task: &mcp_tasks_client::TaskInfo) {
    if let Some(tracker) = Tracker::open(&args.ledger, server) {
        tracker.note(&task.id, task.status).await;
    }
}

async fn cancel(args: TaskArgs) -> anyhow::Result<u8> {
    let display = Display::new(args.remote.json);
    let server = server_of(&args).await?;
    let client = remote::connect(&server, None, &display).await?;
    let task = client
        .task(&args.id)
        .cancel()
        .await
        .with_context(|| format!("cancelling task {}", args.id))?;
    note(&args, &server.connect, &task).await;
    remote::print_task(&task, args.remote.json, client.era());
    Ok(COMPLETED)
}

/// The result of a task that has ended; refuses (exit 2) while it still runs.
async fn result(args: TaskArgs) -> anyhow::Result<u8> {
    let json = args.remote.json;
    let display = Display::new(json);
    let server = server_of(&args).await?;
    let client = remote::connect(&server, None, &display).await?;
    let handle = client.task(&args.id);
    let task = match handle.status().await {
        Ok(task) => task,
        Err(err) => {
            // Gone from the server (its TTL ran out): the ledger may have kept the result.
            let kept = match Tracker::open(&args.ledger, &server.connect) {
                Some(tracker) => tracker.kept(&args.id).await,
                None => None,
            };
            if let Some(kept) = kept {
                eprintln!("mcp-tasks: the server no longer has task {}; its result, as the ledger kept it:", args.id);
                let result = serde_json::from_value(kept).context("reading the kept result")?;
                return Ok(remote::print_result(&result, json, client.era()));
            }
            return Err(err).with_context(|| format!("getting task {}", args.id));
        }
    };
    if !task.status.is_terminal() {
        bail!(
            "task {} is {}, it has no result yet (wait for it: mcp-tasks tasks wait {})",
            args.id,
            task.status,
            args.id
        );
    }
    note(&args, &server.connect, &task).await;
    remote::report(handle.wait().await, &args.id, json, client.era())
}

/// How to reach `endpoint` again (a URL the ledger recorded, with the token given now; or
/// its command), speaking `era`.
pub(crate) fn reconnect(endpoint: &mcp_tasks_client::ledger::Endpoint, given: &ConnectArgs, era: EraArg) -> ConnectArgs {
    match endpoint {
        mcp_tasks_client::ledger::Endpoint::Url(url) => {
            ConnectArgs { url: Some(url.clone()), token: given.token.clone(), cmd: None, era, ca_file: given.ca_file.clone(), verbose: false }
        }
        mcp_tasks_client::ledger::Endpoint::Command(cmd) => ConnectArgs { url: None, token: None, cmd: Some(cmd.clone()), era, ca_file: None, verbose: given.verbose },
    }
}

/// `tasks wait KEY` of a call sent without an answer: sent again to its server with the
/// same idempotency key, which answers with the one task the first sending made (or makes
/// it, if the first never arrived); recorded, then driven to its end.
async fn resend(
    args: &WaitArgs,
    ledger: mcp_tasks_client::ledger::Ledger,
    submission: mcp_tasks_client::ledger::Submission,
    display: &std::sync::Arc<Display>,
) -> anyhow::Result<u8> {
    let json = args.task.remote.json;
    let given = &args.task.remote.connect;
    let remote = RemoteArgs { connect: reconnect(&submission.endpoint, given, given.era), json };
    eprintln!(
        "mcp-tasks: sending the call of {} to {} again, with its idempotency key {}",
        submission.tool, submission.endpoint, submission.key
    );
    let client = remote::connect(&remote, Some(&args.answer), display).await?;
    let tracker = Tracker::new(ledger, submission.endpoint.clone(), &args.task.ledger);
    let notifications = client.notifications();
    let outcome = async {
        let called = client
            .call_with_key(&submission.tool, submission.arguments.clone(), &submission.key)
            .await
            .with_context(|| format!("calling {} again", submission.tool))?;
        let handle = match called {
            mcp_tasks_client::Called::Result(result) => {
                tracker.settle(&submission.key).await;
                return Ok(remote::print_result(&result, json, client.era()));
            }
            mcp_tasks_client::Called::Task(handle) => tracker.remember(handle),
        };
        let status = handle.last_seen().map(|task| task.status);
        let recorded = tracker.record(handle.id(), &submission.tool, &submission.arguments, status, handle.era()).await;
        if recorded {
            tracker.settle(&submission.key).await;
        }
        eprintln!("mcp-tasks: the call is task {}", handle.id());
        let waiting = crate::wait::Waiting {
            display,
            json,
            tracker: Some(&tracker),
            notifications,
            resume: crate::wait::resume_command(handle.id(), &remote.connect, &args.task.ledger, recorded),
            stdio: remote.connect.cmd.is_some(),
            again: Some(crate::wait::Again { server: &remote, answer: Some(&args.answer) }),
            lines: false,
        };
        crate::wait::drive(&handle, waiting).await
    }
    .await;
    remote::close(client, &remote.connect).await;
    outcome
}

/// Drives a task to its end. The server is --url/--cmd, or else the one the ledger
/// recorded for the task (reconnected to, the token given again if any).
async fn wait(args: WaitArgs) -> anyhow::Result<u8> {
    let json = args.task.remote.json;
    let display = Display::new(json);
    let given = &args.task.remote.connect;
    let in_ledger = given.url.is_none() && given.cmd.is_none();
    let (remote, tracker) = if !in_ledger {
        let tracker = Tracker::open(&args.task.ledger, given);
        (None, tracker)
    } else {
        let ledger = crate::ledger::open(&args.task.ledger)?;
        if let Some(submission) = ledger.submission(&args.task.id).await.context("reading the ledger")? {
            return resend(&args, ledger, submission, &display).await;
        }
        let entry = crate::ledger::locate(&ledger, &args.task.id).await?;
        // The era the task was made in, unless --era names one.
        let era = given.era.or_made_in(entry.era);
        let remote = RemoteArgs { connect: reconnect(&entry.endpoint, given, era), json };
        eprintln!(
            "mcp-tasks: task {} lives at {}",
            entry.task_id, entry.endpoint
        );
        (Some(remote), Some(Tracker::new(ledger, entry.endpoint, &args.task.ledger)))
    };
    let remote = remote.as_ref().unwrap_or(&args.task.remote);
    let client = remote::connect(remote, Some(&args.answer), &display).await?;
    let notifications = client.notifications();
    let handle = client.task(&args.task.id);
    let handle = match &tracker {
        Some(tracker) => tracker.remember(handle),
        None => handle,
    };
    let outcome = async {
        let task = handle
            .status()
            .await
            .with_context(|| format!("getting task {}", args.task.id))?;
        if let Some(tracker) = &tracker {
            tracker.note(handle.id(), task.status).await;
        }
        let waiting = crate::wait::Waiting {
            display: &display,
            json,
            tracker: tracker.as_ref(),
            notifications,
            resume: crate::wait::resume_command(
                handle.id(),
                &remote.connect,
                &args.task.ledger,
                in_ledger,
            ),
            stdio: remote.connect.cmd.is_some(),
            again: Some(crate::wait::Again { server: remote, answer: Some(&args.answer) }),
            lines: false,
        };
        crate::wait::drive(&handle, waiting).await
    }
    .await;
    remote::close(client, &remote.connect).await;
    outcome
}
