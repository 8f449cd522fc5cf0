//! The client commands in a real terminal: the `mcp-tasks` binary runs in a detached tmux
//! session (a tmux server of its own, `-S` socket in the test's temp dir, 120x30), keys are typed with `send-keys` and the screen
//! is read with `capture-pane`, against a `mcp-tasks serve` over HTTP. Covers the progress
//! bar and status message, an elicitation form answered at the prompts, and Ctrl-C asking
//! to cancel or detach. Skipped (with a message) when tmux is not installed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::Workdir;
use crate::http::HttpServer;

/// How long the screen may take to show what a test waits for.
const DEADLINE: Duration = Duration::from_secs(30);

/// The tools of these tests: `slow`, `steps` (progress with a total, through the line
/// protocol) and `order` (an elicitation form with every kind of field).
const CONFIG: &str = r#"
[server]
name = "tty-test"
poll_interval = "250ms"

[[tools]]
name = "slow"
description = "Sleeps, then prints done."
command = ["sh", "-c", "sleep \"$1\"; echo done", "_", "{seconds}"]
[tools.input_schema]
type = "object"
properties = { seconds = { type = "number" } }

[[tools]]
name = "steps"
description = "Reports progress step by step, then prints done."
command = ["sh", "-c", """
i=0
while [ $i -lt "$1" ]; do
  i=$((i+1))
  echo "@mcp-tasks {{\\"progress\\": $i, \\"total\\": $1, \\"message\\": \\"step $i of $1\\"}}"
  sleep "$2"
done
echo done
""", "_", "{steps}", "{pause}"]
[tools.input_schema]
type = "object"
properties = { steps = { type = "integer" }, pause = { type = "number" } }

[[tools]]
name = "order"
description = "Asks for an order through a form, then prints the answer."
command = ["sh", "-c", """
echo '@mcp-tasks {{"elicit": {{"message": "Your order?", "requestedSchema": {{"type": "object", "properties": {{"size": {{"type": "string", "title": "Size", "enum": ["s", "m", "l"], "enumNames": ["Small", "Medium", "Large"]}}, "count": {{"type": "integer", "title": "Count", "minimum": 1, "maximum": 9, "default": 2}}, "gift": {{"type": "boolean", "title": "Gift wrap"}}, "note": {{"type": "string", "title": "Note"}}}}, "required": ["size", "gift"]}}}}}}'
read -r answer
echo "answer: $answer"
"""]

[[tools]]
name = "late_order"
description = "Works a while, then asks for an order through a form (a task's question in 2026-07-28)."
inline_wait = "100ms"
command = ["sh", "-c", """
sleep 1
echo '@mcp-tasks {{"elicit": {{"message": "Your order?", "requestedSchema": {{"type": "object", "properties": {{"size": {{"type": "string", "title": "Size", "enum": ["s", "m", "l"]}}, "gift": {{"type": "boolean", "title": "Gift wrap"}}}}, "required": ["size", "gift"]}}}}}}'
read -r answer
echo "answer: $answer"
"""]
"#;

/// A server on the tests' config (no tokens: tasks are fetched by id from any session).
fn server() -> (Workdir, HttpServer) {
    let work = Workdir::new();
    std::fs::write(work.config(), CONFIG).unwrap();
    let server = HttpServer::start(&work);
    (work, server)
}

fn url(server: &HttpServer) -> String {
    format!("http://{}/mcp", server.addr)
}

/// A tmux server of our own (its socket in the test's temp dir) running one command in a
/// 120x30 pane; killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Runs `mcp-tasks ARGS` in a new session; the pane then shows `[exit N]` and stays.
    /// `None` (after saying so) when tmux is not installed.
    fn run(work: &Workdir, args: &[&str]) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("SKIPPED: tmux is not installed");
            return None;
        }
        let name = format!("tmux-{}", unique());
        let socket = path(&work.path(&format!("{name}.sock")));
        let conf = work.path(&format!("{name}.conf"));
        std::fs::write(&conf, "set -g remain-on-exit on\nset -g history-limit 5000\n").unwrap();
        // The script gets the binary and its arguments as argv: no shell string is built.
        // The shell survives the Ctrl-C sent to the pane's process group (a trap, not an
        // ignored signal, which the command would inherit).
        let script = r#"trap : INT; "$@"; echo "[exit $?]"; exec sleep 600"#;
        let status = Command::new("tmux")
            .args(["-S", &socket, "-f"])
            .arg(&conf)
            .args(["new-session", "-d", "-x", "120", "-y", "30", "-s", "t", "--", "sh", "-c", script, "sh"])
            .arg(env!("CARGO_BIN_EXE_mcp-tasks"))
            .args(args)
            .env("MCP_TASKS_LEDGER", work.path("ledger.sqlite3"))
            .env_remove("MCP_TASKS_URL")
            .env_remove("MCP_TASKS_TOKEN")
            .env("TERM", "xterm-256color")
            .stdin(Stdio::null())
            .status()
            .expect("run tmux");
        assert!(status.success(), "tmux new-session failed");
        Some(Tmux { socket })
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux").args(["-S", &self.socket]).args(args).output().expect("run tmux");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Types `keys` (tmux key names: `Enter`, `C-c`, or text).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// The pane's text, wrapped lines joined, with the scrollback.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "t"])
    }

    /// Waits until the screen satisfies `ready`; returns it.
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(start.elapsed() < DEADLINE, "the screen never showed {what}:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the command's end; returns its exit status and the screen.
    fn exit(&self) -> (i32, String) {
        let screen = self.wait_for("[exit N]", |screen| screen.contains("[exit "));
        let code = screen
            .split("[exit ")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .and_then(|code| code.parse().ok())
            .expect("an exit status");
        (code, screen)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-S", &self.socket, "kill-server"]).output();
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// The task id from "mcp-tasks: task ID is running".
fn task_id(screen: &str) -> String {
    let line = screen
        .lines()
        .find(|line| line.starts_with("mcp-tasks: task ") && line.contains(" is running"))
        .expect("the task line");
    line["mcp-tasks: task ".len()..].split_whitespace().next().unwrap().to_owned()
}

/// `mcp-tasks ARGS` outside the terminal (stdin closed); its exit status and stdout.
fn plain(work: &Workdir, args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(args)
        .env("MCP_TASKS_LEDGER", work.path("ledger.sqlite3"))
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-tasks");
    eprintln!("[cli stderr] {}", String::from_utf8_lossy(&output.stderr));
    (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned())
}

fn status_of(work: &Workdir, server: &HttpServer, id: &str) -> String {
    let (code, stdout) = plain(work, &["tasks", "get", id, "--json", "--url", &url(server)]);
    assert_eq!(code, Some(0));
    let task: Value = serde_json::from_str(&stdout).unwrap();
    task["status"].as_str().unwrap().to_owned()
}

#[test]
fn tty_progress_bar_shows_position_total_and_the_status_message_while_the_tool_runs() {
    let (work, server) = server();
    let Some(tmux) =
        // 2025-11-25: the bar's position and total come from notifications/progress, which a
        // 2026-07-28 task does not send (see the modern counterpart below).
        Tmux::run(&work, &["call", "steps", "--arg", "steps=4", "--arg", "pause=0.8", "--url", &url(&server), "--era", "legacy"])
    else {
        return;
    };
    let screen = tmux.wait_for("a bar at 2/4 with the status message", |screen| {
        screen.lines().any(|line| line.contains("] 2/4") && line.contains("working: step 2 of 4"))
    });
    let bar = screen.lines().find(|line| line.contains("] 2/4")).unwrap();
    assert!(bar.contains(&format!("task {}", task_id(&screen))), "{bar}");
    assert!(bar.contains("[=") && bar.contains("> "), "a half-full bar: {bar}");
    let (code, screen) = tmux.exit();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.lines().any(|line| line == "done"), "{screen}");
    assert!(!screen.lines().any(|line| line.contains("] 4/4")), "the bar is cleared at the end:\n{screen}");
}

#[test]
fn tty_elicitation_form_is_asked_field_by_field_and_answered_with_keys() {
    let (work, server) = server();
    let Some(tmux) = Tmux::run(&work, &["call", "order", "--url", &url(&server)]) else { return };
    let prompt = |screen: &str, label: &str| {
        screen.lines().rev().find(|line| !line.trim().is_empty()).is_some_and(|last| last.trim_start().starts_with(label))
    };
    // The fields come in the order the server listed them (size, count, gift, note).
    let screen = tmux.wait_for("the Size choices", |screen| prompt(screen, "Size (1-3"));
    assert!(screen.contains("mcp-tasks: the server asks: Your order?"), "{screen}");
    assert!(screen.contains("1) Small") && screen.contains("2) Medium") && screen.contains("3) Large"), "{screen}");
    tmux.keys(&["2", "Enter"]);
    let screen = tmux.wait_for("the Count prompt", |screen| prompt(screen, "Count ("));
    assert!(screen.contains("Count (integer, 1 to 9, default 2, optional): "), "{screen}");
    tmux.keys(&["12", "Enter"]);
    tmux.wait_for("the bound refused", |screen| screen.contains("at most 9"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the Gift wrap prompt", |screen| prompt(screen, "Gift wrap ("));
    tmux.keys(&["y", "Enter"]);
    tmux.wait_for("the Note prompt", |screen| prompt(screen, "Note (string, optional)"));
    tmux.keys(&["for Ada", "Enter"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 0, "{screen}");
    let answer = screen.lines().find_map(|line| line.strip_prefix("answer: ")).expect("the tool's answer line");
    let answer: Value = serde_json::from_str(answer).unwrap();
    assert_eq!(answer["action"], "accept", "{answer}");
    assert_eq!(answer["content"], serde_json::json!({"count": 2, "gift": true, "note": "for Ada", "size": "m"}));
}

/// Starts `slow` in the terminal and presses Ctrl-C once it runs; returns the task id.
fn interrupted_slow(work: &Workdir, server: &HttpServer, seconds: &str) -> Option<(Tmux, String)> {
    let tmux = Tmux::run(work, &["call", "slow", "--arg", &format!("seconds={seconds}"), "--url", &url(server)])?;
    let screen = tmux.wait_for("the task running", |screen| screen.contains("Ctrl-C to cancel or detach"));
    let id = task_id(&screen);
    tmux.keys(&["C-c"]);
    tmux.wait_for("the question", |screen| screen.contains("cancel the task or detach? [c]ancel/[d]etach"));
    Some((tmux, id))
}

#[test]
fn tty_ctrl_c_then_detach_prints_the_resume_command_and_the_task_keeps_running() {
    let (work, server) = server();
    let Some((tmux, id)) = interrupted_slow(&work, &server, "4") else { return };
    tmux.keys(&["d", "Enter"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 4, "{screen}");
    let ledger = work.path("ledger.sqlite3");
    let resume = format!("mcp-tasks tasks wait {id} --ledger {}", ledger.display());
    assert!(
        screen.contains(&format!("detached from task {id} (it keeps running); resume with: {resume}")),
        "{screen}"
    );
    assert_eq!(status_of(&work, &server, &id), "working");
    // The printed command collects the result.
    let (code, stdout) = plain(&work, &["tasks", "wait", &id, "--ledger", &path(&ledger)]);
    assert_eq!(code, Some(0));
    assert_eq!(stdout, "done\n");
}

fn path(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn tty_ctrl_c_then_cancel_or_a_second_ctrl_c_cancels_the_task() {
    let (work, server) = server();
    let Some((tmux, id)) = interrupted_slow(&work, &server, "30") else { return };
    tmux.keys(&["c", "Enter"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 3, "{screen}");
    assert!(screen.contains(&format!("{id}  cancelled")), "{screen}");
    assert_eq!(status_of(&work, &server, &id), "cancelled");
    drop(tmux);

    let Some((tmux, id)) = interrupted_slow(&work, &server, "30") else { return };
    tmux.keys(&["C-c"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 3, "{screen}");
    assert_eq!(status_of(&work, &server, &id), "cancelled");
}

#[test]
fn tty_ctrl_c_at_a_form_leaves_the_question_open_for_the_resumed_wait() {
    let (work, server) = server();
    // 2025-11-25: the client makes the call a task from the start, so its first question is
    // a task's (in 2026-07-28 a quick question comes as a round of the call, before any
    // task: see the modern counterparts below).
    let Some(tmux) = Tmux::run(&work, &["call", "order", "--url", &url(&server), "--era", "legacy"]) else { return };
    let screen = tmux.wait_for("the first prompt", |screen| screen.contains("Size (1-3"));
    let id = task_id(&screen);
    tmux.keys(&["C-c"]);
    tmux.wait_for("the question", |screen| screen.contains("[c]ancel/[d]etach"));
    tmux.keys(&["d", "Enter"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 4, "{screen}");
    assert_eq!(status_of(&work, &server, &id), "input_required", "the question was not answered");
    let (code, stdout) = plain(
        &work,
        &["tasks", "wait", &id, "--ledger", &path(&work.path("ledger.sqlite3")), "--answer", r#"{"size": "s", "gift": false}"#],
    );
    assert_eq!(code, Some(0));
    let answer = stdout.lines().find_map(|line| line.split_once("answer: ").map(|(_, answer)| answer)).expect("the answer line");
    let answer: Value = serde_json::from_str(answer.trim()).unwrap_or_else(|_| panic!("{stdout}"));
    assert_eq!(answer["content"], serde_json::json!({"size": "s", "gift": false}), "{stdout}");
}

/// `--cmd "mcp-tasks serve --stdio …"` on the workdir's config and store.
fn stdio_cmd(work: &Workdir) -> String {
    let quote = |path: &Path| shlex_quote(&path.display().to_string());
    format!(
        "{} serve --stdio --config {} --store {}",
        shlex_quote(env!("CARGO_BIN_EXE_mcp-tasks")),
        quote(&work.config()),
        quote(&work.store())
    )
}

fn shlex_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[test]
fn tty_ctrl_c_over_cmd_reaches_the_cli_alone_and_cancel_cancels_the_task() {
    let work = Workdir::new();
    std::fs::write(work.config(), CONFIG).unwrap();
    let cmd = stdio_cmd(&work);
    let Some(tmux) = Tmux::run(&work, &["call", "slow", "--arg", "seconds=30", "--cmd", &cmd]) else { return };
    let screen = tmux.wait_for("the task running", |screen| screen.contains("Ctrl-C to cancel or detach"));
    let id = task_id(&screen);
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_for("the question", |screen| screen.contains("[c]ancel/[d]etach"));
    assert!(screen.contains("its server was started with --cmd"), "{screen}");
    tmux.keys(&["c", "Enter"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 3, "the server survived the Ctrl-C and cancelled the task:\n{screen}");
    assert!(screen.contains(&format!("{id}  cancelled")), "{screen}");
    let (code, stdout) = plain(&work, &["tasks", "get", &id, "--json", "--cmd", &cmd]);
    assert_eq!(code, Some(0));
    let task: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(task["status"], "cancelled");
}

#[test]
fn tty_modern_a_form_asked_in_a_round_of_a_plain_call_is_answered_at_the_terminal() {
    // 2026-07-28: `order` asks at once, so its question is a round of the call (MRTR),
    // asked with the same terminal form.
    let (work, server) = server();
    let Some(tmux) = Tmux::run(&work, &["call", "order", "--url", &url(&server), "--era", "modern"]) else { return };
    let prompt = |screen: &str, label: &str| {
        screen.lines().rev().find(|line| !line.trim().is_empty()).is_some_and(|last| last.trim_start().starts_with(label))
    };
    let screen = tmux.wait_for("the Size choices", |screen| prompt(screen, "Size (1-3"));
    assert!(screen.contains("mcp-tasks: the server asks: Your order?"), "{screen}");
    tmux.keys(&["3", "Enter"]);
    tmux.wait_for("the Count prompt", |screen| prompt(screen, "Count ("));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the Gift wrap prompt", |screen| prompt(screen, "Gift wrap ("));
    tmux.keys(&["n", "Enter"]);
    tmux.wait_for("the Note prompt", |screen| prompt(screen, "Note (string, optional)"));
    tmux.keys(&["Enter"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 0, "{screen}");
    let answer = screen.lines().find_map(|line| line.strip_prefix("answer: ")).expect("the tool's answer line");
    let answer: Value = serde_json::from_str(answer).unwrap();
    assert_eq!(answer["action"], "accept", "{answer}");
    assert_eq!(answer["content"]["size"], "l", "{answer}");
    assert_eq!(answer["content"]["gift"], false, "{answer}");
}

#[test]
fn tty_modern_ctrl_c_then_detach_or_cancel_a_task_the_server_made() {
    let (work, server) = server();
    let run = |seconds: &str| {
        let tmux = Tmux::run(&work, &["call", "slow", "--arg", &format!("seconds={seconds}"), "--url", &url(&server), "--era", "modern"])?;
        let screen = tmux.wait_for("the task running", |screen| screen.contains("Ctrl-C to cancel or detach"));
        let id = task_id(&screen);
        tmux.keys(&["C-c"]);
        tmux.wait_for("the question", |screen| screen.contains("cancel the task or detach? [c]ancel/[d]etach"));
        Some((tmux, id))
    };
    let Some((tmux, id)) = run("4") else { return };
    tmux.keys(&["d", "Enter"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 4, "{screen}");
    assert!(screen.contains(&format!("detached from task {id} (it keeps running)")), "{screen}");
    let ledger = work.path("ledger.sqlite3");
    let (code, stdout) = plain(&work, &["tasks", "wait", &id, "--ledger", &path(&ledger), "--era", "modern"]);
    assert_eq!((code, stdout.as_str()), (Some(0), "done\n"));
    let Some((tmux, id)) = run("60") else { return };
    tmux.keys(&["c", "Enter"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 3, "{screen}");
    assert_eq!(status_of(&work, &server, &id), "cancelled");
}

// ---- 2026-07-28 (what --era auto speaks to this server) ----

#[test]
fn tty_modern_the_display_shows_the_polled_status_message_while_the_tool_runs() {
    let (work, server) = server();
    let Some(tmux) = Tmux::run(&work, &["call", "steps", "--arg", "steps=4", "--arg", "pause=0.8", "--url", &url(&server)])
    else {
        return;
    };
    // No progress notifications for a task in this era: its progress is its status message.
    let screen = tmux.wait_for("the spinner with the status message", |screen| {
        screen.lines().any(|line| line.contains("working: step 2 of 4") && line.contains(" task "))
    });
    let line = screen.lines().find(|line| line.contains("working: step 2 of 4")).unwrap();
    assert!(line.contains(&format!("task {}", task_id(&screen))), "{line}");
    let (code, screen) = tmux.exit();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.lines().any(|line| line == "done"), "{screen}");
    assert!(!screen.lines().any(|line| line.contains("working: step")), "the display is cleared at the end:\n{screen}");
}

/// Issue 42: the default era shows a bar too, when the server gives a total: the progress
/// comes from the task's event stream (`tasks/stream`), with the polled status message.
#[test]
fn tty_modern_progress_bar_shows_position_and_total_from_the_tasks_event_stream() {
    let (work, server) = server();
    let Some(tmux) = Tmux::run(&work, &["call", "steps", "--arg", "steps=4", "--arg", "pause=0.8", "--url", &url(&server)])
    else {
        return;
    };
    let screen = tmux.wait_for("a bar at 2/4", |screen| screen.lines().any(|line| line.contains("] 2/4")));
    let bar = screen.lines().find(|line| line.contains("] 2/4")).unwrap();
    assert!(bar.contains(&format!("task {}", task_id(&screen))) && bar.contains("[="), "{bar}");
    let (code, screen) = tmux.exit();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.lines().any(|line| line == "done"), "{screen}");
    assert!(!screen.lines().any(|line| line.contains("] 4/4")), "the bar is cleared at the end:\n{screen}");
}

#[test]
fn tty_modern_ctrl_c_at_a_tasks_form_leaves_the_question_open_for_the_resumed_wait() {
    let (work, server) = server();
    let Some(tmux) = Tmux::run(&work, &["call", "late_order", "--url", &url(&server)]) else { return };
    let screen = tmux.wait_for("the first prompt", |screen| screen.contains("Size (1-3"));
    let id = task_id(&screen);
    tmux.keys(&["C-c"]);
    tmux.wait_for("the question", |screen| screen.contains("[c]ancel/[d]etach"));
    tmux.keys(&["d", "Enter"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 4, "{screen}");
    assert_eq!(status_of(&work, &server, &id), "input_required", "the question was not answered");
    let (code, stdout) = plain(
        &work,
        &["tasks", "wait", &id, "--ledger", &path(&work.path("ledger.sqlite3")), "--answer", r#"{"size": "s", "gift": false}"#],
    );
    assert_eq!(code, Some(0));
    let answer = stdout.lines().find_map(|line| line.split_once("answer: ").map(|(_, answer)| answer)).expect("the answer line");
    let answer: Value = serde_json::from_str(answer.trim()).unwrap_or_else(|_| panic!("{stdout}"));
    assert_eq!(answer["content"], serde_json::json!({"size": "s", "gift": false}), "{stdout}");
}

#[test]
fn tty_modern_ctrl_c_at_a_rounds_form_abandons_the_call_saying_there_is_no_task() {
    let (work, server) = server();
    let Some(tmux) = Tmux::run(&work, &["call", "order", "--url", &url(&server)]) else { return };
    let screen = tmux.wait_for("the first prompt", |screen| screen.contains("Size (1-3"));
    assert!(!screen.contains(" is running"), "a round of the call: no task yet:\n{screen}");
    tmux.keys(&["C-c"]);
    let (code, screen) = tmux.exit();
    assert_eq!(code, 3, "{screen}");
    assert!(screen.contains("the call of order is abandoned") && screen.contains("no task to detach from"), "{screen}");
}
