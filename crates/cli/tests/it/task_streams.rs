//! Task event streams (issue 44; draft SEP-2694, `tasks/stream` with the 2026-07-28 tasks
//! extension) against the real binary over Streamable HTTP: a command that prints six lines
//! with progress, streamed from its start, resumed after a cursor, after a kill -9 and a
//! restart, from another process on the same file; the cursor's rejections; another
//! principal's task. Named after the digest's rules (`stream_NN`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{CONFIG, Workdir};
use crate::http::{ALICE, BOB, HttpServer, TOKENS};
use crate::http_peer;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A tool that prints six lines, each followed by a progress report, a tenth of a second
/// apart.
const SIX_LINES: &str = r#"
[[tools]]
name = "six_lines"
description = "Prints six lines with progress."
task_support = "required"
command = ["sh", "-c", "for i in 1 2 3 4 5 6; do echo \"line $i\"; echo \"@mcp-tasks {{\\\"progress\\\": $i, \\\"total\\\": 6}}\"; sleep 0.1; done"]
"#;

fn request(method: &str, params: Value) -> String {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "task-streams-test", "version": "0"},
    });
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
}

/// Both answers, JSON or SSE.
const ANY: &str = "application/json, text/event-stream";

/// POSTs `body`, a `method` request, with the headers a 2026-07-28 client mirrors (`Mcp-Name`
/// `name`), the bearer `token` if any, accepting `accept`.
fn post(addr: SocketAddr, method: &str, name: &str, token: Option<&str>, accept: &str, body: &str) -> http_peer::Reply {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", accept),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    if let Some(bearer) = &bearer {
        headers.push(("Authorization", bearer));
    }
    http_peer::request(addr, "POST", &headers, Some(body))
}

/// Creates a task of `tool` through `addr`; its id.
fn create(addr: SocketAddr, tool: &str, token: Option<&str>) -> String {
    let body = request("tools/call", json!({"name": tool, "arguments": {}}));
    let reply = post(addr, "tools/call", tool, token, ANY, &body);
    let message = last_message(&reply.body);
    message["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {message}")).to_owned()
}

/// The last JSON-RPC message of a body (JSON, or the last `data:` of SSE).
fn last_message(body: &str) -> Value {
    let data = body.lines().rev().find_map(|line| line.strip_prefix("data: ")).unwrap_or(body);
    serde_json::from_str(data).expect("JSON")
}

/// A `tasks/stream` of task `id` after `after` (raw JSON, or none): its events and its answer.
fn stream(addr: SocketAddr, id: &str, after: Option<Value>, token: Option<&str>) -> (Vec<Value>, Value) {
    let mut params = json!({"taskId": id});
    if let Some(after) = after {
        params["after"] = after;
    }
    let body = request("tasks/stream", params);
    let reply = post(addr, "tasks/stream", id, token, ANY, &body);
    let messages: Vec<Value> = if reply.header("content-type").is_some_and(|kind| kind.starts_with("text/event-stream")) {
        reply.body.lines().filter_map(|line| line.strip_prefix("data: ")).map(|data| serde_json::from_str(data).expect("JSON")).collect()
    } else {
        vec![reply.json()]
    };
    let (events, answers): (Vec<Value>, Vec<Value>) = messages.into_iter().partition(|message| message.get("id").is_none());
    (events, answers.into_iter().next().expect("the answer"))
}

/// The output lines of `events`, in order.
fn lines(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|event| event["params"]["type"] == "dev.mcp-tasks.output")
        .flat_map(|event| event["params"]["payload"]["lines"].as_array().cloned().unwrap_or_default())
        .map(|line| line.as_str().unwrap_or_default().to_owned())
        .collect()
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|event| event["params"]["seq"].as_u64().expect("a seq")).collect()
}

fn six() -> Vec<String> {
    (1..=6).map(|i| format!("line {i}")).collect()
}

fn serve(extra: &str) -> (Workdir, HttpServer) {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}\n{SIX_LINES}\n{extra}")).unwrap();
    let server = HttpServer::start(&work);
    (work, server)
}

#[test]
fn stream_04_to_10_a_command_task_streamed_from_its_start_gives_every_event_in_order_its_six_lines_and_ends_with_the_result() {
    let (_work, server) = serve("");
    let id = create(server.addr, "six_lines", None);
    let (events, answer) = stream(server.addr, &id, None, None);
    assert_eq!(answer["result"]["resultType"], "complete", "the empty result ends it: {answer}");
    assert_eq!(seqs(&events), (0..events.len() as u64).collect::<Vec<_>>(), "0, 1, 2, … without gaps (stream_04, 05)");
    for event in &events {
        assert_eq!(event["method"], "notifications/tasks/event", "{event}");
        let params = &event["params"];
        assert_eq!(params["taskId"], id.as_str());
        assert!(params["type"].as_str().is_some_and(|kind| kind.starts_with("dev.mcp-tasks.")), "prefixed (stream_07, 08): {event}");
        assert!(params["payload"].is_object(), "an object payload (stream_06): {event}");
        assert_eq!(params["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str(), "stream_09: {event}");
    }
    assert_eq!(lines(&events), six(), "the six lines, in order");
    let progress: Vec<f64> = events
        .iter()
        .filter(|event| event["params"]["type"] == "dev.mcp-tasks.progress")
        .map(|event| event["params"]["payload"]["progress"].as_f64().expect("a number"))
        .collect();
    assert!(!progress.is_empty() && progress.windows(2).all(|pair| pair[0] < pair[1]), "{progress:?}");
    assert_eq!(events[0]["params"]["payload"]["status"], "working", "event 0 is the creation");
    assert_eq!(events.last().expect("events")["params"]["payload"]["status"], "completed", "the last is the ending");
}

#[test]
fn stream_17_18_resumed_after_2_gives_exactly_the_events_after_it_and_a_bad_cursor_is_32602() {
    let (_work, server) = serve("");
    let id = create(server.addr, "six_lines", None);
    let (all, _) = stream(server.addr, &id, None, None);
    let (rest, answer) = stream(server.addr, &id, Some(json!(2)), None);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(rest, all[3..].to_vec(), "exactly events 3…n");
    for bad in [json!(-5), json!(1.5), json!("2")] {
        let (events, answer) = stream(server.addr, &id, Some(bad.clone()), None);
        assert!(events.is_empty());
        assert_eq!(answer["error"]["code"], -32602, "after = {bad}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap_or_default().contains("non-negative integer"), "{answer}");
    }
    let last = all.len() as u64 - 1;
    let (none, answer) = stream(server.addr, &id, Some(json!(last)), None);
    assert!(none.is_empty() && answer["result"]["resultType"] == "complete", "after the last of a finished task: ends at once (stream_19): {answer}");
    let (_, ahead) = stream(server.addr, &id, Some(json!(last + 5)), None);
    assert_eq!(ahead["error"]["code"], -32602, "past the last event: {ahead}");
}

#[test]
fn stream_18_b_21_30_a_cursor_behind_what_is_kept_is_events_gone_with_the_earliest_seq() {
    // Three events kept per task: the early ones are pruned while the command runs.
    let work = Workdir::new();
    let config = CONFIG.replacen("[server]", "[server]\ntask_events = 3", 1);
    std::fs::write(work.config(), format!("{config}\n{SIX_LINES}")).unwrap();
    let server = HttpServer::start(&work);
    let id = create(server.addr, "six_lines", None);
    // Followed live to its end (each event sent as it came), then read again: pruned.
    let (live, _) = stream(server.addr, &id, None, None);
    assert_eq!(lines(&live), six());
    let (all, _) = stream(server.addr, &id, None, None);
    let first = seqs(&all)[0];
    assert!(first > 1, "the oldest were pruned: {:?}", seqs(&all));
    let (events, answer) = stream(server.addr, &id, Some(json!(0)), None);
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(answer["error"]["code"], -32010, "{answer}");
    let data = &answer["error"]["data"];
    assert_eq!((data["reason"].as_str(), data["taskId"].as_str(), data["earliestSeq"].as_u64()), (Some("events_gone"), Some(id.as_str()), Some(first)), "{answer}");
    let (resumed, _) = stream(server.addr, &id, Some(json!(first - 1)), None);
    assert_eq!(resumed, all, "resumed from earliestSeq - 1: everything kept");
}

#[test]
fn stream_36_38_another_principals_task_streams_exactly_as_an_unknown_one() {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}\n{SIX_LINES}\n{TOKENS}")).unwrap();
    let server = HttpServer::start(&work);
    let id = create(server.addr, "six_lines", Some(ALICE));
    let (mine, answer) = stream(server.addr, &id, None, Some(ALICE));
    assert_eq!(lines(&mine), six(), "{answer}");
    let (events, theirs) = stream(server.addr, &id, None, Some(BOB));
    let (_, unknown) = stream(server.addr, "0123456789abcdef0123456789abcdef", None, Some(BOB));
    assert!(events.is_empty());
    assert_eq!(theirs["error"]["code"], unknown["error"]["code"], "{theirs} / {unknown}");
    assert_eq!(
        theirs["error"]["message"].as_str().map(|m| m.replace(id.as_str(), "ID")),
        unknown["error"]["message"].as_str().map(|m| m.replace("0123456789abcdef0123456789abcdef", "ID")),
    );
}

#[test]
fn stream_the_same_events_after_a_kill_9_and_a_restart() {
    let (work, mut server) = serve("");
    let id = create(server.addr, "six_lines", None);
    let (before, _) = stream(server.addr, &id, None, None);
    server.kill();
    let again = HttpServer::start(&work);
    let (after, answer) = stream(again.addr, &id, None, None);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    let strip = |events: &[Value]| events.iter().map(|event| event["params"].clone()).collect::<Vec<_>>();
    assert_eq!(strip(&after), strip(&before), "the log is in the store");
}

#[test]
fn stream_a_stream_opened_on_one_process_follows_a_task_running_on_another() {
    let work = Workdir::new();
    let slow = SIX_LINES.replace("six_lines", "six_slow_lines").replace("sleep 0.1", "sleep 0.4");
    std::fs::write(work.config(), format!("{CONFIG}\n{slow}")).unwrap();
    let a = HttpServer::start(&work);
    let b = HttpServer::start(&work);
    let id = create(a.addr, "six_slow_lines", None);
    let started = Instant::now();
    let (events, answer) = stream(b.addr, &id, None, None);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(lines(&events), six(), "B streamed what A's command printed");
    assert_eq!(seqs(&events), (0..events.len() as u64).collect::<Vec<_>>());
    assert!(started.elapsed() > Duration::from_millis(1_000), "it followed the task live, not after the fact");
}

/// Without the tasks extension `tasks/stream` is `-32021` naming it; without SSE it is 406,
/// saying to accept `text/event-stream`; and the server goes on.
#[test]
fn stream_needs_the_tasks_extension_and_an_sse_answer() {
    let (_work, server) = serve("");
    let id = create(server.addr, "six_lines", None);
    let mut params = json!({"taskId": id});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "no-tasks", "version": "0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/stream", "params": params}).to_string();
    let refused = post(server.addr, "tasks/stream", &id, None, ANY, &body).json();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(refused["error"]["data"]["requiredCapabilities"].to_string().contains(TASKS), "{refused}");
    let body = request("tasks/stream", json!({"taskId": id}));
    let reply = post(server.addr, "tasks/stream", &id, None, "application/json", &body);
    assert_eq!(reply.status, 406, "{}", reply.body);
    assert!(reply.body.contains("tasks/stream answers with an SSE stream"), "{}", reply.body);
    let (events, answer) = stream(server.addr, &id, None, None);
    assert_eq!((lines(&events), &answer["result"]["resultType"]), (six(), &json!("complete")), "served on");
}

/// `mcp-tasks tasks watch ID` for `id` at `server`, its stdout lines sent as they come.
fn watch(work: &Workdir, server: &HttpServer, id: &str, extra: &[&str]) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["tasks", "watch", id, "--url", &format!("http://{}/mcp", server.addr)])
        .args(extra)
        .env("MCP_TASKS_LEDGER", work.path("ledger.sqlite3"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run mcp-tasks tasks watch");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

#[test]
fn stream_mcp_tasks_tasks_watch_prints_the_six_lines_as_printed_and_exits_0() {
    let (work, server) = serve("");
    let id = create(server.addr, "six_lines", None);
    let (mut child, lines) = watch(&work, &server, &id, &[]);
    let status = child.wait().expect("the watch ends");
    let printed: Vec<String> = lines.try_iter().collect();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).unwrap();
    assert_eq!(printed, six(), "{stderr}");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("mcp-tasks: progress 6/6") && stderr.contains("mcp-tasks: task completed"), "{stderr}");
    // --json: one event per line, numbered from 0.
    let (mut child, lines) = watch(&work, &server, &id, &["--json"]);
    assert_eq!(child.wait().expect("the watch ends").code(), Some(0));
    let events: Vec<Value> = lines.try_iter().map(|line| serde_json::from_str(&line).expect("a JSON line")).collect();
    assert_eq!(events.iter().map(|e| e["seq"].as_u64().unwrap()).collect::<Vec<_>>(), (0..events.len() as u64).collect::<Vec<_>>());
}

#[test]
fn stream_mcp_tasks_tasks_watch_rides_out_a_server_restart_resuming_after_its_last_event() {
    let work = Workdir::new();
    let slow = SIX_LINES.replace("sleep 0.1", "sleep 0.5");
    std::fs::write(work.config(), format!("{CONFIG}\n{slow}")).unwrap();
    let mut server = HttpServer::start(&work);
    let id = create(server.addr, "six_lines", None);
    let (mut child, lines) = watch(&work, &server, &id, &[]);
    let mut printed = vec![lines.recv_timeout(Duration::from_secs(20)).expect("a first line")];
    printed.push(lines.recv_timeout(Duration::from_secs(20)).expect("a second line"));
    // Killed mid-task and started again on the same port: the task is interrupted (its tool
    // fails on a restart), and the watch resumes where it was.
    let addr = server.addr;
    server.kill();
    let _again = HttpServer::start_with_args(&work, work.store().as_os_str(), &[], &[std::ffi::OsStr::new("--listen"), std::ffi::OsStr::new(&addr.to_string())]);
    let status = child.wait().expect("the watch ends");
    printed.extend(lines.try_iter());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).unwrap();
    assert!(stderr.contains("lost the server"), "{stderr}");
    assert!(stderr.contains("mcp-tasks: task failed"), "the ending the restarted server wrote: {stderr}");
    assert_eq!(status.code(), Some(1), "a failed task: {stderr}");
    let expected: Vec<String> = six().into_iter().take(printed.len()).collect();
    assert_eq!(printed, expected, "each line once, in order, none after the kill repeated: {stderr}");
}

/// `mcp-tasks call --follow` (issue 44, point 3): while it waits, the lines the task's
/// command prints are shown on stderr as they come, each once, in order; the result (the
/// same lines, the command's stdout) is on stdout as without --follow.
#[test]
fn stream_mcp_tasks_call_follow_shows_the_commands_lines_while_it_waits() {
    let (work, server) = serve("");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["call", "six_lines", "--follow", "--url", &format!("http://{}/mcp", server.addr)])
        .env("MCP_TASKS_LEDGER", work.path("ledger.sqlite3"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcp-tasks call --follow");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let followed: Vec<String> = stderr.lines().filter(|line| line.starts_with("line ")).map(str::to_owned).collect();
    assert_eq!(followed, six(), "each line once, in order: {stderr}");
    let result: Vec<String> = String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect();
    assert_eq!(result, six(), "the result on stdout");
}

/// A tool whose command does a bit of everything the log records.
const STORY: &str = r#"
[[tools]]
name = "story"
description = "Sets its status, writes to stderr, logs, gives a partial result, asks, then ends."
task_support = "required"
command = ["sh", "-c", """
echo '@mcp-tasks {{"status": "compiling"}}'
echo 'to stderr' >&2
echo '@mcp-tasks {{"log": {{"level": "warning", "message": "careful"}}}}'
echo '@mcp-tasks {{"partial": {{"content": [{{"type": "text", "text": "half"}}]}}}}'
echo '@mcp-tasks {{"elicit": {{"message": "Go on?", "requestedSchema": {{"type": "object", "properties": {{"ok": {{"type": "boolean"}}}}}}}}}}'
read -r answer
echo done
"""]
"#;

/// Issue 44, point 1: besides output and progress, the log records a running task's status
/// changes (its message, the wait for input and the return to work), its stderr lines, its
/// log lines and partial results (the line protocol's `log` and `partial`), and each question
/// and its answer; each event once, in the order the work made them.
#[test]
fn stream_the_log_records_status_changes_stderr_log_lines_partial_results_and_questions_with_their_answers() {
    let (work, server) = serve(STORY);
    let called = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["call", "story", "--json", "--answer", r#"{"ok": true}"#, "--url", &format!("http://{}/mcp", server.addr)])
        .env("MCP_TASKS_LEDGER", work.path("ledger.sqlite3"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcp-tasks call");
    assert_eq!(called.status.code(), Some(0), "{}", String::from_utf8_lossy(&called.stderr));
    let result: Value = serde_json::from_slice(&called.stdout).expect("JSON");
    let id = result["taskId"].as_str().expect("the task id").to_owned();
    let (events, answer) = stream(server.addr, &id, None, None);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(seqs(&events), (0..events.len() as u64).collect::<Vec<_>>());
    let typed: Vec<(String, Value)> =
        events.iter().map(|event| (event["params"]["type"].as_str().unwrap_or_default().to_owned(), event["params"]["payload"].clone())).collect();
    let position = |what: &str, test: &dyn Fn(&str, &Value) -> bool| {
        typed.iter().position(|(kind, payload)| test(kind, payload)).unwrap_or_else(|| panic!("no {what} in {typed:#?}"))
    };
    let compiling = position("status compiling", &|kind, payload| kind == "dev.mcp-tasks.status" && payload["statusMessage"] == "compiling");
    let stderr = position("stderr line", &|kind, payload| {
        kind == "dev.mcp-tasks.output" && payload["stream"] == "stderr" && payload["lines"] == json!(["to stderr"])
    });
    let log = position("log line", &|kind, payload| kind == "dev.mcp-tasks.log" && *payload == json!({"level": "warning", "message": "careful"}));
    let partial = position("partial result", &|kind, payload| kind == "dev.mcp-tasks.partial" && payload["content"][0]["text"] == "half");
    let asked = position("question", &|kind, payload| kind == "dev.mcp-tasks.input" && payload["kind"] == "elicitation" && payload["params"]["message"] == "Go on?");
    let waiting = position("input_required", &|kind, payload| kind == "dev.mcp-tasks.status" && payload["status"] == "input_required");
    let answered = position("answer", &|kind, payload| kind == "dev.mcp-tasks.input" && payload["answered"] == true && payload["action"] == "accept");
    let working = position("back to work", &|kind, payload| {
        kind == "dev.mcp-tasks.status" && payload["status"] == "working" && payload["statusMessage"] == "Input received; working"
    });
    let done = position("its last line", &|kind, payload| kind == "dev.mcp-tasks.output" && payload["lines"] == json!(["done"]));
    assert!(compiling < log && log < partial && partial < asked && asked < answered && answered < done, "{typed:#?}");
    assert!(asked <= waiting && answered <= working && stderr < done, "{typed:#?}");
    assert_eq!(events.last().expect("events")["params"]["payload"]["status"], "completed");
    // The stdout lines are the result; the log's lines stay out of it.
    assert_eq!(result["content"][0]["text"], "done\n", "{result}");
}

/// `tasks/stream` in a 2025-11-25 session too (issue 44, point 2; nothing in that era forbids
/// it): over HTTP, on the request's SSE stream, the same events as in 2026-07-28, each with
/// the related-task `_meta`, then the empty result.
#[test]
fn stream_in_a_2025_11_25_session_over_http_gives_the_same_events() {
    let (_work, server) = serve("");
    let mut client = crate::http::Client::new(&server, None);
    client.initialize();
    let created = client.result("tools/call", json!({"name": "six_lines", "arguments": {}, "task": {}}));
    let id = created["task"]["taskId"].as_str().expect("a task").to_owned();
    let body = client.message("tasks/stream", json!({"taskId": id}));
    let reply = client.post_with(&body, &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.header("content-type").is_some_and(|kind| kind.starts_with("text/event-stream")), "an SSE answer");
    let messages: Vec<Value> =
        reply.body.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim).filter(|data| !data.is_empty()).map(|data| serde_json::from_str(data).expect("JSON")).collect();
    let (events, answers): (Vec<Value>, Vec<Value>) = messages.into_iter().partition(|message| message.get("id").is_none());
    assert_eq!(answers.last().map(|answer| answer["result"].clone()), Some(json!({})), "{answers:?}");
    assert_eq!(lines(&events), six());
    assert_eq!(seqs(&events), (0..events.len() as u64).collect::<Vec<_>>());
    for event in &events {
        assert_eq!(event["method"], "notifications/tasks/event", "{event}");
        assert_eq!(event["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str(), "{event}");
    }
    assert_eq!(events.last().expect("events")["params"]["payload"]["status"], "completed");
}

/// stream_12 and stream_14 over stdio (a 2025-11-25 session): one stream per task per
/// connection (a second is `-32602`); cancelling the request ends the stream, not the task,
/// and frees its place for a new one.
#[test]
fn stream_12_14_over_stdio_one_stream_per_task_and_a_cancel_ends_the_stream_not_the_task() {
    let work = Workdir::new();
    std::fs::write(work.config(), CONFIG).unwrap();
    let mut server = work.start();
    server.initialize();
    let created = server.call("tools/call", json!({"name": "slow", "arguments": {"seconds": 30}, "task": {}}));
    let id = created["task"]["taskId"].as_str().expect("a task").to_owned();
    let event_zero = |id: String| move |message: &Value| message["method"] == "notifications/tasks/event" && message["params"]["taskId"] == id.as_str() && message["params"]["seq"] == 0;
    let first = server.send_request("tasks/stream", json!({"taskId": id}));
    server.notification(event_zero(id.clone()));
    // stream_12: a second stream of the task on this connection is refused, saying why.
    let second = server.call_err("tasks/stream", json!({"taskId": id}));
    assert_eq!(second["code"], -32602, "{second}");
    assert!(second["message"].as_str().unwrap_or_default().contains("already open"), "{second}");
    // stream_14: cancelled, the stream ends; the task runs on; a new stream may be opened.
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": first, "reason": "enough"}}));
    let seen = server.notifications.len();
    let third = server.send_request("tasks/stream", json!({"taskId": id}));
    loop {
        let message = server.recv();
        assert!(message.get("id") != Some(&json!(third)), "the new stream was refused: {message}");
        assert!(message.get("id") != Some(&json!(first)), "a cancelled request is not answered: {message}");
        if event_zero(id.clone())(&message) {
            break;
        }
    }
    assert!(server.notifications.len() >= seen);
    let task = server.call("tasks/get", json!({"taskId": id}));
    assert_eq!(task["status"], "working", "cancelling the stream did not cancel the task: {task}");
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": third}}));
    server.call("tasks/cancel", json!({"taskId": id}));
}

/// stream_15: task events are sent only on an active `tasks/stream`: a session that runs a
/// task to its end without one (here over stdio, its result waited for) gets none of them.
#[test]
fn stream_15_no_task_event_reaches_a_client_that_opened_no_stream() {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}\n{SIX_LINES}")).unwrap();
    let mut server = work.start();
    server.initialize();
    let created = server.call("tools/call", json!({"name": "six_lines", "arguments": {}, "task": {}, "_meta": {"progressToken": "p"}}));
    let id = created["task"]["taskId"].as_str().expect("a task").to_owned();
    let result = server.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n", "{result}");
    assert!(server.notifications.iter().any(|n| n["method"] == "notifications/progress"), "the session heard the task's progress");
    assert!(!server.notifications.iter().any(|n| n["method"] == "notifications/tasks/event"), "{:?}", server.notifications);
}

/// stream_20: without `after`, a stream starts at the oldest event kept (here, with three kept
/// per task, past the pruned ones), numbered on without gaps, and ends with the result.
#[test]
fn stream_20_without_after_a_stream_starts_at_the_oldest_event_kept() {
    let work = Workdir::new();
    let config = CONFIG.replacen("[server]", "[server]\ntask_events = 3", 1);
    std::fs::write(work.config(), format!("{config}\n{SIX_LINES}")).unwrap();
    let server = HttpServer::start(&work);
    let id = create(server.addr, "six_lines", None);
    let (_, _) = stream(server.addr, &id, None, None);
    let (events, answer) = stream(server.addr, &id, None, None);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    let seqs = seqs(&events);
    assert!(seqs[0] > 0, "the oldest kept, not the pruned ones: {seqs:?}");
    assert_eq!(seqs, (seqs[0]..seqs[0] + seqs.len() as u64).collect::<Vec<_>>(), "then without gaps");
    assert_eq!(events.last().expect("events")["params"]["payload"]["status"], "completed");
}
