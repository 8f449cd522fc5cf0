//! Faults of the SQLite store file, with the real binary (issue "reliability", item 3): a
//! file that is not SQLite, one locked by another process, a read-only filesystem, and a
//! full disk (a small
//! tmpfs: creation refused with an error naming the cause, nothing stored lost or damaged,
//! service back by itself once space is freed). The tmpfs cases need root (`mount`): they
//! skip without it, except under `CI=true`, where they fail.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::json;

use crate::harness::{Server, Workdir, create_task};

/// `mcp-tasks serve --stdio` on `store`, run to its end with no input: what it printed.
fn serve_once(work: &Workdir, store: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--stdio", "--config"])
        .arg(work.config())
        .arg("--store")
        .arg(store)
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-tasks")
}

fn refused_with(output: &Output, words: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "it must not serve: {stderr}");
    for word in words {
        assert!(stderr.contains(word), "missing {word:?} in: {stderr}");
    }
    stderr
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_with_a_clear_message_and_left_untouched() {
    let work = Workdir::new();
    let store = work.path("notes.sqlite3");
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&store, &bytes).unwrap();
    let output = serve_once(&work, &store);
    refused_with(&output, &["is not an SQLite database", "left untouched", "--store"]);
    assert!(std::fs::read(&store).unwrap() == bytes, "the file is untouched");
}

#[test]
fn a_store_locked_by_another_process_is_refused_with_a_clear_message_and_left_untouched() {
    let work = Workdir::new();
    let store = work.store();
    {
        let mut server = work.start(); // a valid store first
        server.initialize();
    }
    // Another program (Python's sqlite3) holds an exclusive transaction on the file.
    let mut holder = Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('begin exclusive'); print('locked', flush=True); sys.stdin.read()"])
        .arg(&store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "locked");
    let before = std::fs::read(&store).unwrap();
    let output = serve_once(&work, &store);
    refused_with(&output, &["is locked by another process", "left untouched"]);
    assert!(std::fs::read(&store).unwrap() == before, "the file is untouched");
    drop(holder.stdin.take());
    holder.wait().unwrap();
    // Once the other program lets go, the store serves again.
    let mut server = work.start();
    server.initialize();
}

/// A tmpfs of `size` mounted for the test, unmounted when dropped; `None` (and a note) when
/// this process may not mount, which fails the test under `CI=true`.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !mounted {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: this test needs to mount a tmpfs (run as root)");
            eprintln!("skipped: cannot mount a tmpfs here (needs root)");
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn remount(&self, options: &str) {
        let status = Command::new("mount").args(["-o", &format!("remount,{options}")]).arg(self.dir.path()).status().unwrap();
        assert!(status.success(), "remount {options}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

#[test]
fn a_store_on_a_read_only_filesystem_is_refused_with_a_clear_message_and_left_untouched() {
    let Some(disk) = Tmpfs::mount("8m") else { return };
    let work = Workdir::new();
    let store = disk.path("tasks.sqlite3");
    {
        let mut server = Server::start(&work.config(), &store);
        server.initialize();
    }
    let before = std::fs::read(&store).unwrap();
    disk.remount("ro");
    let output = serve_once(&work, &store);
    refused_with(&output, &["cannot"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.to_lowercase().contains("read-only"), "names the cause: {stderr}");
    assert_eq!(stderr.matches("Read-only file system").count(), 1, "said once: {stderr}");
    assert!(std::fs::read(&store).unwrap() == before, "the file is untouched");
}

/// Fills the filesystem holding `path` with a file there, until writing fails.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).unwrap();
    let block = vec![0u8; 64 * 1024];
    while file.write_all(&block).is_ok() {}
    let _ = file.sync_all();
}

/// A store on a 16 MiB disk grows its WAL ahead at open (4.6 MB), so the full disk below is
/// noticed by the store's own watch of the free space: commits into the WAL's own space
/// would not fail.
#[test]
fn a_full_disk_refuses_new_tasks_naming_the_cause_keeps_what_is_stored_and_recovers_when_space_is_freed() {
    full_disk_is_refused_and_recovered("16m", true);
}

/// On an 8 MiB disk there is no room to grow the WAL ahead: a full disk is SQLite's error
/// when a commit appends to the WAL.
#[test]
fn a_full_disk_refuses_new_tasks_also_when_the_wal_was_too_big_to_grow_ahead() {
    full_disk_is_refused_and_recovered("8m", false);
}

fn full_disk_is_refused_and_recovered(size: &str, wal_grown: bool) {
    let Some(disk) = Tmpfs::mount(size) else { return };
    let work = Workdir::new();
    let store = disk.path("tasks.sqlite3");
    let mut server = Server::start(&work.config(), &store);
    server.initialize();
    let kept = create_task(&mut server, "echo", json!({"text": "kept"}));
    let wal = std::fs::metadata(disk.path("tasks.sqlite3-wal")).unwrap().len();
    assert_eq!(wal > 4_000_000, wal_grown, "the WAL is {wal} bytes on a {size} disk");
    assert_eq!(server.call("tasks/result", json!({"taskId": kept}))["content"][0]["text"], "kept");

    fill(&disk.path("filler"));
    let mut refused = 0;
    for n in 0..20 {
        let answer = server.request("tools/call", json!({"name": "echo", "arguments": {"text": format!("n{n}")}, "task": {}}));
        let Some(error) = answer.get("error") else { continue };
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("out of disk space") && message.contains("nothing was stored"), "{error}");
        assert_eq!(error["data"]["cause"], "store_disk_full", "{error}");
        refused += 1;
    }
    assert!(refused > 0, "a full disk refused no creation");
    // Reads go on while the disk is full, and what was stored is intact.
    assert_eq!(server.call("tasks/result", json!({"taskId": kept}))["content"][0]["text"], "kept");

    std::fs::remove_file(disk.path("filler")).unwrap();
    // No restart: the next creation works.
    let after = create_task(&mut server, "echo", json!({"text": "after"}));
    assert_eq!(server.call("tasks/result", json!({"taskId": after}))["content"][0]["text"], "after");
    drop(server);
    let check = Command::new("python3")
        .args(["-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('pragma integrity_check').fetchone()[0])"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "ok", "the file is not damaged");
}
