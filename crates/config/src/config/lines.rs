//! Line numbers: the text being parsed turns the spans TOML gives into 1-based lines, and
//! the checks of durations, byte sizes and counts name the line of the value they refuse.

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::{ConfigError, Problem};
use crate::size;

/// The 1-based line of the byte offset where `span` starts.
pub(crate) fn line_of(text: &str, span: &Range<usize>) -> usize {
    let start = span.start.min(text.len());
    text.as_bytes()[..start]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The text being parsed, to turn spans into line numbers.
#[derive(Clone, Copy)]
pub(crate) struct Lines<'a>(pub(crate) &'a str);

impl Lines<'_> {
    pub(crate) fn of(self, span: &Range<usize>) -> usize {
        line_of(self.0, span)
    }

    pub(crate) fn error(self, line: usize, problem: Problem) -> ConfigError {
        ConfigError::Invalid {
            file: None,
            line: Some(line),
            problem,
        }
    }

    /// Parses a humantime duration, refusing zero (no setting here means "never").
    pub(crate) fn duration(
        self,
        field: &str,
        value: &Spanned<String>,
    ) -> Result<Duration, ConfigError> {
        let bad = |reason: String| {
            self.error(
                self.of(&value.span()),
                Problem::Duration {
                    field: field.to_owned(),
                    value: value.get_ref().clone(),
                    reason,
                },
            )
        };
        match humantime::parse_duration(value.get_ref()) {
            Ok(duration) if duration.is_zero() => Err(bad("must be longer than zero".to_owned())),
            Ok(duration) => Ok(duration),
            Err(err) => Err(bad(err.to_string())),
        }
    }

    /// Parses a humantime duration where zero means "off" (`"0"` or `"0s"`).
    pub(crate) fn duration_or_off(self, field: &str, value: &Spanned<String>) -> Result<Duration, ConfigError> {
        match humantime::parse_duration(value.get_ref()) {
            Ok(duration) => Ok(duration),
            Err(err) => Err(self.error(
                self.of(&value.span()),
                Problem::Duration { field: field.to_owned(), value: value.get_ref().clone(), reason: err.to_string() },
            )),
        }
    }

    /// Parses a byte size (see [`size::parse`]), refusing zero.
    pub(crate) fn size(self, field: &str, value: &Spanned<RawSize>) -> Result<usize, ConfigError> {
        let bad = |reason: &str| {
            self.error(
                self.of(&value.span()),
                Problem::Size {
                    field: field.to_owned(),
                    value: value.get_ref().to_string(),
                    reason: reason.to_owned(),
                },
            )
        };
        let bytes = match value.get_ref() {
            RawSize::Bytes(bytes) => {
                u64::try_from(*bytes).map_err(|_| bad("must not be negative"))?
            }
            RawSize::Text(text) => size::parse(text).map_err(|reason| bad(&reason))?,
        };
        if bytes == 0 {
            return Err(bad("must be larger than zero"));
        }
        usize::try_from(bytes).map_err(|_| bad("too large for this machine"))
    }

    /// Checks a whole number that must be at least 1 and fit in a `u32`.
    pub(crate) fn count(self, field: &str, value: &Spanned<i64>) -> Result<u32, ConfigError> {
        self.count_from(field, value, 1)
    }

    /// A count of at least `min` (0 where zero means "off").
    pub(crate) fn count_from(self, field: &str, value: &Spanned<i64>, min: i64) -> Result<u32, ConfigError> {
        let number = *value.get_ref();
        let bad = |reason: &str| {
            self.error(
                self.of(&value.span()),
                Problem::Count {
                    field: field.to_owned(),
                    value: number,
                    reason: reason.to_owned(),
                },
            )
        };
        if number < min {
            return Err(bad(&format!("must be at least {min}")));
        }
        u32::try_from(number).map_err(|_| bad("too large (at most 4294967295)"))
    }
}

/// A byte size as written: a TOML integer (bytes) or a string such as `"4MiB"`.
pub(crate) enum RawSize {
    Bytes(i64),
    Text(String),
}

impl fmt::Display for RawSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RawSize::Bytes(bytes) => write!(f, "{bytes}"),
            RawSize::Text(text) => f.write_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<RawSize, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RawSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as \"4MiB\" or a whole number of bytes")
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<RawSize, E> {
                Ok(RawSize::Bytes(value))
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<RawSize, E> {
                i64::try_from(value)
                    .map(RawSize::Bytes)
                    .map_err(|_| E::custom("size too large"))
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<RawSize, E> {
                Ok(RawSize::Text(value.to_owned()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}
