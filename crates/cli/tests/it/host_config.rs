//! `mcp-tasks host-config HOST --config FILE`: each host's format (the top-level key, `type`
//! where the host wants it, absolute paths), and the server it describes starts and serves
//! when run exactly as the snippet says; Claude Code's `claude mcp add` line holds the same
//! command; a config `serve` would refuse is refused here too.

use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::harness::{Server, Workdir};

fn host_config(work: &Workdir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .arg("host-config")
        .args(args)
        .arg("--config")
        .arg(work.config())
        .current_dir(work.path(""))
        .output()
        .expect("run mcp-tasks host-config")
}

/// Starts what the snippet's `command` and `args` say, over stdio (a default store under the
/// workdir, not the user's), and lists its tools.
fn serves(work: &Workdir, program: &str, args: &[String]) -> Value {
    let mut command = Command::new(program);
    command.args(args).env("XDG_DATA_HOME", work.path("data")).env("HOME", work.path("home"));
    let mut server = Server::spawn(command);
    server.initialize();
    server.call("tools/list", json!({}))
}

#[test]
fn host_config_writes_each_hosts_format_and_the_server_it_describes_serves() {
    let work = Workdir::new();
    let name = work.config().file_stem().unwrap().to_str().unwrap().to_owned();
    for (host, key, typed) in [("claude-desktop", "mcpServers", false), ("cursor", "mcpServers", false), ("vscode", "servers", true)] {
        let output = host_config(&work, &[host, "--store", "jobs.sqlite3"]);
        assert!(output.status.success(), "{host}: {}", String::from_utf8_lossy(&output.stderr));
        let snippet: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{host}: not JSON ({err})"));
        let entry = &snippet[key][&name];
        assert_eq!(entry.get("type").is_some(), typed, "{host}: {snippet}");
        if typed {
            assert_eq!(entry["type"], "stdio");
        }
        let program = entry["command"].as_str().expect("a command");
        assert!(std::path::Path::new(program).is_absolute(), "{host}: {program}");
        let args: Vec<String> = entry["args"].as_array().unwrap().iter().map(|arg| arg.as_str().unwrap().to_owned()).collect();
        assert_eq!(args[..3], ["serve", "--stdio", "--config"], "{host}");
        assert_eq!(args[3], work.config().display().to_string(), "{host}: the config's absolute path");
        assert_eq!(args[4..], ["--store".to_owned(), work.path("jobs.sqlite3").display().to_string()], "{host}");
        let tools = serves(&work, program, &args);
        assert!(tools["tools"].as_array().unwrap().iter().any(|tool| tool["name"] == "echo"), "{host}: {tools}");
    }
    // Claude Code: its .mcp.json entry, and the `claude mcp add` command holding the same.
    let output = host_config(&work, &["claude-code", "--json", "--name", "jobs"]);
    let snippet: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(snippet["mcpServers"]["jobs"]["type"], "stdio", "{snippet}");
    let output = host_config(&work, &["claude-code", "--name", "jobs"]);
    let line = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let words = shlex::split(&line).expect("a shell line");
    assert_eq!(words[..4], ["claude", "mcp", "add", "jobs"], "{line}");
    assert_eq!(words[4], "--", "{line}");
    assert_eq!(words[5], snippet["mcpServers"]["jobs"]["command"].as_str().unwrap(), "{line}");
    let args: Vec<String> = words[6..].to_vec();
    assert_eq!(json!(args), snippet["mcpServers"]["jobs"]["args"], "{line}");
    let tools = serves(&work, &words[5], &args);
    assert!(tools["tools"].as_array().unwrap().iter().any(|tool| tool["name"] == "echo"), "{tools}");
}

#[test]
fn host_config_refuses_a_config_serve_would_refuse() {
    let work = Workdir::new();
    std::fs::write(work.config(), "[[tools]]\nname = \"x\"\ncommand = []\n").unwrap();
    let output = host_config(&work, &["cursor"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("fix it before pointing a host at it") && stderr.contains("command"), "{stderr}");
    assert!(output.stdout.is_empty(), "no snippet for a bad config");
}
