//! What goes wrong with the file under the store, said plainly: the file is not an SQLite
//! database, another process holds it locked, it cannot be written, the disk is full; and
//! the lock that keeps builds that allow one server per file off a file others share.
//!
//! Any number of processes of this build serve one file ([`crate::peers`]). Builds before it
//! allowed one server per file and took an exclusive lock on a file beside the database
//! (`PATH-lock`) to say so: each store of this build holds a shared lock on the same file, so
//! an earlier build is refused while this one serves, and this one is refused while an
//! earlier build does (it would recover this one's running tasks as its own). The lock is the
//! operating system's (`flock`), so it goes with the process, also on SIGKILL.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Read;
use std::path::{Path, PathBuf};

use mcp_tasks_engine::StoreError;
use rusqlite::ErrorCode;

use crate::peers::beside;

/// The shared lock on a store file, held while the store is open.
#[derive(Debug)]
pub(crate) struct StoreLock {
    _file: File,
}

/// The lock file of the store at `path`: `PATH-lock`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    beside(path, "-lock")
}

impl StoreLock {
    /// Takes a shared lock on the lock file of the store at `path`.
    ///
    /// # Errors
    /// A [`StoreError::Backend`] saying that an earlier build serves the file (and which
    /// process, as it noted), or why the lock file cannot be made.
    pub(crate) fn take(path: &Path) -> Result<StoreLock, StoreError> {
        let lock_path = lock_path(path);
        let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock_path).map_err(|err| {
            problem(format!(
                "cannot create the lock file {} beside the task store ({err}); mcp-tasks needs to write in the \
                 store's directory",
                lock_path.display()
            ))
        })?;
        match file.try_lock_shared() {
            Ok(()) => Ok(StoreLock { _file: file }),
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() { "another process".to_owned() } else { format!("process {holder}") };
                Err(problem(format!(
                    "the task store {} is served by an earlier mcp-tasks build that allows one server per file ({who}); \
                     stop or upgrade that one, then start this one again",
                    path.display()
                )))
            }
            Err(TryLockError::Error(err)) => Err(problem(format!("cannot lock {} ({err})", lock_path.display()))),
        }
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
