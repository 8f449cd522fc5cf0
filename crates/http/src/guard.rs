//! The guards of the HTTP endpoint, before any message is read (2025-11-25 transport
//! security): `Host` and `Origin` against DNS rebinding (403), the bearer token mapped to a
//! principal (401 without a valid one), and the media types a client accepts.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use mcp_tasks_engine::Principal;
use mcp_tasks_protocol::hosts;
use mcp_tasks_protocol::jsonrpc::RpcError;

use super::{ANONYMOUS_PRINCIPAL, Authenticate, Denied, Options, Rejection, error};

/// Host and Origin checks, then the principal.
pub(super) async fn guard(options: &Options, headers: &HeaderMap) -> Result<Principal, Rejection> {
    guard_host(options, headers)?;
    let Some(auth) = &options.auth else {
        return Ok(Principal::new(ANONYMOUS_PRINCIPAL));
    };
    principal(auth.as_ref(), headers).await
}

/// The Host and Origin checks alone (the web view's page and assets, which carry no data).
pub(super) fn guard_host(options: &Options, headers: &HeaderMap) -> Result<(), Rejection> {
    let host = headers.get(header::HOST).and_then(|value| value.to_str().ok()).unwrap_or("");
    if !host_allowed(options, host) {
        tracing::warn!(host, "refused a request for a foreign Host");
        return Err(Box::new(error(StatusCode::FORBIDDEN, RpcError::invalid_request(format!(
            "Forbidden: Host {host:?} is not allowed (add it to server.allowed_hosts)"
        )))));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !origin_allowed(options, origin) {
            tracing::warn!(origin, "refused a request from a foreign Origin");
            return Err(Box::new(error(StatusCode::FORBIDDEN, RpcError::invalid_request(format!(
                "Forbidden: Origin {origin:?} is not allowed (add it to server.allowed_origins)"
            )))));
        }
    }
    Ok(())
}

/// The principal of the request's bearer token: 401 without one or with a bad one, 403 for
/// one without the required scopes (RFC 6750 §3, and the RFC 9728 `resource_metadata` when
/// the tokens come from an authorization server).
async fn principal(auth: &dyn Authenticate, headers: &HeaderMap) -> Result<Principal, Rejection> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")));
    let denied = match token {
        None => None,
        Some(token) => match auth.authenticate(token.trim()).await {
            Ok(principal) => return Ok(principal),
            Err(denied) => Some(denied),
        },
    };
    let (status, message, code) = match denied {
        None => (StatusCode::UNAUTHORIZED, "Unauthorized: send Authorization: Bearer <token>", None),
        Some(Denied::InvalidToken) => (
            StatusCode::UNAUTHORIZED,
            "Unauthorized: the bearer token is not one this server accepts (unknown, expired or not for this server)",
            Some("invalid_token"),
        ),
        Some(Denied::InsufficientScope) => (
            StatusCode::FORBIDDEN,
            "Forbidden: the access token lacks a scope this server requires",
            Some("insufficient_scope"),
        ),
    };
    let mut challenge = match auth.resource() {
        Some(resource) => {
            let mut challenge = format!(r#"Bearer resource_metadata="{}""#, resource.metadata_url());
            if !resource.scopes.is_empty() {
                challenge.push_str(&format!(r#", scope="{}""#, resource.scopes.join(" ")));
            }
            challenge
        }
        None => r#"Bearer realm="mcp-tasks""#.to_owned(),
    };
    if let Some(code) = code {
        challenge.push_str(&format!(r#", error="{code}""#));
    }
    let mut response = error(status, RpcError::invalid_request(message));
    // The URL and scopes were checked at load to hold no `"` or control character.
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    Err(Box::new(response))
}

/// The one Host check, shared with `mcp-tasks check-config` (`mcp_tasks_protocol::hosts`).
fn host_allowed(options: &Options, host: &str) -> bool {
    hosts::host_allowed(&options.allowed_hosts, host)
}

/// The one Origin check, shared with `mcp-tasks check-config` (`mcp_tasks_protocol::hosts`).
fn origin_allowed(options: &Options, origin: &str) -> bool {
    hosts::origin_allowed(&options.allowed_origins, origin)
}

/// Whether an `Accept` header of the request takes `media` (ASCII case-insensitively) or
/// `*/*`; its parameters (`;q=…`) are not read. Every POST asks, so the value is scanned as
/// bytes: split on `,`, cut at `;`, trimmed of spaces and tabs (the Unicode-aware `str`
/// split and trim were 1 % of a lifecycle's instructions). A value that is not visible ASCII
/// is skipped whole, as `HeaderValue::to_str` would refuse it.
pub(super) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().filter(|value| value.to_str().is_ok()).any(|value| {
        value.as_bytes().split(|&byte| byte == b',').any(|part| {
            let part = part.split(|&byte| byte == b';').next().unwrap_or_default().trim_ascii();
            part.eq_ignore_ascii_case(media.as_bytes()) || part == b"*/*"
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::ACCEPT, HeaderValue::from_bytes(value).expect("a header value"));
        }
        headers
    }

    #[test]
    fn accept_lists_are_read_with_parameters_case_spaces_and_wildcards() {
        let both = headers(&[b"application/json, text/event-stream"]);
        assert!(accepts(&both, "application/json") && accepts(&both, "text/event-stream"));
        let weighted = headers(&[b"Text/Event-Stream ;q=0.9,\tapplication/json;q=1"]);
        assert!(accepts(&weighted, "text/event-stream") && accepts(&weighted, "application/json"));
        let two_headers = headers(&[b"application/json", b"text/event-stream"]);
        assert!(accepts(&two_headers, "text/event-stream"));
        assert!(accepts(&headers(&[b"*/*"]), "text/event-stream"));
        let json = headers(&[b"application/json"]);
        assert!(!accepts(&json, "text/event-stream"));
        assert!(!accepts(&headers(&[b"text/event-streams, application/jsonx"]), "application/json"));
        assert!(!accepts(&headers(&[b"text/*"]), "text/event-stream"), "only */* is a wildcard here");
        assert!(!accepts(&HeaderMap::new(), "application/json"));
        assert!(!accepts(&headers(&[b"application/json, caf\xc3\xa9"]), "application/json"), "not visible ASCII: skipped");
    }
}
