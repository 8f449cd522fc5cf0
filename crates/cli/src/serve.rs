//! `mcp-tasks serve`: load the config, open the store, recover unfinished tasks, serve; and
//! `mcp-tasks worker`: the same without serving, on a shared store.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use std::net::SocketAddr;

use mcp_tasks_command::CommandTool;
use mcp_tasks_config::{Config, RestartPolicy as ConfigRestartPolicy, ToolConfig};
use mcp_tasks_engine::{DeliveryStore, Engine, Policy, RestartPolicy, SessionStore, SystemClock, TaskStore, ToolRuntime};
use mcp_tasks_postgres::PostgresStore;
use mcp_tasks_http as http;
use mcp_tasks_server::{Server, ToolDef, ToolSpec, stdio};
use mcp_tasks_webhooks::Webhooks;
use mcp_tasks_sqlite::SqliteStore;
use tokio_util::sync::CancellationToken;

use crate::args::{ServeArgs, WorkerArgs};

/// How often the TTL sweeper runs.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(10);

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = Config::load(&args.config)
        .with_context(|| format!("loading config {}", args.config.display()))?;
    refuse_unless_checked(&config, &args.config).await?;
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        config.server.tls = Some((cert.clone(), key.clone()));
    }
    let choice = store_choice(args.store.as_deref())?;
    warn_of_an_old_outbox(&choice);
    let (store, described, concrete) = open_store_observed(choice).await?;
    let engine = Engine::with_lease(store, Arc::new(SystemClock), policy(&config), lease(&config)?);
    engine.set_runs_work(!args.no_work);
    // Before recovery: what recovery does to the previous run's tasks is delivered too.
    let _webhooks = start_webhooks(&config, &engine, &concrete)?;
    let mut builder = Server::builder(engine.clone())
        .name(config.server.name.clone())
        .inline_wait(config.server.inline_wait)
        .retry_wait(config.server.retry_wait)
        .heartbeat(config.server.heartbeat)
        .sync_wait(config.server.sync_wait)
        .task_tools(crate::options::task_tools(&config.server.task_tools))
        .poll_rate(mcp_tasks_server::PollRate { rate: config.server.poll_rate, burst: config.server.poll_burst });
    for tool in &config.tools {
        builder = builder.tool(tool_def(tool));
    }
    let server = builder.build().context("building the server from the config's tools")?;
    let sessions = concrete.sessions();
    observe_commits(concrete, &server);
    let recovered = engine.recover().await.context("recovering tasks left by the previous run")?;
    server.metrics().record_recovery(&recovered);
    let names: Vec<&str> = config.tools.iter().map(|tool| tool.name.as_str()).collect();
    eprintln!(
        "mcp-tasks: task store {described}; after the last run: {} failed, {} retried",
        recovered.failed,
        recovered.retried
    );
    for tool in &config.tools {
        eprintln!(
            "mcp-tasks: tool {} (task_support = \"{}\", on_restart = \"{}\")",
            tool.name,
            crate::check::config_word(&tool.task_support),
            crate::check::config_word(&tool.on_restart)
        );
    }
    let on_stdio = format!("mcp-tasks: serving {} tool{} on stdio", names.len(), if names.len() == 1 { "" } else { "s" });
    serve_until_shutdown(&config, &engine, server, sessions, args.stdio.then_some(on_stdio), args.listen).await
}

/// `serve`'s checks beyond the config crate's ([`crate::check::serve_checks`], which
/// `check-config` runs too), every problem in one error.
///
/// # Errors
/// The problems, naming the file.
pub(crate) async fn refuse_unless_checked(config: &Config, path: &std::path::Path) -> anyhow::Result<()> {
    let problems = crate::check::serve_checks(config).await;
    if problems.is_empty() {
        return Ok(());
    }
    let problems = crate::check::in_file(path, problems);
    anyhow::bail!("loading config {}: {}", path.display(), problems.join("; "))
}

/// The store behind the engine's `dyn TaskStore`, kept to observe its commits and to keep
/// the HTTP transport's session records in.
pub(crate) enum Concrete {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl Concrete {
    /// The same store (a handle sharing its state) as the HTTP transport holds it, for the
    /// 2025-11-25 session records ([`http::Options::sessions`]), on PostgreSQL: replicas
    /// behind one load balancer serve each other's sessions. On SQLite, `None`: the processes
    /// of one file are on one machine, each HTTP server with its own address and clients, and
    /// a session lives in its server's memory (no store read or write per request).
    pub(crate) fn sessions(&self) -> Option<Arc<dyn SessionStore>> {
        match self {
            Concrete::Sqlite(_) => None,
            Concrete::Postgres(postgres) => Some(Arc::new(postgres.clone())),
        }
    }

    /// The same store as the webhooks hold it, for their deliveries.
    pub(crate) fn deliveries(&self) -> Arc<dyn DeliveryStore> {
        match self {
            Concrete::Sqlite(sqlite) => Arc::new(sqlite.clone()),
            Concrete::Postgres(postgres) => Arc::new(postgres.clone()),
        }
    }
}

/// Feeds the store's commits to the server's metrics: the SQLite writer's batches, or each
/// PostgreSQL write (a group of one).
pub(crate) fn observe_commits(store: Concrete, server: &Server) {
    let metrics = server.metrics().clone();
    match store {
        Concrete::Sqlite(sqlite) => {
            sqlite.on_commit(move |commit| metrics.record_store_commit(commit.elapsed, commit.writes, commit.committed));
        }
        Concrete::Postgres(postgres) => {
            postgres.on_commit(move |commit| metrics.record_store_commit(commit.elapsed, commit.writes, commit.committed));
        }
    }
}

/// Serves `server` on stdio (when `stdio` holds the line to print first) or over HTTP, until
/// the client goes or SIGTERM / Ctrl-C, with the engine's sweeper and, on a shared store, the
/// heartbeat of this replica's claims and the rescuer running meanwhile; stops them after.
/// `sessions`: the engine's store, where HTTP sessions are stored when it is shared.
pub(crate) async fn serve_until_shutdown(
    config: &Config,
    engine: &Engine,
    server: Server,
    sessions: Option<Arc<dyn SessionStore>>,
    stdio: Option<String>,
    listen: Option<SocketAddr>,
) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    let sweeper = engine.spawn_sweeper(SWEEP_EVERY, shutdown.clone());
    let claims = engine.spawn_claims(shutdown.clone());
    let served = if let Some(banner) = stdio {
        eprintln!("{banner}");
        let served = stdio::serve(tokio::io::BufReader::new(tokio::io::stdin()), tokio::io::stdout(), server);
        // SIGTERM or Ctrl-C ends stdio serving as it ends HTTP: running commands are
        // killed with the runtime, their tasks resolved by `on_restart` at the next start.
        tokio::select! {
            served = served => served.context("serving on stdio"),
            () = shutdown_signal() => Ok(()),
        }
    } else {
        serve_http(config, listen, server, sessions).await
    };
    shutdown.cancel();
    let _ = sweeper.await;
    let _ = claims.await;
    served
}

/// The shortest lease accepted: below it the heartbeat (every third of it) would be a busy
/// loop on the database.
const MIN_LEASE: Duration = Duration::from_millis(300);

/// `server.lease`, checked.
///
/// # Errors
/// A lease shorter than [`MIN_LEASE`].
pub(crate) fn lease(config: &Config) -> anyhow::Result<Duration> {
    let lease = config.server.lease;
    if lease < MIN_LEASE {
        anyhow::bail!(
            "server.lease is {}, shorter than the {} a claim needs (the heartbeat renews it every third)",
            humantime::format_duration(lease),
            humantime::format_duration(MIN_LEASE)
        );
    }
    Ok(lease)
}

/// `mcp-tasks worker`: the config's tools run the tasks of the shared store until SIGTERM
/// or Ctrl-C; no clients are served.
pub(crate) async fn worker(args: WorkerArgs) -> anyhow::Result<()> {
    let config = Config::load(&args.config)
        .with_context(|| format!("loading config {}", args.config.display()))?;
    let choice = store_choice(Some(&args.store))?;
    warn_of_an_old_outbox(&choice);
    let (store, described, concrete) = open_store_observed(choice).await?;
    let engine = Engine::with_lease(store, Arc::new(SystemClock), policy(&config), lease(&config)?);
    // A worker writes the outcomes of the work it runs: it records and sends their deliveries.
    let _webhooks = start_webhooks(&config, &engine, &concrete)?;
    let mut builder = Server::builder(engine.clone()).name(config.server.name.clone());
    for tool in &config.tools {
        builder = builder.tool(tool_def(tool));
    }
    // Built for its tools (registered with the engine), never served.
    let _server = builder.build().context("building the tools of the config")?;
    let recovered = engine.recover().await.context("taking over the tasks of dead nodes")?;
    eprintln!(
        "mcp-tasks: worker {} on task store {described}; {} tools; taken over at start: {} failed, {} retried, {} started",
        engine.node(),
        config.tools.len(),
        recovered.failed,
        recovered.retried,
        recovered.started
    );
    let shutdown = CancellationToken::new();
    let sweeper = engine.spawn_sweeper(SWEEP_EVERY, shutdown.clone());
    let claims = engine.spawn_claims(shutdown.clone());
    shutdown_signal().await;
    shutdown.cancel();
    let _ = sweeper.await;
    let _ = claims.await;
    Ok(())
}

/// Streamable HTTP until SIGTERM or Ctrl-C; running tasks keep their durable state.
pub(crate) async fn serve_http(
    config: &Config,
    listen: Option<SocketAddr>,
    server: mcp_tasks_server::Server,
    sessions: Option<Arc<dyn SessionStore>>,
) -> anyhow::Result<()> {
    let addr = listen.unwrap_or(config.server.listen);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr} (is another server on that port? pass --listen ADDR)"))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    let auth = bearer_auth(&config.server).await?;
    let options = http::Options {
        allowed_hosts: config.server.allowed_hosts.clone(),
        allowed_origins: config.server.allowed_origins.clone(),
        max_body: config.server.max_body,
        auth,
        session_idle: config.server.session_idle,
        metrics: config.server.metrics,
        ui: config.server.serves_ui(bound),
        max_sessions_per_principal: config.server.max_sessions_per_principal as usize,
        max_streams_per_session: config.server.max_streams_per_session as usize,
        max_stream_events: config.server.max_stream_events as usize,
        header_timeout: config.server.header_timeout,
        max_listens_per_principal: config.server.max_listens_per_principal as usize,
        sessions,
        tls: config.server.tls.clone().map(|(cert, key)| http::TlsFiles { cert, key }),
    };
    if !bound.ip().is_loopback() {
        tracing::warn!(%bound, "listening beyond loopback: set server.allowed_hosts and auth tokens");
    }
    let scheme = if options.tls.is_some() { "https" } else { "http" };
    eprintln!("mcp-tasks: listening on {scheme}://{bound}/mcp");
    if options.ui {
        eprintln!("mcp-tasks: web view on {scheme}://{bound}/ui");
    }
    http::serve(listener, server, options, shutdown_signal()).await.context("serving HTTP")
}

/// The bearer tokens of `[[server.auth.tokens]]` and `[server.auth.oauth]`, if any; the OAuth
/// keys are read before serving (a bad `jwks` file stops the start, an unreachable
/// `jwks_url` is retried on the first token).
async fn bearer_auth(server: &mcp_tasks_config::ServerConfig) -> anyhow::Result<Option<Arc<dyn http::Authenticate>>> {
    if !server.authenticates() {
        return Ok(None);
    }
    let oauth = match &server.oauth {
        None => None,
        Some(config) => {
            let oauth = http::OAuth::new(crate::options::oauth(config)?);
            oauth.tls_ready().map_err(|err| anyhow::anyhow!(err).context("server.auth.oauth.ca_file"))?;
            match (oauth.load().await, &config.jwks) {
                (Ok(keys), _) => tracing::info!(keys, issuer = %config.issuer, "OAuth: read the authorization server's keys"),
                (Err(err), mcp_tasks_config::JwksSource::File(_)) => return Err(anyhow::Error::new(err).context("server.auth.oauth.jwks")),
                (Err(err), _) => tracing::warn!(error = %err, "OAuth: could not read the keys yet; tokens will retry"),
            }
            Some(Arc::new(oauth))
        }
    };
    Ok(Some(Arc::new(crate::options::bearer_auth(server, oauth))))
}

/// Resolves on SIGTERM or Ctrl-C.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(err) => {
                tracing::warn!(error = %err, "cannot listen for SIGTERM; only Ctrl-C stops the server");
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutting down: open streams end, running tasks keep their state");
}

pub(crate) fn policy(config: &Config) -> Policy {
    let ms = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    Policy {
        default_ttl_ms: ms(config.server.default_ttl),
        max_ttl_ms: Some(ms(config.server.max_ttl)),
        poll_interval_ms: ms(config.server.poll_interval),
        max_running: config.server.max_running,
        max_running_per_principal: config.server.max_running_per_principal,
        max_retained_per_principal: u64::from(config.server.max_retained_per_principal),
        events: mcp_tasks_engine::EventLimits {
            events: u64::from(config.server.task_events),
            bytes: u64::try_from(config.server.task_event_bytes).unwrap_or(u64::MAX),
        },
    }
}

fn tool_def(tool: &ToolConfig) -> ToolDef {
    // The config's task support is the server's task mode (the protocol's `TaskSupport`).
    let task_mode = tool.task_support;
    let on_restart = match tool.on_restart {
        ConfigRestartPolicy::Fail => RestartPolicy::Fail,
        ConfigRestartPolicy::Retry => RestartPolicy::Retry,
    };
    ToolDef {
        spec: ToolSpec {
            name: tool.name.clone(),
            title: None,
            description: Some(tool.description.clone()).filter(|text| !text.is_empty()),
            input_schema: tool.input_schema.clone(),
            output_schema: tool.output_schema.clone(),
            annotations: None,
            task_mode,
        },
        runtime: ToolRuntime::new(CommandTool::new(tool))
            .on_restart(on_restart)
            .max_concurrent(tool.max_concurrent)
            .max_attempts(tool.max_attempts),
        inline_wait: tool.inline_wait,
        sync_wait: tool.sync_wait,
        heartbeat: None,
    }
}

/// Where tasks are kept, as `--store` (or `MCP_TASKS_STORE`) names it.
#[derive(Debug, PartialEq)]
pub(crate) enum StoreChoice {
    /// An SQLite file: a path, or `sqlite://PATH`.
    Sqlite(PathBuf),
    /// A PostgreSQL database: a `postgres://` or `postgresql://` URL.
    Postgres(String),
}

/// The store `--store` names, by its scheme: `postgres://…` or `postgresql://…` is
/// PostgreSQL, `sqlite://PATH` or a plain path is an SQLite file; none is the platform's
/// default SQLite file.
pub(crate) fn store_choice(arg: Option<&str>) -> anyhow::Result<StoreChoice> {
    match arg {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Ok(StoreChoice::Postgres(url.to_owned()))
        }
        Some(url) => Ok(StoreChoice::Sqlite(PathBuf::from(url.strip_prefix("sqlite://").unwrap_or(url)))),
        None => {
            let base = dirs::data_dir().context(
                "no platform data directory (is HOME set?); pass --store PATH to choose where tasks are kept",
            )?;
            Ok(StoreChoice::Sqlite(base.join("mcp-tasks").join("tasks.sqlite3")))
        }
    }
}

/// Starts the config's webhooks, if it has any: this process's writes record their
/// deliveries in the store, and it sends them with the other processes on the store.
pub(crate) fn start_webhooks(config: &Config, engine: &Engine, concrete: &Concrete) -> anyhow::Result<Option<Webhooks>> {
    if config.server.webhooks.is_empty() {
        return Ok(None);
    }
    let hooks = crate::options::webhooks(&config.server);
    let count = hooks.len();
    let started =
        Webhooks::start(engine, hooks, concrete.deliveries()).map_err(|err| anyhow::anyhow!("starting the webhooks: {err}"))?;
    eprintln!("mcp-tasks: {count} webhook{}, deliveries kept in the task store", if count == 1 { "" } else { "s" });
    Ok(Some(started))
}

/// Says so when an earlier version's webhook outbox is found where it kept it (beside an
/// SQLite store, `<store>.webhooks`; for PostgreSQL, `webhooks.sqlite3` in the platform data
/// directory): deliveries are kept in the task store now, and that file is no longer read.
fn warn_of_an_old_outbox(choice: &StoreChoice) {
    let old = match choice {
        StoreChoice::Sqlite(path) => {
            let mut name = path.as_os_str().to_owned();
            name.push(".webhooks");
            PathBuf::from(name)
        }
        StoreChoice::Postgres(_) => match dirs::data_dir() {
            Some(base) => base.join("mcp-tasks").join("webhooks.sqlite3"),
            None => return,
        },
    };
    if old.exists() {
        eprintln!(
            "mcp-tasks: {} is the webhook outbox of an earlier version, no longer read (deliveries are kept in the task \
             store now); deliveries still in it are not sent: see them with `sqlite3 {} 'SELECT url, event, body FROM \
             deliveries'`, then remove the file",
            old.display(),
            old.display()
        );
    }
}

/// Opens the chosen store; returns it with how start-up names it (a PostgreSQL URL with its
/// password hidden), and the concrete store's handle, for its commit metrics, its sessions
/// and its webhook deliveries.
pub(crate) async fn open_store_observed(choice: StoreChoice) -> anyhow::Result<(Arc<dyn TaskStore>, String, Concrete)> {
    match choice {
        StoreChoice::Sqlite(path) => {
            let store = SqliteStore::open(&path).with_context(|| format!("opening task store {}", path.display()))?;
            let described = format!("{} (SQLite, WAL, synchronous=FULL)", path.display());
            Ok((Arc::new(store.clone()), described, Concrete::Sqlite(store)))
        }
        StoreChoice::Postgres(url) => {
            // The error names the URL with its password hidden; so does every later one.
            let store = PostgresStore::connect(&url).await.context("opening the PostgreSQL task store")?;
            let described =
                format!(
                    "{} (PostgreSQL, {}, {}; shared: claims with a lease, any replica serves any task)",
                    store.url(),
                    store.tls().describe(),
                    store.pooling()
                );
            Ok((Arc::new(store.clone()), described, Concrete::Postgres(store)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{StoreChoice, store_choice};
    use std::path::PathBuf;

    #[test]
    fn the_store_is_chosen_by_the_scheme_of_its_url() {
        let choice = |arg: &str| store_choice(Some(arg)).expect("a choice");
        for url in ["postgres://u:pw@h/db", "postgresql://h/db?options=-c%20search_path%3Dx"] {
            assert_eq!(choice(url), StoreChoice::Postgres(url.to_owned()));
        }
        assert_eq!(choice("sqlite:///var/lib/tasks.db"), StoreChoice::Sqlite(PathBuf::from("/var/lib/tasks.db")));
        assert_eq!(choice("tasks.db"), StoreChoice::Sqlite(PathBuf::from("tasks.db")));
    }
}
