//! [`Era`]: the protocol era a test speaks or validates against.

use std::fmt;

/// A protocol era of MCP tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// MCP 2025-11-25, with tasks in the core: a session negotiated by `initialize`.
    Legacy,
    /// MCP 2026-07-28 with the `io.modelcontextprotocol/tasks` extension: no session, the
    /// era carried by each request's `_meta`.
    Modern,
}

impl Era {
    /// The protocol revision of the era, as `protocolVersion` spells it.
    pub fn protocol_version(self) -> &'static str {
        match self {
            Era::Legacy => "2025-11-25",
            Era::Modern => "2026-07-28",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Era::Legacy => write!(f, "legacy ({})", self.protocol_version()),
            Era::Modern => write!(f, "modern ({})", self.protocol_version()),
        }
    }
}

/// What a test helper cannot do yet in an era: the modern era's peer is still to come.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotImplemented {
    /// The era asked for.
    pub era: Era,
    /// What is missing.
    pub what: &'static str,
}

impl fmt::Display for NotImplemented {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not implemented yet for the {} era",
            self.what, self.era
        )
    }
}

impl std::error::Error for NotImplemented {}
