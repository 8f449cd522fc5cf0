//! `mcp-tasks serve`: load the config, open the store, recover unfinished tasks, serve.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use mcp_tasks_config::{CommandTool, Config, TaskSupport as ConfigTaskSupport, ToolConfig};
use mcp_tasks_engine::{Engine, Policy, SystemClock, ToolRuntime};
use mcp_tasks_protocol::legacy::{TaskSupport, Tool, ToolExecution};
use mcp_tasks_server::{Server, ToolDef, stdio};
use mcp_tasks_sqlite::SqliteStore;
use tokio_util::sync::CancellationToken;

use crate::args::ServeArgs;

/// How often the TTL sweeper runs.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    if !args.stdio {
        bail!("choose a transport: pass --stdio (the Streamable HTTP listener is not built yet)");
    }
    let config = Config::load(&args.config)
        .with_context(|| format!("loading config {}", args.config.display()))?;
    let path = store_path(args.store.as_deref())?;
    let store = SqliteStore::open(&path).with_context(|| format!("opening task store {}", path.display()))?;
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), policy(&config));
    let mut builder = Server::builder(engine.clone()).name(config.server.name.clone());
    for tool in &config.tools {
        builder = builder.tool(tool_def(tool));
    }
    let server = builder.build();
    let recovered = engine.recover().await.context("recovering tasks left by the previous run")?;
    let names: Vec<&str> = config.tools.iter().map(|tool| tool.name.as_str()).collect();
    tracing::info!(
        store = %path.display(),
        tools = ?names,
        failed_after_restart = recovered.failed,
        retried_after_restart = recovered.retried,
        "mcp-tasks serving on stdio"
    );
    let shutdown = CancellationToken::new();
    let sweeper = engine.spawn_sweeper(SWEEP_EVERY, shutdown.clone());
    let served = stdio::serve(tokio::io::BufReader::new(tokio::io::stdin()), tokio::io::stdout(), server).await;
    shutdown.cancel();
    let _ = sweeper.await;
    served.context("serving on stdio")
}

fn policy(config: &Config) -> Policy {
    let ms = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    Policy {
        default_ttl_ms: ms(config.server.default_ttl),
        max_ttl_ms: Some(ms(config.server.max_ttl)),
        poll_interval_ms: ms(config.server.poll_interval),
    }
}

fn tool_def(tool: &ToolConfig) -> ToolDef {
    let task_support = match tool.task_support {
        ConfigTaskSupport::Forbidden => TaskSupport::Forbidden,
        ConfigTaskSupport::Optional => TaskSupport::Optional,
        ConfigTaskSupport::Required => TaskSupport::Required,
    };
    ToolDef {
        descriptor: Tool {
            name: tool.name.clone(),
            title: None,
            description: Some(tool.description.clone()).filter(|text| !text.is_empty()),
            input_schema: tool.input_schema.clone(),
            output_schema: None,
            execution: Some(ToolExecution { task_support: Some(task_support) }),
            annotations: None,
            meta: None,
        },
        runtime: ToolRuntime { handler: Arc::new(CommandTool::new(tool)), on_restart: tool.on_restart },
    }
}

/// The store to open: `--store` (a path or `sqlite://PATH`), else the platform default.
fn store_path(arg: Option<&str>) -> anyhow::Result<PathBuf> {
    match arg {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            bail!("the PostgreSQL store is not available yet; use an SQLite file path")
        }
        Some(url) => Ok(PathBuf::from(url.strip_prefix("sqlite://").unwrap_or(url))),
        None => {
            let base = dirs::data_dir().context(
                "no platform data directory (is HOME set?); pass --store PATH to choose where tasks are kept",
            )?;
            Ok(base.join("mcp-tasks").join("tasks.sqlite3"))
        }
    }
}
