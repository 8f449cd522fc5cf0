//! Streamable HTTP sessions, the Legacy part of the transport (2025-11-25: `initialize`
//! without `Mcp-Session-Id` starts one; every later message names it): each session's
//! connection, the routing of its outgoing
//! messages onto SSE streams (a request's own stream, or the standalone GET stream), the
//! buffers that let a broken stream be resumed with `Last-Event-ID`, and the ending of
//! sessions left idle. On a shared store (many replicas) a session is also a record in the
//! store, which any replica serves it from: this replica marks the records of the sessions it
//! served used, and prunes those nobody used for the idle period. A session's streams stay
//! on the replica that opened them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use mcp_tasks_engine::{FastMap, Principal, SessionStore, Timestamp};
use mcp_tasks_protocol::jsonrpc::RequestId;
use tokio::sync::{mpsc, oneshot};

use mcp_tasks_server::Server;
use mcp_tasks_server::transport::{BuildMessage, Connection, Listing, Message, Outbound, Peer, Route};

use super::App;
use super::sse::{frame, priming};

/// The standalone (GET) stream of a session.
pub(super) const STANDALONE: u64 = 0;
/// Finished POST streams kept per session for resumption.
const FINISHED_KEPT: usize = 64;

/// Ends the sessions idle for [`Options::session_idle`](super::Options::session_idle), checking a few times per period.
pub(super) async fn end_idle_sessions(app: Weak<App>) {
    let (idle, stop) = match app.upgrade() {
        Some(app) => (app.options.session_idle, app.stop.clone()),
        None => return,
    };
    let mut ticks = tokio::time::interval((idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60)));
    let mut last_sync = Instant::now();
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = stop.cancelled() => return,
        }
        let Some(app) = app.upgrade() else { return };
        let tick = Instant::now();
        end_idle_once(&app, tick);
        if let Some(sessions) = app.stored_sessions() {
            sync_stored(&app, &**sessions, last_sync).await;
        }
        last_sync = tick;
    }
}

/// How many stored sessions one pass touches per statement, and prunes at most.
const STORED_BATCH: usize = 500;

/// On a shared store, one pass of the sessions' records: marks used those this replica served
/// since `since` (so that no replica prunes a session in use elsewhere), lets go of those whose
/// record is gone (ended through another replica: their GET streams end), and deletes the
/// records nobody used for [`Options::session_idle`](super::Options::session_idle), a bounded batch.
async fn sync_stored(app: &App, sessions: &dyn SessionStore, since: Instant) {
    let engine = app.server.engine();
    let used: Vec<String> =
        app.sessions().iter().filter(|(_, http)| http.used_since(since)).map(|(id, _)| id.clone()).collect();
    for batch in used.chunks(STORED_BATCH) {
        let stored = match sessions.touch_sessions(batch, engine.now()).await {
            Ok(stored) => stored,
            Err(err) => {
                tracing::warn!(error = %err, "could not mark the sessions used in the store; trying again next pass");
                return;
            }
        };
        for id in batch.iter().filter(|id| !stored.contains(id)) {
            if let Some(http) = app.sessions().remove(id) {
                http.peer.conn().abort();
                tracing::info!(session = %id, "session ended through another replica");
            }
        }
    }
    let idle_ms = i64::try_from(app.options.session_idle.as_millis()).unwrap_or(i64::MAX);
    let idle_before = Timestamp(engine.now().0.saturating_sub(idle_ms));
    match sessions.prune_sessions(idle_before, STORED_BATCH as u32).await {
        Ok(0) => {}
        Ok(pruned) => tracing::info!(pruned, "stored sessions ended: idle"),
        Err(err) => tracing::warn!(error = %err, "could not prune idle stored sessions"),
    }
}

/// Ends the sessions idle for [`Options::session_idle`](super::Options::session_idle) at
/// `now` (injected, so that a test can say when "now" is); returns how many it ended.
pub(super) fn end_idle_once(app: &App, now: Instant) -> usize {
    let idle = app.options.session_idle;
    let ended: Vec<(String, Arc<HttpSession>)> = {
        let mut sessions = app.sessions();
        let idle_ids: Vec<String> =
            sessions.iter().filter(|(_, http)| http.idle_since(now) >= idle).map(|(id, _)| id.clone()).collect();
        idle_ids.into_iter().filter_map(|id| sessions.remove(&id).map(|http| (id, http))).collect()
    };
    for (id, http) in &ended {
        http.peer.conn().abort();
        tracing::info!(session = %id, idle = ?idle, "session ended: idle");
    }
    ended.len()
}

/// One MCP session over HTTP: the connection (and the Legacy session `initialize` puts on
/// it), and where its messages go.
pub(super) struct HttpSession {
    pub(super) peer: Arc<Peer>,
    pub(super) principal: Principal,
    /// A std mutex: routing decisions and buffer pushes, never across an await.
    routes: Mutex<Routes>,
    /// Requests in progress and open streams, and when the last one began or ended.
    activity: Mutex<Activity>,
    /// The events a stream buffers, kept and in flight ([`Options::max_stream_events`](super::Options::max_stream_events)).
    max_events: usize,
}

struct Activity {
    open: usize,
    last: Instant,
}

/// Marks a session busy (a request in progress, a stream open) while it lives.
pub(super) struct Busy(Arc<HttpSession>);

impl Busy {
    /// The server the busy session belongs to.
    pub(super) fn server(&self) -> &Server {
        self.0.peer.conn().server()
    }

    pub(super) fn new(http: &Arc<HttpSession>) -> Busy {
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
    by_request: FastMap<RequestId, Target>,
    streams: FastMap<u64, Stream>,
    finished: VecDeque<u64>,
    /// The streams that were given a live client and have not finished since: the only ones
    /// [`HttpSession::live_streams`] looks at (a session keeps [`FINISHED_KEPT`] finished
    /// ones, and going over all of them for every streamed request showed in the profile).
    with_live: Vec<u64>,
}

impl Routes {
    fn gave_live(&mut self, stream: u64) {
        if !self.with_live.contains(&stream) {
            self.with_live.push(stream);
        }
    }
}

enum Target {
    Json(oneshot::Sender<Message>),
    Stream(u64),
}

#[derive(Default)]
struct Stream {
    /// Each kept event's sequence number and SSE frame (its id is the same when replayed).
    events: VecDeque<(u64, Event)>,
    next_seq: u64,
    /// Sequence number of the last event handed to a live connection.
    delivered: u64,
    /// The connected client's queue, bounded: a client that does not read has its stream
    /// closed when it is full (it may resume from `events`).
    live: Option<mpsc::Sender<String>>,
    finished: bool,
}

/// An event a stream keeps for its client and for resumption.
enum Event {
    /// Its SSE frame.
    Framed(Arc<str>),
    /// A message not yet built: framed (with the same id) when a client reads it.
    Later(BuildMessage),
}

impl Event {
    /// The event's SSE frame as event `seq` of `stream`.
    fn frame(&self, stream: u64, seq: u64) -> String {
        match self {
            Event::Framed(frame) => frame.to_string(),
            Event::Later(build) => frame(stream, seq, &Message::Json(build())),
        }
    }
}

impl Stream {
    fn is_live(&self) -> bool {
        self.live.as_ref().is_some_and(|live| !live.is_closed())
    }
}

impl HttpSession {
    /// A new session of `principal` (not yet registered under an id): its connection, whose
    /// outgoing messages go onto its streams as they are sent ([`HttpSession::route`]).
    pub(super) fn open(server: Server, principal: Principal, listing: Listing, max_events: usize) -> Arc<HttpSession> {
        let http = Arc::new_cyclic(|session: &Weak<HttpSession>| {
            // Each message is routed by its sender, at once: a message sent once the session is
            // gone goes nowhere, as before.
            let session = session.clone();
            let conn = Connection::routed(server, principal.clone(), listing, move |outbound| {
                if let Some(http) = session.upgrade() {
                    http.route(outbound);
                }
            });
            HttpSession {
                peer: Peer::new(conn),
                principal,
                routes: Mutex::new(Routes { next_stream: 1, ..Routes::default() }),
                activity: Mutex::new(Activity { open: 0, last: Instant::now() }),
                max_events: max_events.max(1),
            }
        });
        let weak = Arc::downgrade(&http);
        http.peer.conn().set_standalone_probe(Box::new(move || weak.upgrade().is_some_and(|http| http.standalone_is_open())));
        http
    }

    fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn activity(&self) -> MutexGuard<'_, Activity> {
        self.activity.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How long the session has been idle at `now` (zero while it is busy).
    pub(super) fn idle_since(&self, now: Instant) -> Duration {
        let activity = self.activity();
        if activity.open > 0 { Duration::ZERO } else { now.saturating_duration_since(activity.last) }
    }

    /// Whether the session was busy at any time since `since` (or is now).
    pub(super) fn used_since(&self, since: Instant) -> bool {
        let activity = self.activity();
        activity.open > 0 || activity.last >= since
    }

    /// How many of the session's streams have a client connected.
    pub(super) fn live_streams(&self) -> usize {
        let mut routes = self.routes();
        let Routes { streams, with_live, .. } = &mut *routes;
        with_live.retain(|stream| streams.get(stream).is_some_and(Stream::is_live));
        with_live.len()
    }

    /// A client's queue: every event a stream buffers, and its priming event.
    fn queue(&self) -> (mpsc::Sender<String>, mpsc::Receiver<String>) {
        mpsc::channel(self.max_events + 1)
    }

    /// A new SSE stream for request `id`; its first event is the priming event.
    pub(super) fn open_stream(&self, id: &RequestId) -> mpsc::Receiver<String> {
        let (tx, rx) = self.queue();
        let mut routes = self.routes();
        let stream = routes.next_stream;
        routes.next_stream += 1;
        routes.by_request.insert(id.clone(), Target::Stream(stream));
        let _ = tx.try_send(priming(stream));
        routes.streams.insert(stream, Stream { next_seq: 1, live: Some(tx), ..Stream::default() });
        routes.gave_live(stream);
        rx
    }

    pub(super) fn await_json(&self, id: &RequestId) -> oneshot::Receiver<Message> {
        let (tx, rx) = oneshot::channel();
        self.routes().by_request.insert(id.clone(), Target::Json(tx));
        rx
    }

    /// Replays stream `stream` after `seq` on a new connection and keeps it live if the
    /// stream is not finished.
    pub(super) fn resume(&self, stream: u64, seq: u64) -> Option<mpsc::Receiver<String>> {
        let (tx, rx) = self.queue();
        let mut routes = self.routes();
        let buffer = routes.streams.get_mut(&stream)?;
        // At most `max_events` are kept: they fit in the queue.
        for (n, event) in buffer.events.iter().filter(|(n, _)| *n > seq) {
            let _ = tx.try_send(event.frame(stream, *n));
            buffer.delivered = buffer.delivered.max(*n);
        }
        if !buffer.finished {
            buffer.live = Some(tx);
            routes.gave_live(stream);
        }
        Some(rx)
    }

    /// Whether a client is connected to the standalone (GET) stream.
    pub(super) fn standalone_is_open(&self) -> bool {
        self.routes().streams.get(&STANDALONE).is_some_and(Stream::is_live)
    }

    /// Opens the standalone stream and flushes what it missed; `None` if one is open.
    pub(super) fn attach_standalone(&self) -> Option<mpsc::Receiver<String>> {
        let (tx, rx) = self.queue();
        let mut routes = self.routes();
        let buffer = routes.streams.entry(STANDALONE).or_insert_with(|| Stream { next_seq: 1, ..Stream::default() });
        if buffer.is_live() {
            return None;
        }
        let _ = tx.try_send(priming(STANDALONE));
        let delivered = buffer.delivered;
        for (n, event) in buffer.events.iter().filter(|(n, _)| *n > delivered) {
            let _ = tx.try_send(event.frame(STANDALONE, *n));
            buffer.delivered = *n;
        }
        buffer.live = Some(tx);
        routes.gave_live(STANDALONE);
        Some(rx)
    }

    /// Puts an outgoing message where its route says.
    pub(super) fn route(&self, outbound: Outbound) {
        let mut routes = self.routes();
        let stream = match &outbound.route {
            Route::Reply(id) => match routes.by_request.remove(id) {
                Some(Target::Json(waiter)) => {
                    let _ = waiter.send(outbound.message);
                    return;
                }
                Some(Target::Stream(stream)) => {
                    routes.push(stream, outbound.message, self.max_events);
                    routes.finish(stream);
                    return;
                }
                None => return, // nobody waits for it any more
            },
            // No reply is due: the JSON waiter is dropped (the POST answers 202), a stream
            // ends after the events it carried.
            Route::NoReply(id) => {
                if let Some(Target::Stream(stream)) = routes.by_request.remove(id) {
                    routes.finish(stream);
                }
                return;
            }
            Route::Related(id) => match routes.by_request.get(id) {
                Some(Target::Stream(stream)) => *stream,
                _ => STANDALONE,
            },
            Route::General => STANDALONE,
        };
        routes.push(stream, outbound.message, self.max_events);
    }
}

impl Routes {
    /// Buffers an event of `stream` (at most `max` kept, the oldest dropped first) and hands
    /// it to the connected client, whose stream is closed if its queue is full: a client that
    /// does not read holds no more than `max` events of it. A message built only when read
    /// ([`Message::Later`]) is kept unbuilt while no client is connected.
    fn push(&mut self, stream: u64, message: Message, max: usize) {
        let buffer = self.streams.entry(stream).or_insert_with(|| Stream { next_seq: 1, ..Stream::default() });
        let seq = buffer.next_seq;
        buffer.next_seq += 1;
        if buffer.live.as_ref().is_some_and(mpsc::Sender::is_closed) {
            buffer.live = None;
        }
        let kept = match message {
            // Nobody reads the stream now: kept unbuilt.
            Message::Later(build) if buffer.live.is_none() => Event::Later(build),
            message => {
                // The message written once, by serde_json's writer, straight into its frame.
                let framed = frame(stream, seq, &message);
                let kept = Event::Framed(Arc::from(framed.as_str()));
                if let Some(live) = &buffer.live {
                    match live.try_send(framed) {
                        Ok(()) => buffer.delivered = seq,
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            tracing::warn!(stream, max, "closing an SSE stream whose client does not read it (max_stream_events)");
                            buffer.live = None;
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => buffer.live = None,
                    }
                }
                kept
            }
        };
        buffer.events.push_back((seq, kept));
        while buffer.events.len() > max {
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

#[cfg(test)]
mod tests {

    use mcp_tasks_engine::{Engine, Policy, SystemClock};
    use mcp_tasks_sqlite::SqliteStore;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use mcp_tasks_server::transport::Outbound;
    use crate::Options;
    use serde_json::json;

    fn app(idle: Duration) -> (App, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
        let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
        let server = Server::builder(engine).build().unwrap();
        let options = Options { session_idle: idle, ..Options::default() };
        (App { server, options, sessions: Mutex::new(FastMap::default()), stop: CancellationToken::new(), ui: None, listens: crate::modern::Listens::default() }, dir)
    }

    fn open(app: &App, id: &str) -> Arc<HttpSession> {
        let http = HttpSession::open(app.server.clone(), Principal::new("p"), Listing::Principal, 10);
        app.sessions().insert(id.to_owned(), Arc::clone(&http));
        http
    }

    #[tokio::test]
    async fn live_streams_counts_the_streams_a_client_reads_now_and_no_finished_one() {
        let (app, _dir) = app(Duration::from_secs(60));
        let http = open(&app, "s");
        let reply = |id: i64| Outbound { message: Message::Json(json!({"jsonrpc": "2.0", "id": id, "result": {}})), route: Route::Reply(RequestId::Number(id)) };
        let first = http.open_stream(&RequestId::Number(1));
        let second = http.open_stream(&RequestId::Number(2));
        assert_eq!(http.live_streams(), 2);
        http.route(reply(1));
        assert_eq!(http.live_streams(), 1, "a stream ends with its reply");
        drop(second);
        assert_eq!(http.live_streams(), 0, "a stream whose client went is not live");
        let standalone = http.attach_standalone().expect("no standalone stream yet");
        assert_eq!(http.live_streams(), 1);
        assert!(http.resume(1, 0).is_some(), "a finished stream is replayed");
        assert_eq!(http.live_streams(), 1, "a finished stream replayed is not live");
        // Many finished streams later, the count is still of the live ones alone.
        for id in 10..(10 + 2 * FINISHED_KEPT as i64) {
            let _stream = http.open_stream(&RequestId::Number(id));
            http.route(reply(id));
        }
        assert_eq!(http.live_streams(), 1);
        drop((first, standalone));
        assert_eq!(http.live_streams(), 0);
    }

    #[tokio::test]
    async fn a_message_built_when_read_is_built_only_for_a_reader_and_framed_as_if_built_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (app, _dir) = app(Duration::from_secs(60));
        let http = open(&app, "s");
        let built = Arc::new(AtomicUsize::new(0));
        let later = |n: i64| {
            let built = Arc::clone(&built);
            let build = move || {
                built.fetch_add(1, Ordering::Relaxed);
                json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}})
            };
            Outbound { message: Message::Later(Arc::new(build)), route: Route::General }
        };
        // Kept for a GET stream nobody has opened: not built.
        http.route(later(1));
        http.route(later(2));
        assert_eq!(built.load(Ordering::Relaxed), 0, "nobody read them");
        // The GET stream opens: each is built and framed with the id it was given.
        let mut standalone = http.attach_standalone().expect("no standalone stream yet");
        let mut frames = Vec::new();
        while let Ok(frame) = standalone.try_recv() {
            frames.push(frame);
        }
        let at_once = |seq: u64, n: i64| {
            frame(STANDALONE, seq, &Message::Json(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}})))
        };
        assert_eq!(frames[1..], [at_once(1, 1), at_once(2, 2)], "after the priming event");
        assert_eq!(built.load(Ordering::Relaxed), 2);
        // One sent while the stream is open is built once, sent and kept framed.
        http.route(later(3));
        assert_eq!(standalone.try_recv().unwrap(), at_once(3, 3));
        assert_eq!(built.load(Ordering::Relaxed), 3);
        // The client goes; the next is kept unbuilt, and a resumption replays all of them.
        drop(standalone);
        http.route(later(4));
        assert_eq!(built.load(Ordering::Relaxed), 3, "a closed stream's client reads nothing");
        let mut resumed = http.resume(STANDALONE, 2).expect("the standalone stream is kept");
        assert_eq!(resumed.try_recv().unwrap(), at_once(3, 3));
        assert_eq!(resumed.try_recv().unwrap(), at_once(4, 4));
        // At most max_events (10 here) are kept, built or not.
        drop(resumed);
        for n in 5..40 {
            http.route(later(n));
        }
        let kept = http.routes().streams.get(&STANDALONE).map(|stream| stream.events.len());
        assert_eq!(kept, Some(10));
    }

    #[tokio::test]
    async fn only_a_session_idle_for_the_whole_period_at_the_injected_now_is_ended() {
        let (app, _dir) = app(Duration::from_secs(60));
        let idle = open(&app, "idle");
        let busy = open(&app, "busy");
        let _request_in_progress = Busy::new(&busy);
        let start = Instant::now();
        assert_eq!(end_idle_once(&app, start + Duration::from_secs(59)), 0, "not idle for the period yet");
        assert!(!idle.peer.conn().closed().is_cancelled());
        assert_eq!(end_idle_once(&app, start + Duration::from_secs(61)), 1);
        assert!(idle.peer.conn().closed().is_cancelled(), "an ended session's connection is closed");
        assert!(!busy.peer.conn().closed().is_cancelled(), "a busy session is never idle");
        let left: Vec<String> = app.sessions().keys().cloned().collect();
        assert_eq!(left, ["busy"]);
    }
}
