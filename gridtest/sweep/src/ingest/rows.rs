//! Input rows and the checks every row passes, whatever its format.

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use datafusion::arrow::datatypes::TimeUnit;

use super::TsFormat;
use crate::strategy::DataKind;

/// One input row: timestamp (ns, UTC), where it came from (`line N` / `row N`), values.
pub(super) type Row = (i64, String, Vec<f64>);

/// Rows of one symbol.
pub(super) type Rows = Vec<Row>;

/// The columns a `--symbol` ingest checks rather than ignores: named `symbol`, `sym` or
/// `ticker` (any case). Their every value must be the symbol given.
pub(super) fn is_symbol_column(name: &str) -> bool {
    ["symbol", "sym", "ticker"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

/// A row of an input with a `symbol` column that names another symbol than `--symbol`.
pub(super) fn other_symbol(found: &str, given: &str) -> String {
    format!(
        "the input's symbol column says `{found}`, not `{given}` (--symbol): give --symbol-col \
         to write each of its symbols as its own, or an input of `{given}` only"
    )
}

pub(super) fn parse_ts(text: &str, format: &TsFormat) -> Result<i64, String> {
    let text = text.trim();
    let nanos = |dt: DateTime<Utc>| {
        dt.timestamp_nanos_opt()
            .ok_or_else(|| format!("timestamp {text} is out of range"))
    };
    match format {
        TsFormat::Epoch(unit) => {
            let v: i64 = text
                .parse()
                .map_err(|_| format!("`{text}` is not an integer timestamp"))?;
            let factor = match unit {
                TimeUnit::Second => 1_000_000_000,
                TimeUnit::Millisecond => 1_000_000,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1,
            };
            v.checked_mul(factor)
                .ok_or_else(|| format!("timestamp {text} is out of range"))
        }
        TsFormat::Text { format, tz } => {
            if let Ok(dt) = DateTime::parse_from_rfc3339(text) {
                return nanos(dt.with_timezone(&Utc));
            }
            let naive = NaiveDateTime::parse_from_str(text, format)
                .map_err(|e| format!("`{text}` does not match `{format}`: {e}"))?;
            match tz.from_local_datetime(&naive) {
                chrono::LocalResult::Single(dt) => nanos(dt.with_timezone(&Utc)),
                chrono::LocalResult::Ambiguous(first, _) => nanos(first.with_timezone(&Utc)),
                chrono::LocalResult::None => Err(format!(
                    "`{text}` does not exist in {tz} (a daylight-saving gap)"
                )),
            }
        }
    }
}

pub(super) fn check_values(kind: DataKind, values: &[f64]) -> Result<(), String> {
    for (name, v) in kind.columns().iter().zip(values) {
        let price = kind.price_columns().contains(name);
        let ok = v.is_finite() && if price { *v > 0.0 } else { *v >= 0.0 };
        if !ok {
            let rule = if price {
                "prices must be finite and positive"
            } else {
                "must be finite and not negative"
            };
            return Err(format!("`{name}` = {v}: {rule}"));
        }
    }
    Ok(())
}
