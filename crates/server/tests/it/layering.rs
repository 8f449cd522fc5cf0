//! The layering rules of issues 11 and 40, checked on the source: 2025-11-25 types are named
//! only by the Legacy codec (`src/codec/legacy/`) and the Legacy part of the HTTP transport
//! (`crates/http/src/legacy.rs`), 2026-07-28 types only by the Modern codec; the engine names
//! no protocol type at all; only the router (`dispatch`) matches on the era, and no
//! transport names a codec.

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
    let (_, http) = server_and_http();
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

/// The sources of the server (`src/`) and of its HTTP transport (`crates/http/src`).
fn server_and_http() -> (PathBuf, PathBuf) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let http = manifest.join("../http/src");
    assert!(sources(&http).len() > 5, "the HTTP transport's sources are where this test expects them");
    (manifest.join("src"), http)
}

/// The era is routed in one place (issues 11 and 40): only the router (`src/dispatch.rs`)
/// matches on the era, and no transport does. (The codecs need no match of their own.)
#[test]
fn only_dispatch_matches_on_the_era() {
    let (src, http) = server_and_http();
    for arm in ["Era::Legacy =>", "Era::Modern =>"] {
        let found = offenders(&src, arm, &["dispatch.rs"]);
        assert!(found.is_empty(), "a match on the era outside dispatch: {found:?}");
        let found = offenders(&http, arm, &[]);
        assert!(found.is_empty(), "a match on the era in the HTTP transport: {found:?}");
    }
    let dispatch = fs::read_to_string(src.join("dispatch.rs")).unwrap();
    assert!(dispatch.contains("Era::Legacy =>"), "dispatch holds the match on the era");
}

/// Issue 40: transports hand every message to the router and know no codec. The HTTP
/// transport names no codec module; the server's stdio transport neither.
#[test]
fn no_transport_names_a_codec() {
    let (src, http) = server_and_http();
    let found = offenders(&http, "codec::", &[]);
    assert!(found.is_empty(), "the HTTP transport names a codec: {found:?}");
    let stdio = fs::read_to_string(src.join("stdio.rs")).unwrap();
    assert!(!stdio.contains("codec::"), "the stdio transport names a codec");
}

/// 2026-07-28 types (`protocol::modern`) are named only by the Modern codec
/// (`src/codec/modern/`): the router asks that codec whether a request is its era's, and the
/// transports name none. (The Legacy rule is `only_the_legacy_codec_…` above.)
#[test]
fn only_the_modern_codec_names_2026_07_28_types() {
    let (src, http) = server_and_http();
    let found = offenders(&src, "protocol::modern", &["codec/modern/"]);
    assert!(found.is_empty(), "2026-07-28 types named outside the Modern codec: {found:?}");
    let found = offenders(&http, "protocol::modern", &[]);
    assert!(found.is_empty(), "2026-07-28 types named in the HTTP transport: {found:?}");
}
