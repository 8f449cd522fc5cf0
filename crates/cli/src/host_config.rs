//! `mcp-tasks host-config HOST --config FILE`: what a host needs to start `serve --stdio` on
//! a config, in the host's own format: Claude Code's `claude mcp add` command (or its
//! `.mcp.json` entry), Claude Desktop's and Cursor's `mcpServers` entry, VS Code's `servers`
//! entry (with `"type": "stdio"`). The config is loaded first (a file `serve` would refuse
//! is refused here, with its problems), and every path is made absolute, this binary's
//! included, so the host finds them whatever directory it starts the server in.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::args::{Host, HostConfigArgs};

pub(crate) fn run(args: &HostConfigArgs) -> anyhow::Result<()> {
    mcp_tasks_config::Config::load(&args.config)
        .with_context(|| format!("loading config {} (fix it before pointing a host at it)", args.config.display()))?;
    let config = absolute(&args.config)?;
    let name = match &args.name {
        Some(name) => name.clone(),
        None => config.file_stem().and_then(|stem| stem.to_str()).unwrap_or("tasks").to_owned(),
    };
    let program = std::env::current_exe().context("finding this mcp-tasks binary")?;
    let mut serve = vec!["serve".to_owned(), "--stdio".to_owned(), "--config".to_owned(), config.display().to_string()];
    if let Some(store) = &args.store {
        serve.push("--store".to_owned());
        serve.push(store_argument(store)?);
    }
    let program = program.display().to_string();
    if args.host == Host::ClaudeCode && !args.json {
        let words: Vec<String> = std::iter::once(program).chain(serve).map(|word| quoted(&word)).collect();
        println!("claude mcp add {} -- {}", quoted(&name), words.join(" "));
        return Ok(());
    }
    println!("{}", serde_json::to_string_pretty(&entry(args.host, &name, &program, &serve)).unwrap_or_default());
    Ok(())
}

/// The host's config object holding one server `name` that runs `program` with `args`.
fn entry(host: Host, name: &str, program: &str, args: &[String]) -> Value {
    let mut server = json!({"command": program, "args": args});
    if matches!(host, Host::ClaudeCode | Host::Vscode) {
        server["type"] = json!("stdio");
    }
    let key = if host == Host::Vscode { "servers" } else { "mcpServers" };
    json!({ key: { name: server } })
}

/// `path` made absolute against the current directory (without requiring it to exist).
fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("making {} absolute", path.display()))
}

/// A `--store` value as the host should pass it: a URL as given, a file path absolute.
fn store_argument(store: &str) -> anyhow::Result<String> {
    if store.contains("://") {
        return Ok(store.to_owned());
    }
    Ok(absolute(Path::new(store))?.display().to_string())
}

/// `word` quoted for a POSIX shell when it needs it.
fn quoted(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-_./=:@%+,".contains(&byte)) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn words_are_quoted_only_when_a_shell_needs_it() {
        assert_eq!(quoted("/usr/bin/mcp-tasks"), "/usr/bin/mcp-tasks");
        assert_eq!(quoted("/home/me/my tools.toml"), "'/home/me/my tools.toml'");
        assert_eq!(quoted("it's"), r"'it'\''s'");
    }
}
