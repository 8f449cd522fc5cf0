//! The regression corpus of the fuzz targets, run as ordinary tests: every file under
//! `fuzz/corpus/TARGET/` (seeds written by hand, and inputs the fuzzer found worth keeping or
//! that once crashed) goes through the target's entry point. Any panic fails the test, and
//! names the file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("the corpus of {target} ({}) is missing: {err}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the corpus of {target} is empty");
    files
}

fn run(target: &str, entry: fn(&[u8])) {
    for file in corpus(target) {
        let data = std::fs::read(&file).unwrap();
        let outcome = std::panic::catch_unwind(|| entry(&data));
        assert!(outcome.is_ok(), "{target}: {} crashed the entry point", file.display());
    }
}

#[test]
fn jsonrpc_corpus() {
    run("jsonrpc", mcp_tasks_fuzzing::jsonrpc);
}

#[test]
fn config_corpus() {
    run("config", mcp_tasks_fuzzing::config);
}

#[test]
fn sse_corpus() {
    run("sse", mcp_tasks_fuzzing::sse);
}

#[test]
fn line_protocol_corpus() {
    run("line_protocol", mcp_tasks_fuzzing::line_protocol);
}

#[test]
fn legacy_session_corpus() {
    run("legacy_session", mcp_tasks_fuzzing::legacy_session);
}

#[test]
fn modern_requests_corpus() {
    run("modern_requests", mcp_tasks_fuzzing::modern_requests);
}

#[test]
fn the_sse_property_holds_for_cuts_inside_crlf_and_utf8() {
    // The property the sse target checks holds on a stream cut inside a CRLF pair and a
    // multi-byte character: were it broken, this would panic.
    mcp_tasks_fuzzing::sse(b"\x03\x05\x01\x02id: 1\r\ndata: \xc3\xa9t\xc3\xa9\r\n\r\n: ping\n\ndata: x\n\n");
}
