//! One `[[tools]]` entry as written ([`RawTool`]), and its check into a [`ToolConfig`]: the
//! input schema first (placeholders may name only its properties), then every setting,
//! each naming its line when it is refused.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde_json::{Map, Value};
use toml::Spanned;

use super::checker::{Checker, schema_properties};
use super::{OutputFormat, RestartPolicy, TaskSupport, ToolConfig};
use crate::config::lines::{Lines, RawSize};
use crate::config::{ConfigError, Problem};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTool {
    pub(crate) name: Spanned<String>,
    #[serde(default)]
    description: String,
    input_schema: Option<Spanned<toml::Table>>,
    command: Spanned<Vec<Spanned<String>>>,
    #[serde(default = "super::default_task_support")]
    task_support: TaskSupport,
    timeout: Option<Spanned<String>>,
    inline_wait: Option<Spanned<String>>,
    sync_wait: Option<Spanned<String>>,
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
pub(crate) enum RawInheritEnv {
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
pub(crate) enum RawStdin {
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

impl RawTool {
    /// The input schema as JSON (`{"type": "object"}` if left out), and its properties.
    ///
    /// # Errors
    /// A [`Problem::Schema`] on the schema's line (the name's, if left out) if it is not an
    /// object schema or not a valid JSON Schema.
    fn input_schema(&self, lines: Lines<'_>) -> Result<(Value, Map<String, Value>), ConfigError> {
        let name = self.name.get_ref();
        let bad = |line: usize, reason: String| {
            let problem = Problem::Schema {
                tool: name.clone(),
                reason,
            };
            lines.error(line, problem)
        };
        let (input_schema, schema_line) = match &self.input_schema {
            Some(table) => {
                let line = lines.of(&table.span());
                let schema = serde_json::to_value(table.get_ref())
                    .map_err(|err| bad(line, err.to_string()))?;
                (schema, line)
            }
            None => (
                serde_json::json!({"type": "object"}),
                lines.of(&self.name.span()),
            ),
        };
        let properties =
            schema_properties(&input_schema).map_err(|reason| bad(schema_line, reason))?;
        // Compiled as the server compiles it at start (`serve` refuses a schema that does not).
        jsonschema::validator_for(&input_schema)
            .map_err(|err| bad(schema_line, format!("is not a valid JSON Schema: {err}")))?;
        Ok((input_schema, properties))
    }

    /// Checks the entry; a relative `cwd` is joined to `base`. Every setting is checked and
    /// each problem reported (those of the command, `env`, `stdin` and `cwd`, whose
    /// placeholders name the schema's properties, only once the schema is readable).
    pub(crate) fn check(self, lines: Lines<'_>, base: &Path) -> Result<ToolConfig, Vec<ConfigError>> {
        let mut problems = Vec::new();
        let name = self.name.get_ref().clone();
        let limits = self.limits(lines, &name, &mut problems);
        let schema = kept(&mut problems, self.input_schema(lines));
        let mut run = None;
        let input_schema = schema.map(|(input_schema, properties)| {
            let checker = Checker { lines, tool: &name, properties };
            let command = kept(&mut problems, checker.command(self.command));
            let env = kept(&mut problems, checker.env(self.env.unwrap_or_default()));
            let inherit_env = kept(&mut problems, checker.inherit_env(self.inherit_env));
            let stdin = kept(&mut problems, checker.stdin(self.stdin));
            let cwd = optional(&mut problems, self.cwd.as_ref().map(|value| checker.cwd(value, base)));
            let output_schema = kept(&mut problems, checker.output_schema(self.output, self.output_schema));
            if let (Some(command), Some(env), Some(inherit_env), Some(stdin), Some(cwd), Some(output_schema)) =
                (command, env, inherit_env, stdin, cwd, output_schema)
            {
                run = Some((command, env, inherit_env, stdin, cwd, output_schema));
            }
            input_schema
        });
        let (Some(input_schema), Some((command, env, inherit_env, stdin, cwd, output_schema)), Some(limits)) = (input_schema, run, limits)
        else {
            return Err(problems);
        };
        Ok(ToolConfig {
            name: self.name.into_inner(),
            description: self.description,
            input_schema,
            command,
            task_support: self.task_support,
            timeout: limits.timeout,
            inline_wait: limits.inline_wait,
            sync_wait: limits.sync_wait,
            kill_grace: limits.kill_grace,
            on_restart: self.on_restart,
            max_attempts: limits.max_attempts,
            max_concurrent: limits.max_concurrent,
            cwd,
            env,
            inherit_env,
            stdin,
            max_output: limits.max_output,
            output: self.output,
            output_schema,
        })
    }

    /// The tool's times and limits, each checked (its problem recorded) and defaulted; `None`
    /// if any had a problem.
    fn limits(&self, lines: Lines<'_>, name: &str, problems: &mut Vec<ConfigError>) -> Option<Limits> {
        let duration = |setting: &str, value: &Spanned<String>| lines.duration(&format!("{setting} of tool `{name}`"), value);
        let inline_wait = optional(problems, self.inline_wait.as_ref().map(|value| duration("inline_wait", value)));
        let sync_wait = optional(
            problems,
            self.sync_wait.as_ref().map(|value| lines.duration_or_off(&format!("sync_wait of tool `{name}`"), value)),
        );
        let timeout = optional(problems, self.timeout.as_ref().map(|value| duration("timeout", value)));
        let kill_grace = optional(problems, self.kill_grace.as_ref().map(|value| duration("kill_grace", value)));
        let max_output = optional(problems, self.max_output.as_ref().map(|value| lines.size(&format!("max_output of tool `{name}`"), value)));
        let max_attempts = optional(
            problems,
            self.max_attempts.as_ref().map(|value| {
                if self.on_restart == RestartPolicy::Retry {
                    lines.count(&format!("max_attempts of tool `{name}`"), value)
                } else {
                    Err(lines.error(lines.of(&value.span()), Problem::MaxAttemptsWithoutRetry { tool: name.to_owned() }))
                }
            }),
        );
        let max_concurrent =
            optional(problems, self.max_concurrent.as_ref().map(|value| lines.count(&format!("max_concurrent of tool `{name}`"), value)));
        Some(Limits {
            inline_wait: inline_wait?,
            sync_wait: sync_wait?,
            timeout: timeout?,
            kill_grace: kill_grace?.unwrap_or(ToolConfig::DEFAULT_KILL_GRACE),
            max_output: max_output?.unwrap_or(ToolConfig::DEFAULT_MAX_OUTPUT),
            max_attempts: max_attempts?.unwrap_or(ToolConfig::DEFAULT_MAX_ATTEMPTS),
            max_concurrent: max_concurrent?,
        })
    }
}

/// A tool's times and limits, checked.
struct Limits {
    inline_wait: Option<Duration>,
    sync_wait: Option<Duration>,
    timeout: Option<Duration>,
    kill_grace: Duration,
    max_output: usize,
    max_attempts: u32,
    max_concurrent: Option<u32>,
}

/// The value of `result`, or `None` with its problem recorded.
fn kept<T>(problems: &mut Vec<ConfigError>, result: Result<T, ConfigError>) -> Option<T> {
    result.map_err(|problem| problems.push(problem)).ok()
}

/// An optional setting: `Some(None)` when left out, `Some(Some(value))` when good, `None`
/// with its problem recorded when not.
fn optional<T>(problems: &mut Vec<ConfigError>, setting: Option<Result<T, ConfigError>>) -> Option<Option<T>> {
    match setting {
        None => Some(None),
        Some(result) => kept(problems, result).map(Some),
    }
}
