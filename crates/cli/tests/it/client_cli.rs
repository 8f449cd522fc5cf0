//! The client commands (`tools`, `call`, `tasks`) of the real binary against a real
//! `mcp-tasks serve` over Streamable HTTP: output, exit codes, detach, cancel, Ctrl-C and
//! answers to the server's questions. Every wait is bounded; no sleeps.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::harness::{CONFIG, Workdir};
use crate::http::{ALICE, HttpServer, TOKENS};

mod eras;

/// How long one client command may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// A server with bearer tokens (so that `tasks list` spans connections: tasks belong to the
/// principal `alice`, not to one session).
fn server() -> (Workdir, HttpServer) {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}\n{TOKENS}")).unwrap();
    let server = HttpServer::start(&work);
    (work, server)
}

fn url(server: &HttpServer) -> String {
    format!("http://{}/mcp", server.addr)
}

/// `mcp-tasks ARGS --url URL --token ALICE`, stdin closed, killed after [`DEADLINE`].
fn cli(server: &HttpServer, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command
        .args(args)
        .args(["--url", &url(server), "--token", ALICE]);
    run(command)
}

/// The ledger of commands that give no `--ledger`: under the target dir, never the user's.
const SHARED_LEDGER: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/client_cli-ledger.sqlite3");

fn run(mut command: Command) -> Output {
    let child = command
        .env_remove("MCP_TASKS_URL")
        .env_remove("MCP_TASKS_TOKEN")
        .env("MCP_TASKS_LEDGER", SHARED_LEDGER)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp-tasks");
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(output) => {
            let output = output.expect("wait for mcp-tasks");
            eprintln!("[cli stderr] {}", String::from_utf8_lossy(&output.stderr));
            output
        }
        Err(_) => {
            let _ = kill(pid, Signal::SIGKILL);
            panic!("mcp-tasks {command:?} did not end within {DEADLINE:?}");
        }
    }
}

/// `mcp-tasks ARGS --era legacy` against the server: a test of what 2025-11-25 alone has
/// (the client decides which calls become tasks, `tasks list`, `execution.taskSupport`).
fn legacy(server: &HttpServer, args: &[&str]) -> Output {
    let mut with_era = args.to_vec();
    with_era.extend(["--era", "legacy"]);
    cli(server, &with_era)
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(output)))
}

#[test]
fn tools_json_lists_the_tools_with_their_task_support() {
    let (_work, server) = server();
    let output = legacy(&server, &["tools", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(json(&output)["era"], "2025-11-25");
    let tools = json(&output)["tools"].as_array().unwrap().clone();
    let support = |name: &str| {
        let tool = tools
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        tool["execution"]["taskSupport"]
            .as_str()
            .unwrap_or("forbidden")
            .to_owned()
    };
    assert_eq!(support("echo"), "optional");
    assert_eq!(support("task_only"), "required");
    assert_eq!(support("plain_only"), "forbidden");

    let output = legacy(&server, &["tools"]);
    assert_eq!(output.status.code(), Some(0));
    // A header row, then whether each runs as a task in words (issue 42).
    let header = stdout(&output).lines().next().map(str::to_owned).unwrap_or_default();
    assert!(header.starts_with("TOOL") && header.contains("AS A TASK") && header.contains("ARGUMENTS"), "{header}");
    let line_of = |name: &str| stdout(&output).lines().find(|line| line.starts_with(&format!("{name} "))).map(str::to_owned).unwrap_or_default();
    assert!(line_of("slow").contains("if asked") && line_of("slow").contains("seconds?: number"), "{}", stdout(&output));
    assert!(line_of("task_only").contains("always") && line_of("plain_only").contains("never"), "{}", stdout(&output));
    // In 2026-07-28 the server decides per call: no task-support column, the arguments still.
    let output = cli(&server, &["tools", "--era", "modern"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let slow = stdout(&output).lines().find(|line| line.starts_with("slow")).map(str::to_owned).expect("slow is listed");
    assert!(slow.contains("seconds?: number") && !slow.contains(" - ") && !slow.contains("optional"), "{slow}");
}

#[test]
fn call_prints_the_result_text_and_exits_0() {
    let (_work, server) = server();
    let output = cli(&server, &["call", "echo", "--arg", "text=hi"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "hi\n");

    let output = cli(&server, &["call", "plain_only", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(json(&output)["content"][0]["text"], "plain\n");
}

#[test]
fn a_failing_tool_exits_1() {
    let (_work, server) = server();
    let output = cli(&server, &["call", "fails"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("disk on fire"),
        "{}",
        stdout(&output)
    );

    let output = cli(&server, &["call", "fails", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(json(&output)["isError"], true);
}

#[test]
fn usage_and_connection_errors_exit_2_before_any_call() {
    let (_work, server) = server();
    let output = cli(&server, &["call", "slow", "--arg", "seconds=soon"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("wants a number"),
        "{}",
        stderr(&output)
    );

    let output = cli(&server, &["call", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no tool \"nope\""),
        "{}",
        stderr(&output)
    );

    let output = cli(&server, &["call", "plain_only", "--detach"]);
    assert_eq!(output.status.code(), Some(2));

    let output = cli(&server, &["tasks", "list", "--args"]);
    assert_eq!(output.status.code(), Some(2), "clap usage error");

    let mut unreachable = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    unreachable.args(["tools", "--url", "http://127.0.0.1:1/mcp"]);
    let output = run(unreachable);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot reach the server"),
        "{}",
        stderr(&output)
    );

    // The server's address without its endpoint's path: the error says where to go.
    let mut no_path = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    let address = format!("http://{}", server.addr);
    no_path.args(["tools", "--url", &address, "--token", ALICE]);
    let output = run(no_path);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains(&format!("try --url {address}/mcp")), "{}", stderr(&output));

    let mut stdio = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    stdio.args(["tools", "--cmd", "/nonexistent/mcp-tasks-server serve --stdio"]);
    let output = run(stdio);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot start the server"),
        "{}",
        stderr(&output)
    );

    let mut unbalanced = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    unbalanced.args(["tools", "--cmd", "mcp-tasks 'serve --stdio"]);
    let output = run(unbalanced);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("unclosed quote"),
        "{}",
        stderr(&output)
    );
}

/// `--cmd`: the server line for `mcp-tasks serve --stdio` on `work`, quoted for the
/// shell-like split (paths of temp dirs may hold spaces on some systems).
fn stdio_cmd(work: &Workdir) -> String {
    let quote = |path: &str| shlex_quote(path);
    format!(
        "{} serve --stdio --config {} --store {}",
        quote(env!("CARGO_BIN_EXE_mcp-tasks")),
        quote(&work.config().display().to_string()),
        quote(&work.store().display().to_string()),
    )
}

fn shlex_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// `mcp-tasks ARGS --cmd "mcp-tasks serve --stdio …"`, stdin closed.
fn cli_stdio(work: &Workdir, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command.args(args).args(["--cmd", &stdio_cmd(work)]);
    run(command)
}

/// [`cli_stdio`] with `--era legacy`.
fn legacy_stdio(work: &Workdir, args: &[&str]) -> Output {
    let mut with_era = args.to_vec();
    with_era.extend(["--era", "legacy"]);
    cli_stdio(work, &with_era)
}

#[test]
fn tools_call_and_tasks_work_over_a_spawned_stdio_server() {
    let work = Workdir::new();
    let output = legacy_stdio(&work, &["call", "echo", "--arg", "text=hi"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "hi");

    let output = legacy_stdio(&work, &["tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("echo"), "{}", stdout(&output));
    assert!(stdout(&output).contains("task_only"), "{}", stdout(&output));

    let output = legacy_stdio(&work, &["call", "task_only", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("tasked"), "{}", stdout(&output));

    // Tasks outlive the stdio session in the store: a later server lists them.
    let output = legacy_stdio(&work, &["tasks", "list", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listed = json(&output);
    let tasks = listed["tasks"].as_array().expect("a tasks array");
    assert!(!tasks.is_empty(), "{listed}");
    // `echo` (task optional) ran as a task too: both results are kept.
    let mut results: Vec<String> = tasks
        .iter()
        .map(|task| {
            let id = task["taskId"].as_str().unwrap();
            let output = legacy_stdio(&work, &["tasks", "result", id]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
            stdout(&output).trim().to_owned()
        })
        .collect();
    results.sort();
    assert_eq!(results, ["hi", "tasked"]);
}

#[test]
fn a_detached_task_is_listed_cancelled_and_shown() {
    let (_work, server) = server();
    let output = legacy(
        &server,
        &["call", "slow", "--arg", "seconds=30", "--detach"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = stdout(&output).trim().to_owned();
    assert!(
        !id.is_empty() && !id.contains(char::is_whitespace),
        "{id:?}"
    );

    let listed = json(&legacy(&server, &["tasks", "list", "--json"]));
    let task = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|task| task["taskId"] == id.as_str())
        .cloned();
    assert_eq!(
        task.expect("the detached task is listed")["status"],
        "working"
    );

    let output = legacy(&server, &["tasks", "result", &id]);
    assert_eq!(output.status.code(), Some(2), "no result while working");

    let output = legacy(&server, &["tasks", "cancel", &id]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(&format!("{id}  cancelled")),
        "{}",
        stdout(&output)
    );

    let got = json(&legacy(&server, &["tasks", "get", &id, "--json"]));
    assert_eq!(got["taskId"], id.as_str());
    assert_eq!(got["status"], "cancelled");
    assert_eq!(got["era"], "2025-11-25");

    assert_eq!(
        legacy(&server, &["tasks", "result", &id]).status.code(),
        Some(3)
    );
    assert_eq!(legacy(&server, &["tasks", "wait", &id]).status.code(), Some(3));
}

#[test]
fn tasks_wait_collects_a_detached_result() {
    let (_work, server) = server();
    let output = legacy(
        &server,
        &[
            "call",
            "echo",
            "--args",
            r#"{"text": "later"}"#,
            "--detach",
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(0));
    let task = json(&output);
    let id = task["taskId"]
        .as_str()
        .expect("--detach --json prints the task");
    let output = legacy(&server, &["tasks", "wait", id]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "later\n");
    let output = legacy(&server, &["tasks", "result", id, "--json"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(json(&output)["content"][0]["text"], "later");
    assert_eq!(json(&output)["taskId"], id, "the result names its task");
    // A call waited for to its end as a task names its task too (a script can then ask for
    // it again).
    let output = legacy(&server, &["call", "echo", "--args", r#"{"text": "named"}"#, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result = json(&output);
    assert_eq!(result["content"][0]["text"], "named", "{result}");
    let named = result["taskId"].as_str().expect("the task's id");
    let again = json(&legacy(&server, &["tasks", "result", named, "--json"]));
    assert_eq!(again["content"][0]["text"], "named", "{again}");
}

#[test]
fn answer_accepts_the_servers_question() {
    let (_work, server) = server();
    let output = cli(&server, &["call", "confirm", "--answer", r#"{"ok":true}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("answer: "), "{text}");
    assert!(
        text.contains(r#""action":"accept","content":{"ok":true}"#),
        "{text}"
    );
}

#[test]
fn without_a_terminal_or_answer_the_question_is_declined_with_a_hint() {
    let (_work, server) = server();
    let output = cli(&server, &["call", "confirm"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(r#""action":"decline""#),
        "{}",
        stdout(&output)
    );
    assert!(
        stderr(&output).contains(r#"--answer '{"ok": <boolean>}'"#),
        "{}",
        stderr(&output)
    );
}

#[test]
fn ctrl_c_while_waiting_cancels_the_task_and_exits_3() {
    let (_work, server) = server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args([
            "call",
            "slow",
            "--arg",
            "seconds=30",
            "--url",
            &url(&server),
            "--token",
            ALICE,
        ])
        .env("MCP_TASKS_LEDGER", SHARED_LEDGER)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp-tasks");
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let id = loop {
        let line = rx
            .recv_timeout(DEADLINE)
            .expect("the CLI says which task runs");
        if let Some(rest) = line.strip_prefix("mcp-tasks: task ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    kill(pid, Signal::SIGINT).unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let mut out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        let _ = done_tx.send((child.wait(), text));
    });
    let Ok((status, text)) = done_rx.recv_timeout(DEADLINE) else {
        let _ = kill(pid, Signal::SIGKILL);
        panic!("the CLI did not end after Ctrl-C");
    };
    assert_eq!(status.unwrap().code(), Some(3));
    assert!(text.contains(&format!("{id}  cancelled")), "{text}");
    let got = json(&cli(&server, &["tasks", "get", &id, "--json"]));
    assert_eq!(got["status"], "cancelled");
}

/// A server without bearer tokens (tasks are fetched by id from any session), and a ledger
/// path in its temp dir.
fn anonymous_server() -> (Workdir, HttpServer, String) {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let ledger = work.path("ledger.sqlite3").display().to_string();
    (work, server, ledger)
}

/// `mcp-tasks ARGS` with nothing added but a closed stdin and the test's ledger default.
fn bare(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command.args(args);
    run(command)
}

/// The ledger's pending tasks (`tasks pending --json`).
fn pending(ledger: &str) -> Vec<Value> {
    let output = bare(&["tasks", "pending", "--ledger", ledger, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    json(&output)["tasks"].as_array().expect("a tasks array").clone()
}

/// `tasks wait ID --ledger L` without --url: reconnects where the ledger says, prints
/// `done`, and the task leaves `tasks pending`.
fn wait_through_the_ledger(ledger: &str, id: &str) {
    let output = bare(&["tasks", "wait", id, "--ledger", ledger]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "done\n");
    let left = pending(ledger);
    assert!(left.iter().all(|task| task["taskId"] != id), "{left:?}");
}

#[test]
fn ledger_a_detached_task_is_pending_until_tasks_wait_without_url_collects_it() {
    let (_work, server, ledger) = anonymous_server();
    let output = bare(&[
        "call", "slow", "--arg", "seconds=2", "--detach", "--url", &url(&server), "--ledger", &ledger,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = stdout(&output).trim().to_owned();

    let tasks = pending(&ledger);
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = &tasks[0];
    assert_eq!(task["taskId"], id.as_str());
    assert_eq!(task["status"], "working");
    assert_eq!(task["tool"], "slow");
    let digest = task["argumentsDigest"].as_str().unwrap_or_default();
    assert!(digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()), "{task}");
    assert_eq!(task["url"], url(&server).as_str());
    assert!(task["createdAt"].is_string() && task["lastSeenAt"].is_string(), "{task}");

    let text = bare(&["tasks", "pending", "--ledger", &ledger]);
    assert_eq!(text.status.code(), Some(0));
    // A table with a header row (issue 42), one row per task.
    assert!(stdout(&text).starts_with("ID "), "{}", stdout(&text));
    assert_eq!(cells(&stdout(&text), &id)[..4], [id.clone(), "working".into(), "slow".into(), format!("--url {}", url(&server))], "{}", stdout(&text));

    // `tasks get` and `tasks result` find the server through the ledger too.
    let got = bare(&["tasks", "get", &id, "--ledger", &ledger, "--json"]);
    assert_eq!(got.status.code(), Some(0), "{}", stderr(&got));
    assert_eq!(json(&got)["taskId"], id.as_str(), "{}", stdout(&got));
    assert!(stderr(&got).contains(&format!("task {id} lives at --url {}", url(&server))), "{}", stderr(&got));
    let early = bare(&["tasks", "result", &id, "--ledger", &ledger]);
    assert_eq!(early.status.code(), Some(2), "still running: {}", stderr(&early));
    assert!(stderr(&early).contains("has no result yet"), "{}", stderr(&early));

    wait_through_the_ledger(&ledger, &id);
    let result = bare(&["tasks", "result", &id, "--ledger", &ledger]);
    assert_eq!((result.status.code(), stdout(&result).as_str()), (Some(0), "done\n"), "{}", stderr(&result));
    let unknown = bare(&["tasks", "get", "no-such-task", "--ledger", &ledger]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("not in the ledger"), "{}", stderr(&unknown));

    let unknown = bare(&["tasks", "wait", "no-such-task", "--ledger", &ledger]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("not in the ledger"), "{}", stderr(&unknown));
}

#[test]
fn ledger_a_cli_killed_while_waiting_leaves_its_task_pending_and_tasks_wait_collects_it() {
    let (_work, server, ledger) = anonymous_server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["call", "slow", "--arg", "seconds=2", "--url", &url(&server), "--ledger", &ledger])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp-tasks");
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let stderr_pipe = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let id = loop {
        let Ok(line) = rx.recv_timeout(DEADLINE) else {
            let _ = kill(pid, Signal::SIGKILL);
            panic!("the CLI never said which task runs");
        };
        if let Some(rest) = line.strip_prefix("mcp-tasks: task ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    kill(pid, Signal::SIGKILL).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), None, "killed by a signal");

    let tasks = pending(&ledger);
    let task = tasks
        .iter()
        .find(|task| task["taskId"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not pending: {tasks:?}"));
    assert_eq!(task["status"], "working");
    assert_eq!(task["url"], url(&server).as_str());

    wait_through_the_ledger(&ledger, &id);
}

#[test]
fn tasks_forget_removes_a_ledger_entry_without_asking_the_server() {
    let (_work, server, ledger) = anonymous_server();
    let output = bare(&[
        "call", "slow", "--arg", "seconds=30", "--detach", "--url", &url(&server), "--ledger", &ledger,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = stdout(&output).trim().to_owned();
    assert_eq!(pending(&ledger).len(), 1);

    let output = bare(&["tasks", "forget", &id, "--ledger", &ledger]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains(&format!("forgot task {id}")), "{}", stderr(&output));
    assert!(pending(&ledger).is_empty());

    let again = bare(&["tasks", "forget", &id, "--ledger", &ledger]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("not in the ledger"), "{}", stderr(&again));

    // The server was not asked: the task still runs there.
    let mut get = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    get.args(["tasks", "get", &id, "--json", "--url", &url(&server), "--ledger", &ledger]);
    let got = json(&run(get));
    assert_eq!(got["status"], "working");
}

// ---- 2026-07-28 (--era modern): the same commands; the server decides tasks ----

/// The cells of the table row of `id` in `text` (columns are two spaces or more apart).
fn cells(text: &str, id: &str) -> Vec<String> {
    let line = text.lines().find(|line| line.starts_with(id)).unwrap_or_else(|| panic!("no row for {id}: {text}"));
    line.split("  ").map(str::trim).filter(|cell| !cell.is_empty()).map(str::to_owned).collect()
}
