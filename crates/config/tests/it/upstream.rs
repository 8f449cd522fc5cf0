//! `[upstream.tools.NAME]`: the per-tool settings `mcp-tasks proxy` gives the upstream
//! server's tools, parsed and checked with the line of each problem.

use std::time::Duration;

use mcp_tasks_config::{Config, ConfigError, RestartPolicy, TaskSupport, UpstreamToolConfig};

#[test]
fn upstream_tool_settings_are_read_by_name_and_unset_ones_take_the_defaults() {
    let config = Config::parse(
        r#"
[server]
inline_wait = "2s"

[upstream.tools.slow-report]
task_support = "required"
timeout = "10m"
inline_wait = "0.5s"
sync_wait = "3s"
heartbeat = "5s"
on_restart = "retry"
max_attempts = 2
max_concurrent = 4

[upstream.tools.echo]
task_support = "forbidden"

[upstream.tools.never-handed-off]
sync_wait = "0"
"#,
    )
    .expect("a valid config");
    let slow = &config.upstream_tools["slow-report"];
    assert_eq!(slow.task_support, TaskSupport::Required);
    assert_eq!(slow.timeout, Some(Duration::from_secs(600)));
    assert_eq!(slow.inline_wait, Some(Duration::from_millis(500)));
    assert_eq!((slow.sync_wait, slow.heartbeat), (Some(Duration::from_secs(3)), Some(Duration::from_secs(5))));
    assert_eq!(config.upstream_tools["never-handed-off"].sync_wait, Some(Duration::ZERO), "zero: never handed off");
    assert_eq!(UpstreamToolConfig::new().sync_wait, None, "the server's by default");
    assert_eq!((slow.on_restart, slow.max_attempts, slow.max_concurrent), (RestartPolicy::Retry, 2, Some(4)));
    let echo = &config.upstream_tools["echo"];
    assert_eq!(echo, &UpstreamToolConfig { task_support: TaskSupport::Forbidden, ..UpstreamToolConfig::new() });
    assert_eq!(UpstreamToolConfig::new().task_support, TaskSupport::Optional, "every upstream tool may be a task");
    assert!(Config::parse("").expect("empty").upstream_tools.is_empty());
}

#[test]
fn bad_upstream_tool_settings_are_refused_with_their_line_and_what_was_wrong() {
    let cases = [
        ("[upstream.tools.a]\ntimeout = \"soon\"\n", 2, "timeout of upstream tool `a`"),
        ("[upstream.tools.a]\n\nsync_wait = \"a while\"\n", 3, "sync_wait of upstream tool `a`"),
        ("[upstream.tools.a]\nsync_wait = \"-1s\"\n", 2, "sync_wait of upstream tool `a`"),
        ("[upstream.tools.a]\nheartbeat = \"often\"\n", 2, "heartbeat of upstream tool `a`"),
        ("[upstream.tools.a]\n\nmax_attempts = 2\n", 3, "max_attempts"),
        ("[upstream.tools.a]\nmax_concurrent = 0\n", 2, "must be at least 1"),
        ("[upstream.tools.a]\ncommand = [\"x\"]\n", 2, "unknown field `command`"),
        ("[upstream]\nurl = \"http://x\"\n", 2, "unknown field `url`"),
    ];
    for (text, line, says) in cases {
        match Config::parse(text) {
            Err(ConfigError::Invalid { line: Some(found), problem, .. }) => {
                assert_eq!(found, line, "{text:?}: {problem}");
                assert!(problem.to_string().contains(says), "{text:?}: {problem}");
            }
            other => panic!("{text:?}: expected a line-numbered problem, got {other:?}"),
        }
    }
}
