//! [`SqliteStore`]: the [`TaskStore`](mcp_tasks_engine::TaskStore) on one SQLite file: the
//! handle, opening the file, the connections' settings, reads on a pool of connections and
//! writes queued to the writer thread ([`crate::writer`]). The trait's methods are
//! implemented by role beside it (`records`, `claims`, `view`, `work`, `sessions`).
//!
//! # Reads
//! Reads run on Tokio's blocking pool on a small pool of read-only connections
//! ([`READERS`]); WAL lets them read alongside the writer. A read started after a write
//! returned sees that write: a commit is visible to new read transactions once it returns.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::{Semaphore, broadcast, oneshot};

use mcp_tasks_engine::store::implement::Commit;
use mcp_tasks_engine::{StoreError, TaskRecord};

use crate::changes::ChangeLog;
use crate::faults::{self, StoreLock};
use crate::hot::Hot;
use crate::migrate;
use crate::peers::{BACKSTOP, Nodes, Signal};
use crate::writer::{Counters, Job, Peers, Poke, Space, Tx, Write, presize_wal, write_loop};

/// Capacity of the change feed; a slower subscriber lags and re-reads.
const FEED_CAPACITY: usize = 4096;

/// How long a batch waits for another process's write lock on the file (another mcp-tasks
/// process's batch, which holds it for one commit; or an operator's `sqlite3` shell) before
/// it fails with `SQLITE_BUSY`. Within this process only the writer thread writes.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// SQLite's busy handler on every connection: `false` (give up, `SQLITE_BUSY`) once
/// [`BUSY_TIMEOUT`] has passed, else a short sleep and another try. SQLite's own
/// (`busy_timeout`) sleeps 1, 2, 5, 10, 15, 20, 25… ms between tries: a writer that found
/// another process's batch holding the lock (a millisecond or two) waited up to tens of
/// milliseconds more, the p99 of three processes on one file 20–80 ms. Here the first
/// [`BUSY_SPINS`] tries are [`BUSY_SHORT`] apart, then every millisecond. `tries` is how many
/// times SQLite called it for this lock.
fn busy(tries: i32) -> bool {
    let tries = u32::try_from(tries).unwrap_or(0);
    let waited = BUSY_SHORT * tries.min(BUSY_SPINS) + Duration::from_millis(u64::from(tries.saturating_sub(BUSY_SPINS)));
    if waited >= BUSY_TIMEOUT {
        return false;
    }
    std::thread::sleep(if tries < BUSY_SPINS { BUSY_SHORT } else { Duration::from_millis(1) });
    true
}

/// The sleeps of the first tries of [`busy`], and how many there are (10 ms in all).
const BUSY_SHORT: Duration = Duration::from_micros(50);
const BUSY_SPINS: u32 = 200;

/// The most read connections open at once; more concurrent reads wait for one.
const READERS: usize = 4;

/// SQLite's page cache of the write connection, in KiB (`PRAGMA cache_size = -N`). Every
/// connection has its own; together they bound the store's memory whatever the file's size.
const WRITER_CACHE_KIB: u32 = 8 * 1024;

/// The page cache of each read connection, in KiB.
const READER_CACHE_KIB: u32 = 4 * 1024;

/// How a commit reaches the disk: SQLite's `PRAGMA synchronous`, in WAL mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synchronous {
    /// Every commit fsyncs the WAL before it returns: a returned write survives a power
    /// loss. The production setting (invariant 1).
    #[default]
    Full,
    /// The WAL is fsynced only at checkpoints: a returned write survives a crash of the
    /// process, not of the machine. For comparison in benchmarks only.
    Normal,
}

impl Synchronous {
    /// The pragma's value, as benchmark names show it (`FULL`, `NORMAL`).
    pub fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// What the writer thread has done since the store was opened: how well group commit
/// groups (writes per commit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteStats {
    /// Transactions committed.
    pub commits: u64,
    /// Writes in those transactions (each `insert`, `replace` or `purge` counts once,
    /// whether it succeeded or failed on its own, as a duplicate id does).
    pub writes: u64,
}

/// The task store on one SQLite file: the embedded default of mcp-tasks.
///
/// A cheap handle: clones share one writer thread and one pool of readers. Open it with
/// [`SqliteStore::open`]; the writer thread ends, after answering every queued write,
/// when the last clone is dropped.
#[derive(Clone)]
pub struct SqliteStore {
    pub(crate) inner: Arc<Inner>,
}

/// What the clones of a [`SqliteStore`] share.
pub(crate) struct Inner {
    /// The queue to the writer thread; `None` only while dropping.
    writes: Option<mpsc::Sender<Box<dyn Write>>>,
    /// The writer thread, joined on drop.
    writer: Option<JoinHandle<()>>,
    /// Idle read connections. A std mutex, held only to take or put back one connection.
    readers: Mutex<Vec<Connection>>,
    /// One permit per read connection that may be open.
    reader_permits: Semaphore,
    /// Counters kept by the writer thread.
    stats: Arc<Counters>,
    path: PathBuf,
    synchronous: Synchronous,
    /// Keeps builds that allow one server per file off it ([`faults`]); released after the
    /// writer is joined.
    _lock: StoreLock,
    /// The tasks written last ([`crate::hot`]), kept by the writer thread.
    pub(crate) hot: Arc<Hot>,
    /// The change feed: each write's record, sent once its batch has committed, and what
    /// other processes changed, once the writer has read it.
    pub(crate) feed: broadcast::Sender<Arc<TaskRecord>>,
    /// The nodes whose claims this handle writes, and which others are gone ([`crate::peers`]).
    pub(crate) nodes: Arc<Nodes>,
    /// The commit counter of every process on the file.
    signal: Arc<Signal>,
    /// Whether a poke is queued to the writer.
    poked: Arc<AtomicBool>,
    /// Whether this store's watcher sleeps on the counter now (see `watch`).
    asleep: Arc<AtomicBool>,
    /// Whether the writer records webhook deliveries ([`crate::deliveries`]).
    pub(crate) deliveries: Arc<AtomicBool>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the queue lets the writer finish what is queued and stop; joining it
        // means the file is closed once the last handle is gone (a reopen finds it quiet).
        drop(self.writes.take());
        if let Some(writer) = self.writer.take()
            && writer.join().is_err()
        {
            tracing::error!("the SQLite writer thread panicked");
        }
    }
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field("synchronous", &self.inner.synchronous)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (or creates) the store at `path`, creating missing parent directories, and
    /// migrates its schema to this build's version. Commits are `synchronous=FULL`.
    ///
    /// Blocking file I/O: call it at start-up, not from a busy async task.
    ///
    /// # Errors
    /// [`StoreError::Backend`] if a directory cannot be created, the file cannot be opened
    /// as a database, WAL mode is unavailable, a migration fails, the schema is newer
    /// than this build, or the writer thread cannot be started.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Synchronous::Full)
    }

    /// Opens the store like [`SqliteStore::open`], with the durability of commits given by
    /// `synchronous`. Production uses [`Synchronous::Full`] (what [`SqliteStore::open`]
    /// does); [`Synchronous::Normal`] exists for comparison in benchmarks.
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub fn open_with(path: &Path, synchronous: Synchronous) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_locked(path, synchronous).map_err(|err| faults::at_open(path, err))
    }

    fn open_locked(path: &Path, synchronous: Synchronous) -> Result<SqliteStore, StoreError> {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            fs::create_dir_all(parent).map_err(StoreError::backend)?;
        }
        let lock = StoreLock::take(path)?;
        let signal = Arc::new(crate::peers::signal(path)?);
        let nodes = Nodes::new(path);
        let mut conn = open_writer(path, synchronous)?;
        configure(&mut conn, synchronous, WRITER_CACHE_KIB)?;
        nodes.register(&conn)?;
        // Replaces SQLite's automatic checkpoint (itself a WAL hook) on this connection, the
        // only one that writes: the writer checkpoints between batches (`write_loop`).
        let wal_frames = Arc::new(AtomicU32::new(0));
        let frames = Arc::clone(&wal_frames);
        conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
            frames.store(u32::try_from(pages).unwrap_or(u32::MAX), Ordering::Relaxed);
            Ok(())
        }))
        .map_err(StoreError::backend)?;
        migrate::migrate(&mut conn)?;
        let grown = synchronous == Synchronous::Full && presize_wal(&conn, path);
        let space = Space::new(path, grown);
        // One reader opened now: the file is known to be readable before we serve.
        let reader = open_reader(path, synchronous, &nodes)?;
        let (writes, queue) = mpsc::channel();
        let stats = Arc::new(Counters::default());
        let counters = Arc::clone(&stats);
        let hot = Arc::new(Hot::new(Arc::clone(&signal)));
        let kept = Arc::clone(&hot);
        let feed = broadcast::channel(FEED_CAPACITY).0;
        let poked = Arc::new(AtomicBool::new(false));
        let asleep = Arc::new(AtomicBool::new(false));
        let deliveries = Arc::new(AtomicBool::new(false));
        let log = ChangeLog::open(&conn).map_err(StoreError::backend)?;
        let peers =
            Peers {
                signal: Arc::clone(&signal),
                log,
                feed: feed.clone(),
                poked: Arc::clone(&poked),
                asleep: Arc::clone(&asleep),
                deliveries: Arc::clone(&deliveries),
            };
        let writer = std::thread::Builder::new()
            .name("sqlite-writer".to_owned())
            .spawn(move || write_loop(&conn, &queue, &counters, &kept, &wal_frames, space, peers))
            .map_err(StoreError::backend)?;
        tracing::debug!(path = %path.display(), schema = migrate::SCHEMA_VERSION, "opened the SQLite task store");
        let inner = Arc::new(Inner {
            writes: Some(writes),
            writer: Some(writer),
            readers: Mutex::new(vec![reader]),
            reader_permits: Semaphore::new(READERS),
            stats,
            path: path.to_owned(),
            synchronous,
            _lock: lock,
            hot,
            feed,
            nodes,
            signal,
            poked,
            asleep,
            deliveries,
        });
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("sqlite-watcher".to_owned())
            .spawn(move || watch(&weak))
            .map_err(StoreError::backend)?;
        Ok(SqliteStore { inner })
    }

    /// The file this store was opened on.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Calls `observer` on the writer thread after every batch it commits or fails to
    /// commit, with its duration and size (for metrics: keep it quick). Only the first
    /// observer set is kept.
    pub fn on_commit(&self, observer: impl Fn(Commit) + Send + Sync + 'static) {
        let _ = self.inner.stats.observer.set(Box::new(observer));
    }

    /// How many transactions the writer thread has committed, holding how many writes.
    pub fn write_stats(&self) -> WriteStats {
        WriteStats {
            commits: self.inner.stats.commits.load(Ordering::Relaxed),
            writes: self.inner.stats.writes.load(Ordering::Relaxed),
        }
    }

    /// The current value of `PRAGMA <name>` on a read connection of the store, as text
    /// (for diagnostics and tests: `journal_mode` is `wal`, `synchronous` is `2`, i.e. FULL;
    /// every connection has the same settings).
    ///
    /// # Errors
    /// [`StoreError::Backend`] if `name` is not an identifier or the pragma returns no row.
    pub async fn pragma(&self, name: &str) -> Result<String, StoreError> {
        let name = name.to_owned();
        self.read(move |conn| {
            conn.pragma_query_value(None, &name, |row| {
                Ok(match row.get_ref(0)? {
                    rusqlite::types::ValueRef::Null => String::new(),
                    rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                    rusqlite::types::ValueRef::Real(x) => x.to_string(),
                    rusqlite::types::ValueRef::Text(text)
                    | rusqlite::types::ValueRef::Blob(text) => {
                        String::from_utf8_lossy(text).into_owned()
                    }
                })
            })
            .map_err(StoreError::backend)
        })
        .await
    }

    /// Runs the read `f` on a read connection, on the blocking pool.
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let permit = self
            .inner
            .reader_permits
            .acquire()
            .await
            .map_err(StoreError::backend)?;
        let inner = Arc::clone(&self.inner);
        let read = tokio::task::spawn_blocking(move || {
            let idle = inner
                .readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            let conn = match idle {
                Some(conn) => conn,
                None => open_reader(&inner.path, inner.synchronous, &inner.nodes)?,
            };
            let read = f(&conn);
            inner
                .readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
            read
        })
        .await;
        drop(permit);
        read.map_err(StoreError::backend)?
    }

    /// Queues the write `f` to the writer thread and waits until its batch has committed.
    ///
    /// The write is queued on the future's first poll, before its first await (the group
    /// commit tests rely on this to know a write is queued without waiting by time).
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Job {
            work: Some(f),
            outcome: None,
            touched: Vec::new(),
            reply,
        });
        self.inner
            .writes
            .as_ref()
            .ok_or_else(writer_gone)?
            .send(job)
            .map_err(|_| writer_gone())?;
        answer.await.map_err(|_| writer_gone())?
    }
}

impl SqliteStore {
    /// Publishes `task` on the change feed (after its commit; no subscriber is fine).
    pub(crate) fn publish(&self, task: &TaskRecord) {
        self.publish_shared(Arc::new(task.clone()));
    }

    /// Publishes `task` on the change feed without copying it (the hot path's writes share
    /// one copy between the cache, the feed and their caller).
    pub(crate) fn publish_shared(&self, task: Arc<TaskRecord>) {
        let _ = self.inner.feed.send(task);
    }
}

/// The watcher thread of a store: sleeps on the commit counter of the processes on the file
/// and pokes the writer when the count moved past what the writer has caught up with (another
/// process committed), or every [`BACKSTOP`] (the writer then compares `data_version`). Says
/// while it sleeps (`asleep`), so that this process's own commits wake nobody when no other
/// process sleeps on the file. Ends when the store is gone (within a backstop).
fn watch(store: &Weak<Inner>) {
    let Some((signal, asleep)) = store.upgrade().map(|inner| (Arc::clone(&inner.signal), Arc::clone(&inner.asleep))) else {
        return;
    };
    loop {
        // Counted as a sleeper before the count is loaded: no commit after it goes unseen.
        let sleeper = signal.sleeper();
        let seen = signal.load();
        match store.upgrade() {
            Some(inner) if !inner.hot.is_synced() => poke(&inner),
            Some(_) => {}
            None => return,
        }
        asleep.store(true, Ordering::SeqCst);
        sleeper.wait(seen, BACKSTOP);
        asleep.store(false, Ordering::SeqCst);
        drop(sleeper);
        if signal.load() == seen {
            match store.upgrade() {
                Some(inner) => poke(&inner),
                None => return,
            }
        }
    }
}

/// Queues a poke to the writer, unless one is queued already.
fn poke(inner: &Inner) {
    if !inner.poked.swap(true, Ordering::SeqCst)
        && let Some(writes) = &inner.writes
    {
        let _ = writes.send(Box::new(Poke));
    }
}

/// The error of a write whose writer thread is gone (it panicked).
fn writer_gone() -> StoreError {
    StoreError::Backend("the SQLite writer thread stopped".into())
}

/// Opens the write connection. Under `synchronous=FULL` on the VFS that writes a commit's
/// WAL frames in one `pwrite` instead of two per frame (`mcp_tasks_sqlite_vfs`; it needs
/// every commit synced, so `NORMAL` keeps SQLite's own), falling back to SQLite's own VFS
/// if it cannot be registered.
fn open_writer(path: &Path, synchronous: Synchronous) -> Result<Connection, StoreError> {
    let vfs = match synchronous {
        Synchronous::Full => mcp_tasks_sqlite_vfs::register()
            .inspect_err(|code| tracing::warn!(code, "could not register the WAL-coalescing SQLite VFS; using SQLite's own"))
            .ok(),
        Synchronous::Normal => None,
    };
    match vfs {
        Some(vfs) => Connection::open_with_flags_and_vfs(path, rusqlite::OpenFlags::default(), vfs),
        None => Connection::open(path),
    }
    .map_err(StoreError::backend)
}

/// Opens one read connection.
fn open_reader(path: &Path, synchronous: Synchronous, nodes: &Arc<Nodes>) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(path).map_err(StoreError::backend)?;
    configure(&mut conn, synchronous, READER_CACHE_KIB)?;
    nodes.register(&conn)?;
    conn.pragma_update(None, "query_only", "ON")
        .map_err(StoreError::backend)?;
    Ok(conn)
}

/// Sets the connection's pragmas. They are per connection (except `journal_mode=WAL`, which
/// sticks to the file), so this runs on every open.
fn configure(
    conn: &mut Connection,
    synchronous: Synchronous,
    cache_kib: u32,
) -> Result<(), StoreError> {
    // Invariant 1: a task is committed, durably, before its CreateTaskResult leaves. In WAL
    // mode, `synchronous=NORMAL` survives a crash of the process but may lose the last
    // commits on power loss or an OS crash, because it fsyncs the WAL only at checkpoints.
    // `FULL` fsyncs the WAL on every commit, so a returned `insert` or `replace` is on disk;
    // group commit (see the module comment) shares that fsync among concurrent writes.
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(StoreError::backend)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Backend(
            format!("SQLite refused WAL mode (journal_mode is {mode}); is the file on a network filesystem?").into(),
        ));
    }
    conn.pragma_update(None, "synchronous", synchronous.pragma())
        .map_err(StoreError::backend)?;
    conn.busy_handler(Some(busy))
        .map_err(StoreError::backend)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(StoreError::backend)?;
    conn.pragma_update(None, "cache_size", -i64::from(cache_kib))
        .map_err(StoreError::backend)?;
    // A statement journal (what a statement that writes many rows keeps inside a batch's
    // transaction, to undo itself alone: a purge's) stays in memory: with the default it
    // spills past 64 KiB into a new file in /var/tmp, an open, writes and a close per spill
    // (56 per 2,000 lifecycles under `strace` while inserts still fired triggers).
    conn.pragma_update(None, "temp_store", "MEMORY")
        .map_err(StoreError::backend)?;
    Ok(())
}
