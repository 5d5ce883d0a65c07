//! Partition values in directory names, as Hive and Spark write them: a value is stored
//! percent-encoded where its characters cannot stand in a path (`symbol=%5EGSPC` for `^GSPC`),
//! and read back percent-decoded, so that any symbol name round-trips.
//!
//! Reading decodes every `%XX` escape (as Hive, Spark and DataFusion do), so a directory written
//! by any of them reads as the value it was written for; a directory whose name is not escaped
//! (`symbol=^GSPC`, `symbol=Ü1`) reads as itself. Writing escapes the characters Hive escapes
//! (controls, `"#%'*/:=?\{[]^` and DEL), and leaves every other character, non-ASCII included.

/// The characters Hive's `escapePathName` (and Spark's) writes as `%XX`: ASCII controls and DEL
/// besides these.
const ESCAPED: &[u8] = b"\"#%'*/:=?\\{[]^";

/// `value` as a partition directory spells it (Hive's escaping).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::data::{decode_partition_value, encode_partition_value};
/// assert_eq!(encode_partition_value("^GSPC"), "%5EGSPC");
/// assert_eq!(encode_partition_value("BRK.B"), "BRK.B");
/// assert_eq!(encode_partition_value("a/b"), "a%2Fb");
/// assert_eq!(decode_partition_value("%5EGSPC").as_deref(), Some("^GSPC"));
/// ```
#[must_use]
pub fn encode_partition_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c.is_ascii() && (c.is_ascii_control() || ESCAPED.contains(&(c as u8))) {
            out.push_str(&format!("%{:02X}", c as u8));
        } else {
            out.push(c);
        }
    }
    out
}

/// The value a partition directory's name spells: every `%XX` escape decoded; `None` when the
/// decoded bytes are not UTF-8 (no symbol can be named so). A `%` not followed by two hex
/// digits stands for itself.
#[must_use]
pub fn decode_partition_value(raw: &str) -> Option<String> {
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_round_trips() {
        for symbol in [
            "^GSPC",
            "Ü1",
            "|",
            "%",
            "%2F",
            "#",
            "*",
            "?",
            "\\",
            "{}",
            "[]",
            "~",
            "\"",
            "<>",
            "ES=F",
            "BRK.B",
            "BF-B",
            "RDS A",
            "A:B",
            "a/b",
            "tab\there",
            "100%",
            "ÅÄÖ/ß",
        ] {
            let encoded = encode_partition_value(symbol);
            assert!(!encoded.contains('/'), "{encoded}");
            assert_eq!(decode_partition_value(&encoded).as_deref(), Some(symbol));
        }
    }

    #[test]
    fn hive_and_spark_spellings_read_as_their_values() {
        // Spark writes these; a directory spelled without escapes reads as itself.
        assert_eq!(decode_partition_value("A%3AB").as_deref(), Some("A:B"));
        assert_eq!(decode_partition_value("^GSPC").as_deref(), Some("^GSPC"));
        assert_eq!(decode_partition_value("100%").as_deref(), Some("100%"));
        assert_eq!(decode_partition_value("%C3%9C1").as_deref(), Some("Ü1"));
        assert_eq!(decode_partition_value("%FF"), None);
    }
}
