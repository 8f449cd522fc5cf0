//! The change feed of a [`PostgresStore`](crate::PostgresStore) across replicas:
//! `LISTEN "mcp_tasks.<schema>"` on a connection of its own (every write that changes a task
//! is announced by its id, and the version it left when known, once it committed:
//! `PostgresStore::announce`) as the fast hint, and a poll of `tasks_by_change`
//! every [`POLL_EVERY`] as the backstop for what notifications miss (a listener reconnecting,
//! a connection pooler that drops them). Each changed record is read once per replica and
//! sent to every subscriber; a record already sent at its version is not sent again, and a
//! notification of a version already known (this replica's own write, which its engine
//! published as it returned) is not read at all.
//!
//! A replica announces its writes only while another replica listens: each listener says
//! `hello <its id>` on the channel when it starts listening and every [`HELLO_EVERY`], and
//! answers a hello from a replica it had not heard lately with its own; a replica that heard
//! another's within [`HELLO_HEARD_FOR`] announces, a lone one sends nothing (its own
//! subscribers have its writes already). A replica that starts listening is heard within a
//! round trip; writes made before that reach it by the poll. A replica that cannot listen
//! (behind a transaction pooler without `listen_url`) hears no hello, and announces always.
//!
//! Hand-written on tokio-postgres's `poll_message`: the pool's connections cannot listen (their
//! connection futures are the pool's), and no crate of the tree wraps it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_util::sync::CancellationToken;

use mcp_tasks_engine::{TaskId, TaskRecord, Timestamp, Version};

use crate::conn::{Conn, Connections, Session as _};
use crate::sql;
use crate::rows::read_record;

/// Capacity of the feed; a slower subscriber lags and re-reads.
const FEED_CAPACITY: usize = 4096;

/// How often the backstop polls for changes that no notification announced.
pub(crate) const POLL_EVERY: Duration = Duration::from_secs(1);

/// How far back each poll looks behind the newest change it has seen: a write whose
/// transaction commits later than this after it stamped `changed_at` is announced only by
/// its notification.
const POLL_OVERLAP_MS: i64 = 5_000;

/// At most this many rows per poll (more wait for the next one; past this many changes in
/// one overlap window the backstop falls behind, and only notifications keep up).
const POLL_BATCH: i64 = 10_000;

/// How often a listener says hello to the other replicas.
const HELLO_EVERY: Duration = Duration::from_secs(1);

/// How long after its last hello another replica counts as listening.
const HELLO_HEARD_FOR: Duration = Duration::from_secs(3);

/// How long the listener waits before reconnecting after its connection failed.
const RECONNECT_AFTER: Duration = Duration::from_millis(500);

/// The feed of one store: the broadcast its subscribers receive from, and the background
/// listener and poller, which stop when the last handle of the store is dropped.
pub(crate) struct Feed {
    pub(crate) sender: broadcast::Sender<Arc<TaskRecord>>,
    /// What was sent, or written by this replica (whose engine published it itself).
    sent: Arc<Mutex<Sent>>,
    /// This replica's id, and until when another replica is known to listen.
    peers: Peers,
    _stop: tokio_util::sync::DropGuard,
}

/// What the listener knows of the other listening replicas: this one's id, and until when
/// another one is known to listen.
#[derive(Clone)]
struct Peers {
    me: Arc<str>,
    others: Arc<AtomicI64>,
}

impl Peers {
    /// A hello from replica `from`: counts as listening for [`HELLO_HEARD_FOR`]. Answers
    /// whether it is one not heard lately (then this replica says hello back at once).
    fn heard(&self, from: &str) -> bool {
        if from == &*self.me {
            return false;
        }
        let now = wall_clock().0;
        let until = now.saturating_add(i64::try_from(HELLO_HEARD_FOR.as_millis()).unwrap_or(i64::MAX));
        self.others.swap(until, Ordering::Relaxed) <= now
    }
}

/// What the feed has sent: each task's last version sent, and the change time it was seen at
/// (to forget it once it is behind every poll's window).
///
/// And the records of the last [`RECENT`] tasks it sent: a finished one never changes again
/// (until it is purged, after its expiry), so a read of it is answered from here
/// ([`Feed::settled`]); any one is where a compare-and-set starts ([`Feed::known`]). They are
/// records the feed's channel holds anyway (its last [`FEED_CAPACITY`]), so this holds no
/// more memory than the channel does.
#[derive(Default)]
struct Sent {
    versions: HashMap<TaskId, (Version, i64)>,
    recent: HashMap<TaskId, Arc<TaskRecord>>,
    recent_order: VecDeque<TaskId>,
}

/// How many tasks' records the feed keeps.
const RECENT: usize = 1024;

impl Sent {
    /// Whether `record` is newer than what was sent of its task; if so it counts as sent (and
    /// its record is kept).
    fn fresh(&mut self, record: &Arc<TaskRecord>, changed_at: i64) -> bool {
        if self.has(&record.id, record.version) {
            return false;
        }
        self.versions.insert(record.id.clone(), (record.version, changed_at));
        if self.recent.insert(record.id.clone(), Arc::clone(record)).is_none() {
            self.recent_order.push_back(record.id.clone());
        }
        while self.recent_order.len() > RECENT {
            if let Some(oldest) = self.recent_order.pop_front() {
                self.recent.remove(&oldest);
            }
        }
        true
    }

    /// Whether task `id` was sent at `version` or later (this replica's own write, or a
    /// change it read): a change named at that version needs no read.
    fn has(&self, id: &TaskId, version: Version) -> bool {
        self.versions.get(id).is_some_and(|(at, _)| *at >= version)
    }

    /// Forgets tasks last seen before `horizon` (ms, server clock).
    fn forget_before(&mut self, horizon: i64) {
        self.versions.retain(|_, (_, seen)| *seen >= horizon);
    }
}

impl Feed {
    /// Starts listening on `channel` with a connection of its own (`listener`: its settings
    /// and TLS; none behind a transaction pooler without `listen_url`), and polling through
    /// `pool`.
    pub(crate) fn start(listener: Option<(tokio_postgres::Config, MakeRustlsConnect)>, channel: String, pool: Connections) -> Feed {
        let (sender, _) = broadcast::channel(FEED_CAPACITY);
        let stop = CancellationToken::new();
        let sent = Arc::new(Mutex::new(Sent::default()));
        let peers = Peers { me: TaskId::random().as_str().into(), others: Arc::default() };
        if let Some(listener) = listener {
            tokio::spawn(listen(listener, channel, pool.clone(), sender.clone(), Arc::clone(&sent), peers.clone(), stop.clone()));
        } else {
            // A replica that cannot listen hears no hello: it announces always.
            peers.others.store(i64::MAX, Ordering::Relaxed);
        }
        tokio::spawn(poll(pool, sender.clone(), Arc::clone(&sent), stop.clone()));
        Feed {
            sender,
            sent,
            peers,
            _stop: stop.drop_guard(),
        }
    }

    /// Whether another replica listens (said hello lately): only then are this replica's
    /// writes announced. Always, for a replica that cannot listen itself (behind a
    /// transaction pooler without `listen_url`): it cannot hear the others.
    pub(crate) fn others_listen(&self) -> bool {
        self.peers.others.load(Ordering::Relaxed) > wall_clock().0
    }

    /// This replica wrote `record`: it is sent to this replica's subscribers now (the feed
    /// carries every write, this replica's too), and the notification of that write (or an
    /// older one) is not read back.
    /// Task `id` if it is among the finished tasks the feed sent lately and still retained at
    /// `now` (so not purged: a purge takes only expired tasks).
    pub(crate) fn settled(&self, id: &TaskId, now: Timestamp) -> Option<Arc<TaskRecord>> {
        let sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        sent.recent.get(id).filter(|record| record.status().is_terminal() && record.retained_at(now)).cloned()
    }

    /// Task `id` as the feed last sent it, if it did lately: possibly older than the stored
    /// version (another replica's write not seen yet), so for a compare-and-set only.
    pub(crate) fn known(&self, id: &TaskId) -> Option<Arc<TaskRecord>> {
        self.sent.lock().unwrap_or_else(PoisonError::into_inner).recent.get(id).cloned()
    }

    /// Forgets the finished tasks `purged` kept for reads.
    pub(crate) fn purged(&self, purged: &[TaskId]) {
        let mut sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        for id in purged {
            sent.recent.remove(id);
        }
    }

    pub(crate) fn wrote(&self, record: Arc<TaskRecord>) {
        let fresh = self.sent.lock().unwrap_or_else(PoisonError::into_inner).fresh(&record, wall_clock().0);
        if fresh {
            let _ = self.sender.send(record);
        }
    }
}

/// What a notification says.
enum Note {
    /// Task `.0` changed, to version `.1` if known.
    Changed(TaskId, Option<Version>),
    /// A replica (by its id) listens.
    Hello(String),
}

/// A notification's payload: `ID VERSION` (the task and the version its write left), `ID`
/// alone (a write whose version was not known, or a replica of an earlier build), or
/// `hello REPLICA` (a task id has no space and is never `hello`).
fn parse(payload: &str) -> Note {
    match payload.split_once(' ') {
        Some(("hello", from)) => Note::Hello(from.to_owned()),
        Some((id, version)) => Note::Changed(TaskId::from(id.to_owned()), version.parse().ok().map(Version)),
        None => Note::Changed(TaskId::from(payload.to_owned()), None),
    }
}

/// Says hello on `channel` through the listener's own connection ([`sql::NOTIFY`], as the
/// announcements are sent).
async fn hello(client: &tokio_postgres::Client, channel: &str, me: &str) {
    if let Err(err) = client.execute(sql::NOTIFY, &[&channel, &[format!("hello {me}")].as_slice()]).await {
        tracing::debug!(error = %err, "the change feed could not say hello to the other replicas");
    }
}

/// Sends `record` (changed at `changed_at`) unless it was sent already at its version.
fn send(
    sender: &broadcast::Sender<Arc<TaskRecord>>,
    sent: &Mutex<Sent>,
    record: TaskRecord,
    changed_at: i64,
) {
    let record = Arc::new(record);
    if sent
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .fresh(&record, changed_at)
    {
        let _ = sender.send(record);
    }
}

/// The listener: connects, `LISTEN`s, and reads each notified task, until `stop`.
async fn listen(
    (config, tls): (tokio_postgres::Config, MakeRustlsConnect),
    channel: String,
    pool: Connections,
    sender: broadcast::Sender<Arc<TaskRecord>>,
    sent: Arc<Mutex<Sent>>,
    peers: Peers,
    stop: CancellationToken,
) {
    while !stop.is_cancelled() {
        let connected = tokio::select! {
            _ = stop.cancelled() => return,
            connected = config.connect(tls.clone()) => connected,
        };
        let (client, mut connection) = match connected {
            Ok(pair) => pair,
            Err(err) => {
                tracing::warn!(error = %mcp_tasks_tls::with_causes(&err), "the change feed cannot connect to listen; polling meanwhile");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(RECONNECT_AFTER) => continue,
                }
            }
        };
        let (ids, mut notified) = tokio::sync::mpsc::unbounded_channel::<String>();
        // The connection future delivers notifications; it runs beside the LISTEN below.
        let driver = tokio::spawn(async move {
            while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                match message {
                    Ok(AsyncMessage::Notification(note)) => {
                        if ids.send(note.payload().to_owned()).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        });
        let listen = format!("LISTEN \"{}\"", channel.replace('"', "\"\""));
        if let Err(err) = client.batch_execute(&listen).await {
            tracing::warn!(error = %mcp_tasks_tls::with_causes(&err), "the change feed cannot LISTEN; polling meanwhile");
        } else {
            let mut hellos = tokio::time::interval(HELLO_EVERY);
            hellos.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let id = tokio::select! {
                    _ = stop.cancelled() => { driver.abort(); return; }
                    _ = hellos.tick() => { hello(&client, &channel, &peers.me).await; continue; }
                    id = notified.recv() => id,
                };
                let Some(payload) = id else { break };
                let (unknown, newcomer) = unknown_changes(payload, &mut notified, &sent, &peers);
                if newcomer {
                    hello(&client, &channel, &peers.me).await;
                }
                if !unknown.is_empty()
                    && let Ok(client) = pool.get().await
                {
                    read_and_send(&client, &sender, &sent, &unknown, i64::MAX).await;
                }
            }
        }
        driver.abort();
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(RECONNECT_AFTER) => {}
        }
    }
}

/// The tasks that notification `first` and those that came with it (the notifiers send theirs
/// in batches) name at a version not known yet (neither this replica's own write nor sent):
/// what is read, in one statement, at most [`READ_BATCH`]. And whether a hello among them came
/// from a replica not heard lately.
fn unknown_changes(
    first: String,
    notified: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    sent: &Mutex<Sent>,
    peers: &Peers,
) -> (Vec<String>, bool) {
    let mut unknown: Vec<String> = Vec::new();
    let mut newcomer = false;
    let mut next = Some(first);
    while let Some(payload) = next.take() {
        match parse(&payload) {
            Note::Hello(from) => newcomer |= peers.heard(&from),
            Note::Changed(id, version) => {
                let known =
                    version.is_some_and(|version| sent.lock().unwrap_or_else(PoisonError::into_inner).has(&id, version));
                if !known && !unknown.iter().any(|seen| seen == id.as_str()) {
                    unknown.push(id.as_str().to_owned());
                }
            }
        }
        if unknown.len() < READ_BATCH {
            next = notified.try_recv().ok();
        }
    }
    (unknown, newcomer)
}

/// The most changed tasks read in one statement.
const READ_BATCH: usize = 256;

/// Reads tasks `ids` in one statement and sends each that is newer than what was sent, at its
/// change time (`unstamped` for a row without one). A read that fails is left to the poller.
async fn read_and_send(
    client: &Conn,
    sender: &broadcast::Sender<Arc<TaskRecord>>,
    sent: &Mutex<Sent>,
    ids: &[String],
    unstamped: i64,
) {
    let Ok(statement) = client.prepare_cached(sql::GET_CHANGED_ANY).await else {
        return;
    };
    let Ok(rows) = client.query(&statement, &[&ids]).await else {
        return;
    };
    for row in &rows {
        if let Ok(record) = read_record(row) {
            let changed_at: Option<i64> = row.try_get("changed_at").ok().flatten();
            send(sender, sent, record, changed_at.unwrap_or(unstamped));
        }
    }
}

/// The backstop: every [`POLL_EVERY`], the rows changed since a little before the newest
/// change seen, until `stop`.
async fn poll(
    pool: Connections,
    sender: broadcast::Sender<Arc<TaskRecord>>,
    sent: Arc<Mutex<Sent>>,
    stop: CancellationToken,
) {
    let mut watermark: Option<i64> = None;
    let mut ticks = tokio::time::interval(POLL_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let Ok(client) = pool.get().await else {
            continue;
        };
        let since = match watermark {
            Some(at) => at,
            None => match async {
                let clock = client.prepare_cached(sql::CLOCK_MS).await?;
                client.query_one(&clock, &[]).await?.try_get::<_, i64>(0)
            }
            .await
            {
                Ok(now) => {
                    watermark = Some(now);
                    continue;
                }
                Err(_) => continue,
            },
        };
        let Ok(statement) = client.prepare_cached(sql::CHANGED_SINCE).await else {
            continue;
        };
        let Ok(rows) = client
            .query(&statement, &[&(since - POLL_OVERLAP_MS), &POLL_BATCH])
            .await
        else {
            continue;
        };
        // Only the changes this replica has not seen (through its notifications or its own
        // writes) are read in full.
        let mut unseen = Vec::new();
        for row in &rows {
            let (Ok(id), Ok(version), Ok(Some(changed_at))) =
                (row.try_get::<_, String>("id"), row.try_get::<_, i64>("version"), row.try_get::<_, Option<i64>>("changed_at"))
            else {
                continue;
            };
            watermark = Some(watermark.unwrap_or(changed_at).max(changed_at));
            let id = TaskId::from(id);
            let seen = u64::try_from(version)
                .is_ok_and(|version| sent.lock().unwrap_or_else(PoisonError::into_inner).has(&id, Version(version)));
            if !seen {
                unseen.push(id.as_str().to_owned());
            }
        }
        for batch in unseen.chunks(READ_BATCH) {
            read_and_send(&client, &sender, &sent, batch, since).await;
        }
        if let Some(at) = watermark {
            sent.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .forget_before(at - 2 * POLL_OVERLAP_MS);
        }
    }
}

/// Now, by this machine's clock (ms since the Unix epoch).
pub(crate) fn wall_clock() -> Timestamp {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Timestamp(i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
}
