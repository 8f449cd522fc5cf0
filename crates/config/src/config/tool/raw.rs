//! One `[[tools]]` entry as written ([`RawTool`]), and its check into a [`ToolConfig`]: the
//! input schema first (placeholders may name only its properties), then every setting,
//! each naming its line when it is refused.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

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

    /// Checks the entry; a relative `cwd` is joined to `base`.
    pub(crate) fn check(self, lines: Lines<'_>, base: &Path) -> Result<ToolConfig, ConfigError> {
        let name = self.name.get_ref().clone();
        let (input_schema, properties) = self.input_schema(lines)?;
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
        let inline_wait = match &self.inline_wait {
            Some(value) => Some(duration("inline_wait", value)?),
            None => None,
        };
        let sync_wait = match &self.sync_wait {
            Some(value) => Some(lines.duration_or_off(&format!("sync_wait of tool `{name}`"), value)?),
            None => None,
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
            inline_wait,
            sync_wait,
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
