//! The layering rules of issue 11, checked on the source: 2025-11-25 types are named only by
//! the Legacy codec (`src/codec/legacy/`) and the Legacy part of the HTTP transport
//! (`crates/http/src/legacy.rs`); the engine names no protocol type at all.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The files below `dir` (other than those `allowed`) whose text contains `needle`.
fn offenders(dir: &Path, needle: &str, allowed: &[&str]) -> Vec<String> {
    sources(dir)
        .into_iter()
        .filter(|path| {
            let relative = path.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
            !allowed.iter().any(|prefix| relative.starts_with(prefix))
        })
        .filter(|path| fs::read_to_string(path).unwrap().contains(needle))
        .map(|path| path.display().to_string())
        .collect()
}

#[test]
fn only_the_legacy_codec_and_the_legacy_http_sessions_name_2025_11_25_types() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = offenders(&src, "protocol::legacy", &["codec/legacy/"]);
    assert!(found.is_empty(), "2025-11-25 types named outside the Legacy codec: {found:?}");
    let http = Path::new(env!("CARGO_MANIFEST_DIR")).join("../http/src");
    assert!(sources(&http).len() > 5, "the HTTP transport's sources are where this test expects them");
    let found = offenders(&http, "protocol::legacy", &["legacy.rs"]);
    assert!(found.is_empty(), "2025-11-25 types named outside the Legacy HTTP sessions: {found:?}");
}

#[test]
fn the_engine_knows_no_wire_types() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/src");
    assert!(sources(&src).len() > 5, "the engine's sources are where this test expects them");
    for needle in ["mcp_tasks_protocol", "protocol::legacy"] {
        let found = offenders(&src, needle, &[]);
        assert!(found.is_empty(), "the engine names {needle}: {found:?}");
    }
}

#[test]
fn only_dispatch_matches_on_the_era() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for arm in ["Era::Legacy =>", "Era::Modern =>"] {
        let found = offenders(&src, arm, &["dispatch.rs"]);
        assert!(found.is_empty(), "a match on the era outside dispatch: {found:?}");
    }
    let dispatch = fs::read_to_string(src.join("dispatch.rs")).unwrap();
    assert!(dispatch.contains("Era::Legacy =>"), "dispatch holds the match on the era");
}
