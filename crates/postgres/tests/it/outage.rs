//! The database out of reach for a while, as while it restarts: the store is connected through
//! a TCP relay that the test stops (every connection closed, nothing listening) and starts
//! again on the same port. A request meanwhile fails as `StoreError::Unavailable` (retryable)
//! after a bounded wait, naming the URL without its password; once the relay is back the same
//! store serves again by itself.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mcp_tasks_engine::{RecordStore, StoreError, TaskId};
use mcp_tasks_postgres::PostgresStore;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::db::{self, Schema};

/// A relay from a local port to the database; stopping it closes every connection it carries.
struct Relay {
    addr: SocketAddr,
    target: SocketAddr,
    task: Option<JoinHandle<()>>,
}

impl Relay {
    async fn start(addr: SocketAddr, target: SocketAddr) -> Relay {
        let listener = TcpListener::bind(addr).await.expect("bind the relay");
        let addr = listener.local_addr().expect("the relay's address");
        let task = tokio::spawn(async move {
            // Dropped with this task: every connection's copy is aborted, its sockets closed.
            let mut connections = JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                connections.spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        Relay { addr, target, task: Some(task) }
    }

    async fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

/// The `host:port` of the test server's URL.
fn address(url: &str) -> (String, SocketAddr) {
    use std::net::ToSocketAddrs;
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default().to_owned();
    let with_port = if host_port.contains(':') { host_port.clone() } else { format!("{host_port}:5432") };
    let addr = with_port.to_socket_addrs().ok().and_then(|mut addrs| addrs.next());
    (host_port, addr.unwrap_or_else(|| panic!("TEST_DATABASE_URL names no host:port to relay to: {url}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_a_retryable_error_after_a_bounded_wait_and_service_resumes() {
    let Some(server) = db::database_url() else { return };
    let (authority, target) = address(&server);
    let schema = Schema::create(&server).await;
    let mut relay = Relay::start("127.0.0.1:0".parse().unwrap(), target).await;
    let url = schema.url().replacen(&authority, &relay.addr.to_string(), 1);
    let store = PostgresStore::connect(&url).await.expect("the store connects through the relay");
    let id = TaskId::from("no-such-task");
    assert!(store.get(&id).await.expect("served").is_none());

    relay.stop().await;
    let asked = Instant::now();
    let err = store.get(&id).await.expect_err("the database is out of reach");
    let waited = asked.elapsed();
    assert!(matches!(err, StoreError::Unavailable(_)), "a retryable error: {err:?}");
    assert!(waited < Duration::from_secs(10), "a bounded wait: {waited:?}");
    // Again, until no pooled connection is left (each one the relay cut fails as it is handed
    // out, and is dropped): then a new one is refused, tried again until the wait ends.
    let mut tries = 0;
    let (err, waited) = loop {
        let asked = Instant::now();
        let err = store.get(&id).await.expect_err("still out of reach");
        let waited = asked.elapsed();
        tries += 1;
        if err.to_string().contains("cannot reach PostgreSQL") || tries == 16 {
            break (err, waited);
        }
        assert!(matches!(err, StoreError::Unavailable(_)), "a cut pooled connection is retryable too: {err:?}");
    };
    let message = err.to_string();
    assert!(matches!(err, StoreError::Unavailable(_)), "{message}");
    assert!(message.contains(&relay.addr.to_string()) && message.contains("cannot reach PostgreSQL"), "{message}");
    assert!(waited >= Duration::from_secs(4) && waited < Duration::from_secs(10), "waited {waited:?} for a connection");

    let relay_addr = relay.addr;
    let _relay = Relay::start(relay_addr, relay.target).await;
    assert!(store.get(&id).await.expect("served again, without a new store").is_none());
}
