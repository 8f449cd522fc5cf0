//! The `[upstream]` table, read by `mcp-tasks proxy`: per-tool settings of the upstream
//! server's tools, `[upstream.tools.NAME]`, with the keys and checks of a `[[tools]]` entry
//! that make sense for a tool another server runs (`task_support`, `timeout`, `inline_wait`,
//! `on_restart`, `max_attempts`, `max_concurrent`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::lines::Lines;
use super::{ConfigError, Problem, RestartPolicy, TaskSupport, ToolConfig};

/// The settings of one upstream tool, `[upstream.tools.NAME]`. A tool without a table gets
/// [`UpstreamToolConfig::new`]'s defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct UpstreamToolConfig {
    /// How the tool runs as a task (default `optional`).
    pub task_support: TaskSupport,
    /// How long a call may run before it is cancelled upstream and fails (none by default).
    pub timeout: Option<Duration>,
    /// 2026-07-28: how long a call waits to answer inline (default `[server] inline_wait`).
    pub inline_wait: Option<Duration>,
    /// A task-capable (`optional`) tool called plainly by a client that speaks no tasks:
    /// how long the call runs before it is handed off to a task (`None`: `[server]
    /// sync_wait`; zero: never).
    pub sync_wait: Option<Duration>,
    /// A plain call with a progress token from a client that speaks no tasks: how often it
    /// gets a progress heartbeat (`None`: `[server] heartbeat`; zero: never).
    pub heartbeat: Option<Duration>,
    /// What a restart of the proxy does to a call in flight (default `fail`; a call the
    /// upstream runs as a task is resumed whatever this says).
    pub on_restart: RestartPolicy,
    /// With `on_restart = "retry"`: the attempts in all (default 3).
    pub max_attempts: u32,
    /// Calls of the tool running at once (no limit by default).
    pub max_concurrent: Option<u32>,
}

impl Default for UpstreamToolConfig {
    fn default() -> UpstreamToolConfig {
        UpstreamToolConfig::new()
    }
}

impl UpstreamToolConfig {
    /// The defaults: task support `optional`, no timeout, the server's `inline_wait`,
    /// `sync_wait` and `heartbeat`, failed after a restart, no concurrency limit.
    #[must_use]
    pub fn new() -> UpstreamToolConfig {
        UpstreamToolConfig {
            task_support: TaskSupport::Optional,
            timeout: None,
            inline_wait: None,
            sync_wait: None,
            heartbeat: None,
            on_restart: RestartPolicy::Fail,
            max_attempts: ToolConfig::DEFAULT_MAX_ATTEMPTS,
            max_concurrent: None,
        }
    }
}

/// `[upstream]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUpstream {
    #[serde(default)]
    tools: BTreeMap<Spanned<String>, RawUpstreamTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstreamTool {
    #[serde(default = "optional")]
    task_support: TaskSupport,
    timeout: Option<Spanned<String>>,
    inline_wait: Option<Spanned<String>>,
    sync_wait: Option<Spanned<String>>,
    heartbeat: Option<Spanned<String>>,
    #[serde(default)]
    on_restart: RestartPolicy,
    max_attempts: Option<Spanned<i64>>,
    max_concurrent: Option<Spanned<i64>>,
}

fn optional() -> TaskSupport {
    TaskSupport::Optional
}

impl RawUpstream {
    /// Checks every tool's table; each problem names its line.
    pub(crate) fn check(self, lines: Lines<'_>, problems: &mut Vec<ConfigError>) -> BTreeMap<String, UpstreamToolConfig> {
        let mut tools = BTreeMap::new();
        for (name, raw) in self.tools {
            let line = lines.of(&name.span());
            let name = name.into_inner();
            match raw.check(&name, line, lines) {
                Ok(tool) => {
                    tools.insert(name, tool);
                }
                Err(problem) => problems.push(problem),
            }
        }
        tools
    }
}

impl RawUpstreamTool {
    fn check(self, name: &str, line: usize, lines: Lines<'_>) -> Result<UpstreamToolConfig, ConfigError> {
        let duration = |setting: &str, value: &Spanned<String>| {
            lines.duration(&format!("{setting} of upstream tool `{name}`"), value)
        };
        let timeout = self.timeout.as_ref().map(|value| duration("timeout", value)).transpose()?;
        let inline_wait = self.inline_wait.as_ref().map(|value| duration("inline_wait", value)).transpose()?;
        let off_or = |setting: &str, value: &Option<Spanned<String>>| {
            value.as_ref().map(|value| lines.duration_or_off(&format!("{setting} of upstream tool `{name}`"), value)).transpose()
        };
        let sync_wait = off_or("sync_wait", &self.sync_wait)?;
        let heartbeat = off_or("heartbeat", &self.heartbeat)?;
        let max_attempts = match &self.max_attempts {
            Some(value) if self.on_restart != RestartPolicy::Retry => {
                let problem = Problem::MaxAttemptsWithoutRetry { tool: name.to_owned() };
                return Err(lines.error(lines.of(&value.span()).max(line), problem));
            }
            Some(value) => lines.count(&format!("max_attempts of upstream tool `{name}`"), value)?,
            None => ToolConfig::DEFAULT_MAX_ATTEMPTS,
        };
        let max_concurrent = self
            .max_concurrent
            .as_ref()
            .map(|value| lines.count(&format!("max_concurrent of upstream tool `{name}`"), value))
            .transpose()?;
        Ok(UpstreamToolConfig {
            task_support: self.task_support,
            timeout,
            inline_wait,
            sync_wait,
            heartbeat,
            on_restart: self.on_restart,
            max_attempts,
            max_concurrent,
        })
    }
}
