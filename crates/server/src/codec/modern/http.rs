//! What a 2026-07-28 request over Streamable HTTP needs, as the router hands it to this codec:
//! no session, an [`Exchange`] of its own (one connection, closed with its response), and the
//! checks before it is served: its headers against its body (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`: `-32020`), then its `_meta` and revision
//! ([`super::check`]). An error's HTTP status follows the revision ([`super::http_status`]).

use std::borrow::Cow;
use std::sync::Arc;

use mcp_tasks_engine::Principal;
use mcp_tasks_protocol::jsonrpc::{Request, RequestId, RpcError};
use mcp_tasks_protocol::mcp::method;
use mcp_tasks_protocol::modern::{self, HEADER_MISMATCH, RequestMeta};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::connection::{Connection, Listing, Outbound};
use crate::hints::{self, Header, Hints};
use crate::request::Work;
use crate::server::Server;

/// A 2026-07-28 request served on no session, checked: the transport answers its refusal, or
/// starts it ([`Exchange::start`]) and answers with what its connection sends.
pub struct Exchange {
    server: Server,
    request: Request,
    checked: Result<RequestMeta, RpcError>,
}

/// A started [`Exchange`]: the transport runs its `work` where it answers, and answers with
/// the `outgoing` messages of its `conn`, whose closing cancels the request (2026-07-28: a
/// disconnect is cancellation).
pub struct Started {
    /// The request's own connection; abort it when the client goes.
    pub conn: Arc<Connection>,
    /// What the request sends: related messages first, then its reply (or none).
    pub outgoing: mpsc::UnboundedReceiver<Outbound>,
    /// The request's work, to run until the reply comes.
    pub work: Work,
    /// The HTTP status of an error reply.
    pub error_status: fn(&RpcError) -> u16,
}

impl Exchange {
    /// `request` with its `hints`, checked now.
    pub(crate) fn new(server: &Server, request: Request, hints: &dyn Hints) -> Exchange {
        let checked = check_headers(hints, &request)
            .and_then(|()| check_param_headers(server, hints, &request))
            .and_then(|()| super::check(&request));
        Exchange { server: server.clone(), request, checked }
    }

    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.request.id
    }

    /// The error the request is answered with at once, and its HTTP status, if it failed its
    /// checks (headers, `_meta`, revision).
    pub fn refusal(&self) -> Option<(&RpcError, u16)> {
        self.checked.as_ref().err().map(|error| (error, super::http_status(error)))
    }

    /// Whether its answer is a long stream, answered only as SSE and counted against
    /// `max_listens_per_principal`: `subscriptions/listen` and `tasks/stream`.
    pub fn listens(&self) -> bool {
        self.request.method == modern::method::SUBSCRIPTIONS_LISTEN || self.request.method == modern::method::TASKS_STREAM
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        &self.request.method
    }

    /// Starts serving the request for `principal` on a connection of its own (a refused one
    /// is answered with its refusal, on that connection).
    pub fn start(self, principal: Principal) -> Started {
        let (out, outgoing) = mpsc::unbounded_channel();
        // A 2026-07-28 request is stateless: its own connection, no session (no `Peer`).
        let conn = Arc::new(Connection::new(self.server, principal, Listing::Principal, out));
        let work = match self.checked {
            // Checked: served as the 2026-07-28 request it is, its `_meta` read once.
            Ok(meta) => Work::new(super::checked_work(&conn, self.request, meta)),
            Err(error) => {
                conn.reject(Some(&self.request.id), &error);
                Work::none()
            }
        };
        Started { conn, outgoing, work, error_status: super::http_status }
    }
}

/// The mirrored headers of 2026-07-28 against the body: `MCP-Protocol-Version` equal to the
/// `_meta` revision, `Mcp-Method` to the method, `Mcp-Name` to the name, URI or task id of
/// the methods that have one (values in `=?base64?…?=` are decoded first).
///
/// # Errors
/// `-32020` HeaderMismatch saying which header and why.
fn check_headers(hints: &dyn Hints, request: &Request) -> Result<(), RpcError> {
    let params = request.params.as_ref();
    if let Some(version) = mcp_tasks_protocol::era::per_request_version(params) {
        match header_value(hints.header(Header::ProtocolVersion), &Header::ProtocolVersion)? {
            Some(header) if header == version => {}
            Some(header) => {
                return Err(mismatch(format!(
                    "MCP-Protocol-Version header value {header:?} does not match the body's _meta version {version:?}"
                )));
            }
            None => return Err(mismatch("the MCP-Protocol-Version header is required".to_owned())),
        }
    }
    match header_value(hints.header(Header::Method), &Header::Method)? {
        Some(header) if header == request.method => {}
        Some(header) => {
            return Err(mismatch(format!(
                "Mcp-Method header value {header:?} does not match body value {:?}",
                request.method
            )));
        }
        None => return Err(mismatch("the Mcp-Method header is required".to_owned())),
    }
    if let Some(field) = modern::name_header_field(&request.method) {
        let body = params.and_then(|params| params.get(field)).and_then(Value::as_str);
        match (header_value(hints.header(Header::Name), &Header::Name)?, body) {
            (Some(header), Some(body)) if header == body => {}
            (Some(header), body) => {
                return Err(mismatch(format!(
                    "Mcp-Name header value {header:?} does not match body value {:?} (params.{field})",
                    body.unwrap_or("")
                )));
            }
            (None, _) => return Err(mismatch(format!("the Mcp-Name header is required on {} (params.{field})", request.method))),
        }
    }
    Ok(())
}

/// The `Mcp-Param-{Name}` headers of a `tools/call` against its arguments: each argument
/// the tool's `inputSchema` marks with `"x-mcp-header": "{Name}"` that the body has (not
/// null) must be mirrored, equal once decoded (integers compared as numbers); a header for
/// an argument the body lacks disagrees with it. Unknown tools pass (the call answers).
///
/// # Errors
/// `-32020` HeaderMismatch saying which header and why.
fn check_param_headers(server: &Server, hints: &dyn Hints, request: &Request) -> Result<(), RpcError> {
    if request.method != method::TOOLS_CALL {
        return Ok(());
    }
    let params = request.params.as_ref();
    let Some(tool) = params.and_then(|params| params["name"].as_str()).and_then(|name| server.tools().get(name)) else {
        return Ok(());
    };
    let Some(properties) = tool.def.spec.input_schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    let arguments = params.and_then(|params| params.get("arguments"));
    for (property, schema) in properties {
        let Some(name) = schema.get("x-mcp-header").and_then(Value::as_str) else { continue };
        let header = format!("mcp-param-{name}");
        let body = arguments.and_then(|arguments| arguments.get(property)).filter(|value| !value.is_null());
        match (header_value(hints.named(&header), &header)?, body) {
            (None, None) => {}
            (Some(mirrored), Some(body)) if mirrors(&mirrored, body) => {}
            (Some(mirrored), Some(body)) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{name} header value {mirrored:?} does not match body value {body} (arguments.{property})"
                )));
            }
            (Some(mirrored), None) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{name} header value {mirrored:?} has no value in the body (arguments.{property})"
                )));
            }
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "the Mcp-Param-{name} header is required: arguments.{property} is marked x-mcp-header"
                )));
            }
        }
    }
    Ok(())
}

/// Whether a mirrored header value says what the body's value does.
fn mirrors(header: &str, body: &Value) -> bool {
    match body {
        Value::String(text) => header == text,
        Value::Bool(flag) => header == if *flag { "true" } else { "false" },
        Value::Number(number) => match (header.parse::<f64>(), number.as_f64()) {
            (Ok(header), Some(body)) => header == body,
            _ => false,
        },
        _ => false,
    }
}

/// A header's `value` (of header `name`), decoded from `=?base64?…?=` if so written.
///
/// # Errors
/// `-32020` for a value that is not visible ASCII, or not valid Base64 of UTF-8.
fn header_value<'h>(value: Option<&'h [u8]>, name: &dyn std::fmt::Display) -> Result<Option<Cow<'h, str>>, RpcError> {
    use base64::Engine as _;
    let Some(value) = value else { return Ok(None) };
    let text = hints::text(value).ok_or_else(|| mismatch(format!("the {name} header has invalid characters")))?;
    let Some(encoded) = text.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) else {
        // Compared where it is, as most headers are plain text.
        return Ok(Some(Cow::Borrowed(text)));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| mismatch(format!("the {name} header is not valid Base64")))?;
    String::from_utf8(bytes).map(|text| Some(Cow::Owned(text))).map_err(|_| mismatch(format!("the {name} header is not Base64 of UTF-8")))
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(HEADER_MISMATCH, format!("Header mismatch: {message}"))
}
