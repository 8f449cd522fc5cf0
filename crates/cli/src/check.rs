//! `mcp-tasks check-config FILE`: load a config as `serve` would, run the checks `serve` runs
//! at start ([`serve_checks`], shared with it), and say everything that is wrong.

use std::path::Path;

use anyhow::bail;
use mcp_tasks_config::{Config, JwksSource};
use mcp_tasks_http as http;
use serde_json::json;

use crate::args::CheckArgs;

pub(crate) async fn run(args: &CheckArgs) -> anyhow::Result<()> {
    let problems = match Config::check_partly(&args.config) {
        Ok(config) => {
            let problems = serve_checks(&config).await;
            if problems.is_empty() {
                report_ok(args, &config);
                return Ok(());
            }
            in_file(&args.config, problems)
        }
        Err((config, problems)) => {
            // `serve`'s own checks run on what could be read, so that one run names them all.
            let mut problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
            if let Some(config) = config {
                problems.extend(in_file(&args.config, serve_checks(&config).await));
            }
            problems
        }
    };
    if args.json {
        println!("{}", json!({"ok": false, "file": args.config, "problems": problems}));
    }
    bail!("{} problem(s):\n  {}", problems.len(), problems.join("\n  "))
}

fn report_ok(args: &CheckArgs, config: &Config) {
    if args.json {
        let tools: Vec<&str> = config.tools.iter().map(|tool| tool.name.as_str()).collect();
        println!("{}", json!({"ok": true, "file": args.config, "tools": tools}));
    } else {
        let count = config.tools.len();
        println!("{}: ok, {count} tool{}", args.config.display(), if count == 1 { "" } else { "s" });
        for tool in &config.tools {
            println!(
                "  {} (task_support = \"{}\", on_restart = \"{}\")",
                tool.name,
                config_word(&tool.task_support),
                config_word(&tool.on_restart)
            );
        }
    }
}

/// A setting's value as the config file spells it (`optional`, `retry`), not its Rust name.
pub(crate) fn config_word(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(word)) => word,
        other => format!("{other:?}"),
    }
}

/// Each problem, naming the file.
pub(crate) fn in_file(path: &Path, problems: Vec<String>) -> Vec<String> {
    problems.into_iter().map(|problem| format!("{}: {problem}", path.display())).collect()
}

/// The checks `serve` runs at start beyond the config crate's own, every problem found: the
/// lease, each tool's `inputSchema` as the server compiles it, the OAuth keys' source (a
/// `jwks` file is read now). One function for `serve` and `check-config`, so that the two
/// cannot drift.
pub(crate) async fn serve_checks(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(err) = crate::serve::lease(config) {
        problems.push(format!("{err:#}"));
    }
    for tool in &config.tools {
        if let Err(err) = mcp_tasks_server::check_input_schema(&tool.name, &tool.input_schema) {
            problems.push(err.to_string());
        }
    }
    if let Some(oauth) = &config.server.oauth {
        match crate::options::oauth(oauth) {
            Err(err) => problems.push(format!("{err:#}")),
            Ok(options) => {
                let validator = http::OAuth::new(options);
                if let Err(err) = validator.tls_ready() {
                    problems.push(format!("server.auth.oauth.ca_file: {err}"));
                }
                if let JwksSource::File(_) = &oauth.jwks
                    && let Err(err) = validator.load().await
                {
                    problems.push(format!("server.auth.oauth.jwks: {err}"));
                }
            }
        }
    }
    problems
}
