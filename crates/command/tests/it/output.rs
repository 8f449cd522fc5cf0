//! `max_output` (the tail is kept, the cut is noted) and `output = "json"` (structured content,
//! `output_schema`).

use super::*;

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
