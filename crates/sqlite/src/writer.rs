//! The writer thread of [`SqliteStore`](crate::SqliteStore): group commit, the writer's
//! prepared statements, the transaction a write runs in, the checkpoint after a batch, and
//! the disk's free space watched.
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

use std::cell::RefCell;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, Statement};
use tokio::sync::{broadcast, oneshot};

use mcp_tasks_engine::store::implement::{Commit, CommitObserver};
use mcp_tasks_engine::{FastSet, Principal, StoreError, TaskId, TaskRecord};

use crate::changes::ChangeLog;
use crate::faults;
use crate::hot::{Hot, Size, Touch};
use crate::peers::Signal;
use crate::sql::Sql;

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

/// The writer thread's counters behind [`WriteStats`](crate::WriteStats).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) commits: AtomicU64,
    pub(crate) writes: AtomicU64,
    /// Told of every batch the writer thread ends ([`SqliteStore::on_commit`](crate::SqliteStore::on_commit)).
    pub(crate) observer: std::sync::OnceLock<CommitObserver>,
}

/// The writer's statements of [`Sql`], each prepared on first use and kept for the writer's
/// life, found by its variant. rusqlite's statement cache (`prepare_cached`) hashes the
/// whole SQL text with SipHash to find a statement and again to put it back, and clears its
/// bindings: without it a block lifecycle went from 324.4 k to 318.6 k instructions
/// (`benches/profile.sh block 2000 32`, docs/benchmarks/11-eleventh-round.md). Each statement here
/// binds all its parameters at every run, and `execute` and `query_row` reset it after
/// their step, as the cache's would be.
pub(crate) struct Prepared<'c> {
    conn: &'c Connection,
    statements: RefCell<[Option<Statement<'c>>; Sql::ALL]>,
    /// Whether the writes record webhook deliveries ([`SqliteStore::record_deliveries`](mcp_tasks_engine::DeliveryStore::record_deliveries)).
    deliveries: Arc<std::sync::atomic::AtomicBool>,
}

impl<'c> Prepared<'c> {
    pub(crate) fn new(conn: &'c Connection, deliveries: Arc<std::sync::atomic::AtomicBool>) -> Prepared<'c> {
        Prepared { conn, statements: RefCell::new(Default::default()), deliveries }
    }

    /// Whether the writes record webhook deliveries.
    pub(crate) fn records_deliveries(&self) -> bool {
        self.deliveries.load(Ordering::Relaxed)
    }

    /// Runs statement `sql` with `params`; the rows it changed.
    pub(crate) fn execute<P: rusqlite::Params>(&self, sql: Sql, params: P) -> rusqlite::Result<usize> {
        self.with(sql, |statement| statement.execute(params))
    }

    /// Runs query `sql` with `params`: its first row read by `read`, if it has one.
    pub(crate) fn query_row<T, P: rusqlite::Params>(
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
/// Every write that changes a column [`read_record`](crate::rows::read_record) reads must say so here: with the new
/// record ([`Tx::put`]) or by forgetting the task ([`Tx::evict`]).
pub(crate) struct Tx<'a, 'c> {
    conn: &'a Connection,
    /// The writer's own prepared statements for the writes of every lifecycle.
    pub(crate) prepared: &'a Prepared<'c>,
    pub(crate) touched: &'a mut Vec<Touch>,
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
    pub(crate) fn put(&mut self, record: Arc<TaskRecord>, size: Size) {
        self.dirty.insert(record.id.clone());
        self.touched.push(Touch::Put { record, size });
    }

    /// The task's row changed (or went) otherwise.
    pub(crate) fn evict(&mut self, id: TaskId) {
        self.dirty.insert(id.clone());
        self.touched.push(Touch::Evict(id));
    }

    /// `owner` has `tasks` rows now, as this transaction counts them.
    pub(crate) fn counted(&mut self, owner: Principal, tasks: u64) {
        self.touched.push(Touch::Counted { owner, tasks });
    }

    /// `owner`'s number of rows changed without this transaction counting them.
    pub(crate) fn uncounted(&mut self, owner: Principal) {
        self.touched.push(Touch::Uncounted(owner));
    }

    /// Task `id`'s row as it stands in this transaction, with its size, when the cache
    /// knows it: kept, and not touched by an earlier write of this batch.
    pub(crate) fn current(&self, id: &TaskId) -> Option<(Arc<TaskRecord>, Size)> {
        if self.dirty.contains(id) {
            return None;
        }
        self.hot.get_sized(id)
    }
}

/// One write queued to the writer thread.
pub(crate) trait Write: Send {
    /// Runs the write inside the batch's open transaction and keeps its outcome.
    fn run(&mut self, conn: &Connection, prepared: &Prepared<'_>, hot: &Hot, dirty: &mut FastSet<TaskId>);

    /// Answers the caller: with the kept outcome if the batch committed, or with `failed`
    /// (the batch's failure) if it did not.
    fn answer(self: Box<Self>, failed: Option<&Failure>);

    /// Whether the write failed because the disk is full.
    fn found_disk_full(&self) -> bool;

    /// What the write did to rows of `tasks` (taken once, after its batch committed).
    fn take_touched(&mut self) -> Vec<Touch>;

    /// What the write did to rows of `tasks`, before its batch commits (for the change log).
    fn touched(&self) -> &[Touch];

    /// Whether this is no write but the watcher's poke: another process may have written.
    fn is_poke(&self) -> bool {
        false
    }
}

/// The watcher's poke ([`crate::peers`]): the store's commit counter moved, or the backstop
/// came; the writer catches up with the file between two batches.
pub(crate) struct Poke;

impl Write for Poke {
    fn run(&mut self, _: &Connection, _: &Prepared<'_>, _: &Hot, _: &mut FastSet<TaskId>) {}

    fn answer(self: Box<Self>, _: Option<&Failure>) {}

    fn found_disk_full(&self) -> bool {
        false
    }

    fn take_touched(&mut self) -> Vec<Touch> {
        Vec::new()
    }

    fn touched(&self) -> &[Touch] {
        &[]
    }

    fn is_poke(&self) -> bool {
        true
    }
}

/// What the writer thread shares with the other processes on the file.
pub(crate) struct Peers {
    /// The store's commit counter.
    pub(crate) signal: Arc<Signal>,
    /// This writer's place in the change log.
    pub(crate) log: ChangeLog,
    /// The store's change feed: what other processes changed goes out on it.
    pub(crate) feed: broadcast::Sender<Arc<TaskRecord>>,
    /// Set by the watcher when it queues a poke, cleared when the writer takes it: one poke
    /// queued at a time.
    pub(crate) poked: Arc<std::sync::atomic::AtomicBool>,
    /// Whether this store's own watcher sleeps on the counter (it need not be woken).
    pub(crate) asleep: Arc<std::sync::atomic::AtomicBool>,
    /// Whether the writes record webhook deliveries (set once, by `record_deliveries`).
    pub(crate) deliveries: Arc<std::sync::atomic::AtomicBool>,
}

impl Peers {
    /// Catches up with what other processes committed (see [`ChangeLog::catch_up`]) and
    /// sends their records to the change feed. A failure is logged; the cache was forgotten.
    fn catch_up(&mut self, conn: &Connection, prepared: &Prepared<'_>, hot: &Hot) {
        let count = self.signal.load();
        match self.log.catch_up(conn, prepared, hot, count) {
            Ok(records) => {
                for record in records {
                    let _ = self.feed.send(record);
                }
            }
            Err(err) => tracing::warn!(error = %err, "could not read what other processes changed in the task store"),
        }
    }
}

/// Why a batch did not commit.
pub(crate) struct Failure {
    reason: String,
    /// The disk is full (the callers hear [`StoreError::DiskFull`]).
    disk_full: bool,
}

/// A [`Write`] running `work`, whose caller waits on `reply`.
pub(crate) struct Job<T, F> {
    pub(crate) work: Option<F>,
    pub(crate) outcome: Option<Result<T, StoreError>>,
    pub(crate) touched: Vec<Touch>,
    pub(crate) reply: oneshot::Sender<Result<T, StoreError>>,
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

    fn touched(&self) -> &[Touch] {
        &self.touched
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
/// until every [`SqliteStore`](crate::SqliteStore) handle is gone and the queue is empty.
/// `wal_frames` is the WAL's length in frames as of the last commit (set by the connection's
/// WAL hook); past [`CHECKPOINT_FRAMES`] a passive checkpoint follows the batch's answers.
/// A batch is refused as on a full disk when `space` says the disk is nearly full.
pub(crate) fn write_loop(
    conn: &Connection,
    queue: &mpsc::Receiver<Box<dyn Write>>,
    stats: &Counters,
    hot: &Hot,
    wal_frames: &AtomicU32,
    mut space: Space,
    mut peers: Peers,
) {
    let mut batch: Vec<Box<dyn Write>> = Vec::with_capacity(MAX_BATCH);
    // Dropped at the loop's end, before the connection closes.
    let prepared = Prepared::new(conn, Arc::clone(&peers.deliveries));
    while let Ok(first) = queue.recv() {
        if first.is_poke() {
            peers.poked.store(false, Ordering::SeqCst);
            peers.catch_up(conn, &prepared, hot);
            continue;
        }
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                // The batch catches up anyway.
                Ok(next) if next.is_poke() => peers.poked.store(false, Ordering::SeqCst),
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let started = Instant::now();
        let committed = space.check().and_then(|()| commit(conn, &prepared, &mut batch, hot, &mut peers));
        peers.log.ended(committed.is_ok());
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
            // Counted before anyone is answered: another process that hears of a write
            // reads it (its cache is not trusted past this count until it caught up).
            let before = peers.signal.bump(peers.asleep.load(Ordering::SeqCst));
            // Before anyone is answered, in commit order (a failed write's evictions too:
            // what it did before failing committed with the batch).
            let touched: Vec<Touch> = batch.iter_mut().flat_map(|job| job.take_touched()).collect();
            if !touched.is_empty() {
                hot.apply(touched);
            }
            hot.committed_at(before);
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
pub(crate) fn presize_wal(conn: &Connection, path: &Path) -> bool {
    use std::os::unix::fs::FileExt as _;
    let wal = crate::peers::beside(path, "-wal");
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
        tracing::debug!(error = %err, wal = %wal.display(), "could not grow the SQLite WAL ahead of the commits");
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
pub(crate) struct Space {
    /// The store's file, whose disk is watched; `None` when the WAL grows as SQLite appends
    /// (not watched).
    path: Option<PathBuf>,
    /// When the free space was last looked at, and what it was.
    last: Option<(Instant, u64)>,
}

impl Space {
    pub(crate) fn new(path: &Path, watched: bool) -> Space {
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
fn commit(conn: &Connection, prepared: &Prepared<'_>, batch: &mut [Box<dyn Write>], hot: &Hot, peers: &mut Peers) -> Result<(), Failure> {
    let failed = |err: rusqlite::Error| Failure { disk_full: faults::is_full_sqlite(&err), reason: err.to_string() };
    // Prepared once and kept, not parsed again for every batch. `IMMEDIATE`: the write lock
    // is taken here, waiting up to the busy timeout for another process's batch.
    prepared.execute(Sql::Begin, []).map_err(failed)?;
    // Under the write lock nobody else commits: what other processes wrote is all in the
    // log, and the cache is the file's for the writes of this batch (`Tx::current`).
    peers.catch_up(conn, prepared, hot);
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
    let logged = peers.log.record(conn, prepared, batch.iter().flat_map(|job| job.touched()));
    match logged.and_then(|()| prepared.execute(Sql::Commit, [])) {
        Ok(_) => Ok(()),
        Err(err) => {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            Err(failed(err))
        }
    }
}
