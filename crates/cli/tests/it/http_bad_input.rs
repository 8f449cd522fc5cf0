//! Bad input over Streamable HTTP: each gets the JSON-RPC error stdio gives for it (same
//! code, same message), and the session then serves a correct request.

use serde_json::{Value, json};

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
