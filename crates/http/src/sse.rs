//! Server-sent events: the priming event and event ids (`<stream>-<seq>`, unique in a
//! session, so a client resumes with `Last-Event-ID`), the frames carrying JSON-RPC
//! messages, keep-alive comments, and the one-write answer of a quick streamed reply.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_tasks_protocol::era::Era;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use mcp_tasks_server::transport::{Message, Work};

use super::legacy::Busy;

/// How long a client should wait before reconnecting to a broken stream (the `retry`
/// field of each stream's priming event).
const RETRY: Duration = Duration::from_secs(1);
/// How many times a POST that is answered on an SSE stream yields to its handler before it
/// waits for its events: a reply ready by then (a handler that needs no I/O) leaves with the
/// headers and the priming event in one write, as a complete body, without a timer.
const COALESCE_YIELDS: usize = 4;
/// How long a POST answered on an SSE stream then holds its headers for the reply: a reply
/// that comes within it (a task's result once its completion is committed, a call that waits
/// on the store) still leaves in one write, as a complete body, instead of the headers, then
/// each event, then the end of the stream, each a write of its own (and a read for the
/// client). A slower reply streams from then on, with whatever came meanwhile; so a
/// long call's first event is never more than this late.
const COALESCE_WAIT: Duration = Duration::from_millis(20);
/// Interval of the SSE keep-alive comments, which keep idle proxies from closing streams.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// The headers of an SSE answer, streamed or in one piece.
const HEADERS: [(header::HeaderName, &str); 2] = [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")];

/// A quick answer in one piece: runs the request's `work` first (polling it and yielding up
/// to [`COALESCE_YIELDS`] times, no timer, then up to [`COALESCE_WAIT`] while waiting for its
/// events) and, if the stream has finished by then (its reply sent), answers its events (the
/// priming event first, the same ids) as one complete SSE body, which leaves in one write
/// with the headers instead of one chunk per event. Otherwise the events so far open the
/// stream of [`sse`], and what is left of the work goes on in a Tokio task of its own; so
/// does a server that stops meanwhile (that stream then ends at once).
pub(super) async fn sse_coalesced(stop: &CancellationToken, mut events: mpsc::Receiver<String>, busy: Busy, mut work: Work) -> Response {
    let complete = |body: String| (StatusCode::OK, HEADERS, body).into_response();
    let mut first = String::new();
    for _ in 0..COALESCE_YIELDS {
        work.step().await;
        loop {
            match events.try_recv() {
                Ok(frame) => first.push_str(&frame),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return complete(first),
            }
        }
        tokio::task::yield_now().await;
    }
    let held = tokio::time::sleep(COALESCE_WAIT);
    tokio::pin!(held);
    loop {
        tokio::select! {
            biased;
            frame = events.recv() => match frame {
                Some(frame) => first.push_str(&frame),
                None => return complete(first),
            },
            () = work.run(), if work.is_running() => {}
            () = &mut held => break,
            () = stop.cancelled() => break,
        }
    }
    work.spawn();
    sse(stop, events, first, busy)
}

/// An SSE response carrying `first` (frames already taken from `events`, if any), then
/// the frames of `events`, with a keep-alive comment every 15 s, until the channel closes
/// or the server stops. `busy` keeps the session from expiring while the stream is open;
/// the stream counts in `mcp_tasks_http_streams_open` meanwhile.
pub(super) fn sse(stop: &CancellationToken, events: mpsc::Receiver<String>, first: String, busy: Busy) -> Response {
    let keepalive = tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
    let first = Some(first).filter(|first| !first.is_empty());
    let open = busy.server().metrics().stream_opened(Era::Legacy);
    let state = (events, stop.clone(), keepalive, first, (busy, open));
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
    (StatusCode::OK, HEADERS, Body::from_stream(stream)).into_response()
}

/// The first event of a stream: an id to resume from and an empty `data` (2025-11-25
/// transport: SHOULD prime the stream), with the reconnection delay. Frames are written
/// here rather than with axum's SSE type, which drops an empty `data` field.
pub(super) fn priming(stream: u64) -> String {
    // One format for the whole frame: the event id `{stream}-0` is `event_id(stream, 0)`.
    format!("id: {stream}-0\nretry: {}\ndata: \n\n", RETRY.as_millis())
}

/// One SSE event carrying a JSON-RPC message (serialized JSON has no raw newlines).
pub(super) fn frame(stream: u64, seq: u64, message: &Message) -> String {
    use std::io::Write as _;
    // Built for every event sent: the message serialized straight into its frame.
    let mut frame = Vec::with_capacity(256);
    let _ = write!(frame, "id: {stream}-{seq}\ndata: ");
    let _ = message.write_json(&mut frame);
    frame.extend_from_slice(b"\n\n");
    // serde_json writes UTF-8, and so does `write!` of two numbers.
    String::from_utf8(frame).unwrap_or_default()
}

/// The event id of event `seq` of stream `stream` (the frames above write it in place).
#[cfg(test)]
fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

pub(super) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_an_event_id_and_its_data() {
        assert_eq!(frame(3, 17, &Message::Json(serde_json::json!({"a": 1}))), "id: 3-17\ndata: {\"a\":1}\n\n");
    }

    #[test]
    fn the_priming_event_is_the_streams_first_id_a_retry_and_empty_data() {
        let primed = priming(42);
        assert_eq!(primed, format!("id: {}\nretry: {}\ndata: \n\n", event_id(42, 0), RETRY.as_millis()));
        let id = primed.lines().next().and_then(|line| line.strip_prefix("id: ")).unwrap_or_default();
        assert_eq!(parse_event_id(id), Some((42, 0)));
    }

    #[test]
    fn event_ids_round_trip() {
        assert_eq!(parse_event_id(&event_id(3, 17)), Some((3, 17)));
        assert_eq!(parse_event_id("x-1"), None);
        assert_eq!(parse_event_id("12"), None);
    }
}
