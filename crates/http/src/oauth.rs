//! The server as an OAuth 2.1 resource server ([`OAuthOptions`]; `[server.auth.oauth]` in
//! `mcp-tasks serve`): JWT access tokens
//! checked against the authorization server's keys (a JWK Set read from a file or a loopback
//! URL, cached, read again when stale or when a token names an unknown `kid`, at most once
//! per cooldown), and the RFC 9728 protected-resource metadata the 401 challenge points to.
//!
//! A token is accepted when its signature verifies with an asymmetric key of the set (RS*,
//! PS*, ES256, ES384, EdDSA; `none` and HS* are refused: a JWK Set holds public keys), `exp`
//! and `nbf` hold within the leeway, `iss` is the issuer, `aud` is or holds the audience
//! (MCP authorization: the server MUST check that the token was issued for it), and the
//! principal claim is a non-empty string. The principal is the configured prefix (`oauth:`)
//! and that claim: static principals may not take the prefix, so no user of the
//! authorization server can pass for one. Tokens are never logged, nor passed on.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use mcp_tasks_engine::Principal;
use serde_json::{Map, Value, json};

use super::{Authenticate, Denied};

/// The algorithms a token may be signed with: the asymmetric ones.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];
/// How long one read of a `jwks_url` may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest JWK Set read.
const MAX_JWKS: usize = 1 << 20;
/// The longest principal claim accepted.
const MAX_PRINCIPAL: usize = 1024;

/// Which JWT access tokens [`OAuth`] accepts (`mcp-tasks serve` maps `[server.auth.oauth]`
/// onto it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthOptions {
    /// The authorization server, as the tokens' `iss` claim must spell it, and as the
    /// protected-resource metadata lists it in `authorization_servers`.
    pub issuer: String,
    /// The server's canonical URL (RFC 8707), e.g. `https://mcp.example.com/mcp`: the tokens'
    /// `aud` claim must be it or hold it, and the metadata's `resource` is it.
    pub audience: String,
    /// Where the authorization server's signing keys are read.
    pub jwks: JwksSource,
    /// A PEM file of the CA certificates an `https://` [`JwksSource::Url`] is checked against
    /// instead of the system's roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// The scopes every token must carry, in its `scope` claim (space-separated) or `scp`.
    pub scopes: Vec<String>,
    /// The claim that names the principal (usually `sub`).
    pub principal_claim: String,
    /// What a token's principal starts with, before the claim's value (`oauth:` in
    /// `mcp-tasks serve`, a prefix its static principals may not take, so that no user of
    /// the authorization server can pass for one).
    pub principal_prefix: String,
    /// The clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// How old the cached keys may get before the next request reads them again.
    pub jwks_refresh: Duration,
    /// The least time between two reads of the keys caused by tokens naming an unknown
    /// `kid`, so that a flood of tokens with made-up key ids cannot hammer the
    /// authorization server.
    pub jwks_cooldown: Duration,
}

/// Where the signing keys (a JWK Set) come from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwksSource {
    /// A file holding the JWK Set, read at start and again on refresh.
    File(std::path::PathBuf),
    /// An `https://` URL (its certificate verified against the system's roots or
    /// [`OAuthOptions::ca_file`]), or `http://`.
    Url(String),
}

/// Validates JWT access tokens for one authorization server (see the module doc).
pub struct OAuth {
    config: OAuthOptions,
    resource: ProtectedResource,
    keys: RwLock<Keys>,
    /// When the keys were last read or tried; held while a read is under way, so that
    /// concurrent requests wait for it rather than read again.
    last_read: tokio::sync::Mutex<Option<Instant>>,
    /// The client that reads a `jwks_url`; why there is none if its CA file was unusable.
    client: Result<Client<HttpsConnector<HttpConnector>, Empty<Bytes>>, String>,
}

/// The keys of the last good read.
#[derive(Default)]
struct Keys {
    set: Arc<Vec<Key>>,
    read_at: Option<Instant>,
}

#[derive(Clone)]
struct Key {
    kid: Option<String>,
    /// The JWK's `alg`, when it names one: then only that algorithm.
    alg: Option<Algorithm>,
    family: AlgorithmFamily,
    key: DecodingKey,
}

/// Why the keys could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// The file or URL could not be read.
    #[error("reading the JWK Set {source_name}: {reason}")]
    Read {
        /// The file or URL.
        source_name: String,
        /// Why.
        reason: String,
    },
    /// What was read is no JWK Set with a usable key.
    #[error("the JWK Set {source_name} {reason}")]
    Invalid {
        /// The file or URL.
        source_name: String,
        /// What is wrong.
        reason: String,
    },
}

impl OAuth {
    /// A validator for `config`; the keys are read by [`load`](OAuth::load) or on the first
    /// token.
    #[must_use]
    pub fn new(config: OAuthOptions) -> OAuth {
        let resource = ProtectedResource {
            resource: config.audience.clone(),
            authorization_servers: vec![config.issuer.clone()],
            scopes: config.scopes.clone(),
        };
        let client = https_client(config.ca_file.as_deref());
        OAuth {
            config,
            resource,
            keys: RwLock::new(Keys::default()),
            last_read: tokio::sync::Mutex::new(None),
            client,
        }
    }

    /// Whether the keys' URL can be read over TLS as configured: the CA file, when one is
    /// given, was read and holds certificates.
    ///
    /// # Errors
    /// What is wrong with the CA file, naming it.
    pub fn tls_ready(&self) -> Result<(), String> {
        self.client.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// The protected-resource metadata of this server.
    #[must_use]
    pub fn resource(&self) -> &ProtectedResource {
        &self.resource
    }

    /// Reads the keys now (at start: a bad file is an error to report before serving).
    ///
    /// # Errors
    /// The file or URL could not be read, or holds no usable key.
    pub async fn load(&self) -> Result<usize, JwksError> {
        let mut last = self.last_read.lock().await;
        *last = Some(Instant::now());
        let set = self.read().await?;
        let count = set.len();
        self.store(set);
        Ok(count)
    }

    /// The principal of `token`, or why it is refused.
    ///
    /// # Errors
    /// [`Denied::InvalidToken`] for a token that is not a valid access token for this server,
    /// [`Denied::InsufficientScope`] for a valid one without every required scope.
    pub async fn validate(&self, token: &str) -> Result<Principal, Denied> {
        let header = jsonwebtoken::decode_header(token).map_err(|err| refused("header", &err))?;
        if !ALGORITHMS.contains(&header.alg) {
            tracing::debug!(alg = ?header.alg, "refused an access token: not an asymmetric algorithm");
            return Err(Denied::InvalidToken);
        }
        let key = self.key_for(header.kid.as_deref(), header.alg).await.ok_or_else(|| {
            tracing::debug!(kid = ?header.kid, "refused an access token: no key of the JWK Set fits");
            Denied::InvalidToken
        })?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|err| refused("claims", &err))?;
        let claims = data.claims;
        let name = match claims.get(&self.config.principal_claim) {
            Some(Value::String(name)) if !name.is_empty() && name.len() <= MAX_PRINCIPAL => name,
            _ => {
                tracing::debug!(claim = %self.config.principal_claim, "refused an access token: no principal claim");
                return Err(Denied::InvalidToken);
            }
        };
        let granted = scopes_of(&claims);
        if self.config.scopes.iter().any(|scope| !granted.contains(scope.as_str())) {
            return Err(Denied::InsufficientScope);
        }
        Ok(Principal::new(format!("{}{name}", self.config.principal_prefix)))
    }

    /// The key for a token's `kid` and `alg`, reading the set again when it is stale or
    /// when the `kid` is unknown (each at most once per cooldown).
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Option<Key> {
        let (mut set, read_at) = self.snapshot();
        if read_at.is_none_or(|at| at.elapsed() >= self.config.jwks_refresh) {
            self.refresh().await;
            set = self.snapshot().0;
        }
        if let Some(key) = pick(&set, kid, alg) {
            return Some(key.clone());
        }
        // A key id not in the set: the authorization server may have rotated its keys.
        kid?;
        self.refresh().await;
        pick(&self.snapshot().0, kid, alg).cloned()
    }

    /// Reads the keys again unless the last read (or try) is younger than the cooldown.
    async fn refresh(&self) {
        let mut last = self.last_read.lock().await;
        if last.is_some_and(|at| at.elapsed() < self.config.jwks_cooldown) {
            return;
        }
        *last = Some(Instant::now());
        match self.read().await {
            Ok(set) => {
                tracing::info!(keys = set.len(), "read the JWK Set of the authorization server");
                self.store(set);
            }
            Err(err) => tracing::warn!(error = %err, "could not read the JWK Set again; keeping the keys read before"),
        }
    }

    fn store(&self, set: Vec<Key>) {
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        *keys = Keys { set: Arc::new(set), read_at: Some(Instant::now()) };
    }

    fn snapshot(&self) -> (Arc<Vec<Key>>, Option<Instant>) {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        (Arc::clone(&keys.set), keys.read_at)
    }

    /// Reads and parses the JWK Set.
    async fn read(&self) -> Result<Vec<Key>, JwksError> {
        let (name, bytes) = match &self.config.jwks {
            JwksSource::File(path) => {
                let name = path.display().to_string();
                let path = path.clone();
                let bytes = tokio::task::spawn_blocking(move || std::fs::read(path))
                    .await
                    .map_err(|err| err.to_string())
                    .and_then(|read| read.map_err(|err| err.to_string()))
                    .map_err(|reason| JwksError::Read { source_name: name.clone(), reason })?;
                (name, Bytes::from(bytes))
            }
            JwksSource::Url(url) => {
                let bytes = self.fetch(url).await.map_err(|reason| JwksError::Read { source_name: url.clone(), reason })?;
                (url.clone(), bytes)
            }
        };
        parse_set(&bytes).map_err(|reason| JwksError::Invalid { source_name: name, reason })
    }

    async fn fetch(&self, url: &str) -> Result<Bytes, String> {
        let uri: hyper::Uri = url.parse().map_err(|err| format!("bad URL: {err}"))?;
        let request = hyper::Request::get(uri)
            .header(hyper::header::ACCEPT, "application/json, application/jwk-set+json")
            .body(Empty::new())
            .map_err(|err| err.to_string())?;
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let response = tokio::time::timeout(FETCH_TIMEOUT, client.request(request))
            .await
            .map_err(|_| format!("no answer within {}s", FETCH_TIMEOUT.as_secs()))?
            .map_err(|err| mcp_tasks_tls::with_causes(&err))?;
        if !response.status().is_success() {
            return Err(format!("answered HTTP {}", response.status()));
        }
        let body = tokio::time::timeout(FETCH_TIMEOUT, Limited::new(response.into_body(), MAX_JWKS).collect())
            .await
            .map_err(|_| format!("the body took over {}s", FETCH_TIMEOUT.as_secs()))?
            .map_err(|err| format!("reading the body: {err}"))?;
        Ok(body.to_bytes())
    }
}

/// The key of `set` for a token's `kid` and `alg`: the one with that id, or without an id
/// the only one that fits the algorithm.
fn pick<'a>(set: &'a [Key], kid: Option<&str>, alg: Algorithm) -> Option<&'a Key> {
    let fits = |key: &&Key| key.family == alg.family() && key.alg.is_none_or(|only| only == alg);
    match kid {
        Some(kid) => set.iter().filter(|key| key.kid.as_deref() == Some(kid)).find(fits),
        None => {
            let mut fitting = set.iter().filter(fits);
            let first = fitting.next();
            if fitting.next().is_some() { None } else { first }
        }
    }
}

/// Logs why a token was refused (never the token) and refuses it.
fn refused(part: &str, err: &jsonwebtoken::errors::Error) -> Denied {
    tracing::debug!(part, reason = ?err.kind(), "refused an access token");
    Denied::InvalidToken
}

/// The scopes a token grants: `scope` (space-separated, RFC 9068) or `scp` (a list or a
/// string, as some authorization servers write it).
fn scopes_of(claims: &Map<String, Value>) -> HashSet<&str> {
    let mut scopes = HashSet::new();
    for claim in ["scope", "scp"] {
        match claims.get(claim) {
            Some(Value::String(text)) => scopes.extend(text.split(' ').filter(|s| !s.is_empty())),
            Some(Value::Array(items)) => scopes.extend(items.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    scopes
}

/// The usable keys of a JWK Set: signing keys of an asymmetric type. Keys of other types or
/// uses are skipped; a set with none left is an error.
fn parse_set(bytes: &[u8]) -> Result<Vec<Key>, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|err| format!("is not JSON: {err}"))?;
    let Some(Value::Array(entries)) = value.get("keys") else {
        return Err("has no `keys` list".into());
    };
    let mut keys = Vec::with_capacity(entries.len());
    for entry in entries {
        let Ok(jwk) = serde_json::from_value::<Jwk>(entry.clone()) else {
            tracing::debug!("skipped a JWK of an unknown or malformed type");
            continue;
        };
        if jwk.common.public_key_use.as_ref().is_some_and(|usage| *usage != PublicKeyUse::Signature) {
            continue;
        }
        let alg = match entry.get("alg").and_then(Value::as_str).map(str::parse::<Algorithm>) {
            None => None,
            Some(Ok(alg)) if ALGORITHMS.contains(&alg) => Some(alg),
            Some(_) => continue,
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else { continue };
        let family = key.family();
        if family == AlgorithmFamily::Hmac {
            continue;
        }
        keys.push(Key { kid: jwk.common.key_id.clone(), alg, family, key });
    }
    if keys.is_empty() {
        return Err("holds no usable signing key (RSA, EC or OKP)".into());
    }
    Ok(keys)
}

/// RFC 9728 protected-resource metadata: what a client needs to get a token for this server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedResource {
    /// The resource identifier: the server's canonical URL (the tokens' audience).
    pub resource: String,
    /// The authorization servers that issue tokens for it.
    pub authorization_servers: Vec<String>,
    /// The scopes a token must carry.
    pub scopes: Vec<String>,
}

impl ProtectedResource {
    /// The path of the metadata under this server's origin (RFC 9728 §3.1): the well-known
    /// prefix followed by the resource's path, e.g. `/.well-known/oauth-protected-resource/mcp`
    /// for `https://mcp.example.com/mcp`.
    #[must_use]
    pub fn metadata_path(&self) -> String {
        let path = self.resource_path();
        format!("/.well-known/oauth-protected-resource{}", if path == "/" { "" } else { path })
    }

    /// The URL of the metadata, as the 401 challenge's `resource_metadata` names it.
    #[must_use]
    pub fn metadata_url(&self) -> String {
        format!("{}{}", &self.resource[..self.path_start()], self.metadata_path())
    }

    /// The metadata document.
    #[must_use]
    pub fn document(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": self.scopes,
            "bearer_methods_supported": ["header"],
        })
    }

    /// The path (and query) of the resource URL, `/` when it has none.
    fn resource_path(&self) -> &str {
        match &self.resource[self.path_start()..] {
            "" => "/",
            path => path,
        }
    }

    /// Where the resource URL's path (or query) starts: its length if it has none.
    fn path_start(&self) -> usize {
        let after_scheme = self.resource.split_once("://").map_or(0, |(scheme, _)| scheme.len() + 3);
        self.resource[after_scheme..].find(['/', '?']).map_or(self.resource.len(), |at| after_scheme + at)
    }
}

/// The principal a static bearer token stands for, if any (see [`BearerAuth::new`]).
type StaticTokens = Box<dyn Fn(&str) -> Option<Principal> + Send + Sync>;

/// The bearer tokens of a server: static ones first (`[[server.auth.tokens]]` in `mcp-tasks
/// serve`), then JWT access tokens when OAuth is configured.
pub struct BearerAuth {
    tokens: StaticTokens,
    oauth: Option<Arc<OAuth>>,
}

impl BearerAuth {
    /// Static `tokens` (the principal each token stands for, if any; the embedder compares
    /// tokens in constant time, as `mcp_tasks_config::Auth` does), and `oauth` for the
    /// tokens none of them matches.
    #[must_use]
    pub fn new(tokens: impl Fn(&str) -> Option<Principal> + Send + Sync + 'static, oauth: Option<Arc<OAuth>>) -> BearerAuth {
        BearerAuth { tokens: Box::new(tokens), oauth }
    }
}

#[async_trait]
impl Authenticate for BearerAuth {
    async fn authenticate(&self, token: &str) -> Result<Principal, Denied> {
        if let Some(principal) = (self.tokens)(token) {
            return Ok(principal);
        }
        match &self.oauth {
            Some(oauth) => oauth.validate(token).await,
            None => Err(Denied::InvalidToken),
        }
    }

    fn resource(&self) -> Option<&ProtectedResource> {
        self.oauth.as_deref().map(OAuth::resource)
    }
}

/// A client for the keys' URL: `https://` verified against the system's roots or `ca_file`'s
/// (and the URL's host), or `http://`.
fn https_client(ca_file: Option<&std::path::Path>) -> Result<Client<HttpsConnector<HttpConnector>, Empty<Bytes>>, String> {
    let what = ca_file.map_or_else(String::new, |file| format!("server.auth.oauth.ca_file = \"{}\"", file.display()));
    let tls = mcp_tasks_tls::client_config(ca_file, &what)?;
    let connector = HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http().enable_http1().build();
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(url: &str) -> ProtectedResource {
        ProtectedResource { resource: url.into(), authorization_servers: vec![], scopes: vec![] }
    }

    #[test]
    fn the_metadata_url_puts_the_well_known_prefix_before_the_path() {
        let mcp = resource("https://mcp.example.com/mcp");
        assert_eq!(mcp.metadata_path(), "/.well-known/oauth-protected-resource/mcp");
        assert_eq!(mcp.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
        let root = resource("http://127.0.0.1:8765");
        assert_eq!(root.metadata_url(), "http://127.0.0.1:8765/.well-known/oauth-protected-resource");
        let nested = resource("https://example.com/public/mcp");
        assert_eq!(nested.metadata_url(), "https://example.com/.well-known/oauth-protected-resource/public/mcp");
    }

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let claims: Map<String, Value> = serde_json::from_value(json!({"scope": "a b", "scp": ["c"]})).unwrap();
        assert_eq!(scopes_of(&claims), HashSet::from(["a", "b", "c"]));
    }

    #[test]
    fn a_set_of_symmetric_keys_only_is_refused() {
        let set = br#"{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"}]}"#;
        assert!(parse_set(set).err().unwrap().contains("no usable signing key"));
        assert!(parse_set(b"[]").err().unwrap().contains("no `keys`"));
        assert!(parse_set(b"{").err().unwrap().contains("not JSON"));
    }
}
