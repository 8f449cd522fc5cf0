//! Validation of messages against the official MCP JSON schemas.
//!
//! The schemas are data kept outside the repository, in `shared/reference/schemas/` beside the
//! checkout (locally `/work/shared` next to `/work/main`). They are read at test time and never
//! copied into the repository. Tests call [`schemas_available_or_skip`] first: on a developer
//! machine without the schemas the check is skipped with a message, on CI (`CI=true`) it fails.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::Validator;
use serde_json::{Map, Value};

/// File name of the 2025-11-25 ("Legacy") schema inside the schemas directory.
const LEGACY_FILE: &str = "mcp-2025-11-25.schema.json";

/// Path of the schemas directory below a `shared` checkout's parent.
const SCHEMAS_DIR: [&str; 3] = ["shared", "reference", "schemas"];

/// The official MCP 2025-11-25 JSON schema, or `None` when it cannot be found or read.
///
/// Looks in `<ancestor>/shared/reference/schemas/` and `<ancestor>/../shared/reference/schemas/`
/// for every ancestor of this crate's directory, nearest first. The file is read once.
pub fn legacy_schema() -> Option<&'static Value> {
    static SCHEMA: OnceLock<Option<Value>> = OnceLock::new();
    SCHEMA.get_or_init(|| read_schema(LEGACY_FILE)).as_ref()
}

/// Validates `value` against the definition `#/$defs/<def>` of the 2025-11-25 schema, such as
/// `"CallToolResult"` or `"JSONRPCMessage"`.
///
/// # Errors
/// Returns every validation error, one per line as `<instance path>: <error>`, or a message
/// saying that the schema or the definition is missing.
pub fn validate_legacy(def: &str, value: &Value) -> Result<(), String> {
    let schema = legacy_schema().ok_or_else(|| not_found_message(LEGACY_FILE))?;
    let validator = legacy_validator(schema, def)?;
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

/// Whether the official schemas are present. When they are not, prints
/// `skipping: official schemas not found at ...` and returns `false`.
///
/// # Panics
/// When the schemas are missing and the environment variable `CI` is `"true"`: a suite that
/// quietly skips on CI is worse than none.
pub fn schemas_available_or_skip() -> bool {
    if legacy_schema().is_some() {
        return true;
    }
    let message = not_found_message(LEGACY_FILE);
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!("CI=true but {message}");
    }
    println!("skipping: {message}");
    false
}

/// The compiled validator of one definition, compiled once per process.
fn legacy_validator(schema: &Value, def: &str) -> Result<Arc<Validator>, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Validator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(validator) = lock(cache).get(def) {
        return Ok(Arc::clone(validator));
    }
    let validator = Arc::new(compile(schema, def)?);
    lock(cache).insert(def.to_owned(), Arc::clone(&validator));
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
