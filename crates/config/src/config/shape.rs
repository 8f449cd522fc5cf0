//! The configuration's shape, read leniently: TOML that parses but does not fit the
//! configuration (an unknown key, an unknown value, a value of the wrong type) is reported
//! and set aside, and the text is read again, so that one run names every such mistake; an
//! unknown key or value comes with the nearest valid name ("did you mean `timeout`?").
//!
//! Setting aside keeps every line where it was (a later problem still names its own line): an
//! unknown key with a near valid name is read as that name, anything else has its lines
//! turned into comments. A mistake that cannot be set aside that way (a missing key, whose
//! span is its whole table) ends the reading with the problems found so far.

use serde::de::DeserializeOwned;

use super::lines::line_of;
use super::{ConfigError, Problem};

/// How many mistakes one reading sets aside before it gives up.
const MAX_ROUNDS: usize = 64;

/// `T` read from `text`, and the text it was read from in the end (with the mistakes set
/// aside; same lines), or `None` if it could not be read at all; and every shape mistake
/// found, in the order found.
pub(super) fn read<T: DeserializeOwned>(text: &str) -> (Option<(T, String)>, Vec<ConfigError>) {
    let mut current = text.to_owned();
    let mut problems = Vec::new();
    // Keys read as the name they were likely meant to be: their absence is no mistake of its own.
    let mut renamed: Vec<String> = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let err = match toml::from_str::<T>(&current) {
            Ok(raw) => return (Some((raw, current)), problems),
            Err(err) => err,
        };
        let syntax = current.parse::<toml::Table>().is_err();
        if syntax && !problems.is_empty() {
            // Setting a mistake aside broke the TOML (a value over several lines): stop here.
            return (None, problems);
        }
        let message = err.message().trim_end();
        let line = err.span().map(|span| line_of(&current, &span));
        let suggestion = suggest(message);
        let consequence = missing_field(message).is_some_and(|field| renamed.iter().any(|name| name == field));
        if !consequence {
            // With a suggestion, the one name meant, not the list of every valid one.
            let message = match &suggestion {
                Some(name) => format!("{}; did you mean `{name}`?", message.split_once(", expected").map_or(message, |(head, _)| head)),
                None => message.to_owned(),
            };
            problems.push(ConfigError::Invalid { file: None, line, problem: Problem::Toml(message) });
        }
        let Some(span) = err.span().filter(|_| !syntax && !consequence) else {
            return (None, problems);
        };
        let next = match (unknown(message, "unknown field `"), suggestion) {
            (Some(_), Some(name)) => {
                renamed.push(name.clone());
                rename(&current, span, &name)
            }
            _ => comment_out(&current, span),
        };
        match next {
            Some(next) => current = next,
            None => return (None, problems),
        }
    }
    (None, problems)
}

/// The nearest valid name to the unknown key or value a serde message names, if one is near
/// enough to be what was meant.
pub(crate) fn suggest(message: &str) -> Option<String> {
    let given = unknown(message, "unknown field `").or_else(|| unknown(message, "unknown variant `"))?;
    let (_, expected) = message.split_once("expected")?;
    let candidates = expected.split('`').skip(1).step_by(2);
    let (distance, nearest) = candidates
        .map(|candidate| (strsim::levenshtein(&given.to_lowercase(), candidate), candidate))
        .min_by_key(|(distance, _)| *distance)?;
    (distance <= given.chars().count().max(3) / 3 + 1).then(|| nearest.to_owned())
}

/// The name after `prefix` in `message`, up to its closing backquote.
fn unknown<'a>(message: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = &message[message.find(prefix)? + prefix.len()..];
    rest.split_once('`').map(|(name, _)| name)
}

/// The field a "missing field" message names.
fn missing_field(message: &str) -> Option<&str> {
    unknown(message, "missing field `")
}

/// `text` with the key at `span` renamed to `name`, if the span is a bare key.
fn rename(text: &str, span: std::ops::Range<usize>, name: &str) -> Option<String> {
    let key = text.get(span.clone())?;
    if key.is_empty() || key.contains(['\n', '=', '[']) {
        return comment_out(text, span);
    }
    let mut next = String::with_capacity(text.len() + name.len());
    next.push_str(&text[..span.start]);
    next.push_str(name);
    next.push_str(&text[span.end..]);
    Some(next)
}

/// `text` with the lines `span` touches turned into comments, unless one of them is a table
/// header (the keys below it would then fall into another table).
fn comment_out(text: &str, span: std::ops::Range<usize>) -> Option<String> {
    let first = line_of(text, &span) - 1;
    let last = line_of(text, &(span.end.saturating_sub(1).max(span.start)..span.end)) - 1;
    let mut next = String::with_capacity(text.len() + 8);
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if (first..=last).contains(&index) {
            if line.trim_start().starts_with('[') {
                return None;
            }
            next.push('#');
        }
        next.push_str(line);
    }
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_name_is_suggested_when_it_is_near() {
        let field = "unknown field `timout`, expected one of `name`, `timeout`, `kill_grace`";
        assert_eq!(suggest(field).as_deref(), Some("timeout"));
        let variant = "unknown variant `retyr`, expected `fail` or `retry`";
        assert_eq!(suggest(variant).as_deref(), Some("retry"));
        assert_eq!(suggest("unknown field `zzzzzz`, expected `name` or `command`"), None);
        assert_eq!(suggest("invalid type: integer, expected a string"), None);
    }
}
