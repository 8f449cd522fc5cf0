//! The line protocol: progress, status lines, questions to the user answered on stdin, bad
//! lines, order, and the README's example.

use super::*;

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
    let readme = include_str!("../../../../README.md");
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
