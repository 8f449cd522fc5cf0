//! What goes wrong with the file under the store, said plainly: the file is not an SQLite
//! database, another process holds it locked, it cannot be written, the disk is full; and
//! the lock that keeps a second server off a store file another one serves.
//!
//! One server per file: the engine recovers every unfinished task of its store at start as
//! its own (and SQLite itself would let two processes share the file), so a second `serve`
//! on the same file would fail or re-run the first one's running tasks. The store therefore
//! takes an exclusive lock on a file beside the database (`PATH-lock`, like SQLite's own
//! `-wal` and `-shm`) and keeps it until it is closed; the lock is the operating system's
//! (`flock`), so it goes with the process, also on SIGKILL, and a stale lock file is no
//! obstacle. Within one process, stores opened on the same file share the lock: that is
//! the embedding program's own doing (tests reopen a file while the first store winds down).

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use mcp_tasks_engine::StoreError;
use rusqlite::ErrorCode;

/// The lock on a store file, held while the store is open (and by every clone).
#[derive(Clone, Debug)]
pub(crate) struct StoreLock {
    held: Arc<Held>,
}

/// One lock file held by this process, and whether more than one store of the process
/// has it open (then none of them may answer reads from its own memory: [`crate::hot`]).
#[derive(Debug)]
struct Held {
    _file: File,
    shared: AtomicBool,
}

/// The lock files this process holds, by canonical path (the lock goes when the last store
/// of the file drops its [`StoreLock`]).
static HELD: Mutex<Option<HashMap<PathBuf, Weak<Held>>>> = Mutex::new(None);

/// The lock file of the store at `path`: `PATH-lock`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-lock");
    PathBuf::from(name)
}

impl StoreLock {
    /// Takes the lock of the store at `path`, and notes this process's id in the lock file
    /// (for the message another server gets).
    ///
    /// # Errors
    /// A [`StoreError::Backend`] saying which process serves the file already, or why the
    /// lock file cannot be made.
    pub(crate) fn take(path: &Path) -> Result<StoreLock, StoreError> {
        let lock_path = lock_path(path);
        let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock_path).map_err(|err| {
            problem(format!(
                "cannot create the lock file {} beside the task store ({err}); mcp-tasks needs to write in the \
                 store's directory",
                lock_path.display()
            ))
        })?;
        let canonical = std::fs::canonicalize(&lock_path).unwrap_or_else(|_| lock_path.clone());
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        let held = held.get_or_insert_with(HashMap::new);
        if let Some(shared) = held.get(&canonical).and_then(Weak::upgrade) {
            shared.shared.store(true, Ordering::SeqCst);
            return Ok(StoreLock { held: shared });
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() { "another process".to_owned() } else { format!("process {holder}") };
                return Err(problem(format!(
                    "the task store {} is in use by another mcp-tasks server ({who}); one server per store file: stop \
                     that one, or give this one its own --store",
                    path.display()
                )));
            }
            Err(TryLockError::Error(err)) => {
                return Err(problem(format!("cannot lock {} ({err})", lock_path.display())));
            }
        }
        // Best effort: the pid only makes the message above more helpful.
        let _ = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| write!(file, "{}", std::process::id()));
        let file = Arc::new(Held { _file: file, shared: AtomicBool::new(false) });
        held.retain(|_, file| file.strong_count() > 0);
        held.insert(canonical, Arc::downgrade(&file));
        Ok(StoreLock { held: file })
    }

    /// Whether another store of this process has opened the same file since this one was
    /// (or before): then the file has more than one writer thread.
    pub(crate) fn is_shared(&self) -> bool {
        self.held.shared.load(Ordering::SeqCst)
    }
}

fn problem(message: String) -> StoreError {
    StoreError::Backend(message.into())
}

/// The SQLite error code behind `err`, if it is one.
fn code(err: &StoreError) -> Option<ErrorCode> {
    match err {
        StoreError::Backend(source) => source.downcast_ref::<rusqlite::Error>().and_then(rusqlite::Error::sqlite_error_code),
        _ => None,
    }
}

/// Whether `err` says the disk is full.
pub(crate) fn is_full(err: &StoreError) -> bool {
    matches!(err, StoreError::DiskFull(_)) || code(err) == Some(ErrorCode::DiskFull)
}

/// Whether a driver error says the disk is full.
pub(crate) fn is_full_sqlite(err: &rusqlite::Error) -> bool {
    err.sqlite_error_code() == Some(ErrorCode::DiskFull)
}

/// `err`, met while opening the store at `path`, said plainly where the cause is known.
pub(crate) fn at_open(path: &Path, err: StoreError) -> StoreError {
    let shown = path.display();
    let message = match code(&err) {
        Some(ErrorCode::NotADatabase) => format!(
            "{shown} is not an SQLite database (another kind of file, or a damaged one); it was left untouched. Point \
             --store at another path, or restore the file from a backup"
        ),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "{shown} is locked by another process (a program with a transaction open on it, such as an sqlite3 \
             shell); it was left untouched. End that transaction and start again"
        ),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => format!(
            "{shown} cannot be opened for writing ({err}); mcp-tasks needs to write the file and the -wal and -shm \
             files beside it: check the file's and the directory's permissions and that the filesystem is not \
             mounted read-only"
        ),
        Some(ErrorCode::DiskFull) => format!("the disk holding {shown} is full; free some space and start again"),
        _ => return err,
    };
    problem(message)
}
