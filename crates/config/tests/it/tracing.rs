//! `[server.tracing]`: the OTLP collector's endpoint and the service name, checked with the
//! line of each problem.

use mcp_tasks_config::{Config, TracingConfig};

#[test]
fn tracing_is_off_unless_an_endpoint_is_set() {
    let config = Config::parse("[server]\nname = \"x\"\n").expect("a valid config");
    assert_eq!(config.server.tracing, TracingConfig { otlp_endpoint: None, service_name: "mcp-tasks".into() });
    let config = Config::parse(
        "[server.tracing]\notlp_endpoint = \"http://127.0.0.1:4318\"\nservice_name = \"jobs\"\n",
    )
    .expect("a valid config");
    assert_eq!(
        config.server.tracing,
        TracingConfig { otlp_endpoint: Some("http://127.0.0.1:4318".into()), service_name: "jobs".into() }
    );
}

#[test]
fn tracing_bad_settings_are_refused_naming_the_line_and_what_is_wrong() {
    for (toml, says) in [
        ("[server]\nname = \"x\"\n\n[server.tracing]\notlp_endpoint = \"https://collector:4318\"\n", "must start with http://"),
        ("[server.tracing]\notlp_endpoint = \"http:///v1/traces\"\n", "needs a host"),
        ("[server.tracing]\nservice_name = \" \"\n", "service_name is empty"),
        ("[server.tracing]\nendpoint = \"http://h\"\n", "unknown field"),
    ] {
        let err = Config::parse(toml).expect_err(toml).to_string();
        assert!(err.contains(says), "{toml}: {err}");
        if !says.starts_with("unknown") {
            assert!(err.contains("server.tracing") && err.contains("line "), "{err}");
        }
    }
}
