//! The checks of a `[[tools]]` entry's settings ([`Checker`]): templates (command elements
//! and `env` values) must be well formed and name only properties of the tool's input
//! schema; variable names must be names; `cwd` must be an existing directory;
//! `output_schema` must compile.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};
use toml::Spanned;

use super::raw::{RawInheritEnv, RawStdin};
use super::{InheritEnv, OutputFormat, Stdin};
use crate::config::lines::Lines;
use crate::config::{ConfigError, Problem};
use crate::template::{self, Piece};

/// What the checks of one tool share: where the lines are, the tool's name, and the
/// properties of its input schema that placeholders may name.
pub(crate) struct Checker<'a> {
    pub(crate) lines: Lines<'a>,
    pub(crate) tool: &'a str,
    pub(crate) properties: Map<String, Value>,
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

    pub(crate) fn command(
        &self,
        command: Spanned<Vec<Spanned<String>>>,
    ) -> Result<Vec<String>, ConfigError> {
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

    pub(crate) fn env(
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

    pub(crate) fn inherit_env(
        &self,
        raw: Option<Spanned<RawInheritEnv>>,
    ) -> Result<InheritEnv, ConfigError> {
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

    pub(crate) fn stdin(&self, raw: Option<Spanned<RawStdin>>) -> Result<Stdin, ConfigError> {
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
    pub(crate) fn cwd(
        &self,
        cwd: &Spanned<String>,
        base: &Path,
    ) -> Result<std::path::PathBuf, ConfigError> {
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
    pub(crate) fn output_schema(
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
pub(crate) fn schema_properties(schema: &Value) -> Result<Map<String, Value>, String> {
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
