//! `mcp-tasks proxy`: the upstream server's tools, resources, prompts and completion served
//! with durable tasks (`mcp-tasks-proxy`), over the same store, engine and transports as
//! `serve`.

use std::sync::Arc;

use anyhow::Context as _;
use mcp_tasks_client::Era;
use mcp_tasks_config::{Config, RestartPolicy as ConfigRestartPolicy, UpstreamToolConfig};
use mcp_tasks_engine::{Engine, RestartPolicy, SystemClock};
use mcp_tasks_proxy::{Proxy, ProxyOptions, ToolPolicy, UpstreamSpec};
use mcp_tasks_server::Server;

use crate::args::{EraArg, ProxyArgs};
use crate::serve::{lease, observe_commits, open_store_observed, policy, serve_until_shutdown, start_webhooks, store_choice};

pub(crate) async fn run(args: ProxyArgs) -> anyhow::Result<()> {
    let mut config = match &args.config {
        Some(path) => Config::load(path).with_context(|| format!("loading config {}", path.display()))?,
        None => Config::default(),
    };
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        config.server.tls = Some((cert.clone(), key.clone()));
    }
    if !config.tools.is_empty() {
        anyhow::bail!(
            "the config defines [[tools]]: mcp-tasks proxy serves the upstream's tools only; give their settings as \
             [upstream.tools.NAME], or run the command tools with mcp-tasks serve"
        );
    }
    let spec = upstream_spec(&args)?;
    let described_upstream = spec.describe();
    let mut options = ProxyOptions::new();
    options.era = match args.upstream_era {
        EraArg::Auto => None,
        EraArg::Legacy => Some(Era::Legacy),
        EraArg::Modern => Some(Era::Modern),
    };
    options.tools = config.upstream_tools.iter().map(|(name, tool)| (name.clone(), tool_policy(tool))).collect();
    let proxy = Proxy::new(spec, options);

    let (store, described, concrete) = open_store_observed(store_choice(args.store.as_deref())?).await?;
    let engine = Engine::with_lease(store, Arc::new(SystemClock), policy(&config), lease(&config)?);
    // Before recovery, as in serve: what recovery does is delivered too.
    let _webhooks = start_webhooks(&config, &engine, &concrete)?;
    // The same [server] policy as serve: long calls of clients without tasks are handed off
    // (heartbeats, sync_wait, the helper tools) as for any tool.
    let server = Server::builder(engine.clone())
        .name(config.server.name.clone())
        .inline_wait(config.server.inline_wait)
        .retry_wait(config.server.retry_wait)
        .heartbeat(config.server.heartbeat)
        .sync_wait(config.server.sync_wait)
        .task_tools(crate::options::task_tools(&config.server.task_tools))
        .poll_rate(mcp_tasks_server::PollRate { rate: config.server.poll_rate, burst: config.server.poll_burst })
        .catalog_upstream(proxy.catalog())
        .build()
        .context("building the server")?;
    let sessions = concrete.sessions();
    observe_commits(concrete, &server);
    // The upstream's tools are registered before recovery, so that a task of one left by
    // the last run is resolved by its policy (or resumed) rather than failed as unknown.
    let names = proxy.start(&server).await?;
    let recovered = engine.recover().await.context("recovering tasks left by the previous run")?;
    server.metrics().record_recovery(&recovered);
    eprintln!(
        "mcp-tasks: task store {described}; after the last run: {} failed, {} retried or resumed",
        recovered.failed, recovered.retried
    );
    eprintln!(
        "mcp-tasks: proxying {described_upstream} ({} upstream, {} tools: {})",
        proxy.upstream_era().map_or_else(|| "not connected".to_owned(), |era| era.to_string()),
        names.len(),
        names.join(", ")
    );
    let on_stdio = args.stdio.then(|| "mcp-tasks: serving on stdio".to_owned());
    let served = serve_until_shutdown(&config, &engine, server, sessions, on_stdio, args.listen).await;
    proxy.shutdown().await;
    served
}

/// Where the upstream is, from `--upstream-cmd` or `--upstream-url` and its token and headers.
fn upstream_spec(args: &ProxyArgs) -> anyhow::Result<UpstreamSpec> {
    if let Some(command) = &args.upstream_cmd {
        let words = shlex::split(command)
            .with_context(|| format!("--upstream-cmd {command:?} has an unclosed quote or a trailing backslash"))?;
        let Some((program, rest)) = words.split_first() else {
            anyhow::bail!("--upstream-cmd is empty: give the upstream server's command, e.g. \"node server.js\"");
        };
        return Ok(UpstreamSpec::command(program.clone(), rest.to_vec()));
    }
    let Some(url) = &args.upstream_url else {
        anyhow::bail!("give the upstream server: --upstream-cmd \"CMD ARGS\" or --upstream-url URL");
    };
    let mut spec = UpstreamSpec::http(url.clone());
    if let UpstreamSpec::Http { token, headers, ca_file, .. } = &mut spec {
        token.clone_from(&args.upstream_token);
        headers.clone_from(&args.upstream_headers);
        ca_file.clone_from(&args.upstream_ca_file);
    }
    Ok(spec)
}

fn tool_policy(tool: &UpstreamToolConfig) -> ToolPolicy {
    let mut policy = ToolPolicy::default();
    policy.task_mode = tool.task_support;
    policy.timeout = tool.timeout;
    policy.inline_wait = tool.inline_wait;
    policy.sync_wait = tool.sync_wait;
    policy.heartbeat = tool.heartbeat;
    policy.on_restart = match tool.on_restart {
        ConfigRestartPolicy::Fail => RestartPolicy::Fail,
        ConfigRestartPolicy::Retry => RestartPolicy::Retry,
    };
    policy.max_attempts = tool.max_attempts;
    policy.max_concurrent = tool.max_concurrent;
    policy
}
