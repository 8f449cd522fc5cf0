//! `[server.auth.oauth]` against the real binary: JWT access tokens signed with keys made in
//! the test, the JWK Set read from a file or served on loopback by the test; each refusal
//! (expired, not yet valid, another audience or issuer, a bad signature, `none`, HS256, a
//! missing scope) with its status and `WWW-Authenticate`, in both eras and on the web view;
//! the RFC 9728 metadata; key rotation; the refetch rate limit.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey;
use rsa::pkcs1::EncodeRsaPrivateKey;
use serde_json::{Value, json};

use crate::harness::{CONFIG, Workdir};
use crate::http::{ALICE, Client, HttpServer, TOKENS};
use crate::http_peer::{self, Reply};

const ISSUER: &str = "https://idp.test";
const AUDIENCE: &str = "https://mcp.test/mcp";
const METADATA: &str = "https://mcp.test/.well-known/oauth-protected-resource/mcp";

/// A signing key made for the test, and its public JWK.
struct Key {
    kid: String,
    alg: Algorithm,
    private: EncodingKey,
    public: Value,
}

impl Key {
    fn es256(kid: &str) -> Key {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).unwrap();
        let secret = p256::SecretKey::from_slice(&bytes).unwrap();
        let private = EncodingKey::from_ec_der(secret.to_pkcs8_der().unwrap().as_bytes());
        Key::with(kid, Algorithm::ES256, private)
    }

    fn rs256(kid: &str) -> Key {
        use rsa::Generate as _;
        let secret = rsa::PrivateKey::generate();
        let private = EncodingKey::from_rsa_der(secret.to_pkcs1_der().unwrap().as_bytes());
        Key::with(kid, Algorithm::RS256, private)
    }

    fn with(kid: &str, alg: Algorithm, private: EncodingKey) -> Key {
        let mut jwk = Jwk::from_encoding_key(&private, alg).unwrap();
        jwk.common.key_id = Some(kid.to_owned());
        Key { kid: kid.to_owned(), alg, private, public: serde_json::to_value(jwk).unwrap() }
    }

    /// A token with `claims` over the defaults (this issuer and audience, an hour to live).
    fn token(&self, claims: Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, &with_defaults(claims), &self.private).unwrap()
    }
}

fn now() -> i64 {
    i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()).unwrap()
}

fn with_defaults(claims: Value) -> Value {
    let mut all = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now() + 3600, "scope": "tasks"});
    for (name, value) in claims.as_object().unwrap() {
        if value.is_null() {
            all.as_object_mut().unwrap().remove(name);
        } else {
            all[name] = value.clone();
        }
    }
    all
}

fn jwks(keys: &[&Key]) -> String {
    json!({"keys": keys.iter().map(|key| key.public.clone()).collect::<Vec<_>>()}).to_string()
}

/// An unsigned token (`alg: none`) and one signed with HS256, for the issuer and audience.
fn forged_tokens() -> [String; 2] {
    let b64 = |value: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    let none = format!("{}.{}.", b64(json!({"alg": "none", "typ": "JWT", "kid": "a"})), b64(with_defaults(json!({}))));
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("a".into());
    let hs = jsonwebtoken::encode(&header, &with_defaults(json!({})), &EncodingKey::from_secret(b"guessable").unwrap()).unwrap();
    [none, hs]
}

fn oauth_table(source: &str, extra: &str) -> String {
    format!("\n[server.auth.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\n{source}\nscopes = [\"tasks\"]\n{extra}\n")
}

fn initialize(server: &HttpServer, token: &str) -> Reply {
    let client = Client::new(server, Some(token));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "oauth-test", "version": "0"}}});
    client.post_with(&body.to_string(), &[])
}

/// A 2026-07-28 `tools/list`, sessionless.
fn modern_list(addr: SocketAddr, token: &str) -> Reply {
    let params = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "oauth-test", "version": "0"},
    }});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}).to_string();
    let authorization = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
        ("Authorization", authorization.as_str()),
    ];
    http_peer::request(addr, "POST", &headers, Some(&body))
}

fn ui_tasks(addr: SocketAddr, token: &str) -> Reply {
    let authorization = format!("Bearer {token}");
    http_peer::request_to(addr, "GET", "/ui/api/tasks", &[("Authorization", authorization.as_str())], None)
}

/// The same refusal on every door: 2025-11-25 `initialize`, 2026-07-28, the web view.
fn assert_refused(server: &HttpServer, token: &str, status: u16, error: &str, case: &str) {
    for (door, reply) in [
        ("2025-11-25", initialize(server, token)),
        ("2026-07-28", modern_list(server.addr, token)),
        ("/ui", ui_tasks(server.addr, token)),
    ] {
        assert_eq!(reply.status, status, "{case} on {door}: {}", reply.body);
        let challenge = reply.header("www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer "), "{case} on {door}: {challenge}");
        assert!(challenge.contains(&format!(r#"resource_metadata="{METADATA}""#)), "{case} on {door}: {challenge}");
        assert!(challenge.contains(&format!(r#"error="{error}""#)), "{case} on {door}: {challenge}");
        assert!(challenge.contains(r#"scope="tasks""#), "{case} on {door}: {challenge}");
    }
}

#[test]
fn oauth_tokens_are_checked_for_signature_time_issuer_audience_and_scope_and_bind_tasks_to_their_principal() {
    let work = Workdir::new();
    let (ec, rs) = (Key::es256("ec-1"), Key::rs256("rs-1"));
    let keys = work.path("jwks.json");
    std::fs::write(&keys, jwks(&[&ec, &rs])).unwrap();
    let source = format!("jwks = {:?}", keys.display().to_string());
    std::fs::write(work.config(), format!("{CONFIG}\n{TOKENS}\n{}", oauth_table(&source, ""))).unwrap();
    let server = HttpServer::start(&work);

    // The metadata, at the root and with the endpoint's path, without a token.
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let reply = http_peer::request_to(server.addr, "GET", path, &[], None);
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(
            reply.json(),
            json!({"resource": AUDIENCE, "authorization_servers": [ISSUER], "scopes_supported": ["tasks"], "bearer_methods_supported": ["header"]})
        );
    }
    // No token: 401 naming the metadata, without an error code.
    let anonymous = Client::new(&server, None).post_with("{}", &[]);
    assert_eq!(anonymous.status, 401);
    let challenge = anonymous.header("www-authenticate").unwrap();
    assert_eq!(challenge, format!(r#"Bearer resource_metadata="{METADATA}", scope="tasks""#));

    // A valid token (ES256, and RS256): a task bound to `oauth:alice`.
    let mut alice = Client::new(&server, Some(&ec.token(json!({}))));
    alice.initialize();
    let created = alice.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 30}, "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let mut alice_rs = Client::new(&server, Some(&rs.token(json!({"aud": ["https://other.test", AUDIENCE], "exp": now() - 10}))));
    alice_rs.initialize();
    assert_eq!(alice_rs.result("tasks/get", json!({"taskId": id}))["status"], "working", "the same principal, another key; aud as a list; exp within the leeway");
    assert_eq!(modern_list(server.addr, &ec.token(json!({}))).status, 200);
    let listed = ui_tasks(server.addr, &ec.token(json!({})));
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains(&id), "the web view lists the principal's task");

    // Another IdP user, and the static principal `alice`, see nothing of oauth:alice's task.
    for token in [ec.token(json!({"sub": "bob"})), ALICE.to_owned()] {
        let mut other = Client::new(&server, Some(&token));
        other.initialize();
        let foreign = other.error("tasks/get", json!({"taskId": id}));
        let unknown = other.error("tasks/get", json!({"taskId": "0123456789abcdef0123456789abcdef"}));
        assert_eq!(foreign["code"], unknown["code"]);
        assert!(other.result("tasks/list", json!({}))["tasks"].as_array().unwrap().is_empty());
    }

    let stranger = Key::es256("ec-1");
    let [none, hs256] = forged_tokens();
    let cases = [
        ("expired", ec.token(json!({"exp": now() - 120}))),
        ("not yet valid", ec.token(json!({"nbf": now() + 120}))),
        ("another audience", ec.token(json!({"aud": "https://elsewhere.test/mcp"}))),
        ("no audience", ec.token(json!({"aud": null}))),
        ("another issuer", ec.token(json!({"iss": "https://evil.test"}))),
        ("signed by another key under a known kid", stranger.token(json!({}))),
        ("an unknown kid", Key::es256("ec-9").token(json!({}))),
        ("alg none", none),
        ("HS256", hs256),
        ("no sub", ec.token(json!({"sub": null}))),
        ("not a JWT", "not.a.jwt".to_owned()),
    ];
    for (case, token) in &cases {
        assert_refused(&server, token, 401, "invalid_token", case);
    }
    let scopeless = ec.token(json!({"scope": "other"}));
    assert_refused(&server, &scopeless, 403, "insufficient_scope", "missing scope");
    assert_eq!(initialize(&server, &ec.token(json!({"scope": null, "scp": ["tasks"]}))).status, 200, "scp as a list");
    // The static tokens still work beside OAuth.
    assert_eq!(initialize(&server, ALICE).status, 200);
}

/// Serves a JWK Set that the test replaces, counting the reads.
struct JwksServer {
    addr: SocketAddr,
    body: Arc<Mutex<String>>,
    reads: Arc<AtomicUsize>,
}

impl JwksServer {
    fn start(body: String) -> JwksServer {
        JwksServer::start_with(body, None)
    }

    /// Over TLS, serving the PEM certificate `cert` with its key `key`.
    fn start_tls(body: String, cert: &str, key: &str) -> JwksServer {
        JwksServer::start_with(body, Some(crate::certs::server_config(cert, key)))
    }

    fn start_with(body: String, tls: Option<Arc<rustls::ServerConfig>>) -> JwksServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (body, reads) = (Arc::new(Mutex::new(body)), Arc::new(AtomicUsize::new(0)));
        let (served, counted) = (Arc::clone(&body), Arc::clone(&reads));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let answer = |stream: &mut dyn ReadWrite| {
                    let mut reader = BufReader::new(stream);
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                        line.clear();
                    }
                    counted.fetch_add(1, Ordering::SeqCst);
                    let text = served.lock().unwrap().clone();
                    let reply = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}", text.len());
                    let stream = reader.into_inner();
                    let _ = stream.write_all(reply.as_bytes()).and_then(|()| stream.flush());
                };
                match &tls {
                    None => answer(&mut { stream }),
                    Some(config) => {
                        let Ok(connection) = rustls::ServerConnection::new(Arc::clone(config)) else { continue };
                        answer(&mut rustls::StreamOwned::new(connection, stream));
                    }
                }
            }
        });
        JwksServer { addr, body, reads }
    }

    fn serve(&self, body: String) {
        *self.body.lock().unwrap() = body;
    }

    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

/// A stream to read a request from and write the answer to.
trait ReadWrite: std::io::Read + Write {}
impl<T: std::io::Read + Write> ReadWrite for T {}

fn url_server(work: &Workdir, jwks: &JwksServer, extra: &str) -> HttpServer {
    let source = format!("jwks_url = \"http://{}/jwks\"", jwks.addr);
    std::fs::write(work.config(), format!("{CONFIG}\n{}", oauth_table(&source, extra))).unwrap();
    HttpServer::start(work)
}

#[test]
fn oauth_keys_rotate_without_a_restart_a_new_kid_is_fetched_and_a_removed_key_stops_working() {
    let work = Workdir::new();
    let (old, new) = (Key::es256("old"), Key::es256("new"));
    let idp = JwksServer::start(jwks(&[&old]));
    let server = url_server(&work, &idp, "jwks_cooldown = \"0s\"");
    assert_eq!(initialize(&server, &old.token(json!({}))).status, 200);
    assert_eq!(initialize(&server, &new.token(json!({}))).status, 401, "not published yet");

    idp.serve(jwks(&[&old, &new]));
    assert_eq!(initialize(&server, &new.token(json!({}))).status, 200, "the unknown kid made the server read the keys again");
    idp.serve(jwks(&[&new]));
    assert_eq!(initialize(&server, &Key::es256("other").token(json!({}))).status, 401);
    let removed = initialize(&server, &old.token(json!({})));
    assert_eq!(removed.status, 401, "the old key is gone after the refresh");
    assert!(removed.header("www-authenticate").unwrap().contains(r#"error="invalid_token""#));
    assert_eq!(initialize(&server, &new.token(json!({}))).status, 200);
}

#[test]
fn oauth_a_flood_of_unknown_kids_reads_the_keys_at_most_once_per_cooldown() {
    let work = Workdir::new();
    let key = Key::es256("k");
    let idp = JwksServer::start(jwks(&[&key]));
    let server = url_server(&work, &idp, "jwks_cooldown = \"1h\"");
    assert_eq!(initialize(&server, &key.token(json!({}))).status, 200);
    let before = idp.reads();
    for n in 0..20 {
        assert_eq!(initialize(&server, &Key::es256(&format!("made-up-{n}")).token(json!({}))).status, 401);
    }
    assert!(idp.reads() - before <= 1, "{} reads for 20 unknown kids", idp.reads() - before);
    assert_eq!(initialize(&server, &key.token(json!({}))).status, 200, "the known key still works");
}

#[test]
fn oauth_a_missing_jwks_file_stops_the_start_with_the_reason() {
    let work = Workdir::new();
    let missing = work.path("no-such-jwks.json");
    let source = format!("jwks = {:?}", missing.display().to_string());
    std::fs::write(work.config(), format!("{CONFIG}\n{}", oauth_table(&source, ""))).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(work.config())
        .arg("--store")
        .arg(work.store())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("server.auth.oauth.jwks") && stderr.contains("no-such-jwks.json"), "{stderr}");
}

/// `jwks_url = "https://…"` with the CA that signed the server's certificate (`ca_file`):
/// the keys are read over TLS, and a key published later is picked up without a restart. A
/// CA file that is not there stops the start, naming it.
#[test]
fn oauth_an_https_jwks_url_is_read_with_its_ca_file_and_a_rotated_key_is_picked_up() {
    let ca = crate::certs::Ca::new("identity provider's CA");
    let (cert, key_pem) = ca.issue(&["localhost"]);
    let (old, new) = (Key::es256("old"), Key::es256("new"));
    let idp = JwksServer::start_tls(jwks(&[&old]), &cert, &key_pem);
    let work = Workdir::new();
    let ca_file = work.path("idp-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let source = format!("jwks_url = \"https://localhost:{}/jwks\"\nca_file = \"{}\"", idp.addr.port(), ca_file.display());
    std::fs::write(work.config(), format!("{CONFIG}\n{}", oauth_table(&source, "jwks_cooldown = \"0s\""))).unwrap();
    let server = HttpServer::start(&work);
    assert_eq!(initialize(&server, &old.token(json!({}))).status, 200, "the keys were read over https");
    idp.serve(jwks(&[&old, &new]));
    assert_eq!(initialize(&server, &new.token(json!({}))).status, 200, "the rotated key was read again over https");
    drop(server);

    let missing = format!("jwks_url = \"https://localhost:{}/jwks\"\nca_file = \"/nonexistent/idp-ca.pem\"", idp.addr.port());
    std::fs::write(work.config(), format!("{CONFIG}\n{}", oauth_table(&missing, ""))).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(work.config())
        .arg("--store")
        .arg(work.path("tasks.sqlite3"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("/nonexistent/idp-ca.pem"), "{stderr}");
}
