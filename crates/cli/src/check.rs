//! `mcp-tasks check-config FILE`: load a config as `serve` would, and say what is wrong.

use anyhow::bail;
use mcp_tasks_config::Config;
use serde_json::json;

use crate::args::CheckArgs;

pub(crate) fn run(args: &CheckArgs) -> anyhow::Result<()> {
    match Config::check(&args.config) {
        Ok(config) => {
            if args.json {
                let tools: Vec<&str> = config.tools.iter().map(|tool| tool.name.as_str()).collect();
                println!("{}", json!({"ok": true, "file": args.config, "tools": tools}));
            } else {
                println!("{}: ok, {} tools", args.config.display(), config.tools.len());
                for tool in &config.tools {
                    println!("  {} ({:?}, on_restart {:?})", tool.name, tool.task_support, tool.on_restart);
                }
            }
            Ok(())
        }
        Err(problems) => {
            let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
            if args.json {
                println!("{}", json!({"ok": false, "file": args.config, "problems": problems}));
            }
            bail!("{} problem(s):\n  {}", problems.len(), problems.join("\n  "))
        }
    }
}
