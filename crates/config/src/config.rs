//! The TOML configuration file: `[server]` settings and the `[[tools]]` it serves.
//!
//! Parsing goes through private `Raw*` structs that keep the spans of the values we check
//! ourselves, so that every error can name the line it is about. The public types hold
//! only checked values: durations are [`Duration`](std::time::Duration)s, sizes are byte
//! counts, the listen address is a [`SocketAddr`](std::net::SocketAddr), tokens are
//! SHA-256 digests inside an [`Auth`](crate::Auth), schemas are JSON, and every placeholder
//! of every command names a property of its tool's schema.
//!
//! The parts: `server` (the `[server]` table and its check), `tool` (a `[[tools]]` entry
//! and its check), `problem` ([`ConfigError`] and [`Problem`]), `lines` (spans to line
//! numbers, and the checks of durations, sizes and counts that name them).

mod lines;
mod oauth;
mod problem;
mod server;
mod shape;
mod tool;
mod webhook;
mod upstream;

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use lines::Lines;
pub use problem::{ConfigError, Problem};
use server::RawServer;
pub use server::{ServerConfig, TaskToolNames, TracingConfig};
pub use webhook::{WEBHOOK_EVENTS, Webhook};
pub use oauth::{JwksSource, OAUTH_PRINCIPAL_PREFIX, OAuthConfig};
pub use tool::{InheritEnv, OutputFormat, RestartPolicy, Stdin, TaskSupport, ToolConfig};
pub use upstream::UpstreamToolConfig;

/// The whole configuration of `mcp-tasks serve`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// The `[server]` table.
    pub server: ServerConfig,
    /// The `[[tools]]` array, in file order.
    pub tools: Vec<ToolConfig>,
    /// `[upstream.tools.NAME]`: settings of the upstream server's tools, by name (read by
    /// `mcp-tasks proxy`; `serve` has no upstream).
    pub upstream_tools: std::collections::BTreeMap<String, UpstreamToolConfig>,
}

impl Config {
    /// Reads and checks the configuration file at `path`. A relative `cwd` of a tool is
    /// taken relative to the file's directory.
    ///
    /// # Errors
    /// [`ConfigError::Read`] if the file cannot be read, [`ConfigError::Invalid`] (naming
    /// the file and, where known, the line) if it is not a valid configuration: the
    /// problem on the earliest line (see [`Config::check`] for all of them).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Config::check(path).map_err(first_problem)
    }

    /// Reads and checks the configuration file at `path`, like [`Config::load`], but
    /// reports every problem found, in line order.
    ///
    /// Checking goes as far as it can: TOML that does not parse is one problem on its own,
    /// since nothing after it can be read. A mistake of the configuration's shape (an unknown
    /// key or value, a value of the wrong type) is reported, with the nearest valid name for
    /// an unknown one, and set aside, and the reading goes on. Then every setting of the
    /// `[server]` table and of each tool is checked, each problem reported, and every
    /// duplicate tool name.
    ///
    /// # Errors
    /// The problems, at least one: a [`ConfigError::Read`] alone, or
    /// [`ConfigError::Invalid`]s naming the file.
    pub fn check(path: &Path) -> Result<Config, Vec<ConfigError>> {
        Config::check_partly(path).map_err(|(_, problems)| problems)
    }

    /// [`Config::check`], and with its problems the configuration as far as it could be read
    /// (`None` when the file could not be read or parsed): each setting with a problem at
    /// its default, each tool with a problem left out. Further checks can run on it (as
    /// `check-config` runs `serve`'s own), so that one run names every problem.
    ///
    /// # Errors
    /// As [`Config::check`], with the configuration as far as it was read.
    pub fn check_partly(path: &Path) -> Result<Config, (Option<Box<Config>>, Vec<ConfigError>)> {
        let text = std::fs::read_to_string(path).map_err(|source| (None, vec![ConfigError::Read { path: path.to_owned(), source }]))?;
        let base = path.parent().unwrap_or(Path::new(""));
        Config::check_text(&text, base)
            .map_err(|(config, problems)| (config, problems.into_iter().map(|problem| problem.in_file(path)).collect()))
    }

    /// Parses and checks a configuration given as TOML text. A relative `cwd` of a tool is
    /// taken relative to the server's current directory.
    ///
    /// Reads the environment variables that `[[server.auth.tokens]]` entries name in
    /// `token_env`, keeping only the digests of their values.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`], naming the line where known: the problem on the earliest
    /// line (see [`Config::problems`] for all of them).
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::check_text(text, Path::new("")).map_err(|(_, problems)| first_problem(problems))
    }

    /// Every problem of a configuration given as TOML text, in line order; empty if it is
    /// valid. As thorough as [`Config::check`].
    #[must_use]
    pub fn problems(text: &str) -> Vec<ConfigError> {
        Config::check_text(text, Path::new("")).err().map(|(_, problems)| problems).unwrap_or_default()
    }

    /// Checks `text`, whose relative paths are relative to `base`. The problems are sorted
    /// by line (those without a line last) and never empty; with them, the configuration as
    /// far as it was read, if it could be parsed.
    fn check_text(text: &str, base: &Path) -> Result<Config, (Option<Box<Config>>, Vec<ConfigError>)> {
        // The shape's mistakes first, all of them; then the checks, on the text read in the
        // end (the same lines, with those mistakes set aside).
        let (read, mut problems) = shape::read::<RawConfig>(text);
        let Some((raw, text)) = read else {
            problems.sort_by_key(|problem| line_of_problem(problem).unwrap_or(usize::MAX));
            return Err((None, problems));
        };
        // A line with a mistake of shape reports that one only (a key read under the name it
        // was likely meant to have may still hold what that key cannot).
        let shape_lines: Vec<Option<usize>> = problems.iter().map(line_of_problem).collect();
        let lines = Lines(&text);
        let (server, server_problems) = raw.server.check(lines);
        problems.extend(server_problems);
        let mut tools: Vec<ToolConfig> = Vec::with_capacity(raw.tools.len());
        let mut first_lines: HashMap<String, usize> = HashMap::new();
        for raw_tool in raw.tools {
            let line = lines.of(&raw_tool.name.span());
            let name = raw_tool.name.get_ref().clone();
            match first_lines.get(&name) {
                Some(&first_line) => {
                    problems.push(lines.error(line, Problem::DuplicateTool { name, first_line }))
                }
                None => {
                    first_lines.insert(name, line);
                }
            }
            match raw_tool.check(lines, base) {
                Ok(tool) => tools.push(tool),
                Err(tool_problems) => problems.extend(tool_problems),
            }
        }
        if !server.sync_wait.is_zero() {
            for tool in &tools {
                if server.task_tools.all().contains(&tool.name.as_str()) {
                    let line = first_lines.get(&tool.name).copied();
                    let problem = Problem::TaskToolClash { name: tool.name.clone() };
                    problems.push(ConfigError::Invalid { file: None, line, problem });
                }
            }
        }
        let upstream_tools = raw.upstream.check(lines, &mut problems);
        let shape_count = shape_lines.len();
        let mut index = 0;
        problems.retain(|problem| {
            index += 1;
            index <= shape_count || line_of_problem(problem).is_none_or(|line| !shape_lines.contains(&Some(line)))
        });
        let config = Config { server, tools, upstream_tools };
        if problems.is_empty() {
            Ok(config)
        } else {
            problems.sort_by_key(|problem| line_of_problem(problem).unwrap_or(usize::MAX));
            Err((Some(Box::new(config)), problems))
        }
    }
}

/// The line a problem names, if any.
fn line_of_problem(problem: &ConfigError) -> Option<usize> {
    match problem {
        ConfigError::Invalid { line, .. } => *line,
        ConfigError::Read { .. } => None,
    }
}

/// The first of a non-empty list of problems.
fn first_problem(problems: Vec<ConfigError>) -> ConfigError {
    problems
        .into_iter()
        .next()
        .unwrap_or_else(|| ConfigError::Invalid {
            file: None,
            line: None,
            problem: Problem::Toml("invalid configuration".to_owned()),
        })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    tools: Vec<tool::RawTool>,
    #[serde(default)]
    upstream: upstream::RawUpstream,
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::Auth;
    use crate::auth;

    /// The line, problem and message of the error of `text` (also used by `tool`'s tests).
    pub(super) fn invalid(text: &str) -> (Option<usize>, Problem, String) {
        match Config::parse(text) {
            Ok(config) => panic!("expected an error, parsed {config:?}"),
            Err(err) => {
                let message = err.to_string();
                match err {
                    ConfigError::Invalid { line, problem, .. } => (line, problem, message),
                    other => panic!("expected Invalid, got {other:?}"),
                }
            }
        }
    }

    const FULL: &str = r#"
[server]
name = "demo"
default_ttl = "30m"
max_ttl = "2days"
poll_interval = "500ms"
session_idle = "5m"
lease = "12s"
inline_wait = "3s"
retry_wait = "2m"
listen = "0.0.0.0:9000"
allowed_hosts = ["tasks.example.com", "box.lan:9000"]
allowed_origins = ["https://app.example.com"]
max_body = "512KiB"
max_running = 8
max_running_per_principal = 2
max_retained_per_principal = 500
metrics = false
ui = false
heartbeat = "5s"
sync_wait = "20s"

[server.task_tools]
status = "job_status"
result = "job_result"
cancel = "job_cancel"

[[server.auth.tokens]]
principal = "alice"
token_sha256 = "f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7"

[[server.auth.tokens]]
principal = "bob"
token_sha256 = "B7C1E4F1C4D0A4F04E1AC6F03DC8F31C1A4F4E1FE4AB3B7C5B0E9DBAE58FE4E5"

[[tools]]
name = "render"
description = "Renders a scene"
command = ["blender", "--background", "{scene}", "--frames={frames}", "{{literal}}"]
task_support = "required"
timeout = "10m"
kill_grace = "5s"
on_restart = "retry"
max_attempts = 5
max_concurrent = 2

[tools.input_schema]
type = "object"
required = ["scene"]

[tools.input_schema.properties.scene]
type = "string"

[tools.input_schema.properties.frames]
type = "integer"

[[tools]]
name = "plain"
command = ["true"]
task_support = "forbidden"
"#;

    #[test]
    fn a_full_example_parses_with_every_field() {
        let config = Config::parse(FULL).unwrap();
        assert_eq!(config.server, full_server());
        let auth = config.server.auth();
        assert!(auth.is_enabled());
        assert_eq!(auth.principal_for("hunter2"), Some("alice"));
        assert_eq!(auth.principal_for("hunter3"), None);
        assert!(config.server.allows_host("box.lan:9000"));
        assert!(config.server.allows_host("localhost:9000"));
        assert!(!config.server.allows_host("box.lan:9001"));
        assert!(config.server.allows_origin("https://app.example.com"));
        assert!(config.server.allows_origin("http://127.0.0.1:5173"));
        assert!(!config.server.allows_origin("https://evil.example.com"));
        assert_eq!(config.tools.len(), 2);
        check_render(&config.tools[0]);
        assert_eq!(config.tools[1].task_support, TaskSupport::Forbidden);
    }

    /// The `[server]` of [`FULL`], as parsed.
    fn full_server() -> ServerConfig {
        ServerConfig {
            name: "demo".into(),
            default_ttl: Duration::from_secs(30 * 60),
            max_ttl: Duration::from_secs(2 * 24 * 60 * 60),
            poll_interval: Duration::from_millis(500),
            session_idle: Duration::from_secs(5 * 60),
            inline_wait: Duration::from_secs(3),
            retry_wait: Duration::from_secs(120),
            lease: Duration::from_secs(12),
            listen: "0.0.0.0:9000".parse().unwrap(),
            allowed_hosts: vec!["tasks.example.com".into(), "box.lan:9000".into()],
            allowed_origins: vec!["https://app.example.com".into()],
            max_body: 512 * 1024,
            max_running: 8,
            max_running_per_principal: 2,
            max_retained_per_principal: 500,
            metrics: false,
            heartbeat: Duration::from_secs(5),
            sync_wait: Duration::from_secs(20),
            task_tools: crate::TaskToolNames {
                status: "job_status".into(),
                result: "job_result".into(),
                cancel: "job_cancel".into(),
            },
            ui: Some(false),
            webhooks: Vec::new(),
            oauth: None,
            tracing: crate::TracingConfig { otlp_endpoint: None, service_name: "mcp-tasks".into() },
            auth: Auth::from_digests([
                ("alice", Auth::digest("hunter2")),
                (
                    "bob",
                    auth::parse_hex_digest(
                        "b7c1e4f1c4d0a4f04e1ac6f03dc8f31c1a4f4e1fe4ab3b7c5b0e9dbae58fe4e5"
                    )
                    .unwrap()
                ),
            ]),
            ..ServerConfig::default()
        }
    }

    /// The `render` tool of [`FULL`], every field as written.
    fn check_render(render: &ToolConfig) {
        assert_eq!(render.name, "render");
        assert_eq!(render.description, "Renders a scene");
        assert_eq!(
            render.input_schema,
            json!({
                "type": "object",
                "required": ["scene"],
                "properties": {"scene": {"type": "string"}, "frames": {"type": "integer"}}
            })
        );
        assert_eq!(
            render.command,
            [
                "blender",
                "--background",
                "{scene}",
                "--frames={frames}",
                "{{literal}}"
            ]
        );
        assert_eq!(render.task_support, TaskSupport::Required);
        assert_eq!(render.timeout, Some(Duration::from_secs(600)));
        assert_eq!(render.kill_grace, Duration::from_secs(5));
        assert_eq!(render.on_restart, RestartPolicy::Retry);
        assert_eq!(render.max_attempts, 5);
        assert_eq!(render.max_concurrent, Some(2));
    }

    #[test]
    fn defaults_apply_when_keys_are_left_out() {
        let config = Config::parse("[[tools]]\nname = \"t\"\ncommand = [\"true\"]\n").unwrap();
        assert_eq!(config.server, ServerConfig::default());
        assert_eq!(config.server.name, "mcp-tasks");
        assert_eq!(config.server.default_ttl, Duration::from_secs(3600));
        assert_eq!(config.server.max_ttl, Duration::from_secs(86400));
        assert_eq!(config.server.poll_interval, Duration::from_secs(1));
        assert_eq!(
            config.server.listen,
            "127.0.0.1:8765".parse::<SocketAddr>().unwrap()
        );
        assert!(config.server.allowed_hosts.is_empty());
        assert!(config.server.allowed_origins.is_empty());
        assert_eq!(config.server.max_body, 4 * 1024 * 1024);
        assert!(!config.server.auth().is_enabled());
        assert_eq!(config.server.auth().principal_for(""), None);
        let tool = &config.tools[0];
        assert_eq!(tool.description, "");
        assert_eq!(tool.input_schema, json!({"type": "object"}));
        assert_eq!(tool.task_support, TaskSupport::Optional);
        assert_eq!(tool.timeout, None);
        assert_eq!(tool.on_restart, RestartPolicy::Fail);
        assert_eq!(
            *tool,
            ToolConfig::new("t", vec!["true".into()]),
            "a tool built by hand has the defaults of a file"
        );
        assert_eq!(config.server.max_running, 64);
        assert_eq!(config.server.max_running_per_principal, 16);
        assert_eq!(config.server.max_retained_per_principal, 10_000);
        assert!(config.server.metrics, "/metrics is served unless the config says otherwise");
        assert_eq!(Config::parse("").unwrap(), Config::default());
    }

    #[test]
    fn an_unknown_key_is_an_error_with_its_line() {
        let text = "[server]\nname = \"x\"\n\n[[tools]]\nname = \"t\"\ncomand = [\"true\"]\n";
        let (line, problem, message) = invalid(text);
        assert_eq!(line, Some(6));
        let Problem::Toml(detail) = problem else {
            panic!("{problem:?}")
        };
        assert!(detail.contains("unknown field `comand`"), "{detail}");
        // The name meant, not the list of every valid one (issue 42).
        assert_eq!(message, "line 6: unknown field `comand`; did you mean `command`?");
    }

    #[test]
    fn an_unknown_server_key_is_an_error_with_its_line() {
        let (line, _, message) = invalid("[server]\n\npoll = \"1s\"\n");
        assert_eq!(line, Some(3));
        assert!(message.contains("unknown field `poll`"), "{message}");
        // Nothing near it: the valid names are listed.
        assert!(message.contains("expected one of") && message.contains("`poll_rate`"), "{message}");
    }

    #[test]
    fn a_bad_duration_is_an_error_naming_field_and_line() {
        let (line, problem, message) =
            invalid("[server]\nname = \"x\"\nmax_ttl = \"3 fortnights\"\n");
        assert_eq!(line, Some(3));
        assert!(matches!(&problem, Problem::Duration { field, value, .. }
            if field == "server.max_ttl" && value == "3 fortnights"));
        assert!(
            message.starts_with("line 3: server.max_ttl: invalid duration `3 fortnights`"),
            "{message}"
        );
    }

    #[test]
    fn a_bad_tool_timeout_is_an_error_naming_the_tool_and_line() {
        let (line, _, message) =
            invalid("[[tools]]\nname = \"slow\"\ncommand = [\"true\"]\ntimeout = \"soon\"\n");
        assert_eq!(line, Some(4));
        assert!(
            message.contains("timeout of tool `slow`: invalid duration `soon`"),
            "{message}"
        );
    }

    #[test]
    fn a_zero_poll_interval_is_an_error() {
        let (line, problem, _) = invalid("[server]\npoll_interval = \"0s\"\n");
        assert_eq!(line, Some(2));
        assert!(matches!(problem, Problem::Duration { .. }));
    }

    #[test]
    fn a_default_ttl_longer_than_max_ttl_is_an_error() {
        let (line, problem, _) = invalid("[server]\ndefault_ttl = \"2d\"\nmax_ttl = \"1d\"\n");
        assert_eq!(line, Some(2));
        assert!(matches!(problem, Problem::TtlOrder { .. }));
    }

    #[test]
    fn a_duplicate_tool_name_is_an_error_naming_both_lines() {
        let text = "[[tools]]\nname = \"t\"\ncommand = [\"a\"]\n\n[[tools]]\nname = \"t\"\ncommand = [\"b\"]\n";
        let (line, problem, message) = invalid(text);
        assert_eq!(line, Some(6));
        assert_eq!(
            problem,
            Problem::DuplicateTool {
                name: "t".into(),
                first_line: 2
            }
        );
        assert_eq!(
            message,
            "line 6: duplicate tool name `t` (first defined on line 2)"
        );
    }

    #[test]
    fn a_placeholder_naming_no_schema_property_is_an_error() {
        let text = r#"
[[tools]]
name = "greet"
command = [
  "echo",
  "hello {who}",
]
input_schema = { type = "object", properties = { name = { type = "string" } } }
"#;
        let (line, problem, message) = invalid(text);
        assert_eq!(line, Some(6));
        assert_eq!(
            problem,
            Problem::UnknownPlaceholder {
                tool: "greet".into(),
                placeholder: "who".into()
            }
        );
        assert!(
            message.contains("tool `greet`: placeholder `{who}`"),
            "{message}"
        );
    }

    #[test]
    fn a_placeholder_without_any_schema_is_an_error() {
        let (_, problem, _) = invalid("[[tools]]\nname = \"t\"\ncommand = [\"echo\", \"{x}\"]\n");
        assert!(matches!(problem, Problem::UnknownPlaceholder { .. }));
    }

    #[test]
    fn escaped_braces_are_not_placeholders() {
        let config =
            Config::parse("[[tools]]\nname = \"t\"\ncommand = [\"echo\", \"{{x}}\"]\n").unwrap();
        assert_eq!(config.tools[0].command, ["echo", "{{x}}"]);
    }

    #[test]
    fn an_unmatched_brace_is_an_error() {
        let (line, problem, _) = invalid("[[tools]]\nname = \"t\"\ncommand = [\"echo\", \"{x\"]\n");
        assert_eq!(line, Some(3));
        assert!(matches!(problem, Problem::BadTemplate { .. }));
    }

    #[test]
    fn a_placeholder_in_the_program_is_an_error() {
        let text = r#"
[[tools]]
name = "t"
command = ["{prog}"]
input_schema = { type = "object", properties = { prog = { type = "string" } } }
"#;
        let (_, problem, _) = invalid(text);
        assert_eq!(problem, Problem::PlaceholderProgram { tool: "t".into() });
    }

    #[test]
    fn a_bad_task_support_value_is_an_error() {
        let (line, problem, message) = invalid(
            "[[tools]]\nname = \"t\"\ncommand = [\"true\"]\ntask_support = \"sometimes\"\n",
        );
        assert_eq!(line, Some(4));
        assert!(matches!(problem, Problem::Toml(_)));
        assert!(message.contains("unknown variant `sometimes`"), "{message}");
    }

    #[test]
    fn a_bad_restart_policy_is_an_error() {
        let (line, _, message) =
            invalid("[[tools]]\nname = \"t\"\ncommand = [\"true\"]\non_restart = \"resume\"\n");
        assert_eq!(line, Some(4));
        assert!(message.contains("unknown variant `resume`"), "{message}");
    }

    #[test]
    fn an_empty_command_is_an_error() {
        let (line, problem, _) = invalid("[[tools]]\nname = \"t\"\ncommand = []\n");
        assert_eq!(line, Some(3));
        assert_eq!(problem, Problem::EmptyCommand { tool: "t".into() });
    }

    #[test]
    fn a_missing_command_is_an_error() {
        let (_, _, message) = invalid("[[tools]]\nname = \"t\"\n");
        assert!(message.contains("missing field `command`"), "{message}");
    }

    #[test]
    fn an_input_schema_that_is_not_an_object_schema_is_an_error() {
        let (line, problem, _) = invalid(
            "[[tools]]\nname = \"t\"\ncommand = [\"true\"]\ninput_schema = { type = \"array\" }\n",
        );
        assert_eq!(line, Some(4));
        assert!(matches!(problem, Problem::Schema { .. }));
        let (_, problem, _) = invalid(
            "[[tools]]\nname = \"t\"\ncommand = [\"true\"]\ninput_schema = { properties = {} }\n",
        );
        assert!(matches!(problem, Problem::Schema { .. }));
    }

    #[test]
    fn load_names_the_file_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo.toml");
        std::fs::write(&path, "[[tools]]\nname = \"t\"\ncomand = [\"true\"]\n").unwrap();
        let message = Config::load(&path).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!(
                "{} line 3: unknown field `comand`",
                path.display()
            )),
            "{message}"
        );
    }

    #[test]
    fn load_reads_a_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo.toml");
        std::fs::write(&path, FULL).unwrap();
        assert_eq!(Config::load(&path).unwrap(), Config::parse(FULL).unwrap());
    }

    #[test]
    fn load_of_a_missing_file_says_which() {
        let err = Config::load(Path::new("/nonexistent/mcp-tasks.toml")).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }));
        assert!(
            err.to_string()
                .starts_with("could not read /nonexistent/mcp-tasks.toml"),
            "{err}"
        );
    }
}
