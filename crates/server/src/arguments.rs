//! Validation of `tools/call` arguments against each tool's `inputSchema`, before any task
//! is created or any work starts.
//!
//! 2025-11-25 tools: `inputSchema` is a JSON Schema object (`type: "object"`); without a
//! `$schema` it is JSON Schema 2020-12. Each schema is compiled once, when the server is
//! built ([`ArgumentsSchema::compile`]); a schema that does not compile refuses the build.

use jsonschema::Validator;
use serde_json::Value;

use crate::server::BuildError;

/// At most this many violations are reported for one call; a value that breaks many rules
/// would otherwise make the error as large as itself.
const MAX_VIOLATIONS: usize = 20;
/// At most this many violations are spelled out in the error message (all go in `data`).
const MESSAGE_VIOLATIONS: usize = 3;
/// A violation's message is cut to this many characters: it quotes the offending value,
/// which may be large.
const MAX_MESSAGE_CHARS: usize = 300;

/// Checks a tool's `inputSchema` as [`ServerBuilder::build`](crate::ServerBuilder::build)
/// does, without building a server (what `mcp-tasks check-config` runs).
///
/// # Errors
/// The [`BuildError`] the build would refuse the tool with.
pub fn check_input_schema(tool: &str, schema: &Value) -> Result<(), BuildError> {
    ArgumentsSchema::compile(tool, schema).map(drop)
}

/// A tool's compiled `inputSchema`.
pub(crate) struct ArgumentsSchema {
    validator: Validator,
}

impl ArgumentsSchema {
    /// Compiles `schema`, the `inputSchema` of tool `tool`.
    ///
    /// # Errors
    /// [`BuildError::InputSchemaNotObject`] if the schema does not declare `type: "object"`;
    /// [`BuildError::InvalidInputSchema`] if it is not a valid JSON Schema (checked against
    /// its draft's meta-schema) or refers to a schema that cannot be resolved (remote
    /// references are not fetched).
    pub(crate) fn compile(tool: &str, schema: &Value) -> Result<ArgumentsSchema, BuildError> {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(BuildError::InputSchemaNotObject { tool: tool.to_owned() });
        }
        let validator = jsonschema::validator_for(schema)
            .map_err(|err| BuildError::InvalidInputSchema { tool: tool.to_owned(), reason: err.to_string() })?;
        Ok(ArgumentsSchema { validator })
    }

    /// Checks the `arguments` of a call of tool `tool`.
    ///
    /// # Errors
    /// [`InvalidArguments`] with the violations found (at most [`MAX_VIOLATIONS`]).
    pub(crate) fn check(&self, tool: &str, arguments: &Value) -> Result<(), InvalidArguments> {
        let violations: Vec<Violation> = self
            .validator
            .iter_errors(arguments)
            .take(MAX_VIOLATIONS)
            .map(|error| Violation { path: error.instance_path().to_string(), message: shorten(&error.to_string()) })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(InvalidArguments { tool: tool.to_owned(), violations })
        }
    }
}

/// The arguments of a call break the tool's `inputSchema`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Invalid arguments for tool {tool}: {}", summary(.violations))]
pub(crate) struct InvalidArguments {
    /// The tool called.
    pub(crate) tool: String,
    /// What is wrong, in the order the validator found it; never empty.
    pub(crate) violations: Vec<Violation>,
}

/// One rule of the schema that the arguments break.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Violation {
    /// Where, as a JSON Pointer into the arguments (`/package`, `/files/0`; empty for the
    /// arguments object itself).
    pub(crate) path: String,
    /// What rule, as the validator words it (`5 is not of type "string"`).
    pub(crate) message: String,
}

impl std::fmt::Display for Violation {
    /// `/package: 5 is not of type "string"`, or just the message at the top level.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The first few violations, and how many more there are.
fn summary(violations: &[Violation]) -> String {
    let mut text = violations.iter().take(MESSAGE_VIOLATIONS).map(Violation::to_string).collect::<Vec<_>>().join("; ");
    if let Some(more) = violations.len().checked_sub(MESSAGE_VIOLATIONS).filter(|more| *more > 0) {
        text.push_str(&format!("; and {more} more (see the error's data)"));
    }
    text
}

fn shorten(message: &str) -> String {
    if message.chars().count() <= MAX_MESSAGE_CHARS {
        return message.to_owned();
    }
    let mut short: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> ArgumentsSchema {
        let schema = json!({
            "type": "object",
            "properties": {"package": {"type": "string"}, "jobs": {"type": "integer", "minimum": 1}},
            "required": ["package"],
        });
        ArgumentsSchema::compile("run_tests", &schema).unwrap()
    }

    #[test]
    fn a_violation_names_the_field_and_the_rule() {
        let err = schema().check("run_tests", &json!({"package": 5})).unwrap_err();
        assert_eq!(err.to_string(), r#"Invalid arguments for tool run_tests: /package: 5 is not of type "string""#);
        assert_eq!(err.violations, vec![Violation { path: "/package".into(), message: r#"5 is not of type "string""#.into() }]);
    }

    #[test]
    fn a_missing_required_property_is_reported_at_the_top_level() {
        let err = schema().check("run_tests", &json!({})).unwrap_err();
        assert_eq!(err.to_string(), r#"Invalid arguments for tool run_tests: "package" is a required property"#);
        assert_eq!(err.violations[0].path, "");
    }

    #[test]
    fn every_violation_is_reported_and_the_message_names_the_first_three() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}, "d": {"type": "string"},
        }});
        let schema = ArgumentsSchema::compile("t", &schema).unwrap();
        let err = schema.check("t", &json!({"a": 1, "b": 2, "c": 3, "d": 4})).unwrap_err();
        assert_eq!(err.violations.len(), 4);
        assert!(err.to_string().ends_with("; and 1 more (see the error's data)"), "{err}");
    }

    #[test]
    fn a_huge_offending_value_is_cut_short_in_the_message() {
        let err = schema().check("run_tests", &json!({"package": "x", "jobs": vec![0; 10_000]})).unwrap_err();
        assert!(err.violations[0].message.chars().count() <= MAX_MESSAGE_CHARS + 1);
    }

    #[test]
    fn valid_arguments_pass() {
        schema().check("run_tests", &json!({"package": "core", "jobs": 4, "extra": true})).unwrap();
    }

    #[test]
    fn a_schema_that_is_not_valid_json_schema_is_refused() {
        let bad = json!({"type": "object", "properties": {"a": {"type": "strng"}}});
        let err = ArgumentsSchema::compile("t", &bad).err().unwrap();
        assert!(matches!(&err, BuildError::InvalidInputSchema { tool, .. } if tool == "t"), "{err:?}");
        let bad = json!({"type": "object", "properties": {"a": {"minLength": -1}}});
        assert!(ArgumentsSchema::compile("t", &bad).is_err());
    }

    #[test]
    fn a_schema_with_an_unresolvable_reference_is_refused() {
        let remote = json!({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/a.json"}}});
        assert!(matches!(ArgumentsSchema::compile("t", &remote), Err(BuildError::InvalidInputSchema { .. })));
        let dangling = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}});
        assert!(matches!(ArgumentsSchema::compile("t", &dangling), Err(BuildError::InvalidInputSchema { .. })));
    }

    #[test]
    fn a_schema_that_is_not_an_object_schema_is_refused() {
        for schema in [json!({}), json!({"type": "string"}), json!({"properties": {}}), json!(true)] {
            let err = ArgumentsSchema::compile("t", &schema).err();
            assert_eq!(err, Some(BuildError::InputSchemaNotObject { tool: "t".into() }), "{schema}");
        }
    }
}
