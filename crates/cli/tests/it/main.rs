//! Integration tests of the real `mcp-tasks` binary over stdio: one test binary, modules
//! by theme. Every message the server sends in these tests is checked against the official
//! 2025-11-25 JSON schema when the harness is dropped.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod bad_input;
mod certs;
mod cli_restarts;
mod client_cli;
mod compliant_polls;
mod config;
mod crash;
mod demo;
mod harness;
mod host_config;
mod hostile;
mod input;
mod http;
mod http_bad_input;
mod http_modern;
mod http_peer;
mod https;
mod lifecycle;
mod log_hygiene;
mod metrics;
mod netns;
mod oauth;
mod orphans;
mod pg_cluster;
mod pg_faults;
mod pg_tls;
mod postgres;
mod processes;
mod proxy;
mod replicas;
mod restart;
mod sampling;
mod stdio_shutdown;
mod task_streams;
mod store_faults;
mod traces;
mod tty;
mod version;
mod web;
mod webdriver;
mod webhooks;
