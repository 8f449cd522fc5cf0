//! A connection URL may carry a password: no error message ever shows it.

use mcp_tasks_postgres::{PostgresStore, redact};

use crate::db;

const PASSWORD: &str = "s3cr3t-Pa55word";

/// Connecting with `url` fails, naming `shown` (the URL with its password hidden) and never
/// the password, in the message or the debug form.
async fn refused_without_the_password(url: &str, shown: &str) -> String {
    let err = PostgresStore::connect(url).await.expect_err("the connection is refused");
    let (message, debug) = (err.to_string(), format!("{err:?}"));
    assert!(!message.contains(PASSWORD) && !debug.contains(PASSWORD), "{message} / {debug}");
    assert!(message.contains(shown), "the message names {shown}: {message}");
    message
}

#[tokio::test]
async fn an_unreachable_server_is_named_without_its_password() {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    let url = format!("postgres://tasks:{PASSWORD}@127.0.0.1:1/tasks");
    assert_eq!(redact(&url), "postgres://tasks:***@127.0.0.1:1/tasks");
    let message = refused_without_the_password(&url, "postgres://tasks:***@127.0.0.1:1/tasks").await;
    assert!(message.contains("cannot connect to PostgreSQL"), "{message}");
}

#[tokio::test]
async fn an_unreadable_url_is_named_without_its_password() {
    let url = format!("postgres://tasks:{PASSWORD}@127.0.0.1:notaport/tasks");
    let message = refused_without_the_password(&url, "postgres://tasks:***@127.0.0.1:notaport/tasks").await;
    assert!(message.contains("cannot read the connection URL"), "{message}");
}

/// The server answers and refuses (no such database): its own error, without the password.
#[tokio::test]
async fn a_refusal_by_the_server_is_named_without_the_password() {
    let Some(server) = db::database_url() else { return };
    // The test server's address with a password and a database that does not exist.
    let rest = server.split_once("://").map_or(server.as_str(), |(_, rest)| rest);
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = host.split(['/', '?']).next().unwrap_or(host);
    let url = format!("postgres://postgres:{PASSWORD}@{host}/mcp_tasks_no_such_database");
    let shown = format!("postgres://postgres:***@{host}/mcp_tasks_no_such_database");
    let message = refused_without_the_password(&url, &shown).await;
    assert!(message.contains("mcp_tasks_no_such_database"), "the server's reason: {message}");
}

/// A URL that demands TLS (`sslmode=require`) gets it from a server that offers it (every
/// connection of the store encrypted, as `pg_stat_ssl` shows), and is refused with a message
/// that says so by one that does not (the test server's `ssl` setting decides which).
#[tokio::test]
async fn a_url_demanding_tls_gets_it_or_is_refused_saying_so() {
    let Some(server) = db::database_url() else { return };
    // A schema of its own: the store migrates what it connects to, never the shared `public`.
    let schema = db::Schema::create(&server).await;
    let url = format!("{}&sslmode=require&application_name=mcp_tasks_tls_probe", schema.url());
    let (client, connection) = tokio_postgres::connect(&server, tokio_postgres::NoTls).await.expect("the test server answers");
    tokio::spawn(connection);
    let ssl: String = client.query_one("SHOW ssl", &[]).await.expect("SHOW ssl").get(0);
    match PostgresStore::connect(&url).await {
        Ok(store) => {
            assert_eq!(ssl, "on", "connected with sslmode=require to a server without TLS");
            let encrypted: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
                     WHERE application_name = 'mcp_tasks_tls_probe' AND ssl",
                    &[],
                )
                .await
                .expect("pg_stat_ssl")
                .get(0);
            assert!(encrypted >= 1, "the store's connection is encrypted");
            drop(store);
        }
        Err(err) => {
            assert_eq!(ssl, "off", "refused by a server with TLS: {err}");
            let message = err.to_string().to_lowercase();
            assert!(message.contains("tls") || message.contains("ssl"), "{message}");
        }
    }
}
