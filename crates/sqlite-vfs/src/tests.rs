//! The shim against real SQLite files: what a commit writes, what other connections and a
//! copy of the files (a crash) see, and the cases where SQLite reads its own WAL back.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OpenFlags, params};

use super::*;

/// The counts are the process's: tests that compare them run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

fn writer(path: &Path) -> Connection {
    let conn = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), register().unwrap())
        .unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=0;
         CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k TEXT NOT NULL, v BLOB NOT NULL);
         CREATE INDEX IF NOT EXISTS t_by_k ON t (k);",
    )
    .unwrap();
    conn
}

fn insert(conn: &Connection, from: i64, n: i64, size: usize) {
    let tx = conn.unchecked_transaction().unwrap();
    for id in from..from + n {
        tx.execute(
            "INSERT INTO t (id, k, v) VALUES (?1, ?2, ?3)",
            params![id, format!("key-{id:08}"), vec![(id % 251) as u8; size]],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

fn count(conn: &Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM t", [], |row| row.get(0))
        .unwrap()
}

/// The bytes of every row's blob.
fn total_size(conn: &Connection) -> i64 {
    conn.query_row("SELECT sum(length(v)) FROM t", [], |row| row.get(0))
        .unwrap()
}

/// The file at `path` opened again with SQLite's own VFS, once `PRAGMA integrity_check`
/// finds it whole.
fn reopened_intact(path: &Path) -> Connection {
    let plain = Connection::open(path).unwrap();
    let check: String = plain
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    plain
}

#[test]
fn a_commits_frames_reach_the_wal_in_one_write() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let conn = writer(&dir.path().join("a.db"));
    insert(&conn, 0, 1, 10);
    let before = stats();
    // 200 rows of 200 bytes over a table and an index: a few dozen pages, each a frame of
    // two writes.
    insert(&conn, 1, 200, 200);
    let after = stats();
    let asked = after.asked - before.asked;
    let written = after.written - before.written;
    assert!(asked >= 20, "SQLite asked for {asked} writes");
    assert_eq!(written, 1, "{asked} writes asked for, {written} made");
    // And the same in the file, reopened with SQLite's own VFS.
    drop(conn);
    assert_eq!(count(&reopened_intact(&dir.path().join("a.db"))), 201);
}

#[test]
fn every_commit_is_seen_by_another_connection_as_soon_as_it_returns() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.db");
    let conn = writer(&path);
    // A reader on SQLite's own VFS, as the store's read connections are not: it reads the
    // WAL file itself, so a frame still kept in memory would be garbage to it.
    let reader = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    for round in 0..300 {
        insert(&conn, round * 3, 3, 100 + (round as usize % 7) * 300);
        assert_eq!(count(&reader), round * 3 + 3, "after commit {round}");
        let sum: i64 = reader
            .query_row(
                "SELECT sum(length(v)) FROM t WHERE id >= ?1",
                [round * 3],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(sum, 3 * (100 + (round % 7) * 300));
    }
}

#[test]
fn a_copy_of_the_files_taken_after_a_commit_holds_it() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let conn = writer(&path);
    for round in 0..20 {
        insert(&conn, round * 10, 10, 500);
        // What a crash right after the commit leaves: the two files as they are.
        let copy = dir.path().join(format!("copy{round}.db"));
        std::fs::copy(&path, &copy).unwrap();
        std::fs::copy(
            dir.path().join("c.db-wal"),
            dir.path().join(format!("copy{round}.db-wal")),
        )
        .unwrap();
        let recovered = Connection::open(&copy).unwrap();
        assert_eq!(
            count(&recovered),
            (round + 1) * 10,
            "the copy after commit {round}"
        );
    }
}

#[test]
fn a_transaction_larger_than_the_cache_reads_its_own_frames_back() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let conn = writer(&path);
    // Ten pages of cache: the transaction spills frames to the WAL before its commit, and
    // reads them back from the WAL when it touches those pages again.
    conn.execute_batch("PRAGMA cache_size=10").unwrap();
    insert(&conn, 0, 3000, 700);
    conn.execute("UPDATE t SET v = zeroblob(900) WHERE id % 3 = 0", [])
        .unwrap();
    assert_eq!(total_size(&conn), 1000 * 900 + 2000 * 700);
    drop(conn);
    assert_eq!(total_size(&reopened_intact(&path)), 1000 * 900 + 2000 * 700);
}

#[test]
fn checkpoints_and_a_restarted_wal_keep_every_row() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.db");
    let conn = writer(&path);
    for round in 0..60 {
        insert(&conn, round * 20, 20, 300);
        if round % 7 == 6 {
            // Copies the WAL into the database; the next write starts the WAL over, its
            // header first, at offset 0.
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .unwrap();
        }
    }
    let reader = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    assert_eq!(count(&reader), 1200);
    drop(reader);
    drop(conn);
    assert_eq!(count(&reopened_intact(&path)), 1200);
}

#[test]
fn other_files_are_the_default_vfs_own() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let conn = writer(&dir.path().join("f.db"));
    insert(&conn, 0, 1, 10);
    let before = stats();
    // A rollback journal's writes (a database not in WAL mode) do not pass through the shim.
    let other =
        Connection::open_with_flags_and_vfs(dir.path().join("g.db"), OpenFlags::default(), NAME)
            .unwrap();
    other
        .execute_batch("CREATE TABLE u (x); INSERT INTO u VALUES (1), (2);")
        .unwrap();
    assert_eq!(stats().asked, before.asked);
    let n: i64 = other
        .query_row("SELECT count(*) FROM u", [], |row| row.get(0))
        .unwrap();
    assert_eq!(n, 2);
}
