//! `mcp-tasks --version` through the real binary: the version and the protocol revisions.

use std::process::Command;

#[test]
fn version_names_the_build_and_the_protocol_revisions_it_speaks() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-tasks")).arg("--version").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with(&format!("mcp-tasks {}", env!("CARGO_PKG_VERSION"))), "{said:?}");
    for revision in ["2025-11-25", "2026-07-28", "io.modelcontextprotocol/tasks"] {
        assert!(said.contains(revision), "{said:?} should name {revision}");
    }
    assert_eq!(said.lines().count(), 1, "{said:?}");
}
