//! The commit counter shared by every process on one mcp-tasks SQLite store file
//! (`PATH-signal`): a word in a small file mapped shared by each process, that writers count
//! their commits on and watchers sleep on (`futex` on the shared mapping: the kernel's wait
//! queue across processes). How the store uses it: `mcp_tasks_sqlite`'s `peers` module.
//!
//! Why by hand: no crate of the tree shares a wait queue across processes (`std`'s and
//! `parking_lot`'s are private to a process), and the mapping and futex are a few lines on
//! `rustix`.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rustix::mm::{MapFlags, ProtFlags};
use rustix::thread::futex;

/// The size of the signal file and its mapping (one page: the counter is its first word, the
/// number of sleepers its second).
const SIGNAL_BYTES: usize = 4096;

/// The commit counter shared by every process on one store file.
pub struct Signal {
    word: NonNull<AtomicU32>,
    _file: File,
}

// SAFETY: the mapping is only ever read and written through `AtomicU32`, which is safe to
// share between threads (and processes); it lives as long as `Signal`.
unsafe impl Send for Signal {}
// SAFETY: as above.
unsafe impl Sync for Signal {}

impl Signal {
    /// Maps the signal file at `at` (made, one page of zeros, if missing).
    ///
    /// # Errors
    /// An error saying which file could not be made or mapped.
    pub fn open(at: &Path) -> io::Result<Signal> {
        let failed = |err: io::Error| {
            io::Error::new(
                err.kind(),
                format!(
                    "cannot map {} beside the task store ({err}); mcp-tasks needs to write in the store's directory",
                    at.display()
                ),
            )
        };
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(at).map_err(failed)?;
        // Never shortened: another process may have it mapped.
        if file.metadata().map_err(failed)?.len() < SIGNAL_BYTES as u64 {
            file.set_len(SIGNAL_BYTES as u64).map_err(failed)?;
        }
        // SAFETY: a fresh shared mapping of a file at least `SIGNAL_BYTES` long; nothing else in
        // this process refers to the address, and it is unmapped only in `drop`.
        let mapped = unsafe {
            rustix::mm::mmap(std::ptr::null_mut(), SIGNAL_BYTES, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, &file, 0)
        }
        .map_err(|err| failed(err.into()))?;
        let word = NonNull::new(mapped.cast::<AtomicU32>()).ok_or_else(|| failed(io::Error::other("mmap gave a null address")))?;
        Ok(Signal { word, _file: file })
    }

    fn word(&self) -> &AtomicU32 {
        // SAFETY: page-aligned, so aligned for `AtomicU32`; mapped while `self` lives.
        unsafe { self.word.as_ref() }
    }

    fn sleepers(&self) -> &AtomicU32 {
        // SAFETY: the second `u32` of the mapped page (aligned, in bounds); mapped while
        // `self` lives.
        unsafe { self.word.add(1).as_ref() }
    }

    /// The counter now.
    pub fn load(&self) -> u32 {
        self.word().load(Ordering::SeqCst)
    }

    /// Counts one commit; the count before. Wakes the processes sleeping on the counter
    /// ([`Sleeper::wait`]) unless the only sleeper may be this process's own
    /// (`own_asleep`, which it says while it sleeps, see [`Signal::sleeper`]): a process
    /// alone on its file makes no system call here.
    pub fn bump(&self, own_asleep: bool) -> u32 {
        let before = self.word().fetch_add(1, Ordering::SeqCst);
        if self.sleepers().load(Ordering::SeqCst) > u32::from(own_asleep) {
            // Not `PRIVATE`: the sleepers are in other processes. A failed wake costs only the
            // promptness: the sleepers look again within their timeout.
            let _ = futex::wake(self.word(), futex::Flags::empty(), i32::MAX as u32);
        }
        before
    }

    /// Counts this thread among the sleepers until the [`Sleeper`] is dropped. Take it before
    /// loading the count to sleep on: a commit counted after it either moves the count before
    /// it is loaded, or sees the sleeper and wakes it. A process that says its own sleeper is
    /// asleep (to [`Signal::bump`]) says so after taking it and stops saying so before
    /// dropping it. A process killed while asleep leaves its count behind: the others then
    /// wake for every commit, as if it were there.
    pub fn sleeper(&self) -> Sleeper<'_> {
        self.sleepers().fetch_add(1, Ordering::SeqCst);
        Sleeper { signal: self }
    }
}

/// A thread counted among the sleepers of a [`Signal`] ([`Signal::sleeper`]).
pub struct Sleeper<'a> {
    signal: &'a Signal,
}

impl Sleeper<'_> {
    /// Sleeps until the counter is no longer `seen`, or for at most `timeout` (or not at
    /// all if it moved already).
    pub fn wait(&self, seen: u32, timeout: Duration) {
        let timeout = futex::Timespec {
            tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        // EAGAIN (it moved), EINTR and a timeout all mean: look again.
        let _ = futex::wait(self.signal.word(), futex::Flags::empty(), seen, Some(&timeout));
    }
}

impl Drop for Sleeper<'_> {
    fn drop(&mut self) {
        self.signal.sleepers().fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        // SAFETY: mapped in `open` with this length, and not used after this.
        let _ = unsafe { rustix::mm::munmap(self.word.as_ptr().cast(), SIGNAL_BYTES) };
    }
}

