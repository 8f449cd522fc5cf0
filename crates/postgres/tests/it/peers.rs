//! A replica announces its writes on the change feed's channel only while another replica
//! listens (each listener says `hello <id>` when it starts and every second): a lone replica
//! sends nothing, and one that starts listening is heard, and announced to, at once. Watched
//! by a plain `LISTEN` on the channel beside the replicas (it says no hello itself).

use std::time::Duration;

use futures_util::StreamExt;
use mcp_tasks_engine::{RecordStore, TaskState, Timestamp, Update};
use mcp_tasks_postgres::PostgresStore;
use mcp_tasks_testkit::store_suite::{T0, sample_task};
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::db::Schema;

/// How long a test waits for what must come.
const DEADLINE: Duration = Duration::from_secs(10);

/// The payloads notified on `channel` of the database at `url`, as they come, through a plain
/// connection that `LISTEN`s (kept open by the client returned).
pub(crate) async fn watch_channel(url: &str, channel: &str) -> (tokio_postgres::Client, mpsc::UnboundedReceiver<String>) {
    let (client, mut connection) = tokio_postgres::connect(url, NoTls).await.expect("a plain connection");
    let (payloads, watched) = mpsc::unbounded_channel();
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    tokio::spawn(async move {
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(note) = message
                && payloads.send(note.payload().to_owned()).is_err()
            {
                return;
            }
        }
    });
    client.batch_execute(&format!("LISTEN \"{channel}\"")).await.expect("LISTEN");
    (client, watched)
}

/// The next payload, within [`DEADLINE`].
pub(crate) async fn next(watched: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(DEADLINE, watched.recv()).await.expect("a notification within the deadline").expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_replica_announces_nothing_and_two_announce_to_each_other() {
    let Some(server) = crate::db::database_url() else { return };
    let schema = Schema::create(&server).await;
    let first = PostgresStore::connect(&schema.url()).await.expect("the store connects");
    let channel = {
        let client = schema.client().await;
        let row = client.query_one("SELECT 'mcp_tasks.' || current_schema()", &[]).await.unwrap();
        row.get::<_, String>(0)
    };
    let (_watcher, mut watched) = watch_channel(&schema.url(), &channel).await;

    // The first replica says hello every second, and announces none of its writes: none
    // listens but itself (the watcher says no hello).
    let hello = next(&mut watched).await;
    assert!(hello.starts_with("hello "), "{hello}");
    let tasks: Vec<_> = (0..10).map(|_| sample_task("alice")).collect();
    for task in &tasks {
        first.insert(task).await.unwrap();
    }
    let done = Update { state: TaskState::Cancelled, status_message: None, updated_at: Timestamp(T0.0 + 1), attempt: 1 };
    first.replace(&tasks[0].id, tasks[0].version, &done).await.unwrap();
    for _ in 0..2 {
        let payload = next(&mut watched).await;
        assert_eq!(payload, hello, "only the first replica's hellos, no announcement");
    }

    // A second replica says hello; the first hears it and announces its writes from then on.
    let second = PostgresStore::connect(&schema.url()).await.expect("the second store connects");
    let heard = tokio::time::timeout(DEADLINE, async {
        loop {
            let payload = next(&mut watched).await;
            if payload.starts_with("hello ") && payload != hello {
                return payload;
            }
        }
    })
    .await
    .expect("the second replica says hello");
    let task = sample_task("alice");
    let announced = tokio::time::timeout(DEADLINE, async {
        // Writes until one is announced: the first hears the second's hello within a round
        // trip of it.
        let mut n = 0;
        loop {
            let task = sample_task("alice");
            first.insert(&task).await.unwrap();
            n += 1;
            loop {
                match tokio::time::timeout(Duration::from_millis(200), watched.recv()).await {
                    Ok(Some(payload)) if payload.starts_with(task.id.as_str()) => return n,
                    Ok(Some(_)) => {}
                    _ => break,
                }
            }
        }
    })
    .await
    .expect("the first replica announces once another listens");
    assert!(announced >= 1);
    // And the second announces its own writes to the first.
    second.insert(&task).await.unwrap();
    let mine = tokio::time::timeout(DEADLINE, async {
        loop {
            if next(&mut watched).await.starts_with(task.id.as_str()) {
                return;
            }
        }
    })
    .await;
    assert!(mine.is_ok(), "the second replica announces its writes (it heard {heard:?} answered)");
}
