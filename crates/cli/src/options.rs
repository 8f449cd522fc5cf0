//! The configuration (`mcp-tasks-config`, the TOML file as plain data) mapped onto the
//! library crates' own option types: the server, the HTTP transport and the webhooks know
//! no file format.

use mcp_tasks_config::{JwksSource, OAUTH_PRINCIPAL_PREFIX, OAuthConfig, ServerConfig, TaskToolNames};
use mcp_tasks_engine::Principal;
use mcp_tasks_http as http;
use mcp_tasks_server::TaskTools;
use mcp_tasks_webhooks::Webhook;

/// `[server.task_tools]`: the helper tools' names.
pub(crate) fn task_tools(names: &TaskToolNames) -> TaskTools {
    TaskTools { status: names.status.clone(), result: names.result.clone(), cancel: names.cancel.clone() }
}

/// `[[server.webhooks]]`.
pub(crate) fn webhooks(server: &ServerConfig) -> Vec<Webhook> {
    let hook = |hook: &mcp_tasks_config::Webhook| Webhook {
        url: hook.url.clone(),
        events: hook.events.clone(),
        secret: hook.secret.clone(),
        ca_file: hook.ca_file.clone(),
    };
    server.webhooks.iter().map(hook).collect()
}

/// `[server.auth.oauth]`; its principals take [`OAUTH_PRINCIPAL_PREFIX`], which the static
/// ones may not.
///
/// # Errors
/// A source of keys the HTTP transport does not read.
pub(crate) fn oauth(config: &OAuthConfig) -> anyhow::Result<http::OAuthOptions> {
    let jwks = match &config.jwks {
        JwksSource::File(path) => http::JwksSource::File(path.clone()),
        JwksSource::Url(url) => http::JwksSource::Url(url.clone()),
        other => anyhow::bail!("server.auth.oauth: keys from {other:?} cannot be read by this build"),
    };
    Ok(http::OAuthOptions {
        issuer: config.issuer.clone(),
        audience: config.audience.clone(),
        jwks,
        ca_file: config.ca_file.clone(),
        scopes: config.scopes.clone(),
        principal_claim: config.principal_claim.clone(),
        principal_prefix: OAUTH_PRINCIPAL_PREFIX.to_owned(),
        leeway: config.leeway,
        jwks_refresh: config.jwks_refresh,
        jwks_cooldown: config.jwks_cooldown,
    })
}

/// `[[server.auth.tokens]]`, compared in constant time ([`mcp_tasks_config::Auth`]), then
/// `oauth` for the tokens none of them is.
pub(crate) fn bearer_auth(server: &ServerConfig, oauth: Option<std::sync::Arc<http::OAuth>>) -> http::BearerAuth {
    let tokens = server.auth().clone();
    http::BearerAuth::new(move |token| tokens.principal_for(token).map(Principal::new), oauth)
}
