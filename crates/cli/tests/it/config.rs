//! Config files through the real binary: `check-config` and refusals at `serve` start, each
//! naming the line.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
}

/// `mcp-tasks serve --stdio` of the config at `path`, on a store in `dir`, stdin closed: a
/// config it refuses makes it exit at once.
fn serve(path: &Path, dir: &Path) -> Output {
    binary()
        .args(["serve", "--stdio", "--config"])
        .arg(path)
        .arg("--store")
        .arg(dir.join("tasks.sqlite3"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn demo() -> String {
    format!("{}/../../examples/demo.toml", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn check_config_accepts_the_demo_config_and_lists_its_tools() {
    let out = binary().args(["check-config", "--json", &demo()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert!(report["tools"].as_array().unwrap().len() >= 4);
}

/// Each bad config with the line its error must name.
const BAD: &[(&str, &str, &str)] = &[
    ("unknown key", "[server]\nname = \"x\"\n\n[[tools]]\nname = \"a\"\ncomand = [\"true\"]\n", "line 6"),
    (
        "placeholder naming no schema property",
        "[[tools]]\nname = \"a\"\ncommand = [\"echo\", \"{nope}\"]\n[tools.input_schema]\ntype = \"object\"\nproperties = { text = { type = \"string\" } }\n",
        "nope",
    ),
    ("duration that does not parse", "[server]\ndefault_ttl = \"ten minutes\"\n", "line 2"),
    (
        "duplicate tool name",
        "[[tools]]\nname = \"a\"\ncommand = [\"true\"]\n\n[[tools]]\nname = \"a\"\ncommand = [\"true\"]\n",
        "line",
    ),
];

#[test]
fn bad_configs_are_refused_by_check_config_and_at_serve_start_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    for (what, text, names) in BAD {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let check = binary().arg("check-config").arg(&path).output().unwrap();
        assert!(!check.status.success(), "{what}: check-config accepted it");
        let said = String::from_utf8_lossy(&check.stderr);
        assert!(said.contains(names), "{what}: {said:?} should name {names:?}");

        let serve = serve(&path, dir.path());
        assert!(!serve.status.success(), "{what}: serve started anyway");
        let said = String::from_utf8_lossy(&serve.stderr);
        assert!(said.contains(names) && said.contains("bad.toml"), "{what}: {said:?}");
        assert!(serve.stdout.is_empty(), "nothing on stdout but MCP messages");
    }
}

/// A schema that is not valid JSON Schema passes `Config`'s shape but not the server's
/// compilation: `check-config` runs the same checks as `serve` and refuses it too.
#[test]
fn check_config_refuses_an_input_schema_that_serve_would_not_compile() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schema.toml");
    let text = "[[tools]]\nname = \"greet\"\ncommand = [\"echo\", \"{who}\"]\n\n[tools.input_schema]\n\
                type = \"object\"\n[tools.input_schema.properties.who]\ntype = \"strin\"\n";
    std::fs::write(&path, text).unwrap();
    let check = binary().arg("check-config").arg(&path).output().unwrap();
    assert!(!check.status.success(), "check-config accepted a schema serve refuses");
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(said.contains("tool `greet`") && said.contains("line 5") && said.contains("schema.toml"), "{said:?}");
    assert!(said.contains("not a valid JSON Schema"), "{said:?}");
}

/// Three independent mistakes (and a fourth): an unknown key, an unknown value, a duration
/// that does not parse, a schema that does not compile. One run names them all, and the
/// nearest valid name for the typos.
#[test]
fn check_config_names_every_independent_mistake_in_one_run_with_suggestions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.toml");
    let text = "[server]\ndefault_ttl = \"ten minutes\"\n\n\
                [[tools]]\nname = \"a\"\ncommand = [\"true\"]\ntimout = \"5m\"\n\n\
                [[tools]]\nname = \"b\"\ncommand = [\"true\"]\non_restart = \"retyr\"\n\n\
                [[tools]]\nname = \"c\"\ncommand = [\"true\"]\n[tools.input_schema]\ntype = \"object\"\n\
                properties = { n = { type = \"strin\" } }\n";
    let problems = problems_named(&path, text);
    let named = |what: &str| problems.iter().any(|problem| problem.contains(what));
    assert!(named("line 2: server.default_ttl"), "{problems:#?}");
    assert!(named("line 7: unknown field `timout`") && named("did you mean `timeout`?"), "{problems:#?}");
    assert!(named("line 12: unknown variant `retyr`") && named("did you mean `retry`?"), "{problems:#?}");
    assert!(named("line 17: tool `c`: input_schema is not a valid JSON Schema"), "{problems:#?}");
    assert_eq!(problems.len(), 4, "{problems:#?}");
}

/// The problems `check-config --json` names in `text`, written to `path` (it must refuse it).
fn problems_named(path: &std::path::Path, text: &str) -> Vec<String> {
    std::fs::write(path, text).unwrap();
    let check = binary().args(["check-config", "--json"]).arg(path).output().unwrap();
    assert!(!check.status.success());
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    report["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_owned()).collect()
}

/// Mistakes in one `[server]` table and in one tool are each named, all in one run, and so is
/// a mistake only `serve`'s own checks see (the lease) beside them (issue 42).
#[test]
fn check_config_names_every_mistake_of_one_table_and_of_one_tool_and_serves_own_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("table.toml");
    let text = "[server]\ndefault_ttl = \"ten minutes\"\nmax_running = 0\nlease = \"100ms\"\npoll_interval = \"soon\"\n\n\
                [[tools]]\nname = \"a\"\ncommand = [\"true\"]\ntimeout = \"forever\"\nmax_concurrent = 0\nmax_attempts = 3\n";
    let problems = problems_named(&path, text);
    let named = |what: &str| problems.iter().any(|problem| problem.contains(what));
    assert!(named("line 2: server.default_ttl"), "{problems:#?}");
    assert!(named("line 3: server.max_running"), "{problems:#?}");
    assert!(named("line 5: server.poll_interval"), "{problems:#?}");
    assert!(named("line 10: timeout of tool `a`"), "{problems:#?}");
    assert!(named("line 11: max_concurrent of tool `a`"), "{problems:#?}");
    assert!(named("line 12") && named("max_attempts"), "{problems:#?}");
    assert!(named("server.lease is 100ms"), "serve's own check, beside the others: {problems:#?}");
    assert_eq!(problems.len(), 7, "{problems:#?}");
}

/// A check `serve` makes beyond the config crate's (the lease a claim needs) is made by
/// `check-config` too: both run one function.
#[test]
fn check_config_and_serve_refuse_a_lease_too_short_for_a_claim() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lease.toml");
    std::fs::write(&path, "[server]\nlease = \"100ms\"\n\n[[tools]]\nname = \"a\"\ncommand = [\"true\"]\n").unwrap();
    let check = binary().arg("check-config").arg(&path).output().unwrap();
    assert!(!check.status.success(), "check-config accepted a lease serve refuses");
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(said.contains("server.lease") && said.contains("lease.toml"), "{said:?}");
    let serve = serve(&path, dir.path());
    assert!(!serve.status.success(), "serve started anyway");
    assert!(String::from_utf8_lossy(&serve.stderr).contains("server.lease"));
}
