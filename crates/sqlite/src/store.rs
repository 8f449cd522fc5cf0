//! [`SqliteStore`]: the [`TaskStore`] on one SQLite file.
//!
//! # Writes: group commit
//! Every write (`insert`, `replace`, `purge`) is queued to one writer thread, which owns
//! the write connection. It takes every write queued so far (up to [`MAX_BATCH`]), runs them
//! one after the other in one transaction, commits once (one fsync of the WAL under
//! `synchronous=FULL`), and only then answers each caller. A caller therefore still returns
//! only once its write is on disk, but concurrent writers share the fsync instead of queueing
//! for one each. There is no waiting for a batch to fill: while one commit is being synced,
//! the writes that arrive meanwhile form the next batch, so a lone write costs what it did
//! before and a crowd costs one fsync per batch.
//!
//! Inside a batch the writes run in arrival order on one connection, each as one statement,
//! so they see each other: of two compare-and-set `replace`s from one version in one batch
//! the first wins and the second finds the version moved on, exactly as if they had been
//! committed apart. A statement that fails (a duplicate id) is undone alone, by SQLite's
//! statement rollback, and answers its caller with its error; the rest of the batch commits.
//! Only when the transaction itself fails (the commit, the disk, a lost lock) does every
//! write of the batch answer with that failure, and none of them is on disk.
//!
//! # Reads
//! Reads run on Tokio's blocking pool on a small pool of read-only connections
//! ([`READERS`]); WAL lets them read alongside the writer. A read started after a write
//! returned sees that write: a commit is visible to new read transactions once it returns.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, Statement, params};
use tokio::sync::{Semaphore, broadcast, oneshot};

use mcp_tasks_engine::store::implement::{EarlyEnding, LocalPlaces, LocalSessions};
use mcp_tasks_engine::{
    Answer, BrowseQuery, FastSet, HistoryEntry, IdempotencyKey, Inserted, KeptGroup, Lease, ListQuery, Origin,
    Place, PlaceHolder, Principal, ProcessGroup, RunningLimits, SessionRecord, Status, StoreError, TaskId, TaskRecord,
    Timestamp, TraceContext, Update, Version, ClaimStore, RecordStore, SessionStore, ViewStore, WorkStore,
};

use crate::faults::{self, StoreLock};
use crate::hot::{Hot, Size, Touch};
/// Capacity of the change feed; a slower subscriber lags and re-reads.
const FEED_CAPACITY: usize = 4096;

use crate::{compat, migrate};

/// How long a write waits for another process's lock on the file (say, an operator's
/// `sqlite3` shell) before it fails with `SQLITE_BUSY`. Within this process only the writer
/// thread writes, so there is never contention on the file from here.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The most writes committed in one transaction. A bound on how long one batch holds
/// the write lock and how late its first caller is answered; in practice batches are as
/// large as the number of writers waiting.
pub(crate) const MAX_BATCH: usize = 512;

/// The WAL frames past which the writer checkpoints (SQLite's own threshold), between two
/// batches, once the callers of the batch that crossed it are answered. SQLite's automatic
/// checkpoint runs inside the `COMMIT` that crosses the threshold instead: every caller of
/// that batch waited for the frames to be copied into the database file and for its fsync
/// before being answered, a stall of one batch in every ~90 at c = 32.
const CHECKPOINT_FRAMES: u32 = 1000;

/// The most read connections open at once; more concurrent reads wait for one.
const READERS: usize = 4;

/// SQLite's page cache of the write connection, in KiB (`PRAGMA cache_size = -N`). Every
/// connection has its own; together they bound the store's memory whatever the file's size.
const WRITER_CACHE_KIB: u32 = 8 * 1024;

/// The page cache of each read connection, in KiB.
const READER_CACHE_KIB: u32 = 4 * 1024;

/// The columns every read selects, in the order [`read_record`] decodes them.
const COLUMNS: &str = "id, owner, tool, arguments, state, status_message, created_at, \
                       updated_at, ttl_ms, poll_interval_ms, attempt, version, error_result_fails, \
                       input_methods, idempotency_key, traceparent, tracestate";

/// How many columns [`COLUMNS`] names: the index of a column selected after them.
const COLUMN_COUNT: usize = column_count(COLUMNS);

/// The number of comma-separated names in `columns`.
const fn column_count(columns: &str) -> usize {
    let bytes = columns.as_bytes();
    let (mut i, mut count) = (0, 1);
    while i < bytes.len() {
        if bytes[i] == b',' {
            count += 1;
        }
        i += 1;
    }
    count
}

/// The statuses of tasks that may still change, as an SQL list. `status IN {UNFINISHED}`
/// must match the `WHERE` of the partial index `tasks_unfinished` word for word, or SQLite
/// will not use it.
const UNFINISHED: &str = "('working', 'input_required')";

/// The `WHERE` of the partial index `tasks_finished_by_owner_status` (migration 0013), word for
/// word: a query reads that index only when its own `WHERE` has this term.
const NOT_UNFINISHED: &str = "status NOT IN ('working', 'input_required')";

/// The statuses that never change again.
const TERMINAL: &str = "('completed', 'failed', 'cancelled')";

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

/// The writer thread's counters behind [`WriteStats`].
#[derive(Default)]
struct Counters {
    commits: AtomicU64,
    writes: AtomicU64,
    /// Told of every batch the writer thread ends ([`SqliteStore::on_commit`]).
    observer: std::sync::OnceLock<CommitObserver>,
}

/// What [`SqliteStore::on_commit`] is told of each batch.
type CommitObserver = Box<dyn Fn(Commit) + Send + Sync>;

/// One batch of the writer thread ([`SqliteStore::on_commit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Commit {
    /// From `BEGIN` to the end of `COMMIT` (the fsync included) or of the rollback.
    pub elapsed: Duration,
    /// How many writes the batch held (the group commit's size).
    pub writes: usize,
    /// Whether it committed.
    pub committed: bool,
}

/// The task store on one SQLite file: the embedded default of mcp-tasks.
///
/// A cheap handle: clones share one writer thread and one pool of readers. Open it with
/// [`SqliteStore::open`]; the writer thread ends, after answering every queued write,
/// when the last clone is dropped.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
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
    /// One server per file ([`faults`]); released after the writer is joined.
    _lock: StoreLock,
    /// The tasks written last ([`crate::hot`]), kept by the writer thread.
    hot: Arc<Hot>,
    /// The change feed: each write's record, sent once its batch has committed.
    feed: broadcast::Sender<Arc<TaskRecord>>,
    /// Running places: in memory, since one process owns the file (the engine takes none on
    /// a store that is not shared; they are kept for the contract and its suite).
    places: LocalPlaces,
    /// 2025-11-25 HTTP session records: in memory, since this process is their only reader
    /// (a session does not outlive its server, as before).
    sessions: LocalSessions,
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
        let mut conn = open_writer(path, synchronous)?;
        configure(&conn, synchronous, WRITER_CACHE_KIB)?;
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
        let reader = open_reader(path, synchronous)?;
        let (writes, queue) = mpsc::channel();
        let stats = Arc::new(Counters::default());
        let counters = Arc::clone(&stats);
        let hot = Arc::new(Hot::new(lock.clone()));
        let kept = Arc::clone(&hot);
        let writer = std::thread::Builder::new()
            .name("sqlite-writer".to_owned())
            .spawn(move || write_loop(&conn, &queue, &counters, &kept, &wal_frames, space))
            .map_err(StoreError::backend)?;
        tracing::debug!(path = %path.display(), schema = migrate::SCHEMA_VERSION, "opened the SQLite task store");
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                writes: Some(writes),
                writer: Some(writer),
                readers: Mutex::new(vec![reader]),
                reader_permits: Semaphore::new(READERS),
                stats,
                path: path.to_owned(),
                synchronous,
                _lock: lock,
                hot,
                feed: broadcast::channel(FEED_CAPACITY).0,
                places: LocalPlaces::default(),
                sessions: LocalSessions::default(),
            }),
        })
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

    /// SQLite's plan (`EXPLAIN QUERY PLAN`, its details joined by `; `) of the statement
    /// [`ViewStore::browse`] runs for `query`'s filters and cursor: for diagnostics and the
    /// tests that keep every page on an index.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    pub async fn browse_plan(&self, query: &BrowseQuery) -> Result<String, StoreError> {
        let (sql, values) = browse_statement(query);
        self.read(move |conn| {
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .map_err(StoreError::backend)?;
            let rows: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(values.iter()), |row| row.get(3))
                .and_then(Iterator::collect)
                .map_err(StoreError::backend)?;
            Ok(rows.join("; "))
        })
        .await
    }

    /// Runs the read `f` on a read connection, on the blocking pool.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
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
                None => open_reader(&inner.path, inner.synchronous)?,
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
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
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
    fn publish(&self, task: &TaskRecord) {
        self.publish_shared(Arc::new(task.clone()));
    }

    /// Publishes `task` on the change feed without copying it (the hot path's writes share
    /// one copy between the cache, the feed and their caller).
    fn publish_shared(&self, task: Arc<TaskRecord>) {
        let _ = self.inner.feed.send(task);
    }
}

impl SqliteStore {
    /// [`ClaimStore::insert_claimed`], with the early ending of
    /// [`ClaimStore::insert_claimed_early`] if there is one.
    async fn insert_claimed_with(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        ending: Option<Arc<dyn EarlyEnding>>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        let mut row = NewRow::from_record(task).map_err(StoreError::backend)?;
        // The claim and the origin go in with the row: one statement, not three.
        row.claim = Some((lease.node.as_str().to_owned(), lease.until.0));
        row.origin = origin.cloned();
        // One copy, shared by the cache and the change feed.
        let record = Arc::new(task.clone());
        let (written, owner) = (Arc::clone(&record), task.owner.clone());
        let key = task
            .idempotency_key
            .as_ref()
            .map(|key| key.as_str().to_owned());
        let limit = i64::try_from(max_retained).unwrap_or(i64::MAX);
        let inserted = self
            .write(move |conn| {
                let conn: &mut Tx<'_, '_> = conn;
                let mut row = row;
                // On the one writer thread the count, the insert and the claim are atomic,
                // and the next insert of the batch sees this one counted.
                if let Some(key) = &key {
                    let holder = conn
                        .prepare_cached(&format!(
                            "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND idempotency_key = ?2"
                        ))
                        .and_then(|mut stmt| {
                            stmt.query_row(params![owner.as_str(), key], read_record)
                                .optional()
                        })
                        .map_err(StoreError::backend)?;
                    if let Some(existing) =
                        holder.filter(|holder| holder.retained_at(Timestamp(row.created_at)))
                    {
                        return Ok((Inserted::Existing(existing), None));
                    }
                }
                let retained: i64 = conn
                    .prepared
                    .query_row(Sql::CountOf, [owner.as_str()], |row| row.get(0))
                    .map_err(StoreError::backend)?
                    .unwrap_or(0);
                if retained >= limit {
                    return Err(StoreError::Full {
                        owner,
                        retained: u64::try_from(retained).unwrap_or(0),
                    });
                }
                // Work that started early and ended while this insert waited: its outcome
                // goes in with the row, as the replace that would have followed writes it.
                let (written, merged) = match ending.as_ref().and_then(|ending| ending.take()) {
                    None => (written, None),
                    Some(update) => {
                        let ended = Arc::new(ended_early(&written, update));
                        row.end_early(&ended).map_err(StoreError::backend)?;
                        (Arc::clone(&ended), Some(ended))
                    }
                };
                let inserted = insert_keyed(conn, &row, written)?;
                if inserted == Inserted::New {
                    conn.counted(owner, u64::try_from(retained).unwrap_or(0).saturating_add(1));
                }
                Ok((inserted, merged))
            })
            .await?;
        if inserted.0 == Inserted::New {
            // The creation as it was made: the outcome written with it is published by the
            // engine once the creation is answered.
            self.publish_shared(record);
        }
        Ok(inserted)
    }
}

/// `created` (a new task, version 1) as `update`, the ending of its early work, leaves it.
fn ended_early(created: &TaskRecord, update: Update) -> TaskRecord {
    let mut ended = TaskRecord::clone(created);
    update.apply(&mut ended);
    ended
}

/// The error of a write whose writer thread is gone (it panicked).
fn writer_gone() -> StoreError {
    StoreError::Backend("the SQLite writer thread stopped".into())
}

/// `replace`: the compare-and-set of a task's state (`?6` its id, `?7` the expected version).
const REPLACE: &str = "UPDATE tasks SET state = ?1, status = ?2, status_message = ?3, updated_at = ?4, \
     attempt = ?5, version = version + 1 WHERE id = ?6 AND version = ?7";

/// The statements the writer runs for every task lifecycle, prepared once on its connection
/// and kept by [`Prepared`].
#[derive(Clone, Copy)]
enum Sql {
    Begin,
    Commit,
    /// The row of `tasks` ([`insert_task_row`]).
    InsertTask,
    /// `task_counts` one up, and its first row ([`count_one_more`]).
    CountOneMore,
    CountFirst,
    /// An entry of `task_history` ([`record_history`]).
    History,
    /// [`REPLACE`].
    Replace,
    /// An owner's number of stored tasks, read by every creation's admission.
    CountOf,
}

impl Sql {
    /// How many there are: the last variant's index plus one (checked below).
    const ALL: usize = 8;

    fn text(self) -> &'static str {
        match self {
            Sql::Begin => "BEGIN IMMEDIATE",
            Sql::Commit => "COMMIT",
            Sql::InsertTask => {
                "INSERT INTO tasks (id, owner, tool, arguments, status, state, status_message, \
                 created_at, updated_at, ttl_ms, expires_at, poll_interval_ms, attempt, version, \
                 error_result_fails, input_methods, idempotency_key, traceparent, tracestate, \
                 claim_node, lease_until, era, client_name, client_version, creation_in_history) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, \
                 ?20, ?21, ?22, ?23, ?24, ?25) \
                 ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
            }
            Sql::CountOneMore => "UPDATE task_counts SET tasks = tasks + 1 WHERE owner = ?1",
            Sql::CountFirst => "INSERT INTO task_counts (owner, tasks) VALUES (?1, 1)",
            Sql::History => "INSERT INTO task_history (task_id, version, at, status, message) VALUES (?1, ?2, ?3, ?4, ?5)",
            Sql::Replace => REPLACE,
            Sql::CountOf => "SELECT tasks FROM task_counts WHERE owner = ?1",
        }
    }
}

const _: () = assert!(Sql::CountOf as usize + 1 == Sql::ALL, "Sql::ALL counts the variants");

/// The writer's statements of [`Sql`], each prepared on first use and kept for the writer's
/// life, found by its variant. rusqlite's statement cache (`prepare_cached`) hashes the
/// whole SQL text with SipHash to find a statement and again to put it back, and clears its
/// bindings: without it a block lifecycle went from 324.4 k to 318.6 k instructions
/// (`benches/profile.sh block 2000 32`, BENCHMARKS.md eleventh round). Each statement here
/// binds all its parameters at every run, and `execute` and `query_row` reset it after
/// their step, as the cache's would be.
struct Prepared<'c> {
    conn: &'c Connection,
    statements: RefCell<[Option<Statement<'c>>; Sql::ALL]>,
}

impl<'c> Prepared<'c> {
    fn new(conn: &'c Connection) -> Prepared<'c> {
        Prepared { conn, statements: RefCell::new(Default::default()) }
    }

    /// Runs statement `sql` with `params`; the rows it changed.
    fn execute<P: rusqlite::Params>(&self, sql: Sql, params: P) -> rusqlite::Result<usize> {
        self.with(sql, |statement| statement.execute(params))
    }

    /// Runs query `sql` with `params`: its first row read by `read`, if it has one.
    fn query_row<T, P: rusqlite::Params>(
        &self,
        sql: Sql,
        params: P,
        read: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<Option<T>> {
        self.with(sql, |statement| statement.query_row(params, read).optional())
    }

    /// Runs `run` on statement `sql`, prepared on its first use.
    fn with<T>(&self, sql: Sql, run: impl FnOnce(&mut Statement<'c>) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        let mut statements = self.statements.borrow_mut();
        let slot = &mut statements[sql as usize];
        let statement = match slot {
            Some(statement) => statement,
            None => slot.insert(self.conn.prepare(sql.text())?),
        };
        run(statement)
    }
}

/// The open transaction a write runs in: its connection (through `Deref`), and what the
/// write did to rows of `tasks`, for the cache of the tasks written last ([`crate::hot`]).
/// Every write that changes a column [`read_record`] reads must say so here: with the new
/// record ([`Tx::put`]) or by forgetting the task ([`Tx::evict`]).
struct Tx<'a, 'c> {
    conn: &'a Connection,
    /// The writer's own prepared statements for the writes of every lifecycle.
    prepared: &'a Prepared<'c>,
    touched: &'a mut Vec<Touch>,
    /// The cache as committed before this batch.
    hot: &'a Hot,
    /// The tasks whose rows a write of this batch touched already: their cached record is
    /// not their row any more.
    dirty: &'a mut FastSet<TaskId>,
}

impl std::ops::Deref for Tx<'_, '_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Tx<'_, '_> {
    /// The task's row is now `record`; `bytes`: the size of its encoded state and arguments.
    fn put(&mut self, record: Arc<TaskRecord>, size: Size) {
        self.dirty.insert(record.id.clone());
        self.touched.push(Touch::Put { record, size });
    }

    /// The task's row changed (or went) otherwise.
    fn evict(&mut self, id: TaskId) {
        self.dirty.insert(id.clone());
        self.touched.push(Touch::Evict(id));
    }

    /// `owner` has `tasks` rows now, as this transaction counts them.
    fn counted(&mut self, owner: Principal, tasks: u64) {
        self.touched.push(Touch::Counted { owner, tasks });
    }

    /// `owner`'s number of rows changed without this transaction counting them.
    fn uncounted(&mut self, owner: Principal) {
        self.touched.push(Touch::Uncounted(owner));
    }

    /// Task `id`'s row as it stands in this transaction, with its size, when the cache
    /// knows it: kept, and not touched by an earlier write of this batch.
    fn current(&self, id: &TaskId) -> Option<(Arc<TaskRecord>, Size)> {
        if self.dirty.contains(id) {
            return None;
        }
        self.hot.get_sized(id)
    }
}

/// One write queued to the writer thread.
trait Write: Send {
    /// Runs the write inside the batch's open transaction and keeps its outcome.
    fn run(&mut self, conn: &Connection, prepared: &Prepared<'_>, hot: &Hot, dirty: &mut FastSet<TaskId>);

    /// Answers the caller: with the kept outcome if the batch committed, or with `failed`
    /// (the batch's failure) if it did not.
    fn answer(self: Box<Self>, failed: Option<&Failure>);

    /// Whether the write failed because the disk is full.
    fn found_disk_full(&self) -> bool;

    /// What the write did to rows of `tasks` (taken once, after its batch committed).
    fn take_touched(&mut self) -> Vec<Touch>;
}

/// Why a batch did not commit.
struct Failure {
    reason: String,
    /// The disk is full (the callers hear [`StoreError::DiskFull`]).
    disk_full: bool,
}

/// A [`Write`] running `work`, whose caller waits on `reply`.
struct Job<T, F> {
    work: Option<F>,
    outcome: Option<Result<T, StoreError>>,
    touched: Vec<Touch>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Write for Job<T, F>
where
    F: FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError> + Send,
    T: Send,
{
    fn run(&mut self, conn: &Connection, prepared: &Prepared<'_>, hot: &Hot, dirty: &mut FastSet<TaskId>) {
        if let Some(work) = self.work.take() {
            self.outcome = Some(work(&mut Tx { conn, prepared, touched: &mut self.touched, hot, dirty }));
        }
    }

    fn take_touched(&mut self) -> Vec<Touch> {
        std::mem::take(&mut self.touched)
    }

    fn found_disk_full(&self) -> bool {
        matches!(&self.outcome, Some(Err(err)) if faults::is_full(err))
    }

    fn answer(self: Box<Self>, failed: Option<&Failure>) {
        let outcome = match (failed, self.outcome) {
            (None, Some(outcome)) => outcome,
            (Some(failure), _) if failure.disk_full => Err(StoreError::DiskFull(format!(
                "the write's transaction did not commit: {}",
                failure.reason
            ))),
            (Some(failure), _) => Err(StoreError::Backend(
                format!("the write's transaction did not commit: {}", failure.reason).into(),
            )),
            (None, None) => Err(StoreError::Backend("the write never ran".into())),
        };
        // The caller may have stopped waiting (its future was dropped); the write stands.
        let _ = self.reply.send(outcome);
    }
}

/// The writer thread: batches of queued writes, one transaction and one commit each,
/// until every [`SqliteStore`] handle is gone and the queue is empty.
/// `wal_frames` is the WAL's length in frames as of the last commit (set by the connection's
/// WAL hook); past [`CHECKPOINT_FRAMES`] a passive checkpoint follows the batch's answers.
/// A batch is refused as on a full disk when `space` says the disk is nearly full.
fn write_loop(
    conn: &Connection,
    queue: &mpsc::Receiver<Box<dyn Write>>,
    stats: &Counters,
    hot: &Hot,
    wal_frames: &AtomicU32,
    mut space: Space,
) {
    let mut batch: Vec<Box<dyn Write>> = Vec::with_capacity(MAX_BATCH);
    // Dropped at the loop's end, before the connection closes.
    let prepared = Prepared::new(conn);
    while let Ok(first) = queue.recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let started = Instant::now();
        let committed = space.check().and_then(|()| commit(conn, &prepared, &mut batch, hot));
        if let Some(observer) = stats.observer.get() {
            observer(Commit { elapsed: started.elapsed(), writes: batch.len(), committed: committed.is_ok() });
        }
        match &committed {
            Ok(()) => {
                stats.commits.fetch_add(1, Ordering::Relaxed);
                stats
                    .writes
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                let micros = started.elapsed().as_micros();
                tracing::trace!(writes = batch.len(), micros, "committed a batch");
            }
            Err(failure) => {
                let error = &failure.reason;
                tracing::error!(writes = batch.len(), %error, disk_full = failure.disk_full, "a batch of task store writes failed to commit");
            }
        }
        if committed.is_ok() {
            // Before anyone is answered, in commit order (a failed write's evictions too:
            // what it did before failing committed with the batch).
            let touched: Vec<Touch> = batch.iter_mut().flat_map(|job| job.take_touched()).collect();
            if !touched.is_empty() {
                hot.apply(touched);
            }
        }
        let failed = committed.err();
        for job in batch.drain(..) {
            job.answer(failed.as_ref());
        }
        if wal_frames.load(Ordering::Relaxed) >= CHECKPOINT_FRAMES {
            checkpoint(conn);
        }
    }
}

/// Grows the WAL file, with zeros written and synced, to what it holds at the checkpoint
/// threshold ([`CHECKPOINT_FRAMES`]), if it is shorter and the disk has that much room and
/// [`PRESIZE_MARGIN`] more; whether the WAL is that long now. SQLite deletes the WAL when a
/// store closes, so each start begins with an empty one, and until it first reaches the
/// threshold every commit appends to it: each `fdatasync` then also writes the inode for the
/// file's new size (on this machine's ext4 a synced 4 KiB append took 0.23-0.27 ms, an
/// overwrite in place 0.12-0.14 ms). After a checkpoint SQLite writes the WAL again from its
/// start, over what was there; so once it is this long, commits overwrite. What lies past
/// the last frame SQLite wrote is never read as a frame: recovery stops at the first frame
/// whose salt and checksum do not follow (zeros do not), exactly as for the stale frames a
/// restart leaves. Done under a write transaction, so that no frame is appended meanwhile; a
/// failure only costs the gain (logged).
///
/// A commit into space the WAL already owns does not fail when the disk fills up, so a
/// grown WAL would hide a full disk for up to a thousand frames: the writer then watches
/// the free space itself ([`Space`]).
fn presize_wal(conn: &Connection, path: &Path) -> bool {
    use std::os::unix::fs::FileExt as _;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let grow = || -> Result<bool, Box<dyn std::error::Error>> {
        let page_size = u64::try_from(conn.query_row("PRAGMA page_size", [], |row| row.get::<_, i64>(0))?)?;
        // The WAL header, then each frame: a 24-byte header and a page.
        let wanted = 32 + u64::from(CHECKPOINT_FRAMES + CHECKPOINT_FRAMES / 8) * (24 + page_size);
        let file = fs::OpenOptions::new().write(true).open(&wal)?;
        let mut at = file.metadata()?.len();
        if at >= wanted {
            return Ok(true);
        }
        if free_space(path).is_none_or(|free| free < wanted - at + PRESIZE_MARGIN) {
            return Ok(false);
        }
        let zeros = vec![0_u8; 64 * 1024];
        while at < wanted {
            let n = usize::try_from((wanted - at).min(zeros.len() as u64))?;
            file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        file.sync_all()?;
        Ok(true)
    };
    if let Err(err) = conn.execute_batch("BEGIN IMMEDIATE") {
        tracing::debug!(error = %err, "could not lock the SQLite WAL to grow it; it grows as commits append");
        return false;
    }
    let grown = grow().unwrap_or_else(|err| {
        tracing::debug!(error = %err, wal = %Path::new(&wal).display(), "could not grow the SQLite WAL ahead of the commits");
        false
    });
    let _ = conn.execute_batch("ROLLBACK");
    grown
}

/// Free space on the disk, under which a store whose WAL was grown ahead refuses every
/// write, as SQLite does on a full disk once a commit needs room the WAL does not have.
const LOW_SPACE: u64 = 1024 * 1024;
/// Room the disk keeps after the WAL is grown ahead at open (else it is not).
const PRESIZE_MARGIN: u64 = 8 * 1024 * 1024;
/// Free space under which the writer looks at it before every batch; above it, at most
/// every [`SPACE_EVERY`].
const NEAR_FULL: u64 = 64 * 1024 * 1024;
const SPACE_EVERY: Duration = Duration::from_millis(100);

/// The free space of the disk holding the store, watched by the writer when the WAL was
/// grown ahead ([`presize_wal`]): commits into the WAL's own space do not fail when the
/// disk fills up, so a full disk would otherwise be noticed only when the WAL needs to grow
/// or a checkpoint the database, hundreds of commits later. Watched, a disk with less than
/// [`LOW_SPACE`] free refuses each batch as full, at once, as one never grown would.
struct Space {
    /// The store's file, whose disk is watched; `None` when the WAL grows as SQLite appends
    /// (not watched).
    path: Option<PathBuf>,
    /// When the free space was last looked at, and what it was.
    last: Option<(Instant, u64)>,
}

impl Space {
    fn new(path: &Path, watched: bool) -> Space {
        Space { path: watched.then(|| path.to_owned()), last: None }
    }

    /// `Err` (a full disk) if the disk has less than [`LOW_SPACE`] free.
    fn check(&mut self) -> Result<(), Failure> {
        let Some(path) = &self.path else { return Ok(()) };
        if let Some((at, free)) = self.last
            && free >= NEAR_FULL
            && at.elapsed() < SPACE_EVERY
        {
            return Ok(());
        }
        // Not knowing is not a full disk: SQLite's own error still stands behind this.
        let Some(free) = free_space(path) else { return Ok(()) };
        self.last = Some((Instant::now(), free));
        if free < LOW_SPACE {
            return Err(Failure {
                reason: format!(
                    "database or disk is full: the disk holding {} has {free} bytes free, under the {LOW_SPACE} the store keeps",
                    path.display()
                ),
                disk_full: true,
            });
        }
        Ok(())
    }
}

/// The bytes free for us on the disk holding `path` (`statvfs` of its directory).
fn free_space(path: &Path) -> Option<u64> {
    let dir = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let stats = nix::sys::statvfs::statvfs(dir).ok()?;
    stats.blocks_available().checked_mul(stats.fragment_size())
}

/// A passive checkpoint: copies what it can of the WAL into the database file (never
/// waiting for a reader), so that the next write starts the WAL over once all of it is
/// copied. What SQLite's automatic checkpoint does, after the answers instead of before. A
/// failure is logged; the next commit past the threshold tries again.
fn checkpoint(conn: &Connection) {
    let started = Instant::now();
    let copied = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    });
    match copied {
        Ok((frames, copied)) => {
            tracing::trace!(frames, copied, micros = started.elapsed().as_micros(), "checkpointed the WAL");
        }
        Err(err) => tracing::warn!(error = %err, "a checkpoint of the SQLite WAL failed; the next commit retries"),
    }
}

/// Runs `batch` in one transaction and commits it. `Err` (with the reason) if the
/// transaction did not commit, in which case none of its writes is on disk.
fn commit(conn: &Connection, prepared: &Prepared<'_>, batch: &mut [Box<dyn Write>], hot: &Hot) -> Result<(), Failure> {
    let failed = |err: rusqlite::Error| Failure { disk_full: faults::is_full_sqlite(&err), reason: err.to_string() };
    // Prepared once and kept, not parsed again for every batch.
    prepared.execute(Sql::Begin, []).map_err(failed)?;
    let mut dirty = FastSet::default();
    for job in batch.iter_mut() {
        job.run(conn, prepared, hot, &mut dirty);
        // Some errors (a full disk, I/O, running out of memory) roll back the whole
        // transaction rather than one statement; then nothing of the batch stands.
        if conn.is_autocommit() {
            let disk_full = job.found_disk_full();
            let reason = if disk_full { "database or disk is full" } else { "SQLite rolled the transaction back after an error" };
            return Err(Failure { reason: reason.to_owned(), disk_full });
        }
    }
    match prepared.execute(Sql::Commit, []) {
        Ok(_) => Ok(()),
        Err(err) => {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            Err(failed(err))
        }
    }
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
fn open_reader(path: &Path, synchronous: Synchronous) -> Result<Connection, StoreError> {
    let conn = Connection::open(path).map_err(StoreError::backend)?;
    configure(&conn, synchronous, READER_CACHE_KIB)?;
    conn.pragma_update(None, "query_only", "ON")
        .map_err(StoreError::backend)?;
    Ok(conn)
}

/// Sets the connection's pragmas. They are per connection (except `journal_mode=WAL`, which
/// sticks to the file), so this runs on every open.
fn configure(
    conn: &Connection,
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
    conn.busy_timeout(BUSY_TIMEOUT)
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

#[async_trait]
impl RecordStore for SqliteStore {
    async fn insert(&self, task: &TaskRecord) -> Result<Inserted, StoreError> {
        let row = NewRow::from_record(task).map_err(StoreError::backend)?;
        // One copy, shared by the cache and the change feed.
        let record = Arc::new(task.clone());
        let written = Arc::clone(&record);
        // One write on the writer thread: the lookup of a held key and the insert are
        // atomic, and a concurrent insert with the same key, queued behind this one, sees
        // this one's row.
        let inserted = self
            .write(move |tx| {
                let owner = written.owner.clone();
                let inserted = insert_keyed(tx, &row, written)?;
                if inserted == Inserted::New {
                    tx.uncounted(owner);
                }
                Ok(inserted)
            })
            .await?;
        if inserted == Inserted::New {
            self.publish_shared(record);
        }
        Ok(inserted)
    }

    async fn find_by_key(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let (owner, key) = (owner.as_str().to_owned(), key.as_str().to_owned());
        self.read(move |conn| {
            // One lookup in `tasks_by_idempotency_key` (migration 0004).
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND idempotency_key = ?2 \
                 AND (expires_at IS NULL OR expires_at > ?3)"
            ))
            .and_then(|mut stmt| stmt.query_row(params![owner, key, now.0], read_record).optional())
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.get_shared(id).await?.map(Arc::unwrap_or_clone))
    }

    /// The cache's own copy when it keeps the task, not a new one.
    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<TaskRecord>>, StoreError> {
        if let Some((record, _)) = self.inner.hot.get_sized(id) {
            return Ok(Some(record));
        }
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            conn.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))
                .and_then(|mut stmt| stmt.query_row([id], read_record).optional())
                .map_err(StoreError::backend)
        })
        .await
        .map(|record| record.map(Arc::new))
    }

    async fn replace(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
    ) -> Result<TaskRecord, StoreError> {
        self.replace_shared(id, expected, update).await.map(Arc::unwrap_or_clone)
    }

    /// The record written is the one the cache keeps and the feed carries.
    async fn replace_shared(&self, id: &TaskId, expected: Version, update: &Update) -> Result<Arc<TaskRecord>, StoreError> {
        let task = id.clone();
        let expected_version = expected.0;
        let expected = to_i64(expected.0).map_err(StoreError::backend)?;
        let state = to_json(&update.state).map_err(StoreError::backend)?;
        let status = update.state.status().as_str();
        let update = update.clone();
        let written = self.write(move |tx| {
            // The row at the expected version and the length of its arguments: as the cache
            // knows it, or else read first (the writer thread is the only writer: nothing
            // changes the row between this read and the write below). The new record is that
            // one with the update, and the compare-and-set needs no RETURNING (whose
            // ephemeral table and row decoding were a tenth of a lifecycle's SQLite cost).
            let current = match tx.current(&task).filter(|(record, _)| record.version.0 == expected_version) {
                Some((record, size)) => Some((TaskRecord::clone(&record), size.arguments)),
                None => tx
                    .prepare_cached(&format!("SELECT {COLUMNS}, length(arguments) FROM tasks WHERE id = ?1 AND version = ?2"))
                    .and_then(|mut stmt| {
                        stmt.query_row(params![task.as_str(), expected], |row| {
                            Ok((read_record(row)?, row.get::<_, i64>(COLUMN_COUNT)?))
                        })
                        .optional()
                    })
                    .map_err(StoreError::backend)?
                    .map(|(record, arguments)| (record, usize::try_from(arguments).unwrap_or(usize::MAX / 2))),
            };
            let Some((mut record, arguments)) = current else {
                return Err(StoreError::Conflict(task));
            };
            let (message, updated_at) = (&update.status_message, update.updated_at.0);
            let changed = tx
                .prepared
                .execute(Sql::Replace, params![state, status, message, updated_at, update.attempt, task.as_str(), expected])
                .map_err(StoreError::backend)?;
            if changed == 0 {
                return Err(StoreError::Conflict(task));
            }
            let before = Entry::of(&record);
            let after = Entry { version: expected + 1, at: updated_at, status, message: message.as_deref() };
            record_change(tx, tx.prepared, task.as_str(), &before, &after).map_err(StoreError::backend)?;
            update.apply(&mut record);
            // One copy, shared by the cache and the change feed.
            let record = Arc::new(record);
            tx.put(Arc::clone(&record), Size { state: state.len(), arguments });
            Ok(record)
        })
        .await?;
        self.publish_shared(Arc::clone(&written));
        Ok(written)
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let owner = query.owner.as_str().to_owned();
        let after = query
            .after
            .as_ref()
            .map(|cursor| (cursor.created_at.0, cursor.id.as_str().to_owned()));
        let limit = i64::from(query.limit);
        self.read(move |conn| {
            let read = match after {
                None => conn
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 \
                         ORDER BY created_at, id LIMIT ?2"
                    ))
                    .and_then(|mut stmt| collect(stmt.query_map(params![owner, limit], read_record)?)),
                Some((created_at, id)) => conn
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND (created_at, id) > (?2, ?3) \
                         ORDER BY created_at, id LIMIT ?4"
                    ))
                    .and_then(|mut stmt| {
                        collect(stmt.query_map(params![owner, created_at, id, limit], read_record)?)
                    }),
            };
            read.map_err(StoreError::backend)
        })
        .await
    }

    async fn count(&self, owner: &Principal) -> Result<u64, StoreError> {
        // Admission asks before every creation: the writer's last committed count, when it
        // is kept, saves the hop to a reader.
        if let Some(count) = self.inner.hot.count(owner) {
            return Ok(count);
        }
        let owner = owner.as_str().to_owned();
        self.read(move |conn| {
            // One row of `task_counts`, kept by the insert and the purge (migrations 0003
            // and 0012): counting an owner's million tasks costs what counting ten does.
            let count: Option<i64> = conn
                .prepare_cached("SELECT tasks FROM task_counts WHERE owner = ?1")
                .and_then(|mut stmt| stmt.query_row([owner], |row| row.get(0)).optional())
                .map_err(StoreError::backend)?;
            Ok(count.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
        })
        .await
    }

    async fn unfinished(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::from(limit);
        self.read(move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE status IN {UNFINISHED} \
                 ORDER BY created_at, id LIMIT ?1"
            ))
            .and_then(|mut stmt| collect(stmt.query_map([limit], read_record)?))
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn expired(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::from(limit);
        self.read(move |conn| {
            conn.prepare_cached(&format!(
                // Through `tasks_unfinished`, which holds `expires_at` (migration 0013): the
                // unfinished tasks are read in its order, the finished ones never.
                // Named: without statistics SQLite would take `tasks_by_expiry`, every task
                // with a TTL, finished ones included.
                "SELECT {COLUMNS} FROM tasks INDEXED BY tasks_unfinished \
                 WHERE status IN {UNFINISHED} AND expires_at <= ?1 ORDER BY created_at, id LIMIT ?2"
            ))
            .and_then(|mut stmt| collect(stmt.query_map(params![now.0, limit], read_record)?))
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn purge(&self, now: Timestamp, limit: u32) -> Result<u64, StoreError> {
        let limit = i64::from(limit);
        self.write(move |tx| {
            // SQLite's `DELETE … LIMIT` needs a compile-time option; a subquery does not.
            let deleted = tx
                .prepare_cached(&format!(
                    "DELETE FROM tasks WHERE rowid IN (\
                         SELECT rowid FROM tasks WHERE status IN {TERMINAL} AND expires_at <= ?1 \
                         ORDER BY expires_at LIMIT ?2) RETURNING id, owner"
                ))
                .and_then(|mut stmt| {
                    stmt.query_map(params![now.0, limit], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))?
                        .collect::<rusqlite::Result<Vec<(String, String)>>>()
                })
                .map_err(StoreError::backend)?;
            let count = deleted.len();
            // What the triggers did before migration 0012: each task's history goes with it,
            // each owner's count goes down by its tasks purged (its row gone at zero).
            let mut owners: HashMap<String, i64> = HashMap::new();
            for (id, owner) in deleted {
                tx.prepare_cached("DELETE FROM task_history WHERE task_id = ?1")
                    .and_then(|mut stmt| stmt.execute([&id]))
                    .map_err(StoreError::backend)?;
                tx.evict(TaskId::from(id));
                *owners.entry(owner).or_insert(0) += 1;
            }
            for (owner, purged) in owners {
                tx.prepare_cached("UPDATE task_counts SET tasks = tasks - ?2 WHERE owner = ?1")
                    .and_then(|mut stmt| stmt.execute(params![owner, purged]))
                    .and_then(|_| tx.prepare_cached("DELETE FROM task_counts WHERE owner = ?1 AND tasks <= 0"))
                    .and_then(|mut stmt| stmt.execute([&owner]))
                    .map_err(StoreError::backend)?;
                tx.uncounted(Principal::new(owner));
            }
            Ok(u64::try_from(count).unwrap_or(u64::MAX))
        })
        .await
    }

    async fn request_cancel(&self, id: &TaskId) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let written = self
            .write(move |tx| {
                tx.evict(TaskId::from(id.clone()));
                tx.prepare_cached(&format!(
                    "UPDATE tasks SET cancel_requested = 1, version = version + 1                      WHERE id = ?1 AND status IN {UNFINISHED} RETURNING {COLUMNS}"
                ))
                .and_then(|mut stmt| stmt.query_row([id], read_record).optional())
                .map_err(StoreError::backend)
            })
            .await?;
        if let Some(written) = &written {
            self.publish(written);
        }
        Ok(written.is_some())
    }

    async fn cancel_requested(&self, id: &TaskId) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let asked: Option<bool> = conn
                .prepare_cached("SELECT cancel_requested FROM tasks WHERE id = ?1")
                .and_then(|mut stmt| stmt.query_row([id], |row| row.get(0)).optional())
                .map_err(StoreError::backend)?;
            Ok(asked.unwrap_or(false))
        })
        .await
    }

    async fn answer(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
        key: &str,
        answer: &Answer,
    ) -> Result<TaskRecord, StoreError> {
        let task = id.clone();
        let expected = to_i64(expected.0).map_err(StoreError::backend)?;
        let state = to_json(&update.state).map_err(StoreError::backend)?;
        let status = update.state.status().as_str();
        let message = update.status_message.clone();
        let (updated_at, attempt) = (update.updated_at.0, update.attempt);
        let (key, answer) = (
            key.to_owned(),
            to_json(answer).map_err(StoreError::backend)?,
        );
        let written = self
            .write(move |conn| {
                conn.evict(task.clone());
                // Two statements, undone together if the second fails (a savepoint inside
                // the batch's transaction), so the answer is stored exactly with its write.
                conn.execute_batch("SAVEPOINT answer").map_err(StoreError::backend)?;
                let done = (|| {
                    // The row before the write, for the status history.
                    let before = conn
                        .prepare_cached("SELECT version, updated_at, status, status_message FROM tasks WHERE id = ?1 AND version = ?2")
                        .and_then(|mut stmt| {
                            stmt.query_row(params![task.as_str(), expected], |row| {
                                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get::<_, String>(2)?, row.get::<_, Option<String>>(3)?))
                            })
                            .optional()
                        })
                        .map_err(StoreError::backend)?
                        .ok_or_else(|| StoreError::Conflict(task.clone()))?;
                    let written = conn
                        .prepare_cached(&format!(
                            "{REPLACE} RETURNING {COLUMNS}"
                        ))
                        .and_then(|mut stmt| {
                            stmt.query_row(
                                params![state, status, message, updated_at, attempt, task.as_str(), expected],
                                read_record,
                            )
                            .optional()
                        })
                        .map_err(StoreError::backend)?;
                    let written = written.ok_or_else(|| StoreError::Conflict(task.clone()))?;
                    let (version, at, ref was, ref said) = before;
                    let before = Entry { version, at, status: was, message: said.as_deref() };
                    let after = Entry { version: expected + 1, at: updated_at, status, message: message.as_deref() };
                    record_change(conn, conn.prepared, task.as_str(), &before, &after).map_err(StoreError::backend)?;
                    conn.prepare_cached("INSERT OR REPLACE INTO task_answers (task_id, key, answer) VALUES (?1, ?2, ?3)")
                        .and_then(|mut stmt| stmt.execute(params![task.as_str(), key, answer]))
                        .map_err(StoreError::backend)?;
                    Ok(written)
                })();
                let end = if done.is_ok() { "RELEASE answer" } else { "ROLLBACK TO answer; RELEASE answer" };
                conn.execute_batch(end).map_err(StoreError::backend)?;
                done
            })
            .await?;
        self.publish(&written);
        Ok(written)
    }

    async fn take_answer(&self, id: &TaskId, key: &str) -> Result<Option<Answer>, StoreError> {
        let (id, key) = (id.as_str().to_owned(), key.to_owned());
        let taken: Option<String> = self
            .write(move |conn| {
                conn.prepare_cached(
                    "DELETE FROM task_answers WHERE task_id = ?1 AND key = ?2 RETURNING answer",
                )
                .and_then(|mut stmt| {
                    stmt.query_row(params![id, key], |row| row.get(0))
                        .optional()
                })
                .map_err(StoreError::backend)
            })
            .await?;
        taken
            .map(|text| from_json(0, &text).map_err(StoreError::backend))
            .transpose()
    }

    fn changes(&self) -> broadcast::Receiver<Arc<TaskRecord>> {
        self.inner.feed.subscribe()
    }
}

#[async_trait]
impl ClaimStore for SqliteStore {
    fn shared(&self) -> bool {
        // One process owns the file: the writer thread is the only writer.
        false
    }

    async fn insert_claimed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
    ) -> Result<Inserted, StoreError> {
        self.insert_claimed_with(task, lease, max_retained, origin, None).await.map(|(inserted, _)| inserted)
    }

    /// The ending is taken inside the insert's write, on the writer thread: an ending that
    /// comes while the insert waits in the queue (most of a quick tool's, under load) goes
    /// in with it, and the lifecycle is one row written and one commit.
    async fn insert_claimed_early(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        ending: Arc<dyn EarlyEnding>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        self.insert_claimed_with(task, lease, max_retained, origin, Some(ending)).await
    }

    async fn claim(
        &self,
        id: &TaskId,
        attempt: u32,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let id = id.as_str().to_owned();
        let (node, until) = (lease.node.as_str().to_owned(), lease.until.0);
        let taken = self
            .write(move |tx| {
                tx.evict(TaskId::from(id.clone()));
                tx.prepare_cached(&format!(
                    "UPDATE tasks SET claim_node = ?1, lease_until = ?2, attempt = attempt + 1,                      version = version + 1                      WHERE id = ?3 AND attempt = ?4 AND status IN {UNFINISHED}                      AND (lease_until IS NULL OR lease_until <= ?5)                      RETURNING {COLUMNS}"
                ))
                .and_then(|mut stmt| stmt.query_row(params![node, until, id, attempt, now.0], read_record).optional())
                .map_err(StoreError::backend)
            })
            .await?;
        if let Some(taken) = &taken {
            self.publish(taken);
        }
        Ok(taken)
    }

    async fn renew(&self, lease: &Lease, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        let (node, until) = (lease.node.as_str().to_owned(), lease.until.0);
        let renewed = self.write(move |conn| {
            conn.prepare_cached(&format!(
                "UPDATE tasks SET lease_until = ?1                  WHERE claim_node = ?2 AND lease_until > ?3 AND status IN {UNFINISHED} RETURNING id"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![until, node, now.0], |row| row.get::<_, String>(0))?
                    .map(|id| id.map(TaskId::from))
                    .collect::<rusqlite::Result<Vec<TaskId>>>()
            })
            .and_then(|renewed| {
                conn.prepare_cached("UPDATE tool_slots SET lease_until = ?1 WHERE node = ?2 AND lease_until > ?3")?
                    .execute(params![until, node, now.0])?;
                Ok(renewed)
            })
            .map_err(StoreError::backend)
        })
        .await?;
        let unfinished = self.holders_where(|task| !task.status().is_terminal()).await?;
        self.inner.places.renew(lease, now, &unfinished);
        Ok(renewed)
    }

    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::from(limit);
        self.read(move |conn| {
            // The few unfinished tasks, through `tasks_unfinished`.
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE status IN {UNFINISHED}                  AND (lease_until IS NULL OR lease_until <= ?1) ORDER BY created_at, id LIMIT ?2"
            ))
            .and_then(|mut stmt| collect(stmt.query_map(params![now.0, limit], read_record)?))
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn take_slot(&self, tool: &str, size: u32, id: &TaskId, lease: &Lease, now: Timestamp) -> Result<bool, StoreError> {
        let (tool, id) = (tool.to_owned(), id.as_str().to_owned());
        let (node, until) = (lease.node.as_str().to_owned(), lease.until.0);
        self.write(move |conn| {
            // On the one writer thread: freeing, counting and taking are atomic.
            conn.prepare_cached(&format!(
                "DELETE FROM tool_slots WHERE tool = ?1 AND (lease_until <= ?2 OR NOT EXISTS \
                 (SELECT 1 FROM tasks WHERE tasks.id = tool_slots.task_id AND tasks.status IN {UNFINISHED}))"
            ))
            .and_then(|mut stmt| stmt.execute(params![tool, now.0]))
            .map_err(StoreError::backend)?;
            let (held, mine): (i64, i64) = conn
                .prepare_cached("SELECT count(*), count(*) FILTER (WHERE task_id = ?2) FROM tool_slots WHERE tool = ?1")
                .and_then(|mut stmt| stmt.query_row(params![tool, id], |row| Ok((row.get(0)?, row.get(1)?))))
                .map_err(StoreError::backend)?;
            if mine > 0 {
                return Ok(true);
            }
            if held >= i64::from(size) {
                return Ok(false);
            }
            conn.prepare_cached("INSERT INTO tool_slots (tool, task_id, node, lease_until) VALUES (?1, ?2, ?3, ?4)")
                .and_then(|mut stmt| stmt.execute(params![tool, id, node, until]))
                .map_err(StoreError::backend)?;
            Ok(true)
        })
        .await
    }

    async fn release_slot(&self, tool: &str, id: &TaskId) -> Result<(), StoreError> {
        let (tool, id) = (tool.to_owned(), id.as_str().to_owned());
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM tool_slots WHERE tool = ?1 AND task_id = ?2")
                .and_then(|mut stmt| stmt.execute(params![tool, id]))
                .map(|_| ())
                .map_err(StoreError::backend)
        })
        .await
    }

    async fn take_place(
        &self,
        holder: &PlaceHolder,
        owner: &Principal,
        limits: &RunningLimits,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Place, StoreError> {
        let finished = self.holders_where(|task| task.status().is_terminal()).await?;
        Ok(self.inner.places.take(holder, owner, limits, lease, now, &finished))
    }

    async fn release_place(&self, holder: &PlaceHolder) -> Result<(), StoreError> {
        self.inner.places.release(holder);
        Ok(())
    }
}

#[async_trait]
impl ViewStore for SqliteStore {
    async fn browse(&self, query: &BrowseQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let (sql, values) = browse_statement(query);
        self.read(move |conn| {
            conn.prepare_cached(&sql)
                .and_then(|mut stmt| {
                    collect(stmt.query_map(rusqlite::params_from_iter(values.iter()), read_record)?)
                })
                .map_err(StoreError::backend)
        })
        .await
    }

    async fn status_counts(&self, owner: &Principal) -> Result<Vec<(Status, u64)>, StoreError> {
        let owner = owner.as_str().to_owned();
        self.read(move |conn| {
            // The finished tasks: a covering scan of the owner's entries of
            // `tasks_finished_by_owner_status` (0013).
            let mut counts: Vec<(String, u64)> = conn
                .prepare_cached(&format!(
                    "SELECT status, COUNT(*) FROM tasks WHERE owner = ?1 AND {NOT_UNFINISHED} GROUP BY status"
                ))
                .and_then(|mut stmt| {
                    stmt.query_map([&owner], |row| Ok((row.get(0)?, u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0))))?
                        .collect()
                })
                .map_err(StoreError::backend)?;
            // The unfinished ones: the few entries of `tasks_unfinished`, each task's row read
            // for its owner and status, tallied here (a GROUP BY would sort them first). The
            // index named: SQLite would otherwise read all the owner's tasks through an index
            // that leads with the owner.
            let unfinished: Vec<String> = conn
                .prepare_cached(&format!(
                    "SELECT status FROM tasks INDEXED BY tasks_unfinished WHERE status IN {UNFINISHED} AND owner = ?1"
                ))
                .and_then(|mut stmt| stmt.query_map([&owner], |row| row.get(0))?.collect())
                .map_err(StoreError::backend)?;
            for status in unfinished {
                match counts.iter_mut().find(|(counted, _)| *counted == status) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((status, 1)),
                }
            }
            // In the order of the statuses' names, as one GROUP BY gave them before 0013.
            counts.sort_unstable();
            Ok(counts.into_iter().filter_map(|(status, n)| Some((Status::parse(&status)?, n))).collect())
        })
        .await
    }

    async fn history(&self, id: &TaskId) -> Result<Vec<HistoryEntry>, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let entry = |row: &rusqlite::Row<'_>| {
                let status: String = row.get(2)?;
                Ok(HistoryEntry {
                    version: Version(to_u64(0, row.get(0)?)?),
                    at: Timestamp(row.get(1)?),
                    status: Status::parse(&status).ok_or_else(|| {
                        rusqlite::Error::FromSqlConversionFailure(2, Type::Text, format!("unknown status {status:?}").into())
                    })?,
                    message: row.get(3)?,
                })
            };
            // One read transaction: the entries and the row as of one commit.
            let read = || -> rusqlite::Result<Vec<HistoryEntry>> {
                let read = conn.unchecked_transaction()?;
                let mut entries: Vec<HistoryEntry> = read
                    .prepare_cached("SELECT version, at, status, message FROM task_history WHERE task_id = ?1 ORDER BY version")?
                    .query_map([&id], entry)?
                    .collect::<rusqlite::Result<_>>()?;
                // The entry of the write that finished the task is its finished row
                // ([`record_change`]); rows finished by earlier builds have it stored too.
                let row = read
                    .prepare_cached(
                        "SELECT version, updated_at, status, status_message, created_at, creation_in_history \
                         FROM tasks WHERE id = ?1",
                    )?
                    .query_row([&id], |row| Ok((entry(row)?, row.get::<_, i64>(4)?, row.get::<_, bool>(5)?)))
                    .optional()?;
                // The usual creation entry, when the row stands for it (0014).
                if let Some((_, created_at, false)) = row {
                    let creation = HistoryEntry { version: Version(1), at: Timestamp(created_at), status: Status::Working, message: None };
                    entries.insert(0, creation);
                }
                if let Some(row) = row.map(|(row, ..)| row).filter(|row| row.status.is_terminal())
                    && entries.last().is_none_or(|last| last.status != row.status || last.message != row.message)
                {
                    entries.push(row);
                }
                Ok(entries)
            };
            read().map_err(StoreError::backend)
        })
        .await
    }

    async fn set_origin(&self, id: &TaskId, origin: &Origin) -> Result<(), StoreError> {
        let id = id.as_str().to_owned();
        let origin = origin.clone();
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE tasks SET era = ?1, client_name = ?2, client_version = ?3 WHERE id = ?4",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    origin.era,
                    origin.client_name,
                    origin.client_version,
                    id
                ])
            })
            .map(|_| ())
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn origin(&self, id: &TaskId) -> Result<Option<Origin>, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let found: Option<(Option<String>, Option<String>, Option<String>)> = conn
                .prepare_cached("SELECT era, client_name, client_version FROM tasks WHERE id = ?1")
                .and_then(|mut stmt| {
                    stmt.query_row([id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                        .optional()
                })
                .map_err(StoreError::backend)?;
            Ok(found.and_then(|(era, client_name, client_version)| {
                era.map(|era| Origin {
                    era,
                    client_name,
                    client_version,
                })
            }))
        })
        .await
    }
}

#[async_trait]
impl WorkStore for SqliteStore {
    async fn set_process_group(&self, id: &TaskId, group: &ProcessGroup) -> Result<(), StoreError> {
        let id = id.as_str().to_owned();
        let pgid = i64::from(group.pgid);
        let start = to_i64(group.start_time).map_err(StoreError::backend)?;
        self.write(move |conn| {
            conn.prepare_cached("UPDATE tasks SET process_group = ?1, process_start = ?2 WHERE id = ?3")
                .and_then(|mut stmt| stmt.execute(params![pgid, start, id]))
                .map(|_| ())
                .map_err(StoreError::backend)
        })
        .await
    }

    async fn process_group(&self, id: &TaskId) -> Result<Option<ProcessGroup>, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let found: Option<(Option<i64>, Option<i64>)> = conn
                .prepare_cached("SELECT process_group, process_start FROM tasks WHERE id = ?1")
                .and_then(|mut stmt| stmt.query_row([id], |row| Ok((row.get(0)?, row.get(1)?))).optional())
                .map_err(StoreError::backend)?;
            Ok(match found {
                Some((Some(pgid), Some(start))) => u32::try_from(pgid)
                    .ok()
                    .zip(u64::try_from(start).ok())
                    .map(|(pgid, start_time)| ProcessGroup { pgid, start_time }),
                _ => None,
            })
        })
        .await
    }

    async fn set_kept_group(&self, key: &str, kept: Option<&KeptGroup>) -> Result<(), StoreError> {
        let key = key.to_owned();
        let row = match kept {
            Some(kept) => Some((
                i64::from(kept.group.pgid),
                to_i64(kept.group.start_time).map_err(StoreError::backend)?,
                i64::from(kept.keeper_pid),
                to_i64(kept.keeper_start).map_err(StoreError::backend)?,
            )),
            None => None,
        };
        self.write(move |conn| {
            let done = match row {
                Some((pgid, start, keeper, keeper_start)) => conn
                    .prepare_cached(
                        "INSERT INTO kept_groups (key, process_group, process_start, keeper_pid, keeper_start) \
                         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key) DO UPDATE SET process_group = excluded.process_group, \
                         process_start = excluded.process_start, keeper_pid = excluded.keeper_pid, keeper_start = excluded.keeper_start",
                    )
                    .and_then(|mut stmt| stmt.execute(params![key, pgid, start, keeper, keeper_start])),
                None => conn.prepare_cached("DELETE FROM kept_groups WHERE key = ?1").and_then(|mut stmt| stmt.execute([key])),
            };
            done.map(|_| ()).map_err(StoreError::backend)
        })
        .await
    }

    async fn kept_group(&self, key: &str) -> Result<Option<KeptGroup>, StoreError> {
        let key = key.to_owned();
        self.read(move |conn| {
            let found: Option<(i64, i64, i64, i64)> = conn
                .prepare_cached("SELECT process_group, process_start, keeper_pid, keeper_start FROM kept_groups WHERE key = ?1")
                .and_then(|mut stmt| stmt.query_row([key], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))).optional())
                .map_err(StoreError::backend)?;
            Ok(found.and_then(|(pgid, start, keeper, keeper_start)| {
                Some(KeptGroup {
                    group: ProcessGroup { pgid: u32::try_from(pgid).ok()?, start_time: u64::try_from(start).ok()? },
                    keeper_pid: u32::try_from(keeper).ok()?,
                    keeper_start: u64::try_from(keeper_start).ok()?,
                })
            }))
        })
        .await
    }

    async fn set_checkpoint(&self, id: &TaskId, attempt: u32, checkpoint: &serde_json::Value) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let text = checkpoint.to_string();
        self.write(move |conn| {
            conn.prepare_cached(&format!(
                "UPDATE tasks SET checkpoint = ?1 WHERE id = ?2 AND attempt = ?3 AND status IN {UNFINISHED}"
            ))
            .and_then(|mut stmt| stmt.execute(params![text, id, i64::from(attempt)]))
            .map(|written| written == 1)
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn checkpoint(&self, id: &TaskId) -> Result<Option<serde_json::Value>, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let found: Option<Option<String>> = conn
                .prepare_cached("SELECT checkpoint FROM tasks WHERE id = ?1")
                .and_then(|mut stmt| stmt.query_row([id], |row| row.get(0)).optional())
                .map_err(StoreError::backend)?;
            found.flatten().map(|text| serde_json::from_str(&text).map_err(StoreError::backend)).transpose()
        })
        .await
    }
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn put_session(&self, session: &SessionRecord) -> Result<(), StoreError> {
        self.inner.sessions.put(session);
        Ok(())
    }

    async fn session(&self, id: &str, owner: &Principal) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self.inner.sessions.get(id, owner))
    }

    async fn add_session_task(&self, id: &str, task: &TaskId) -> Result<(), StoreError> {
        self.inner.sessions.add_task(id, task);
        Ok(())
    }

    async fn touch_sessions(&self, ids: &[String], now: Timestamp) -> Result<Vec<String>, StoreError> {
        Ok(self.inner.sessions.touch(ids, now))
    }

    async fn end_session(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.inner.sessions.end(id))
    }

    async fn prune_sessions(&self, idle_before: Timestamp, limit: u32) -> Result<u64, StoreError> {
        Ok(self.inner.sessions.prune(idle_before, limit))
    }
}

impl SqliteStore {
    /// The tasks holding a running place that are stored and pass `test` (a read each: the
    /// places are few, and the engine takes none on this store).
    async fn holders_where(&self, test: impl Fn(&TaskRecord) -> bool) -> Result<Vec<TaskId>, StoreError> {
        let mut passing = Vec::new();
        for id in self.inner.places.task_holders() {
            if self.get(&id).await?.as_ref().is_some_and(&test) {
                passing.push(id);
            }
        }
        Ok(passing)
    }
}

/// The statement of `browse` for `query`'s filters, and its parameters in order (also
/// planned by [`SqliteStore::browse_plan`]).
fn browse_statement(query: &BrowseQuery) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value as Sql;
    // The index named, not left to the planner: without statistics it reads the owner's
    // tasks in order through `tasks_by_owner` and filters them, which steps over every
    // other task of the owner when few match.
    // A finished status: the owner's entries of that status in `tasks_finished_by_owner_status`;
    // an unfinished one: the few unfinished tasks of `tasks_unfinished`, newest first, each
    // row read for its owner and status (migration 0013). Each partial index needs its own
    // `WHERE` in the statement.
    let (index, partial) = match (query.status, &query.tool) {
        (Some(status), _) if status.is_terminal() => ("tasks_finished_by_owner_status", NOT_UNFINISHED.to_owned()),
        (Some(_), _) => ("tasks_unfinished", format!("status IN {UNFINISHED}")),
        (None, Some(_)) => ("tasks_by_owner_tool", String::new()),
        (None, None) => ("tasks_by_owner", String::new()),
    };
    let mut sql = format!("SELECT {COLUMNS} FROM tasks INDEXED BY {index} WHERE owner = ?");
    let mut values = vec![Sql::Text(query.owner.as_str().to_owned())];
    if let Some(status) = query.status {
        sql.push_str(&format!(" AND {partial} AND status = ?"));
        values.push(Sql::Text(status.as_str().to_owned()));
    }
    if let Some(tool) = &query.tool {
        sql.push_str(" AND tool = ?");
        values.push(Sql::Text(tool.clone()));
    }
    if let Some(text) = &query.text {
        // `lower` is ASCII-only in SQLite, as `BrowseQuery::matches` defines it.
        sql.push_str(
            " AND (instr(lower(id), ?1x) > 0 OR instr(lower(tool), ?1x) > 0 \
             OR instr(lower(coalesce(status_message, '')), ?1x) > 0 OR instr(lower(arguments), ?1x) > 0)",
        );
        let n = values.len() + 1;
        sql = sql.replace("?1x", &format!("?{n}"));
        values.push(Sql::Text(text.to_ascii_lowercase()));
    }
    if let Some(cursor) = &query.before {
        let n = values.len() + 1;
        sql.push_str(&format!(" AND (created_at, id) < (?{n}, ?{})", n + 1));
        values.push(Sql::Integer(cursor.created_at.0));
        values.push(Sql::Text(cursor.id.as_str().to_owned()));
    }
    let n = values.len() + 1;
    sql.push_str(&format!(" ORDER BY created_at DESC, id DESC LIMIT ?{n}"));
    values.push(Sql::Integer(i64::from(query.limit)));
    // Every placeholder numbered: `?` alone takes the next number, and mixing is legal.
    (sql, values)
}

/// Inserts `row` (task `id`): a new task, or the owner's retained task holding its
/// idempotency key. One write of the writer thread, so the key's lookup and the insert are
/// atomic.
/// Inserts `record` (encoded as `row`) unless its idempotency key is held by a retained
/// task, which it then returns; the key of an expired holder is released first.
fn insert_keyed(tx: &mut Tx<'_, '_>, row: &NewRow, record: Arc<TaskRecord>) -> Result<Inserted, StoreError> {
    let conn: &Connection = tx;
    let prepared = tx.prepared;
    let size = Size { state: row.state.len(), arguments: row.arguments.len() };
    let id = record.id.clone();
    match insert_row(prepared, row) {
        Ok(1) => {
            tx.put(record, size);
            return Ok(Inserted::New);
        }
        Ok(_) => {}
        Err(err) if is_duplicate_key(&err) => return Err(StoreError::Duplicate(id)),
        Err(err) => return Err(StoreError::backend(err)),
    }
    // The key is taken (a keyless row never conflicts): by a retained task, which is the
    // answer, or by one past its TTL, which gives it up.
    let (owner, key) = (row.owner.as_str(), row.idempotency_key.as_deref());
    let holder = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND idempotency_key = ?2"
        ))
        .and_then(|mut stmt| stmt.query_row(params![owner, key], read_record).optional())
        .map_err(StoreError::backend)?;
    match holder {
        Some(existing) if existing.retained_at(Timestamp(row.created_at)) => {
            Ok(Inserted::Existing(existing))
        }
        holder => {
            if let Some(holder) = holder {
                tx.evict(holder.id);
            }
            let conn: &Connection = tx;
            conn.prepare_cached(
                "UPDATE tasks SET idempotency_key = NULL WHERE owner = ?1 AND idempotency_key = ?2",
            )
            .and_then(|mut stmt| stmt.execute(params![owner, key]))
            .map_err(StoreError::backend)?;
            match insert_row(prepared, row) {
                Ok(_) => {
                    tx.put(record, size);
                    Ok(Inserted::New)
                }
                Err(err) if is_duplicate_key(&err) => Err(StoreError::Duplicate(id)),
                Err(err) => Err(StoreError::backend(err)),
            }
        }
    }
}

/// A [`TaskRecord`] as the `tasks` table stores it.
struct NewRow {
    id: String,
    owner: String,
    tool: String,
    arguments: String,
    status: &'static str,
    state: String,
    status_message: Option<String>,
    created_at: i64,
    updated_at: i64,
    ttl_ms: Option<i64>,
    expires_at: Option<i64>,
    poll_interval_ms: Option<i64>,
    attempt: u32,
    version: i64,
    error_result_fails: bool,
    input_methods: String,
    idempotency_key: Option<String>,
    traceparent: Option<String>,
    tracestate: Option<String>,
    /// The runner's claim (node, lease end); `None`: unclaimed.
    claim: Option<(String, i64)>,
    /// Where the task came from; `None`: unrecorded.
    origin: Option<Origin>,
    /// The row is a new task with the outcome of its early work in ([`NewRow::end_early`]):
    /// its creation entry is still the usual one.
    ended_early: bool,
}

impl NewRow {
    fn from_record(task: &TaskRecord) -> rusqlite::Result<NewRow> {
        Ok(NewRow {
            id: task.id.as_str().to_owned(),
            owner: task.owner.as_str().to_owned(),
            tool: task.tool.clone(),
            arguments: to_json(&task.arguments)?,
            status: task.status().as_str(),
            state: to_json(&task.state)?,
            status_message: task.status_message.clone(),
            created_at: task.created_at.0,
            updated_at: task.updated_at.0,
            ttl_ms: task.ttl_ms.map(to_i64).transpose()?,
            expires_at: task.expires_at().map(|at| at.0),
            poll_interval_ms: task.poll_interval_ms.map(to_i64).transpose()?,
            attempt: task.attempt,
            version: to_i64(task.version.0)?,
            error_result_fails: task.error_result_fails,
            input_methods: to_json(&task.input_kinds)?,
            idempotency_key: task.idempotency_key.as_ref().map(|key| key.as_str().to_owned()),
            traceparent: task.trace.as_ref().map(|trace| trace.traceparent().to_owned()),
            tracestate: task.trace.as_ref().and_then(TraceContext::tracestate).map(str::to_owned),
            claim: None,
            origin: None,
            ended_early: false,
        })
    }

    /// The row of a new task becomes that of `ended`, the task as its early work's ending
    /// left it (one version later). Its status history reads as if the creation and the
    /// ending had been written one after the other: the usual creation entry from the row,
    /// and the finished row itself (no `task_history` row, as for any usual lifecycle).
    fn end_early(&mut self, ended: &TaskRecord) -> rusqlite::Result<()> {
        self.ended_early = self.creation_in_row();
        self.status = ended.status().as_str();
        self.state = to_json(&ended.state)?;
        self.status_message.clone_from(&ended.status_message);
        self.updated_at = ended.updated_at.0;
        self.attempt = ended.attempt;
        self.version = to_i64(ended.version.0)?;
        Ok(())
    }
}

/// Inserts `row` unless its owner's idempotency key is taken; how many rows went in (0: the
/// key is taken). A taken id is an error, as before keys existed. A row that went in is
/// counted for its owner and gets its first history entry (migration 0012): a row of
/// `task_history`, or for the engine's usual creation the row itself (migration 0014).
fn insert_row(prepared: &Prepared<'_>, row: &NewRow) -> rusqlite::Result<usize> {
    let inserted = insert_task_row(prepared, row)?;
    if inserted == 1 {
        count_one_more(prepared, &row.owner)?;
        if !row.creation_in_row() {
            record_history(prepared, &row.id, row.version, row.updated_at, row.status, row.status_message.as_deref())?;
        }
    }
    Ok(inserted)
}

impl NewRow {
    /// Whether the row's creation entry is the usual one, (1, `created_at`, `working`, no
    /// message), which `history` reads from the row instead of `task_history` (0014).
    fn creation_in_row(&self) -> bool {
        self.ended_early
            || (self.version == 1
                && self.status == Status::Working.as_str()
                && self.status_message.is_none()
                && self.updated_at == self.created_at)
    }
}

/// `owner` has one more row of `tasks`: its row of `task_counts` goes up, or starts at one.
/// Two single-row statements rather than an upsert, which SQLite would run with a statement
/// journal.
fn count_one_more(prepared: &Prepared<'_>, owner: &str) -> rusqlite::Result<()> {
    let updated = prepared.execute(Sql::CountOneMore, [owner])?;
    if updated == 0 {
        prepared.execute(Sql::CountFirst, [owner])?;
    }
    Ok(())
}

/// The status history's entry for version `version` of task `id`: written at the insert and
/// at every write that changes the status or the status message.
fn record_history(
    prepared: &Prepared<'_>,
    id: &str,
    version: i64,
    at: i64,
    status: &str,
    message: Option<&str>,
) -> rusqlite::Result<()> {
    prepared.execute(Sql::History, params![id, version, at, status, message]).map(|_| ())
}

/// A task's row as one entry of its status history sees it: version, `updated_at`, status
/// and status message.
struct Entry<'a> {
    version: i64,
    at: i64,
    status: &'a str,
    message: Option<&'a str>,
}

impl Entry<'_> {
    fn of(record: &TaskRecord) -> Entry<'_> {
        Entry {
            version: i64::try_from(record.version.0).unwrap_or(i64::MAX),
            at: record.updated_at.0,
            status: record.status().as_str(),
            message: record.status_message.as_deref(),
        }
    }
}

fn is_finished(status: &str) -> bool {
    Status::parse(status).is_some_and(Status::is_terminal)
}

/// The status history of a write that took task `id`'s row from `before` to `after`: nothing
/// if neither the status nor the message changed; else `after`'s entry, except for the write
/// that finishes an unfinished task. That entry is the finished row itself, which never
/// changes again through the engine, and [`SqliteStore::history`] reads it from there: a
/// lifecycle writes one history row (its creation's), not two, which was 5 % of its
/// instructions (`benches/profile.sh`, thirteenth round). Should a finished row be written
/// again (the store allows it; the engine never does), its entry, if it is one, is written
/// first, as the row is about to stop saying it.
fn record_change(conn: &Connection, prepared: &Prepared<'_>, id: &str, before: &Entry<'_>, after: &Entry<'_>) -> rusqlite::Result<()> {
    let finished_before = is_finished(before.status);
    if finished_before {
        // The finished row is an entry unless the last one stored already says what it says.
        let last: Option<(String, Option<String>)> = conn
            .prepare_cached("SELECT status, message FROM task_history WHERE task_id = ?1 ORDER BY version DESC LIMIT 1")?
            .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        if last.is_none_or(|(status, message)| status != before.status || message.as_deref() != before.message) {
            record_history(prepared, id, before.version, before.at, before.status, before.message)?;
        }
    }
    if before.status == after.status && before.message == after.message {
        return Ok(());
    }
    if is_finished(after.status) && !finished_before {
        return Ok(());
    }
    record_history(prepared, id, after.version, after.at, after.status, after.message)
}

/// The row of `tasks` itself (see [`insert_row`]).
fn insert_task_row(prepared: &Prepared<'_>, row: &NewRow) -> rusqlite::Result<usize> {
    prepared.execute(
        Sql::InsertTask,
        params![
        row.id,
        row.owner,
        row.tool,
        row.arguments,
        row.status,
        row.state,
        row.status_message,
        row.created_at,
        row.updated_at,
        row.ttl_ms,
        row.expires_at,
        row.poll_interval_ms,
        row.attempt,
        row.version,
        row.error_result_fails,
        row.input_methods,
        row.idempotency_key,
        row.traceparent,
        row.tracestate,
        row.claim.as_ref().map(|(node, _)| node),
        row.claim.as_ref().map(|(_, until)| until),
        row.origin.as_ref().map(|origin| &origin.era),
        row.origin.as_ref().and_then(|origin| origin.client_name.as_ref()),
        row.origin.as_ref().and_then(|origin| origin.client_version.as_ref()),
        !row.creation_in_row(),
        ],
    )
}

/// Decodes a row selected with [`COLUMNS`].
fn read_record(row: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    let arguments: String = row.get(3)?;
    let state: String = row.get(4)?;
    Ok(TaskRecord {
        id: TaskId::from(row.get::<_, String>(0)?),
        owner: Principal::new(row.get::<_, String>(1)?),
        tool: row.get(2)?,
        arguments: from_json(3, &arguments)?,
        state: compat::state(4, &state)?,
        status_message: row.get(5)?,
        created_at: Timestamp(row.get(6)?),
        updated_at: Timestamp(row.get(7)?),
        ttl_ms: row
            .get::<_, Option<i64>>(8)?
            .map(|n| to_u64(8, n))
            .transpose()?,
        poll_interval_ms: row
            .get::<_, Option<i64>>(9)?
            .map(|n| to_u64(9, n))
            .transpose()?,
        attempt: row.get(10)?,
        version: Version(to_u64(11, row.get(11)?)?),
        error_result_fails: row.get(12)?,
        input_kinds: compat::input_kinds(13, &row.get::<_, String>(13)?)?,
        idempotency_key: row.get::<_, Option<String>>(14)?.map(IdempotencyKey::new),
        // Written valid; a row edited by hand to something else reads as no trace.
        trace: match row.get::<_, Option<String>>(15)? {
            Some(traceparent) => TraceContext::parse(&traceparent, row.get::<_, Option<String>>(16)?.as_deref()),
            None => None,
        },
    })
}

/// Collects rows, stopping at the first error.
fn collect(
    rows: impl Iterator<Item = rusqlite::Result<TaskRecord>>,
) -> rusqlite::Result<Vec<TaskRecord>> {
    rows.collect()
}

/// Whether `err` is the primary key (the id) being taken already.
fn is_duplicate_key(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_extended_error_code(),
        Some(rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY | rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE)
    )
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> rusqlite::Result<String> {
    serde_json::to_string(value)
        .map_err(|err| rusqlite::Error::ToSqlConversionFailure(Box::new(err)))
}

fn from_json<T: serde::de::DeserializeOwned>(column: usize, text: &str) -> rusqlite::Result<T> {
    serde_json::from_str(text)
        .map_err(|err| rusqlite::Error::FromSqlConversionFailure(column, Type::Text, Box::new(err)))
}

/// SQLite integers are signed 64-bit; a larger `u64` cannot be stored.
fn to_i64(n: u64) -> rusqlite::Result<i64> {
    i64::try_from(n).map_err(|err| rusqlite::Error::ToSqlConversionFailure(Box::new(err)))
}

fn to_u64(column: usize, n: i64) -> rusqlite::Result<u64> {
    u64::try_from(n).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(column, n))
}
