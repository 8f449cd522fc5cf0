//! The change log (`task_changes`, migration 0015), kept by each writer thread: a row per
//! committed batch naming the tasks it changed ([`ChangeLog::record`]), and the rows of the
//! other processes read past the last one seen ([`ChangeLog::catch_up`]). What another
//! process changed is forgotten from this process's cache of the tasks written last and
//! sent, as read now, to its change feed.
//!
//! Cheap when nobody else writes: `PRAGMA data_version` on the write connection moves only
//! when another connection committed, so a catch-up that finds it unchanged reads nothing.
//! When it moved and the log names nothing new (a writer that keeps no log, such as an
//! `sqlite3` shell, or rows pruned before they were read) the whole cache is forgotten.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};

use mcp_tasks_engine::{FastSet, TaskId, TaskRecord};

use crate::hot::{Hot, Touch};
use crate::rows::read_record;
use crate::sql::{COLUMNS, Sql};
use crate::writer::Prepared;

/// Rows younger than this are kept: a process that has not caught up for longer (it was
/// stopped) forgets its whole cache instead.
const KEEP_FOR: Duration = Duration::from_secs(60);

/// How often a writer notes its last row, to prune up to it [`KEEP_FOR`] later.
const MARK_EVERY: Duration = Duration::from_secs(5);

/// One writer thread's place in the change log.
pub(crate) struct ChangeLog {
    /// This handle's number in the `writer` column (random: its own rows are skipped).
    me: i64,
    /// The last row read or written.
    last: i64,
    /// `PRAGMA data_version` of the write connection when last looked at.
    data_version: i64,
    /// This writer's rows by when they were written, every [`MARK_EVERY`], oldest first.
    marks: VecDeque<(Instant, i64)>,
    /// The row of the batch in progress, until it commits.
    pending: Option<i64>,
}

impl ChangeLog {
    /// This writer's place at open: past every row written so far.
    ///
    /// # Errors
    /// The driver's error, if the log cannot be read.
    pub(crate) fn open(conn: &Connection) -> rusqlite::Result<ChangeLog> {
        let last: Option<i64> = conn.query_row("SELECT max(seq) FROM task_changes", [], |row| row.get(0))?;
        let data_version = data_version(conn)?;
        let me = i64::from_ne_bytes(*TaskId::random().as_str().as_bytes().first_chunk::<8>().unwrap_or(&[0; 8]))
            ^ i64::from(std::process::id());
        Ok(ChangeLog { me, last: last.unwrap_or(0), data_version, marks: VecDeque::new(), pending: None })
    }

    /// Reads what other processes committed since the last look: forgets those tasks in
    /// `hot` and returns their records as they stand now (a purged task is not among them),
    /// for the change feed. `signal` is the counter as loaded before looking: once caught up,
    /// `hot` is the file's as of that count.
    ///
    /// # Errors
    /// The driver's error; the cache is then forgotten whole (and the count not taken).
    pub(crate) fn catch_up(&mut self, conn: &Connection, prepared: &Prepared<'_>, hot: &Hot, signal: u32) -> rusqlite::Result<Vec<Arc<TaskRecord>>> {
        let read = self.read_foreign(conn, prepared, hot);
        match &read {
            Ok(_) => hot.synced_at(signal),
            Err(_) => hot.forget_all(),
        }
        read
    }

    fn read_foreign(&mut self, conn: &Connection, prepared: &Prepared<'_>, hot: &Hot) -> rusqlite::Result<Vec<Arc<TaskRecord>>> {
        let version = prepared.query_row(Sql::DataVersion, [], |row| row.get(0))?.unwrap_or(0);
        if version == self.data_version {
            return Ok(Vec::new());
        }
        self.data_version = version;
        let before = self.last;
        let mut stmt = conn.prepare_cached("SELECT seq, writer, ids FROM task_changes WHERE seq > ?1 ORDER BY seq")?;
        let rows = stmt.query_map([before], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get::<_, String>(2)?)))?;
        let mut ids = FastSet::default();
        let mut first = None;
        for row in rows {
            let (seq, writer, named) = row?;
            first.get_or_insert(seq);
            self.last = self.last.max(seq);
            if writer != self.me {
                ids.extend(named.split(' ').filter(|id| !id.is_empty()).map(|id| TaskId::from(id.to_owned())));
            }
        }
        drop(stmt);
        // Every batch of a writer of this build leaves a row, and rows are numbered without
        // holes (`max(seq) + 1`): no row, or a hole before the first, means something wrote
        // that the log does not describe (another program, or rows pruned before this writer
        // read them).
        let explained = first.is_some_and(|first| first == before + 1);
        if explained {
            hot.forget_others(ids.iter().cloned().map(Touch::Evict).collect());
        } else {
            hot.forget_all();
        }
        let mut read = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))?;
        let mut records = Vec::with_capacity(ids.len());
        for id in &ids {
            if let Some(record) = read.query_row([id.as_str()], read_record).optional()? {
                records.push(Arc::new(record));
            }
        }
        Ok(records)
    }

    /// Writes the batch's row naming the tasks `touched` changed (a row naming none if none:
    /// every batch leaves one, see [`ChangeLog::catch_up`]), inside the batch's transaction,
    /// and now and then prunes the rows older than [`KEEP_FOR`].
    ///
    /// # Errors
    /// The driver's error: the batch then fails, as any of its statements would make it.
    pub(crate) fn record<'t>(&mut self, conn: &Connection, prepared: &Prepared<'_>, touched: impl Iterator<Item = &'t Touch>) -> rusqlite::Result<()> {
        let mut ids = String::new();
        for touch in touched {
            let id = match touch {
                Touch::Put { record, .. } => &record.id,
                Touch::Evict(id) => id,
                Touch::Counted { .. } | Touch::Uncounted(_) => continue,
            };
            if !ids.is_empty() {
                ids.push(' ');
            }
            ids.push_str(id.as_str());
        }
        prepared.execute(Sql::LogChanges, params![self.me, ids])?;
        let seq = conn.last_insert_rowid();
        self.pending = Some(seq);
        let now = Instant::now();
        if self.marks.back().is_none_or(|(at, _)| now.duration_since(*at) >= MARK_EVERY) {
            self.marks.push_back((now, seq));
        }
        if let Some(&(at, upto)) = self.marks.front()
            && now.duration_since(at) >= KEEP_FOR
        {
            self.marks.pop_front();
            // The newest row always stays: numbers are `max(seq) + 1`, never reused.
            conn.prepare_cached("DELETE FROM task_changes WHERE seq <= ?1 AND seq < (SELECT max(seq) FROM task_changes)")?
                .execute([upto])?;
        }
        Ok(())
    }
}

impl ChangeLog {
    /// The batch whose row [`ChangeLog::record`] wrote ended: committed or not (a rolled
    /// back row's number is written again by the next batch, of any process).
    pub(crate) fn ended(&mut self, committed: bool) {
        if let Some(seq) = self.pending.take()
            && committed
        {
            self.last = self.last.max(seq);
        }
    }
}

/// `PRAGMA data_version` of `conn`: moves when another connection commits.
fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("PRAGMA data_version")?.query_row([], |row| row.get(0))
}
