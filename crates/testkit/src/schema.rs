//! Validation of messages against the official MCP JSON schemas, by era.
//!
//! The schemas are data kept outside the repository, in `shared/reference/schemas/` beside the
//! checkout (locally `/work/shared` next to `/work/main`). They are read at test time and never
//! copied into the repository. Tests call [`schemas_available_or_skip`] (the legacy schema) or
//! [`era_schemas_available_or_skip`] first: on a developer machine without the schemas the
//! check is skipped with a message, on CI (`CI=true`) it fails.
//!
//! # Eras
//! - [`Era::Legacy`]: `mcp-2025-11-25.schema.json`, which has tasks in the core.
//! - [`Era::Modern`]: `mcp-2026-07-28.schema.json` together with the tasks extension's
//!   `ext-tasks-draft.schema.json`. The core has no tasks; the extension's file defines them
//!   (`DetailedTask`, `CreateTaskResult`, `GetTaskRequest`, ...) and carries its own copies of
//!   the core definitions it refers to. Neither file refers into the other (every `$ref` is a
//!   local `#/$defs/...`), so the two `$defs` are merged into one and every reference resolves
//!   inside it. A name defined in both must be defined the same in both, or validation fails
//!   saying so.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::Validator;
use serde_json::{Map, Value};

use crate::era::Era;

/// File name of the 2025-11-25 ("Legacy") schema inside the schemas directory.
const LEGACY_FILE: &str = "mcp-2025-11-25.schema.json";

/// File name of the 2026-07-28 ("Modern") core schema inside the schemas directory.
const MODERN_FILE: &str = "mcp-2026-07-28.schema.json";

/// File name of the tasks extension's schema (`io.modelcontextprotocol/tasks`), for the
/// modern era.
const EXT_TASKS_FILE: &str = "ext-tasks-draft.schema.json";

/// Path of the schemas directory below a `shared` checkout's parent.
const SCHEMAS_DIR: [&str; 3] = ["shared", "reference", "schemas"];

/// The schema files of `era`, each a set of `$defs`, merged in this order.
fn era_files(era: Era) -> &'static [&'static str] {
    match era {
        Era::Legacy => &[LEGACY_FILE],
        Era::Modern => &[MODERN_FILE, EXT_TASKS_FILE],
    }
}

/// An era's schema as loaded: its merged root, or why there is none.
enum Loaded {
    /// `{"$schema": ..., "$defs": {...}}` with the `$defs` of every file of the era.
    Ready(Value),
    /// A file is missing (skip locally, fail on CI).
    Missing(String),
    /// The files are there but cannot be merged (always a failure).
    Broken(String),
}

/// The official MCP 2025-11-25 JSON schema, or `None` when it cannot be found or read.
///
/// Looks in `<ancestor>/shared/reference/schemas/` and `<ancestor>/../shared/reference/schemas/`
/// for every ancestor of this crate's directory, nearest first. The file is read once.
pub fn legacy_schema() -> Option<&'static Value> {
    static SCHEMA: OnceLock<Option<Value>> = OnceLock::new();
    SCHEMA.get_or_init(|| read_schema(LEGACY_FILE)).as_ref()
}

/// Validates `value` against the definition `#/$defs/<def>` of the 2025-11-25 schema, such as
/// `"CallToolResult"` or `"JSONRPCMessage"`: [`validate`] with [`Era::Legacy`].
///
/// # Errors
/// As [`validate`].
pub fn validate_legacy(def: &str, value: &Value) -> Result<(), String> {
    validate(Era::Legacy, def, value)
}

/// Validates `value` against the definition `#/$defs/<def>` of `era`'s schema, such as
/// `"CallToolResult"`, or, for [`Era::Modern`], a definition of the tasks extension
/// such as `"DetailedTask"` or `"CreateTaskResult"`.
///
/// # Errors
/// Returns every validation error, one per line as `<instance path>: <error>`, or a message
/// saying that a schema file or the definition is missing, or that the era's files disagree.
pub fn validate(era: Era, def: &str, value: &Value) -> Result<(), String> {
    let schema = match era_schema(era) {
        Loaded::Ready(schema) => schema,
        Loaded::Missing(message) | Loaded::Broken(message) => return Err(message.clone()),
    };
    let validator = validator(era, schema, def)?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|error| {
            let at = error.instance_path().to_string();
            let at = if at.is_empty() {
                "(root)".to_owned()
            } else {
                at
            };
            format!("{at}: {error}")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("not a valid {def}:\n{}", errors.join("\n")))
    }
}

/// Whether the official 2025-11-25 schema is present: [`era_schemas_available_or_skip`] with
/// [`Era::Legacy`].
///
/// # Panics
/// As [`era_schemas_available_or_skip`].
pub fn schemas_available_or_skip() -> bool {
    era_schemas_available_or_skip(Era::Legacy)
}

/// Whether every schema file of `era` is present. When one is not, prints
/// `skipping: official schemas not found at ...` and returns `false`.
///
/// # Panics
/// When a file is missing and the environment variable `CI` is `"true"`: a suite that
/// quietly skips on CI is worse than none. Also when the era's files are present but
/// disagree on a definition.
pub fn era_schemas_available_or_skip(era: Era) -> bool {
    let message = match era_schema(era) {
        Loaded::Ready(_) => return true,
        Loaded::Broken(message) => panic!("{message}"),
        Loaded::Missing(message) => message,
    };
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!("CI=true but {message}");
    }
    println!("skipping: {message}");
    false
}

/// The era's merged schema, loaded once per process.
fn era_schema(era: Era) -> &'static Loaded {
    static LEGACY: OnceLock<Loaded> = OnceLock::new();
    static MODERN: OnceLock<Loaded> = OnceLock::new();
    let cell = match era {
        Era::Legacy => &LEGACY,
        Era::Modern => &MODERN,
    };
    cell.get_or_init(|| load(era))
}

/// Reads the era's files and merges their `$defs`.
fn load(era: Era) -> Loaded {
    let mut files = Vec::new();
    for &file in era_files(era) {
        let schema = if file == LEGACY_FILE {
            legacy_schema().cloned()
        } else {
            read_schema(file)
        };
        match schema {
            Some(schema) => files.push((file, schema)),
            None => return Loaded::Missing(not_found_message(file)),
        }
    }
    match merge(&files) {
        Ok(root) => Loaded::Ready(root),
        Err(message) => Loaded::Broken(message),
    }
}

/// One root with the `$schema` of the first file and the `$defs` of all of them.
///
/// # Errors
/// When a file has no `$defs` object, or two files define one name differently.
fn merge(files: &[(&str, Value)]) -> Result<Value, String> {
    let mut defs: Map<String, Value> = Map::new();
    let mut origin: HashMap<String, &str> = HashMap::new();
    for (file, schema) in files {
        let more = schema
            .get("$defs")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{file} has no \"$defs\" object"))?;
        for (name, def) in more {
            if let Some(seen) = defs.get(name) {
                if seen != def {
                    let first = origin.get(name).copied().unwrap_or_default();
                    return Err(format!(
                        "{first} and {file} define \"{name}\" differently; \
                         the schemas cannot be merged"
                    ));
                }
                continue;
            }
            defs.insert(name.clone(), def.clone());
            origin.insert(name.clone(), file);
        }
    }
    let mut root = Map::new();
    if let Some(dialect) = files.first().and_then(|(_, schema)| schema.get("$schema")) {
        root.insert("$schema".to_owned(), dialect.clone());
    }
    root.insert("$defs".to_owned(), Value::Object(defs));
    Ok(Value::Object(root))
}

/// The compiled validator of one definition of one era, compiled once per process.
fn validator(era: Era, schema: &Value, def: &str) -> Result<Arc<Validator>, String> {
    type Cache = Mutex<HashMap<(Era, String), Arc<Validator>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    let key = (era, def.to_owned());
    if let Some(validator) = lock(cache).get(&key) {
        return Ok(Arc::clone(validator));
    }
    let validator = Arc::new(compile(schema, def)?);
    lock(cache).insert(key, Arc::clone(&validator));
    Ok(validator)
}

/// Locks the cache, ignoring poisoning (a panicking test must not fail the others).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Compiles `{"$ref": "#/$defs/<def>"}` together with the schema's `$defs`.
fn compile(schema: &Value, def: &str) -> Result<Validator, String> {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .ok_or("the schema has no \"$defs\" object")?;
    if !defs.contains_key(def) {
        return Err(format!("the schema has no definition \"{def}\""));
    }
    let mut root = Map::new();
    if let Some(dialect) = schema.get("$schema") {
        root.insert("$schema".to_owned(), dialect.clone());
    }
    root.insert("$ref".to_owned(), Value::String(format!("#/$defs/{def}")));
    root.insert("$defs".to_owned(), Value::Object(defs.clone()));
    jsonschema::validator_for(&Value::Object(root))
        .map_err(|err| format!("cannot compile \"{def}\": {err}"))
}

/// Reads and parses one schema file from the first schemas directory that has it.
fn read_schema(file: &str) -> Option<Value> {
    let path = candidate_dirs()
        .into_iter()
        .map(|dir| dir.join(file))
        .find(|path| path.is_file())?;
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|err| panic!("{} is not JSON: {err}", path.display()));
    Some(value)
}

/// The directories searched for schemas, nearest first.
fn candidate_dirs() -> Vec<PathBuf> {
    let start = Path::new(env!("CARGO_MANIFEST_DIR"));
    let below = |base: &Path| {
        SCHEMAS_DIR
            .iter()
            .fold(base.to_path_buf(), |dir, part| dir.join(part))
    };
    start
        .ancestors()
        .flat_map(|ancestor| [below(ancestor), below(&ancestor.join(".."))])
        .collect()
}

/// `official schemas not found at <dirs> (looking for <file>)`.
fn not_found_message(file: &str) -> String {
    let dirs: Vec<String> = candidate_dirs()
        .iter()
        .map(|dir| dir.display().to_string())
        .collect();
    format!(
        "official schemas not found at {} (looking for {file})",
        dirs.join(", ")
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

    use serde_json::json;

    use super::*;

    /// A modern task's common fields, with `status`.
    fn modern_task(status: &str) -> Value {
        json!({
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": status,
            "createdAt": "2026-07-28T10:30:00Z",
            "lastUpdatedAt": "2026-07-28T10:40:00Z",
            "ttlMs": 60000,
            "pollIntervalMs": 5000
        })
    }

    /// `good` is a valid `def` of `era` and `bad` is not, with an error naming `def`.
    fn tells_apart(era: Era, def: &str, good: &Value, bad: &Value) {
        validate(era, def, good).unwrap_or_else(|err| panic!("{era:?} {def}: {err}"));
        let err = validate(era, def, bad).expect_err("the bad message is refused");
        assert!(err.starts_with(&format!("not a valid {def}:")), "{err}");
    }

    #[test]
    fn a_legacy_task_needs_its_ttl() {
        if !era_schemas_available_or_skip(Era::Legacy) {
            return;
        }
        let good = json!({
            "taskId": "t1", "status": "working", "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": 60000
        });
        let mut bad = good.clone();
        bad.as_object_mut().unwrap().remove("ttl");
        tells_apart(Era::Legacy, "Task", &good, &bad);
        assert_eq!(
            validate_legacy("Task", &good),
            validate(Era::Legacy, "Task", &good)
        );
        assert!(
            validate_legacy("Task", &bad).is_err(),
            "the wrapper refuses it too"
        );
    }

    #[test]
    fn a_modern_detailed_task_needs_the_data_of_its_status() {
        if !era_schemas_available_or_skip(Era::Modern) {
            return;
        }
        let mut good = modern_task("completed");
        good["result"] = json!({"content": [{"type": "text", "text": "done"}]});
        let bad = modern_task("completed"); // a completed task without its result
        tells_apart(Era::Modern, "DetailedTask", &good, &bad);
    }

    #[test]
    fn a_modern_create_task_result_needs_its_result_type_and_ttl_ms() {
        if !era_schemas_available_or_skip(Era::Modern) {
            return;
        }
        let mut good = modern_task("working");
        good["resultType"] = json!("task");
        let mut legacy_spelling = good.clone();
        let fields = legacy_spelling.as_object_mut().unwrap();
        fields.remove("ttlMs");
        fields.insert("ttl".to_owned(), json!(60000));
        tells_apart(Era::Modern, "CreateTaskResult", &good, &legacy_spelling);
        let mut untyped = good.clone();
        untyped.as_object_mut().unwrap().remove("resultType");
        assert!(validate(Era::Modern, "CreateTaskResult", &untyped).is_err());
    }

    #[test]
    fn a_modern_core_definition_validates_from_the_core_file() {
        if !era_schemas_available_or_skip(Era::Modern) {
            return;
        }
        let good = json!({"resultType": "complete", "content": [{"type": "text", "text": "hi"}]});
        let bad = json!({"resultType": "complete", "content": [{"type": "text"}]});
        tells_apart(Era::Modern, "CallToolResult", &good, &bad);
    }

    #[test]
    fn an_unknown_definition_is_an_error_not_a_pass() {
        if !era_schemas_available_or_skip(Era::Modern) {
            return;
        }
        let err = validate(Era::Modern, "NoSuchThing", &json!({})).unwrap_err();
        assert!(err.contains("no definition \"NoSuchThing\""), "{err}");
        // The legacy era has no extension: its tasks are in the core, spelled the old way.
        assert!(validate(Era::Legacy, "DetailedTask", &json!({})).is_err());
    }

    #[test]
    fn merging_refuses_two_different_definitions_of_one_name() {
        let one = json!({"$defs": {"A": {"type": "string"}, "B": {"type": "object"}}});
        let same = json!({"$defs": {"B": {"type": "object"}, "C": {"$ref": "#/$defs/A"}}});
        let other = json!({"$defs": {"B": {"type": "array"}}});
        let merged = merge(&[("one", one.clone()), ("same", same)]).unwrap();
        let names: Vec<&String> = merged["$defs"].as_object().unwrap().keys().collect();
        assert_eq!(names.len(), 3, "{names:?}");
        let err = merge(&[("one", one), ("other", other)]).unwrap_err();
        assert!(
            err.contains("one and other define \"B\" differently"),
            "{err}"
        );
    }
}
