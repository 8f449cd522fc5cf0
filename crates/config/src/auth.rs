//! Bearer-token authentication: `[[server.auth.tokens]]`, checked in constant time.
//!
//! Only SHA-256 digests of the tokens are kept in memory; a token read from the
//! environment is hashed and its text dropped while the configuration loads.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

/// The SHA-256 digest of a token.
pub(crate) type TokenDigest = [u8; 32];

/// The bearer tokens the server accepts and the principal each one stands for.
///
/// Built from `[[server.auth.tokens]]` when the configuration loads (see
/// [`ServerConfig::auth`](crate::ServerConfig::auth)). With no tokens configured,
/// authentication is off: [`is_enabled`](Auth::is_enabled) is false and
/// [`principal_for`](Auth::principal_for) finds no one.
///
/// ```
/// use mcp_tasks_config::Config;
///
/// // echo -n 'hunter2' | sha256sum
/// let config = Config::parse(r#"
///     [[server.auth.tokens]]
///     principal = "alice"
///     token_sha256 = "f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7"
/// "#)?;
/// let auth = config.server.auth();
/// assert!(auth.is_enabled());
/// assert_eq!(auth.principal_for("hunter2"), Some("alice"));
/// assert_eq!(auth.principal_for("hunter3"), None);
/// # Ok::<(), mcp_tasks_config::ConfigError>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Auth {
    tokens: Vec<Entry>,
}

#[derive(Clone, PartialEq, Eq)]
struct Entry {
    principal: String,
    digest: TokenDigest,
}

impl Auth {
    /// An authenticator accepting the tokens whose SHA-256 digests are given, each for its
    /// principal. Mostly for tests; a server builds its [`Auth`] from the configuration.
    pub fn from_digests<P: Into<String>>(tokens: impl IntoIterator<Item = (P, [u8; 32])>) -> Auth {
        Auth {
            tokens: tokens
                .into_iter()
                .map(|(principal, digest)| Entry {
                    principal: principal.into(),
                    digest,
                })
                .collect(),
        }
    }

    /// The SHA-256 digest of `token`, as [`from_digests`](Auth::from_digests) takes it and
    /// `token_sha256` spells it in hexadecimal.
    #[must_use]
    pub fn digest(token: &str) -> [u8; 32] {
        Sha256::digest(token.as_bytes()).into()
    }

    /// Whether any token is configured, i.e. whether requests must present one.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The principal whose token is `bearer_token` (the text after `Bearer `), if any.
    ///
    /// The presented token is hashed and its digest compared with every configured digest,
    /// each comparison in constant time and none cut short by an earlier match, so the time
    /// taken depends only on the number of configured tokens: not on how many leading bytes
    /// matched, nor on which entry did. The comparison uses the `subtle` crate rather than
    /// `==` (which stops at the first differing byte) or a hand-written XOR fold (which the
    /// optimiser is free to turn back into an early exit); `subtle` puts an optimisation
    /// barrier on its result for exactly that reason.
    #[must_use]
    pub fn principal_for(&self, bearer_token: &str) -> Option<&str> {
        let presented = Auth::digest(bearer_token);
        let mut found = Choice::from(0);
        let mut index = 0u64;
        for (i, entry) in self.tokens.iter().enumerate() {
            let hit = entry.digest[..].ct_eq(&presented[..]);
            index.conditional_assign(&(i as u64), hit);
            found |= hit;
        }
        if bool::from(found) {
            usize::try_from(index)
                .ok()
                .and_then(|index| self.tokens.get(index))
                .map(|entry| entry.principal.as_str())
        } else {
            None
        }
    }

    /// The configured principals, in file order (a principal with several tokens appears
    /// once for each).
    pub fn principals(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().map(|entry| entry.principal.as_str())
    }
}

/// Shows the principals, never the digests.
impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("principals", &self.principals().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Parses the 64 hexadecimal digits (either case) of a SHA-256 digest.
///
/// # Errors
/// A reason, if `text` is not exactly that.
pub(crate) fn parse_hex_digest(text: &str) -> Result<TokenDigest, String> {
    let bytes = text.as_bytes();
    if let Some(position) = bytes.iter().position(|b| !b.is_ascii_hexdigit()) {
        let bad = text[position..].chars().next().unwrap_or_default();
        return Err(format!(
            "`{bad}` (character {}) is not a hexadecimal digit",
            position + 1
        ));
    }
    if bytes.len() != 64 {
        return Err(format!(
            "a SHA-256 digest is 64 hexadecimal digits, not {}",
            bytes.len()
        ));
    }
    let mut digest = [0u8; 32];
    for (byte, pair) in digest.iter_mut().zip(bytes.chunks_exact(2)) {
        *byte = (nibble(pair[0]) << 4) | nibble(pair[1]);
    }
    Ok(digest)
}

/// The value of one hexadecimal digit (already checked to be one).
fn nibble(digit: u8) -> u8 {
    char::from(digit)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
        .unwrap_or_default()
}

/// Why a `token_env` variable gives no token.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum EnvTokenError {
    Missing,
    Empty,
    NotUnicode,
}

impl fmt::Display for EnvTokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EnvTokenError::Missing => "is not set",
            EnvTokenError::Empty => "is empty",
            EnvTokenError::NotUnicode => "is not valid UTF-8",
        })
    }
}

/// Reads the token in the environment variable `name` and returns its digest.
///
/// The token's text is overwritten before it is freed (best effort: the process
/// environment itself still holds it, and removing a variable needs `unsafe`).
pub(crate) fn digest_of_env(name: &str) -> Result<TokenDigest, EnvTokenError> {
    let token = match std::env::var(name) {
        Ok(token) => token,
        Err(std::env::VarError::NotPresent) => return Err(EnvTokenError::Missing),
        Err(std::env::VarError::NotUnicode(_)) => return Err(EnvTokenError::NotUnicode),
    };
    if token.is_empty() {
        return Err(EnvTokenError::Empty);
    }
    let digest = Auth::digest(&token);
    let mut bytes = token.into_bytes();
    bytes.fill(0);
    std::hint::black_box(&bytes);
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HUNTER2: &str = "f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7";

    #[test]
    fn the_digest_is_sha256() {
        assert_eq!(parse_hex_digest(HUNTER2), Ok(Auth::digest("hunter2")));
        assert_eq!(
            parse_hex_digest(&HUNTER2.to_ascii_uppercase()),
            Ok(Auth::digest("hunter2"))
        );
    }

    #[test]
    fn bad_hex_is_refused_with_a_reason() {
        assert_eq!(
            parse_hex_digest(&HUNTER2[..62]),
            Err("a SHA-256 digest is 64 hexadecimal digits, not 62".to_owned())
        );
        assert!(parse_hex_digest(&format!("{HUNTER2}00")).is_err());
        assert_eq!(
            parse_hex_digest(&format!("{}g", &HUNTER2[..63])),
            Err("`g` (character 64) is not a hexadecimal digit".to_owned())
        );
        assert!(parse_hex_digest("").is_err());
        assert!(parse_hex_digest(&format!("{}é", &HUNTER2[..62])).is_err());
    }

    #[test]
    fn principal_for_finds_the_right_principal_or_none() {
        let auth = Auth::from_digests([
            ("alice", Auth::digest("a-token")),
            ("bob", Auth::digest("b-token")),
            ("alice", Auth::digest("a-second-token")),
        ]);
        assert!(auth.is_enabled());
        assert_eq!(auth.principal_for("a-token"), Some("alice"));
        assert_eq!(auth.principal_for("b-token"), Some("bob"));
        assert_eq!(auth.principal_for("a-second-token"), Some("alice"));
        assert_eq!(auth.principal_for("c-token"), None);
        assert_eq!(auth.principal_for(""), None);
        assert_eq!(auth.principal_for("a-token "), None);
        assert_eq!(
            auth.principals().collect::<Vec<_>>(),
            ["alice", "bob", "alice"]
        );
    }

    #[test]
    fn no_tokens_means_disabled() {
        let auth = Auth::default();
        assert!(!auth.is_enabled());
        assert_eq!(auth.principal_for(""), None);
        assert_eq!(auth.principal_for("anything"), None);
    }

    #[test]
    fn debug_shows_no_digest() {
        let auth = Auth::from_digests([("alice", Auth::digest("hunter2"))]);
        let shown = format!("{auth:?}");
        assert!(shown.contains("alice"), "{shown}");
        assert!(!shown.contains("f52f") && !shown.contains("245"), "{shown}");
    }

    #[test]
    fn a_missing_variable_is_reported() {
        assert_eq!(
            digest_of_env("MCP_TASKS_SURELY_NOT_SET_ANYWHERE"),
            Err(EnvTokenError::Missing)
        );
    }
}
