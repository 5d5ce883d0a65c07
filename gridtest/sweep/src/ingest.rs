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
//! * With `--symbol`, an input column named `symbol`, `sym` or `ticker` must hold that symbol on
//!   every row: an input of several symbols is refused, naming the row, never merged into one.
//! * All or nothing: every partition is first written to a staging area under the output root
//!   (`_ingest-…/`, a hidden name no sweep reads), and moved into place only once all of them
//!   are written; an ingest that fails while writing (a full disk, a store error) removes the
//!   staging area and leaves the dataset as it was.
//! * A symbol is written under the directory that already holds it, whatever its spelling, else
//!   Hive-escaped (`symbol=%5EGSPC` for `^GSPC`; see [`crate::data::encode_partition_value`]).

mod csv_input;
mod parquet_input;
mod partitions;
mod rows;
mod staging;

use std::collections::BTreeMap;
use std::path::PathBuf;

use datafusion::arrow::datatypes::TimeUnit;
use serde::Serialize;

use crate::data::Dataset;

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

/// Runs an ingest (see the module docs).
///
/// # Errors
/// [`IngestError`] naming the input and line or row at fault; nothing is written then.
pub async fn ingest(spec: &IngestSpec) -> Result<IngestSummary, IngestError> {
    check_settings(spec)?;
    let mut by_symbol: BTreeMap<String, rows::Rows> = BTreeMap::new();
    let mut summary = IngestSummary::default();
    for path in &spec.inputs {
        let parquet = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
        summary.rows += if parquet {
            parquet_input::read_parquet(spec, path, &mut by_symbol)?
        } else {
            csv_input::read_csv(spec, path, &mut by_symbol)?
        };
    }
    for (symbol, rows) in &mut by_symbol {
        put_in_order(spec, symbol, rows)?;
    }
    let (store, root) = spec.output.store()?;
    let existing = staging::symbol_dirs(&spec.output, &*store, &root).await?;
    let area = staging::Staging::new(&spec.output, &root)?;
    let written = async {
        let mut staged = Vec::new();
        for (symbol, rows) in &by_symbol {
            let dir = existing.get(symbol).cloned().unwrap_or_else(|| {
                format!("symbol={}", crate::data::encode_partition_value(symbol))
            });
            let at = (&*store, area.path(), &root);
            let symbol = (symbol.as_str(), dir.as_str());
            staged.extend(
                partitions::stage_symbol(&spec.output, at, symbol, rows, &mut summary).await?,
            );
        }
        partitions::commit(&spec.output, &*store, staged, &mut summary).await
    }
    .await;
    area.remove(&*store).await;
    written.map(|()| summary)
}

fn check_settings(spec: &IngestSpec) -> Result<(), IngestError> {
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
    Ok(())
}

/// Sorts a symbol's rows by time (with `sort`), or rejects the first that goes backwards.
fn put_in_order(spec: &IngestSpec, symbol: &str, rows: &mut rows::Rows) -> Result<(), IngestError> {
    if symbol.is_empty() {
        return Err(IngestError::Settings(
            "an empty symbol is not usable".into(),
        ));
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
    Ok(())
}
