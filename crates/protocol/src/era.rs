//! The two protocol eras mcp-tasks serves, and how a message says which one it speaks.
//!
//! - [`Era::Legacy`]: MCP 2025-11-25, with Tasks in the core protocol. A client says so once,
//!   with `initialize`; the era then holds for the whole connection (stdio) or session
//!   (Streamable HTTP, `Mcp-Session-Id`).
//! - [`Era::Modern`]: MCP 2026-07-28 with the `io.modelcontextprotocol/tasks` extension. There
//!   is no handshake: every request names its revision in
//!   `params._meta["io.modelcontextprotocol/protocolVersion"]` ([`PROTOCOL_VERSION_META`]).
//!
//! The server decides the era of each request once, in its dispatch, from these facts.

use serde_json::Value;

/// The `params._meta` key that carries a 2026-07-28 request's protocol revision.
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// A protocol era: one set of wire rules, served by one codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// MCP 2025-11-25 (core Tasks, SEP-1686).
    Legacy,
    /// MCP 2026-07-28 with the tasks extension (SEP-2663).
    Modern,
}

impl Era {
    /// Every era this build speaks, oldest first (what `mcp-tasks --version` lists).
    pub const ALL: [Era; 2] = [Era::Legacy, Era::Modern];

    /// The protocol revision of the era, as written in `protocolVersion`.
    pub const fn revision(self) -> &'static str {
        match self {
            Era::Legacy => crate::legacy::PROTOCOL_VERSION,
            Era::Modern => crate::modern::PROTOCOL_VERSION,
        }
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.revision())
    }
}

/// The revision a request names in its per-request `_meta` (a 2026-07-28 request), if any.
pub fn per_request_version(params: Option<&Value>) -> Option<&str> {
    params?.get("_meta")?.get(PROTOCOL_VERSION_META)?.as_str()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_per_request_version_is_read_from_params_meta_only() {
        let modern = json!({"_meta": {PROTOCOL_VERSION_META: "2026-07-28"}, "name": "t"});
        assert_eq!(per_request_version(Some(&modern)), Some("2026-07-28"));
        assert_eq!(per_request_version(Some(&json!({"name": "t"}))), None);
        assert_eq!(per_request_version(Some(&json!({"_meta": {PROTOCOL_VERSION_META: 7}}))), None);
        assert_eq!(per_request_version(None), None);
    }

    #[test]
    fn eras_name_their_revisions() {
        assert_eq!(Era::Legacy.to_string(), "2025-11-25");
        assert_eq!(Era::Modern.revision(), "2026-07-28");
        assert_eq!(Era::ALL.map(Era::revision), ["2025-11-25", "2026-07-28"]);
    }
}
