//! The guards of the HTTP endpoint, before any message is read (2025-11-25 transport
//! security): `Host` and `Origin` against DNS rebinding (403), the bearer token mapped to a
//! principal (401 without a valid one), and the media types a client accepts.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use mcp_tasks_engine::Principal;
use mcp_tasks_protocol::jsonrpc::RpcError;

use super::{ANONYMOUS_PRINCIPAL, Options, Rejection, error};

/// Host and Origin checks, then the principal.
pub(super) fn guard(options: &Options, headers: &HeaderMap) -> Result<Principal, Rejection> {
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
    let Some(auth) = &options.auth else {
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

fn host_allowed(options: &Options, host: &str) -> bool {
    let name = host_name(host);
    is_local(&name) || options.allowed_hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(&name))
}

fn origin_allowed(options: &Options, origin: &str) -> bool {
    if options.allowed_origins.iter().any(|allowed| allowed.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
        return false;
    };
    is_local(&host_name(rest))
}

pub(super) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|value| value.to_str().ok()).any(|value| {
        value.split(',').map(|part| part.split(';').next().unwrap_or("").trim()).any(|part| {
            part.eq_ignore_ascii_case(media) || part == "*/*"
        })
    })
}

/// `localhost`, `127.0.0.1`, `::1`.
fn is_local(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "::1"
}

/// The host name of a `Host` value or origin authority, without port or brackets.
fn host_name(authority: &str) -> String {
    let authority = authority.split('/').next().unwrap_or("");
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("").to_owned();
    }
    authority.rsplit_once(':').map_or(authority, |(name, _)| name).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_drop_ports_and_brackets() {
        assert_eq!(host_name("localhost:8765"), "localhost");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("Evil.Example.com:443"), "evil.example.com");
    }
}
