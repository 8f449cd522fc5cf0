//! `mcp-tasks serve --store 'postgres://…?sslmode=…'`: TLS to a private cluster started with
//! `ssl = on` and a certificate signed by a CA the test makes (issue 43). `verify-full` with
//! that CA serves, every connection of the store encrypted (`pg_stat_ssl` says so); a foreign
//! CA and a certificate for another name are refused, saying which host and why; `verify-ca`
//! accepts the other name; `require` refuses a server without TLS; a missing `sslrootcert` is
//! named.

use std::process::{Command, Output, Stdio};

use serde_json::json;

use crate::certs::Ca;
use crate::harness::{Server, Workdir, create_task};
use crate::pg_cluster::Cluster;

/// `mcp-tasks serve --stdio` on `url`, its stdin closed: what it printed and how it ended
/// (a store it cannot open ends it at once).
fn serve_refused(work: &Workdir, url: &str) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--stdio", "--config"])
        .arg(work.config())
        .args(["--store", url])
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-tasks");
    assert!(!output.status.success(), "the store must not open: {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// One number `sql` answers on the cluster at `url` (without TLS).
fn count(url: &str, sql: &str) -> i64 {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("the cluster answers");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client.query_one(sql, &[]).await.expect("the query runs").get(0)
    })
}

#[test]
fn postgres_tls_verify_full_serves_with_the_ca_and_refuses_a_foreign_ca_or_another_name() {
    let ca = Ca::new("mcp-tasks test CA");
    let (cert, key) = ca.issue(&["localhost", "127.0.0.1"]);
    let Some(cluster) = Cluster::start_tls(&cert, &key) else { return };
    let work = Workdir::new();
    let ca_file = work.path("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let url = |host: &str, query: &str| format!("postgres://postgres@{host}:{}/postgres?{query}", cluster.port);

    // verify-full with the CA that signed it: served, over TLS only.
    let store = url("localhost", &format!("sslmode=verify-full&sslrootcert={}", ca_file.display()));
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command.args(["serve", "--stdio", "--config"]).arg(work.config()).args(["--store", &store]);
    let mut server = Server::spawn(command);
    server.initialize();
    let id = create_task(&mut server, "echo", json!({"text": "over tls"}));
    let done = server.call("tasks/result", json!({"taskId": id}));
    assert_eq!(done["content"][0]["text"], "over tls", "{done}");
    let plain = cluster.url();
    let of_ours = "FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE application_name = 'mcp-tasks'";
    assert!(count(&plain, &format!("SELECT count(*) {of_ours} AND ssl")) >= 1, "the store's connections use TLS");
    assert_eq!(count(&plain, &format!("SELECT count(*) {of_ours} AND NOT ssl")), 0, "and none goes without");
    drop(server);

    // A CA that did not sign the server's certificate.
    let foreign = work.path("foreign.pem");
    std::fs::write(&foreign, Ca::new("another CA").pem()).unwrap();
    let refused = serve_refused(&work, &url("localhost", &format!("sslmode=verify-full&sslrootcert={}", foreign.display())));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("localhost") && stderr.contains("certificate") && stderr.contains("UnknownIssuer"), "{stderr}");

    // A certificate issued for other names: refused by verify-full, accepted by verify-ca.
    let (cert, key) = ca.issue(&["db.example.com"]);
    drop(cluster);
    let Some(cluster) = Cluster::start_tls(&cert, &key) else { return };
    let other = format!("postgres://postgres@127.0.0.1:{}/postgres?sslrootcert={}", cluster.port, ca_file.display());
    let refused = serve_refused(&work, &format!("{other}&sslmode=verify-full"));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("127.0.0.1") && stderr.contains("not valid for name"), "{stderr}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command.args(["serve", "--stdio", "--config"]).arg(work.config()).args(["--store", &format!("{other}&sslmode=verify-ca")]);
    let mut server = Server::spawn(command);
    server.initialize();
    create_task(&mut server, "echo", json!({"text": "chain only"}));
}

#[test]
fn postgres_tls_require_refuses_a_server_without_tls_and_a_missing_root_file_is_named() {
    let Some(cluster) = Cluster::start(&[], &[]) else { return };
    let work = Workdir::new();
    let refused = serve_refused(&work, &format!("{}?sslmode=require", cluster.url()));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("127.0.0.1") && stderr.contains("TLS"), "{stderr}");
    let refused = serve_refused(&work, &format!("{}?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem", cluster.url()));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("sslrootcert=/nonexistent/ca.pem"), "{stderr}");
    let refused = serve_refused(&work, &format!("{}?sslmode=strict", cluster.url()));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("sslmode=strict is not a mode") && stderr.contains("verify-full"), "{stderr}");
}
