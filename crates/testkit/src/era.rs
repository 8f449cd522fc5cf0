//! [`Era`]: the protocol era a test speaks or validates against (the protocol crate's), and
//! [`NotImplemented`] for what a helper cannot do yet in an era.

use std::fmt;

/// The protocol eras, as the server's dispatch knows them (one type for the whole tree).
pub use mcp_tasks_protocol::era::Era;

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
            "{} is not implemented yet for the {} ({}) era",
            self.what,
            format!("{:?}", self.era).to_lowercase(),
            self.era.revision()
        )
    }
}

impl std::error::Error for NotImplemented {}
