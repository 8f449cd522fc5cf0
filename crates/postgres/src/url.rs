//! Connection strings as they may be shown: with the password replaced by `***`.

/// `url` with any password replaced by `***`, for logs and error messages:
/// `postgres://user:secret@host/db` becomes `postgres://user:***@host/db`, and a
/// `password=…` parameter (in a URL's query or a `key=value` connection string) keeps its
/// name only. Never fails: text it cannot read is shown with every possible password hidden.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return redact_parameters(url, ' ');
    };
    // A password may hold any character, a host none of '@', '/', '?' or '#': the userinfo
    // ends at the first '@' followed by a host without another '@'.
    let (userinfo, rest) = match rest.match_indices('@').map(|(at, _)| at).find(|&at| {
        let host = &rest[at + 1..];
        let host = &host[..host.find(['/', '?', '#']).unwrap_or(host.len())];
        !host.contains('@')
    }) {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (host, tail) = rest.split_at(end);
    let authority = match userinfo {
        Some(userinfo) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => host.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => format!("{path}?{}", redact_parameters(query, '&')),
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// `text` split at `separator` into `key=value` parameters, with every password's value
/// replaced by `***`.
fn redact_parameters(text: &str, separator: char) -> String {
    let mut out = String::with_capacity(text.len());
    for (n, part) in text.split(separator).enumerate() {
        if n > 0 {
            out.push(separator);
        }
        match part.split_once('=') {
            Some((key, _)) if key.trim().eq_ignore_ascii_case("password") => {
                out.push_str(key);
                out.push_str("=***");
            }
            // The change feed's direct URL, itself a URL that may carry a password.
            Some((key, value)) if key.trim() == "listen_url" => {
                out.push_str(key);
                out.push('=');
                out.push_str(&percent_encoded(&redact(&percent_decoded(value))));
            }
            _ => out.push_str(part),
        }
    }
    out
}

/// `value` with its `%XX` escapes (and `+` for a space) decoded, as a URL's query writes it.
pub(crate) fn percent_decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|byte| (*byte as char).to_digit(16));
        match (bytes[at], hex(at + 1), hex(at + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                at += 3;
            }
            (b'+', ..) => {
                out.push(b' ');
                at += 1;
            }
            (byte, ..) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `value` escaped for a URL's query: every byte but letters, digits and `-._~` as `%XX`.
fn percent_encoded(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(byte).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_are_hidden_wherever_they_stand() {
        for (url, shown) in [
            ("postgres://user:s3cret@host/db", "postgres://user:***@host/db"),
            ("postgresql://user:p@ss@host:5432/db?sslmode=disable", "postgresql://user:***@host:5432/db?sslmode=disable"),
            ("postgres://user@host/db", "postgres://user@host/db"),
            ("postgres://host", "postgres://host"),
            ("postgres://u:pw@host/db?password=again&application_name=x", "postgres://u:***@host/db?password=***&application_name=x"),
            ("postgres://u:a/b?c#d@host/db", "postgres://u:***@host/db"),
            ("host=h user=u password=s3cret dbname=d", "host=h user=u password=*** dbname=d"),
            (
                "postgres://u:pw@pooler/db?pooler=transaction&listen_url=postgres%3A%2F%2Fu%3As3cret%40db%3A5432%2Fdb",
                "postgres://u:***@pooler/db?pooler=transaction&listen_url=postgres%3A%2F%2Fu%3A%2A%2A%2A%40db%3A5432%2Fdb",
            ),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }
}
