//! The Streamable HTTP transport's `Host` and `Origin` rules (both eras: a server validates
//! them against DNS rebinding): which header values are accepted, and the syntax of an
//! allowed entry.
//!
//! Loopback names (`localhost`, `127.0.0.1`, `[::1]`) are always accepted with any port;
//! `server.allowed_hosts` and `server.allowed_origins` add to them. The one implementation
//! of these checks, here so that both users share it without knowing each other: the
//! configuration (`mcp-tasks-config`) refuses entries that do not parse ([`Authority::parse`],
//! [`Origin::parse`]), and the HTTP transport (`mcp-tasks-http`) matches each request's
//! `Host` and `Origin` with [`host_allowed`] and [`origin_allowed`], against the lists it was
//! given.

/// The hosts accepted with any port, whatever the configuration says.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// A `host[:port]` split in two; the host is lowercased, IPv6 literals keep their brackets.
#[derive(Debug, PartialEq, Eq)]
pub struct Authority {
    host: String,
    port: Option<u16>,
}

impl Authority {
    /// Parses `host`, `host:port`, `[v6]` or `[v6]:port`.
    ///
    /// # Errors
    /// A reason, if `text` is not of that form.
    pub fn parse(text: &str) -> Result<Authority, String> {
        let (host, port) = if text.starts_with('[') {
            let end = text
                .find(']')
                .ok_or_else(|| "`[` without a closing `]`".to_owned())?;
            let (host, rest) = text.split_at(end + 1);
            let inner = &host[1..host.len() - 1];
            if inner.is_empty()
                || !inner
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || ":.".contains(c))
            {
                return Err(format!("`{host}` is not an IPv6 address in brackets"));
            }
            match rest.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None if rest.is_empty() => (host, None),
                None => return Err(format!("unexpected `{rest}` after `{host}`")),
            }
        } else {
            match text.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            }
        };
        if host.is_empty() {
            return Err("no host name".to_owned());
        }
        if !host.starts_with('[')
            && !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
        {
            return Err(format!(
                "host `{host}` may hold only letters, digits, `-`, `.` and `_` (IPv6 addresses go \
                 in brackets)"
            ));
        }
        let port = match port {
            None => None,
            Some(port) => Some(
                port.parse::<u16>()
                    .ok()
                    .filter(|_| port.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| format!("`{port}` is not a port number"))?,
            ),
        };
        Ok(Authority {
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    fn is_loopback(&self) -> bool {
        LOOPBACK.contains(&self.host.as_str())
    }
}

/// Whether a request's `Host` header value is accepted: a loopback host with any port, or
/// one of `allowed`. An allowed entry without a port accepts any port; one with a port
/// accepts only that port. Host names compare without regard to ASCII case. A value that is
/// not `host[:port]` (with a port number, if any) is refused, as is an entry that is not.
#[must_use]
pub fn host_allowed(allowed: &[String], host: &str) -> bool {
    let Ok(presented) = Authority::parse(host) else {
        return false;
    };
    presented.is_loopback()
        || allowed.iter().any(|entry| {
            Authority::parse(entry).is_ok_and(|entry| {
                entry.host == presented.host && entry.port.is_none_or(|p| Some(p) == presented.port)
            })
        })
}

/// A web origin, `scheme://host[:port]`, with the port made explicit.
#[derive(Debug, PartialEq, Eq)]
pub struct Origin {
    scheme: &'static str,
    authority: Authority,
}

impl Origin {
    /// Parses an origin as browsers send it: `http` or `https`, `://`, then an authority;
    /// no path, no user, not even a trailing `/`.
    ///
    /// # Errors
    /// A reason, if `text` is not of that form.
    pub fn parse(text: &str) -> Result<Origin, String> {
        let (scheme, rest) = text.split_once("://").ok_or_else(|| {
            "expected scheme://host[:port], e.g. https://app.example.com".to_owned()
        })?;
        let (scheme, default_port) = if scheme.eq_ignore_ascii_case("http") {
            ("http", 80)
        } else if scheme.eq_ignore_ascii_case("https") {
            ("https", 443)
        } else {
            return Err(format!("scheme `{scheme}` is neither http nor https"));
        };
        if rest.contains(['/', '?', '#', '@']) {
            return Err(
                "an origin has no path, query, fragment or user (nor a trailing `/`)".to_owned(),
            );
        }
        let mut authority = Authority::parse(rest)?;
        authority.port = Some(authority.port.unwrap_or(default_port));
        Ok(Origin { scheme, authority })
    }
}

/// Whether a request's `Origin` header value is accepted: `http` or `https` on a loopback
/// host with any port, or one of `allowed` (scheme, host and port all equal; a left-out port
/// is the scheme's default). `null`, other schemes, and origins with a path (even `/`), a
/// query or a user are refused.
#[must_use]
pub fn origin_allowed(allowed: &[String], origin: &str) -> bool {
    let Ok(presented) = Origin::parse(origin) else {
        return false;
    };
    presented.authority.is_loopback()
        || allowed
            .iter()
            .any(|entry| Origin::parse(entry).is_ok_and(|entry| entry == presented))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|&s| s.to_owned()).collect()
    }

    #[test]
    fn loopback_hosts_are_accepted_with_any_port() {
        for host in [
            "localhost",
            "localhost:8765",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:80",
            "[::1]",
            "[::1]:8765",
        ] {
            assert!(host_allowed(&[], host), "{host}");
        }
        for host in [
            "example.com",
            "127.0.0.2",
            "localhost.example.com",
            "[::2]:80",
            "",
            "localhost:",
            "localhost:x",
            "localhost:99999",
            "::1",
            "evil.com#localhost",
        ] {
            assert!(!host_allowed(&[], host), "{host}");
        }
    }

    #[test]
    fn allowed_hosts_match_with_or_without_a_port() {
        let allowed = strings(&["tasks.example.com", "box.lan:9000", "[fd00::1]"]);
        assert!(host_allowed(&allowed, "tasks.example.com"));
        assert!(host_allowed(&allowed, "Tasks.Example.com:443"));
        assert!(host_allowed(&allowed, "box.lan:9000"));
        assert!(!host_allowed(&allowed, "box.lan:9001"));
        assert!(!host_allowed(&allowed, "box.lan"));
        assert!(host_allowed(&allowed, "[fd00::1]:8765"));
        assert!(!host_allowed(&allowed, "example.com"));
        assert!(!host_allowed(&allowed, "sub.tasks.example.com"));
    }

    /// Moved from the HTTP transport (then `crates/server/src/http.rs`), whose own `Host` parser
    /// it tested: ports, brackets and case do not stand in the way of a match.
    #[test]
    fn host_names_drop_ports_and_brackets() {
        assert!(host_allowed(&[], "localhost:8765"));
        assert!(host_allowed(&[], "[::1]:80"));
        assert!(host_allowed(&[], "127.0.0.1"));
        let allowed = strings(&["evil.example.com"]);
        assert!(host_allowed(&allowed, "Evil.Example.com:443"));
    }

    #[test]
    fn bad_host_entries_are_refused() {
        for bad in [
            "", ":80", "a b", "http://x", "x/y", "*", "::1", "[::1", "[zz]", "x:port", "x:1:2",
        ] {
            assert!(Authority::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn loopback_origins_are_accepted_with_any_port() {
        for origin in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8443",
            "http://[::1]:8765",
            "HTTP://LocalHost:1",
        ] {
            assert!(origin_allowed(&[], origin), "{origin}");
        }
        for origin in [
            "null",
            "file://localhost",
            "http://localhost/",
            "https://example.com",
            "http://localhost.evil.com",
            "http://localhost@evil.com",
            "localhost",
        ] {
            assert!(!origin_allowed(&[], origin), "{origin}");
        }
    }

    #[test]
    fn allowed_origins_match_scheme_host_and_port() {
        let allowed = strings(&["https://app.example.com", "http://dev.example.com:8080"]);
        assert!(origin_allowed(&allowed, "https://app.example.com"));
        assert!(origin_allowed(&allowed, "https://APP.example.com:443"));
        assert!(!origin_allowed(&allowed, "http://app.example.com"));
        assert!(!origin_allowed(&allowed, "https://app.example.com:8443"));
        assert!(origin_allowed(&allowed, "http://dev.example.com:8080"));
        assert!(!origin_allowed(&allowed, "http://dev.example.com"));
        assert!(!origin_allowed(&allowed, "https://evil.example.com"));
    }

    #[test]
    fn bad_origin_entries_are_refused() {
        for bad in [
            "app.example.com",
            "ftp://app.example.com",
            "https://app.example.com/",
            "https://app.example.com/path",
            "https://user@app.example.com",
            "https://",
            "https://app.example.com:https",
            "*",
        ] {
            assert!(Origin::parse(bad).is_err(), "{bad:?}");
        }
    }
}
