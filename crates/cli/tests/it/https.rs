//! HTTPS in and out (issue 43): `serve --tls-cert … --tls-key …` answered by the CLI with
//! `--ca-file` (and refused without the CA, saying why); a renewed certificate taken on
//! SIGHUP without a restart; `mcp-tasks proxy` in front of an `https://` MCP server.

use std::ffi::OsStr;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::certs::Ca;
use crate::harness::{Server, Workdir};
use crate::http::HttpServer;

/// `mcp-tasks call --url URL [--ca-file FILE] echo text=…`, its ledger in the target's
/// temporary directory (not the user's).
fn call(url: &str, ca_file: Option<&std::path::Path>, text: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command.env("MCP_TASKS_LEDGER", concat!(env!("CARGO_TARGET_TMPDIR"), "/https-ledger.sqlite3"));
    command.args(["call", "--url", url]);
    if let Some(file) = ca_file {
        command.arg("--ca-file").arg(file);
    }
    command.args(["echo", "--arg", &format!("text={text}")]).output().expect("run mcp-tasks call")
}

/// A server on the workdir's config over HTTPS, its certificate and key written as `name`.
fn https_server(work: &Workdir, (cert, key): &(String, String), name: &str) -> HttpServer {
    let (cert_file, key_file) = (work.path(&format!("{name}.crt")), work.path(&format!("{name}.key")));
    std::fs::write(&cert_file, cert).unwrap();
    std::fs::write(&key_file, key).unwrap();
    let args = [OsStr::new("--tls-cert"), cert_file.as_os_str(), OsStr::new("--tls-key"), key_file.as_os_str()];
    HttpServer::start_with_args(work, work.store().as_os_str(), &[], &args)
}

#[test]
fn https_serve_is_answered_with_the_ca_file_refused_without_it_and_renewed_on_sighup() {
    let work = Workdir::new();
    let first = Ca::new("first CA");
    let server = https_server(&work, &first.issue(&["localhost", "127.0.0.1"]), "server");
    let url = format!("https://localhost:{}/mcp", server.addr.port());
    let first_ca = work.path("first-ca.pem");
    std::fs::write(&first_ca, first.pem()).unwrap();

    let answered = call(&url, Some(&first_ca), "over https");
    assert!(answered.status.success(), "{}", String::from_utf8_lossy(&answered.stderr));
    assert!(String::from_utf8_lossy(&answered.stdout).contains("over https"));
    let refused = call(&url, None, "no CA");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("certificate") && stderr.contains("UnknownIssuer"), "{stderr}");
    let plain = call(&format!("http://localhost:{}/mcp", server.addr.port()), None, "plain");
    assert!(!plain.status.success(), "plain HTTP is not served on the HTTPS port");

    // A certificate of another CA put in place of the files, and SIGHUP: taken, no restart.
    let second = Ca::new("second CA");
    let (cert, key) = second.issue(&["localhost"]);
    std::fs::write(work.path("server.crt"), cert).unwrap();
    std::fs::write(work.path("server.key"), key).unwrap();
    let second_ca = work.path("second-ca.pem");
    std::fs::write(&second_ca, second.pem()).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(server.pid()).unwrap()), nix::sys::signal::Signal::SIGHUP)
        .expect("SIGHUP");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !call(&url, Some(&second_ca), "renewed").status.success() {
        assert!(Instant::now() < deadline, "the renewed certificate was not taken after SIGHUP");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!call(&url, Some(&first_ca), "old CA").status.success(), "the old certificate is no longer served");
    // A broken file on SIGHUP keeps the certificate in use.
    std::fs::write(work.path("server.crt"), "not a certificate").unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(server.pid()).unwrap()), nix::sys::signal::Signal::SIGHUP)
        .expect("SIGHUP");
    server.wait_for_log("could not be read again; the one in use stays");
    assert!(call(&url, Some(&second_ca), "still").status.success(), "the certificate in use stays");
}

#[test]
fn https_a_missing_or_mismatched_certificate_stops_the_start_naming_the_file() {
    let work = Workdir::new();
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(work.config())
        .arg("--store")
        .arg(work.store())
        .args(["--tls-cert", "/nonexistent/server.crt", "--tls-key", "/nonexistent/server.key"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("/nonexistent/server.crt"), "{stderr}");
    let ca = Ca::new("a CA");
    let (cert, _) = ca.issue(&["localhost"]);
    let (_, other_key) = ca.issue(&["localhost"]);
    std::fs::write(work.path("a.crt"), cert).unwrap();
    std::fs::write(work.path("b.key"), other_key).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(work.config())
        .arg("--store")
        .arg(work.store())
        .arg("--tls-cert")
        .arg(work.path("a.crt"))
        .arg("--tls-key")
        .arg(work.path("b.key"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("do not go together"), "{stderr}");
}

#[test]
fn https_the_proxy_serves_an_https_upstream_checked_against_its_ca_file() {
    let work = Workdir::new();
    let ca = Ca::new("upstream's CA");
    let upstream = https_server(&work, &ca.issue(&["localhost"]), "upstream");
    let ca_file = work.path("upstream-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let url = format!("https://localhost:{}/mcp", upstream.addr.port());
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command
        .args(["proxy", "--stdio", "--upstream-url", &url, "--upstream-ca-file"])
        .arg(&ca_file)
        .arg("--store")
        .arg(work.path("proxy.sqlite3"));
    let mut proxy = Server::spawn(command);
    proxy.initialize();
    let tools = proxy.call("tools/list", json!({}));
    assert!(tools["tools"].as_array().unwrap().iter().any(|tool| tool["name"] == "echo"), "{tools}");
    let result = proxy.call("tools/call", json!({"name": "echo", "arguments": {"text": "through the proxy"}}));
    assert_eq!(result["content"][0]["text"], "through the proxy", "{result}");
}
