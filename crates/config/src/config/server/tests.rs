//! Tests of `[server]`: each setting's default, its check, and the line its problem names.

use super::*;
use crate::config::Config;
use crate::config::tests::invalid;

// ---- listen, allowed_hosts, allowed_origins, max_body ----

fn server(text: &str) -> ServerConfig {
    Config::parse(text).unwrap().server
}

#[test]
fn inline_wait_defaults_to_a_second_and_is_checked_with_its_line() {
    assert_eq!(server("").inline_wait, Duration::from_secs(1));
    assert_eq!(server("[server]\ninline_wait = \"250ms\"\n").inline_wait, Duration::from_millis(250));
    let (line, _, message) = invalid("[server]\nname = \"x\"\ninline_wait = \"soon\"\n");
    assert_eq!(line, Some(3));
    assert!(message.contains("server.inline_wait"), "{message}");
}

#[test]
fn heartbeat_and_sync_wait_default_to_15s_and_45s_turn_off_with_zero_and_are_checked_with_their_line() {
    let defaults = server("");
    assert_eq!((defaults.heartbeat, defaults.sync_wait), (Duration::from_secs(15), Duration::from_secs(45)));
    assert_eq!(defaults.task_tools, TaskToolNames::default());
    let off = server("[server]\nheartbeat = \"0\"\nsync_wait = \"0s\"\n");
    assert_eq!((off.heartbeat, off.sync_wait), (Duration::ZERO, Duration::ZERO));
    for (text, field) in [("heartbeat = \"often\"", "server.heartbeat"), ("sync_wait = \"-1s\"", "server.sync_wait")] {
        let (line, _, message) = invalid(&format!("[server]\nname = \"x\"\n{text}\n"));
        assert_eq!(line, Some(3), "{message}");
        assert!(message.contains(field), "{message}");
    }
}

#[test]
fn task_tool_names_are_checked_with_their_line() {
    let renamed = server("[server.task_tools]\nresult = \"fetch_job\"\n").task_tools;
    assert_eq!((renamed.status.as_str(), renamed.result.as_str()), ("task_status", "fetch_job"));
    for (text, reason) in [
        ("status = \"\"", "1 to 128 characters"),
        ("status = \"job status\"", "only ASCII letters"),
        ("cancel = \"task_status\"", "also the name of server.task_tools.status"),
    ] {
        let (line, problem, message) = invalid(&format!("[server.task_tools]\n{text}\n"));
        assert_eq!(line, Some(2), "{message}");
        assert!(matches!(problem, Problem::TaskToolName { .. }), "{problem:?}");
        assert!(message.contains(reason), "{message}");
    }
    let (_, _, message) = invalid("[server.task_tools]\nrestart = \"x\"\n");
    assert!(message.contains("unknown field"), "{message}");
}

#[test]
fn a_tool_named_like_a_helper_tool_is_refused_unless_handoffs_are_off() {
    let tool = "[[tools]]\nname = \"task_result\"\ncommand = [\"true\"]\n";
    let (line, problem, message) = invalid(tool);
    assert_eq!(line, Some(2));
    assert_eq!(problem, Problem::TaskToolClash { name: "task_result".into() });
    assert!(message.contains("[server.task_tools]"), "{message}");
    Config::parse(&format!("[server]\nsync_wait = \"0\"\n{tool}")).expect("no helpers, no clash");
    Config::parse(&format!("[server.task_tools]\nresult = \"job_result\"\n{tool}")).expect("renamed helper");
}

#[test]
fn lease_defaults_to_thirty_seconds_and_is_checked_with_its_line() {
    assert_eq!(server("").lease, Duration::from_secs(30));
    assert_eq!(server("[server]\nlease = \"5s\"\n").lease, Duration::from_secs(5));
    let (line, _, message) = invalid("[server]\nlease = \"soon\"\n");
    assert_eq!(line, Some(2));
    assert!(message.contains("server.lease"), "{message}");
}

#[test]
fn retry_wait_defaults_to_ten_minutes_and_is_checked_with_its_line() {
    assert_eq!(server("").retry_wait, Duration::from_secs(600));
    assert_eq!(server("[server]\nretry_wait = \"90s\"\n").retry_wait, Duration::from_secs(90));
    let (line, _, message) = invalid("[server]\nretry_wait = \"later\"\n");
    assert_eq!(line, Some(2));
    assert!(message.contains("server.retry_wait"), "{message}");
}

#[test]
fn listen_takes_ipv4_and_ipv6_socket_addresses() {
    let v4 = server("[server]\nlisten = \"0.0.0.0:80\"\n");
    assert_eq!(v4.listen, "0.0.0.0:80".parse::<SocketAddr>().unwrap());
    let v6 = server("[server]\nlisten = \"[::1]:8765\"\n");
    assert_eq!(v6.listen, "[::1]:8765".parse::<SocketAddr>().unwrap());
}

#[test]
fn a_bad_listen_address_is_an_error_with_its_line() {
    for bad in [
        "localhost:8765",
        "127.0.0.1",
        "127.0.0.1:99999",
        "",
        "::1:80",
    ] {
        let (line, problem, message) =
            invalid(&format!("[server]\nname = \"x\"\nlisten = \"{bad}\"\n"));
        assert_eq!(line, Some(3), "{bad}");
        assert!(
            matches!(&problem, Problem::Listen { value, .. } if value == bad),
            "{problem:?}"
        );
        assert!(
            message.starts_with(&format!(
                "line 3: server.listen: invalid socket address `{bad}`"
            )),
            "{message}"
        );
    }
    let (line, problem, _) = invalid("[server]\nlisten = 8765\n");
    assert_eq!(line, Some(2));
    assert!(matches!(problem, Problem::Toml(_)));
}

#[test]
fn allowed_hosts_and_origins_parse() {
    let config = server(
        "[server]\nallowed_hosts = [\"a.example\", \"b.example:8080\", \"[fd00::1]\"]\n\
         allowed_origins = [\"https://a.example\", \"http://b.example:8080\"]\n",
    );
    assert_eq!(
        config.allowed_hosts,
        ["a.example", "b.example:8080", "[fd00::1]"]
    );
    assert_eq!(
        config.allowed_origins,
        ["https://a.example", "http://b.example:8080"]
    );
    assert!(config.allows_host("A.example:1234"));
    assert!(config.allows_host("[fd00::1]:8765"));
    assert!(config.allows_origin("https://a.example:443"));
    assert!(!config.allows_origin("http://a.example"));
}

#[test]
fn a_bad_allowed_host_is_an_error_with_its_line() {
    let text =
        "[server]\nallowed_hosts = [\n  \"ok.example\",\n  \"https://bad.example\",\n]\n";
    let (line, problem, message) = invalid(text);
    assert_eq!(line, Some(4));
    assert!(
        matches!(&problem, Problem::AllowedHost { value, .. } if value == "https://bad.example"),
        "{problem:?}"
    );
    assert!(
        message.starts_with("line 4: server.allowed_hosts: invalid host `https://bad.example`"),
        "{message}"
    );
    let (line, _, _) = invalid("[server]\n\nallowed_hosts = [\"a b\"]\n");
    assert_eq!(line, Some(3));
}

#[test]
fn a_bad_allowed_origin_is_an_error_with_its_line() {
    let text = "[server]\nallowed_origins = [\n  \"https://ok.example\",\n  \"https://bad.example/\",\n]\n";
    let (line, problem, message) = invalid(text);
    assert_eq!(line, Some(4));
    assert!(
        matches!(&problem, Problem::AllowedOrigin { value, .. } if value == "https://bad.example/"),
        "{problem:?}"
    );
    assert!(
        message.starts_with(
            "line 4: server.allowed_origins: invalid origin `https://bad.example/`"
        ),
        "{message}"
    );
    let (line, _, _) = invalid("[server]\nallowed_origins = [\"app.example.com\"]\n");
    assert_eq!(line, Some(2));
}

#[test]
fn max_body_takes_sizes_with_units_and_plain_numbers() {
    for (written, bytes) in [
        ("\"4MiB\"", 4 << 20),
        ("\"512KiB\"", 512 << 10),
        ("\"512 KiB\"", 512 << 10),
        ("\"1000000\"", 1_000_000),
        ("1000000", 1_000_000),
        ("\"2MB\"", 2_000_000),
        ("\"1GiB\"", 1 << 30),
        ("\"100B\"", 100),
    ] {
        assert_eq!(
            server(&format!("[server]\nmax_body = {written}\n")).max_body,
            bytes,
            "{written}"
        );
    }
}

#[test]
fn a_bad_max_body_is_an_error_with_its_line() {
    for bad in [
        "\"4 megs\"",
        "\"1.5MiB\"",
        "\"0\"",
        "0",
        "-5",
        "\"\"",
        "\"MiB\"",
    ] {
        let (line, problem, message) =
            invalid(&format!("[server]\nname = \"x\"\nmax_body = {bad}\n"));
        assert_eq!(line, Some(3), "{bad}");
        assert!(
            matches!(&problem, Problem::Size { field, .. } if field == "server.max_body"),
            "{problem:?}"
        );
        assert!(
            message.starts_with("line 3: server.max_body: invalid size"),
            "{message}"
        );
    }
    let (line, problem, message) = invalid("[server]\nmax_body = true\n");
    assert_eq!(line, Some(2));
    assert!(matches!(problem, Problem::Toml(_)), "{problem:?}");
    assert!(message.contains("a size such as"), "{message}");
}

// ---- [[server.auth.tokens]] ----

const HUNTER2: &str = "f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7";

#[test]
fn token_sha256_entries_map_tokens_to_principals() {
    let text = format!(
        "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\n\n\
         [[server.auth.tokens]]\nprincipal = \"bob\"\ntoken_sha256 = \"{}\"\n\n\
         [[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{}\"\n",
        hex(&Auth::digest("bobs-token")),
        hex(&Auth::digest("alices-laptop")),
    );
    let config = Config::parse(&text).unwrap();
    let auth = config.server.auth();
    assert!(auth.is_enabled());
    assert_eq!(auth.principal_for("hunter2"), Some("alice"));
    assert_eq!(auth.principal_for("bobs-token"), Some("bob"));
    assert_eq!(auth.principal_for("alices-laptop"), Some("alice"));
    assert_eq!(auth.principal_for("wrong"), None);
    assert_eq!(auth.principal_for(HUNTER2), None);
    assert_eq!(
        auth.principals().collect::<Vec<_>>(),
        ["alice", "bob", "alice"]
    );
}

#[test]
fn an_empty_tokens_list_leaves_auth_off() {
    assert!(!server("[server.auth]\ntokens = []\n").auth.is_enabled());
    assert!(!server("[server.auth]\n").auth.is_enabled());
}

fn hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn both_token_sha256_and_token_env_is_an_error_with_its_line() {
    let text = format!(
        "[server]\n\n[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\ntoken_env = \"X\"\n"
    );
    let (line, problem, message) = invalid(&text);
    assert_eq!(line, Some(4));
    assert!(
        matches!(problem, Problem::TokenSource { .. }),
        "{problem:?}"
    );
    assert_eq!(
        message,
        "line 4: server.auth.tokens: principal `alice`: give exactly one of token_sha256 \
         and token_env, not both"
    );
}

#[test]
fn neither_token_sha256_nor_token_env_is_an_error_with_its_line() {
    let text = format!(
        "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\n\n\
         [[server.auth.tokens]]\nprincipal = \"bob\"\n"
    );
    let (line, problem, message) = invalid(&text);
    assert_eq!(line, Some(6));
    assert!(
        matches!(problem, Problem::TokenSource { .. }),
        "{problem:?}"
    );
    assert!(
        message.ends_with(
            "principal `bob`: give exactly one of token_sha256 and token_env, not neither"
        ),
        "{message}"
    );
}

#[test]
fn bad_hex_is_an_error_with_its_line() {
    for bad in [
        &HUNTER2[..63],
        "hunter2",
        &format!("{}z", &HUNTER2[..63]),
        "",
    ] {
        let text = format!(
            "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{bad}\"\n"
        );
        let (line, problem, message) = invalid(&text);
        assert_eq!(line, Some(3), "{bad}");
        assert!(
            matches!(problem, Problem::TokenSha256 { .. }),
            "{problem:?}"
        );
        assert!(
            message
                .starts_with("line 3: server.auth.tokens: principal `alice`: token_sha256: "),
            "{message}"
        );
    }
}

#[test]
fn the_digest_of_the_empty_token_is_refused() {
    let empty = hex(&Auth::digest(""));
    let text =
        format!("[[server.auth.tokens]]\nprincipal = \"a\"\ntoken_sha256 = \"{empty}\"\n");
    let (line, _, message) = invalid(&text);
    assert_eq!(line, Some(3));
    assert!(
        message.ends_with("is the SHA-256 of the empty string"),
        "{message}"
    );
}

#[test]
fn an_empty_principal_is_an_error_with_its_line() {
    for principal in ["", "  "] {
        let text = format!(
            "[[server.auth.tokens]]\ntoken_sha256 = \"{HUNTER2}\"\nprincipal = \"{principal}\"\n"
        );
        let (line, problem, message) = invalid(&text);
        assert_eq!(line, Some(3));
        assert_eq!(problem, Problem::EmptyPrincipal);
        assert_eq!(
            message,
            "line 3: server.auth.tokens: principal must not be empty"
        );
    }
    let (_, _, message) = invalid(&format!(
        "[[server.auth.tokens]]\ntoken_sha256 = \"{HUNTER2}\"\n"
    ));
    assert!(message.contains("missing field `principal`"), "{message}");
}

#[test]
fn a_missing_token_variable_is_an_error_naming_it_and_its_line() {
    let text = "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"MCP_TASKS_TEST_SURELY_UNSET\"\n";
    let (line, problem, message) = invalid(text);
    assert_eq!(line, Some(3));
    assert_eq!(
        problem,
        Problem::TokenEnv {
            principal: "alice".into(),
            variable: "MCP_TASKS_TEST_SURELY_UNSET".into(),
            reason: "is not set".into(),
        }
    );
    assert_eq!(
        message,
        "line 3: server.auth.tokens: principal `alice`: environment variable \
         `MCP_TASKS_TEST_SURELY_UNSET` (token_env) is not set"
    );
    for bad in ["", "A=B"] {
        let text =
            format!("[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"{bad}\"\n");
        let (line, _, message) = invalid(&text);
        assert_eq!(line, Some(3));
        assert!(
            message.ends_with("is not a valid variable name"),
            "{message}"
        );
    }
}

#[test]
fn the_same_token_twice_is_an_error_naming_both_lines() {
    let text = format!(
        "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\n\n\
         [[server.auth.tokens]]\nprincipal = \"bob\"\ntoken_sha256 = \"{}\"\n",
        HUNTER2.to_ascii_uppercase()
    );
    let (line, problem, message) = invalid(&text);
    assert_eq!(line, Some(6));
    assert_eq!(
        problem,
        Problem::DuplicateToken {
            principal: "bob".into(),
            first_principal: "alice".into(),
            first_line: 2
        }
    );
    assert!(message.starts_with("line 6: "), "{message}");
}

#[test]
fn an_unknown_key_in_a_token_entry_is_an_error_with_its_line() {
    let text = format!(
        "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\ntoken = \"hunter2\"\n"
    );
    let (line, _, message) = invalid(&text);
    assert_eq!(line, Some(4));
    assert!(message.contains("unknown field `token`"), "{message}");
    let (line, _, message) = invalid("[server.auth]\ntokenz = []\n");
    assert_eq!(line, Some(2));
    assert!(message.contains("unknown field `tokenz`"), "{message}");
}

#[test]
fn debug_output_holds_no_digest() {
    let config = Config::parse(&format!(
        "[[server.auth.tokens]]\nprincipal = \"alice\"\ntoken_sha256 = \"{HUNTER2}\"\n"
    ))
    .unwrap();
    let shown = format!("{config:?}");
    assert!(shown.contains("alice"), "{shown}");
    assert!(!shown.contains("245, 47"), "{shown}");
}

#[test]
fn hostile_client_limits_parse_with_their_defaults_and_poll_rate_zero_is_off() {
    let defaults = Config::parse("").unwrap().server;
    assert_eq!((defaults.poll_rate, defaults.poll_burst), (50, 100));
    assert_eq!((defaults.max_sessions_per_principal, defaults.max_streams_per_session), (64, 32));
    assert_eq!((defaults.max_stream_events, defaults.header_timeout), (1000, Duration::from_secs(10)));
    let config = Config::parse(
        "[server]\npoll_rate = 0\npoll_burst = 5\nmax_sessions_per_principal = 2\n\
         max_streams_per_session = 3\nmax_stream_events = 4\nheader_timeout = \"2s\"\n",
    )
    .unwrap()
    .server;
    assert_eq!((config.poll_rate, config.poll_burst, config.max_sessions_per_principal), (0, 5, 2));
    assert_eq!((config.max_streams_per_session, config.max_stream_events), (3, 4));
    assert_eq!(config.header_timeout, Duration::from_secs(2));
    let (line, _, message) = invalid("[server]\npoll_rate = -1\n");
    assert_eq!((line, message.as_str()), (Some(2), "line 2: server.poll_rate: invalid value -1: must be at least 0"));
}

#[test]
fn server_limits_parse_and_are_at_least_one() {
    let config = Config::parse(
        "[server]\nmax_running = 4\nmax_running_per_principal = 1\n\
         max_retained_per_principal = 100\n",
    )
    .unwrap();
    assert_eq!(config.server.max_running, 4);
    assert_eq!(config.server.max_running_per_principal, 1);
    assert_eq!(config.server.max_retained_per_principal, 100);
    for key in [
        "max_running",
        "max_running_per_principal",
        "max_retained_per_principal",
        "poll_burst",
        "max_sessions_per_principal",
        "max_streams_per_session",
        "max_stream_events",
        "max_listens_per_principal",
    ] {
        let (line, problem, message) = invalid(&format!("[server]\nname = \"x\"\n{key} = 0\n"));
        assert_eq!(line, Some(3));
        assert_eq!(
            problem,
            Problem::Count {
                field: format!("server.{key}"),
                value: 0,
                reason: "must be at least 1".into()
            }
        );
        assert_eq!(
            message,
            format!("line 3: server.{key}: invalid value 0: must be at least 1")
        );
    }
}
