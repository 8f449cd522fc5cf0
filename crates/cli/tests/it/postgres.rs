//! `mcp-tasks serve --store postgres://…`: the real binary on the real PostgreSQL named by
//! `TEST_DATABASE_URL`, in a fresh schema (skipped when the variable is unset, failed under
//! `CI=true`).

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::harness::{Server, Workdir};

/// The test server's URL; `None` (after saying so) outside CI when it is not set.
pub(crate) fn database_url() -> Option<String> {
    match std::env::var("TEST_DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("CI=true but TEST_DATABASE_URL is not set: the PostgreSQL serve test cannot run")
        }
        _ => {
            eprintln!("skipped: set TEST_DATABASE_URL=postgres://… to serve on PostgreSQL");
            None
        }
    }
}

/// Runs `sql` on the server at `url`, on a runtime of its own (these tests are synchronous).
pub(crate) fn execute(url: &str, sql: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("the test server answers");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client.batch_execute(sql).await.expect("the statement runs");
    });
}

std::thread_local! {
    /// Set by [`through_pgbouncer!`]: the stores this test thread makes are reached through
    /// PgBouncer in transaction mode.
    pub(crate) static THROUGH_POOLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The PgBouncer in transaction mode in front of the test server (`TEST_PGBOUNCER_URL`, as
/// `scripts/pgbouncer.sh` starts it); `None` (after saying so) outside CI when it is not set.
pub(crate) fn pooler_url() -> Option<String> {
    match std::env::var("TEST_PGBOUNCER_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().trim_end_matches('/').to_owned()),
        _ if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("CI=true but TEST_PGBOUNCER_URL is not set: the replicas cannot be tested behind PgBouncer")
        }
        _ => {
            eprintln!("skipped: run scripts/pgbouncer.sh and set TEST_PGBOUNCER_URL to test replicas behind PgBouncer");
            None
        }
    }
}

/// `#[test]`s running tests of this crate again with their stores reached through PgBouncer
/// in transaction mode (`pooler=transaction`, the change feed on a direct `listen_url`):
/// `through_pgbouncer!(new_name => existing_test, …)`.
#[macro_export]
macro_rules! through_pgbouncer {
    ($($name:ident => $test:ident),+ $(,)?) => {
        $(
            #[test]
            fn $name() {
                if $crate::postgres::database_url().is_none() || $crate::postgres::pooler_url().is_none() {
                    return;
                }
                $crate::postgres::THROUGH_POOLER.with(|through| through.set(true));
                $test();
            }
        )+
    };
}

/// A fresh schema, dropped with everything in it at the end of the test; or, on a test
/// thread running through PgBouncer ([`through_pgbouncer!`]), a fresh database (PgBouncer
/// passes no `search_path`), dropped likewise.
pub(crate) struct Schema {
    server: String,
    name: String,
    /// The pooler's URL, when the store is reached through it.
    pooler: Option<String>,
}

impl Schema {
    pub(crate) fn create(server: &str) -> Schema {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.subsec_nanos());
        let name = format!("mcp_tasks_cli_test_{}_{nanos}", std::process::id());
        let pooler = if THROUGH_POOLER.with(std::cell::Cell::get) { pooler_url() } else { None };
        let what = if pooler.is_some() { "DATABASE" } else { "SCHEMA" };
        execute(server, &format!("CREATE {what} {name}"));
        Schema { server: server.to_owned(), name, pooler }
    }

    /// The store URL for `--store`.
    pub(crate) fn url(&self) -> String {
        match &self.pooler {
            Some(pooler) => {
                let direct: String = self.direct().bytes().map(|byte| match byte {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => char::from(byte).to_string(),
                    other => format!("%{other:02X}"),
                }).collect();
                format!("{pooler}/{}?pooler=transaction&listen_url={direct}", self.name)
            }
            None => {
                let separator = if self.server.contains('?') { '&' } else { '?' };
                format!("{}{separator}options=-c%20search_path%3D{}", self.server, self.name)
            }
        }
    }

    /// A direct URL of the store's tables (the schema, or the database).
    fn direct(&self) -> String {
        match &self.pooler {
            Some(_) => {
                let base = self.server.rsplit_once('/').map_or(self.server.as_str(), |(base, _)| base);
                format!("{base}/{}", self.name)
            }
            None => self.url(),
        }
    }

    /// The last use of session `id` as the database holds it (ms), if it is stored.
    pub(crate) fn session_last_used(&self, id: &str) -> Option<i64> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&self.direct(), tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(async move {
                let _ = connection.await;
            });
            let row = client.query_opt("SELECT last_used FROM sessions WHERE id = $1", &[&id]).await.expect("the query runs");
            row.map(|row| row.get(0))
        })
    }

    /// The status of task `id` as the database holds it.
    pub(crate) fn status(&self, id: &str) -> String {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&self.direct(), tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(async move {
                let _ = connection.await;
            });
            client.query_one("SELECT status FROM tasks WHERE id = $1", &[&id]).await.expect("the task's row").get(0)
        })
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        match self.pooler {
            Some(_) => execute(&self.server, &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)),
            None => execute(&self.server, &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name)),
        }
    }
}

#[test]
fn serve_on_postgres_runs_a_task_to_its_end_and_keeps_it_across_a_restart() {
    let Some(server_url) = database_url() else { return };
    let schema = Schema::create(&server_url);
    let work = Workdir::new();
    let store = schema.url();
    let mut server = Server::start(&work.config(), Path::new(&store));
    server.initialize();
    let created = server.call("tools/call", json!({"name": "echo", "arguments": {"text": "from postgres"}, "task": {"ttl": 60000}}));
    let id = created["task"]["taskId"].as_str().expect("taskId").to_owned();
    let result = server.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"], json!([{"type": "text", "text": "from postgres"}]));
    assert_eq!(schema.status(&id), "completed", "the task is a row of the PostgreSQL store");
    drop(server);

    let mut again = Server::start(&work.config(), Path::new(&store));
    again.initialize();
    let got = again.call("tasks/get", json!({"taskId": id}));
    assert_eq!(got["status"], "completed", "{got}");
    let result = again.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"], json!([{"type": "text", "text": "from postgres"}]));
}

/// An unreachable database stops `serve` at start with an error that names the URL with its
/// password hidden, and never the password.
#[test]
fn serve_on_an_unreachable_postgres_fails_naming_the_url_without_its_password() {
    let work = Workdir::new();
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--stdio", "--config"])
        .arg(work.config())
        .env("MCP_TASKS_STORE", "postgres://tasks:hunter2-secret@127.0.0.1:1/tasks")
        .env("RUST_LOG", "debug")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcp-tasks");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("hunter2-secret"), "{stderr}");
    assert!(stderr.contains("postgres://tasks:***@127.0.0.1:1/tasks"), "{stderr}");
    assert!(stderr.contains("cannot connect to PostgreSQL"), "{stderr}");
}
