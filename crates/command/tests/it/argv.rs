//! argv: `{name}` placeholders and how arguments of each JSON type arrive.

use super::*;

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
