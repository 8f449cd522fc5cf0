//! Streamable HTTP (2025-11-25) on hyper: POST one JSON-RPC message and read the answer as
//! JSON or as an SSE stream; GET to open the standalone stream or to resume a broken one
//! with `Last-Event-ID`. No routing here: [`crate::connection`] decides where messages go.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::error::ClientError;
use crate::sse::{Event, Parser};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// The server's answer to a POST.
pub(crate) enum Reply {
    /// `202 Accepted` (a notification or response was taken).
    Accepted,
    /// One JSON-RPC message.
    Json(Value),
    /// An SSE stream.
    Stream(EventStream),
}

/// The HTTP side of one session.
pub(crate) struct HttpTransport {
    client: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    url: Uri,
    token: Option<String>,
    /// Headers sent on every request (`ClientBuilder::header`), already checked.
    extra: Vec<(hyper::header::HeaderName, HeaderValue)>,
    /// `Mcp-Session-Id`, once `initialize` gave one.
    session: Mutex<Option<HeaderValue>>,
    /// Whether `initialize` is done (from then on every request names the version).
    initialized: Mutex<bool>,
    /// 2026-07-28: no session; every POST mirrors its revision, method and name in headers.
    modern: Mutex<bool>,
}

impl HttpTransport {
    /// A transport to `url` (`https://`: the server's certificate verified against the
    /// system's roots, or those of the PEM file `ca_file`, and the URL's host).
    pub(crate) fn new(
        url: &str,
        token: Option<String>,
        headers: &[(String, String)],
        ca_file: Option<&std::path::Path>,
    ) -> Result<HttpTransport, ClientError> {
        let mut extra = Vec::with_capacity(headers.len());
        for (name, value) in headers {
            let bad = |reason: String| ClientError::InvalidArguments(format!("the HTTP header {name:?}: {reason}"));
            let name = hyper::header::HeaderName::from_bytes(name.trim().as_bytes()).map_err(|e| bad(e.to_string()))?;
            let value = HeaderValue::from_str(value.trim()).map_err(|e| bad(e.to_string()))?;
            extra.push((name, value));
        }
        let invalid = |reason: &str| ClientError::InvalidUrl { url: url.to_owned(), reason: reason.to_owned() };
        let uri: Uri = url.parse().map_err(|e: hyper::http::uri::InvalidUri| invalid(&e.to_string()))?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => return Err(invalid("the URL must start with https:// or http://")),
        }
        if uri.host().is_none() {
            return Err(invalid("the URL has no host"));
        }
        let what = ca_file.map_or_else(String::new, |file| format!("the CA file {}", file.display()));
        let tls = mcp_tasks_tls::client_config(ca_file, &what).map_err(ClientError::InvalidArguments)?;
        let connector = HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http().enable_http1().build();
        let client = HyperClient::builder(TokioExecutor::new()).build(connector);
        Ok(HttpTransport {
            client,
            url: uri,
            token,
            extra,
            session: Mutex::new(None),
            initialized: Mutex::new(false),
            modern: Mutex::new(false),
        })
    }

    /// Marks the handshake done: later requests carry `MCP-Protocol-Version`.
    pub(crate) fn set_initialized(&self) {
        *self.initialized.lock().unwrap_or_else(PoisonError::into_inner) = true;
    }

    /// Speaks 2026-07-28 (`true`) or 2025-11-25 from now on.
    pub(crate) fn set_modern(&self, modern: bool) {
        *self.modern.lock().unwrap_or_else(PoisonError::into_inner) = modern;
    }

    /// POSTs one JSON-RPC message; in 2026-07-28 with its mirrored headers and `extra` (the
    /// `Mcp-Param-*` of a `tools/call`; ignored in 2025-11-25).
    pub(crate) async fn post(&self, message: &Value, extra: &[(String, String)]) -> Result<Reply, ClientError> {
        let mut builder = self
            .request(Method::POST)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json");
        if *self.modern.lock().unwrap_or_else(PoisonError::into_inner) {
            for (name, value) in mirrored_headers(message) {
                builder = builder.header(name, value);
            }
            for (name, value) in extra {
                builder = builder.header(name.as_str(), value.as_str());
            }
        }
        let request = builder
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        let response = self.client.request(request).await.map_err(|e| ClientError::Transport(mcp_tasks_tls::with_causes(&e)))?;
        if let Some(session) = response.headers().get(SESSION_HEADER) {
            *self.session.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.clone());
        }
        let status = response.status();
        if status == StatusCode::ACCEPTED {
            return Ok(Reply::Accepted);
        }
        if !status.is_success() {
            return Err(http_error(response).await);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") {
            return Ok(Reply::Stream(EventStream::new(response.into_body())));
        }
        let body = response.into_body().collect().await.map_err(|e| ClientError::Transport(e.to_string()))?;
        let value = serde_json::from_slice(&body.to_bytes())
            .map_err(|e| ClientError::Protocol(format!("a POST answer is not JSON ({e})")))?;
        Ok(Reply::Json(value))
    }

    /// GETs an SSE stream: the standalone one, or the resumption after `last_event_id`.
    pub(crate) async fn get(&self, last_event_id: Option<&str>) -> Result<EventStream, ClientError> {
        let mut builder = self.request(Method::GET).header(ACCEPT, "text/event-stream");
        if let Some(last) = last_event_id {
            builder = builder.header("last-event-id", last);
        }
        let request = builder.body(Full::new(Bytes::new())).map_err(|e| ClientError::Transport(e.to_string()))?;
        let response = self.client.request(request).await.map_err(|e| ClientError::Transport(mcp_tasks_tls::with_causes(&e)))?;
        if !response.status().is_success() {
            return Err(http_error(response).await);
        }
        Ok(EventStream::new(response.into_body()))
    }

    /// Forgets the session id a response gave (the next request goes without one).
    pub(crate) fn forget_session(&self) {
        *self.session.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Ends the session: DELETE with its `Mcp-Session-Id` (nothing to do without one). A
    /// server that refuses (405) or already forgot the session (404) is fine.
    pub(crate) async fn delete_session(&self) -> Result<(), ClientError> {
        if self.session.lock().unwrap_or_else(PoisonError::into_inner).is_none() {
            return Ok(());
        }
        let request =
            self.request(Method::DELETE).body(Full::new(Bytes::new())).map_err(|e| ClientError::Transport(e.to_string()))?;
        let response = self.client.request(request).await.map_err(|e| ClientError::Transport(mcp_tasks_tls::with_causes(&e)))?;
        let status = response.status();
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED || status == StatusCode::NOT_FOUND {
            return Ok(());
        }
        Err(http_error(response).await)
    }

    /// A request to the endpoint with the session's headers.
    fn request(&self, method: Method) -> hyper::http::request::Builder {
        let mut builder = Request::builder().method(method).uri(self.url.clone());
        if let Some(session) = self.session.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            builder = builder.header(SESSION_HEADER, session);
        }
        if *self.initialized.lock().unwrap_or_else(PoisonError::into_inner) {
            builder = builder.header(VERSION_HEADER, crate::legacy::PROTOCOL_VERSION);
        }
        for (name, value) in &self.extra {
            builder = builder.header(name, value);
        }
        if let Some(token) = &self.token {
            builder = builder.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        builder
    }
}

/// The 2026-07-28 headers that mirror a message's body: `MCP-Protocol-Version`,
/// `Mcp-Method`, and `Mcp-Name` (the tool or prompt name, the URI, the task id) for the
/// methods that have one; a value that is not a plain header value goes Base64-encoded as
/// `=?base64?…?=`.
fn mirrored_headers(message: &Value) -> Vec<(&'static str, String)> {
    let Some(method) = message.get("method").and_then(Value::as_str) else { return Vec::new() };
    let mut headers = vec![(VERSION_HEADER, mcp_tasks_protocol::modern::PROTOCOL_VERSION.to_owned()), ("mcp-method", method.to_owned())];
    let field = mcp_tasks_protocol::modern::name_header_field(method);
    if let Some(name) = field.and_then(|field| message["params"].get(field)).and_then(Value::as_str) {
        headers.push(("mcp-name", header_safe(name)));
    }
    headers
}

/// `value` as [`crate::param_headers::encode`] writes a header value; an empty one (an empty
/// tool name or URI) goes Base64-encoded too.
fn header_safe(value: &str) -> String {
    if value.is_empty() { "=?base64??=".to_owned() } else { crate::param_headers::encode(value) }
}

async fn http_error(response: hyper::Response<Incoming>) -> ClientError {
    let status = response.status().as_u16();
    let body = match response.into_body().collect().await {
        Ok(body) => String::from_utf8_lossy(&body.to_bytes()).into_owned(),
        Err(e) => format!("(body unreadable: {e})"),
    };
    ClientError::Http { status, body }
}

/// The events of one SSE response, as they arrive.
pub(crate) struct EventStream {
    body: Incoming,
    parser: Parser,
    ready: VecDeque<Event>,
}

impl EventStream {
    fn new(body: Incoming) -> EventStream {
        EventStream { body, parser: Parser::default(), ready: VecDeque::new() }
    }

    /// The next event; `None` when the connection ends (cleanly or not).
    pub(crate) async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.ready.extend(self.parser.push(&data));
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "SSE connection broke");
                    return None;
                }
                None => return None,
            }
        }
    }
}
