//! Bad input over Streamable HTTP: each gets the JSON-RPC error stdio gives for it (same
//! code, same message), and the session then serves a correct request.

use serde_json::{Value, json};

use crate::bad_input::INVALID_ENVELOPES;
use crate::harness::Workdir;
use crate::http::{Client, HttpServer};

fn ready() -> (Workdir, HttpServer, Client) {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    (work, server, client)
}

fn still_serves(client: &mut Client) {
    assert_eq!(client.result("ping", json!({})), json!({}));
}

fn expect_error(error: &Value, code: i64, says: &str) {
    assert_eq!(error["code"], code, "{error}");
    let text = error["message"].as_str().unwrap();
    assert!(text.to_lowercase().contains(&says.to_lowercase()), "message {text:?} should say {says:?}");
}

#[test]
fn http_a_non_ascii_tasks_list_cursor_is_32602_invalid_cursor_and_the_session_goes_on() {
    let (_work, _server, mut client) = ready();
    for cursor in ["é", "éé", "€€€€"] {
        let error = client.error("tasks/list", json!({"cursor": cursor}));
        expect_error(&error, -32602, "invalid cursor");
    }
    still_serves(&mut client);
}

#[test]
fn http_an_invalid_envelope_with_a_readable_id_gets_the_same_32600_as_over_stdio() {
    let (work, _server, mut client) = ready();
    // A stdio server beside the HTTP one, on a store of its own (it could share the file).
    let mut stdio = crate::harness::Server::start(&work.config(), &work.path("stdio.sqlite3"));
    stdio.initialize();
    for (text, says) in INVALID_ENVELOPES {
        let reply = client.post_with(text, &[]);
        assert_eq!(reply.status, 400, "{text}: {}", reply.body);
        let over_http = reply.json();
        expect_error(&over_http["error"], -32600, says);
        stdio.send_raw(text);
        assert_eq!(over_http, stdio.recv(), "{text}: HTTP and stdio answer alike");
    }
    still_serves(&mut client);
}

/// A URL without the endpoint's path (the commonest slip) is answered 404 with where the
/// endpoint is, for the host the client used.
#[test]
fn a_path_that_is_no_endpoint_says_where_the_mcp_endpoint_is() {
    let work = crate::harness::Workdir::new();
    let server = crate::http::HttpServer::start(&work);
    for path in ["/", "/sse", "/mcp/extra"] {
        let reply = crate::http_peer::request_to(server.addr, "POST", path, &[("Content-Type", "application/json")], Some("{}"));
        assert_eq!(reply.status, 404, "{path}: {}", reply.body);
        assert_eq!(reply.body, format!("no MCP endpoint at {path}; did you mean http://{}/mcp?\n", server.addr), "{path}");
    }
}
