//! Ingest: converts CSV (or Parquet with other column names) of ticks or bars into the dataset
//! layout `ROOT/symbol=S/date=D/part-0.parquet`, with a column mapping, time-zone handling and
//! the reader's checks, and reports what it wrote.
//!
//! * Timestamps are read from a text column (RFC 3339 with an offset, or a `--ts-format` in
//!   the `--tz` time zone, IANA names with daylight saving), from a number of seconds,
//!   milliseconds, microseconds or nanoseconds since the epoch (`--ts-unit`), or from a Parquet
//!   timestamp column (its own zone or UTC). They are stored in UTC, and the `date=` partition is
//!   the UTC date.
//! * Every row is checked like the reader checks files: prices finite and positive, sizes and
//!   volumes finite and non-negative, timestamps not going backwards within a symbol (or sorted
//!   first with `sort`); an error names the input file and line (CSV) or row (Parquet).
//! * Re-running is idempotent: each partition it writes is replaced as a whole (`part-0.parquet`,
//!   other Parquet files of that partition removed), with the same bytes for the same input.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, RecordBatch, TimestampNanosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int64Type, TimeUnit, TimestampNanosecondType,
};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use serde::Serialize;

use crate::data::synth::write_parquet;
use crate::data::{Dataset, table_schema};
use crate::strategy::DataKind;

/// Errors of an ingest, each naming the input and, where it applies, the line or row.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The settings are contradictory or incomplete.
    #[error("ingest settings: {0}")]
    Settings(String),
    /// An input cannot be read.
    #[error("{file}: {reason}")]
    Read {
        /// The input.
        file: String,
        /// Why.
        reason: String,
    },
    /// A row is invalid.
    #[error("{file}, {row}: {reason}")]
    Row {
        /// The input.
        file: String,
        /// `line N` (CSV, 1-based, header included) or `row N` (Parquet, 0-based).
        row: String,
        /// What is wrong.
        reason: String,
    },
    /// Writing the output failed.
    #[error(transparent)]
    Write(#[from] crate::data::DataError),
}

/// How text timestamps are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TsFormat {
    /// RFC 3339 with an offset (e.g. `2024-01-02T14:30:00.5Z`), else `format` in `tz`.
    Text {
        /// A chrono format for timestamps without an offset.
        format: String,
        /// Their time zone.
        tz: chrono_tz::Tz,
    },
    /// A number of units since the Unix epoch.
    Epoch(TimeUnit),
}

/// What to ingest and how.
#[derive(Clone, Debug)]
pub struct IngestSpec {
    /// Input files (CSV or Parquet, by extension).
    pub inputs: Vec<PathBuf>,
    /// Output dataset.
    pub output: Dataset,
    /// The symbol column, or `None` with `symbol` set.
    pub symbol_column: Option<String>,
    /// The symbol of every row when there is no symbol column.
    pub symbol: Option<String>,
    /// The timestamp column.
    pub ts_column: String,
    /// How its text or numbers are read.
    pub ts_format: TsFormat,
    /// Input column for each value column of the kind, in the kind's order.
    pub value_columns: Vec<String>,
    /// CSV delimiter.
    pub delimiter: u8,
    /// Sort each symbol by time instead of rejecting rows that go backwards.
    pub sort: bool,
}

/// What an ingest wrote.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IngestSummary {
    /// Rows read.
    pub rows: u64,
    /// Per symbol: rows, days, first and last timestamp (RFC 3339).
    pub symbols: BTreeMap<String, SymbolSummary>,
    /// Partitions written.
    pub partitions: usize,
    /// Stale Parquet files removed from those partitions.
    pub removed: usize,
}

/// What an ingest wrote for one symbol.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SymbolSummary {
    /// Rows.
    pub rows: u64,
    /// Days.
    pub days: usize,
    /// First timestamp.
    pub first: String,
    /// Last timestamp.
    pub last: String,
}

/// One input row: timestamp (ns, UTC), where it came from (`line N` / `row N`), values.
type Row = (i64, String, Vec<f64>);

/// Rows of one symbol.
type Rows = Vec<Row>;

fn parse_ts(text: &str, format: &TsFormat) -> Result<i64, String> {
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

fn check_values(kind: DataKind, values: &[f64]) -> Result<(), String> {
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

fn read_csv(
    spec: &IngestSpec,
    path: &Path,
    out: &mut BTreeMap<String, Rows>,
) -> Result<u64, IngestError> {
    let file = path.display().to_string();
    let read_err = |reason: String| IngestError::Read {
        file: file.clone(),
        reason,
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(spec.delimiter)
        .from_path(path)
        .map_err(|e| read_err(e.to_string()))?;
    let headers = reader
        .headers()
        .map_err(|e| read_err(e.to_string()))?
        .clone();
    let index = |name: &str| {
        headers.iter().position(|h| h == name).ok_or_else(|| {
            read_err(format!(
                "no column `{name}` (columns: {})",
                headers.iter().collect::<Vec<_>>().join(", ")
            ))
        })
    };
    let ts = index(&spec.ts_column)?;
    let values: Vec<usize> = spec
        .value_columns
        .iter()
        .map(|c| index(c))
        .collect::<Result<_, _>>()?;
    let symbol = spec.symbol_column.as_deref().map(index).transpose()?;
    let kind = spec.output.kind();
    let mut rows = 0;
    for (i, record) in reader.records().enumerate() {
        let line = format!("line {}", i + 2);
        let row_err = |reason: String| IngestError::Row {
            file: file.clone(),
            row: line.clone(),
            reason,
        };
        let record = record.map_err(|e| row_err(e.to_string()))?;
        let t = parse_ts(&record[ts], &spec.ts_format).map_err(row_err)?;
        let vals: Vec<f64> = values
            .iter()
            .zip(kind.columns())
            .map(|(&c, name)| {
                record[c]
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| format!("`{name}` = `{}` is not a number", &record[c]))
            })
            .collect::<Result<_, _>>()
            .map_err(row_err)?;
        check_values(kind, &vals).map_err(row_err)?;
        let sym = match symbol {
            Some(c) => record[c].trim().to_owned(),
            None => spec.symbol.clone().unwrap_or_default(),
        };
        out.entry(sym).or_default().push((t, line.clone(), vals));
        rows += 1;
    }
    Ok(rows)
}

fn column<'a>(batch: &'a RecordBatch, name: &str, file: &str) -> Result<&'a ArrayRef, IngestError> {
    batch.column_by_name(name).ok_or_else(|| IngestError::Read {
        file: file.to_owned(),
        reason: format!(
            "no column `{name}` (columns: {})",
            batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

fn read_parquet(
    spec: &IngestSpec,
    path: &Path,
    out: &mut BTreeMap<String, Rows>,
) -> Result<u64, IngestError> {
    let file = path.display().to_string();
    let read_err = |reason: String| IngestError::Read {
        file: file.clone(),
        reason,
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(path).map_err(|e| read_err(e.to_string()))?,
    )
    .map_err(|e| read_err(e.to_string()))?
    .build()
    .map_err(|e| read_err(e.to_string()))?;
    let kind = spec.output.kind();
    let mut base = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| read_err(e.to_string()))?;
        let ts_col = column(&batch, &spec.ts_column, &file)?;
        let ts: Vec<Result<i64, String>> = match ts_col.data_type() {
            DataType::Timestamp(_, _) => {
                let utc = cast(
                    ts_col,
                    &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                )
                .map_err(|e| read_err(e.to_string()))?;
                let a = utc.as_primitive::<TimestampNanosecondType>();
                (0..a.len())
                    .map(|i| {
                        if a.is_null(i) {
                            Err("null timestamp".into())
                        } else {
                            Ok(a.value(i))
                        }
                    })
                    .collect()
            }
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                let s = cast(ts_col, &DataType::Utf8).map_err(|e| read_err(e.to_string()))?;
                let s = s.as_string::<i32>();
                (0..s.len())
                    .map(|i| {
                        if s.is_null(i) {
                            Err("null timestamp".into())
                        } else {
                            parse_ts(s.value(i), &spec.ts_format)
                        }
                    })
                    .collect()
            }
            dt if dt.is_integer() => {
                let n = cast(ts_col, &DataType::Int64).map_err(|e| read_err(e.to_string()))?;
                let n = n.as_primitive::<Int64Type>();
                (0..n.len())
                    .map(|i| {
                        if n.is_null(i) {
                            Err("null timestamp".into())
                        } else {
                            parse_ts(&n.value(i).to_string(), &spec.ts_format)
                        }
                    })
                    .collect()
            }
            other => {
                return Err(read_err(format!(
                    "column `{}` has type {other}: not a timestamp",
                    spec.ts_column
                )));
            }
        };
        let mut values: Vec<Float64Array> = Vec::new();
        for name in &spec.value_columns {
            let c = cast(column(&batch, name, &file)?, &DataType::Float64)
                .map_err(|e| read_err(format!("column `{name}`: {e}")))?;
            values.push(c.as_primitive::<Float64Type>().clone());
        }
        let symbols = match &spec.symbol_column {
            Some(name) => Some(
                cast(column(&batch, name, &file)?, &DataType::Utf8)
                    .map_err(|e| read_err(e.to_string()))?,
            ),
            None => None,
        };
        for (i, t) in ts.into_iter().enumerate() {
            let row = format!("row {}", base + i as u64);
            let row_err = |reason: String| IngestError::Row {
                file: file.clone(),
                row: row.clone(),
                reason,
            };
            let t = t.map_err(row_err)?;
            let vals: Vec<f64> = values
                .iter()
                .zip(kind.columns())
                .map(|(v, name)| {
                    if v.is_null(i) {
                        Err(format!("`{name}` is null"))
                    } else {
                        Ok(v.value(i))
                    }
                })
                .collect::<Result<_, _>>()
                .map_err(row_err)?;
            check_values(kind, &vals).map_err(row_err)?;
            let sym = match &symbols {
                Some(s) => s.as_string::<i32>().value(i).trim().to_owned(),
                None => spec.symbol.clone().unwrap_or_default(),
            };
            out.entry(sym).or_default().push((t, row.clone(), vals));
        }
        base += batch.num_rows() as u64;
    }
    Ok(base)
}

fn utc_date(ns: i64) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_nanos(ns).date_naive()
}

/// Runs an ingest (see the module docs).
///
/// # Errors
/// [`IngestError`] naming the input and line or row at fault; nothing is written then.
pub async fn ingest(spec: &IngestSpec) -> Result<IngestSummary, IngestError> {
    let kind = spec.output.kind();
    if spec.value_columns.len() != kind.columns().len() {
        return Err(IngestError::Settings(format!(
            "{kind} need {} value columns ({}), got {}",
            kind.columns().len(),
            kind.columns().join(", "),
            spec.value_columns.len()
        )));
    }
    if spec.symbol_column.is_none() == spec.symbol.is_none() {
        return Err(IngestError::Settings(
            "give either a symbol column or a symbol".into(),
        ));
    }
    if spec.inputs.is_empty() {
        return Err(IngestError::Settings("no input files".into()));
    }
    let mut by_symbol: BTreeMap<String, Rows> = BTreeMap::new();
    let mut summary = IngestSummary::default();
    for path in &spec.inputs {
        let parquet = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
        summary.rows += if parquet {
            read_parquet(spec, path, &mut by_symbol)?
        } else {
            read_csv(spec, path, &mut by_symbol)?
        };
    }
    // Order: sort, or reject rows going backwards.
    for (symbol, rows) in &mut by_symbol {
        if symbol.is_empty() || symbol.contains(['/', '=']) {
            return Err(IngestError::Settings(format!(
                "`{symbol}` is not a usable symbol"
            )));
        }
        if spec.sort {
            rows.sort_by_key(|r| r.0);
        } else if let Some(w) = rows.windows(2).find(|w| w[1].0 < w[0].0) {
            return Err(IngestError::Row {
                file: spec
                    .inputs
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                row: w[1].1.clone(),
                reason: format!(
                    "symbol {symbol}: timestamp goes backwards ({} after {}); pass --sort to sort",
                    w[1].0, w[0].0
                ),
            });
        }
    }
    // Write each (symbol, UTC date) partition whole.
    let (store, root) = spec.output.store()?;
    for (symbol, rows) in &by_symbol {
        let mut days: BTreeMap<NaiveDate, Vec<&Row>> = BTreeMap::new();
        for r in rows {
            days.entry(utc_date(r.0)).or_default().push(r);
        }
        let s = summary.symbols.entry(symbol.clone()).or_default();
        s.rows = rows.len() as u64;
        s.days = days.len();
        s.first = DateTime::<Utc>::from_timestamp_nanos(rows[0].0).to_rfc3339();
        s.last = DateTime::<Utc>::from_timestamp_nanos(rows[rows.len() - 1].0).to_rfc3339();
        for (date, day) in days {
            let mut columns: Vec<ArrayRef> = vec![Arc::new(
                TimestampNanosecondArray::from(day.iter().map(|r| r.0).collect::<Vec<_>>())
                    .with_timezone("UTC"),
            )];
            for c in 0..kind.columns().len() {
                columns.push(Arc::new(Float64Array::from(
                    day.iter().map(|r| r.2[c]).collect::<Vec<_>>(),
                )));
            }
            let batch = RecordBatch::try_new(table_schema(kind), columns).map_err(|e| {
                IngestError::Settings(format!("cannot build the {symbol} {date} batch: {e}"))
            })?;
            let dir = root
                .clone()
                .join(format!("symbol={symbol}"))
                .join(format!("date={date}"));
            let stale: Vec<_> = store
                .list(Some(&dir))
                .try_collect::<Vec<_>>()
                .await
                .map_err(|source| crate::data::DataError::Store {
                    url: spec.output.object_url(&dir),
                    source,
                })?;
            let target = dir.clone().join("part-0.parquet");
            for meta in stale {
                if meta.location != target && meta.location.extension() == Some("parquet") {
                    store.delete(&meta.location).await.map_err(|source| {
                        crate::data::DataError::Store {
                            url: spec.output.object_url(&meta.location),
                            source,
                        }
                    })?;
                    summary.removed += 1;
                }
            }
            write_parquet(&*store, &spec.output, &target, &batch).await?;
            summary.partitions += 1;
        }
    }
    Ok(summary)
}
