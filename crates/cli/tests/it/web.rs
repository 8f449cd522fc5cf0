//! The web view `/ui` of the real binary: its JSON API (each rejection, principals) over
//! HTTP, and the page itself in headless Chromium driven over WebDriver (`webdriver.rs`):
//! a task started over MCP appears without a reload and moves through its states, a
//! question is answered from the page, cancel from the page ends the process, another
//! principal's tasks are neither listed nor reachable by URL.
//!
//! With `MCP_TASKS_UI_SCREENSHOTS=DIR` the browser tests also write `ui-list.png` and
//! `ui-task.png` to DIR (the README's pictures come from `docs/`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{CONFIG, Workdir};
use crate::http::{ALICE, BOB, Client, HttpServer, TOKENS};
use crate::http_peer::{self, Reply};
use crate::webdriver::Browser;

/// A server with alice's and bob's tokens.
fn server_with_tokens() -> (Workdir, HttpServer) {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}\n{TOKENS}")).unwrap();
    let server = HttpServer::start(&work);
    (work, server)
}

fn get(server: &HttpServer, path: &str, token: Option<&str>) -> Reply {
    let auth = token.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|value| ("Authorization", value.as_str())).collect();
    http_peer::request_to(server.addr, "GET", path, &headers, None)
}

fn post(server: &HttpServer, path: &str, token: &str, content_type: &str, body: &str) -> Reply {
    let auth = format!("Bearer {token}");
    let headers = [("Authorization", auth.as_str()), ("Content-Type", content_type)];
    http_peer::request_to(server.addr, "POST", path, &headers, Some(body))
}

/// A 2025-11-25 session of `token` that can answer elicitations (it never does: the page
/// answers), and a task of `tool` it started.
fn task_of(server: &HttpServer, token: &str, tool: &str, arguments: Value) -> (Client, String) {
    let mut client = Client::new(server, Some(token).filter(|token| !token.is_empty()));
    client.initialize_with(json!({"elicitation": {}}));
    let created = client.result("tools/call", json!({"name": tool, "arguments": arguments, "task": {}}));
    let id = created["task"]["taskId"].as_str().expect("taskId").to_owned();
    (client, id)
}

/// Reads the task over the API until `done` holds (bounded; each read waits on the server).
fn api_until(server: &HttpServer, token: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let reply = get(server, &format!("/ui/api/tasks/{id}"), Some(token).filter(|token| !token.is_empty()));
        assert_eq!(reply.status, 200, "{}", reply.body);
        let task = reply.json();
        if done(&task) {
            return task;
        }
        assert!(Instant::now() < deadline, "task {id} never got there: {task}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn web_api_rejects_each_bad_parameter_saying_what_was_wrong_and_keeps_serving() {
    let (_work, server) = server_with_tokens();
    let cases = [
        ("limit=0", "limit \"0\" is not a whole number from 1 to 200"),
        ("limit=201", "limit \"201\" is not a whole number from 1 to 200"),
        ("limit=ten", "limit \"ten\" is not a whole number"),
        ("status=done", "status \"done\" is not one of working, input_required, completed, failed, cancelled"),
        ("before=yesterday", "before \"yesterday\" is not a cursor of this server"),
        ("before=12.not-hex!", "is not a cursor of this server"),
        ("sort=asc", "unknown parameter \"sort\""),
        ("q=%FF", "parameter \"q\" is not valid percent-encoded UTF-8"),
    ];
    for (query, message) in cases {
        let reply = get(&server, &format!("/ui/api/tasks?{query}"), Some(ALICE));
        assert_eq!(reply.status, 400, "{query}: {}", reply.body);
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let error = reply.json()["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.contains(message), "{query}: {error}");
    }
    let long = "x".repeat(201);
    for name in ["q", "tool"] {
        let reply = get(&server, &format!("/ui/api/tasks?{name}={long}"), Some(ALICE));
        assert_eq!((reply.status, reply.json()["error"].clone()), (400, json!(format!("{name} is longer than 200 bytes"))));
    }

    // Answers: each malformed one refused with what was wrong; the question still waits.
    let (_client, id) = task_of(&server, ALICE, "confirm", json!({}));
    let waiting = api_until(&server, ALICE, &id, |task| task["status"] == "input_required");
    let key = waiting["inputRequests"][0]["key"].as_str().unwrap().to_owned();
    assert_eq!(waiting["inputRequests"][0]["kind"], "elicitation");
    let path = format!("/ui/api/tasks/{id}/answer");
    let answers = [
        ("text/plain", "{}".to_owned(), 415, "send the answer as application/json".to_owned()),
        ("application/json", "{".to_owned(), 400, "the answer is not JSON".to_owned()),
        ("application/json", "[1]".to_owned(), 400, "the answer must be a JSON object".to_owned()),
        ("application/json", json!({"action": "accept"}).to_string(), 400, "\"key\" must be the key of a question".to_owned()),
        ("application/json", json!({"key": "nope", "action": "accept"}).to_string(), 409, "question \"nope\" is not waiting".to_owned()),
        ("application/json", json!({"key": key, "action": "maybe"}).to_string(), 400, "\"action\" must be".to_owned()),
        ("application/json", json!({"key": key, "action": "accept", "content": 3}).to_string(), 400, "\"content\" must be an object".to_owned()),
        (
            "application/json",
            json!({"key": key, "action": "accept", "content": {"ok": "yes"}}).to_string(),
            400,
            "the answer does not fit the question".to_owned(),
        ),
        ("application/json", format!("{{\"key\": \"{}\"}}", "k".repeat(300 * 1024)), 413, "the answer is larger than 262144 bytes".to_owned()),
    ];
    for (content_type, body, status, message) in answers {
        let reply = post(&server, &path, ALICE, content_type, &body);
        assert_eq!(reply.status, status, "{}: {}", &body[..body.len().min(80)], reply.body);
        let error = reply.json()["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.contains(&message), "{error}");
    }
    assert_eq!(api_until(&server, ALICE, &id, |_| true)["status"], "input_required", "still waiting");

    // A good answer completes it; answering again and cancelling now are conflicts.
    let good = json!({"key": key, "action": "accept", "content": {"ok": true}}).to_string();
    assert_eq!(post(&server, &path, ALICE, "application/json", &good).status, 200);
    let done = api_until(&server, ALICE, &id, |task| task["status"] == "completed");
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains(r#"answer: {"action":"accept","content":{"ok":true}}"#), "{done}");
    let again = post(&server, &path, ALICE, "application/json", &good);
    assert_eq!(again.status, 409, "{}", again.body);
    let form = post(&server, &format!("/ui/api/tasks/{id}/cancel"), ALICE, "application/x-www-form-urlencoded", "a=b");
    assert_eq!(form.status, 415, "a cancel must be declared JSON: {}", form.body);
    let cancel = post(&server, &format!("/ui/api/tasks/{id}/cancel"), ALICE, "application/json", "{}");
    assert_eq!((cancel.status, cancel.json()["error"].clone()), (409, json!("the task is completed already; it cannot be cancelled")));
    let history: Vec<&str> = done["history"].as_array().unwrap().iter().map(|entry| entry["status"].as_str().unwrap()).collect();
    assert_eq!(history.first(), Some(&"working"));
    assert!(history.contains(&"input_required") && history.last() == Some(&"completed"), "{history:?}");
    assert_eq!((done["era"].clone(), done["client"]["name"].clone()), (json!("2025-11-25"), json!("http-test")));

    // And the server still serves.
    let fine = get(&server, "/ui/api/tasks?limit=1&status=completed", Some(ALICE));
    assert_eq!(fine.status, 200, "{}", fine.body);
    assert_eq!(fine.json()["tasks"][0]["id"], id.as_str());
}

#[test]
fn web_api_shows_each_principal_only_its_tasks_and_anothers_id_is_an_unknown_one() {
    let (_work, server) = server_with_tokens();
    let (_alice, mine) = task_of(&server, ALICE, "slow", json!({"seconds": 30}));
    let (_bob, theirs) = task_of(&server, BOB, "slow", json!({"seconds": 30}));
    let listed = |token: &str| -> Vec<String> {
        let reply = get(&server, "/ui/api/tasks", Some(token));
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.json()["tasks"].as_array().unwrap().iter().map(|task| task["id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(listed(ALICE), std::slice::from_ref(&mine));
    assert_eq!(listed(BOB), std::slice::from_ref(&theirs));
    let counts = get(&server, "/ui/api/tasks", Some(ALICE)).json()["counts"].clone();
    assert_eq!(counts, json!({"working": 1, "input_required": 0, "completed": 0, "failed": 0, "cancelled": 0}));

    // Bob's task, to alice, is exactly an id that never existed.
    let unknown = "0123456789abcdef0123456789abcdef";
    for (suffix, method) in [("", "GET"), ("/cancel", "POST"), ("/answer", "POST")] {
        let ask = |id: &str| {
            let path = format!("/ui/api/tasks/{id}{suffix}");
            let body = json!({"key": "k", "action": "decline"}).to_string();
            if method == "GET" { get(&server, &path, Some(ALICE)) } else { post(&server, &path, ALICE, "application/json", &body) }
        };
        let (foreign, never) = (ask(&theirs), ask(unknown));
        assert_eq!(foreign.status, 404, "{suffix}: {}", foreign.body);
        assert_eq!((foreign.status, foreign.body.replace(&theirs, "ID")), (never.status, never.body.replace(unknown, "ID")), "{suffix}");
    }
    assert_eq!(api_until(&server, BOB, &theirs, |_| true)["status"], "working", "bob's task untouched");

    // Without a token, with a wrong one, from a foreign Host: the checks of /mcp.
    assert_eq!(get(&server, "/ui/api/tasks", None).status, 401);
    assert_eq!(get(&server, "/ui/api/tasks", Some("wrong")).status, 401);
    assert_eq!(get(&server, "/ui/api/events", None).status, 401);
    let foreign_host = http_peer::request_to(server.addr, "GET", "/ui/api/tasks", &[("Host", "evil.example"), ("Authorization", &format!("Bearer {ALICE}"))], None);
    assert_eq!(foreign_host.status, 403, "{}", foreign_host.body);
    let auth = format!("Bearer {ALICE}");
    let cross_site = [("Origin", "http://evil.example"), ("Authorization", auth.as_str()), ("Content-Type", "application/json")];
    let forged = http_peer::request_to(server.addr, "POST", &format!("/ui/api/tasks/{mine}/cancel"), &cross_site, Some("{}"));
    assert_eq!(forged.status, 403, "a page of another site cannot cancel: {}", forged.body);
    assert_eq!(api_until(&server, ALICE, &mine, |_| true)["status"], "working");
    // The page itself carries no data: served without a token, behind the Host check.
    let page = get(&server, "/ui", None);
    assert_eq!((page.status, page.header("content-type")), (200, Some("text/html; charset=utf-8")));
    assert!(page.header("content-security-policy").is_some_and(|csp| csp.contains("default-src 'self'")));
    assert_eq!(http_peer::request_to(server.addr, "GET", "/ui", &[("Host", "evil.example")], None).status, 403);
}

#[test]
fn web_ui_is_not_served_when_the_config_turns_it_off() {
    let work = Workdir::new();
    let config = CONFIG.replacen("[server]\n", "[server]\nui = false\n", 1);
    std::fs::write(work.config(), config).unwrap();
    let server = HttpServer::start(&work);
    assert_eq!(get(&server, "/ui", None).status, 404);
    assert_eq!(get(&server, "/ui/api/tasks", None).status, 404);
    assert_eq!(get(&server, "/metrics", None).status, 200, "the rest is served");
}

/// The page, signed in as `token` through its token dialog (kept in sessionStorage).
fn signed_in(browser: &Browser, server: &HttpServer, token: &str) {
    browser.open(&format!("http://{}/ui", server.addr));
    browser.wait_for("the token dialog", "document.getElementById('token-dialog').open");
    browser.type_into("#token-input", token);
    browser.click("#token-save");
    browser.wait_for("the list", "!document.getElementById('list-view').hidden && document.getElementById('principal').textContent !== ''");
    // Set once per document: still there later means the page was never reloaded.
    browser.run("window.notReloaded = true;");
}

fn screenshots() -> Option<PathBuf> {
    std::env::var_os("MCP_TASKS_UI_SCREENSHOTS").map(PathBuf::from)
}

#[test]
fn web_browser_a_task_started_over_mcp_appears_live_and_its_question_is_answered_from_the_page() {
    let Some(browser) = Browser::start() else { return };
    let (_work, server) = server_with_tokens();
    signed_in(&browser, &server, ALICE);
    assert_eq!(browser.text("#principal"), "alice");
    // Tasks started over MCP while the page is open show up and finish, live.
    for (tool, arguments, status) in [
        ("echo", json!({"text": "hello"}), "completed"),
        ("fails", json!({}), "failed"),
        ("slow", json!({"seconds": 30}), "working"),
    ] {
        let (_client, id) = task_of(&server, ALICE, tool, arguments);
        let row = format!("document.querySelector('tr[data-id=\"{id}\"]')");
        browser.wait_for(&format!("{tool} {status} in the list"), &format!("{row} && {row}.dataset.status === '{status}'"));
    }
    // And one that waits for input.
    let (mut client, id) = task_of(&server, ALICE, "confirm", json!({}));
    let row = format!("document.querySelector('tr[data-id=\"{id}\"]')");
    browser.wait_for("the new task's row", &row);
    browser.wait_for("input_required in the row", &format!("{row} && {row}.dataset.status === 'input_required'"));
    browser.wait_for("the count of tasks waiting", "document.querySelector('a[data-state=\"input_required\"] .n').textContent === '1'");
    if let Some(dir) = screenshots() {
        browser.screenshot(&dir.join("ui-list.png"));
    }
    // Its page: the question rendered from its schema, answered by a person.
    browser.click(&format!("tr[data-id=\"{id}\"] a"));
    browser.wait_for("the question's form", "document.querySelector('#question-list form.question input[name=\"ok\"]')");
    assert_eq!(browser.text("#question-list form.question p"), "Really?");
    if let Some(dir) = screenshots() {
        browser.screenshot(&dir.join("ui-task.png"));
    }
    browser.click("#question-list input[name=\"ok\"]");
    browser.click("#question-list button[data-action=\"accept\"]");
    browser.wait_for("completed on the task's page", "document.getElementById('task-status').dataset.status === 'completed'");
    browser.wait_for("the result on the page", "document.getElementById('task-result').textContent.includes('answer: ')");
    // The agent that started it gets the answer the person gave.
    let result = client.result("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "answer: {\"action\":\"accept\",\"content\":{\"ok\":true}}\n", "{result}");
    let history = browser.text("#history");
    assert!(history.contains("Needs input") && history.contains("Completed"), "{history}");
    // Back on the list, without a reload all along.
    browser.click("a[href=\"#/\"]");
    browser.wait_for("completed in the list", &format!("{row} && {row}.dataset.status === 'completed'"));
    assert_eq!(browser.run("return window.notReloaded === true;"), json!(true), "the page was never reloaded");
}

#[test]
fn web_browser_cancel_from_the_page_cancels_the_task_and_its_process_is_gone() {
    let Some(browser) = Browser::start() else { return };
    let (_work, server) = server_with_tokens();
    signed_in(&browser, &server, ALICE);
    let (mut client, id) = task_of(&server, ALICE, "slow", json!({"seconds": 60}));
    let started = api_until(&server, ALICE, &id, |task| task["statusMessage"].as_str().is_some_and(|m| m.starts_with("started (pid ")));
    let message = started["statusMessage"].as_str().unwrap();
    let group = nix::unistd::Pid::from_raw(message.trim_start_matches("started (pid ").trim_end_matches(')').parse().unwrap());
    assert!(nix::sys::signal::killpg(group, None).is_ok(), "the command runs");

    browser.run(&format!("location.hash = '#/task/{id}';"));
    browser.wait_for("the running task's page", "document.getElementById('task-status').dataset.status === 'working'");
    browser.click("#cancel");
    browser.wait_for("cancelled on the page", "document.getElementById('task-status').dataset.status === 'cancelled'");
    assert_eq!(client.result("tasks/get", json!({"taskId": id}))["status"], "cancelled");
    let deadline = Instant::now() + Duration::from_secs(10);
    while nix::sys::signal::killpg(group, None).is_ok() {
        assert!(Instant::now() < deadline, "process group {group} still alive after the page cancelled its task");
        std::thread::sleep(Duration::from_millis(20));
    }
    browser.wait_for("no cancel button on a cancelled task", "document.getElementById('cancel').hidden");
    assert_eq!(browser.run("return window.notReloaded === true;"), json!(true));
}

#[test]
fn web_browser_another_principals_tasks_are_not_listed_nor_reachable_by_url() {
    let Some(browser) = Browser::start() else { return };
    let (_work, server) = server_with_tokens();
    let (_bob, theirs) = task_of(&server, BOB, "slow", json!({"seconds": 30}));
    signed_in(&browser, &server, ALICE);
    let (_alice, mine) = task_of(&server, ALICE, "slow", json!({"seconds": 30}));
    browser.wait_for("alice's task", &format!("document.querySelector('tr[data-id=\"{mine}\"]')"));
    let rows = browser.run("return Array.from(document.querySelectorAll('#tasks tbody tr')).map(r => r.dataset.id);");
    assert_eq!(rows, json!([mine]), "only alice's task is listed");
    assert_eq!(browser.text("a[data-state=\"working\"] .n"), "1", "bob's task is not counted");

    let missing = |id: &str| {
        browser.run(&format!("location.hash = '#/task/{id}';"));
        browser.wait_for("the missing task", &format!("document.getElementById('missing').textContent.includes('{id}')"));
        browser.text("#missing").replace(id, "ID")
    };
    let unknown = "0123456789abcdef0123456789abcdef";
    assert_eq!(missing(&theirs), missing(unknown), "bob's task looks exactly like one that never existed");
    assert_eq!(missing(&theirs), "No task ID.");
    assert_eq!(browser.run("return window.notReloaded === true;"), json!(true));
}

/// A 2026-07-28 request (`_meta` declaring the tasks extension and elicitation); its result.
fn modern_call(server: &HttpServer, method: &str, params: Value, name: &str) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "web-modern-test", "version": "7"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    let reply = http_peer::request_to(server.addr, "POST", "/mcp", &headers, Some(&body));
    assert_eq!(reply.status, 200, "{}", reply.body);
    let text = if reply.header("content-type").is_some_and(|kind| kind.starts_with("text/event-stream")) {
        reply.body.lines().rev().find_map(|line| line.strip_prefix("data: ")).expect("an event").to_owned()
    } else {
        reply.body
    };
    serde_json::from_str::<Value>(&text).expect("JSON")["result"].clone()
}

/// A tool that becomes a task (past a 20 ms inline wait), then asks.
const APPROVE: &str = r#"
[[tools]]
name = "approve"
description = "Becomes a task, then asks."
command = ["sh", "-c", """
sleep 0.2
echo '@mcp-tasks {{"elicit": {{"message": "Ship it?", "requestedSchema": {{"type": "object", "properties": {{"ship": {{"type": "boolean"}}}}, "required": ["ship"]}}}}}}'
read -r answer
echo "answer: $answer"
"""]
"#;

#[test]
fn web_api_a_2026_07_28_tasks_question_is_answered_from_the_view_and_its_era_and_client_shown() {
    let work = Workdir::new();
    let config = CONFIG.replacen("[server]\n", "[server]\ninline_wait = \"20ms\"\n", 1);
    std::fs::write(work.config(), format!("{config}\n{APPROVE}")).unwrap();
    let server = HttpServer::start(&work);
    let created = modern_call(&server, "tools/call", json!({"name": "approve", "arguments": {}}), "approve");
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let waiting = api_until(&server, "", &id, |task| task["status"] == "input_required");
    assert_eq!(waiting["era"], "2026-07-28");
    // The tasks extension and its revision it was made under (SEP-3392; issue 44, point 5).
    assert_eq!(waiting["extension"], json!({"name": "io.modelcontextprotocol/tasks", "revision": "initial"}));
    assert_eq!(waiting["client"], json!({"name": "web-modern-test", "version": "7"}));
    assert_eq!(waiting["inputRequests"][0]["params"]["message"], "Ship it?");
    let key = waiting["inputRequests"][0]["key"].as_str().unwrap();
    let answer = json!({"key": key, "action": "accept", "content": {"ship": true}}).to_string();
    let reply = http_peer::request_to(server.addr, "POST", &format!("/ui/api/tasks/{id}/answer"), &[("Content-Type", "application/json")], Some(&answer));
    assert_eq!(reply.status, 200, "{}", reply.body);
    api_until(&server, "", &id, |task| task["status"] == "completed");
    // The agent reads the task it started: completed, with the answer given in the view.
    let task = modern_call(&server, "tasks/get", json!({"taskId": id}), &id);
    assert_eq!(task["status"], "completed", "{task}");
    assert!(task.to_string().contains(r#"answer: {\"action\":\"accept\",\"content\":{\"ship\":true}}"#), "{task}");
}

/// A command that prints as it goes, then waits.
const CHATTY: &str = r#"
[[tools]]
name = "chatty"
description = "Prints two lines, then waits."
command = ["sh", "-c", "echo 'first line'; echo 'second line'; sleep 30"]
"#;

#[test]
fn web_api_a_running_commands_output_is_its_live_tail_on_the_events_stream_and_its_page() {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}\n{CHATTY}")).unwrap();
    let server = HttpServer::start(&work);
    // Listening before the task starts: its output comes as `output` events.
    let mut events = http_peer::open_to(server.addr, "GET", "/ui/api/events", &[], None);
    assert_eq!(events.status, 200);
    let (_client, id) = task_of(&server, "", "chatty", json!({}));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut streamed = String::new();
    while !streamed.contains("second line") {
        assert!(Instant::now() < deadline, "the output never came on the stream: {streamed:?}");
        let event = events.next_event().expect("the stream stays open");
        let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
        if data["id"] == id.as_str() && data["text"].is_string() {
            streamed.push_str(data["text"].as_str().unwrap());
        }
    }
    assert_eq!(streamed, "first line\nsecond line\n", "exactly the command's output, in order");
    // And the task's page has it as its tail while it runs.
    let task = api_until(&server, "", &id, |task| task["output"].as_str().is_some_and(|tail| tail.contains("second line")));
    assert_eq!((task["status"].clone(), task["output"].clone()), (json!("working"), json!("first line\nsecond line\n")));
}

/// Issue 44, point 3: a task's page shows the output its event log keeps, on a process that
/// did not see it live: here a server started again on the same store after the task ran.
#[test]
fn web_api_a_finished_commands_output_is_read_from_its_event_log_after_a_restart() {
    let work = Workdir::new();
    let brief = CHATTY.replace("name = \"chatty\"", "name = \"brief\"").replace("; sleep 30", "");
    std::fs::write(work.config(), format!("{CONFIG}\n{brief}")).unwrap();
    let mut server = HttpServer::start(&work);
    let (mut client, id) = task_of(&server, "", "brief", json!({}));
    let result = client.result("tasks/result", json!({"taskId": id}));
    assert!(result["content"][0]["text"].as_str().is_some_and(|text| text.contains("second line")), "{result}");
    server.kill();
    let again = HttpServer::start(&work);
    let task = api_until(&again, "", &id, |task| task["status"] != "working");
    assert_eq!(task["output"], json!("first line\nsecond line\n"), "{task}");
}
