//! The environment of a tool: no leak of the server's, `inherit_env`, `env` values with
//! placeholders; and `cwd`.

use super::*;

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
        .args(["--exact", &in_this_module(test), "--nocapture"])
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

/// The path of the test `name` of this module, as `--exact` wants it
/// (`environment::name`).
fn in_this_module(name: &str) -> String {
    let module = module_path!()
        .split_once("::")
        .map_or("", |(_, module)| module);
    format!("{module}::{name}")
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
