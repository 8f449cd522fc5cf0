//! The guards of the HTTP endpoint, before any message is read (2025-11-25 transport
//! security): `Host` and `Origin` against DNS rebinding (403), the bearer token mapped to a
//! principal (401 without a valid one), and the media types a client accepts.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use mcp_tasks_engine::Principal;
use mcp_tasks_protocol::jsonrpc::RpcError;

use super::{ANONYMOUS_PRINCIPAL, Options, Rejection, error};

/// Host and Origin checks, then the principal.
pub(super) fn guard(options: &Options, headers: &HeaderMap) -> Result<Principal, Rejection> {
    guard_host(options, headers)?;
    let Some(auth) = &options.auth else {
        return Ok(Principal::new(ANONYMOUS_PRINCIPAL));
    };
    principal(auth.as_ref(), headers)
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

/// The principal of the request's bearer token.
fn principal(auth: &dyn super::Authenticate, headers: &HeaderMap) -> Result<Principal, Rejection> {
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
