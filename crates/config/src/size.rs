//! Byte sizes such as `"4MiB"`, `"512 KiB"` or `"1000000"`.
//!
//! Hand-written rather than taken from a crate (`bytesize`, `parse-size`, ...): the grammar
//! we want is a dozen lines — a whole number and one of seven units — and writing it out
//! keeps it exact. The crates also accept fractions, bits, or single-letter units whose
//! base (1000 or 1024) differs from crate to crate and version to version, which is the
//! kind of ambiguity a limit in a config file should not have.

/// The units a size may end with, lowercase, and what they multiply by.
///
/// `KB`, `MB`, `GB` are decimal (SI); `KiB`, `MiB`, `GiB` are binary (IEC).
const UNITS: [(&str, u64); 7] = [
    ("b", 1),
    ("kb", 1000),
    ("mb", 1000 * 1000),
    ("gb", 1000 * 1000 * 1000),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
];

/// Parses a whole number of bytes with an optional unit (case-insensitive, optionally
/// after spaces): `B`, `KB`, `MB`, `GB` (powers of 1000), `KiB`, `MiB`, `GiB` (powers of
/// 1024). A bare number is bytes.
///
/// # Errors
/// A reason, if `text` is not of that form or the size does not fit in a `u64`.
pub(crate) fn parse(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(
            "expected a whole number of bytes, optionally followed by B, KB, MB, GB, KiB, MiB \
             or GiB"
                .to_owned(),
        );
    }
    let unit = unit.trim_start();
    let multiplier = if unit.is_empty() {
        1
    } else {
        UNITS
            .iter()
            .find(|(name, _)| unit.eq_ignore_ascii_case(name))
            .map(|&(_, multiplier)| multiplier)
            .ok_or_else(|| {
                format!("unknown unit `{unit}` (expected B, KB, MB, GB, KiB, MiB or GiB)")
            })?
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|number| number.checked_mul(multiplier))
        .ok_or_else(|| "too large".to_owned())
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn sizes_parse_with_and_without_units() {
        assert_eq!(parse("1000000"), Ok(1_000_000));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("17B"), Ok(17));
        assert_eq!(parse("4MiB"), Ok(4 * 1024 * 1024));
        assert_eq!(parse("512KiB"), Ok(512 * 1024));
        assert_eq!(parse("512 kib"), Ok(512 * 1024));
        assert_eq!(parse("2GiB"), Ok(2 << 30));
        assert_eq!(parse("3kB"), Ok(3000));
        assert_eq!(parse("3KB"), Ok(3000));
        assert_eq!(parse("5MB"), Ok(5_000_000));
        assert_eq!(parse(" 1GB "), Ok(1_000_000_000));
    }

    #[test]
    fn malformed_sizes_are_refused_with_a_reason() {
        for bad in [
            "",
            "MiB",
            "-1",
            "1.5MiB",
            "4 M",
            "4MiBs",
            "4 mebibytes",
            "0x10",
            "1e6",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        assert!(parse("4 M").unwrap_err().contains("unknown unit `M`"));
        assert_eq!(parse("99999999999999999999"), Err("too large".to_owned()));
        assert_eq!(parse("17179869184GiB"), Err("too large".to_owned()));
    }
}
