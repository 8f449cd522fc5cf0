//! The upstream connection and its supervisor: connects (the client negotiates the era),
//! learns what the upstream offers, mirrors its tools into the server's registry (again on
//! each `notifications/tools/list_changed`), passes its resource and prompt list changes and
//! resource updates on to the downstream clients, and when the upstream dies (a stdio server's
//! output ends, or a call finds it unreachable) starts it again with exponential backoff.
//! Calls wait for the connection through a watch channel, bounded by
//! [`ProxyOptions::connect_wait`]. A stdio upstream's process group is recorded in the store
//! under its command line ([`Engine::keep_group`]), so that a proxy started after one that was
//! killed ends the upstream that one left running before it spawns its own.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks_client::{Client, ClientError, RpcError, ServerNotification, ToolInfo};
use mcp_tasks_engine::{Engine, Leftover};
use mcp_tasks_protocol::mcp::{Implementation, method};
use mcp_tasks_server::{Server, TaskMode, ToolDef, ToolSpec, UpstreamOffers};
use serde_json::json;
use tokio::sync::{Notify, broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::asks::{Asks, Router};
use crate::tool::UpstreamTool;
use crate::{ProxyError, ProxyOptions, UpstreamSpec};

/// How long a graceful close of the upstream waits before each signal.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// A live session with the upstream.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) client: Client,
    /// Which start of the upstream this is (0 for the first).
    pub(crate) generation: u64,
}

pub(crate) struct Upstream {
    pub(crate) spec: UpstreamSpec,
    pub(crate) options: ProxyOptions,
    pub(crate) asks: Arc<Asks>,
    link: watch::Sender<Option<Link>>,
    /// The generation now serving; a report of a broken older one is ignored.
    generation: AtomicU64,
    broken: Notify,
    offers: Mutex<UpstreamOffers>,
    /// The upstream tools as last listed, by name (the registry holds them as ours).
    mirrored: Mutex<BTreeMap<String, ToolInfo>>,
    /// The resource URIs downstream clients subscribed to, subscribed upstream too (again
    /// after a restart); kept while the proxy runs (the server filters updates per client).
    subscribed: watch::Sender<BTreeSet<String>>,
    stop: CancellationToken,
    supervisor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Upstream {
    pub(crate) fn new(spec: UpstreamSpec, options: ProxyOptions) -> Upstream {
        Upstream {
            spec,
            options,
            asks: Arc::default(),
            link: watch::Sender::new(None),
            generation: AtomicU64::new(0),
            broken: Notify::new(),
            offers: Mutex::default(),
            mirrored: Mutex::default(),
            subscribed: watch::Sender::new(BTreeSet::new()),
            stop: CancellationToken::new(),
            supervisor: Mutex::new(None),
        }
    }

    pub(crate) fn offers(&self) -> UpstreamOffers {
        *self.offers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn current(&self) -> Option<Link> {
        self.link.borrow().clone()
    }

    pub(crate) fn restarts(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// The task mode the upstream declared for `tool`, as last listed.
    pub(crate) fn upstream_mode(&self, tool: &str) -> mcp_tasks_client::TaskMode {
        self.mirrored
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
            .map_or(mcp_tasks_client::TaskMode::Forbidden, |info| info.task_mode)
    }

    /// Notes that a call found generation `generation` of the upstream unreachable: the
    /// supervisor starts it again (a report about an older generation changes nothing).
    pub(crate) fn report_broken(&self, generation: u64) {
        if self.generation.load(Ordering::Relaxed) == generation {
            self.broken.notify_one();
        }
    }

    /// The live session, waiting for one while the upstream (re)starts, at most
    /// [`ProxyOptions::connect_wait`]; `Err` says why there is none (or that `cancel` fired).
    pub(crate) async fn wait_link(&self, cancel: Option<&CancellationToken>) -> Result<Link, String> {
        self.wait_link_after(cancel, None).await
    }

    /// [`Upstream::wait_link`] for a session newer than generation `after` (the one a call
    /// found gone), if given.
    pub(crate) async fn wait_link_after(&self, cancel: Option<&CancellationToken>, after: Option<u64>) -> Result<Link, String> {
        let mut link = self.link.subscribe();
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        let wait = self.options.connect_wait;
        tokio::select! {
            found = link.wait_for(|link| link.as_ref().is_some_and(|link| after.is_none_or(|gone| link.generation > gone))) => match found {
                Ok(found) => found.clone().ok_or_else(|| "the upstream server is gone".to_owned()),
                Err(_) => Err("the proxy is shutting down".to_owned()),
            },
            () = cancel.cancelled() => Err("the call was cancelled".to_owned()),
            () = self.stop.cancelled() => Err("the proxy is shutting down".to_owned()),
            () = tokio::time::sleep(wait) => Err(format!(
                "the upstream server {} is not connected: it could not be started again within {}",
                self.spec.describe(),
                humantime_secs(wait)
            )),
        }
    }

    /// One connection attempt, with this proxy's handlers for the upstream's questions.
    async fn connect(&self) -> Result<Client, ClientError> {
        let router = Router(Arc::clone(&self.asks));
        let mut builder = Client::builder()
            .elicitation(router.clone())
            .sampling(router)
            .client_info(Implementation::new("mcp-tasks-proxy", env!("CARGO_PKG_VERSION")));
        if let Some(era) = self.options.era {
            builder = builder.era(era);
        }
        match &self.spec {
            UpstreamSpec::Command { program, args } => builder.connect_process(program, args).await,
            UpstreamSpec::Http { url, token, headers, ca_file } => {
                if let Some(ca_file) = ca_file {
                    builder = builder.ca_file(ca_file.clone());
                }
                if let Some(token) = token {
                    builder = builder.token(token.clone());
                }
                for (name, value) in headers {
                    builder = builder.header(name.clone(), value.clone());
                }
                builder.connect_http(url).await
            }
        }
    }

    /// The first connection, the tools mirrored, and the supervisor started.
    pub(crate) async fn start(self: Arc<Self>, server: Server) -> Result<Vec<String>, ProxyError> {
        let upstream = self.spec.describe();
        self.end_stale(server.engine()).await;
        let client = self.connect().await.map_err(|source| ProxyError::Connect { upstream: upstream.clone(), source })?;
        self.keep(server.engine(), &client).await;
        self.learn_offers(&client).await;
        let names = self.sync_tools(&server, &client).await.map_err(|source| ProxyError::ListTools { upstream, source })?;
        let this = Arc::clone(&self);
        let supervisor = tokio::spawn(async move { this.supervise(server, client).await });
        *self.supervisor.lock().unwrap_or_else(PoisonError::into_inner) = Some(supervisor);
        Ok(names)
    }

    /// Serves `client` until it dies, then starts the upstream again, until [`Upstream::shutdown`].
    async fn supervise(self: Arc<Self>, server: Server, mut client: Client) {
        loop {
            let reason = self.serve(&server, &client).await;
            self.link.send_replace(None);
            let Some(reason) = reason else {
                self.close_for_good(&server, client).await;
                return;
            };
            tracing::warn!(upstream = %self.spec.describe(), %reason, "the upstream server is gone; starting it again");
            end_group(&client);
            drop(client);
            let Some(next) = self.reconnect().await else { return };
            client = next;
            self.restarted(&server, &client).await;
        }
    }

    /// Offers `client` to the calls and passes its changes on, until it is gone (why) or
    /// the proxy stops (`None`).
    async fn serve(self: &Arc<Self>, server: &Server, client: &Client) -> Option<String> {
        let generation = self.generation.load(Ordering::Relaxed);
        let mut notes = client.notifications();
        // 2026-07-28: list changes and resource updates come only on a
        // subscriptions/listen stream (opened again when the URIs change); `None` in
        // 2025-11-25, whose server sends them unasked.
        let mut uris = self.subscribed.subscribe();
        let mut listening = client.listen_list_changes(&uris.borrow_and_update().iter().cloned().collect::<Vec<_>>());
        self.link.send_replace(Some(Link { client: client.clone(), generation }));
        tracing::info!(upstream = %self.spec.describe(), era = %client.era(), generation, "upstream connected");
        loop {
            tokio::select! {
                () = self.stop.cancelled() => return None,
                () = client.closed() => return Some("its output ended (it exited)".to_owned()),
                () = self.broken.notified() => return Some("a request found it unreachable".to_owned()),
                // The sender lives as long as `self`: never an error.
                Ok(()) = uris.changed(), if listening.is_some() => {
                    let wanted: Vec<String> = uris.borrow_and_update().iter().cloned().collect();
                    listening = client.listen_list_changes(&wanted);
                }
                note = notes.recv() => {
                    if let Err(reason) = self.pass_on(server, client, note).await {
                        return Some(reason);
                    }
                }
            }
        }
    }

    /// Passes one notification of the upstream on (a tool list change is mirrored); the
    /// reason it is gone when its notifications end.
    async fn pass_on(
        self: &Arc<Self>,
        server: &Server,
        client: &Client,
        note: Result<ServerNotification, broadcast::error::RecvError>,
    ) -> Result<(), String> {
        match note {
            Ok(note) if note.method == method::NOTIFY_TOOLS_LIST_CHANGED => {
                if let Err(error) = self.sync_tools(server, client).await {
                    tracing::warn!(%error, "could not list the upstream's tools after list_changed");
                }
            }
            // Resources and prompts are forwarded request by request: the next
            // listing is the upstream's new one, so only the news is passed on.
            Ok(note) if note.method == method::NOTIFY_RESOURCES_LIST_CHANGED => server.notify_resources_list_changed(),
            Ok(note) if note.method == method::NOTIFY_PROMPTS_LIST_CHANGED => server.notify_prompts_list_changed(),
            Ok(note) if note.method == method::NOTIFY_RESOURCE_UPDATED => {
                if let Some(uri) = note.params.get("uri").and_then(serde_json::Value::as_str) {
                    server.notify_resource_updated(uri);
                }
            }
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => {
                // A list change may be among the lost: list again, and tell.
                if let Err(error) = self.sync_tools(server, client).await {
                    tracing::warn!(%error, "could not list the upstream's tools");
                }
                server.notify_resources_list_changed();
                server.notify_prompts_list_changed();
            }
            Err(broadcast::error::RecvError::Closed) => return Err("its session ended".to_owned()),
        }
        Ok(())
    }

    /// The proxy stops: the upstream is closed and the record of its process group removed.
    async fn close_for_good(&self, server: &Server, client: Client) {
        close(client).await;
        if let Some(key) = self.kept_key()
            && let Err(error) = server.engine().forget_kept_group(&key).await
        {
            tracing::warn!(%error, "could not remove the record of the closed upstream's process group");
        }
    }

    /// A restarted upstream taken into use: its process group recorded, a new generation,
    /// its offers and tools learnt again, the resources resubscribed, the downstream clients
    /// told that the lists may have changed.
    async fn restarted(self: &Arc<Self>, server: &Server, client: &Client) {
        self.keep(server.engine(), client).await;
        self.generation.fetch_add(1, Ordering::Relaxed);
        self.learn_offers(client).await;
        if let Err(error) = self.sync_tools(server, client).await {
            tracing::warn!(%error, "could not list the tools of the restarted upstream; keeping the last list");
        }
        let wanted: Vec<String> = self.subscribed.borrow().iter().cloned().collect();
        for uri in wanted {
            if let Err(error) = subscribe_upstream(client, &uri).await {
                tracing::warn!(%uri, message = %error.message, "could not subscribe to the resource on the restarted upstream");
            }
        }
        // What the restarted upstream lists may differ from before.
        server.notify_resources_list_changed();
        server.notify_prompts_list_changed();
    }

    /// Connects again with exponential backoff; `None` once the proxy stops.
    async fn reconnect(&self) -> Option<Client> {
        let mut delay = self.options.backoff;
        loop {
            tokio::select! {
                () = self.stop.cancelled() => return None,
                () = tokio::time::sleep(delay) => {}
            }
            match self.connect().await {
                Ok(client) => return Some(client),
                Err(error) => {
                    tracing::warn!(upstream = %self.spec.describe(), %error, retry_in = ?delay, "the upstream server did not start");
                    delay = (delay * 2).min(self.options.max_backoff);
                }
            }
        }
    }

    /// The key under which the store records a stdio upstream's process group: a SHA-256 of
    /// the command line (a proxy of another upstream on the same store keeps its own record;
    /// the arguments, which may hold secrets, are neither stored nor logged). `None` for an
    /// HTTP upstream (no process of ours).
    fn kept_key(&self) -> Option<String> {
        use sha2::Digest as _;
        let UpstreamSpec::Command { program, args } = &self.spec else { return None };
        let line: Vec<&String> = std::iter::once(program).chain(args).collect();
        let digest = sha2::Sha256::digest(serde_json::to_string(&line).unwrap_or_default().as_bytes());
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        Some(format!("proxy upstream {hex}"))
    }

    /// Ends the stdio upstream a previous proxy of the same command on this store left
    /// running when it was killed (SIGTERM, SIGKILL after a grace), before this proxy starts
    /// its own; a group whose proxy still runs, or whose pid is another process's now, is
    /// left alone ([`Engine::end_kept_group`]).
    async fn end_stale(&self, engine: &Engine) {
        let Some(key) = self.kept_key() else { return };
        match engine.end_kept_group(&key, CLOSE_GRACE).await {
            Ok(Some(Leftover::Terminated | Leftover::Killed)) => {
                tracing::warn!(upstream = %self.spec.describe(), "ended the upstream a previous proxy on this store left running");
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "could not read the record of a previous proxy's upstream"),
        }
    }

    /// Records the process group of the stdio upstream `client` speaks to (see
    /// [`Upstream::end_stale`]).
    async fn keep(&self, engine: &Engine, client: &Client) {
        let (Some(key), Some(leader)) = (self.kept_key(), client.server_process_id()) else { return };
        if let Err(error) = engine.keep_group(&key, leader).await {
            tracing::warn!(%error, "could not record the upstream's process group; a killed proxy's upstream would be left running");
        }
    }

    /// A downstream client subscribed to `uri`: subscribes upstream, once per URI
    /// (2025-11-25 `resources/subscribe`; 2026-07-28: the supervisor opens its listen stream
    /// again with the URI). The upstream's refusal is the client's error; an upstream without
    /// subscriptions is none (no updates will come).
    pub(crate) async fn subscribe(&self, uri: &str) -> Result<(), RpcError> {
        if self.subscribed.borrow().contains(uri) {
            return Ok(());
        }
        let link = self.wait_link(None).await.map_err(RpcError::internal)?;
        subscribe_upstream(&link.client, uri).await?;
        self.subscribed.send_modify(|uris| {
            uris.insert(uri.to_owned());
        });
        Ok(())
    }

    /// Learns which catalog methods the upstream serves, by asking (a method it does not
    /// have is refused with -32601).
    async fn learn_offers(&self, client: &Client) {
        let serves = |method: &'static str, params: serde_json::Value| async move {
            match client.request_raw(method, params).await {
                Ok(_) => true,
                Err(ClientError::Rpc { code, .. }) => code != mcp_tasks_client::RpcError::METHOD_NOT_FOUND,
                Err(error) => {
                    tracing::debug!(%error, method, "probing the upstream");
                    false
                }
            }
        };
        let offers = UpstreamOffers {
            resources: serves(method::RESOURCES_LIST, json!({})).await,
            prompts: serves(method::PROMPTS_LIST, json!({})).await,
            completions: serves(
                method::COMPLETION_COMPLETE,
                json!({"ref": {"type": "ref/prompt", "name": ""}, "argument": {"name": "", "value": ""}}),
            )
            .await,
        };
        tracing::info!(resources = offers.resources, prompts = offers.prompts, completions = offers.completions, "upstream catalog");
        *self.offers.lock().unwrap_or_else(PoisonError::into_inner) = offers;
    }

    /// Lists the upstream's tools and makes the registry match: new and changed ones
    /// registered, gone ones removed. Returns every tool's name.
    async fn sync_tools(self: &Arc<Self>, server: &Server, client: &Client) -> Result<Vec<String>, ClientError> {
        let listed = client.list_tools().await?;
        let mut mirrored = self.mirrored.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let names: Vec<String> = listed.iter().map(|tool| tool.name.clone()).collect();
        for gone in mirrored.keys().filter(|name| !names.contains(name)).cloned().collect::<Vec<_>>() {
            server.tools().remove(&gone);
            mirrored.remove(&gone);
            tracing::info!(tool = %gone, "the upstream no longer lists the tool");
        }
        for tool in listed {
            if mirrored.get(&tool.name) == Some(&tool) {
                continue;
            }
            match server.tools().insert(self.tool_def(&tool)) {
                Ok(()) => {
                    mirrored.insert(tool.name.clone(), tool);
                }
                Err(error) => tracing::warn!(tool = %tool.name, %error, "not serving an upstream tool"),
            }
        }
        *self.mirrored.lock().unwrap_or_else(PoisonError::into_inner) = mirrored;
        Ok(names)
    }

    fn tool_def(self: &Arc<Self>, tool: &ToolInfo) -> ToolDef {
        let policy = self.options.policy(&tool.name);
        let handler = UpstreamTool { name: tool.name.clone(), upstream: Arc::clone(self), policy: policy.clone() };
        let mut def = ToolDef::new(tool.name.clone(), "", tool.input_schema.clone(), handler)
            .task_mode(policy.task_mode)
            .on_restart(policy.on_restart)
            .max_concurrent(policy.max_concurrent)
            .max_attempts(policy.max_attempts);
        def.spec = ToolSpec {
            name: tool.name.clone(),
            title: tool.title.clone(),
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
            output_schema: tool.output_schema.clone(),
            annotations: tool.annotations.clone(),
            task_mode: policy.task_mode,
        };
        def.inline_wait = policy.inline_wait;
        def.sync_wait = policy.sync_wait;
        def.heartbeat = policy.heartbeat;
        if policy.task_mode == TaskMode::Forbidden && tool.task_mode == mcp_tasks_client::TaskMode::Required {
            tracing::warn!(tool = %tool.name, "the upstream requires a task for this tool; its plain calls will be refused upstream");
        }
        def
    }

    /// Stops the supervisor; it closes the upstream gracefully.
    pub(crate) async fn shutdown(&self) {
        self.stop.cancel();
        let supervisor = self.supervisor.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(supervisor) = supervisor
            && let Err(error) = supervisor.await
        {
            tracing::warn!(%error, "the upstream supervisor failed");
        }
    }
}

/// 2025-11-25 `resources/subscribe` of `uri` upstream (nothing in 2026-07-28, where a listen
/// stream carries the subscriptions); `-32601` (an upstream without subscriptions) is no error.
async fn subscribe_upstream(client: &Client, uri: &str) -> Result<(), RpcError> {
    if client.era() != mcp_tasks_client::Era::Legacy {
        return Ok(());
    }
    match client.request_raw("resources/subscribe", json!({"uri": uri})).await {
        Ok(_) => Ok(()),
        Err(ClientError::Rpc { code, .. }) if code == RpcError::METHOD_NOT_FOUND => {
            tracing::debug!(%uri, "the upstream has no resource subscriptions");
            Ok(())
        }
        Err(ClientError::Rpc { code, message, data }) => Err(RpcError { code, message, data }),
        Err(error) => Err(RpcError::internal(format!("the upstream server could not be asked to subscribe to {uri}: {error}"))),
    }
}

/// Closes a session gracefully, then ends what is left of a stdio upstream's process group.
async fn close(client: Client) {
    let group = client.server_process_id();
    match client.close_within(CLOSE_GRACE).await {
        Ok(status) => tracing::info!(?status, "upstream closed"),
        Err(error) => tracing::warn!(%error, "closing the upstream"),
    }
    kill_group(group);
}

/// SIGKILLs the process group of a stdio upstream that died (its children may live on).
fn end_group(client: &Client) {
    kill_group(client.server_process_id());
}

fn kill_group(leader: Option<u32>) {
    let Some(pgid) = leader.and_then(|pid| i32::try_from(pid).ok()) else { return };
    // The client spawned the upstream as the leader of its own group (pgid = its pid).
    match nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(error) => tracing::debug!(%error, pgid, "ending the upstream's process group"),
    }
}

fn humantime_secs(duration: Duration) -> String {
    format!("{} s", duration.as_secs())
}
