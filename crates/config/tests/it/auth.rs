//! `[[server.auth.tokens]]` with `token_env`: the token is read from the environment when
//! the configuration loads.
//!
//! A test cannot set a variable in its own process (`set_var` is unsafe, and unsafe code is
//! forbidden), so each test here runs itself again in a child that has the variables.

use std::process::Command;

use mcp_tasks_config::{Auth, Config, ConfigError, Problem};

/// Set in the child runs, so that they do the work instead of spawning again.
const CHILD: &str = "MCP_TASKS_CONFIG_AUTH_TEST_CHILD";

/// In the parent: runs the test `name` again in a child with `vars` set, checks that it
/// passed, and returns false. In the child: returns true, and the test goes on.
fn in_child(name: &str, vars: &[(&str, &str)]) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = Command::new(exe)
        .args([
            "--exact",
            &in_this_module(name),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .envs(vars.iter().copied())
        .output()
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
    false
}

/// The path of the test `name` of this module, as `--exact` wants it (`auth::name`).
fn in_this_module(name: &str) -> String {
    let module = module_path!()
        .split_once("::")
        .map_or("", |(_, module)| module);
    format!("{module}::{name}")
}

fn hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

const ALICE_VAR: &str = "MCP_TASKS_TEST_TOKEN_ALICE";
const BOB_VAR: &str = "MCP_TASKS_TEST_TOKEN_BOB";
const EMPTY_VAR: &str = "MCP_TASKS_TEST_TOKEN_EMPTY";

#[test]
fn token_env_and_token_sha256_both_authenticate_their_principals() {
    if !in_child(
        "token_env_and_token_sha256_both_authenticate_their_principals",
        &[(ALICE_VAR, "alice-s3cret"), (BOB_VAR, "bob-s3cret")],
    ) {
        return;
    }
    let text = format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[server.auth.tokens]]
principal = "alice"
token_env = "{ALICE_VAR}"

[[server.auth.tokens]]
principal = "bob"
token_env = "{BOB_VAR}"

[[server.auth.tokens]]
principal = "carol"
token_sha256 = "{}"
"#,
        hex(&Auth::digest("carol-s3cret"))
    );
    let config = Config::parse(&text).unwrap();
    let auth = config.server.auth();
    assert!(auth.is_enabled());
    assert_eq!(auth.principal_for("alice-s3cret"), Some("alice"));
    assert_eq!(auth.principal_for("bob-s3cret"), Some("bob"));
    assert_eq!(auth.principal_for("carol-s3cret"), Some("carol"));
    assert_eq!(auth.principal_for("alice-s3cret\n"), None);
    assert_eq!(auth.principal_for("ALICE-S3CRET"), None);
    assert_eq!(auth.principal_for(ALICE_VAR), None);
    assert_eq!(auth.principal_for(""), None);
    assert_eq!(
        auth.principals().collect::<Vec<_>>(),
        ["alice", "bob", "carol"]
    );
    // Only digests are kept: no trace of the token in what the config shows of itself.
    let shown = format!("{config:?}");
    assert!(!shown.contains("s3cret"), "{shown}");

    // The same through a file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    std::fs::write(&path, &text).unwrap();
    let loaded = Config::load(&path).unwrap();
    assert_eq!(
        loaded.server.auth().principal_for("bob-s3cret"),
        Some("bob")
    );
    assert_eq!(loaded, config);
}

#[test]
fn an_empty_token_variable_is_an_error_naming_it_and_its_line() {
    if !in_child(
        "an_empty_token_variable_is_an_error_naming_it_and_its_line",
        &[(ALICE_VAR, "alice-s3cret"), (EMPTY_VAR, "")],
    ) {
        return;
    }
    let text = format!(
        "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"{ALICE_VAR}\"\n\n\
         [[server.auth.tokens]]\nprincipal = \"bob\"\ntoken_env = \"{EMPTY_VAR}\"\n"
    );
    let err = Config::parse(&text).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "line 7: server.auth.tokens: principal `bob`: environment variable `{EMPTY_VAR}` \
             (token_env) is empty"
        )
    );
    let ConfigError::Invalid { line, problem, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(line, Some(7));
    assert!(
        matches!(&problem, Problem::TokenEnv { variable, .. } if variable == EMPTY_VAR),
        "{problem:?}"
    );
}

#[test]
fn two_principals_with_the_same_token_in_the_environment_are_an_error() {
    if !in_child(
        "two_principals_with_the_same_token_in_the_environment_are_an_error",
        &[(ALICE_VAR, "shared"), (BOB_VAR, "shared")],
    ) {
        return;
    }
    let text = format!(
        "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"{ALICE_VAR}\"\n\n\
         [[server.auth.tokens]]\nprincipal = \"bob\"\ntoken_env = \"{BOB_VAR}\"\n"
    );
    let message = Config::parse(&text).unwrap_err().to_string();
    assert_eq!(
        message,
        "line 6: server.auth.tokens: the token of principal `bob` is also the token of \
         principal `alice` (line 2)"
    );
}
