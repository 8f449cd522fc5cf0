//! One `[[tools]]` entry: [`ToolConfig`] and the types of its settings. The entry as
//! written and its check are in `raw`; the checks of single settings in `checker`.

mod checker;
mod raw;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use raw::RawTool;

/// One `[[tools]]` entry: a tool backed by a command.
///
/// Build one by hand with [`ToolConfig::new`] and struct update syntax; the defaults are
/// those of a config file that leaves the keys out.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolConfig {
    /// The tool name; unique in the file.
    pub name: String,
    /// What the tool does, for the model (default empty).
    pub description: String,
    /// The JSON Schema of the arguments; always an object schema (`"type": "object"`).
    pub input_schema: Value,
    /// The argv template: the program, then its arguments. `{name}` stands for the
    /// argument `name` (see [`template`](crate::template)); `{{` and `}}` are literal
    /// braces. The program itself holds no placeholder.
    pub command: Vec<String>,
    /// Whether the tool may, must or must not be called as a task (default optional).
    pub task_support: TaskSupport,
    /// How long a call may run before its processes are ended; `None` is unlimited.
    pub timeout: Option<Duration>,
    /// 2026-07-28, a task-capable (`optional`) tool called by a client that declared the
    /// tasks extension: how long the call waits for the command to end and answer inline
    /// before it answers with a task (`inline_wait`; `None`: `[server] inline_wait`).
    pub inline_wait: Option<Duration>,
    /// A task-capable (`optional`) tool called plainly by a client that speaks no tasks:
    /// how long the call runs before it is handed off to a task (`sync_wait`; `None`:
    /// `[server] sync_wait`; zero: never).
    pub sync_wait: Option<Duration>,
    /// How long the process group has between SIGTERM and SIGKILL when a call is ended
    /// (timeout, cancellation, or processes left behind by the command) (`kill_grace`,
    /// default [`DEFAULT_KILL_GRACE`](ToolConfig::DEFAULT_KILL_GRACE), 2 s).
    pub kill_grace: Duration,
    /// What to do with a task this tool was running when the server died (default fail).
    pub on_restart: RestartPolicy,
    /// How many times in all a task of this tool may be started when `on_restart` is
    /// retry, the first run included (`max_attempts`, default
    /// [`DEFAULT_MAX_ATTEMPTS`](ToolConfig::DEFAULT_MAX_ATTEMPTS), 3; at least 1). A config
    /// file may only set it together with `on_restart = "retry"`.
    pub max_attempts: u32,
    /// How many calls of this tool may run at once (`max_concurrent`, default `None`:
    /// no limit of its own; at least 1). The engine makes further calls wait.
    pub max_concurrent: Option<u32>,
    /// The directory the command runs in (`cwd`, default `None`: the server's). A relative
    /// `cwd` in a file read by [`Config::load`](crate::Config::load) is taken relative to
    /// the file's directory (and stored joined to it); it must exist when the config is
    /// read.
    pub cwd: Option<PathBuf>,
    /// Environment variables set for the command, by name (`env`, default none). Values
    /// are templates like command elements: a value that is exactly `{arg}` leaves the
    /// variable unset when the argument is absent or `null`; a placeholder inside a longer
    /// value becomes the empty string then. Set after the inherited variables, so they
    /// win.
    pub env: BTreeMap<String, String>,
    /// Which variables of the server's environment the command inherits (`inherit_env`,
    /// default [`InheritEnv::Minimal`]).
    pub inherit_env: InheritEnv,
    /// What the command's stdin carries (`stdin`, default [`Stdin::Answers`]).
    pub stdin: Stdin,
    /// The most bytes of stdout, and separately of stderr, that a result carries; past it
    /// the start is cut, the tail kept, and the result says how much was cut
    /// (`max_output`, default [`DEFAULT_MAX_OUTPUT`](ToolConfig::DEFAULT_MAX_OUTPUT),
    /// 1 MiB: what a model can use of a result is far less, and a host may refuse more).
    pub max_output: usize,
    /// How stdout becomes the result (`output`, default text).
    pub output: OutputFormat,
    /// The JSON Schema that JSON output must match (`output_schema`, default none). Always
    /// an object schema, and only with `output = "json"`. A server lists it as the tool's
    /// `outputSchema`.
    pub output_schema: Option<Value>,
}

impl ToolConfig {
    /// The default of `kill_grace`.
    pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);
    /// The default of `max_attempts`.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
    /// The default of `task_support`: `optional` (a command tool may be called either way).
    pub const DEFAULT_TASK_SUPPORT: TaskSupport = TaskSupport::Optional;
    /// The default of `max_output`: 1 MiB (results go to models; the tail is kept).
    pub const DEFAULT_MAX_OUTPUT: usize = 1 << 20;

    /// A tool `name` running `command`, with every other setting at its default (an input
    /// schema of `{"type": "object"}`: no arguments). Not checked: a tool built by hand
    /// whose template is invalid fails its calls instead.
    pub fn new(name: impl Into<String>, command: Vec<String>) -> ToolConfig {
        ToolConfig {
            name: name.into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            command,
            task_support: ToolConfig::DEFAULT_TASK_SUPPORT,
            timeout: None,
            inline_wait: None,
            sync_wait: None,
            kill_grace: ToolConfig::DEFAULT_KILL_GRACE,
            on_restart: RestartPolicy::default(),
            max_attempts: ToolConfig::DEFAULT_MAX_ATTEMPTS,
            max_concurrent: None,
            cwd: None,
            env: BTreeMap::new(),
            inherit_env: InheritEnv::default(),
            stdin: Stdin::default(),
            max_output: ToolConfig::DEFAULT_MAX_OUTPUT,
            output: OutputFormat::default(),
            output_schema: None,
        }
    }
}

/// Which variables of the server's environment a tool's command inherits (`inherit_env`).
///
/// Exhaustive on purpose: nothing, everything, or a list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum InheritEnv {
    /// All of them (`inherit_env = true`), secrets included: the `token_env` variables of
    /// `[[server.auth.tokens]]` too.
    All,
    /// Only `PATH`, `HOME`, `LANG` and `TZ`, those that are set (`inherit_env = false`, the
    /// default).
    #[default]
    Minimal,
    /// Those of [`Minimal`](InheritEnv::Minimal), and these (`inherit_env = ["AWS_PROFILE",
    /// "CI"]`), those that are set.
    Names(Vec<String>),
}

/// What a tool's command reads on stdin (`stdin`).
///
/// Exhaustive on purpose, as [`OutputFormat`] is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Stdin {
    /// The answers to the questions the command asks with the line protocol, one JSON line
    /// each; stdin stays open until the process group has ended (`stdin = "none"`, the
    /// default: nothing but answers).
    #[default]
    Answers,
    /// The value of this argument, written verbatim, then stdin is closed (`stdin = { arg =
    /// "document" }`). Strings are written as they are (no newline is added), other JSON
    /// values as compact JSON, an absent or `null` argument as nothing. Such a command
    /// cannot be answered: a question it asks with the line protocol is not asked.
    Arg(String),
}

/// How a tool's stdout becomes its result (`output`).
///
/// Exhaustive on purpose: the command runner handles every format, and a new one must
/// not compile until it does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// stdout must be exactly one JSON object (whitespace around it is fine), returned as
    /// the result's `structuredContent` and as its text (`output = "json"`). Anything else,
    /// or an object that does not match `output_schema`, is an error result saying why.
    Json,
    /// stdout is the result's text (`output = "text"`, the default).
    #[default]
    Text,
}

/// What to do with a task of a tool that was running when its server died (`on_restart`):
/// `"fail"` or `"retry"`.
///
/// Mirrors the engine's `RestartPolicy`; the config crate keeps its own copy so that it
/// does not depend on the engine (the CLI maps one onto the other).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestartPolicy {
    /// Fail it with an error that says execution was interrupted by a restart (the
    /// default in a config file).
    #[default]
    Fail,
    /// Run it again, up to `max_attempts` runs in all (for idempotent tools).
    Retry,
}

/// Whether a tool may be called as a task: `"forbidden"`, `"optional"` or `"required"`, the
/// protocol's own type. Its [`Default`] is the wire's `forbidden`; in a config file an absent
/// `task_support` is `optional` instead ([`ToolConfig::DEFAULT_TASK_SUPPORT`]).
pub use mcp_tasks_protocol::mcp::TaskSupport;

/// The `task_support` of a tool that does not say: [`ToolConfig::DEFAULT_TASK_SUPPORT`].
pub(crate) fn default_task_support() -> TaskSupport {
    ToolConfig::DEFAULT_TASK_SUPPORT
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use std::path::Path;

    use super::*;
    use crate::config::tests::invalid;
    use crate::config::{Config, ConfigError, Problem};

    /// A tool `t` with a string property `text` and an integer `n`, then `settings` (line
    /// 5 onwards).
    fn with(settings: &str) -> String {
        format!(
            "[[tools]]\nname = \"t\"\ncommand = [\"true\"]\ninput_schema = {{ type = \"object\", \
             properties = {{ text = {{ type = \"string\" }}, n = {{ type = \"integer\" }} }} }}\n\
             {settings}\n"
        )
    }

    fn tool(settings: &str) -> ToolConfig {
        let text = with(settings);
        let mut config = Config::parse(&text).unwrap_or_else(|err| panic!("{err}\n{text}"));
        config.tools.remove(0)
    }

    const EVERY_KEY: &str = r#"
[[tools]]
name = "report"
command = ["./report.sh", "--format=json", "{title}"]
cwd = "/"
inherit_env = ["AWS_PROFILE", "CI"]
stdin = { arg = "document" }
max_output = "1MiB"
output = "json"
timeout = "30s"
kill_grace = "5s"
on_restart = "retry"
max_attempts = 2
max_concurrent = 4

[tools.input_schema]
type = "object"
properties = { title = { type = "string" }, document = { type = "string" } }

[tools.env]
REPORT_TITLE = "Report: {title}"
LOG_LEVEL = "info"

[tools.output_schema]
type = "object"
required = ["pages"]
properties = { pages = { type = "integer" } }
"#;

    #[test]
    fn every_tool_key_parses() {
        let config = Config::parse(EVERY_KEY).unwrap();
        let tool = &config.tools[0];
        assert_eq!(tool.cwd.as_deref(), Some(Path::new("/")));
        assert_eq!(
            tool.env,
            BTreeMap::from([
                ("LOG_LEVEL".to_owned(), "info".to_owned()),
                ("REPORT_TITLE".to_owned(), "Report: {title}".to_owned()),
            ])
        );
        assert_eq!(
            tool.inherit_env,
            InheritEnv::Names(vec!["AWS_PROFILE".into(), "CI".into()])
        );
        assert_eq!(tool.stdin, Stdin::Arg("document".into()));
        assert_eq!(tool.max_output, 1 << 20);
        assert_eq!(tool.output, OutputFormat::Json);
        assert_eq!(
            tool.output_schema,
            Some(json!({
                "type": "object",
                "required": ["pages"],
                "properties": {"pages": {"type": "integer"}},
            }))
        );
        assert_eq!(tool.timeout, Some(Duration::from_secs(30)));
        assert_eq!(tool.kill_grace, Duration::from_secs(5));
        assert_eq!(tool.on_restart, RestartPolicy::Retry);
        assert_eq!(tool.max_attempts, 2);
        assert_eq!(tool.max_concurrent, Some(4));
    }

    #[test]
    fn tool_keys_left_out_take_their_defaults() {
        let tool = tool("");
        assert_eq!(tool.cwd, None);
        assert!(tool.env.is_empty());
        assert_eq!(tool.inherit_env, InheritEnv::Minimal);
        assert_eq!(tool.stdin, Stdin::Answers);
        assert_eq!(tool.max_output, 1 << 20, "results go to models: 1 MiB by default");
        assert_eq!(tool.output, OutputFormat::Text);
        assert_eq!(tool.output_schema, None);
        assert_eq!(tool.kill_grace, Duration::from_secs(2));
        assert_eq!(tool.max_attempts, 3);
        assert_eq!(tool.max_concurrent, None);
    }

    #[test]
    fn inherit_env_takes_a_boolean_or_names() {
        assert_eq!(tool("inherit_env = true").inherit_env, InheritEnv::All);
        assert_eq!(tool("inherit_env = false").inherit_env, InheritEnv::Minimal);
        assert_eq!(
            tool("inherit_env = []").inherit_env,
            InheritEnv::Names(vec![])
        );
        let (line, problem, message) = invalid(&with("\ninherit_env = \"yes\""));
        assert_eq!(line, Some(6));
        assert!(matches!(problem, Problem::Toml(_)), "{problem:?}");
        assert!(
            message.contains("expected true, false, or a list of variable names"),
            "{message}"
        );
        let (line, problem, _) = invalid(&with("inherit_env = [\n  \"OK\",\n  \"A=B\",\n]"));
        assert_eq!(line, Some(7));
        assert_eq!(
            problem,
            Problem::EnvName {
                tool: "t".into(),
                setting: "inherit_env".into(),
                name: "A=B".into()
            }
        );
    }

    #[test]
    fn stdin_takes_none_or_an_argument() {
        assert_eq!(tool("stdin = \"none\"").stdin, Stdin::Answers);
        assert_eq!(
            tool("stdin = { arg = \"text\" }").stdin,
            Stdin::Arg("text".into())
        );
        let (line, _, message) = invalid(&with("stdin = \"{text}\""));
        assert_eq!(line, Some(5));
        assert!(
            message.contains("expected \"none\" or { arg = \"name\" }"),
            "{message}"
        );
        let (line, _, message) = invalid(&with("stdin = { argument = \"text\" }"));
        assert_eq!(line, Some(5));
        assert!(message.contains("unknown field `argument`"), "{message}");
        let (line, problem, message) = invalid(&with("\nstdin = { arg = \"txt\" }"));
        assert_eq!(line, Some(6));
        assert_eq!(
            problem,
            Problem::UnknownArgument {
                tool: "t".into(),
                setting: "stdin".into(),
                name: "txt".into()
            }
        );
        assert_eq!(
            message,
            "line 6: tool `t`: stdin names argument `txt`, which is no property of \
             input_schema.properties"
        );
    }

    #[test]
    fn env_names_and_values_are_checked_with_their_lines() {
        let (line, problem, _) = invalid(&with("[tools.env]\nOK = \"1\"\n\"A=B\" = \"2\""));
        assert_eq!(line, Some(7));
        assert!(
            matches!(&problem, Problem::EnvName { setting, name, .. } if setting == "env" && name == "A=B"),
            "{problem:?}"
        );
        let (line, problem, message) =
            invalid(&with("[tools.env]\nOK = \"{text}\"\nBAD = \"x {nope}\""));
        assert_eq!(line, Some(7));
        assert_eq!(
            problem,
            Problem::UnknownPlaceholder {
                tool: "t".into(),
                placeholder: "nope".into()
            }
        );
        assert!(
            message.starts_with("line 7: tool `t`: placeholder `{nope}`"),
            "{message}"
        );
        let (line, problem, message) = invalid(&with("env = { X = \"{text\" }"));
        assert_eq!(line, Some(5));
        assert!(
            matches!(problem, Problem::BadEnvTemplate { .. }),
            "{problem:?}"
        );
        assert!(
            message.starts_with("line 5: tool `t`: env `X`: `{` at byte 0 is never closed"),
            "{message}"
        );
        let (line, _, message) = invalid(&with("env = { X = 3 }"));
        assert_eq!(line, Some(5));
        assert!(
            message.contains("invalid type: integer `3`, expected a string"),
            "{message}"
        );
    }

    #[test]
    fn a_relative_cwd_is_taken_from_the_config_files_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("jobs")).unwrap();
        let path = dir.path().join("mcp-tasks.toml");
        std::fs::write(&path, with("cwd = \"jobs\"")).unwrap();
        let config = Config::load(&path).unwrap();
        assert_eq!(config.tools[0].cwd, Some(dir.path().join("jobs")));
        std::fs::write(&path, with("cwd = \"missing\"")).unwrap();
        let message = Config::load(&path).unwrap_err().to_string();
        assert_eq!(
            message,
            format!(
                "{} line 5: tool `t`: cwd `{}` does not exist",
                path.display(),
                dir.path().join("missing").display()
            )
        );
    }

    #[test]
    fn a_cwd_that_is_not_a_directory_is_an_error_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        for (cwd, reason) in [
            (file.display().to_string(), "is not a directory"),
            (
                dir.path().join("nope").display().to_string(),
                "does not exist",
            ),
            (String::new(), "must not be empty"),
        ] {
            let (line, problem, _) = invalid(&with(&format!("\ncwd = \"{cwd}\"")));
            assert_eq!(line, Some(6));
            assert!(
                matches!(&problem, Problem::Cwd { reason: r, .. } if r == reason),
                "{problem:?}"
            );
        }
    }

    #[test]
    fn output_takes_text_or_json() {
        assert_eq!(tool("output = \"text\"").output, OutputFormat::Text);
        assert_eq!(tool("output = \"json\"").output, OutputFormat::Json);
        let (line, _, message) = invalid(&with("output = \"yaml\""));
        assert_eq!(line, Some(5));
        assert!(message.contains("unknown variant `yaml`"), "{message}");
    }

    #[test]
    fn an_output_schema_needs_json_output_and_must_be_a_valid_object_schema() {
        let schema = "output_schema = { type = \"object\" }";
        let (line, problem, message) = invalid(&with(schema));
        assert_eq!(line, Some(5));
        assert!(
            matches!(problem, Problem::OutputSchema { .. }),
            "{problem:?}"
        );
        assert_eq!(
            message,
            "line 5: tool `t`: output_schema needs output = \"json\""
        );
        let (line, _, message) = invalid(&with(
            "output = \"json\"\noutput_schema = { type = \"array\" }",
        ));
        assert_eq!(line, Some(6));
        assert!(
            message.contains("must have \"type\" = \"object\" at the top"),
            "{message}"
        );
        let (line, _, message) = invalid(&with(
            "output = \"json\"\n\n[tools.output_schema]\ntype = \"object\"\nproperties = { a = { type = 5 } }",
        ));
        assert_eq!(line, Some(7));
        assert!(
            message.starts_with("line 7: tool `t`: output_schema is not a valid JSON Schema: "),
            "{message}"
        );
    }

    #[test]
    fn a_tools_sync_wait_overrides_the_servers_zero_turns_its_handoff_off_and_is_checked_with_its_line() {
        assert_eq!(tool("sync_wait = \"2m\"").sync_wait, Some(Duration::from_secs(120)));
        assert_eq!(tool("sync_wait = \"0\"").sync_wait, Some(Duration::ZERO));
        assert_eq!(tool("").sync_wait, None);
        let (line, _, message) = invalid(&with("sync_wait = \"a while\""));
        assert_eq!(line, Some(5));
        assert!(message.contains("sync_wait of tool `t`"), "{message}");
    }

    #[test]
    fn a_tools_inline_wait_overrides_the_servers_and_is_checked_with_its_line() {
        assert_eq!(tool("inline_wait = \"50ms\"").inline_wait, Some(Duration::from_millis(50)));
        assert_eq!(tool("").inline_wait, None);
        let (line, _, message) = invalid(&with("inline_wait = \"0s\""));
        assert_eq!(line, Some(5));
        assert!(message.contains("inline_wait of tool `t`"), "{message}");
    }

    #[test]
    fn max_output_and_kill_grace_are_checked_with_their_lines() {
        assert_eq!(tool("max_output = 1000").max_output, 1000);
        assert_eq!(
            tool("kill_grace = \"100ms\"").kill_grace,
            Duration::from_millis(100)
        );
        let (line, _, message) = invalid(&with("\nmax_output = \"lots\""));
        assert_eq!(line, Some(6));
        assert!(
            message.starts_with("line 6: max_output of tool `t`: invalid size `lots`"),
            "{message}"
        );
        let (line, _, message) = invalid(&with("kill_grace = \"0s\""));
        assert_eq!(line, Some(5));
        assert_eq!(
            message,
            "line 5: kill_grace of tool `t`: invalid duration `0s`: must be longer than zero"
        );
    }

    #[test]
    fn max_attempts_needs_retry_and_at_least_one() {
        let (line, problem, message) = invalid(&with("max_attempts = 5"));
        assert_eq!(line, Some(5));
        assert_eq!(
            problem,
            Problem::MaxAttemptsWithoutRetry { tool: "t".into() }
        );
        assert_eq!(
            message,
            "line 5: tool `t`: max_attempts applies only with on_restart = \"retry\""
        );
        assert_eq!(
            tool("on_restart = \"retry\"\nmax_attempts = 1").max_attempts,
            1
        );
        for bad in ["0", "-1"] {
            let (line, problem, message) = invalid(&with(&format!(
                "on_restart = \"retry\"\nmax_attempts = {bad}"
            )));
            assert_eq!(line, Some(6));
            assert!(matches!(problem, Problem::Count { .. }), "{problem:?}");
            assert_eq!(
                message,
                format!(
                    "line 6: max_attempts of tool `t`: invalid value {bad}: must be at least 1"
                )
            );
        }
        let (_, _, message) = invalid(&with("on_restart = \"retry\"\nmax_attempts = \"3\""));
        assert!(
            message.contains("invalid type: string \"3\", expected i64"),
            "{message}"
        );
    }

    #[test]
    fn max_concurrent_is_at_least_one_and_fits_a_u32() {
        assert_eq!(tool("max_concurrent = 1").max_concurrent, Some(1));
        let (line, _, message) = invalid(&with("max_concurrent = 0"));
        assert_eq!(line, Some(5));
        assert!(
            message.ends_with("invalid value 0: must be at least 1"),
            "{message}"
        );
        let (_, _, message) = invalid(&with("max_concurrent = 4294967296"));
        assert!(
            message.ends_with("too large (at most 4294967295)"),
            "{message}"
        );
    }

    #[test]
    fn problems_lists_every_tools_problem_and_the_servers_in_line_order() {
        let text = "\
[[tools]]
name = \"a\"
command = [\"true\"]
kill_grace = \"soon\"

[[tools]]
name = \"a\"
command = [\"true\"]

[[tools]]
name = \"ok\"
command = [\"true\"]

[[tools]]
name = \"b\"
command = [\"echo\", \"{nope}\"]

[server]
max_running = 0
";
        let messages: Vec<String> = Config::problems(text)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            messages,
            [
                "line 4: kill_grace of tool `a`: invalid duration `soon`: expected number at 0",
                "line 7: duplicate tool name `a` (first defined on line 2)",
                "line 16: tool `b`: placeholder `{nope}` names no property of input_schema.properties",
                "line 19: server.max_running: invalid value 0: must be at least 1",
            ]
        );
        assert_eq!(
            Config::parse(text).unwrap_err().to_string(),
            messages[0],
            "parse gives the first"
        );
        assert!(Config::problems(EVERY_KEY).is_empty());
        let shape = Config::problems("[[tools]]\nname = \"a\"\ncomand = []\n");
        assert_eq!(shape.len(), 1, "a shape error stops the check");
    }

    #[test]
    fn check_names_the_file_in_every_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.toml");
        std::fs::write(
            &path,
            "[server]\nmax_running = 0\n\n[[tools]]\nname = \"t\"\ncommand = []\n",
        )
        .unwrap();
        let problems = Config::check(&path).unwrap_err();
        let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let file = path.display();
        assert_eq!(
            messages,
            [
                format!("{file} line 2: server.max_running: invalid value 0: must be at least 1"),
                format!("{file} line 6: tool `t`: `command` must hold at least the program to run"),
            ]
        );
        let missing = Config::check(&dir.path().join("none.toml")).unwrap_err();
        assert!(matches!(missing.as_slice(), [ConfigError::Read { .. }]));
    }
}
