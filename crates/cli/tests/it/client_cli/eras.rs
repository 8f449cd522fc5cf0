//! The CLI against the server in 2026-07-28 (`--era modern`) and in `--era auto`: calls,
//! questions, detached tasks, the ledger across a kill, kept results, poll back-off.

#[allow(clippy::wildcard_imports)]
use super::*;

/// `mcp-tasks ARGS --era modern` against the server.
fn modern(server: &HttpServer, args: &[&str]) -> Output {
    let mut with_era = args.to_vec();
    with_era.extend(["--era", "modern"]);
    cli(server, &with_era)
}

#[test]
fn modern_call_prints_a_quick_result_and_polls_a_slow_task_to_its_result() {
    let (_work, server) = server();
    let output = modern(&server, &["call", "echo", "--arg", "text=hi"]);
    assert_eq!((output.status.code(), stdout(&output)), (Some(0), "hi\n".to_owned()), "{}", stderr(&output));
    let output = modern(&server, &["call", "slow", "--arg", "seconds=2", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json(&output)["content"][0]["text"], "done\n");
    let output = modern(&server, &["call", "fails"]);
    assert_eq!(output.status.code(), Some(1), "a tool error exits 1: {}", stderr(&output));
}

#[test]
fn modern_a_question_of_a_plain_call_is_answered_with_answer_in_a_round() {
    let (_work, server) = server();
    let output = modern(&server, &["call", "confirm", "--answer", r#"{"ok":true}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains(r#""action":"accept","content":{"ok":true}"#), "{}", stdout(&output));
}

#[test]
fn modern_a_detached_task_is_collected_by_tasks_wait_and_tasks_list_says_what_to_use() {
    let (_work, server) = server();
    let output = modern(&server, &["call", "slow", "--arg", "seconds=2", "--detach", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = json(&output)["taskId"].as_str().expect("--detach --json prints the task").to_owned();
    let output = modern(&server, &["tasks", "get", &id, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json(&output)["taskId"], id);
    let output = modern(&server, &["tasks", "wait", &id]);
    assert_eq!((output.status.code(), stdout(&output)), (Some(0), "done\n".to_owned()), "{}", stderr(&output));
    // No tasks/list in this era: the ledger's tasks of this server, asked of it (issue 42).
    let output = modern(&server, &["tasks", "list", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listed = json(&output);
    let task = listed["tasks"].as_array().unwrap().iter().find(|task| task["taskId"] == id.as_str()).cloned().unwrap_or_default();
    assert_eq!((task["status"].clone(), task["live"].clone()), (serde_json::json!("completed"), serde_json::json!(true)), "{listed}");
    // A cancelled task exits 3, in this era too.
    let output = modern(&server, &["call", "slow", "--arg", "seconds=30", "--detach"]);
    let id = stdout(&output).trim().to_owned();
    let output = modern(&server, &["tasks", "cancel", &id, "--json"]);
    assert_eq!((output.status.code(), json(&output)["status"].clone()), (Some(0), serde_json::json!("cancelled")), "{}", stderr(&output));
    assert_eq!(modern(&server, &["tasks", "wait", &id]).status.code(), Some(3));
}

#[test]
fn modern_ledger_a_cli_killed_between_sending_a_call_and_its_answer_gets_the_one_task_from_tasks_wait() {
    let work = Workdir::new();
    let marker = work.path("runs.txt");
    // `once` counts its runs in the marker file, works 2 s, and (inline wait 30 s) is only
    // answered when it ends: the CLI is killed after the call was sent, before its answer.
    let once = r#"
[[tools]]
name = "once"
inline_wait = "30s"
command = ["sh", "-c", "echo run >> \"$1\"; sleep 2; echo done", "_", "{marker}"]
[tools.input_schema]
type = "object"
properties = { marker = { type = "string" } }
"#;
    std::fs::write(work.config(), format!("{CONFIG}\n{once}")).unwrap();
    let server = HttpServer::start(&work);
    let ledger = work.path("ledger.sqlite3").display().to_string();
    let marker_arg = format!("marker={}", marker.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["call", "once", "--arg", &marker_arg, "--url", &url(&server), "--ledger", &ledger, "--era", "modern"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcp-tasks");
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let deadline = std::time::Instant::now() + DEADLINE;
    while !marker.exists() {
        if std::time::Instant::now() > deadline {
            let _ = kill(pid, Signal::SIGKILL);
            panic!("the tool never started");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(pid, Signal::SIGKILL).unwrap();
    assert_eq!(child.wait().unwrap().code(), None, "killed by a signal");

    let output = bare(&["tasks", "pending", "--ledger", &ledger, "--json"]);
    let listed = json(&output);
    let submissions = listed["submissions"].as_array().expect("a submissions array").clone();
    assert_eq!(submissions.len(), 1, "{listed}");
    assert_eq!((submissions[0]["tool"].clone(), submissions[0]["url"].clone()), (serde_json::json!("once"), serde_json::json!(url(&server))));
    assert!(listed["tasks"].as_array().unwrap().is_empty(), "no task id came back: {listed}");
    let key = submissions[0]["idempotencyKey"].as_str().unwrap().to_owned();

    let output = bare(&["tasks", "wait", &key, "--ledger", &ledger, "--era", "modern"]);
    assert_eq!((output.status.code(), stdout(&output)), (Some(0), "done\n".to_owned()), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "run\n", "the command ran once");
    let listed = json(&bare(&["tasks", "pending", "--ledger", &ledger, "--json"]));
    assert!(listed["submissions"].as_array().unwrap().is_empty(), "{listed}");
}

#[test]
fn keep_a_result_kept_in_the_ledger_is_read_after_the_server_forgot_its_task() {
    let work = Workdir::new();
    let config = CONFIG.replacen("default_ttl = \"1h\"", "default_ttl = \"6s\"", 1);
    assert_ne!(config, CONFIG, "the test config sets default_ttl");
    std::fs::write(work.config(), config).unwrap();
    let server = HttpServer::start(&work);
    let ledger = work.path("ledger.sqlite3").display().to_string();
    let output = bare(&["call", "echo", "--arg", "text=kept", "--keep", "--json", "--url", &url(&server), "--ledger", &ledger]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // A task in either era (2 s is past the server's inline wait).
    let output = bare(&["call", "slow", "--arg", "seconds=2", "--detach", "--json", "--url", &url(&server), "--ledger", &ledger]);
    let id = json(&output)["taskId"].as_str().expect("a task").to_owned();
    let output = bare(&["tasks", "wait", &id, "--keep", "--ledger", &ledger]);
    assert_eq!((output.status.code(), stdout(&output)), (Some(0), "done\n".to_owned()), "{}", stderr(&output));
    // The server forgets the task when its TTL runs out.
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let output = bare(&["tasks", "get", &id, "--url", &url(&server), "--ledger", &ledger]);
        if output.status.code() == Some(2) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the task outlived its TTL");
        std::thread::sleep(Duration::from_millis(200));
    }
    let output = bare(&["tasks", "result", &id, "--json", "--url", &url(&server), "--ledger", &ledger]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json(&output)["content"][0]["text"], "done\n");
    assert!(stderr(&output).contains("as the ledger kept it"), "{}", stderr(&output));
    // Without --keep nothing is kept.
    let output = bare(&["call", "slow", "--arg", "seconds=2", "--detach", "--json", "--url", &url(&server), "--ledger", &ledger]);
    let other = json(&output)["taskId"].as_str().expect("a task").to_owned();
    assert_eq!(bare(&["tasks", "wait", &other, "--ledger", &ledger]).status.code(), Some(0));
    let deadline = std::time::Instant::now() + DEADLINE;
    while bare(&["tasks", "get", &other, "--url", &url(&server), "--ledger", &ledger]).status.code() != Some(2) {
        assert!(std::time::Instant::now() < deadline, "the task outlived its TTL");
        std::thread::sleep(Duration::from_millis(200));
    }
    let output = bare(&["tasks", "result", &other, "--url", &url(&server), "--ledger", &ledger]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

// ---- what the same commands do by default (--era auto) against a server that serves
// 2026-07-28: the counterparts of the 2025-11-25 tests above ----

/// The task id from "mcp-tasks: task ID is running" on stderr.
fn running_task(output: &Output) -> String {
    let text = stderr(output);
    let line = text
        .lines()
        .find(|line| line.starts_with("mcp-tasks: task ") && line.contains(" is running"))
        .unwrap_or_else(|| panic!("no task line: {text}"));
    line["mcp-tasks: task ".len()..].split_whitespace().next().unwrap().to_owned()
}

#[test]
fn auto_tools_json_says_its_era_and_no_task_support_the_server_decides() {
    let (_work, server) = server();
    let output = cli(&server, &["tools", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listed = json(&output);
    assert_eq!(listed["era"], "2026-07-28", "auto speaks 2026-07-28 to a server that serves it");
    let tools = listed["tools"].as_array().unwrap();
    assert!(tools.iter().any(|tool| tool["name"] == "task_only"), "{listed}");
    assert!(tools.iter().all(|tool| tool.get("execution").is_none()), "no task support in this era: {listed}");

    let output = cli(&server, &["tools"]);
    assert_eq!(output.status.code(), Some(0));
    // No task-support column in this era (issue 42: it said `-` for every tool), the arguments.
    let slow = stdout(&output).lines().find(|line| line.starts_with("slow")).map(str::to_owned).expect("slow is listed");
    assert!(slow.contains("seconds?: number") && !slow.contains("  -  ") && !slow.contains("optional"), "{slow}");
    assert!(stderr(&output).contains("decides per call"), "{}", stderr(&output));
}

#[test]
fn auto_a_detached_task_is_pending_cancelled_and_shown_with_its_era() {
    let (work, server) = server();
    let ledger = work.path("ledger.sqlite3").display().to_string();
    let output = cli(&server, &["call", "slow", "--arg", "seconds=30", "--detach", "--ledger", &ledger]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = stdout(&output).trim().to_owned();
    assert!(!id.is_empty() && !id.contains(char::is_whitespace), "{id:?}");

    // No tasks/list in this era: the ledger lists it, with its era.
    let tasks = pending(&ledger);
    let task = tasks.iter().find(|task| task["taskId"] == id.as_str()).expect("the detached task is pending");
    assert_eq!((task["status"].as_str(), task["era"].as_str()), (Some("working"), Some("2026-07-28")), "{task}");
    let text = bare(&["tasks", "pending", "--ledger", &ledger]);
    // A table with a header row (issue 42).
    assert!(stdout(&text).starts_with("ID "), "{}", stdout(&text));
    let row = cells(&stdout(&text), &id);
    assert_eq!(row[..5], [id.clone(), "working".into(), "slow".into(), format!("--url {}", url(&server)), "MCP 2026-07-28".into()], "{}", stdout(&text));
    // No tasks/list in this era: `tasks list` shows the ledger's tasks of the server, asked of
    // it now (issue 42).
    let output = cli(&server, &["tasks", "list", "--ledger", &ledger]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(cells(&stdout(&output), &id)[..3], [id.clone(), "working".into(), "slow".into()], "{}", stdout(&output));

    let output = cli(&server, &["tasks", "result", &id]);
    assert_eq!(output.status.code(), Some(2), "no result while working");
    let output = cli(&server, &["tasks", "cancel", &id, "--ledger", &ledger]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains(&format!("{id}  cancelled")), "{}", stdout(&output));
    assert!(pending(&ledger).iter().all(|task| task["taskId"] != id.as_str()), "a cancelled task is not pending");

    let got = json(&cli(&server, &["tasks", "get", &id, "--json"]));
    assert_eq!((got["taskId"].as_str(), got["status"].as_str(), got["era"].as_str()), (Some(id.as_str()), Some("cancelled"), Some("2026-07-28")));
    assert_eq!(cli(&server, &["tasks", "result", &id]).status.code(), Some(3));
    assert_eq!(cli(&server, &["tasks", "wait", &id]).status.code(), Some(3));
}

#[test]
fn auto_detach_of_a_call_the_server_answers_at_once_prints_its_result_and_exits_2() {
    let (_work, server) = server();
    let output = cli(&server, &["call", "echo", "--args", r#"{"text": "later"}"#, "--detach", "--json"]);
    assert_eq!(output.status.code(), Some(2), "no task id can be printed: {}", stderr(&output));
    let result = json(&output);
    assert_eq!((result["content"][0]["text"].as_str(), result["era"].as_str()), (Some("later"), Some("2026-07-28")), "the result is not lost");
    assert!(stderr(&output).contains("answered the call of echo at once"), "{}", stderr(&output));
    assert!(stderr(&output).contains("no task id"), "{}", stderr(&output));

    // A detached task that became one is collected by tasks wait, its result by tasks result.
    let output = cli(&server, &["call", "slow", "--arg", "seconds=2", "--detach", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let task = json(&output);
    assert_eq!(task["era"], "2026-07-28");
    let id = task["taskId"].as_str().expect("--detach --json prints the task");
    let output = cli(&server, &["tasks", "wait", id]);
    assert_eq!((output.status.code(), stdout(&output)), (Some(0), "done\n".to_owned()), "{}", stderr(&output));
    let output = cli(&server, &["tasks", "result", id, "--json"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!((json(&output)["content"][0]["text"].as_str(), json(&output)["era"].as_str()), (Some("done\n"), Some("2026-07-28")));
}

#[test]
fn auto_tools_call_and_tasks_work_over_a_spawned_stdio_server_in_2026_07_28() {
    let work = Workdir::new();
    let output = cli_stdio(&work, &["call", "echo", "--arg", "text=hi", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!((json(&output)["content"][0]["text"].as_str(), json(&output)["era"].as_str()), (Some("hi"), Some("2026-07-28")));

    let output = cli_stdio(&work, &["tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("task_only"), "{}", stdout(&output));

    // A tool that runs only as a task: the server makes one, the CLI follows it.
    let output = cli_stdio(&work, &["call", "task_only"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "tasked");
    let id = running_task(&output);
    // The task outlives the stdio session in the store: a later server has its result.
    let output = cli_stdio(&work, &["tasks", "result", &id, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json(&output)["content"][0]["text"], "tasked\n");
    // No tasks/list in this era: the ledger's tasks of that server, asked of it (a new one).
    let output = cli_stdio(&work, &["tasks", "list", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listed = json(&output);
    let task = listed["tasks"].as_array().unwrap().iter().find(|task| task["taskId"] == id.as_str()).cloned();
    assert_eq!(task.map(|task| task["status"].clone()), Some(serde_json::json!("completed")), "{listed}");
}


#[test]
fn modern_call_backs_off_when_the_server_refuses_polls_for_their_rate() {
    let work = Workdir::new();
    // One task read per second at most: the task's pollInterval (250 ms) is faster.
    let config = format!("{CONFIG}\n{TOKENS}").replacen("[server]\n", "[server]\npoll_rate = 1\npoll_burst = 1\n", 1);
    std::fs::write(work.config(), config).unwrap();
    let server = HttpServer::start(&work);
    let output = modern(&server, &["call", "slow", "--arg", "seconds=3", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json(&output)["content"][0]["text"], "done\n");
}
