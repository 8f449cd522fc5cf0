//! Many processes on one store file: how each learns, promptly, that another one wrote, and
//! whether the node (process) that holds a claim is still alive.
//!
//! - [`Signal`]: a counter in a small file mapped shared by every process on the store
//!   (`PATH-signal`). Each writer thread adds one after every batch it commits, before it
//!   answers the batch's callers, and wakes whoever sleeps on it (a `futex` on the shared
//!   mapping: the kernel's wait queue across processes). A process's watcher thread sleeps on
//!   it and pokes its own writer thread when it moves; the writer then reads the change log
//!   (`task_changes`) past the last row it saw. The counter also tells readers whether the
//!   cache of the tasks written last ([`crate::hot`]) is still the file's: it is, while the
//!   counter stands where this process's writer last looked ([`Hot`](crate::hot::Hot)).
//!   The backstop: the watcher wakes at least every [`BACKSTOP`] and the writer compares
//!   `PRAGMA data_version` (which moves on any other connection's commit, a process killed
//!   between its commit and its signal, or an `sqlite3` shell, included).
//! - [`Nodes`]: each node that holds claims on the file holds an exclusive `flock` on its own
//!   file in `PATH-nodes/`, taken before its first claim is written and held until its store
//!   handle closes. The kernel drops the lock when the process dies, however it dies (-9
//!   included), so a claim whose node's file is not locked is lapsed at once, whatever its
//!   lease says: the SQL function `node_gone(node)` (registered on every connection). A node
//!   restarted on the same file, or any other process, takes over a killed node's tasks on
//!   its next rescuer pass instead of a lease later. The lease still holds for a process that
//!   is alive but stuck (stopped, or starved of the write lock).
//!
//! The signal's mapping and futex are `unsafe` code, so they live in the crate that holds the
//! project's unsafe code (`mcp_tasks_sqlite_vfs::signal`).

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;

use mcp_tasks_engine::StoreError;

pub(crate) use mcp_tasks_sqlite_vfs::signal::Signal;

/// Maps the signal file of the store at `path` (`PATH-signal`).
///
/// # Errors
/// A [`StoreError::Backend`] saying which file could not be made or mapped.
pub(crate) fn signal(path: &Path) -> Result<Signal, StoreError> {
    Signal::open(&beside(path, "-signal")).map_err(|err| StoreError::Backend(err.to_string().into()))
}

/// The longest a watcher sleeps without looking: the backstop for a change whose signal never
/// came (its process was killed between its commit and its signal).
pub(crate) const BACKSTOP: Duration = Duration::from_millis(500);

/// The path of the file beside the store named `PATH-suffix`.
pub(crate) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The nodes of one store handle, and what it found out about other ones.
pub(crate) struct Nodes {
    dir: PathBuf,
    state: Mutex<NodeState>,
}

#[derive(Default)]
struct NodeState {
    /// The locked files of the nodes whose claims this handle writes.
    held: HashMap<String, File>,
    /// Nodes found gone (a node never comes back: its id is fresh per process).
    gone: HashSet<String>,
    /// Nodes found alive, and when: not looked at again for [`ALIVE_FOR`] (a rescuer pass
    /// asks about every running task's node).
    alive: HashMap<String, Instant>,
}

/// How long a node found alive is taken to be.
const ALIVE_FOR: Duration = Duration::from_millis(250);

impl Nodes {
    /// The nodes of the store at `path` (`PATH-nodes/`).
    pub(crate) fn new(path: &Path) -> Arc<Nodes> {
        Arc::new(Nodes { dir: beside(path, "-nodes"), state: Mutex::default() })
    }

    fn state(&self) -> MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The file of `node`: its id where the id is a plain name, else the id in hex.
    fn file_of(&self, node: &str) -> PathBuf {
        let plain = !node.is_empty()
            && node.len() <= 128
            && node.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
        if plain {
            return self.dir.join(node);
        }
        let hex: String = node.bytes().take(100).map(|byte| format!("{byte:02x}")).collect();
        self.dir.join(format!("x{hex}"))
    }

    /// Makes sure this handle holds the lock of `node` (before a claim of it is written).
    ///
    /// # Errors
    /// A [`StoreError::Backend`] if the node's file cannot be made or locked.
    pub(crate) fn hold(&self, node: &str) -> Result<(), StoreError> {
        let mut state = self.state();
        if state.held.contains_key(node) {
            return Ok(());
        }
        let at = self.file_of(node);
        let failed = |err: String| {
            StoreError::Backend(
                format!("cannot lock {} beside the task store ({err}); mcp-tasks needs to write in the store's directory", at.display())
                    .into(),
            )
        };
        fs::create_dir_all(&self.dir).map_err(|err| failed(err.to_string()))?;
        let file = OpenOptions::new().write(true).create(true).truncate(false).open(&at).map_err(|err| failed(err.to_string()))?;
        match file.try_lock() {
            Ok(()) => {
                state.held.insert(node.to_owned(), file);
                Ok(())
            }
            // Another handle on the file writes claims of this node too (tests do): it holds
            // the lock, and the node lives as long as that handle.
            Err(TryLockError::WouldBlock) => Ok(()),
            Err(TryLockError::Error(err)) => Err(failed(err.to_string())),
        }
    }

    /// Whether `node`'s process is gone: its file is missing or nobody holds its lock. A gone
    /// node's file is removed by whoever finds it gone.
    pub(crate) fn is_gone(&self, node: &str) -> bool {
        {
            let state = self.state();
            if state.held.contains_key(node) {
                return false;
            }
            if state.gone.contains(node) {
                return true;
            }
            if state.alive.get(node).is_some_and(|at| at.elapsed() < ALIVE_FOR) {
                return false;
            }
        }
        let at = self.file_of(node);
        let gone = match OpenOptions::new().write(true).open(&at) {
            Err(err) => err.kind() == io::ErrorKind::NotFound,
            Ok(file) => match file.try_lock() {
                Ok(()) => {
                    // Locked by us now: nobody else can come to hold it, and its node is gone.
                    let _ = fs::remove_file(&at);
                    true
                }
                Err(_) => false,
            },
        };
        let mut state = self.state();
        if gone {
            if state.gone.len() >= 4096 {
                state.gone.clear();
            }
            state.alive.remove(node);
            state.gone.insert(node.to_owned());
        } else {
            if state.alive.len() >= 4096 {
                state.alive.clear();
            }
            state.alive.insert(node.to_owned(), Instant::now());
        }
        gone
    }

    /// Registers `node_gone(node)` on `conn`: 1 if the node's process is gone, else 0 (and 0
    /// for NULL).
    ///
    /// # Errors
    /// [`StoreError::Backend`] if SQLite refuses the function.
    pub(crate) fn register(self: &Arc<Nodes>, conn: &Connection) -> Result<(), StoreError> {
        let nodes = Arc::clone(self);
        conn.create_scalar_function("node_gone", 1, FunctionFlags::SQLITE_UTF8, move |ctx| {
            let node: Option<String> = ctx.get(0)?;
            Ok(i64::from(node.is_some_and(|node| nodes.is_gone(&node))))
        })
        .map_err(StoreError::backend)
    }
}
