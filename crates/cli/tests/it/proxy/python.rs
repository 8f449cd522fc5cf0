//! `mcp-tasks proxy` in front of the Python SDK upstream of interop/proxy_upstream.py: list
//! changes, subscriptions, per-tool sync waits and heartbeats, questions over HTTP.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The Python SDK upstream interop/proxy_upstream.py as a command line (the pinned `mcp` in
/// the interop venv), or `None` (skip) when the peers are not installed; under CI=true their
/// absence fails the test.
fn python_upstream() -> Option<String> {
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop");
    let python = interop.join(".peers/venv/bin/python");
    if python.is_file() {
        return Some(format!("{} {}", quoted(&python), quoted(&interop.join("proxy_upstream.py"))));
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "interop peers missing under CI: run interop/install.sh");
    eprintln!("skipping: interop peers not installed (interop/install.sh)");
    None
}

/// `params` with the per-request `_meta` of a 2026-07-28 client.
fn modern(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "0"},
    });
    params
}

fn listed<'a>(list: &'a Value, key: &str, field: &str) -> Vec<&'a str> {
    list[key].as_array().into_iter().flatten().filter_map(|item| item[field].as_str()).collect()
}

#[test]
fn proxy_upstream_resource_and_prompt_list_changes_reach_clients_of_both_eras() {
    let Some(upstream) = python_upstream() else { return };
    // 2025-11-25: the session gets both notifications, and the lists are the new ones.
    let dir = tempfile::tempdir().unwrap();
    let mut legacy = proxy(dir.path(), &upstream, &[]);
    let init = legacy.initialize();
    assert_eq!(init["capabilities"]["resources"]["listChanged"], true, "{init}");
    assert_eq!(init["capabilities"]["prompts"]["listChanged"], true, "{init}");
    assert!(!listed(&legacy.call("resources/list", json!({})), "resources", "uri").contains(&"proxy://legacy-one"));
    let added = legacy.call("tools/call", json!({"name": "interop_add_listing", "arguments": {"name": "legacy-one"}}));
    assert_eq!(text_of(&added), "listed legacy-one");
    legacy.notification(|n| n["method"] == "notifications/resources/list_changed");
    legacy.notification(|n| n["method"] == "notifications/prompts/list_changed");
    assert!(listed(&legacy.call("resources/list", json!({})), "resources", "uri").contains(&"proxy://legacy-one"));
    assert!(listed(&legacy.call("prompts/list", json!({})), "prompts", "name").contains(&"legacy-one"));

    // 2026-07-28: a listen stream that asked for them gets them, tagged with its id.
    let dir = tempfile::tempdir().unwrap();
    let mut fresh = proxy(dir.path(), &upstream, &[]);
    let discovered = fresh.call("server/discover", modern(json!({})));
    assert_eq!(discovered["capabilities"]["resources"]["listChanged"], true, "{discovered}");
    let wanted = json!({"notifications": {"resourcesListChanged": true, "promptsListChanged": true}});
    let listen = fresh.send_request("subscriptions/listen", modern(wanted));
    let acknowledged = fresh.notification(|n| n["method"] == "notifications/subscriptions/acknowledged");
    let agreed = &acknowledged["params"]["notifications"];
    assert!(agreed["resourcesListChanged"] == true && agreed["promptsListChanged"] == true, "{acknowledged}");
    let added = fresh.call("tools/call", modern(json!({"name": "interop_add_listing", "arguments": {"name": "modern-one"}})));
    assert_eq!(text_of(&added), "listed modern-one", "{added}");
    let tagged = |n: &Value, method: &str| {
        n["method"] == method && n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == json!(listen)
    };
    fresh.notification(|n| tagged(n, "notifications/resources/list_changed"));
    fresh.notification(|n| tagged(n, "notifications/prompts/list_changed"));
    let resources = fresh.call("resources/list", modern(json!({})));
    assert!(listed(&resources, "resources", "uri").contains(&"proxy://modern-one"), "{resources}");
}

#[test]
fn proxy_resource_subscriptions_are_mirrored_upstream_and_its_updates_reach_the_subscribers_of_both_eras() {
    let Some(upstream) = python_upstream() else { return };
    // 2025-11-25: resources/subscribe reaches the upstream (it says so), and its update comes back.
    let dir = tempfile::tempdir().unwrap();
    let mut legacy = proxy(dir.path(), &upstream, &[]);
    legacy.initialize();
    let touched = legacy.call("tools/call", json!({"name": "interop_touch", "arguments": {"uri": "proxy://readme"}}));
    assert_eq!(text_of(&touched), "not subscribed: proxy://readme", "nobody subscribed yet");
    legacy.call("resources/subscribe", json!({"uri": "proxy://readme"}));
    let touched = legacy.call("tools/call", json!({"name": "interop_touch", "arguments": {"uri": "proxy://readme"}}));
    assert_eq!(text_of(&touched), "updated proxy://readme", "the subscription was mirrored upstream");
    legacy.notification(|n| n["method"] == "notifications/resources/updated" && n["params"]["uri"] == "proxy://readme");

    // 2026-07-28: a listen stream's resourceSubscriptions do the same, tagged with its id.
    let dir = tempfile::tempdir().unwrap();
    let mut fresh = proxy(dir.path(), &upstream, &[]);
    let listen = fresh.send_request("subscriptions/listen", modern(json!({"notifications": {"resourceSubscriptions": ["proxy://readme"]}})));
    let acknowledged = fresh.notification(|n| n["method"] == "notifications/subscriptions/acknowledged");
    assert_eq!(acknowledged["params"]["notifications"]["resourceSubscriptions"], json!(["proxy://readme"]), "{acknowledged}");
    let touched = fresh.call("tools/call", modern(json!({"name": "interop_touch", "arguments": {"uri": "proxy://readme"}})));
    assert_eq!(text_of(&touched), "updated proxy://readme", "{touched}");
    fresh.notification(|n| {
        n["method"] == "notifications/resources/updated"
            && n["params"]["uri"] == "proxy://readme"
            && n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == json!(listen)
    });
}

#[test]
fn proxy_upstream_tool_hands_off_at_its_own_sync_wait_while_another_uses_the_servers() {
    let dir = tempfile::tempdir().unwrap();
    let runs_file = dir.path().join("runs");
    let config = counting_upstream_config(dir.path(), &runs_file);
    let mut proxy = proxy_configured(dir.path(), &config, "[server]\nsync_wait = \"30s\"\n\n[upstream.tools.plain_slow]\nsync_wait = \"1s\"\n");
    proxy.initialize(); // no tasks capability: plain calls
    let tools = proxy.call("tools/list", json!({}));
    assert!(listed(&tools, "tools", "name").contains(&"task_result"), "the helper tools are listed: {tools}");

    // Its own 1 s: a 4 s call is handed off to a task, and collected with the helper tools.
    let handed = proxy.call("tools/call", json!({"name": "plain_slow", "arguments": {"seconds": "4"}}));
    let id = handed["structuredContent"]["taskId"].as_str().unwrap_or_else(|| panic!("handed off: {handed}")).to_owned();
    assert!(text_of(&handed).contains(&id) && text_of(&handed).contains("task_result"), "{handed}");
    // The server's 30 s: a 3 s call is answered whole.
    let whole = proxy.call("tools/call", json!({"name": "task_slow", "arguments": {"seconds": "3"}}));
    assert!(whole["structuredContent"]["taskId"].is_null(), "not handed off: {whole}");
    assert_eq!(text_of(&whole).trim(), "done");

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = proxy.call("tools/call", json!({"name": "task_status", "arguments": {"task_id": id}}));
        if status["structuredContent"]["status"] == "completed" {
            break;
        }
        assert!(status["structuredContent"]["status"] == "working" && Instant::now() < deadline, "{status}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let result = proxy.call("tools/call", json!({"name": "task_result", "arguments": {"task_id": id}}));
    assert_eq!(text_of(&result).trim(), "done", "{result}");
    assert_eq!(runs(&runs_file), 2, "each call ran once");
}

#[test]
fn proxy_bad_per_tool_sync_wait_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[upstream.tools.slow]\nsync_wait = \"a while\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["proxy", "--stdio", "--upstream-cmd", "x", "--config"])
        .arg(&config)
        .arg("--store")
        .arg(dir.path().join("s.sqlite3"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(1) && err.contains("sync_wait of upstream tool `slow`"), "{err}");
}

#[test]
fn proxy_upstream_tool_heartbeats_at_its_own_rate_while_another_keeps_the_servers_off() {
    let dir = tempfile::tempdir().unwrap();
    let runs_file = dir.path().join("runs");
    let config = counting_upstream_config(dir.path(), &runs_file);
    let mut proxy = proxy_configured(dir.path(), &config, "[server]\nheartbeat = \"0\"\n\n[upstream.tools.plain_slow]\nheartbeat = \"200ms\"\n");
    proxy.initialize(); // no tasks: plain calls, with a progress token
    let beats = |proxy: &Server, token: &str| {
        proxy.notifications.iter().filter(|n| n["method"] == "notifications/progress" && n["params"]["progressToken"] == token).count()
    };
    // The upstream's command reports no progress: whatever comes is the proxy's heartbeat.
    let own = proxy.call("tools/call", json!({"name": "plain_slow", "arguments": {"seconds": "2"}, "_meta": {"progressToken": "own"}}));
    assert_eq!(text_of(&own).trim(), "done");
    assert!(beats(&proxy, "own") >= 2, "heartbeats every 200 ms over a 2 s call: {}", beats(&proxy, "own"));
    let server = proxy.call("tools/call", json!({"name": "task_slow", "arguments": {"seconds": "1"}, "_meta": {"progressToken": "server"}}));
    assert_eq!(text_of(&server).trim(), "done");
    assert_eq!(beats(&proxy, "server"), 0, "the server's heartbeat is off");
}

/// Waits (bounded) until task `id` is `status`; it may only be `working` meanwhile.
fn wait_status(proxy: &mut Server, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let task = proxy.call("tasks/get", json!({"taskId": id}));
        if task["status"] == status {
            return task;
        }
        assert!(task["status"] == "working" && Instant::now() < deadline, "waiting for {status}: {task}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn proxy_http_upstream_question_goes_to_the_call_whose_stream_carried_it_not_the_oldest() {
    // The Python SDK over Streamable HTTP, era negotiated (it answers the 2026-07-28 probe
    // with an error on a session it then ends: initialize must go without that session).
    let Some(upstream) = python_upstream() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut words = shlex::split(&upstream).unwrap();
    let mut server = Command::new(words.remove(0));
    server.args(words).args(["http", &port.to_string()]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let mut server = KillOnDrop(server.spawn().unwrap());
    let stderr = server.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("Uvicorn running") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30)).expect("the Python upstream listens");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("proxy.sqlite3");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut proxy = Server::spawn_args(&[
        "proxy".as_ref(),
        "--stdio".as_ref(),
        "--store".as_ref(),
        store.as_os_str(),
        "--upstream-url".as_ref(),
        std::ffi::OsStr::new(&url),
    ]);
    proxy.initialize_with(json!({"elicitation": {}}));

    // Two plain upstream calls in flight; the younger one asks.
    let older = proxy.call("tools/call", json!({"name": "interop_sleep", "arguments": {"seconds": 4}, "task": {"ttl": 60000}}));
    let older = older["task"]["taskId"].as_str().unwrap().to_owned();
    let younger = proxy.call("tools/call", json!({"name": "interop_confirm", "arguments": {"item": "the younger"}, "task": {"ttl": 60000}}));
    let younger = younger["task"]["taskId"].as_str().unwrap().to_owned();
    wait_status(&mut proxy, &younger, "input_required");
    let task = proxy.call("tasks/get", json!({"taskId": older}));
    assert_eq!(task["status"], "working", "the older call was not asked: {task}");
    let waiting = proxy.send_request("tasks/result", json!({"taskId": younger}));
    let asked = loop {
        let message = proxy.recv();
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    assert_eq!(asked["params"]["message"], "Confirm the younger?", "{asked}");
    assert_eq!(asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], younger.as_str(), "{asked}");
    proxy.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirm": true}}}));
    let result = proxy.response(waiting)["result"].clone();
    assert!(text_of(&result).starts_with("confirmed the younger"), "{result}");
    wait_status(&mut proxy, &older, "completed");
    assert_eq!(text_of(&proxy.call("tasks/result", json!({"taskId": older}))), "slept");
}
