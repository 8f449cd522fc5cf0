//! The house rules of the workspace, checked on the source (issue 40): no Rust file under
//! `crates/` over 800 lines, no function over 80, and crate dependencies that point one way
//! (the stores and the engine build no HTTP stack; `server` holds MCP semantics only).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The longest a file under `crates/` may be, in lines.
const MAX_FILE_LINES: usize = 800;
/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 80;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file below `crates/`, build outputs left out.
fn rust_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![workspace().join("crates")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("a readable folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                if path.file_name().is_none_or(|name| name != "target") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() > 200, "the crates' sources are where this test expects them");
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace()).unwrap_or(path).display().to_string()
}

#[test]
fn no_rust_file_under_crates_is_over_800_lines() {
    let long: Vec<String> = rust_files()
        .into_iter()
        .filter_map(|path| {
            let lines = fs::read_to_string(&path).expect("a UTF-8 source").lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{} ({lines} lines)", relative(&path)))
        })
        .collect();
    assert!(long.is_empty(), "files over {MAX_FILE_LINES} lines: {long:#?}");
}

/// Whether `line` opens a function item (`fn`, with any visibility and qualifiers).
fn opens_fn(line: &str) -> bool {
    let mut rest = line.trim_start();
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "default ", "const ", "async ", "unsafe ", "extern \"C\" "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    rest.strip_prefix("fn ").is_some_and(|name| name.starts_with(|c: char| c.is_alphabetic() || c == '_'))
}

/// The functions of `text` over [`MAX_FN_LINES`], as `name:line (lines)`: each measured from
/// its `fn` line to the first later line that is its indentation and a lone `}` (rustfmt's
/// layout). Declarations without a body, and one-line bodies, are not counted.
fn long_functions(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        if !opens_fn(line) {
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let Some(open) = (start..lines.len()).find(|&n| {
            let trimmed = lines[n].trim_end();
            trimmed.ends_with('{') || trimmed.ends_with(';') || trimmed.ends_with('}')
        }) else {
            continue;
        };
        if !lines[open].trim_end().ends_with('{') {
            continue;
        }
        let close = format!("{indent}}}");
        let Some(end) = (open + 1..lines.len()).find(|&n| lines[n].trim_end() == close) else { continue };
        let length = end - start + 1;
        if length > MAX_FN_LINES {
            long.push(format!("{}:{} ({length} lines)", line.trim(), start + 1));
        }
    }
    long
}

#[test]
fn the_measure_of_functions_counts_from_fn_to_its_closing_brace() {
    let body = "    let x = 1;\n".repeat(MAX_FN_LINES - 1);
    let long = format!("pub(crate) async fn long() {{\n{body}    x;\n}}\nfn short() {{\n}}\n");
    assert_eq!(long_functions(&long).len(), 1, "{:?}", long_functions(&long));
    let fits = format!("fn fits() {{\n{}}}\n", "    let x = 1;\n".repeat(MAX_FN_LINES - 2));
    assert!(long_functions(&fits).is_empty());
    assert!(long_functions("    fn declared(&self) -> u32;\n").is_empty());
}

#[test]
fn no_function_under_crates_is_over_80_lines() {
    let long: Vec<String> = rust_files()
        .into_iter()
        .flat_map(|path| {
            let text = fs::read_to_string(&path).expect("a UTF-8 source");
            long_functions(&text).into_iter().map(move |found| format!("{} {found}", relative(&path)))
        })
        .collect();
    assert!(long.is_empty(), "functions over {MAX_FN_LINES} lines: {long:#?}");
}

/// Every dependency `krate` names in `section` of its manifest (`dependencies` or
/// `dev-dependencies`), by package name.
fn all_deps(krate: &str, section: &str) -> BTreeSet<String> {
    let manifest = workspace().join("crates").join(krate).join("Cargo.toml");
    let text = fs::read_to_string(&manifest).unwrap_or_else(|err| panic!("{}: {err}", manifest.display()));
    let manifest: toml::Table = toml::from_str(&text).expect("a TOML manifest");
    manifest.get(section).and_then(toml::Value::as_table).map(|deps| deps.keys().cloned().collect()).unwrap_or_default()
}

/// The workspace crates among [`all_deps`].
fn workspace_deps(krate: &str, section: &str) -> BTreeSet<String> {
    all_deps(krate, section).into_iter().filter(|name| name.starts_with("mcp-tasks")).collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[test]
fn the_engine_and_the_protocol_depend_on_no_other_crate_of_the_workspace() {
    assert_eq!(workspace_deps("engine", "dependencies"), set(&[]));
    assert_eq!(workspace_deps("protocol", "dependencies"), set(&[]));
}

#[test]
fn the_stores_depend_on_the_engine_only_and_their_tests_build_no_server() {
    assert!(workspace_deps("sqlite", "dependencies").is_subset(&set(&["mcp-tasks-engine", "mcp-tasks-sqlite-vfs"])));
    // And the TLS leaf crate (rustls only): no HTTP stack, no server.
    assert_eq!(workspace_deps("postgres", "dependencies"), set(&["mcp-tasks-engine", "mcp-tasks-tls"]));
    assert_eq!(workspace_deps("tls", "dependencies"), set(&[]));
    // The store suite and memory store: the engine (and the protocol's shapes for the
    // schema checks) only, so that testing a store or the engine compiles no HTTP stack.
    assert_eq!(workspace_deps("testkit", "dependencies"), set(&["mcp-tasks-engine", "mcp-tasks-protocol"]));
    for krate in ["engine", "protocol", "sqlite", "postgres", "testkit"] {
        let dev = workspace_deps(krate, "dev-dependencies");
        assert!(dev.is_subset(&set(&["mcp-tasks-testkit", "mcp-tasks-engine", "mcp-tasks-sqlite"])), "{krate}'s tests build {dev:?}");
        let external = all_deps(krate, "dependencies");
        assert!(!external.contains("axum") && !external.contains("hyper"), "{krate} depends on an HTTP stack");
    }
}

#[test]
fn the_server_holds_mcp_semantics_without_the_file_format_sqlite_or_http() {
    let deps = all_deps("server", "dependencies");
    for name in ["mcp-tasks-config", "rusqlite", "axum", "hyper", "jsonwebtoken", "mcp-tasks-sqlite", "mcp-tasks-postgres"] {
        assert!(!deps.contains(name), "server depends on {name}");
    }
    for krate in ["http", "webhooks"] {
        let deps = workspace_deps(krate, "dependencies");
        assert!(!deps.contains("mcp-tasks-config"), "{krate} depends on the TOML crate");
    }
    assert!(!workspace_deps("webhooks", "dependencies").contains("mcp-tasks-server"), "webhooks need the engine only");
}

#[test]
fn the_server_crate_holds_at_most_9000_lines() {
    let src = workspace().join("crates/server/src");
    let lines: usize = rust_files()
        .iter()
        .filter(|path| path.starts_with(&src))
        .map(|path| fs::read_to_string(path).expect("a UTF-8 source").lines().count())
        .sum();
    assert!(lines <= 9_000, "crates/server/src holds {lines} lines");
}

#[test]
fn the_readme_layout_lists_every_workspace_member() {
    let manifest: toml::Table =
        toml::from_str(&fs::read_to_string(workspace().join("Cargo.toml")).expect("the workspace manifest")).expect("TOML");
    let members = manifest["workspace"]["members"].as_array().expect("the workspace members");
    let readme = fs::read_to_string(workspace().join("README.md")).expect("the README");
    let layout = &readme[readme.find("## Layout").expect("the README has a Layout section")..];
    for member in members {
        let member = member.as_str().expect("a member path");
        assert!(layout.contains(&format!("| `{member}` |")), "the README's Layout does not list {member}");
    }
}
