//! `mcp-tasks tasks list|get|result|cancel|wait`: the tasks a server keeps for us.

use anyhow::{Context as _, bail};
use serde_json::json;

use crate::args::{TaskArgs, TasksCommand, ToolsArgs, WaitArgs};
use crate::remote::{self, COMPLETED, Display};

pub(crate) async fn run(command: TasksCommand) -> anyhow::Result<u8> {
    match command {
        TasksCommand::List(args) => list(args).await,
        TasksCommand::Get(args) => get(args).await,
        TasksCommand::Result(args) => result(args).await,
        TasksCommand::Cancel(args) => cancel(args).await,
        TasksCommand::Wait(args) => wait(args).await,
    }
}

async fn list(args: ToolsArgs) -> anyhow::Result<u8> {
    let display = Display::new(args.remote.json);
    let client = remote::connect(&args.remote, None, &display).await?;
    let tasks = client.list_tasks().await.context("listing the tasks")?;
    if args.remote.json {
        println!("{}", json!({ "tasks": tasks }));
    } else if tasks.is_empty() {
        eprintln!(
            "mcp-tasks: no tasks (a server without bearer tokens lists each connection's own tasks only)"
        );
    } else {
        for task in &tasks {
            println!("{}", remote::task_line(task));
        }
    }
    Ok(COMPLETED)
}

async fn get(args: TaskArgs) -> anyhow::Result<u8> {
    let display = Display::new(args.remote.json);
    let client = remote::connect(&args.remote, None, &display).await?;
    let task = client
        .task(&args.id)
        .status()
        .await
        .with_context(|| format!("getting task {}", args.id))?;
    remote::print_task(&task, args.remote.json);
    Ok(COMPLETED)
}

async fn cancel(args: TaskArgs) -> anyhow::Result<u8> {
    let display = Display::new(args.remote.json);
    let client = remote::connect(&args.remote, None, &display).await?;
    let task = client
        .task(&args.id)
        .cancel()
        .await
        .with_context(|| format!("cancelling task {}", args.id))?;
    remote::print_task(&task, args.remote.json);
    Ok(COMPLETED)
}

/// The result of a task that has ended; refuses (exit 2) while it still runs.
async fn result(args: TaskArgs) -> anyhow::Result<u8> {
    let json = args.remote.json;
    let display = Display::new(json);
    let client = remote::connect(&args.remote, None, &display).await?;
    let handle = client.task(&args.id);
    let task = handle
        .status()
        .await
        .with_context(|| format!("getting task {}", args.id))?;
    if !task.status.is_terminal() {
        bail!(
            "task {} is {}, it has no result yet (wait for it: mcp-tasks tasks wait {})",
            args.id,
            task.status,
            args.id
        );
    }
    remote::report(handle.wait().await, json)
}

async fn wait(args: WaitArgs) -> anyhow::Result<u8> {
    let json = args.task.remote.json;
    let display = Display::new(json);
    let client = remote::connect(&args.task.remote, Some(&args.answer), &display).await?;
    let handle = client.task(&args.task.id);
    handle
        .status()
        .await
        .with_context(|| format!("getting task {}", args.task.id))?;
    crate::wait::drive(&handle, &display, json).await
}
