//! Command templates: the `{name}` placeholders in the elements of a tool's `command`.
//!
//! `{name}` stands for the argument `name`; `{{` and `}}` are literal braces. Any other
//! brace is an error, so that a typo cannot silently become part of an argv element.

/// One piece of a command element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// The argument with this name.
    Arg(String),
    /// Literal text (braces already unescaped).
    Text(String),
}

/// A command element that is not a valid template.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `{}`.
    #[error("empty placeholder `{{}}` at byte {0}")]
    Empty(usize),
    /// A `{` without its `}`.
    #[error("`{{` at byte {0} is never closed (write `{{{{` for a literal brace)")]
    Unclosed(usize),
    /// A `}` without its `{`.
    #[error("`}}` at byte {0} closes nothing (write `}}}}` for a literal brace)")]
    Unopened(usize),
}

/// Splits `element` into literal text and placeholders.
///
/// # Errors
/// [`TemplateError`] for an empty placeholder or an unmatched brace.
pub fn parse(element: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = element.char_indices().peekable();
    while let Some((at, c)) = rest.next() {
        match c {
            '{' if rest.next_if(|&(_, next)| next == '{').is_some() => text.push('{'),
            '}' if rest.next_if(|&(_, next)| next == '}').is_some() => text.push('}'),
            '}' => return Err(TemplateError::Unopened(at)),
            '{' => {
                let mut name = String::new();
                loop {
                    match rest.next() {
                        Some((_, '}')) => break,
                        Some((_, '{')) | None => return Err(TemplateError::Unclosed(at)),
                        Some((_, c)) => name.push(c),
                    }
                }
                if name.is_empty() {
                    return Err(TemplateError::Empty(at));
                }
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Arg(name));
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(name: &str) -> Piece {
        Piece::Arg(name.to_owned())
    }

    fn text(s: &str) -> Piece {
        Piece::Text(s.to_owned())
    }

    #[test]
    fn an_element_without_braces_is_one_text_piece() {
        assert_eq!(parse("--verbose"), Ok(vec![text("--verbose")]));
        assert_eq!(parse(""), Ok(vec![]));
    }

    #[test]
    fn placeholders_split_the_element_into_pieces() {
        assert_eq!(parse("{x}"), Ok(vec![arg("x")]));
        assert_eq!(
            parse("--out={dir}/{name}.txt"),
            Ok(vec![
                text("--out="),
                arg("dir"),
                text("/"),
                arg("name"),
                text(".txt")
            ])
        );
    }

    #[test]
    fn doubled_braces_are_literal_braces() {
        assert_eq!(parse("{{x}}"), Ok(vec![text("{x}")]));
        assert_eq!(
            parse("a{{{x}}}b"),
            Ok(vec![text("a{"), arg("x"), text("}b")])
        );
    }

    #[test]
    fn unmatched_and_empty_braces_are_errors() {
        assert_eq!(parse("a{x"), Err(TemplateError::Unclosed(1)));
        assert_eq!(parse("{a{b}"), Err(TemplateError::Unclosed(0)));
        assert_eq!(parse("x}"), Err(TemplateError::Unopened(1)));
        assert_eq!(parse("{}"), Err(TemplateError::Empty(0)));
    }
}
