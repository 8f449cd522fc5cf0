//! A SQLite VFS shim under mcp-tasks' store: the WAL frames of a commit reach the file in
//! one `pwrite` instead of two per frame.
//!
//! SQLite writes each WAL frame as two writes, its 24-byte header and then its page, and a
//! group commit of a few task writes is ten to forty frames: forty to eighty `pwrite64`
//! calls, then one `fdatasync`. On the virtual machines this project runs on a system call
//! is dear whatever it carries (a Python loop: two `pwrite`s per 4 KiB frame 9.4 µs a
//! frame, one `pwritev` of twenty frames 0.73 µs a frame): with this VFS a block lifecycle
//! makes 0.51 `pwrite64` calls instead of 6.57, and the writer thread's system time per
//! lifecycle fell by 3–5 µs (docs/benchmarks/10-tenth-round.md).
//!
//! This VFS is the default one (`unix`) with one change for WAL files: consecutive writes
//! are kept in memory and written as one write (of at most [`MAX_WRITE`] bytes, which is
//! what the `unix` VFS takes), before anything that must see them:
//! - `xSync` (so a commit's frames are on disk before SQLite's sync returns; under
//!   `synchronous=FULL` SQLite syncs the WAL after a commit's frames and before it publishes
//!   them in the WAL index, so no other connection can read a frame still in memory),
//! - `xRead`, `xFileSize`, `xTruncate`, `xFileControl` and `xClose`,
//! - a write that does not follow on (an overwrite inside the kept bytes is made there),
//! - and [`MAX_KEPT`] bytes kept.
//!
//! Only for connections whose commits sync the WAL (`synchronous=FULL`): under `NORMAL`
//! SQLite publishes a commit without a sync, and a reader could look for frames that are
//! still in memory. Every other file (the database, its `-shm`) is the `unix` VFS's own.
//!
//! Why by hand: a VFS is a table of C callbacks, and no crate wraps the default one for a
//! change this small (`sqlite-vfs` and `sqlite-plugin` implement whole file systems, without
//! WAL's shared memory).
//!
//! Beside it, [`signal`]: the commit counter the processes on one store file share (a shared
//! mapping and a futex). This crate holds the project's `unsafe` code of its own, and only
//! this crate.
#![allow(unsafe_code)]

pub mod signal;

use std::ffi::{CStr, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::ffi;

/// The name the VFS is registered under (for `Connection::open_with_flags_and_vfs`).
pub const NAME: &str = "mcp-tasks-wal";
const NAME_C: &CStr = c"mcp-tasks-wal";

/// Bytes kept in memory at most before they are written (a group commit of 512 writes is
/// well under it: ~1,300 frames of 4 KiB would be 5.4 MB).
pub const MAX_KEPT: usize = 8 * 1024 * 1024;

/// The most the `unix` VFS writes in one call (its `seekAndWriteFd` takes at most
/// `0x1ffff` bytes): what is kept goes out in writes of this size, 30 frames of 4 KiB each,
/// more than a group commit of the usual size holds.
pub const MAX_WRITE: usize = 30 * (4096 + 24);

/// The buffer's capacity kept between commits (a commit of ~60 frames); a larger one is
/// given back after its write.
const KEEP_CAPACITY: usize = 256 * 1024;

/// What the VFS has done since the process started, over every WAL file it opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Writes SQLite asked for.
    pub asked: u64,
    /// Writes made to the files.
    pub written: u64,
}

static ASKED: AtomicU64 = AtomicU64::new(0);
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// The counts so far.
pub fn stats() -> Stats {
    Stats {
        asked: ASKED.load(Ordering::Relaxed),
        written: WRITTEN.load(Ordering::Relaxed),
    }
}

/// Registers the VFS (once per process; not as the default) and returns its name; `Err`
/// with SQLite's result code if SQLite has no default VFS or refused it.
pub fn register() -> Result<&'static str, c_int> {
    static REGISTERED: OnceLock<Result<(), c_int>> = OnceLock::new();
    (*REGISTERED.get_or_init(register_once)).map(|()| NAME)
}

fn register_once() -> Result<(), c_int> {
    // SAFETY: sqlite3_initialize and sqlite3_vfs_find may be called from any thread; the
    // default VFS they return lives as long as the process.
    let real = unsafe {
        let rc = ffi::sqlite3_initialize();
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        ffi::sqlite3_vfs_find(ptr::null())
    };
    if real.is_null() {
        return Err(ffi::SQLITE_ERROR);
    }
    // SAFETY: `real` is a registered VFS, valid for the process's life; we copy it (its
    // functions and sizes) and change the name, the open and the file size.
    let mut vfs = unsafe { ptr::read(real) };
    let real_size = usize::try_from(vfs.szOsFile).map_err(|_| ffi::SQLITE_ERROR)?;
    vfs.szOsFile = c_int::try_from(REAL_AT + real_size).map_err(|_| ffi::SQLITE_ERROR)?;
    vfs.pNext = ptr::null_mut();
    vfs.zName = NAME_C.as_ptr();
    vfs.pAppData = real.cast::<c_void>();
    vfs.xOpen = Some(open);
    // Lives as long as the process, as a registered VFS must.
    let vfs = Box::into_raw(Box::new(vfs));
    // SAFETY: `vfs` is a complete VFS that is never freed.
    let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

/// A WAL file: the `sqlite3_file` SQLite sees, with our methods, then the `unix` VFS's own
/// file at [`REAL_AT`] in the same allocation (SQLite allocates `szOsFile` bytes).
#[repr(C)]
struct WalFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    kept: *mut Kept,
}

/// Where the real file starts in the allocation: after ours, 8-aligned.
const REAL_AT: usize = std::mem::size_of::<WalFile>().next_multiple_of(8);

/// The bytes written but not yet passed on: `bytes` belong at offset `at`.
#[derive(Default)]
struct Kept {
    at: i64,
    bytes: Vec<u8>,
}

static WAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite passes our registered VFS, whose pAppData is the `unix` VFS, and a
    // `file` of our szOsFile bytes (ours, then the real file's at REAL_AT).
    unsafe {
        let real_vfs = (*vfs).pAppData.cast::<ffi::sqlite3_vfs>();
        let Some(real_open) = (*real_vfs).xOpen else {
            return ffi::SQLITE_ERROR;
        };
        if flags & ffi::SQLITE_OPEN_WAL == 0 {
            // Not a WAL: the file is the real VFS's alone (our allocation is larger than it
            // needs, which it does not mind).
            return real_open(real_vfs, name, file, flags, out_flags);
        }
        let wal = file.cast::<WalFile>();
        (*wal).base.pMethods = ptr::null();
        let real = file.cast::<u8>().add(REAL_AT).cast::<ffi::sqlite3_file>();
        (*real).pMethods = ptr::null();
        let rc = real_open(real_vfs, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            // A failed open leaves pMethods NULL (SQLite then calls no xClose); the real
            // VFS closes what it opened itself.
            return rc;
        }
        (*wal).real = real;
        (*wal).kept = Box::into_raw(Box::new(Kept::default()));
        (*wal).base.pMethods = &raw const WAL_METHODS;
        ffi::SQLITE_OK
    }
}

/// The real file and what is kept for it.
///
/// # Safety
/// `file` is a WAL file opened by [`open`] and not yet closed, used by one thread at a time
/// (SQLite's connection mutex).
unsafe fn parts<'a>(
    file: *mut ffi::sqlite3_file,
) -> (
    *mut ffi::sqlite3_file,
    &'a ffi::sqlite3_io_methods,
    &'a mut Kept,
) {
    // SAFETY: as the function's contract says.
    unsafe {
        let wal = file.cast::<WalFile>();
        let real = (*wal).real;
        (real, &*(*real).pMethods, &mut *(*wal).kept)
    }
}

/// Writes what is kept (one write) and forgets it, written or not: a failed write fails
/// the call that asked for it, and SQLite then rolls the transaction back.
///
/// # Safety
/// As [`parts`].
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as the function's contract says.
    unsafe {
        let (real, methods, kept) = parts(file);
        if kept.bytes.is_empty() {
            return ffi::SQLITE_OK;
        }
        let Some(real_write) = methods.xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let mut rc = ffi::SQLITE_OK;
        let mut at = kept.at;
        for chunk in kept.bytes.chunks(MAX_WRITE) {
            // At most MAX_WRITE bytes: fits a c_int.
            let len = c_int::try_from(chunk.len()).unwrap_or(c_int::MAX);
            rc = real_write(real, chunk.as_ptr().cast::<c_void>(), len, at);
            WRITTEN.fetch_add(1, Ordering::Relaxed);
            if rc != ffi::SQLITE_OK {
                break;
            }
            at += i64::from(len);
        }
        kept.bytes.clear();
        // A large transaction's buffer is not kept for the small ones that follow.
        if kept.bytes.capacity() > KEEP_CAPACITY {
            kept.bytes.shrink_to(KEEP_CAPACITY);
        }
        rc
    }
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    ASKED.fetch_add(1, Ordering::Relaxed);
    let Ok(len) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: SQLite passes one of our WAL files and `amount` readable bytes at `data`.
    unsafe {
        let (_, _, kept) = parts(file);
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), len);
        let end = kept.at + kept.bytes.len() as i64;
        if !kept.bytes.is_empty() && offset >= kept.at && offset + len as i64 <= end {
            // An overwrite of kept bytes (SQLite rewrites a frame whose page changed again
            // within the transaction): made in memory.
            let from = (offset - kept.at) as usize;
            kept.bytes[from..from + len].copy_from_slice(bytes);
            return ffi::SQLITE_OK;
        }
        if !kept.bytes.is_empty() && offset != end {
            let rc = flush(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        let (_, _, kept) = parts(file);
        if kept.bytes.is_empty() {
            kept.at = offset;
        }
        kept.bytes.extend_from_slice(bytes);
        if kept.bytes.len() >= MAX_KEPT {
            return flush(file);
        }
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes one of our WAL files once; it is not used after this.
    unsafe {
        let flushed = flush(file);
        let (real, methods, _) = parts(file);
        let closed = methods
            .xClose
            .map_or(ffi::SQLITE_OK, |real_close| real_close(real));
        let wal = file.cast::<WalFile>();
        drop(Box::from_raw((*wal).kept));
        (*wal).kept = ptr::null_mut();
        (*wal).base.pMethods = ptr::null();
        if flushed != ffi::SQLITE_OK {
            flushed
        } else {
            closed
        }
    }
}

/// Defines a method that writes what is kept, then calls the real file's.
macro_rules! flushed_then {
    ($name:ident, $field:ident ( $($arg:ident : $ty:ty),* )) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: SQLite passes one of our open WAL files and the method's arguments,
            // which go to the real file's method unchanged.
            unsafe {
                let rc = flush(file);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                let (real, methods, _) = parts(file);
                match methods.$field {
                    Some(method) => method(real $(, $arg)*),
                    None => ffi::SQLITE_NOTFOUND,
                }
            }
        }
    };
}

/// Defines a method that calls the real file's as it is.
macro_rules! passed_on {
    ($name:ident, $field:ident ( $($arg:ident : $ty:ty),* ), $missing:expr) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: SQLite passes one of our open WAL files and the method's arguments,
            // which go to the real file's method unchanged.
            unsafe {
                let (real, methods, _) = parts(file);
                match methods.$field {
                    Some(method) => method(real $(, $arg)*),
                    None => $missing,
                }
            }
        }
    };
}

flushed_then!(read, xRead(out: *mut c_void, amount: c_int, offset: i64));
flushed_then!(truncate, xTruncate(size: i64));
flushed_then!(sync, xSync(flags: c_int));
flushed_then!(file_size, xFileSize(size: *mut i64));
flushed_then!(file_control, xFileControl(op: c_int, arg: *mut c_void));
passed_on!(lock, xLock(level: c_int), ffi::SQLITE_OK);
passed_on!(unlock, xUnlock(level: c_int), ffi::SQLITE_OK);
passed_on!(check_reserved_lock, xCheckReservedLock(out: *mut c_int), ffi::SQLITE_OK);
passed_on!(sector_size, xSectorSize(), 4096);
passed_on!(device_characteristics, xDeviceCharacteristics(), 0);

#[cfg(test)]
mod tests;
