//! One `[[tools]]` entry as written ([`RawTool`]), and its check into a [`ToolConfig`].
//!
//! Every check names the line of the value it is about. Templates (command elements and
//! `env` values) must be well formed and name only properties of the tool's input schema;
//! `cwd` must be an existing directory; `output_schema` must compile.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde_json::{Map, Value};
use toml::Spanned;

use super::{
    ConfigError, InheritEnv, Lines, OutputFormat, Problem, RawSize, RestartPolicy, Stdin, TaskSupport,
    ToolConfig,
};
use crate::template::{self, Piece};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTool {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    description: String,
    input_schema: Option<Spanned<toml::Table>>,
    command: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    task_support: TaskSupport,
    timeout: Option<Spanned<String>>,
    kill_grace: Option<Spanned<String>>,
    #[serde(default)]
    on_restart: RestartPolicy,
    max_attempts: Option<Spanned<i64>>,
    max_concurrent: Option<Spanned<i64>>,
    cwd: Option<Spanned<String>>,
    env: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    inherit_env: Option<Spanned<RawInheritEnv>>,
    stdin: Option<Spanned<RawStdin>>,
    max_output: Option<Spanned<RawSize>>,
    #[serde(default)]
    output: OutputFormat,
    output_schema: Option<Spanned<toml::Table>>,
}

/// `inherit_env` as written: a boolean or a list of names.
enum RawInheritEnv {
    All(bool),
    Names(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for RawInheritEnv {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawInheritEnv;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false, or a list of variable names")
            }
            fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<RawInheritEnv, E> {
                Ok(RawInheritEnv::All(value))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawInheritEnv, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element()? {
                    names.push(name);
                }
                Ok(RawInheritEnv::Names(names))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `stdin` as written: `"none"` or `{ arg = "name" }`.
enum RawStdin {
    None,
    Arg(String),
}

/// The table form of `stdin`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStdinArg {
    arg: String,
}

impl<'de> Deserialize<'de> for RawStdin {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawStdin;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"none\" or { arg = \"name\" }")
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<RawStdin, E> {
                if value == "none" {
                    Ok(RawStdin::None)
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(value), &self))
                }
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawStdin, A::Error> {
                RawStdinArg::deserialize(MapAccessDeserializer::new(map))
                    .map(|table| RawStdin::Arg(table.arg))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// What the checks of one tool share: where the lines are, the tool's name, and the
/// properties of its input schema that placeholders may name.
struct Checker<'a> {
    lines: Lines<'a>,
    tool: &'a str,
    properties: Map<String, Value>,
}

impl RawTool {
    /// Checks the entry; a relative `cwd` is joined to `base`.
    pub(super) fn check(self, lines: Lines<'_>, base: &Path) -> Result<ToolConfig, ConfigError> {
        let name = self.name.get_ref().clone();
        let name_line = lines.of(&self.name.span());
        let (input_schema, schema_line) = match &self.input_schema {
            Some(table) => {
                let line = lines.of(&table.span());
                let schema = serde_json::to_value(table.get_ref()).map_err(|err| {
                    let problem = Problem::Schema {
                        tool: name.clone(),
                        reason: err.to_string(),
                    };
                    lines.error(line, problem)
                })?;
                (schema, line)
            }
            None => (serde_json::json!({"type": "object"}), name_line),
        };
        let properties = schema_properties(&input_schema).map_err(|reason| {
            let problem = Problem::Schema {
                tool: name.clone(),
                reason,
            };
            lines.error(schema_line, problem)
        })?;
        let checker = Checker {
            lines,
            tool: &name,
            properties,
        };

        let command = checker.command(self.command)?;
        let env = checker.env(self.env.unwrap_or_default())?;
        let inherit_env = checker.inherit_env(self.inherit_env)?;
        let stdin = checker.stdin(self.stdin)?;
        let cwd = match self.cwd {
            Some(cwd) => Some(checker.cwd(&cwd, base)?),
            None => None,
        };
        let output_schema = checker.output_schema(self.output, self.output_schema)?;
        let duration = |setting: &str, value: &Spanned<String>| {
            lines.duration(&format!("{setting} of tool `{name}`"), value)
        };
        let timeout = match &self.timeout {
            Some(value) => Some(duration("timeout", value)?),
            None => None,
        };
        let kill_grace = match &self.kill_grace {
            Some(value) => duration("kill_grace", value)?,
            None => ToolConfig::DEFAULT_KILL_GRACE,
        };
        let max_output = match &self.max_output {
            Some(value) => lines.size(&format!("max_output of tool `{name}`"), value)?,
            None => ToolConfig::DEFAULT_MAX_OUTPUT,
        };
        let max_attempts = match &self.max_attempts {
            Some(value) if self.on_restart != RestartPolicy::Retry => {
                let problem = Problem::MaxAttemptsWithoutRetry { tool: name.clone() };
                return Err(lines.error(lines.of(&value.span()), problem));
            }
            Some(value) => lines.count(&format!("max_attempts of tool `{name}`"), value)?,
            None => ToolConfig::DEFAULT_MAX_ATTEMPTS,
        };
        let max_concurrent = match &self.max_concurrent {
            Some(value) => Some(lines.count(&format!("max_concurrent of tool `{name}`"), value)?),
            None => None,
        };
        Ok(ToolConfig {
            name: self.name.into_inner(),
            description: self.description,
            input_schema,
            command,
            task_support: self.task_support,
            timeout,
            kill_grace,
            on_restart: self.on_restart,
            max_attempts,
            max_concurrent,
            cwd,
            env,
            inherit_env,
            stdin,
            max_output,
            output: self.output,
            output_schema,
        })
    }
}

impl Checker<'_> {
    fn error(&self, span: &std::ops::Range<usize>, problem: Problem) -> ConfigError {
        self.lines.error(self.lines.of(span), problem)
    }

    /// Checks `template` (a command element, or the value of the `env` variable named):
    /// its braces, and that its placeholders name properties of the input schema.
    fn template(
        &self,
        env: Option<&str>,
        template: &Spanned<String>,
    ) -> Result<Vec<Piece>, ConfigError> {
        let pieces = template::parse(template.get_ref()).map_err(|err| {
            let (tool, reason) = (self.tool.to_owned(), err.to_string());
            let problem = match env {
                Some(name) => Problem::BadEnvTemplate {
                    tool,
                    name: name.to_owned(),
                    reason,
                },
                None => Problem::BadTemplate {
                    tool,
                    element: template.get_ref().clone(),
                    reason,
                },
            };
            self.error(&template.span(), problem)
        })?;
        for piece in &pieces {
            if let Piece::Arg(placeholder) = piece
                && !self.properties.contains_key(placeholder)
            {
                let problem = Problem::UnknownPlaceholder {
                    tool: self.tool.to_owned(),
                    placeholder: placeholder.clone(),
                };
                return Err(self.error(&template.span(), problem));
            }
        }
        Ok(pieces)
    }

    fn command(&self, command: Spanned<Vec<Spanned<String>>>) -> Result<Vec<String>, ConfigError> {
        if command.get_ref().is_empty() {
            let problem = Problem::EmptyCommand {
                tool: self.tool.to_owned(),
            };
            return Err(self.error(&command.span(), problem));
        }
        let mut checked = Vec::with_capacity(command.get_ref().len());
        for (index, element) in command.into_inner().into_iter().enumerate() {
            let pieces = self.template(None, &element)?;
            if index == 0 && pieces.iter().any(|piece| matches!(piece, Piece::Arg(_))) {
                let problem = Problem::PlaceholderProgram {
                    tool: self.tool.to_owned(),
                };
                return Err(self.error(&element.span(), problem));
            }
            checked.push(element.into_inner());
        }
        Ok(checked)
    }

    fn env(
        &self,
        env: BTreeMap<Spanned<String>, Spanned<String>>,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let mut checked = BTreeMap::new();
        for (name, value) in env {
            self.env_name("env", &name)?;
            self.template(Some(name.get_ref()), &value)?;
            checked.insert(name.into_inner(), value.into_inner());
        }
        Ok(checked)
    }

    fn env_name(&self, setting: &str, name: &Spanned<String>) -> Result<(), ConfigError> {
        if is_variable_name(name.get_ref()) {
            return Ok(());
        }
        let problem = Problem::EnvName {
            tool: self.tool.to_owned(),
            setting: setting.to_owned(),
            name: name.get_ref().clone(),
        };
        Err(self.error(&name.span(), problem))
    }

    fn inherit_env(&self, raw: Option<Spanned<RawInheritEnv>>) -> Result<InheritEnv, ConfigError> {
        Ok(match raw.map(Spanned::into_inner) {
            None | Some(RawInheritEnv::All(false)) => InheritEnv::Minimal,
            Some(RawInheritEnv::All(true)) => InheritEnv::All,
            Some(RawInheritEnv::Names(names)) => {
                for name in &names {
                    self.env_name("inherit_env", name)?;
                }
                InheritEnv::Names(names.into_iter().map(Spanned::into_inner).collect())
            }
        })
    }

    fn stdin(&self, raw: Option<Spanned<RawStdin>>) -> Result<Stdin, ConfigError> {
        let Some(raw) = raw else {
            return Ok(Stdin::Answers);
        };
        let span = raw.span();
        match raw.into_inner() {
            RawStdin::None => Ok(Stdin::Answers),
            RawStdin::Arg(name) if self.properties.contains_key(&name) => Ok(Stdin::Arg(name)),
            RawStdin::Arg(name) => {
                let problem = Problem::UnknownArgument {
                    tool: self.tool.to_owned(),
                    setting: "stdin".to_owned(),
                    name,
                };
                Err(self.error(&span, problem))
            }
        }
    }

    /// The directory, joined to `base` if relative; it must exist.
    fn cwd(&self, cwd: &Spanned<String>, base: &Path) -> Result<std::path::PathBuf, ConfigError> {
        let path = base.join(cwd.get_ref());
        let reason = if cwd.get_ref().is_empty() {
            Some("must not be empty".to_owned())
        } else {
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => None,
                Ok(_) => Some("is not a directory".to_owned()),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    Some("does not exist".to_owned())
                }
                Err(err) => Some(format!("cannot be read: {err}")),
            }
        };
        match reason {
            None => Ok(path),
            Some(reason) => {
                let problem = Problem::Cwd {
                    tool: self.tool.to_owned(),
                    path,
                    reason,
                };
                Err(self.error(&cwd.span(), problem))
            }
        }
    }

    /// The output schema as JSON, checked: an object schema that compiles, and only for
    /// JSON output.
    fn output_schema(
        &self,
        output: OutputFormat,
        raw: Option<Spanned<toml::Table>>,
    ) -> Result<Option<Value>, ConfigError> {
        let Some(raw) = raw else {
            return Ok(None);
        };
        let bad = |reason: String| {
            let problem = Problem::OutputSchema {
                tool: self.tool.to_owned(),
                reason,
            };
            self.error(&raw.span(), problem)
        };
        if output != OutputFormat::Json {
            return Err(bad("needs output = \"json\"".to_owned()));
        }
        let schema = serde_json::to_value(raw.get_ref()).map_err(|err| bad(err.to_string()))?;
        schema_properties(&schema).map_err(&bad)?;
        jsonschema::validator_for(&schema)
            .map_err(|err| bad(format!("is not a valid JSON Schema: {err}")))?;
        Ok(Some(schema))
    }
}

/// Whether `name` can be an environment variable's name: not empty, no `=`, no NUL.
fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

/// The `properties` of an object schema (empty if it has none).
///
/// # Errors
/// A reason, if `schema` is not `"type": "object"` or its `properties` is not a table.
fn schema_properties(schema: &Value) -> Result<Map<String, Value>, String> {
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        Some(other) => {
            return Err(format!(
                "must have \"type\" = \"object\" at the top, not {other}"
            ));
        }
        None => return Err("must have \"type\" = \"object\" at the top".to_owned()),
    }
    match schema.get("properties") {
        None => Ok(Map::new()),
        Some(Value::Object(properties)) => Ok(properties.clone()),
        Some(_) => Err("properties must be a table".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::config::Config;
    use crate::config::tests::invalid;

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
        assert_eq!(tool.max_output, 16 << 20);
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
