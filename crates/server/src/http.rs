//! The Streamable HTTP transport of 2025-11-25 on axum: one endpoint (`/mcp`) for POST
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

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use mcp_tasks_engine::{Principal, TaskId};
use mcp_tasks_protocol::jsonrpc::{self, Incoming, RequestId, RpcError};
use mcp_tasks_protocol::legacy::{self, method};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::dispatch;
use crate::server::Server;
use crate::session::{Listing, Outbound, Route, Session};

/// The principal of every request when no tokens are configured. Such requestors are not
/// identified: a task id is the capability to read it, and listing is per session.
pub const ANONYMOUS_PRINCIPAL: &str = "anonymous";
/// The standalone (GET) stream of a session.
const STANDALONE: u64 = 0;
/// Events of the standalone stream kept for clients that are not connected.
const STANDALONE_BACKLOG: usize = 1000;
/// Finished POST streams kept per session for resumption.
const FINISHED_KEPT: usize = 64;
/// Protocol versions a client may name in `MCP-Protocol-Version`: every released revision
/// whose Streamable HTTP rules these are. The session's behaviour follows the version
/// negotiated at `initialize` (2025-11-25); an unknown or malformed value is 400.
const SUPPORTED_VERSIONS: &[&str] = &[legacy::PROTOCOL_VERSION, "2025-06-18", "2025-03-26"];
/// How long a client should wait before reconnecting to a broken stream (the `retry`
/// field of each stream's priming event).
const RETRY: Duration = Duration::from_secs(1);
/// How many times a POST that is answered on an SSE stream yields to its handler before it
/// sends the response headers: a reply ready by then (a handler that needs no I/O) leaves
/// with the headers and the priming event in one write, as a complete body; a slower one
/// streams as before. No timer: waiting costs a few polls, never a wake-up of another thread.
const COALESCE_YIELDS: usize = 4;
/// Interval of the SSE keep-alive comments, which keep idle proxies from closing streams.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// Maps a bearer token to the principal it stands for.
pub trait Authenticate: Send + Sync + 'static {
    /// The principal for `token`, if it is valid.
    fn principal(&self, token: &str) -> Option<Principal>;
}

/// How the HTTP transport guards itself.
#[derive(Clone)]
pub struct Options {
    /// Host names accepted in `Host` besides `localhost`, `127.0.0.1` and `::1`.
    pub allowed_hosts: Vec<String>,
    /// Origins accepted in `Origin` besides `http(s)://localhost|127.0.0.1|[::1][:port]`.
    pub allowed_origins: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// Bearer-token authentication; `None` accepts every request as the anonymous principal.
    pub auth: Option<Arc<dyn Authenticate>>,
    /// A session with no request in progress and no open stream for this long is ended
    /// (as by DELETE: its id then gets 404; its tasks stay and can be fetched from a new
    /// session). Bounds the memory abandoned sessions hold.
    pub session_idle: Duration,
}

impl Default for Options {
    /// Local clients only, 4 MiB bodies, no tokens, sessions idle for 30 minutes ended.
    fn default() -> Options {
        Options {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body: 4 * 1024 * 1024,
            auth: None,
            session_idle: Duration::from_secs(30 * 60),
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
    let app = router(server, options, stop.clone());
    let stopping = stop.clone();
    // Without TCP_NODELAY, the last small write of an SSE answer waits for the client's
    // delayed ACK (Nagle): ~40 ms on every streamed reply.
    let listener = listener.tap_io(|tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(error = %err, "could not set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stopping.cancel();
        })
        .await
}

/// The axum router (one route, `/mcp`), for tests and for embedding. `stop` ends the SSE
/// streams it serves.
///
/// Called inside a Tokio runtime, it also starts the task that ends idle sessions
/// ([`Options::session_idle`]); it stops with `stop` or when the router is dropped.
pub fn router(server: Server, options: Options, stop: CancellationToken) -> Router {
    let app = Arc::new(App { server, options, sessions: Mutex::new(HashMap::new()), stop });
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(end_idle_sessions(Arc::downgrade(&app)));
    }
    Router::new().route("/mcp", post(post_message).get(get_stream).delete(delete_session)).with_state(app)
}

/// Ends the sessions idle for [`Options::session_idle`], checking a few times per period.
async fn end_idle_sessions(app: Weak<App>) {
    let (idle, stop) = match app.upgrade() {
        Some(app) => (app.options.session_idle, app.stop.clone()),
        None => return,
    };
    let mut ticks = tokio::time::interval((idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60)));
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = stop.cancelled() => return,
        }
        let Some(app) = app.upgrade() else { return };
        let now = Instant::now();
        let ended: Vec<(String, Arc<HttpSession>)> = {
            let mut sessions = app.sessions();
            let idle_ids: Vec<String> =
                sessions.iter().filter(|(_, http)| http.idle_since(now) >= idle).map(|(id, _)| id.clone()).collect();
            idle_ids.into_iter().filter_map(|id| sessions.remove(&id).map(|http| (id, http))).collect()
        };
        for (id, http) in ended {
            http.session.abort();
            tracing::info!(session = %id, idle = ?idle, "session ended: idle");
        }
    }
}

struct App {
    server: Server,
    options: Options,
    /// Live sessions by id. A std mutex: lookups and inserts only.
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    stop: CancellationToken,
}

/// One MCP session over HTTP: the protocol session, and where its messages go.
struct HttpSession {
    session: Arc<Session>,
    principal: Principal,
    /// A std mutex: routing decisions and buffer pushes, never across an await.
    routes: Mutex<Routes>,
    /// Requests in progress and open streams, and when the last one began or ended.
    activity: Mutex<Activity>,
}

struct Activity {
    open: usize,
    last: Instant,
}

/// Marks a session busy (a request in progress, a stream open) while it lives.
struct Busy(Arc<HttpSession>);

impl Busy {
    fn new(http: &Arc<HttpSession>) -> Busy {
        let mut activity = http.activity();
        activity.open += 1;
        activity.last = Instant::now();
        drop(activity);
        Busy(Arc::clone(http))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut activity = self.0.activity();
        activity.open = activity.open.saturating_sub(1);
        activity.last = Instant::now();
    }
}

#[derive(Default)]
struct Routes {
    next_stream: u64,
    by_request: HashMap<RequestId, Target>,
    streams: HashMap<u64, Stream>,
    finished: VecDeque<u64>,
}

enum Target {
    Json(oneshot::Sender<Value>),
    Stream(u64),
}

#[derive(Default)]
struct Stream {
    events: VecDeque<(u64, Arc<str>)>,
    next_seq: u64,
    /// Sequence number of the last event handed to a live connection.
    delivered: u64,
    live: Option<mpsc::UnboundedSender<String>>,
    finished: bool,
}

type Rejection = Box<Response>;

async fn post_message(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    match app.post(&headers, body).await {
        Ok(response) | Err(response) => response,
    }
}

async fn get_stream(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    app.get(&headers).unwrap_or_else(|rejection| *rejection)
}

async fn delete_session(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let result = app.guard(&headers).and_then(|principal| app.session_for(&headers, &principal));
    match result {
        Ok((id, http)) => {
            app.sessions().remove(&id);
            http.session.abort();
            tracing::info!(session = %id, "session ended by DELETE");
            StatusCode::OK.into_response()
        }
        Err(rejection) => *rejection,
    }
}

impl App {
    async fn post(&self, headers: &HeaderMap, body: Body) -> Result<Response, Response> {
        let principal = self.guard(headers).map_err(|r| *r)?;
        if !accepts(headers, "application/json") && !accepts(headers, "text/event-stream") {
            return Err(error(StatusCode::NOT_ACCEPTABLE, RpcError::invalid_request(
                "Not Acceptable: the client must accept application/json and text/event-stream",
            )));
        }
        let json_body = headers
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("application/json"));
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
        let incoming = jsonrpc::parse(text).map_err(|failure| {
            let mut response = error(StatusCode::BAD_REQUEST, failure.error);
            if let Some(id) = failure.id {
                *response.body_mut() = Body::from(jsonrpc::error_response(Some(&id), &RpcError::invalid_request("")).to_string());
            }
            response
        })?;
        if let Incoming::Request(request) = &incoming
            && request.method == method::INITIALIZE
            && !headers.contains_key("mcp-session-id")
        {
            return Ok(self.initialize(principal, incoming).await);
        }
        let (id, http) = self.session_for(headers, &principal).map_err(|r| *r)?;
        let _busy = Busy::new(&http);
        if let Some(version) = headers.get("mcp-protocol-version") {
            let version = version.to_str().unwrap_or("");
            if !SUPPORTED_VERSIONS.contains(&version) {
                return Err(error(StatusCode::BAD_REQUEST, RpcError::invalid_request(format!(
                    "Bad Request: unsupported MCP-Protocol-Version {version:?}; supported: {}",
                    SUPPORTED_VERSIONS.join(", ")
                ))));
            }
        }
        let Incoming::Request(request) = incoming else {
            dispatch::handle_incoming(&http.session, incoming);
            return Ok(StatusCode::ACCEPTED.into_response());
        };
        tracing::debug!(session = %id, method = %request.method, "request");
        if accepts(headers, "text/event-stream") && streams(&request.method) {
            let events = http.open_stream(&request.id);
            dispatch::handle_incoming(&http.session, Incoming::Request(request));
            Ok(self.sse_coalesced(events, Busy::new(&http)).await)
        } else {
            let reply = http.await_json(&request.id);
            dispatch::handle_incoming(&http.session, Incoming::Request(request));
            match reply.await {
                Ok(message) => Ok(json(StatusCode::OK, &message)),
                // The request was cancelled (no reply is due) or the session ended.
                Err(_) => Ok(StatusCode::ACCEPTED.into_response()),
            }
        }
    }

    async fn initialize(&self, principal: Principal, incoming: Incoming) -> Response {
        let Incoming::Request(request) = &incoming else { return StatusCode::BAD_REQUEST.into_response() };
        let id = TaskId::random().to_string();
        let listing = if self.options.auth.is_some() { Listing::Principal } else { Listing::Session };
        let (out, outgoing) = mpsc::unbounded_channel();
        let session = Session::start(self.server.clone(), principal.clone(), listing, out);
        let http = Arc::new(HttpSession {
            session,
            principal,
            routes: Mutex::new(Routes { next_stream: 1, ..Routes::default() }),
            activity: Mutex::new(Activity { open: 0, last: Instant::now() }),
        });
        tokio::spawn(pump(Arc::downgrade(&http), outgoing));
        let weak = Arc::downgrade(&http);
        http.session.set_standalone_probe(Box::new(move || weak.upgrade().is_some_and(|http| http.standalone_is_open())));
        let reply = http.await_json(&request.id);
        dispatch::handle_incoming(&http.session, incoming);
        let Ok(message) = reply.await else {
            return error(StatusCode::INTERNAL_SERVER_ERROR, RpcError::internal("initialize got no answer"));
        };
        if message.get("result").is_none() {
            http.session.abort();
            return json(StatusCode::OK, &message);
        }
        self.sessions().insert(id.clone(), Arc::clone(&http));
        tracing::info!(session = %id, principal = %http.principal, "session started");
        let mut response = json(StatusCode::OK, &message);
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert("mcp-session-id", value);
        }
        response
    }

    fn get(&self, headers: &HeaderMap) -> Result<Response, Rejection> {
        let principal = self.guard(headers)?;
        if !accepts(headers, "text/event-stream") {
            return Err(Box::new(error(StatusCode::NOT_ACCEPTABLE, RpcError::invalid_request(
                "Not Acceptable: GET opens an SSE stream; accept text/event-stream",
            ))));
        }
        let (_, http) = self.session_for(headers, &principal)?;
        let events = match headers.get("last-event-id").and_then(|value| value.to_str().ok()) {
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
        Ok(self.sse(events, String::new(), Busy::new(&http)))
    }

    /// Host and Origin checks, then the principal.
    fn guard(&self, headers: &HeaderMap) -> Result<Principal, Rejection> {
        let host = headers.get(header::HOST).and_then(|value| value.to_str().ok()).unwrap_or("");
        if !self.host_allowed(host) {
            tracing::warn!(host, "refused a request for a foreign Host");
            return Err(Box::new(error(StatusCode::FORBIDDEN, RpcError::invalid_request(format!(
                "Forbidden: Host {host:?} is not allowed (add it to server.allowed_hosts)"
            )))));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.origin_allowed(origin) {
                tracing::warn!(origin, "refused a request from a foreign Origin");
                return Err(Box::new(error(StatusCode::FORBIDDEN, RpcError::invalid_request(format!(
                    "Forbidden: Origin {origin:?} is not allowed (add it to server.allowed_origins)"
                )))));
            }
        }
        let Some(auth) = &self.options.auth else {
            return Ok(Principal::new(ANONYMOUS_PRINCIPAL));
        };
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")));
        match token.and_then(|token| auth.principal(token.trim())) {
            Some(principal) => Ok(principal),
            None => {
                let mut response = error(StatusCode::UNAUTHORIZED, RpcError::invalid_request(
                    "Unauthorized: send Authorization: Bearer <token> with a token this server knows",
                ));
                let challenge = if token.is_some() {
                    r#"Bearer realm="mcp-tasks", error="invalid_token""#
                } else {
                    r#"Bearer realm="mcp-tasks""#
                };
                response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
                Err(Box::new(response))
            }
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        mcp_tasks_config::hosts::host_allowed(&self.options.allowed_hosts, host)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        mcp_tasks_config::hosts::origin_allowed(&self.options.allowed_origins, origin)
    }

    /// The session named by `Mcp-Session-Id`, if it belongs to `principal`.
    fn session_for(&self, headers: &HeaderMap, principal: &Principal) -> Result<(String, Arc<HttpSession>), Rejection> {
        let Some(id) = headers.get("mcp-session-id").and_then(|value| value.to_str().ok()) else {
            return Err(Box::new(error(StatusCode::BAD_REQUEST, RpcError::invalid_request(
                "Bad Request: Mcp-Session-Id header is required; send initialize first to get one",
            ))));
        };
        match self.sessions().get(id) {
            Some(http) if &http.principal == principal => Ok((id.to_owned(), Arc::clone(http))),
            _ => Err(Box::new(error(StatusCode::NOT_FOUND, RpcError::invalid_request(
                "Not Found: no such session (it ended or never existed); initialize a new one",
            )))),
        }
    }

    /// A quick answer in one piece: lets the request's handler run first (yielding up to
    /// [`COALESCE_YIELDS`] times, no timer) and, if the stream has finished (its reply
    /// sent), answers its events (the priming event first, the same ids) as one complete SSE
    /// body, which leaves in one write with the headers instead of one chunk per event.
    /// Otherwise the events so far open the stream of [`App::sse`].
    async fn sse_coalesced(&self, mut events: mpsc::UnboundedReceiver<String>, busy: Busy) -> Response {
        let mut first = String::new();
        for _ in 0..COALESCE_YIELDS {
            loop {
                match events.try_recv() {
                    Ok(frame) => first.push_str(&frame),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        let headers = [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")];
                        return (StatusCode::OK, headers, first).into_response();
                    }
                }
            }
            tokio::task::yield_now().await;
        }
        self.sse(events, first, busy)
    }

    /// An SSE response carrying `first` (frames already taken from `events`, if any), then
    /// the frames of `events`, with a keep-alive comment every 15 s, until the channel closes
    /// or the server stops. `busy` keeps the session from expiring while the stream is open.
    fn sse(&self, events: mpsc::UnboundedReceiver<String>, first: String, busy: Busy) -> Response {
        let keepalive = tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
        let first = Some(first).filter(|first| !first.is_empty());
        let state = (events, self.stop.clone(), keepalive, first, busy);
        let stream = futures_util::stream::unfold(state, |(mut events, stop, mut keepalive, first, busy)| async move {
            let frame = match first {
                Some(first) => first,
                None => tokio::select! {
                    frame = events.recv() => frame?,
                    _ = keepalive.tick() => ": keep-alive\n\n".to_owned(),
                    _ = stop.cancelled() => return None,
                },
            };
            Some((Ok::<_, Infallible>(Bytes::from(frame)), (events, stop, keepalive, None, busy)))
        });
        let headers = [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")];
        (StatusCode::OK, headers, Body::from_stream(stream)).into_response()
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl HttpSession {
    fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn activity(&self) -> MutexGuard<'_, Activity> {
        self.activity.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How long the session has been idle at `now` (zero while it is busy).
    fn idle_since(&self, now: Instant) -> Duration {
        let activity = self.activity();
        if activity.open > 0 { Duration::ZERO } else { now.saturating_duration_since(activity.last) }
    }

    /// A new SSE stream for request `id`; its first event is the priming event.
    fn open_stream(&self, id: &RequestId) -> mpsc::UnboundedReceiver<String> {
        let mut routes = self.routes();
        let stream = routes.next_stream;
        routes.next_stream += 1;
        routes.by_request.insert(id.clone(), Target::Stream(stream));
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(priming(stream));
        routes.streams.insert(stream, Stream { next_seq: 1, live: Some(tx), ..Stream::default() });
        rx
    }

    fn await_json(&self, id: &RequestId) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        self.routes().by_request.insert(id.clone(), Target::Json(tx));
        rx
    }

    /// Replays stream `stream` after `seq` on a new connection and keeps it live if the
    /// stream is not finished.
    fn resume(&self, stream: u64, seq: u64) -> Option<mpsc::UnboundedReceiver<String>> {
        let mut routes = self.routes();
        let buffer = routes.streams.get_mut(&stream)?;
        let (tx, rx) = mpsc::unbounded_channel();
        for (n, data) in buffer.events.iter().filter(|(n, _)| *n > seq) {
            let _ = tx.send(frame(stream, *n, data));
            buffer.delivered = buffer.delivered.max(*n);
        }
        if !buffer.finished {
            buffer.live = Some(tx);
        }
        Some(rx)
    }

    /// Whether a client is connected to the standalone (GET) stream.
    fn standalone_is_open(&self) -> bool {
        self.routes().streams.get(&STANDALONE).and_then(|stream| stream.live.as_ref()).is_some_and(|live| !live.is_closed())
    }

    /// Opens the standalone stream and flushes what it missed; `None` if one is open.
    fn attach_standalone(&self) -> Option<mpsc::UnboundedReceiver<String>> {
        let mut routes = self.routes();
        let buffer = routes.streams.entry(STANDALONE).or_insert_with(|| Stream { next_seq: 1, ..Stream::default() });
        if buffer.live.as_ref().is_some_and(|live| !live.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(priming(STANDALONE));
        let delivered = buffer.delivered;
        for (n, data) in buffer.events.iter().filter(|(n, _)| *n > delivered) {
            let _ = tx.send(frame(STANDALONE, *n, data));
            buffer.delivered = *n;
        }
        buffer.live = Some(tx);
        Some(rx)
    }

    /// Puts an outgoing message where its route says.
    fn route(&self, outbound: Outbound) {
        let mut routes = self.routes();
        let stream = match &outbound.route {
            Route::Reply(id) => match routes.by_request.remove(id) {
                Some(Target::Json(waiter)) => {
                    let _ = waiter.send(outbound.message);
                    return;
                }
                Some(Target::Stream(stream)) => {
                    routes.push(stream, &outbound.message);
                    routes.finish(stream);
                    return;
                }
                None => return, // nobody waits for it any more
            },
            Route::Related(id) => match routes.by_request.get(id) {
                Some(Target::Stream(stream)) => *stream,
                _ => STANDALONE,
            },
            Route::General => STANDALONE,
        };
        routes.push(stream, &outbound.message);
    }
}

impl Routes {
    fn push(&mut self, stream: u64, message: &Value) {
        let buffer = self.streams.entry(stream).or_insert_with(|| Stream { next_seq: 1, ..Stream::default() });
        let seq = buffer.next_seq;
        buffer.next_seq += 1;
        let data: Arc<str> = Arc::from(message.to_string());
        if let Some(live) = &buffer.live {
            if live.send(frame(stream, seq, &data)).is_ok() {
                buffer.delivered = seq;
            } else {
                buffer.live = None;
            }
        }
        buffer.events.push_back((seq, data));
        if stream == STANDALONE && buffer.events.len() > STANDALONE_BACKLOG {
            buffer.events.pop_front();
        }
    }

    /// Ends a POST stream after its reply: the live connection closes once it has sent the
    /// events; the buffer stays for resumption until pruned.
    fn finish(&mut self, stream: u64) {
        if let Some(buffer) = self.streams.get_mut(&stream) {
            buffer.finished = true;
            buffer.live = None;
        }
        self.finished.push_back(stream);
        while self.finished.len() > FINISHED_KEPT {
            if let Some(old) = self.finished.pop_front() {
                self.streams.remove(&old);
            }
        }
    }
}

/// Moves a session's outgoing messages to their streams until the session is gone.
async fn pump(http: Weak<HttpSession>, mut outgoing: mpsc::UnboundedReceiver<Outbound>) {
    while let Some(outbound) = outgoing.recv().await {
        let Some(http) = http.upgrade() else { return };
        http.route(outbound);
    }
}

/// Requests whose answer may take long or come with related messages: answered on an SSE
/// stream. Others are answered as plain JSON (2025-11-25: servers SHOULD NOT upgrade a
/// `tasks/get` to SSE).
fn streams(method: &str) -> bool {
    matches!(method, method::TOOLS_CALL | method::TASKS_RESULT | method::PROMPTS_GET | method::COMPLETION_COMPLETE)
}

fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|value| value.to_str().ok()).any(|value| {
        value.split(',').map(|part| part.split(';').next().unwrap_or("").trim()).any(|part| {
            part.eq_ignore_ascii_case(media) || part == "*/*"
        })
    })
}

/// The first event of a stream: an id to resume from and an empty `data` (2025-11-25
/// transport: SHOULD prime the stream), with the reconnection delay. Frames are written
/// here rather than with axum's SSE type, which drops an empty `data` field.
fn priming(stream: u64) -> String {
    format!("id: {}\nretry: {}\ndata: \n\n", event_id(stream, 0), RETRY.as_millis())
}

/// One SSE event carrying a JSON-RPC message (serialized JSON has no raw newlines).
fn frame(stream: u64, seq: u64, data: &str) -> String {
    format!("id: {}\ndata: {data}\n\n", event_id(stream, seq))
}

fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

fn json(status: StatusCode, message: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], message.to_string()).into_response()
}

/// An HTTP error whose body is a JSON-RPC error without id.
fn error(status: StatusCode, rpc: RpcError) -> Response {
    json(status, &jsonrpc::error_response(None, &rpc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip() {
        assert_eq!(parse_event_id(&event_id(3, 17)), Some((3, 17)));
        assert_eq!(parse_event_id("x-1"), None);
        assert_eq!(parse_event_id("12"), None);
    }
}
