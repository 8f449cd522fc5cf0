//! `[server.auth.oauth]`: the server as an OAuth 2.1 resource server. Plain data, checked
//! here with the line of each problem; the HTTP transport validates the tokens
//! (`mcp_tasks_http::OAuth`, through the options the CLI maps this onto).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::lines::Lines;
use super::problem::{ConfigError, Problem};

/// The prefix of every principal that comes from an OAuth access token, so that no user of
/// the authorization server can take the name of a `[[server.auth.tokens]]` principal
/// (which may not start with it).
pub const OAUTH_PRINCIPAL_PREFIX: &str = "oauth:";

/// `[server.auth.oauth]`: which JWT access tokens the server accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthConfig {
    /// The authorization server, as the tokens' `iss` claim must spell it (`issuer`), and
    /// as the protected-resource metadata lists it in `authorization_servers`.
    pub issuer: String,
    /// The server's canonical URL (`audience`, RFC 8707), e.g. `https://mcp.example.com/mcp`:
    /// the tokens' `aud` claim must be it or hold it, and the metadata's `resource` is it.
    pub audience: String,
    /// Where the authorization server's signing keys are read (`jwks` or `jwks_url`).
    pub jwks: JwksSource,
    /// A PEM file of the CA certificates an `https://` `jwks_url` is checked against instead
    /// of the system's roots (`ca_file`; a private CA).
    pub ca_file: Option<PathBuf>,
    /// The scopes every token must carry (`scopes`, default none), in its `scope` claim
    /// (space-separated) or `scp` (a list).
    pub scopes: Vec<String>,
    /// The claim that names the principal (`principal_claim`, default `sub`); the
    /// principal is [`OAUTH_PRINCIPAL_PREFIX`] followed by its value.
    pub principal_claim: String,
    /// The clock skew allowed on `exp` and `nbf` (`leeway`, default 30s, at most 5m).
    pub leeway: Duration,
    /// How old the cached keys may get before the next request reads them again
    /// (`jwks_refresh`, default 5m).
    pub jwks_refresh: Duration,
    /// The least time between two reads of the keys caused by tokens naming an unknown
    /// `kid` (`jwks_cooldown`, default 10s; `"0s"` for none), so that a flood of tokens
    /// with made-up key ids cannot hammer the authorization server.
    pub jwks_cooldown: Duration,
}

/// Where the signing keys (a JWK Set) come from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwksSource {
    /// A file holding the JWK Set (`jwks`), read at start and again on refresh.
    File(PathBuf),
    /// An `https://` URL (`jwks_url`; its certificate verified), or `http://` on a loopback
    /// address (keys read in clear text from elsewhere could be forged).
    Url(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOAuth {
    issuer: Option<Spanned<String>>,
    audience: Option<Spanned<String>>,
    jwks: Option<Spanned<String>>,
    jwks_url: Option<Spanned<String>>,
    ca_file: Option<Spanned<String>>,
    #[serde(default)]
    scopes: Vec<Spanned<String>>,
    principal_claim: Option<Spanned<String>>,
    leeway: Option<Spanned<String>>,
    jwks_refresh: Option<Spanned<String>>,
    jwks_cooldown: Option<Spanned<String>>,
}

impl RawOAuth {
    /// Checks the table whose `[server.auth.oauth]` header is on `line`.
    pub(crate) fn check(self, lines: Lines<'_>, line: usize) -> Result<OAuthConfig, ConfigError> {
        let problem = |at: Option<&Spanned<String>>, reason: String| {
            lines.error(at.map_or(line, |value| lines.of(&value.span())), Problem::OAuth { reason })
        };
        let issuer = self.issuer.as_ref().ok_or_else(|| problem(None, "issuer is missing".into()))?;
        check_url(issuer.get_ref()).map_err(|reason| problem(Some(issuer), format!("issuer: {reason}")))?;
        let audience = self.audience.as_ref().ok_or_else(|| {
            problem(None, "audience is missing (the server's canonical URL, e.g. https://mcp.example.com/mcp)".into())
        })?;
        check_url(audience.get_ref()).map_err(|reason| problem(Some(audience), format!("audience: {reason}")))?;
        let jwks = match (&self.jwks, &self.jwks_url) {
            (Some(_), Some(url)) => return Err(problem(Some(url), "give jwks or jwks_url, not both".into())),
            (None, None) => return Err(problem(None, "give jwks (a file) or jwks_url".into())),
            (Some(path), None) if path.get_ref().trim().is_empty() => {
                return Err(problem(Some(path), "jwks is an empty path".into()));
            }
            (Some(path), None) => JwksSource::File(PathBuf::from(path.get_ref())),
            (None, Some(url)) => {
                check_jwks_url(url.get_ref()).map_err(|reason| problem(Some(url), format!("jwks_url: {reason}")))?;
                JwksSource::Url(url.get_ref().clone())
            }
        };
        let ca_file = match (&self.ca_file, &self.jwks_url) {
            (None, _) => None,
            (Some(file), Some(url)) if url.get_ref().starts_with("https://") => Some(PathBuf::from(file.get_ref())),
            (Some(file), _) => return Err(problem(Some(file), "ca_file is for an https:// jwks_url".into())),
        };
        let mut scopes: Vec<String> = Vec::with_capacity(self.scopes.len());
        for scope in &self.scopes {
            let text = scope.get_ref();
            // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ); none may hold `"` or `\`.
            if text.is_empty() || !text.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E)) {
                return Err(problem(Some(scope), format!("scope {text:?} is not a scope token (no spaces, quotes or backslashes)")));
            }
            if !scopes.contains(text) {
                scopes.push(text.clone());
            }
        }
        let principal_claim = match &self.principal_claim {
            None => "sub".to_owned(),
            Some(claim) if claim.get_ref().is_empty() => return Err(problem(Some(claim), "principal_claim is empty".into())),
            Some(claim) => claim.get_ref().clone(),
        };
        let leeway = match &self.leeway {
            None => Duration::from_secs(30),
            Some(value) => lines.duration_or_off("server.auth.oauth.leeway", value)?,
        };
        if leeway > Duration::from_secs(300) {
            return Err(problem(self.leeway.as_ref(), "leeway is at most 5m (it lets expired tokens in)".into()));
        }
        let jwks_refresh = match &self.jwks_refresh {
            None => Duration::from_secs(300),
            Some(value) => lines.duration("server.auth.oauth.jwks_refresh", value)?,
        };
        let jwks_cooldown = match &self.jwks_cooldown {
            None => Duration::from_secs(10),
            Some(value) => lines.duration_or_off("server.auth.oauth.jwks_cooldown", value)?,
        };
        Ok(OAuthConfig {
            issuer: issuer.get_ref().clone(),
            audience: audience.get_ref().clone(),
            jwks,
            ca_file,
            scopes,
            principal_claim,
            leeway,
            jwks_refresh,
            jwks_cooldown,
        })
    }
}

/// An absolute `https://` URL, or `http://` on a loopback host, without a fragment.
fn check_url(url: &str) -> Result<(), String> {
    let (scheme, rest) = url.split_once("://").ok_or("must be an absolute URL (https://…)")?;
    let host = host_of(rest)?;
    match scheme {
        "https" => {}
        "http" if is_loopback(host) => {}
        "http" => return Err("must be https:// (http:// only on a loopback address)".into()),
        _ => return Err(format!("must be https://, not {scheme}://")),
    }
    if url.contains('#') {
        return Err("must not have a fragment".into());
    }
    // It is quoted in the `WWW-Authenticate` challenge.
    if url.chars().any(|c| c == '"' || c == '\\' || c.is_control()) {
        return Err("must not hold quotes, backslashes or control characters".into());
    }
    Ok(())
}

/// An `https://` URL, or `http://` on a loopback host.
fn check_jwks_url(url: &str) -> Result<(), String> {
    if let Some(rest) = url.strip_prefix("https://") {
        host_of(rest)?;
        return Ok(());
    }
    let rest = url.strip_prefix("http://").ok_or("must be an https:// URL (or http:// on a loopback address)")?;
    if !is_loopback(host_of(rest)?) {
        return Err("must be on a loopback address: keys fetched in clear text from elsewhere could be forged".into());
    }
    Ok(())
}

/// The host of the part of a URL after `://`: no user info, not empty.
fn host_of(rest: &str) -> Result<&str, String> {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() || authority.contains('@') || rest.chars().any(char::is_whitespace) {
        return Err("needs a host (and no user info or spaces)".into());
    }
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or(""),
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    };
    Ok(host)
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use crate::Config;

    fn oauth(body: &str) -> Result<super::OAuthConfig, String> {
        Config::parse(&format!("[server.auth.oauth]\n{body}\n"))
            .map(|config| config.server.oauth.expect("oauth is configured"))
            .map_err(|err| err.to_string())
    }

    const GOOD: &str = "issuer = \"https://idp.example.com\"\naudience = \"https://mcp.example.com/mcp\"\njwks = \"/etc/keys.json\"";

    #[test]
    fn a_minimal_table_gets_the_defaults() {
        let config = oauth(GOOD).unwrap();
        assert_eq!(config.principal_claim, "sub");
        assert_eq!(config.leeway, std::time::Duration::from_secs(30));
        assert_eq!(config.jwks, super::JwksSource::File("/etc/keys.json".into()));
        assert!(config.scopes.is_empty());
    }

    #[test]
    fn bad_tables_are_refused_with_a_reason() {
        let cases = [
            ("audience = \"https://m/mcp\"\njwks = \"k\"", "issuer is missing"),
            ("issuer = \"https://i\"\njwks = \"k\"", "audience is missing"),
            ("issuer = \"https://i\"\naudience = \"https://m\"", "give jwks (a file) or jwks_url"),
            ("issuer = \"https://i\"\naudience = \"https://m\"\njwks = \"k\"\njwks_url = \"http://127.0.0.1/k\"", "not both"),
            ("issuer = \"https://i\"\naudience = \"https://m\"\njwks_url = \"http://idp.example.com/k\"", "loopback"),
            ("issuer = \"https://i\"\naudience = \"https://m\"\njwks_url = \"ftp://idp.example.com/k\"", "must be an https:// URL"),
            ("issuer = \"https://i\"\naudience = \"https://m\"\njwks = \"k\"\nca_file = \"/ca.pem\"", "ca_file is for an https:// jwks_url"),
            ("issuer = \"idp\"\naudience = \"https://m\"\njwks = \"k\"", "issuer: must be an absolute URL"),
            ("issuer = \"https://i\"\naudience = \"http://mcp.example.com/mcp\"\njwks = \"k\"", "audience: must be https://"),
            ("issuer = \"https://i\"\naudience = \"https://m#x\"\njwks = \"k\"", "fragment"),
            ("issuer = \"https://i\"\naudience = 'https://m/a\"b'\njwks = \"k\"", "quotes"),
            ("issuer = \"https://i\"\naudience = \"https://m\"\njwks = \"k\"\nscopes = [\"a b\"]", "not a scope token"),
            ("issuer = \"https://i\"\naudience = \"https://m\"\njwks = \"k\"\nleeway = \"10m\"", "at most 5m"),
            ("issuer = \"https://i\"\naudience = \"https://m\"\njwks = \"k\"\nprincipal_claim = \"\"", "principal_claim is empty"),
            ("issuer = \"https://i\"\naudience = \"https://m\"\njwks = \"k\"\nsecret = \"x\"", "unknown field"),
        ];
        for (body, expected) in cases {
            let err = oauth(body).expect_err(body);
            assert!(err.contains(expected), "{body:?}: {err}");
        }
    }

    #[test]
    fn loopback_urls_are_accepted_over_http() {
        let config = oauth("issuer = \"http://127.0.0.1:9000\"\naudience = \"http://localhost:8765/mcp\"\njwks_url = \"http://[::1]:9000/jwks\"").unwrap();
        assert_eq!(config.jwks, super::JwksSource::Url("http://[::1]:9000/jwks".into()));
    }

    #[test]
    fn a_static_principal_may_not_take_the_oauth_prefix() {
        let err = Config::parse("[[server.auth.tokens]]\nprincipal = \"oauth:alice\"\ntoken_sha256 = \"f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("oauth:"), "{err}");
    }
}
