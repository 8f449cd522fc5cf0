//! `CommandTool` against real processes: argv building, results, the environment, ending
//! the whole process group on timeout, cancellation, exit and drop, and the line protocol.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_tasks_config::{CommandTool, Config, MARKER, TaskSupport, ToolConfig};
use mcp_tasks_engine::{
    Change, ClientLink, Context, Engine, ErrorObject, Handler, InputKind, NewTask, Outcome, Policy, Principal,
    Progress, RestartPolicy, SystemClock, TaskRecord, ToolRuntime,
};
use mcp_tasks_sqlite::SqliteStore;
use nix::errno::Errno;
use nix::sys::signal::killpg;
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A tool running `command`, whose schema has a string property for each of `properties`.
fn tool(command: &[&str], properties: &[&str], timeout: Option<Duration>) -> CommandTool {
    let properties: serde_json::Map<String, Value> = properties
        .iter()
        .map(|name| (name.to_string(), json!({"type": "string"})))
        .collect();
    CommandTool::new(&ToolConfig {
        input_schema: json!({"type": "object", "properties": properties}),
        task_support: TaskSupport::Optional,
        timeout,
        on_restart: RestartPolicy::Fail,
        ..ToolConfig::new("test", command.iter().map(|s| s.to_string()).collect())
    })
}

/// The first tool of a config file's text.
fn configured(text: &str) -> CommandTool {
    let config = Config::parse(text).unwrap_or_else(|err| panic!("{err}\n{text}"));
    CommandTool::new(&config.tools[0])
}

/// Runs a plain call and returns its `CallToolResult`.
async fn call_result(tool: &CommandTool, arguments: Value) -> Value {
    let ctx = Context::plain(CancellationToken::new(), None);
    match tool.call(arguments, ctx).await {
        Outcome::Result(result) => result,
        Outcome::Error(err) => panic!("expected a result, got error {err:?}"),
        Outcome::Failure(failure) => panic!("expected a result, got failure {failure:?}"),
    }
}

/// The texts of a `CallToolResult`'s content items.
fn texts(result: &Value) -> Vec<&str> {
    result["content"]
        .as_array()
        .expect("content is an array")
        .iter()
        .map(|item| {
            assert_eq!(item["type"], "text", "{result}");
            item["text"].as_str().expect("text")
        })
        .collect()
}

/// Runs a plain call and returns `(isError, text)` of its `CallToolResult`.
async fn call(tool: &CommandTool, arguments: Value, cancel: CancellationToken) -> (bool, String) {
    call_linked(tool, arguments, cancel, None).await
}

/// Runs a plain call whose messages to the client go through `link`; returns `(isError,
/// text)` of its `CallToolResult`.
async fn call_linked(
    tool: &CommandTool,
    arguments: Value,
    cancel: CancellationToken,
    link: Option<Arc<dyn ClientLink>>,
) -> (bool, String) {
    match tool.call(arguments, Context::plain(cancel, link)).await {
        Outcome::Result(result) => {
            let is_error = result["isError"].as_bool().expect("isError is a boolean");
            let content = result["content"].as_array().expect("content is an array");
            assert_eq!(content.len(), 1, "{result}");
            assert_eq!(content[0]["type"], "text");
            (
                is_error,
                content[0]["text"].as_str().expect("text").to_owned(),
            )
        }
        Outcome::Error(err) => panic!("expected a result, got error {err:?}"),
        Outcome::Failure(failure) => panic!("expected a result, got failure {failure:?}"),
    }
}

/// Splits NUL-terminated output into its elements.
fn nul_separated(text: &str) -> Vec<&str> {
    let mut elements: Vec<&str> = text.split('\0').collect();
    assert_eq!(elements.pop(), Some(""), "output ends with a NUL: {text:?}");
    elements
}

/// Whether `pgid`'s process group is gone (`killpg` with signal 0 says ESRCH).
fn group_is_gone(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None) == Err(Errno::ESRCH)
}

/// Reads the pid a script wrote to `fifo`; blocks until the script has started.
async fn read_pid(fifo: &Path) -> i32 {
    let fifo = fifo.to_owned();
    let text = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo))
        .await
        .expect("reader task")
        .expect("read fifo");
    text.trim().parse().expect("a pid")
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success());
}

const PRINT_ARGV: &str = "printf '%s\\0' \"$@\"";

// ---- argv ----

#[test]
fn an_exact_placeholder_becomes_one_argv_element() {
    let tool = tool(&["prog", "{x}", "--flag"], &["x"], None);
    assert_eq!(
        tool.argv(&json!({"x": "a b  c"})).unwrap(),
        ["prog", "a b  c", "--flag"]
    );
}

#[test]
fn an_embedded_placeholder_is_replaced_inside_its_element_only() {
    let tool = tool(
        &["prog", "--out={dir}/{name}.txt", "{{literal}}"],
        &["dir", "name"],
        None,
    );
    assert_eq!(
        tool.argv(&json!({"dir": "/tmp/x y", "name": "n"})).unwrap(),
        ["prog", "--out=/tmp/x y/n.txt", "{literal}"]
    );
}

#[test]
fn an_absent_argument_drops_an_exact_element_and_empties_an_embedded_one() {
    let tool = tool(&["prog", "{x}", "--y={y}", "end"], &["x", "y"], None);
    assert_eq!(tool.argv(&json!({})).unwrap(), ["prog", "--y=", "end"]);
    assert_eq!(
        tool.argv(&json!({"x": null})).unwrap(),
        ["prog", "--y=", "end"]
    );
    assert_eq!(tool.argv(&Value::Null).unwrap(), ["prog", "--y=", "end"]);
}

#[test]
fn numbers_booleans_arrays_and_objects_arrive_as_json_text() {
    let tool = tool(
        &["prog", "{n}", "{f}", "{b}", "{a}", "{o}", "-n={n}"],
        &["n", "f", "b", "a", "o"],
        None,
    );
    let argv = tool
        .argv(&json!({"n": 42, "f": 1.5, "b": true, "a": [1, "two"], "o": {"k": "v", "n": null}}))
        .unwrap();
    assert_eq!(
        argv,
        [
            "prog",
            "42",
            "1.5",
            "true",
            "[1,\"two\"]",
            "{\"k\":\"v\",\"n\":null}",
            "-n=42"
        ]
    );
}

#[test]
fn arguments_that_are_not_an_object_are_invalid_params() {
    let tool = tool(&["prog"], &[], None);
    for arguments in [json!([1]), json!("x"), json!(3)] {
        let err = tool.argv(&arguments).unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(
            err.message.contains("arguments must be a JSON object"),
            "{}",
            err.message
        );
    }
}

#[tokio::test]
async fn a_call_with_arguments_that_are_not_an_object_is_an_invalid_params_error() {
    let tool = tool(&["true"], &[], None);
    match tool
        .call(json!([1]), Context::plain(CancellationToken::new(), None))
        .await
    {
        Outcome::Error(err) => assert_eq!(err.code, -32602),
        Outcome::Result(result) => panic!("expected an error, got {result}"),
        Outcome::Failure(failure) => panic!("expected an error, got failure {failure:?}"),
    }
}

#[tokio::test]
async fn shell_metacharacters_arrive_verbatim_as_one_argv_element_each() {
    let hostile = [
        "; rm -rf /",
        "$(id)",
        "`id`",
        "line one\nline two",
        "'single' \"double\" * ? ~ | & > < \\",
        "",
    ];
    let tool = tool(
        &[
            "sh", "-c", PRINT_ARGV, "_", "{a}", "{b}", "{c}", "{d}", "{e}", "{f}",
        ],
        &["a", "b", "c", "d", "e", "f"],
        None,
    );
    let arguments = json!({
        "a": hostile[0], "b": hostile[1], "c": hostile[2], "d": hostile[3], "e": hostile[4], "f": hostile[5],
    });
    let (is_error, text) = call(&tool, arguments, CancellationToken::new()).await;
    assert!(!is_error, "{text}");
    assert_eq!(nul_separated(&text), hostile);
}

// ---- results ----

#[tokio::test]
async fn exit_zero_returns_stdout_as_text() {
    let tool = tool(
        &["sh", "-c", "echo \"$1\"; echo noise >&2", "_", "{msg}"],
        &["msg"],
        None,
    );
    let (is_error, text) = call(
        &tool,
        json!({"msg": "hello $USER"}),
        CancellationToken::new(),
    )
    .await;
    assert!(!is_error);
    assert_eq!(text, "hello $USER\n");
}

#[tokio::test]
async fn a_nonzero_exit_is_an_error_with_the_code_the_stderr_and_the_stdout() {
    let script = "head -c 5000 /dev/zero | tr '\\0' x >&2; echo END >&2; echo partial; exit 3";
    let tool = tool(&["sh", "-c", script], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    let (stderr, stdout) = text
        .strip_prefix("command exited with code 3\n--- stderr ---\n")
        .unwrap_or_else(|| panic!("unexpected text: {text:.200}"))
        .split_once("\n--- stdout ---\n")
        .expect("a stdout section");
    assert_eq!(stderr, format!("{}END\n", "x".repeat(5000)));
    assert_eq!(stdout, "partial\n");
}

#[tokio::test]
async fn a_nonzero_exit_without_output_is_just_the_code() {
    let tool = tool(&["false"], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    assert_eq!(text, "command exited with code 1");
}

#[tokio::test]
async fn a_program_that_does_not_exist_is_an_error_result_naming_it() {
    let tool = tool(&["/nonexistent/mcp-tasks-no-such-program", "x"], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    assert!(
        text.starts_with("could not start `/nonexistent/mcp-tasks-no-such-program`: "),
        "{text}"
    );
    assert!(text.contains("No such file or directory"), "{text}");
}

#[tokio::test]
async fn a_death_by_signal_is_an_error_naming_the_signal() {
    let tool = tool(&["sh", "-c", "kill -KILL $$"], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    assert_eq!(text, "command was killed by signal SIGKILL");
}

/// A variable the test binary gets only when it reruns itself (see [`rerun_with_secrets`]).
const SECRET: &str = "MCP_TASKS_SECRET_TEST";
/// A second such variable, one a tool may be allowed to see.
const VISIBLE: &str = "MCP_TASKS_VISIBLE_TEST";

/// Whether this is the outer run of `test`, which has just rerun itself, successfully, in a
/// child process whose environment has [`SECRET`]` = hunter2` and [`VISIBLE`]` = seen`: a
/// test cannot set a variable in its own process (`set_var` is unsafe, and unsafe code is
/// forbidden). The outer run returns at once; the inner run does the checks.
async fn rerun_with_secrets(test: &str) -> bool {
    if std::env::var_os(SECRET).is_some() {
        return false;
    }
    let output = tokio::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", test, "--nocapture"])
        .env(SECRET, "hunter2")
        .env(VISIBLE, "seen")
        .output()
        .await
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the inner run ran no test: {stdout}"
    );
    true
}

/// The names of the variables a tool with `settings` (TOML lines) sees, and its `env`
/// output.
async fn environment_of(settings: &str) -> (Vec<String>, String) {
    let tool = configured(&format!(
        "[[tools]]\nname = \"env\"\ncommand = [\"env\"]\n{settings}\n"
    ));
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(!is_error, "{text}");
    let names = text
        .lines()
        .map(|line| line.split('=').next().unwrap_or_default().to_owned())
        .collect();
    (names, text)
}

#[tokio::test]
async fn the_servers_environment_does_not_leak_into_tools() {
    if rerun_with_secrets("the_servers_environment_does_not_leak_into_tools").await {
        return;
    }
    for settings in ["", "inherit_env = false"] {
        let (names, text) = environment_of(settings).await;
        assert!(
            !text.contains("hunter2") && !text.contains("seen"),
            "{text}"
        );
        assert!(names.iter().any(|name| name == "PATH"), "{text}");
        for name in &names {
            assert!(
                ["PATH", "HOME", "LANG", "TZ", "PWD", "SHLVL", "_"].contains(&name.as_str()),
                "leaked: {name}"
            );
        }
    }
}

#[tokio::test]
async fn inherit_env_names_pass_those_variables_and_no_other() {
    if rerun_with_secrets("inherit_env_names_pass_those_variables_and_no_other").await {
        return;
    }
    let (names, text) = environment_of(&format!(
        "inherit_env = [\"{VISIBLE}\", \"MCP_TASKS_UNSET_TEST\"]"
    ))
    .await;
    assert!(text.contains(&format!("{VISIBLE}=seen\n")), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(names.iter().any(|name| name == "PATH"), "{text}");
    assert!(
        !names.iter().any(|name| name == "MCP_TASKS_UNSET_TEST"),
        "{text}"
    );
}

#[tokio::test]
async fn inherit_env_true_passes_the_whole_environment() {
    if rerun_with_secrets("inherit_env_true_passes_the_whole_environment").await {
        return;
    }
    let (_, text) = environment_of("inherit_env = true").await;
    assert!(text.contains(&format!("{SECRET}=hunter2\n")), "{text}");
    assert!(text.contains(&format!("{VISIBLE}=seen\n")), "{text}");
}

#[tokio::test]
async fn env_values_are_set_with_their_placeholders_filled_verbatim() {
    if rerun_with_secrets("env_values_are_set_with_their_placeholders_filled_verbatim").await {
        return;
    }
    let tool = configured(
        r#"
[[tools]]
name = "env"
command = ["env"]
inherit_env = ["MCP_TASKS_VISIBLE_TEST"]
input_schema = { type = "object", properties = { who = { type = "string" }, n = { type = "integer" }, gone = { type = "string" } } }

[tools.env]
GREETING = "hello {who}, {{braces}}"
WHO = "{who}"
COUNT = "{n}"
GONE = "{gone}"
GONE_INSIDE = "[{gone}]"
MCP_TASKS_VISIBLE_TEST = "overridden"
"#,
    );
    let who = "$(id); rm -rf / `id`";
    let (is_error, text) = call(&tool, json!({"who": who, "n": 7}), CancellationToken::new()).await;
    assert!(!is_error, "{text}");
    let env: Vec<&str> = text.lines().collect();
    for expected in [
        format!("GREETING=hello {who}, {{braces}}"),
        format!("WHO={who}"),
        "COUNT=7".to_owned(),
        "GONE_INSIDE=[]".to_owned(),
        "MCP_TASKS_VISIBLE_TEST=overridden".to_owned(),
    ] {
        assert!(env.contains(&expected.as_str()), "{expected} not in {text}");
    }
    assert!(
        !env.iter().any(|line| line.starts_with("GONE=")),
        "an exact placeholder of an absent argument leaves the variable unset: {text}"
    );
}

// ---- cwd ----

#[tokio::test]
async fn a_tool_runs_in_its_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let tool = configured(&format!(
        "[[tools]]\nname = \"where\"\ncommand = [\"sh\", \"-c\", \"pwd -P\"]\ncwd = \"{}\"\n",
        dir.path().display()
    ));
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        text.trim_end(),
        dir.path().canonicalize().unwrap().to_str().unwrap()
    );
}

#[tokio::test]
async fn a_cwd_that_vanished_is_an_error_result_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("gone");
    std::fs::create_dir(&cwd).unwrap();
    let tool = configured(&format!(
        "[[tools]]\nname = \"where\"\ncommand = [\"pwd\"]\ncwd = \"{}\"\n",
        cwd.display()
    ));
    std::fs::remove_dir(&cwd).unwrap();
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    assert!(
        text.starts_with(&format!("could not start `pwd` in `{}`: ", cwd.display())),
        "{text}"
    );
}

// ---- stdin ----

const STDIN_TOOL: &str = r#"
[[tools]]
name = "cat"
command = ["sh", "-c", "cat; echo '|end'"]
stdin = { arg = "text" }
input_schema = { type = "object", properties = { text = { type = "string" }, n = { type = "integer" } } }
"#;

#[tokio::test]
async fn a_stdin_argument_is_written_verbatim_then_stdin_is_closed() {
    let tool = configured(STDIN_TOOL);
    let text = "line one\n$(id); rm -rf / `id`\n\ttabbed, no newline at the end";
    let (is_error, output) = call(&tool, json!({"text": text}), CancellationToken::new()).await;
    assert!(!is_error, "{output}");
    assert_eq!(output, format!("{text}|end\n"));
}

#[tokio::test]
async fn an_absent_stdin_argument_is_an_empty_closed_stdin() {
    let tool = configured(STDIN_TOOL);
    let (is_error, output) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(!is_error, "{output}");
    assert_eq!(output, "|end\n");
}

#[tokio::test]
async fn a_non_string_stdin_argument_is_written_as_json() {
    let tool = configured(&STDIN_TOOL.replace("arg = \"text\"", "arg = \"n\""));
    let (is_error, output) = call(&tool, json!({"n": 42}), CancellationToken::new()).await;
    assert!(!is_error, "{output}");
    assert_eq!(output, "42|end\n");
}

#[tokio::test]
async fn a_stdin_argument_larger_than_a_pipe_is_written_whole() {
    let tool = configured(&STDIN_TOOL.replace("cat; echo '|end'", "wc -c"));
    let big = "x".repeat(1 << 20);
    let (is_error, output) = call(&tool, json!({"text": big}), CancellationToken::new()).await;
    assert!(!is_error, "{output}");
    assert_eq!(output.trim(), "1048576");
}

#[tokio::test]
async fn a_tool_whose_stdin_is_an_argument_asks_no_question() {
    let tool = configured(
        r#"
[[tools]]
name = "ask"
command = ["sh", "-c", """
read -r first
echo '@mcp-tasks {{"elicit": {{"message": "sure?"}}}}'
if read -r answer; then echo "answer: $answer"; else echo "no answer after $first"; fi
"""]
stdin = { arg = "text" }
input_schema = { type = "object", properties = { text = { type = "string" } } }
"#,
    );
    let link = TestLink::accepting(json!({"action": "accept"}));
    let client: Arc<dyn ClientLink> = link.clone();
    let (is_error, output) = call_linked(
        &tool,
        json!({"text": "input\n"}),
        CancellationToken::new(),
        Some(client),
    )
    .await;
    assert!(!is_error, "{output}");
    assert_eq!(output, "no answer after input\n");
    assert!(link.requests().is_empty(), "{:?}", link.requests());
}

// ---- max_output ----

#[tokio::test]
async fn stdout_over_max_output_keeps_the_tail_and_says_how_much_was_cut() {
    let tool = configured(
        r#"
[[tools]]
name = "loud"
command = ["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' a; printf END"]
max_output = "1000B"
"#,
    );
    let result = call_result(&tool, json!({})).await;
    assert_eq!(result["isError"], false);
    let texts = texts(&result);
    assert_eq!(texts.len(), 2, "{result:.300}");
    assert_eq!(texts[0], format!("{}END", "a".repeat(997)));
    assert_eq!(
        texts[1],
        "[mcp-tasks: 99003 bytes of stdout cut; showing the last 1000]"
    );
}

#[tokio::test]
async fn stderr_over_max_output_keeps_the_tail_and_says_how_much_was_cut() {
    let tool = configured(
        r#"
[[tools]]
name = "failing"
command = ["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' e >&2; echo LAST >&2; echo out; exit 2"]
max_output = 1000
"#,
    );
    let result = call_result(&tool, json!({})).await;
    assert_eq!(result["isError"], true);
    let texts = texts(&result);
    assert_eq!(
        texts,
        [
            format!(
                "command exited with code 2\n--- stderr ---\n{}LAST\n\n--- stdout ---\nout\n",
                "e".repeat(995)
            )
            .as_str(),
            "[mcp-tasks: 4005 bytes of stderr cut; showing the last 1000]",
        ]
    );
}

#[tokio::test]
async fn output_under_max_output_has_no_note() {
    let tool = configured(
        "[[tools]]\nname = \"quiet\"\ncommand = [\"echo\", \"12345\"]\nmax_output = \"6B\"\n",
    );
    let result = call_result(&tool, json!({})).await;
    assert_eq!(texts(&result), ["12345\n"]);
}

// ---- output = "json" ----

/// A tool printing `json` (as a shell argument, so braces stay single), with `settings`.
fn json_tool(settings: &str) -> CommandTool {
    configured(&format!(
        r#"
[[tools]]
name = "json"
command = ["sh", "-c", "echo '@mcp-tasks {{{{\"progress\": 1}}}}'; printf '%s' \"$1\"", "_", "{{json}}"]
output = "json"
input_schema = {{ type = "object", properties = {{ json = {{ type = "string" }} }} }}
{settings}
"#
    ))
}

const COUNT_SCHEMA: &str = r#"
[tools.output_schema]
type = "object"
required = ["count"]
properties = { count = { type = "integer", minimum = 0 }, name = { type = "string" } }
"#;

#[tokio::test]
async fn json_output_is_structured_content_and_text() {
    let tool = json_tool(COUNT_SCHEMA);
    let printed = "\n  {\"count\": 3, \"name\": \"x\", \"extra\": [1, null]}\n";
    let result = call_result(&tool, json!({"json": printed})).await;
    assert_eq!(
        result,
        json!({
            "content": [{"type": "text", "text": printed}],
            "structuredContent": {"count": 3, "name": "x", "extra": [1, null]},
            "isError": false,
        })
    );
}

#[tokio::test]
async fn json_output_that_does_not_parse_is_an_error_naming_the_parse_error() {
    let tool = json_tool("");
    for (printed, expected) in [
        (
            "not json",
            "stdout is not valid JSON: expected ident at line 1 column 2",
        ),
        (
            "{\"a\": 1} {\"b\": 2}",
            "stdout is not valid JSON: trailing characters at line 1 column 10",
        ),
        (
            "",
            "stdout is not valid JSON: EOF while parsing a value at line 1 column 0",
        ),
    ] {
        let result = call_result(&tool, json!({"json": printed})).await;
        assert_eq!(result["isError"], true, "{printed}");
        assert!(result.get("structuredContent").is_none(), "{result}");
        let text = texts(&result)[0];
        assert!(text.starts_with(expected), "{printed}: {text}");
    }
}

#[tokio::test]
async fn json_output_that_is_not_an_object_is_an_error() {
    let tool = json_tool("");
    for (printed, kind) in [
        ("[1, 2]", "an array"),
        ("3", "a number"),
        ("\"x\"", "a string"),
    ] {
        let result = call_result(&tool, json!({"json": printed})).await;
        assert_eq!(result["isError"], true);
        assert_eq!(
            texts(&result)[0],
            format!(
                "stdout is {kind}, not a JSON object (structuredContent must be an object)\n\
                 --- stdout ---\n{printed}"
            )
        );
    }
}

#[tokio::test]
async fn json_output_that_breaks_the_output_schema_is_an_error_naming_field_and_rule() {
    let tool = json_tool(COUNT_SCHEMA);
    let result = call_result(&tool, json!({"json": "{\"count\": \"three\"}"})).await;
    assert_eq!(result["isError"], true);
    let text = texts(&result)[0];
    assert!(
        text.starts_with(
            "stdout does not match output_schema:\n- at `/count`: \"three\" is not of type \
             \"integer\" (rule `type` at `/properties/count/type`)"
        ),
        "{text}"
    );
    let result = call_result(&tool, json!({"json": "{\"count\": -1, \"name\": 5}"})).await;
    let text = texts(&result)[0];
    assert!(
        text.contains("- at `/count`: -1 is less than the minimum of 0 (rule `minimum`"),
        "{text}"
    );
    assert!(
        text.contains("- at `/name`: 5 is not of type \"string\" (rule `type`"),
        "{text}"
    );
    let result = call_result(&tool, json!({"json": "{}"})).await;
    let text = texts(&result)[0];
    assert!(
        text.starts_with(
            "stdout does not match output_schema:\n- at the top: \"count\" is a required \
             property (rule `required` at `/required`)"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn json_output_cut_by_max_output_is_an_error() {
    let tool = json_tool("max_output = 10");
    let result = call_result(
        &tool,
        json!({"json": "{\"name\": \"far more than ten bytes\"}"}),
    )
    .await;
    assert_eq!(result["isError"], true);
    let texts = texts(&result);
    assert!(
        texts[0].starts_with(
            "stdout is not one JSON object: it is longer than max_output (10 bytes) and was cut"
        ),
        "{texts:?}"
    );
    assert_eq!(
        texts.last().copied(),
        Some("[mcp-tasks: 25 bytes of stdout cut; showing the last 10]")
    );
}

#[tokio::test]
async fn a_failing_json_tool_is_an_ordinary_failure() {
    let tool = configured(
        "[[tools]]\nname = \"j\"\ncommand = [\"sh\", \"-c\", \"echo nope; exit 4\"]\noutput = \"json\"\n",
    );
    let result = call_result(&tool, json!({})).await;
    assert_eq!(result["isError"], true);
    assert_eq!(
        texts(&result),
        ["command exited with code 4\n--- stdout ---\nnope\n"]
    );
}

// ---- ending the process group ----

const TWO_SLEEPERS: &str = "echo $$ > \"$1\"; sleep 30 & sleep 30 & wait";

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let tool = tool(
        &["sh", "-c", TWO_SLEEPERS, "_", "{pid_file}"],
        &["pid_file"],
        Some(Duration::from_secs(1)),
    );
    let started = Instant::now();
    let (is_error, text) = call(
        &tool,
        json!({"pid_file": pid_file.to_str().unwrap()}),
        CancellationToken::new(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(is_error);
    assert_eq!(text, "timed out after 1s; the process group got SIGTERM");
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn cancellation_through_the_context_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pid");
    mkfifo(&fifo);
    let tool = tool(
        &["sh", "-c", TWO_SLEEPERS, "_", "{pid_file}"],
        &["pid_file"],
        None,
    );
    let cancel = CancellationToken::new();
    let arguments = json!({"pid_file": fifo.to_str().unwrap()});
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { call(&tool, arguments, cancel).await }
    });
    let pgid = read_pid(&fifo).await;
    assert!(!group_is_gone(pgid), "the group runs until cancelled");
    cancel.cancel();
    let (is_error, text) = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap();
    assert!(is_error);
    assert_eq!(text, "cancelled");
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn a_call_cancelled_before_it_starts_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let tool = tool(&["touch", "{path}"], &["path"], None);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (is_error, text) = call(&tool, json!({"path": marker.to_str().unwrap()}), cancel).await;
    assert!(is_error);
    assert_eq!(text, "cancelled");
    assert!(!marker.exists());
}

#[tokio::test]
async fn processes_that_ignore_sigterm_are_killed_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = "trap '' TERM; echo $$ > \"$1\"; sleep 30 & wait; wait";
    let tool = tool(
        &["sh", "-c", script, "_", "{pid_file}"],
        &["pid_file"],
        Some(Duration::from_millis(300)),
    );
    let started = Instant::now();
    let (is_error, text) = call(
        &tool,
        json!({"pid_file": pid_file.to_str().unwrap()}),
        CancellationToken::new(),
    )
    .await;
    let elapsed = started.elapsed();
    assert!(is_error);
    assert_eq!(
        text,
        "timed out after 300ms; the process group got SIGTERM, then SIGKILL after the 2s grace"
    );
    assert!(
        elapsed >= Duration::from_secs(2),
        "SIGKILL came before the grace: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn kill_grace_sets_the_time_between_sigterm_and_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let tool = configured(
        r#"
[[tools]]
name = "stubborn"
command = ["sh", "-c", "trap '' TERM; echo $$ > \"$1\"; sleep 30 & wait; wait", "_", "{pid_file}"]
timeout = "200ms"
kill_grace = "300ms"
input_schema = { type = "object", properties = { pid_file = { type = "string" } } }
"#,
    );
    let started = Instant::now();
    let (is_error, text) = call(
        &tool,
        json!({"pid_file": pid_file.to_str().unwrap()}),
        CancellationToken::new(),
    )
    .await;
    let elapsed = started.elapsed();
    assert!(is_error);
    assert_eq!(
        text,
        "timed out after 200ms; the process group got SIGTERM, then SIGKILL after the 300ms grace"
    );
    assert!(elapsed >= Duration::from_millis(500), "took {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(2),
        "the 2s default grace was used: {elapsed:?}"
    );
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn a_death_by_sigterm_is_an_error_naming_it() {
    let tool = tool(
        &["sh", "-c", "echo started; kill -TERM $$; sleep 5"],
        &[],
        None,
    );
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(is_error);
    assert_eq!(
        text,
        "command was killed by signal SIGTERM\n--- stdout ---\nstarted\n"
    );
}

#[tokio::test]
async fn background_processes_left_by_a_finished_command_are_ended() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = "echo $$ > \"$1\"; sleep 30 & echo done";
    let tool = tool(
        &["sh", "-c", script, "_", "{pid_file}"],
        &["pid_file"],
        None,
    );
    let started = Instant::now();
    let (is_error, text) = call(
        &tool,
        json!({"pid_file": pid_file.to_str().unwrap()}),
        CancellationToken::new(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(!is_error, "{text}");
    assert_eq!(text, "done\n");
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

#[tokio::test]
async fn a_dropped_call_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pid");
    mkfifo(&fifo);
    let tool = tool(
        &["sh", "-c", TWO_SLEEPERS, "_", "{pid_file}"],
        &["pid_file"],
        None,
    );
    let arguments = json!({"pid_file": fifo.to_str().unwrap()});
    let running =
        tokio::spawn(async move { call(&tool, arguments, CancellationToken::new()).await });
    let pgid = read_pid(&fifo).await;
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    // The drop guard SIGKILLs the group and reaps it in the background; killing is not
    // instant, so this is a bounded wait for the kill to land.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !group_is_gone(pgid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

// ---- status messages ----

/// The tool as the server registers it: a result with `isError: true` reports a failure,
/// with its first text as the detail (the server's MCP tool wrapper, in short).
struct AsMcpTool(CommandTool);

#[async_trait]
impl Handler for AsMcpTool {
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome {
        self.0.call(arguments, ctx).await
    }
    fn reported_failure(&self, result: &Value) -> Option<String> {
        (result["isError"] == true).then(|| result["content"][0]["text"].as_str().unwrap_or("no details").to_owned())
    }
}

/// Runs `tool` with `arguments` as a task of an engine over a fresh SQLite store, and
/// returns the task's status messages in the order they were set, and its final record.
/// When the status message becomes `release_on`, a line is written to the fifo `release`.
async fn status_messages(
    tool: CommandTool,
    arguments: Value,
    release: Option<(&str, &Path)>,
) -> (Vec<String>, TaskRecord) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).expect("a store");
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
    engine.register("t", ToolRuntime::new(AsMcpTool(tool)));
    let mut feed = engine.subscribe();
    let task = engine
        .create(NewTask {
            owner: Principal::new("alice"),
            tool: "t".into(),
            arguments,
            requested_ttl_ms: None,
            error_result_fails: true,
            input_kinds: vec![],
        })
        .await
        .expect("the task is created");
    engine.start(&task).expect("the task starts");
    let mut messages: Vec<String> = Vec::new();
    loop {
        let change = tokio::time::timeout(Duration::from_secs(10), feed.recv())
            .await
            .expect("the task changes in time")
            .expect("the feed keeps up");
        let Change::Task(record) = change else {
            continue;
        };
        if record.id != task.id {
            continue;
        }
        if let Some(message) = &record.status_message
            && messages.last() != Some(message)
        {
            messages.push(message.clone());
            if let Some((on, fifo)) = release
                && on == message
            {
                let fifo = fifo.to_owned();
                tokio::task::spawn_blocking(move || std::fs::write(fifo, "go\n"))
                    .await
                    .expect("the writer task")
                    .expect("write to the fifo");
            }
        }
        if record.status().is_terminal() {
            return (messages, (*record).clone());
        }
    }
}

/// `started (pid N)`: N, or a panic.
fn started_pid(message: &str) -> u32 {
    message
        .strip_prefix("started (pid ")
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("not a start message: {message:?}"))
}

/// The messages after `started (pid N)`: the tool's `last` one, then the engine's own
/// message for a failed task, which quotes the result.
fn assert_process_then_engine(messages: &[String], last: &str) {
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1], last, "{messages:?}");
    assert!(
        messages[2].starts_with("The tool reported an error: "),
        "{messages:?}"
    );
}

#[tokio::test]
async fn status_messages_follow_the_process_from_start_to_exit() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("go");
    mkfifo(&fifo);
    let script = element(
        r#"
echo '@mcp-tasks {"status": "compiling"}'
echo '@mcp-tasks {"progress": 1, "total": 2, "message": "step 1 of 2"}'
read -r go < "$1"
echo done
"#,
    );
    let tool = tool(&["sh", "-c", &script, "_", "{fifo}"], &["fifo"], None);
    let arguments = json!({"fifo": fifo.to_str().unwrap()});
    let (messages, record) =
        status_messages(tool, arguments, Some(("step 1 of 2", fifo.as_path()))).await;
    assert_eq!(record.status().to_string(), "completed", "{record:?}");
    assert_eq!(messages.len(), 4, "{messages:?}");
    started_pid(&messages[0]);
    assert_eq!(
        messages[1..],
        ["compiling", "step 1 of 2", "exited (code 0)"],
        "{messages:?}"
    );
}

#[tokio::test]
async fn a_failing_exit_is_the_last_status_message() {
    let tool = tool(&["sh", "-c", "exit 3"], &[], None);
    let (messages, record) = status_messages(tool, json!({}), None).await;
    assert_eq!(record.status().to_string(), "failed", "{record:?}");
    started_pid(&messages[0]);
    assert_process_then_engine(&messages, "exited (code 3)");
}

#[tokio::test]
async fn a_death_by_signal_is_the_last_status_message() {
    for signal in ["TERM", "KILL"] {
        let script = format!("kill -{signal} $$");
        let tool = tool(&["sh", "-c", &script], &[], None);
        let (messages, _) = status_messages(tool, json!({}), None).await;
        started_pid(&messages[0]);
        assert_process_then_engine(&messages, &format!("killed (SIG{signal})"));
    }
}

#[tokio::test]
async fn a_timeout_is_the_last_status_message() {
    let tool = tool(&["sleep", "30"], &[], Some(Duration::from_millis(200)));
    let (messages, record) = status_messages(tool, json!({}), None).await;
    assert_eq!(record.status().to_string(), "failed", "{record:?}");
    started_pid(&messages[0]);
    assert_process_then_engine(&messages, "timed out after 200ms");
}

// ---- the line protocol ----

/// How a [`TestLink`] answers requests.
enum Answer {
    /// At once, with this.
    Now(Result<Value, ErrorObject>),
    /// Never: the request waits until the call drops it.
    Never,
}

/// A client that records what the work sends it and answers every request with `answer`.
struct TestLink {
    answer: Answer,
    progress: Mutex<Vec<Progress>>,
    notified: Mutex<Vec<(String, Value)>>,
    requests: Mutex<Vec<(String, Value)>>,
    /// Signalled on each request.
    asked: Notify,
}

impl TestLink {
    fn new(answer: Answer) -> Arc<TestLink> {
        Arc::new(TestLink {
            answer,
            progress: Mutex::default(),
            notified: Mutex::default(),
            requests: Mutex::default(),
            asked: Notify::new(),
        })
    }

    fn accepting(answer: Value) -> Arc<TestLink> {
        TestLink::new(Answer::Now(Ok(answer)))
    }

    fn progress(&self) -> Vec<Progress> {
        self.progress.lock().expect("not poisoned").clone()
    }

    fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().expect("not poisoned").clone()
    }
}

#[async_trait]
impl ClientLink for TestLink {
    fn progress(&self, progress: Progress) {
        self.progress.lock().expect("not poisoned").push(progress);
    }

    fn notify(&self, method: &str, params: Value) {
        self.notified
            .lock()
            .expect("not poisoned")
            .push((method.to_owned(), params));
    }

    async fn request(&self, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        // Recorded under the 2025-11-25 method a client would have been sent.
        let method = match kind {
            InputKind::Elicitation => "elicitation/create",
            InputKind::Sampling => "sampling/createMessage",
        };
        self.requests
            .lock()
            .expect("not poisoned")
            .push((method.to_owned(), params));
        self.asked.notify_one();
        match &self.answer {
            Answer::Now(answer) => answer.clone(),
            Answer::Never => std::future::pending().await,
        }
    }
}

/// `script` as a command element: command elements are templates, so a config author
/// doubles the braces of JSON in an inline script.
fn element(script: &str) -> String {
    script.replace('{', "{{").replace('}', "}}")
}

/// Runs `script` with `sh -c` as a plain call through `link`; `(isError, text)`.
async fn run_script(script: &str, link: &Arc<TestLink>) -> (bool, String) {
    let tool = tool(&["sh", "-c", &element(script)], &[], None);
    let link: Arc<dyn ClientLink> = link.clone();
    call_linked(&tool, json!({}), CancellationToken::new(), Some(link)).await
}

/// A script that asks `Delete 3 files?` and prints the answer line it reads from stdin.
const ASK_AND_ECHO: &str = r#"
echo '@mcp-tasks {"elicit": {"message": "Delete 3 files?", "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}}}'
read -r answer
echo "answer: $answer"
"#;

/// The answer line a script built on [`ASK_AND_ECHO`] printed, as JSON.
fn echoed_answer(text: &str) -> Value {
    let line = text
        .strip_prefix("answer: ")
        .and_then(|rest| rest.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("unexpected output: {text:?}"));
    serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line:?}"))
}

#[test]
fn the_marker_is_the_documented_one() {
    assert_eq!(MARKER, "@mcp-tasks ");
}

#[tokio::test]
async fn progress_lines_reach_the_client_with_their_numbers() {
    let script = r#"
echo '@mcp-tasks {"progress": 1, "total": 3}'
echo '@mcp-tasks {"progress": 2, "total": 3, "message": "step 2"}'
echo '@mcp-tasks {"progress": 3.5}'
echo done
"#;
    let link = TestLink::new(Answer::Never);
    let (is_error, text) = run_script(script, &link).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "done\n");
    let progress = |progress, total, message: Option<&str>| Progress {
        progress,
        total,
        message: message.map(str::to_owned),
    };
    assert_eq!(
        link.progress(),
        [
            progress(1.0, Some(3.0), None),
            progress(2.0, Some(3.0), Some("step 2")),
            progress(3.5, None, None),
        ]
    );
    assert!(link.requests().is_empty());
    assert!(link.notified.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_status_line_is_kept_out_of_the_output() {
    let script = r#"
echo before
echo '@mcp-tasks {"status": "compiling…"}'
echo after
"#;
    let link = TestLink::new(Answer::Never);
    let (is_error, text) = run_script(script, &link).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "before\nafter\n");
    assert!(link.progress().is_empty());
}

#[tokio::test]
async fn an_elicitation_asks_the_client_with_the_object_given_and_the_answer_arrives_on_stdin() {
    let accepted = json!({"action": "accept", "content": {"confirm": true}});
    let link = TestLink::accepting(accepted.clone());
    let (is_error, text) = run_script(ASK_AND_ECHO, &link).await;
    assert!(!is_error, "{text}");
    assert_eq!(echoed_answer(&text), accepted);
    let asked = json!({
        "message": "Delete 3 files?",
        "requestedSchema": {
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"],
        },
    });
    assert_eq!(link.requests(), [("elicitation/create".to_owned(), asked)]);
}

#[tokio::test]
async fn a_decline_reaches_the_script_as_a_decline() {
    let link = TestLink::accepting(json!({"action": "decline"}));
    let (is_error, text) = run_script(ASK_AND_ECHO, &link).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "answer: {\"action\":\"decline\"}\n");
}

#[tokio::test]
async fn a_failing_request_reaches_the_script_as_an_error_action() {
    let failure = ErrorObject {
        code: -32601,
        message: "the client cannot elicit".into(),
        data: None,
    };
    let link = TestLink::new(Answer::Now(Err(failure)));
    let (is_error, text) = run_script(ASK_AND_ECHO, &link).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        echoed_answer(&text),
        json!({"action": "error", "error": {"code": -32601, "message": "the client cannot elicit"}})
    );
    assert_eq!(link.requests().len(), 1);
}

#[tokio::test]
async fn a_question_without_a_client_is_answered_with_an_error_action() {
    let tool = tool(&["sh", "-c", &element(ASK_AND_ECHO)], &[], None);
    let (is_error, text) = call(&tool, json!({}), CancellationToken::new()).await;
    assert!(!is_error, "{text}");
    let answer = echoed_answer(&text);
    assert_eq!(answer["action"], "error");
    assert_eq!(answer["error"]["code"], -32603);
}

#[tokio::test]
async fn an_invalid_marker_line_is_ignored_and_kept_out_of_the_output() {
    let script = r#"
echo a
echo '@mcp-tasks {not json'
echo '@mcp-tasks {"unknown": 1}'
echo '@mcp-tasks {"progress": "three"}'
echo '@mcp-tasks {"progress": 1, "status": "two kinds"}'
echo '@mcp-tasks [1, 2]'
echo '@mcp-tasks '
echo '@mcp-tasks {"progress": 1}'
echo b
"#;
    let link = TestLink::new(Answer::Never);
    let (is_error, text) = run_script(script, &link).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "a\nb\n");
    let progress: Vec<f64> = link.progress().iter().map(|p| p.progress).collect();
    assert_eq!(progress, [1.0]);
}

#[tokio::test]
async fn output_lines_around_marker_lines_keep_their_order() {
    let script = r#"
for i in 1 2 3 4 5; do
  echo "line $i"
  echo "@mcp-tasks {\"progress\": $i, \"total\": 5}"
done
echo '@mcp-tasks{"progress": 9}'
echo ' @mcp-tasks {"progress": 9}'
printf 'no newline at the end'
"#;
    let link = TestLink::new(Answer::Never);
    let (is_error, text) = run_script(script, &link).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "line 1\nline 2\nline 3\nline 4\nline 5\n@mcp-tasks{\"progress\": 9}\n \
         @mcp-tasks {\"progress\": 9}\nno newline at the end"
    );
    let progress: Vec<f64> = link.progress().iter().map(|p| p.progress).collect();
    assert_eq!(progress, [1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[tokio::test]
async fn output_and_answers_interleave_in_order() {
    let script = r#"
echo one
echo '@mcp-tasks {"elicit": {"message": "first?"}}'
read -r first
echo "first: $first"
echo '@mcp-tasks {"elicit": {"message": "second?"}}'
read -r second
echo "second: $second"
"#;
    let link = TestLink::accepting(json!({"action": "cancel"}));
    let (is_error, text) = run_script(script, &link).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "one\nfirst: {\"action\":\"cancel\"}\nsecond: {\"action\":\"cancel\"}\n"
    );
    let messages: Vec<Value> = link
        .requests()
        .into_iter()
        .map(|(_, params)| params["message"].clone())
        .collect();
    assert_eq!(messages, ["first?", "second?"]);
}

#[tokio::test]
async fn a_command_that_asks_and_exits_without_reading_still_completes() {
    let script = r#"echo '@mcp-tasks {"elicit": {"message": "anyone?"}}'; echo bye"#;
    let link = TestLink::accepting(json!({"action": "accept", "content": {}}));
    let (is_error, text) = run_script(script, &link).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "bye\n");
}

#[tokio::test]
async fn cancelling_while_the_command_waits_for_an_answer_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pid");
    mkfifo(&fifo);
    let script = r#"
echo $$ > "$1"
sleep 30 &
echo '@mcp-tasks {"elicit": {"message": "wait for me?"}}'
read -r answer
echo "answer: $answer"
"#;
    let script = element(script);
    let tool = tool(
        &["sh", "-c", &script, "_", "{pid_file}"],
        &["pid_file"],
        None,
    );
    let link = TestLink::new(Answer::Never);
    let cancel = CancellationToken::new();
    let arguments = json!({"pid_file": fifo.to_str().unwrap()});
    let running = tokio::spawn({
        let cancel = cancel.clone();
        let link: Arc<dyn ClientLink> = link.clone();
        async move { call_linked(&tool, arguments, cancel, Some(link)).await }
    });
    let pgid = read_pid(&fifo).await;
    tokio::time::timeout(Duration::from_secs(10), link.asked.notified())
        .await
        .expect("the question reaches the client");
    assert!(!group_is_gone(pgid), "the group waits for the answer");
    cancel.cancel();
    let (is_error, text) = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap();
    assert!(is_error);
    assert_eq!(text, "cancelled");
    assert!(group_is_gone(pgid), "group {pgid} is still there");
}

/// The example of the README's "Talking back" section, read from the README itself so that
/// the two cannot drift apart.
fn readme_example() -> String {
    let readme = include_str!("../../../README.md");
    let start = readme
        .find("[[tools]]\nname = \"clean_dir\"")
        .expect("the README has the clean_dir example");
    let block = &readme[start..];
    block[..block.find("\n```").expect("the example's code block ends")].to_owned()
}

/// Runs the README's example on a directory of three files, with `link` as the client.
async fn run_readme_example(link: &Arc<TestLink>) -> (tempfile::TempDir, bool, String) {
    let config = mcp_tasks_config::Config::parse(&readme_example()).expect("the example parses");
    let tool = CommandTool::new(&config.tools[0]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    for name in ["a", "b", "c"] {
        std::fs::write(dir.path().join(name), name).expect("write a file");
    }
    let arguments = json!({"dir": dir.path().to_str().expect("a UTF-8 path")});
    let client: Arc<dyn ClientLink> = link.clone();
    let (is_error, text) =
        call_linked(&tool, arguments, CancellationToken::new(), Some(client)).await;
    (dir, is_error, text)
}

#[tokio::test]
async fn the_readme_example_deletes_after_a_yes() {
    let link = TestLink::accepting(json!({"action": "accept", "content": {"confirm": true}}));
    let (dir, is_error, text) = run_readme_example(&link).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "Deleted 3 files\n");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let progress: Vec<(f64, Option<String>)> = link
        .progress()
        .into_iter()
        .map(|p| (p.progress, p.message))
        .collect();
    assert_eq!(
        progress,
        [
            (1.0, Some("found 3 files".to_owned())),
            (2.0, Some("deleting".to_owned())),
            (3.0, None),
        ]
    );
    let (method, params) = &link.requests()[0];
    assert_eq!(method, "elicitation/create");
    assert_eq!(params["message"], "Delete every file in the directory?");
    assert_eq!(params["requestedSchema"]["required"], json!(["confirm"]));
}

#[tokio::test]
async fn the_readme_example_deletes_nothing_after_a_decline() {
    let link = TestLink::accepting(json!({"action": "decline"}));
    let (dir, is_error, text) = run_readme_example(&link).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "Nothing deleted ({\"action\":\"decline\"})\n");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
}
