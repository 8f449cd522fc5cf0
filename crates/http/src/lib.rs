//! The Streamable HTTP transport of mcp-tasks on axum, for both eras (2025-11-25 sessions and
//! stateless 2026-07-28 requests) of an [`mcp_tasks_server::Server`]: one endpoint (`/mcp`) for POST
//! (one JSON-RPC message; a request is answered as JSON or as an SSE stream), GET (the
//! standalone SSE stream, or the resumption of a broken stream with `Last-Event-ID`) and
//! DELETE (ends the session).
//!
//! Every SSE event carries an id `<stream>-<seq>`, unique in the session; each stream keeps
//! its events until it is finished and pruned, so a client that loses the stream of a
//! blocking `tasks/result` reconnects with `Last-Event-ID` and still gets the result, once.
//!
//! Security (2025-11-25 transport): `Host` and `Origin` are checked against DNS rebinding
//! (403), bodies are limited (413), bearer tokens map to principals (401 without a valid
//! one), session ids carry 128 random bits.
//!
//! `/metrics` (when [`Options::metrics`]) answers GET with the server's [`Metrics`] in the
//! Prometheus text format, behind the same Host and Origin checks and, when tokens are
//! configured, the same bearer tokens (any valid token: the numbers are the whole
//! server's, and name tools but no task, argument or principal). Every request the router
//! answers, `/metrics` included, is counted in `mcp_tasks_http_requests_total`.
//!
//! `/ui` (when [`Options::ui`]) is the web view: a page and its JSON API, scoped to the
//! principal (`ui`).
//!
//! # Layout
//! - this file: the accept loop (which takes `POST /mcp` straight to its handler), the
//!   router, POST / GET / DELETE, `/metrics`, and the checks of each message;
//! - `guard`: Host, Origin, bearer token, accepted media types;
//! - `modern`: 2026-07-28 requests, each on a connection of its own (no session);
//! - `legacy`: Legacy sessions (`Mcp-Session-Id`), the routing of their messages onto
//!   streams, resumption buffers, idle sessions; on a shared store (many replicas) their
//!   records in the store, so that any replica serves any session;
//! - `sse`: event framing, ids, keep-alive, one-write quick replies;
//! - `ui`: the web view `/ui`, its API and its live output tails;
//! - `oauth`: JWT access tokens ([`OAuth`], [`BearerAuth`]) and the RFC 9728 metadata
//!   ([`ProtectedResource`]) served at `/.well-known/oauth-protected-resource`.

mod guard;
mod legacy;
mod modern;
mod oauth;
mod sse;
mod tls;
mod ui;

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::middleware::{self, Next};
use axum::routing::{get, post};
use mcp_tasks_engine::{FastMap, Principal, SessionRecord, SessionStore, TaskId};
use mcp_tasks_protocol::jsonrpc::{self, Incoming, RpcError};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use self::guard::{accepts, guard};
use self::legacy::{Busy, HttpSession, end_idle_sessions};
use self::sse::{parse_event_id, sse, sse_coalesced};
use mcp_tasks_server::transport::{self, Header, Hints, Listing, Message, Routed, SessionMessage};
use mcp_tasks_server::{Metrics, Server};

/// The MCP transport's own headers, as names made once: a lookup by `&str` parses and
/// lowercases the name on every call (a few hundred instructions, several times a request).
pub(crate) mod names {
    use axum::http::HeaderName;

    pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
    pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
    pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
    pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
    pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
    pub(crate) const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
    pub(crate) const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");
}

/// A message's headers as the router reads them.
struct Headers<'h>(&'h HeaderMap);

impl Hints for Headers<'_> {
    fn header(&self, header: Header) -> Option<&[u8]> {
        let name = match header {
            Header::SessionId => names::MCP_SESSION_ID,
            Header::ProtocolVersion => names::MCP_PROTOCOL_VERSION,
            Header::Method => names::MCP_METHOD,
            Header::Name => names::MCP_NAME,
            // A header this transport does not know of: looked up by its name.
            other => return self.named(other.name()),
        };
        self.0.get(name).map(HeaderValue::as_bytes)
    }

    fn named(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(HeaderValue::as_bytes)
    }
}

/// The principal of every request when no tokens are configured. Such requestors are not
/// identified: a task id is the capability to read it, and listing is per session.
pub const ANONYMOUS_PRINCIPAL: &str = "anonymous";
/// Maps a bearer token to the principal it stands for.
#[async_trait::async_trait]
pub trait Authenticate: Send + Sync + 'static {
    /// The principal for `token`, or why it is refused.
    ///
    /// # Errors
    /// [`Denied`]: answered 401, or 403 for a missing scope.
    async fn authenticate(&self, token: &str) -> Result<Principal, Denied>;

    /// The RFC 9728 metadata of this server, when its tokens come from an authorization
    /// server: then it is served at `/.well-known/oauth-protected-resource` (and with the
    /// resource's path appended) and named in every 401 challenge.
    fn resource(&self) -> Option<&ProtectedResource> {
        None
    }
}

/// Why a bearer token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Denied {
    /// Unknown, malformed, expired, not yet valid, for another audience or issuer, or badly
    /// signed: 401 with `error="invalid_token"`.
    InvalidToken,
    /// Valid but without every required scope: 403 with `error="insufficient_scope"`.
    InsufficientScope,
}

pub use self::oauth::{BearerAuth, JwksError, JwksSource, OAuth, OAuthOptions, ProtectedResource};
pub use self::tls::TlsFiles;

/// How the HTTP transport guards itself.
#[derive(Clone)]
pub struct Options {
    /// `Host` values accepted besides `localhost`, `127.0.0.1` and `::1` with any port: a
    /// host name (any port) or `host:port` (that port only).
    pub allowed_hosts: Vec<String>,
    /// Origins accepted besides `http(s)://localhost|127.0.0.1|[::1][:port]`: scheme, host
    /// and port all equal (a left-out port is the scheme's default).
    pub allowed_origins: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// Bearer-token authentication; `None` accepts every request as the anonymous principal.
    pub auth: Option<Arc<dyn Authenticate>>,
    /// A session with no request in progress and no open stream for this long is ended
    /// (as by DELETE: its id then gets 404; its tasks stay and can be fetched from a new
    /// session). Bounds the memory abandoned sessions hold.
    pub session_idle: Duration,
    /// Whether `/metrics` is served (otherwise it is 404, like any unknown path).
    pub metrics: bool,
    /// Whether the web view `/ui` (and its API under `/ui/api/`) is served (otherwise 404).
    /// Behind the same Host, Origin and token checks as `/mcp`; each principal sees only
    /// its own tasks.
    pub ui: bool,
    /// How many 2025-11-25 sessions one principal may hold at once; `initialize` beyond it
    /// is refused (429, `-32010` with `data.limit` `max_sessions_per_principal`).
    pub max_sessions_per_principal: usize,
    /// How many SSE streams one session may have open at once (POST streams and the GET
    /// stream); a request for one more is refused (429, `-32010`, `max_streams_per_session`).
    pub max_streams_per_session: usize,
    /// How many events a stream buffers: the events kept for resumption, and those waiting
    /// for a connected client that does not read. A client that falls this far behind has its
    /// stream closed (it may resume with `Last-Event-ID`); the oldest kept events go first.
    pub max_stream_events: usize,
    /// How long a client may take to send a request's headers (slowloris); the connection is
    /// closed then.
    pub header_timeout: Duration,
    /// How many 2026-07-28 `subscriptions/listen` streams one principal may hold open at
    /// once (the era's only stream that outlives a request); one more is refused (429,
    /// `-32010`, `max_listens_per_principal`).
    pub max_listens_per_principal: usize,
    /// Where 2025-11-25 sessions are stored, so that any replica behind one load balancer
    /// serves any session and a DELETE through one ends it for all: the same store as the
    /// engine's (PostgreSQL). `None`: sessions live in this process's memory alone (the
    /// processes on one SQLite file each serve their own HTTP clients; replicas behind a load
    /// balancer then need sticky sessions).
    pub sessions: Option<Arc<dyn SessionStore>>,
    /// HTTPS: the certificate and key the listener serves (read again on `SIGHUP`). `None`:
    /// plain HTTP.
    pub tls: Option<TlsFiles>,
}

impl Default for Options {
    /// Local clients only, 4 MiB bodies, no tokens, sessions idle for 30 minutes ended,
    /// `/metrics` and `/ui` served; 64 sessions per principal, 32 streams per session, 1000
    /// events buffered per stream, 10 s to send headers, 16 listen streams per principal;
    /// sessions kept in memory alone.
    fn default() -> Options {
        Options {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body: 4 * 1024 * 1024,
            auth: None,
            session_idle: Duration::from_secs(30 * 60),
            metrics: true,
            ui: true,
            max_sessions_per_principal: 64,
            max_streams_per_session: 32,
            max_stream_events: 1000,
            header_timeout: Duration::from_secs(10),
            max_listens_per_principal: 16,
            sessions: None,
            tls: None,
        }
    }
}

/// Serves `server` on `listener` at `/mcp` until `shutdown` resolves; open SSE streams are
/// ended then. Running tasks keep their durable state (the restart policy resolves them).
///
/// # Errors
/// An I/O error of the listener.
pub async fn serve(
    listener: TcpListener,
    server: Server,
    options: Options,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let stop = CancellationToken::new();
    let header_timeout = options.header_timeout;
    let acceptor = options.tls.clone().map(tls::Acceptor::load).transpose()?;
    if let Some(acceptor) = &acceptor {
        acceptor.reload_on_sighup(stop.clone());
    }
    let (app, router) = endpoint(server, options, stop.clone());
    // Our own accept loop rather than `axum::serve`, whose connections have no header read
    // timeout: a client sending its headers byte by byte would hold its connection for ever.
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(err) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Without TCP_NODELAY, the last small write of an SSE answer waits for the client's
        // delayed ACK (Nagle): ~40 ms on every streamed reply.
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(error = %err, "could not set TCP_NODELAY");
        }
        let service = connection_service(&app, &router);
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(header_timeout);
        if let Some(acceptor) = &acceptor {
            let (acceptor, watcher) = (Arc::clone(acceptor), connections.watcher());
            tokio::spawn(async move {
                match acceptor.accept(tcp, header_timeout).await {
                    Ok(tls) => {
                        if let Err(err) = watcher.watch(http1.serve_connection(hyper_util::rt::TokioIo::new(tls), service)).await {
                            tracing::debug!(error = %err, "connection ended with an error");
                        }
                    }
                    Err(err) => tracing::debug!(error = %err, "a TLS handshake failed"),
                }
            });
            continue;
        }
        let connection = connections.watch(http1.serve_connection(hyper_util::rt::TokioIo::new(tcp), service));
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, "connection ended with an error");
            }
        });
    }
    drop(listener);
    stop.cancel();
    connections.shutdown().await;
    Ok(())
}

/// A path that serves nothing: 404, saying where the MCP endpoint is (the commonest slip is
/// a URL without `/mcp`). The suggestion names the host only when it is a plain authority.
async fn no_endpoint(scheme: &'static str, headers: HeaderMap, uri: axum::http::Uri) -> Response {
    let path = uri.path();
    let host = headers.get(header::HOST).and_then(|host| host.to_str().ok()).filter(|host| {
        !host.is_empty() && host.bytes().all(|byte| byte.is_ascii_alphanumeric() || b".:-[]".contains(&byte))
    });
    let text = match host {
        Some(host) => format!("no MCP endpoint at {path}; did you mean {scheme}://{host}/mcp?\n"),
        None => format!("no MCP endpoint at {path}; the MCP endpoint is /mcp\n"),
    };
    (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

/// The axum router (`/mcp`, `/metrics` if [`Options::metrics`], `/ui` if [`Options::ui`]), for tests and for
/// embedding. `stop` ends the SSE streams it serves.
///
/// Called inside a Tokio runtime, it also starts the task that ends idle sessions
/// ([`Options::session_idle`]); it stops with `stop` or when the router is dropped.
pub fn router(server: Server, options: Options, stop: CancellationToken) -> Router {
    endpoint(server, options, stop).1
}

/// What one connection of [`serve`] is served by: a POST to `/mcp`, the message every
/// request of a task lifecycle is, goes straight to [`App::post`] and is counted as the
/// router counts what it answers; anything else goes through the router. Through axum's
/// layers (the routing, the counting middleware, their boxed futures) a POST took ~6 k
/// instructions more (docs/benchmarks/14-fourteenth-round.md).
fn connection_service(
    app: &Arc<App>,
    router: &Router,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<Response, std::convert::Infallible>> + Send + use<>,
> + Clone
+ use<> {
    let app = Arc::clone(app);
    let router = hyper_util::service::TowerToHyperService::new(router.clone());
    hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        if request.method() == axum::http::Method::POST && request.uri().path() == "/mcp" {
            futures_util::future::Either::Left(post_counted(Arc::clone(&app), request))
        } else {
            futures_util::future::Either::Right(hyper::service::Service::call(&router, request))
        }
    })
}

/// `POST /mcp` outside the router, counted in `mcp_tasks_http_requests_total` as
/// [`count_request`] counts what the router answers.
async fn post_counted(app: Arc<App>, request: hyper::Request<hyper::body::Incoming>) -> Result<Response, std::convert::Infallible> {
    let (parts, body) = request.into_parts();
    let response = match app.post(&parts.headers, Body::new(body)).await {
        Ok(response) | Err(response) => response,
    };
    app.server.metrics().http_request(parts.method.as_str(), response.status().as_u16());
    Ok(response)
}

/// The endpoint's state and the router over it (see [`router`]).
fn endpoint(server: Server, options: Options, stop: CancellationToken) -> (Arc<App>, Router) {
    let serve_metrics = options.metrics;
    if server.engine().shares_store() && options.sessions.is_none() {
        tracing::debug!("2025-11-25 sessions live in this process's memory (http::Options::sessions is None)");
    }
    let ui = options.ui.then(|| ui::Ui::start(server.engine()));
    let serve_ui = ui.is_some();
    let app = Arc::new(App { server, options, sessions: Mutex::new(FastMap::default()), stop, ui, listens: modern::Listens::default() });
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(end_idle_sessions(Arc::downgrade(&app)));
    }
    let mut router = Router::new().route("/mcp", post(post_message).get(get_stream).delete(delete_session));
    if let Some(resource) = app.options.auth.as_ref().and_then(|auth| auth.resource()) {
        const ROOT: &str = "/.well-known/oauth-protected-resource";
        let mut paths = vec![ROOT.to_owned(), format!("{ROOT}/mcp"), resource.metadata_path()];
        paths.sort();
        paths.dedup();
        for path in paths {
            router = router.route(&path, get(get_resource_metadata));
        }
    }
    if serve_metrics {
        router = router.route("/metrics", get(get_metrics));
    }
    if serve_ui {
        router = router.merge(ui::routes());
    }
    let counted = app.server.metrics().clone();
    // An explicit fallback, so that the counting layer sees unknown paths too.
    let scheme = if app.options.tls.is_some() { "https" } else { "http" };
    let router = router
        .fallback(move |headers: HeaderMap, uri: axum::http::Uri| no_endpoint(scheme, headers, uri))
        .layer(middleware::from_fn_with_state(counted, count_request));
    (Arc::clone(&app), router.with_state(app))
}

/// Counts each request by method and the status it was answered with (an SSE stream when
/// its headers leave).
async fn count_request(State(metrics): State<Metrics>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let response = next.run(request).await;
    metrics.http_request(method.as_str(), response.status().as_u16());
    response
}

/// `GET /.well-known/oauth-protected-resource[/…]` (RFC 9728), after the Host and Origin
/// checks: no token, since it tells a client how to get one.
async fn get_resource_metadata(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(rejection) = guard::guard_host(&app.options, &headers) {
        return *rejection;
    }
    match app.options.auth.as_ref().and_then(|auth| auth.resource()) {
        Some(resource) => json(StatusCode::OK, &resource.document()),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `GET /metrics`: the Prometheus text format, after the Host, Origin and token checks.
async fn get_metrics(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(rejection) = guard(&app.options, &headers).await {
        return *rejection;
    }
    let sessions = app.sessions().len();
    let text = app.server.metrics().render(&app.server.tools().names(), sessions);
    ([(header::CONTENT_TYPE, transport::METRICS_CONTENT_TYPE)], text).into_response()
}

/// The endpoint's state: the server, the guards, the live sessions.
struct App {
    server: Server,
    options: Options,
    /// Live sessions by id. A std mutex: lookups and inserts only.
    sessions: Mutex<FastMap<String, Arc<HttpSession>>>,
    stop: CancellationToken,
    /// The web view's live state, when `/ui` is served.
    ui: Option<Arc<ui::Ui>>,
    /// Open 2026-07-28 `subscriptions/listen` streams by principal.
    listens: modern::Listens,
}

type Rejection = Box<Response>;

// The request whole rather than axum's `HeaderMap` extractor, which clones the headers.
async fn post_message(State(app): State<Arc<App>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    match app.post(&parts.headers, body).await {
        Ok(response) | Err(response) => response,
    }
}

async fn get_stream(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    app.get(&headers).await.unwrap_or_else(|rejection| *rejection)
}

async fn delete_session(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let principal = match guard(&app.options, &headers).await {
        Ok(principal) => principal,
        Err(rejection) => return *rejection,
    };
    match app.session_for(&headers, &principal).await {
        Ok((id, http)) => {
            app.sessions().remove(&id);
            http.peer.conn().abort();
            // On a shared store, for every replica: their next request of it reads no record.
            if let Some(sessions) = app.stored_sessions()
                && let Err(err) = sessions.end_session(&id).await
            {
                tracing::warn!(session = %id, error = %err, "could not delete the stored session");
                return unavailable();
            }
            tracing::info!(session = %id, "session ended by DELETE");
            StatusCode::OK.into_response()
        }
        Err(rejection) => *rejection,
    }
}

/// Copies the HTTP `traceparent` and `tracestate` headers of a `tools/call` (either era) into
/// its `params._meta`, where the codecs read a task's trace context, unless `_meta` carries
/// its own `traceparent` (the message's own context wins over the transport's; a `tracestate`
/// goes only with the `traceparent` it came with). The values are checked later, where they
/// are read: a malformed one is ignored there, as one in `_meta` is.
fn carry_trace_headers(headers: &HeaderMap, request: &mut jsonrpc::Request) {
    if request.method != "tools/call" {
        return;
    }
    let Some(traceparent) = headers.get(names::TRACEPARENT).and_then(|value| value.to_str().ok()) else { return };
    let Some(params) = request.params.as_mut().and_then(Value::as_object_mut) else { return };
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(meta) = meta.as_object_mut() else { return };
    if meta.contains_key("traceparent") {
        return;
    }
    meta.insert("traceparent".to_owned(), Value::String(traceparent.to_owned()));
    meta.remove("tracestate");
    if let Some(tracestate) = headers.get(names::TRACESTATE).and_then(|value| value.to_str().ok()) {
        meta.insert("tracestate".to_owned(), Value::String(tracestate.to_owned()));
    }
}

impl App {
    /// Where sessions are stored for the other replicas ([`Options::sessions`]); `None` when
    /// they live in this process's memory alone.
    fn stored_sessions(&self) -> Option<&Arc<dyn SessionStore>> {
        self.options.sessions.as_ref()
    }

    async fn post(&self, headers: &HeaderMap, body: Body) -> Result<Response, Response> {
        let principal = guard(&self.options, headers).await.map_err(|r| *r)?;
        // Read once: whether the answer may be an SSE stream.
        let sse = accepts(headers, "text/event-stream");
        if !sse && !accepts(headers, "application/json") {
            return Err(error(StatusCode::NOT_ACCEPTABLE, RpcError::invalid_request(
                "Not Acceptable: the client must accept application/json and text/event-stream",
            )));
        }
        let json_body = headers
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().get(..16).is_some_and(|media| media.eq_ignore_ascii_case("application/json")));
        if !json_body {
            return Err(error(StatusCode::UNSUPPORTED_MEDIA_TYPE, RpcError::invalid_request(
                "Unsupported Media Type: send the JSON-RPC message as application/json",
            )));
        }
        let limit = self.options.max_body;
        let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
            error(StatusCode::PAYLOAD_TOO_LARGE, RpcError::invalid_request(format!(
                "Request body too large: the limit is {limit} bytes"
            )))
        })?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| error(StatusCode::BAD_REQUEST, RpcError::parse_error("Parse error: the body is not UTF-8")))?;
        // The error names what was wrong, as over stdio, and goes to the id if it was read.
        let mut incoming = jsonrpc::parse(text).map_err(|failure| json(StatusCode::BAD_REQUEST, &failure.to_response()))?;
        if let Incoming::Request(request) = &mut incoming {
            carry_trace_headers(headers, request);
        }
        // The router decides where it goes (its era, once); this transport does what it says.
        match transport::route(&self.server, incoming, &Headers(headers)) {
            // Served on its own, no session.
            Routed::Exchange(exchange) => Ok(modern::serve(self, sse, principal, exchange).await),
            // Nothing to answer (a sessionless notification of an era without them over HTTP).
            Routed::Accepted => Ok(StatusCode::ACCEPTED.into_response()),
            Routed::OpensSession(message) => Ok(self.initialize(principal, message).await),
            Routed::InSession(message) => self.post_in_session(headers, sse, principal, message).await,
        }
    }

    /// A message of a session; `sse`: the client accepts an SSE answer.
    async fn post_in_session(&self, headers: &HeaderMap, sse: bool, principal: Principal, message: SessionMessage) -> Result<Response, Response> {
        let (id, http) = self.session_for(headers, &principal).await.map_err(|r| *r)?;
        let _busy = Busy::new(&http);
        if let Some(refusal) = message.refusal() {
            return Err(error(StatusCode::BAD_REQUEST, refusal.clone()));
        }
        let Incoming::Request(request) = message.incoming() else {
            http.peer.serve(message).spawn();
            return Ok(StatusCode::ACCEPTED.into_response());
        };
        let request_id = request.id.clone();
        tracing::debug!(session = %id, method = %request.method, "request");
        if sse && message.streams() {
            self.stream_room(&http, Some(&request_id)).map_err(|r| *r)?;
            let events = http.open_stream(&request_id);
            // The request's work runs in this task while its answer is awaited.
            let work = http.peer.serve(message);
            Ok(sse_coalesced(&self.stop, events, Busy::new(&http), work).await)
        } else {
            let reply = http.await_json(&request_id);
            let mut work = http.peer.serve(message);
            match work.alongside(reply).await {
                Ok(message) => Ok(json_message(StatusCode::OK, &message)),
                // The request was cancelled (no reply is due) or the session ended.
                Err(_) => Ok(StatusCode::ACCEPTED.into_response()),
            }
        }
    }

    async fn initialize(&self, principal: Principal, message: SessionMessage) -> Response {
        let Incoming::Request(request) = message.incoming() else { return StatusCode::BAD_REQUEST.into_response() };
        let max = self.options.max_sessions_per_principal;
        let held = self.sessions().values().filter(|http| http.principal == principal).count();
        if held >= max {
            tracing::warn!(principal = %principal, max, "refused a session over max_sessions_per_principal");
            return limit_refusal(Some(&request.id), "max_sessions_per_principal", max, held, format!(
                "Too many sessions: each principal may hold at most {max} sessions at once \
                 (max_sessions_per_principal) and you hold {held}. End sessions you no longer use \
                 (DELETE with their Mcp-Session-Id) or wait until idle ones expire; your tasks stay readable from any session."
            ));
        }
        let id = TaskId::random().to_string();
        let listing = if self.options.auth.is_some() { Listing::Principal } else { Listing::Session };
        let http = HttpSession::open(self.server.clone(), principal, listing, self.options.max_stream_events);
        let reply = http.await_json(&request.id);
        http.peer.serve(message).spawn();
        let Ok(message) = reply.await else {
            return error(StatusCode::INTERNAL_SERVER_ERROR, RpcError::internal("initialize got no answer"));
        };
        let message = message.into_value();
        if message.get("result").is_none() {
            http.peer.conn().abort();
            return json(StatusCode::OK, &message);
        }
        if let Some(sessions) = self.stored_sessions() {
            // Stored before its id leaves, so that any replica serves its next request.
            http.peer.conn().set_stored_as(&id, sessions);
            let state = http.peer.legacy_state().unwrap_or(Value::Null);
            let record = SessionRecord::put(&id, &http.principal, state, self.server.engine().now());
            if let Err(err) = sessions.put_session(&record).await {
                tracing::warn!(error = %err, "could not store a new session");
                http.peer.conn().abort();
                return unavailable();
            }
        }
        self.sessions().insert(id.clone(), Arc::clone(&http));
        tracing::info!(session = %id, principal = %http.principal, "session started");
        let mut response = json(StatusCode::OK, &message);
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(names::MCP_SESSION_ID, value);
        }
        response
    }

    async fn get(&self, headers: &HeaderMap) -> Result<Response, Rejection> {
        let principal = guard(&self.options, headers).await?;
        if !accepts(headers, "text/event-stream") {
            return Err(Box::new(error(StatusCode::NOT_ACCEPTABLE, RpcError::invalid_request(
                "Not Acceptable: GET opens an SSE stream; accept text/event-stream",
            ))));
        }
        let (_, http) = self.session_for(headers, &principal).await?;
        self.stream_room(&http, None)?;
        let events = match headers.get(names::LAST_EVENT_ID).and_then(|value| value.to_str().ok()) {
            Some(last) => {
                let Some((stream, seq)) = parse_event_id(last) else {
                    return Err(Box::new(error(StatusCode::BAD_REQUEST, RpcError::invalid_request(format!(
                        "Bad Request: Last-Event-ID {last:?} is not an event id of this server"
                    )))));
                };
                http.resume(stream, seq).ok_or_else(|| {
                    Box::new(error(StatusCode::NOT_FOUND, RpcError::invalid_request(format!(
                        "Not Found: no stream to resume for Last-Event-ID {last:?}"
                    ))))
                })?
            }
            None => http.attach_standalone().ok_or_else(|| {
                Box::new(error(StatusCode::CONFLICT, RpcError::invalid_request(
                    "Conflict: this session already has a standalone SSE stream open",
                )))
            })?,
        };
        // A GET stream ends with its session too (DELETE, expiry): nothing more comes on it,
        // and its Busy guard must not keep the ended session alive.
        let ends = self.stop.child_token();
        let (closed, ending) = (http.peer.conn().closed().clone(), ends.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = closed.cancelled() => ending.cancel(),
                () = ending.cancelled() => {}
            }
        });
        Ok(sse(&ends, events, String::new(), Busy::new(&http)))
    }

    /// Whether `http` may open one more SSE stream ([`Options::max_streams_per_session`]);
    /// the refusal goes to `id`, the request that asked for it, if any.
    fn stream_room(&self, http: &HttpSession, id: Option<&jsonrpc::RequestId>) -> Result<(), Rejection> {
        let max = self.options.max_streams_per_session;
        let open = http.live_streams();
        if open < max {
            return Ok(());
        }
        Err(Box::new(limit_refusal(id, "max_streams_per_session", max, open, format!(
            "Too many open streams: a session may have at most {max} SSE streams open at once \
             (max_streams_per_session) and this one has {open}. Close streams you no longer read, \
             or send the request with Accept: application/json alone to be answered as JSON."
        ))))
    }

    /// The session named by `Mcp-Session-Id`, if it belongs to `principal` (another
    /// principal's is answered exactly as an unknown one, 404).
    ///
    /// Without a session store ([`Options::sessions`]), this process's memory alone answers.
    /// With one (many replicas) the stored record decides: a session held here is checked against it
    /// (ended through another replica: 404; a log level another replica set is taken over),
    /// and one not held here is restored from it (its streams start afresh on this replica).
    async fn session_for(&self, headers: &HeaderMap, principal: &Principal) -> Result<(String, Arc<HttpSession>), Rejection> {
        let Some(id) = headers.get(names::MCP_SESSION_ID).and_then(|value| value.to_str().ok()) else {
            return Err(Box::new(error(StatusCode::BAD_REQUEST, RpcError::invalid_request(
                "Bad Request: Mcp-Session-Id header is required; send initialize first to get one",
            ))));
        };
        let held = match self.sessions().get(id) {
            Some(http) if &http.principal == principal => Some(Arc::clone(http)),
            Some(_) => return Err(no_such_session()),
            None => None,
        };
        let Some(sessions) = self.stored_sessions() else {
            return held.map(|http| (id.to_owned(), http)).ok_or_else(no_such_session);
        };
        let record = match sessions.session(id, principal).await {
            Ok(record) => record,
            Err(err) => {
                tracing::warn!(error = %err, "could not read a stored session");
                return Err(Box::new(unavailable()));
            }
        };
        let Some(record) = record else {
            if let Some(http) = held {
                self.sessions().remove(id);
                http.peer.conn().abort();
                tracing::info!(session = %id, "session ended through another replica");
            }
            return Err(no_such_session());
        };
        match held {
            Some(http) => {
                if let Err(err) = http.peer.refresh_legacy(&record.state, record.created) {
                    tracing::warn!(session = %id, error = %err, "the stored session's state is unreadable; keeping this replica's");
                }
                Ok((id.to_owned(), http))
            }
            None => self.restore(record, sessions).map(|http| (id.to_owned(), http)),
        }
    }

    /// Serves stored session `record` on this replica from now on: a new connection with the
    /// session `initialize` made elsewhere (or here, before this replica let it go).
    fn restore(&self, record: SessionRecord, sessions: &Arc<dyn SessionStore>) -> Result<Arc<HttpSession>, Rejection> {
        let listing = if self.options.auth.is_some() { Listing::Principal } else { Listing::Session };
        let http = HttpSession::open(self.server.clone(), record.owner.clone(), listing, self.options.max_stream_events);
        http.peer.conn().set_stored_as(&record.id, sessions);
        if let Err(err) = http.peer.restore_legacy(&record.state, record.created) {
            http.peer.conn().abort();
            tracing::warn!(session = %record.id, error = %err, "a stored session cannot be served");
            return Err(Box::new(error(StatusCode::NOT_FOUND, RpcError::invalid_request(format!(
                "Not Found: the stored session cannot be served by this server ({err}); initialize a new one"
            )))));
        }
        // Two requests restoring it at once: the first one in memory serves both.
        let mut sessions = self.sessions();
        match sessions.entry(record.id.clone()) {
            std::collections::hash_map::Entry::Occupied(held) => {
                http.peer.conn().abort();
                Ok(Arc::clone(held.get()))
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                tracing::info!(session = %record.id, principal = %record.owner, "stored session now served here too");
                slot.insert(Arc::clone(&http));
                Ok(http)
            }
        }
    }

    fn sessions(&self) -> MutexGuard<'_, FastMap<String, Arc<HttpSession>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn json(status: StatusCode, message: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], serde_json::to_vec(message).unwrap_or_default()).into_response()
}

/// [`json`] of an outgoing [`Message`], written straight from its parts.
fn json_message(status: StatusCode, message: &Message) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], message.to_json_vec()).into_response()
}

/// 429 with the [`LIMIT_EXCEEDED`](mcp_tasks_server::LIMIT_EXCEEDED) error of a transport limit,
/// `data: {"limit": …, "max": …, "current": …}` as for the engine's limits.
fn limit_refusal(id: Option<&jsonrpc::RequestId>, limit: &str, max: usize, current: usize, message: String) -> Response {
    let rpc = RpcError::new(mcp_tasks_server::LIMIT_EXCEEDED, message).with_data(serde_json::json!({"limit": limit, "max": max, "current": current}));
    json(StatusCode::TOO_MANY_REQUESTS, &jsonrpc::error_response(id, &rpc))
}

/// 404 for a session id this server does not know (or that is another principal's).
fn no_such_session() -> Rejection {
    Box::new(error(StatusCode::NOT_FOUND, RpcError::invalid_request(
        "Not Found: no such session (it ended or never existed); initialize a new one",
    )))
}

/// 503: the shared task store did not answer (the cause is logged); the client may retry.
fn unavailable() -> Response {
    error(StatusCode::SERVICE_UNAVAILABLE, RpcError::internal(
        "Service Unavailable: the task store did not answer; retry in a moment",
    ))
}

/// An HTTP error whose body is a JSON-RPC error without id.
fn error(status: StatusCode, rpc: RpcError) -> Response {
    json(status, &jsonrpc::error_response(None, &rpc))
}

