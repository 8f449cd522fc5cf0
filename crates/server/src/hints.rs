//! What a transport knows of a message beside its body ([`Hints`]): over HTTP its headers
//! (stdio has none, and routes through `Peer::handle_text`). The router reads them to route a message
//! (`Mcp-Session-Id`, `MCP-Protocol-Version`), and each era's codec to apply its transport
//! rules (the versions a 2025-11-25 session accepts, the headers a 2026-07-28 request mirrors).

/// The headers of an HTTP message that its routing and its era's rules read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Header {
    /// `Mcp-Session-Id`: the 2025-11-25 session a message belongs to.
    SessionId,
    /// `MCP-Protocol-Version`: the revision the client speaks.
    ProtocolVersion,
    /// `Mcp-Method`: 2026-07-28 mirrors the body's method.
    Method,
    /// `Mcp-Name`: 2026-07-28 mirrors the body's name, URI or task id.
    Name,
}

impl Header {
    /// The header's name, lowercase (as errors name it).
    pub fn name(self) -> &'static str {
        match self {
            Header::SessionId => "mcp-session-id",
            Header::ProtocolVersion => "mcp-protocol-version",
            Header::Method => "mcp-method",
            Header::Name => "mcp-name",
        }
    }
}

impl std::fmt::Display for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The headers of a message, as its transport read them.
pub trait Hints {
    /// The value of `header`, if the message has it.
    fn header(&self, header: Header) -> Option<&[u8]>;

    /// The value of the header named `name` (in any case), if the message has it: the
    /// `Mcp-Param-*` headers of a 2026-07-28 `tools/call`.
    fn named(&self, name: &str) -> Option<&[u8]>;
}

/// A header value as text, if it is visible ASCII (tabs allowed), as HTTP reads a header
/// value as a string.
pub(crate) fn text(value: &[u8]) -> Option<&str> {
    if value.iter().all(|&byte| (32..127).contains(&byte) || byte == b'\t') { std::str::from_utf8(value).ok() } else { None }
}
