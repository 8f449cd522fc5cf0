//! Config files through the real binary: `check-config` and refusals at `serve` start, each
//! naming the line.

use std::process::{Command, Stdio};

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
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

        let serve = binary()
            .args(["serve", "--stdio", "--config"])
            .arg(&path)
            .arg("--store")
            .arg(dir.path().join("tasks.sqlite3"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!serve.status.success(), "{what}: serve started anyway");
        let said = String::from_utf8_lossy(&serve.stderr);
        assert!(said.contains(names) && said.contains("bad.toml"), "{what}: {said:?}");
        assert!(serve.stdout.is_empty(), "nothing on stdout but MCP messages");
    }
}
