//! `mcp-tasks proxy` of the real binary over stdio (2025-11-25 downstream) in front of real
//! upstreams: the reference server @modelcontextprotocol/server-everything (the pinned
//! version under interop/.peers; these tests skip without it, and fail under CI=true), and
//! `mcp-tasks serve` itself as a durable, task-running upstream (for the restart cases: a
//! command tool counts its runs in a file).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Server, poll_until_terminal};

mod python;

/// The pinned server-everything (node and its entry point), or `None` (skip) when the peers
/// are not installed; under CI=true their absence fails the test.
fn everything() -> Option<(PathBuf, PathBuf)> {
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/.peers/npm-main/node_modules");
    let node = peers.join("node/bin/node");
    let entry = peers.join("@modelcontextprotocol/server-everything/dist/index.js");
    if node.is_file() && entry.is_file() {
        return Some((node, entry));
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "interop peers missing under CI: run interop/install.sh");
    eprintln!("skipping: interop peers not installed (interop/install.sh)");
    None
}

/// `mcp-tasks proxy --stdio` of `upstream` (a command line), on the store in `dir`.
fn proxy(dir: &Path, upstream: &str, extra: &[&str]) -> Server {
    let store = dir.join("proxy.sqlite3");
    let mut args: Vec<std::ffi::OsString> = vec!["proxy".into(), "--stdio".into(), "--store".into(), store.into()];
    args.extend(["--upstream-cmd".into(), upstream.into()]);
    args.extend(extra.iter().map(Into::into));
    Server::spawn_args(&args)
}

fn quoted(path: &Path) -> String {
    format!("'{}'", path.display())
}

fn everything_cmd(node: &Path, entry: &Path) -> String {
    format!("{} {} stdio", quoted(node), quoted(entry))
}

fn text_of(result: &Value) -> String {
    result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect::<Vec<_>>().join("\n")
}

/// Where the proxy finds server-everything: spawned over stdio, or over Streamable HTTP
/// (started here, on a free port, ended with the test).
enum Everything {
    Stdio,
    /// The server (held: ended when the test drops it) and its URL.
    Http(#[allow(dead_code)] KillOnDrop, String),
}

impl Everything {
    fn http(node: &Path, entry: &Path) -> Everything {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Everything::http_on(node, entry, port)
    }

    fn http_on(node: &Path, entry: &Path, port: u16) -> Everything {
        let mut child = KillOnDrop(
            Command::new(node)
                .arg(entry)
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
        // It says where it listens on one of its outputs; both are read to their end.
        let (tx, rx) = std::sync::mpsc::channel();
        let outputs: [Box<dyn std::io::Read + Send>; 2] =
            [Box::new(child.0.stdout.take().unwrap()), Box::new(child.0.stderr.take().unwrap())];
        for output in outputs {
            let tx = tx.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(output).lines().map_while(Result::ok) {
                    if line.contains("listening on port") {
                        let _ = tx.send(());
                    }
                }
            });
        }
        rx.recv_timeout(Duration::from_secs(30)).expect("server-everything listens");
        Everything::Http(child, format!("http://127.0.0.1:{port}/mcp"))
    }

    /// A proxy of it on the store in `dir`.
    fn proxy(&self, dir: &Path, node: &Path, entry: &Path) -> Server {
        match self {
            Everything::Stdio => proxy(dir, &everything_cmd(node, entry), &[]),
            Everything::Http(_, url) => {
                let store = dir.join("proxy.sqlite3");
                Server::spawn_args(&["proxy".as_ref(), "--stdio".as_ref(), "--store".as_ref(), store.as_os_str(), "--upstream-url".as_ref(), std::ffi::OsStr::new(url)])
            }
        }
    }
}

#[test]
fn proxy_server_everything_plain_tools_become_tasks_with_progress_and_its_catalog_is_mirrored() {
    let Some((node, entry)) = everything() else { return };
    plain_tools_progress_and_catalog(&Everything::Stdio, &node, &entry);
}

#[test]
fn proxy_server_everything_over_http_plain_tools_become_tasks_with_progress_and_its_catalog_is_mirrored() {
    let Some((node, entry)) = everything() else { return };
    plain_tools_progress_and_catalog(&Everything::http(&node, &entry), &node, &entry);
}

fn plain_tools_progress_and_catalog(upstream: &Everything, node: &Path, entry: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = upstream.proxy(dir.path(), node, entry);
    let init = proxy.initialize();
    assert!(init["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(), "{init}");
    assert!(init["capabilities"]["resources"].is_object() && init["capabilities"]["prompts"].is_object(), "{init}");

    let tools = proxy.call("tools/list", json!({}));
    let sum = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "get-sum").expect("get-sum mirrored").clone();
    assert_eq!(sum["execution"]["taskSupport"], "optional", "every upstream tool gets task support: {sum}");
    assert!(sum["inputSchema"]["properties"]["a"].is_object(), "the upstream's schema: {sum}");

    // A plain upstream tool, called as a task.
    let created = proxy.call("tools/call", json!({"name": "get-sum", "arguments": {"a": 2, "b": 40}, "task": {"ttl": 60000}}));
    let id = created["task"]["taskId"].as_str().expect("a task").to_owned();
    let result = proxy.call("tasks/result", json!({"taskId": id}));
    assert_eq!(text_of(&result), "The sum of 2 and 40 is 42.");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str(), "our task, not the upstream's");

    // Its progress tool: progress under our token, and the status message.
    let created = proxy.call(
        "tools/call",
        json!({"name": "trigger-long-running-operation", "arguments": {"duration": 2, "steps": 4},
               "task": {"ttl": 60000}, "_meta": {"progressToken": "p-1"}}),
    );
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let result = proxy.call("tasks/result", json!({"taskId": id}));
    assert!(text_of(&result).contains("Long running operation completed"), "{result}");
    let progress: Vec<f64> = proxy
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress" && n["params"]["progressToken"] == "p-1")
        .filter_map(|n| n["params"]["progress"].as_f64())
        .collect();
    assert!(!progress.is_empty() && progress.windows(2).all(|w| w[0] < w[1]), "increasing progress relayed: {progress:?}");
    // And kept in the task's event log, in the proxy's store (issue 44: a proxied upstream's
    // progress is logged as events).
    let logged: Vec<f64> = {
        let store = rusqlite::Connection::open_with_flags(dir.path().join("proxy.sqlite3"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let mut read = store.prepare("SELECT payload FROM task_events WHERE task_id = ?1 AND type = 'dev.mcp-tasks.progress' ORDER BY seq").unwrap();
        read.query_map([&id], |row| row.get::<_, String>(0))
            .unwrap()
            .map(|payload| serde_json::from_str::<Value>(&payload.unwrap()).unwrap()["progress"].as_f64().unwrap())
            .collect()
    };
    assert!(!logged.is_empty() && logged.windows(2).all(|w| w[0] < w[1]), "progress in the event log: {logged:?}");

    // Resources and prompts: the upstream's, read through the proxy.
    let resources = proxy.call("resources/list", json!({}));
    let first = resources["resources"][0]["uri"].as_str().expect("upstream resources listed").to_owned();
    let read = proxy.call("resources/read", json!({"uri": first}));
    assert_eq!(read["contents"][0]["uri"], first.as_str(), "{read}");
    let templates = proxy.call("resources/templates/list", json!({}));
    assert!(!templates["resourceTemplates"].as_array().unwrap().is_empty(), "{templates}");
    let prompts = proxy.call("prompts/list", json!({}));
    let names: Vec<&str> = prompts["prompts"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(names.contains(&"simple-prompt"), "{names:?}");
    let prompt = proxy.call("prompts/get", json!({"name": "simple-prompt"}));
    assert!(prompt["messages"].as_array().is_some_and(|m| !m.is_empty()), "{prompt}");
    // An upstream refusal reaches the client as the upstream said it, and the proxy serves on.
    let unknown = proxy.call_err("resources/read", json!({"uri": "demo://nothing/here"}));
    assert!(unknown["message"].as_str().is_some_and(|m| !m.is_empty()), "{unknown}");
    let wrong = proxy.call_err("tools/call", json!({"name": "get-sum", "arguments": {"a": "two"}}));
    assert_eq!(wrong["code"], -32602, "checked against the mirrored schema: {wrong}");
    assert_eq!(text_of(&proxy.call("tools/call", json!({"name": "get-sum", "arguments": {"a": 1, "b": 1}}))), "The sum of 1 and 1 is 2.");
    proxy.validate_received();
}

#[test]
fn proxy_server_everything_elicitation_is_answered_through_input_required() {
    let Some((node, entry)) = everything() else { return };
    elicitation_through_input_required(&Everything::Stdio, &node, &entry);
}

#[test]
fn proxy_server_everything_over_http_elicitation_is_answered_through_input_required() {
    let Some((node, entry)) = everything() else { return };
    elicitation_through_input_required(&Everything::http(&node, &entry), &node, &entry);
}

fn elicitation_through_input_required(upstream: &Everything, node: &Path, entry: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = upstream.proxy(dir.path(), node, entry);
    proxy.initialize_with(json!({"elicitation": {}}));
    let created = proxy.call("tools/call", json!({"name": "trigger-elicitation-request", "arguments": {}, "task": {"ttl": 60000}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // The question waits in the task: input_required.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let task = proxy.call("tasks/get", json!({"taskId": id}));
        if task["status"] == "input_required" {
            break;
        }
        assert!(task["status"] == "working" && Instant::now() < deadline, "{task}");
        std::thread::sleep(Duration::from_millis(task["pollInterval"].as_u64().unwrap_or(100)));
    }
    // tasks/result delivers the upstream's question; our answer goes back upstream.
    let waiting = proxy.send_request("tasks/result", json!({"taskId": id}));
    let asked = loop {
        let message = proxy.recv();
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    assert_eq!(asked["params"]["message"], "Please provide inputs for the following fields:");
    assert!(asked["params"]["requestedSchema"]["properties"]["name"].is_object(), "{asked}");
    assert_eq!(asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    proxy.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada Lovelace", "check": true}}}));
    let result = proxy.response(waiting)["result"].clone();
    let text = text_of(&result);
    assert!(text.contains("User provided the requested information") && text.contains("Ada Lovelace"), "{text}");
}

#[test]
fn proxy_upstream_that_crashes_mid_call_ends_the_call_with_a_clear_error_and_is_restarted_for_later_calls() {
    let Some((node, entry)) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = proxy(dir.path(), &everything_cmd(&node, &entry), &[]);
    proxy.initialize();
    let created = proxy.call(
        "tools/call",
        json!({"name": "trigger-long-running-operation", "arguments": {"duration": 60, "steps": 60},
               "task": {"ttl": 60000}, "_meta": {"progressToken": "p"}}),
    );
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // Once the upstream reports progress the call runs there; then the upstream dies.
    proxy.notification(|n| n["method"] == "notifications/progress");
    let upstream = children_of(proxy.pid());
    assert_eq!(upstream.len(), 1, "one upstream process: {upstream:?}");
    // Its process group: the supervisor that leads it and the server in it (issue 45).
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(upstream[0]), nix::sys::signal::Signal::SIGKILL).unwrap();
    let task = poll_until_terminal(&mut proxy, &id);
    assert_eq!(task["status"], "failed", "{task}");
    let result = proxy.call_err("tasks/result", json!({"taskId": id}));
    let message = result["message"].as_str().unwrap();
    assert!(message.contains("upstream server went away") && message.contains("on_restart = \"fail\""), "{message}");
    // Restarted with backoff: a later call works, against a new upstream process.
    let result = proxy.call("tools/call", json!({"name": "get-sum", "arguments": {"a": 3, "b": 4}}));
    assert_eq!(text_of(&result), "The sum of 3 and 4 is 7.");
    let restarted = children_of(proxy.pid());
    assert!(restarted.len() == 1 && restarted[0] != upstream[0], "{restarted:?} after {upstream:?}");
}

/// The child processes of `pid` (every thread's `children` list).
fn children_of(pid: u32) -> Vec<i32> {
    let mut found = Vec::new();
    for thread in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let children = std::fs::read_to_string(thread.path().join("children")).unwrap_or_default();
        found.extend(children.split_whitespace().filter_map(|pid| pid.parse::<i32>().ok()));
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// A `mcp-tasks serve` config for an upstream whose tools count their runs in `runs`: each
/// run appends a line, then sleeps `seconds` (a plain tool and a task tool).
fn counting_upstream_config(dir: &Path, runs: &Path) -> PathBuf {
    let config = dir.join("upstream.toml");
    // Each run appends its shell's pid (the leader of the command's process group).
    let script = "echo $$ >> \"$1\"; sleep \"$2\"; echo done";
    let tool = |name: &str, support: &str| {
        format!(
            "[[tools]]\nname = \"{name}\"\ntask_support = \"{support}\"\ncommand = [\"sh\", \"-c\", '{script}', \"_\", \"{}\", \"{{seconds}}\"]\n\
             [tools.input_schema]\ntype = \"object\"\nproperties = {{ seconds = {{ type = \"string\" }} }}\n",
            runs.display()
        )
    };
    let text = format!("[server]\npoll_interval = \"100ms\"\n\n{}\n{}", tool("plain_slow", "forbidden"), tool("task_slow", "optional"));
    std::fs::write(&config, text).unwrap();
    config
}

/// `mcp-tasks serve --stdio` of `config` on `store`, as an upstream command line.
/// A proxy started with `proxy_toml` as its `--config`, in front of `mcp-tasks serve --stdio`
/// on `config` (its store `upstream.sqlite3` in `dir`).
fn proxy_configured(dir: &Path, config: &Path, proxy_toml: &str) -> Server {
    let proxy_config = dir.join("proxy.toml");
    std::fs::write(&proxy_config, proxy_toml).unwrap();
    let upstream = serve_stdio(config, &dir.join("upstream.sqlite3"));
    proxy(dir, &upstream, &["--config", proxy_config.to_str().unwrap()])
}

fn serve_stdio(config: &Path, store: &Path) -> String {
    format!("{} serve --stdio --config {} --store {}", quoted(Path::new(env!("CARGO_BIN_EXE_mcp-tasks"))), quoted(config), quoted(store))
}

fn runs(path: &Path) -> usize {
    std::fs::read_to_string(path).map(|text| text.lines().count()).unwrap_or(0)
}

/// Waits (bounded) until `path` has `count` runs.
fn wait_runs(path: &Path, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while runs(path) < count {
        assert!(Instant::now() < deadline, "{count} runs expected in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn proxy_sigkilled_during_a_plain_upstream_call_fails_the_task_after_restart_and_never_calls_a_fail_tool_twice() {
    let dir = tempfile::tempdir().unwrap();
    let runs_file = dir.path().join("runs");
    let config = counting_upstream_config(dir.path(), &runs_file);
    let upstream = |store: &str| serve_stdio(&config, &dir.path().join(store));
    let mut first = proxy(dir.path(), &upstream("upstream-1.sqlite3"), &[]);
    first.initialize();
    let created = first.call("tools/call", json!({"name": "plain_slow", "arguments": {"seconds": "30"}, "task": {"ttl": 600000}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    wait_runs(&runs_file, 1);
    first.kill();

    let mut second = proxy(dir.path(), &upstream("upstream-2.sqlite3"), &[]);
    second.initialize();
    let task = second.call("tasks/get", json!({"taskId": id}));
    assert_eq!(task["status"], "failed", "acknowledged, kept, and resolved by its policy: {task}");
    assert!(task["statusMessage"].as_str().is_some_and(|m| m.contains("interrupted by a server restart")), "{task}");
    // The next call runs (so the upstream works); the interrupted one was not run again.
    let again = second.call("tools/call", json!({"name": "plain_slow", "arguments": {"seconds": "0"}}));
    assert_eq!(text_of(&again).trim(), "done");
    assert_eq!(runs(&runs_file), 2, "one run for the interrupted call, one for the new call");
}

#[test]
fn proxy_sigkilled_while_the_upstream_runs_the_call_as_a_task_resumes_polling_it_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let runs_file = dir.path().join("runs");
    let config = counting_upstream_config(dir.path(), &runs_file);
    // A durable upstream over HTTP that outlives the proxy.
    let mut upstream = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .arg("--store")
            .arg(dir.path().join("upstream.sqlite3"))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let url = announced_url(&mut upstream.0);
    let spawn = |dir: &Path| {
        let store = dir.join("proxy.sqlite3");
        Server::spawn_args(&[
            "proxy".as_ref(),
            "--stdio".as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
            "--upstream-url".as_ref(),
            std::ffi::OsStr::new(&url),
            "--upstream-era".as_ref(),
            "legacy".as_ref(),
        ])
    };
    let mut first = spawn(dir.path());
    first.initialize();
    let created = first.call("tools/call", json!({"name": "task_slow", "arguments": {"seconds": "3"}, "task": {"ttl": 600000}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // Killed once the upstream task's id is stored with ours (the status message says so).
    first.notification(|n| {
        n["params"]["taskId"] == id.as_str()
            && n["params"]["statusMessage"].as_str().is_some_and(|m| m.starts_with("running upstream as task "))
    });
    wait_runs(&runs_file, 1);
    first.kill();

    let mut second = spawn(dir.path());
    second.initialize();
    let task = poll_until_terminal(&mut second, &id);
    assert_eq!(task["status"], "completed", "resumed, not failed: {task}");
    let result = second.call("tasks/result", json!({"taskId": id}));
    assert_eq!(text_of(&result).trim(), "done");
    assert_eq!(runs(&runs_file), 1, "the upstream ran the call once");
}

/// A child process killed (and reaped) when the test ends, passed or not.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads a server's stderr until it names its `http://…/mcp` URL (bounded by the reader's
/// end: a server that dies closes it).
fn announced_url(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.find("http://") {
                let _ = tx.send(line[at..].split_whitespace().next().unwrap_or_default().to_owned());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(20)).expect("the upstream announced its URL")
}

#[test]
fn proxy_bad_upstream_arguments_are_refused_with_what_was_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.sqlite3");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_mcp-tasks")).arg("proxy").args(args).arg("--store").arg(&store).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(&["--stdio", "--upstream-cmd", ""]);
    assert_eq!((code, err.contains("--upstream-cmd is empty")), (Some(1), true), "{err}");
    let (code, err) = run(&["--stdio", "--upstream-cmd", "node 'unclosed"]);
    assert_eq!((code, err.contains("unclosed quote")), (Some(1), true), "{err}");
    let (code, err) = run(&["--stdio", "--upstream-cmd", "/nonexistent/mcp-server --flag"]);
    assert!(code == Some(1) && err.contains("cannot connect to the upstream server") && err.contains("/nonexistent/mcp-server"), "{err}");
    let (code, err) = run(&["--stdio"]);
    assert!(code == Some(2) && err.contains("--upstream-cmd"), "clap names the missing upstream: {err}");
    let (code, err) = run(&["--stdio", "--upstream-cmd", "x", "--upstream-header", "no-colon"]);
    assert!(code == Some(2) && err.contains("is not NAME:VALUE"), "{err}");
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[[tools]]\nname = \"a\"\ncommand = [\"true\"]\n").unwrap();
    let (code, err) = run(&["--stdio", "--upstream-cmd", "x", "--config", config.to_str().unwrap()]);
    assert!(code == Some(1) && err.contains("[upstream.tools.NAME]"), "{err}");
}

/// The pids of the runs recorded in `path`.
fn run_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|line| line.trim().parse().ok()).collect()
}

/// Waits (bounded) until process `pid` is gone (reaped by its parent, the upstream server).
fn wait_gone(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ")
    {
        assert!(Instant::now() < deadline, "{what}: the upstream's process {pid} still runs after the cancel");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn proxy_downstream_cancel_reaches_the_upstream_as_notifications_cancelled_or_tasks_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let runs_file = dir.path().join("runs");
    let config = counting_upstream_config(dir.path(), &runs_file);
    let upstream = |store: &str| serve_stdio(&config, &dir.path().join(store));
    for (era, tool) in [("legacy", "plain_slow"), ("legacy", "task_slow"), ("modern", "plain_slow"), ("modern", "task_slow")] {
        let before = run_pids(&runs_file).len();
        let mut proxy = proxy(dir.path(), &upstream(&format!("upstream-{era}-{tool}.sqlite3")), &["--upstream-era", era]);
        proxy.initialize();
        let created = proxy.call("tools/call", json!({"name": tool, "arguments": {"seconds": "60"}, "task": {"ttl": 600000}}));
        let id = created["task"]["taskId"].as_str().unwrap().to_owned();
        wait_runs(&runs_file, before + 1);
        let pid = run_pids(&runs_file)[before];
        let cancelled = proxy.call("tasks/cancel", json!({"taskId": id}));
        assert_eq!(cancelled["status"], "cancelled", "{era} {tool}: {cancelled}");
        // The upstream stopped the work: its command's process group ended.
        wait_gone(pid, &format!("{era} {tool}"));
    }
}

#[test]
fn proxy_retry_tool_is_called_again_when_the_upstream_dies_mid_call() {
    let dir = tempfile::tempdir().unwrap();
    let runs_file = dir.path().join("runs");
    let config = counting_upstream_config(dir.path(), &runs_file);
    let mut proxy = proxy_configured(dir.path(), &config, "[upstream.tools.plain_slow]\non_restart = \"retry\"\nmax_attempts = 2\n");
    proxy.initialize();
    let created = proxy.call("tools/call", json!({"name": "plain_slow", "arguments": {"seconds": "2"}, "task": {"ttl": 600000}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    wait_runs(&runs_file, 1);
    let upstream_server = children_of(proxy.pid());
    assert_eq!(upstream_server.len(), 1, "{upstream_server:?}");
    // Its process group: the supervisor that leads it and the server in it (issue 45).
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(upstream_server[0]), nix::sys::signal::Signal::SIGKILL).unwrap();
    let task = poll_until_terminal(&mut proxy, &id);
    assert_eq!(task["status"], "completed", "retried on the restarted upstream: {task}");
    assert_eq!(text_of(&proxy.call("tasks/result", json!({"taskId": id}))).trim(), "done");
    assert_eq!(runs(&runs_file), 2, "the interrupted run and the retry");
}

#[test]
fn proxy_http_upstream_that_restarts_is_reconnected_and_a_call_on_the_lost_session_is_sent_again() {
    let Some((node, entry)) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let upstream = Everything::http_on(&node, &entry, port);
    let mut proxy = upstream.proxy(dir.path(), &node, &entry);
    proxy.initialize();
    let sum = |proxy: &mut Server, a: i64| text_of(&proxy.call("tools/call", json!({"name": "get-sum", "arguments": {"a": a, "b": 1}})));
    assert_eq!(sum(&mut proxy, 1), "The sum of 1 and 1 is 2.");
    // The upstream restarts on the same address: it no longer knows the proxy's session.
    drop(upstream);
    let _restarted = Everything::http_on(&node, &entry, port);
    // The call meets the lost session (404), and is sent again on a new one: it never ran.
    assert_eq!(sum(&mut proxy, 2), "The sum of 2 and 1 is 3.");
    assert_eq!(sum(&mut proxy, 3), "The sum of 3 and 1 is 4.");
}

#[test]
fn proxy_server_everything_sampling_is_answered_through_input_required() {
    let Some((node, entry)) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = proxy(dir.path(), &everything_cmd(&node, &entry), &[]);
    proxy.initialize_with(json!({"sampling": {}}));
    let created = proxy.call(
        "tools/call",
        json!({"name": "trigger-sampling-request", "arguments": {"prompt": "a haiku on tasks", "maxTokens": 50}, "task": {"ttl": 60000}}),
    );
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let waiting = proxy.send_request("tasks/result", json!({"taskId": id}));
    let asked = loop {
        let message = proxy.recv();
        if message["method"] == "sampling/createMessage" {
            break message;
        }
    };
    let prompt = asked["params"]["messages"][0]["content"]["text"].as_str().unwrap_or_default();
    assert!(prompt.contains("a haiku on tasks"), "the upstream's request, asked downstream: {asked}");
    proxy.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "tasks wait in rows"}, "model": "test-model"}}));
    let result = proxy.response(waiting)["result"].clone();
    let text = text_of(&result);
    assert!(text.contains("tasks wait in rows") && text.contains("test-model"), "our answer went back upstream: {text}");
}

#[test]
fn proxy_tool_timeout_cancels_the_upstream_call_and_fails_it_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let runs_file = dir.path().join("runs");
    let config = counting_upstream_config(dir.path(), &runs_file);
    let mut proxy = proxy_configured(dir.path(), &config, "[upstream.tools.plain_slow]\ntimeout = \"1s\"\n");
    proxy.initialize();
    let created = proxy.call("tools/call", json!({"name": "plain_slow", "arguments": {"seconds": "60"}, "task": {"ttl": 600000}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    wait_runs(&runs_file, 1);
    let task = poll_until_terminal(&mut proxy, &id);
    assert_eq!(task["status"], "failed", "{task}");
    let error = proxy.call_err("tasks/result", json!({"taskId": id}));
    assert!(error["message"].as_str().is_some_and(|m| m.contains("did not finish within its timeout of 1 s")), "{error}");
    wait_gone(run_pids(&runs_file)[0], "after the timeout");
}

/// Whether process `pid` runs (exists and is no zombie), and its command name.
fn running_as(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
    (!rest.starts_with('Z')).then(|| name.to_owned())
}

#[test]
fn proxy_sigkilled_leaves_its_stdio_upstream_running_and_the_next_proxy_on_the_store_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let runs_file = dir.path().join("runs");
    let config = counting_upstream_config(dir.path(), &runs_file);
    // An upstream that outlives its proxy: once the server in it ends (its stdin closed), the
    // shell that started it stays (as `sleep`), deaf to SIGTERM, so the next proxy has to
    // escalate to SIGKILL.
    let upstream = format!(
        "sh -c 'trap \"\" TERM; \"$0\" \"$@\"; exec sleep 600' {}",
        serve_stdio(&config, &dir.path().join("upstream.sqlite3"))
    );
    // Without the supervisor, which would end the upstream with its proxy (issue 45): what
    // escapes it (a supervisor killed with its proxy) is what the next proxy ends.
    let store = dir.path().join("proxy.sqlite3");
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command.args(["proxy", "--stdio", "--store"]).arg(store).args(["--upstream-cmd", &upstream]);
    command.env("MCP_TASKS_SUPERVISE", "0");
    let mut first = Server::spawn(command);
    first.initialize();
    let old = children_of(first.pid());
    assert_eq!(old.len(), 1, "one upstream process: {old:?}");
    let old = old[0];
    first.kill();
    // The proxy is gone, its upstream not: the server in it saw its stdin end, the rest stays.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match running_as(old) {
            Some(name) if name == "sleep" => break,
            Some(_) => {}
            None => panic!("the upstream {old} ended with its proxy: this test needs one that stays"),
        }
        assert!(Instant::now() < deadline, "the upstream's server did not end after its proxy was killed");
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut second = proxy(dir.path(), &upstream, &[]);
    second.initialize();
    // Ended before the new proxy spawned its own: SIGTERM, ignored, then SIGKILL after the
    // grace (2 s); within the bound, far below the 600 s it would otherwise run.
    let deadline = Instant::now() + Duration::from_secs(10);
    while running_as(old).is_some() {
        assert!(Instant::now() < deadline, "the upstream {old} a killed proxy left still runs after the next proxy started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let new = children_of(second.pid());
    assert!(new.len() == 1 && new[0] != old, "the new proxy runs its own upstream: {new:?}");
    let result = second.call("tools/call", json!({"name": "plain_slow", "arguments": {"seconds": "0"}}));
    assert_eq!(text_of(&result).trim(), "done");
    // A proxy that shuts down closes its upstream and forgets it: nothing to end next time.
    second.close_stdin();
    assert!(second.wait_exit(Duration::from_secs(20)).is_some_and(|status| status.success()), "the proxy exits");
    let deadline = Instant::now() + Duration::from_secs(20);
    while running_as(new[0]).is_some() {
        assert!(Instant::now() < deadline, "the closed upstream {} still runs", new[0]);
        std::thread::sleep(Duration::from_millis(20));
    }
}
