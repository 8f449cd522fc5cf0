//! The guards of the HTTP endpoint, before any message is read (2025-11-25 transport
//! security): `Host` and `Origin` against DNS rebinding (403), the bearer token mapped to a
//! principal (401 without a valid one), and the media types a client accepts.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use mcp_tasks_engine::Principal;
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

/// The one Host check, shared with `mcp-tasks check-config` (`mcp_tasks_config::hosts`).
fn host_allowed(options: &Options, host: &str) -> bool {
    mcp_tasks_config::hosts::host_allowed(&options.allowed_hosts, host)
}

/// The one Origin check, shared with `mcp-tasks check-config` (`mcp_tasks_config::hosts`).
fn origin_allowed(options: &Options, origin: &str) -> bool {
    mcp_tasks_config::hosts::origin_allowed(&options.allowed_origins, origin)
}

pub(super) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|value| value.to_str().ok()).any(|value| {
        value.split(',').map(|part| part.split(';').next().unwrap_or("").trim()).any(|part| {
            part.eq_ignore_ascii_case(media) || part == "*/*"
        })
    })
}
