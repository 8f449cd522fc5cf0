//! [`UriTemplate`]: RFC 6570 level-1 templates (`test://template/{id}/data`) and the matching
//! of a concrete URI against one, as `resources/read` needs for resource templates.
//!
//! Level 1 is simple string expansion: a `{name}` stands for a value whose reserved
//! characters are percent-encoded. Matching therefore never lets a variable span a `/`, `?` or
//! `#`, and percent-decodes what it captured.

use std::collections::BTreeMap;
use std::fmt;

/// An RFC 6570 level-1 URI template: literal text with `{name}` variables.
///
/// Parsing refuses what level 1 does not have (operators such as `{+path}`, lists, modifiers)
/// and what could not be matched unambiguously (two variables with nothing between them, a
/// name used twice).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    /// Parses `text`, such as `test://template/{id}/data`.
    ///
    /// # Errors
    /// [`UriTemplateError`] saying what is wrong: an unclosed or stray brace, an empty or
    /// invalid variable name, an operator (levels 2–4), adjacent variables, a repeated name.
    pub fn parse(text: &str) -> Result<UriTemplate, UriTemplateError> {
        let error = |reason| UriTemplateError { template: text.to_owned(), reason };
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let Some(open) = rest.find(['{', '}']) else {
                parts.push(Part::Literal(rest.to_owned()));
                break;
            };
            if rest[open..].starts_with('}') {
                return Err(error("a '}' without a '{'"));
            }
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 1..];
            let close = after.find('}').ok_or_else(|| error("a '{' without a '}'"))?;
            let name = &after[..close];
            if name.starts_with(['+', '#', '.', '/', ';', '?', '&', '=', ',', '!', '@', '|']) {
                return Err(error("only level-1 '{name}' expressions are supported"));
            }
            if !is_variable_name(name) {
                return Err(error("a variable name must be letters, digits, '_' or inner '.'"));
            }
            if matches!(parts.last(), Some(Part::Variable(_))) {
                return Err(error("two variables need literal text between them"));
            }
            if parts.iter().any(|part| matches!(part, Part::Variable(seen) if seen == name)) {
                return Err(error("a variable name appears twice"));
            }
            parts.push(Part::Variable(name.to_owned()));
            rest = &after[close + 1..];
        }
        Ok(UriTemplate { text: text.to_owned(), parts })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Variable(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables of `uri` if it is an expansion of this template: each one non-empty,
    /// without `/`, `?` or `#`, percent-decoded. `None` if `uri` does not match.
    pub fn match_uri(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut variables = BTreeMap::new();
        match_parts(&self.parts, uri, &mut variables).then_some(variables)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why a text is not a level-1 URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplateError {
    template: String,
    reason: &'static str,
}

impl fmt::Display for UriTemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid URI template {:?}: {}", self.template, self.reason)
    }
}

impl std::error::Error for UriTemplateError {}

/// RFC 6570 `varname`: `varchar *( ["."] varchar )`, varchar = ALPHA / DIGIT / "_" / pct-encoded.
fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '%')
}

/// Matches `parts` against all of `uri`, trying every place the literal after a variable
/// occurs (so `{name}.json` matches `a.json.json` with `name` = `a.json`).
fn match_parts(parts: &[Part], uri: &str, variables: &mut BTreeMap<String, String>) -> bool {
    match parts {
        [] => uri.is_empty(),
        [Part::Literal(literal), rest @ ..] => {
            uri.strip_prefix(literal.as_str()).is_some_and(|uri| match_parts(rest, uri, variables))
        }
        [Part::Variable(name), rest @ ..] => {
            let candidates: Vec<usize> = match rest.first() {
                None => vec![uri.len()],
                Some(Part::Literal(next)) => uri.match_indices(next.as_str()).map(|(at, _)| at).collect(),
                // Refused by `parse`: two variables in a row.
                Some(Part::Variable(_)) => Vec::new(),
            };
            for end in candidates {
                let raw = &uri[..end];
                if raw.is_empty() || raw.contains(['/', '?', '#']) {
                    // Longer captures only add characters: none of them can match.
                    break;
                }
                let Some(value) = percent_decode(raw) else { return false };
                if match_parts(rest, &uri[end..], variables) {
                    variables.insert(name.clone(), value);
                    return true;
                }
            }
            false
        }
    }
}

/// `%XX` → the byte; `None` for a broken escape or a result that is not UTF-8.
fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = raw.get(at + 1..at + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn a_template_matches_its_expansion_and_yields_the_variable() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(template.match_uri("test://template/123/data"), Some(vars(&[("id", "123")])));
        assert_eq!(template.variables().collect::<Vec<_>>(), ["id"]);
        assert_eq!(template.as_str(), "test://template/{id}/data");
    }

    #[test]
    fn a_variable_never_spans_a_slash_and_is_never_empty() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(template.match_uri("test://template/1/2/data"), None);
        assert_eq!(template.match_uri("test://template//data"), None);
        assert_eq!(template.match_uri("test://template/1/data/x"), None);
        assert_eq!(template.match_uri("test://other/1/data"), None);
    }

    #[test]
    fn matching_backtracks_over_an_earlier_occurrence_of_the_next_literal() {
        let template = UriTemplate::parse("file:///{name}.json").unwrap();
        assert_eq!(template.match_uri("file:///a.json.json"), Some(vars(&[("name", "a.json")])));
    }

    #[test]
    fn captured_values_are_percent_decoded() {
        let template = UriTemplate::parse("users://{name}/profile").unwrap();
        assert_eq!(template.match_uri("users://J%C3%BCrgen%20K/profile"), Some(vars(&[("name", "Jürgen K")])));
        assert_eq!(template.match_uri("users://bad%2/profile"), None);
    }

    #[test]
    fn several_variables_and_a_trailing_one_match() {
        let template = UriTemplate::parse("db://{table}/rows/{row}").unwrap();
        assert_eq!(template.match_uri("db://users/rows/42"), Some(vars(&[("row", "42"), ("table", "users")])));
    }

    #[test]
    fn templates_beyond_level_one_or_ambiguous_ones_are_refused() {
        for bad in ["a/{+path}", "a/{id", "a/id}", "a/{}", "a/{x}{y}", "a/{x}/{x}", "a/{x y}", "a/{.x}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad} should be refused");
        }
        let error = UriTemplate::parse("a/{+path}").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid URI template \"a/{+path}\": only level-1 '{name}' expressions are supported"
        );
    }

    #[test]
    fn a_template_without_variables_matches_only_itself() {
        let template = UriTemplate::parse("test://static").unwrap();
        assert_eq!(template.match_uri("test://static"), Some(BTreeMap::new()));
        assert_eq!(template.match_uri("test://static2"), None);
    }
}
