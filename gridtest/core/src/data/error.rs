//! `DataError`: everything that can be wrong with a dataset, each naming the file or shard.

/// An error reading or writing market data. Every variant names the dataset, shard or file at
/// fault, and where it applies the row (0-based, within the file) and the value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The dataset location is not a usable URL or path.
    #[error("invalid dataset location `{location}`: {reason}")]
    InvalidLocation {
        /// What was given.
        location: String,
        /// Why it is unusable.
        reason: String,
    },
    /// The object store could not be reached or refused the request.
    #[error("cannot access `{url}`: {source}")]
    Store {
        /// The URL being accessed.
        url: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// A local dataset root that does not exist or is not a directory.
    #[error("dataset {url}: {reason}")]
    NotFound {
        /// The dataset URL.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Objects under the dataset root break the `symbol=…/date=YYYY-MM-DD/*.parquet` layout:
    /// data a user expects read would not be. Every such object is listed.
    #[error("dataset {url} breaks the `symbol=…/date=YYYY-MM-DD/*.parquet` layout:{}", list(.problems))]
    Layout {
        /// The dataset URL.
        url: String,
        /// Every problem, by path.
        problems: Vec<super::layout::LayoutProblem>,
    },
    /// A universe shard whose members cannot be merged (other symbols, other kinds of data).
    #[error("universe {shard}: {reason}")]
    Universe {
        /// The universe shard.
        shard: String,
        /// What does not fit.
        reason: String,
    },
    /// The dataset holds no `symbol=…` partitions.
    #[error("no `symbol=…/date=…` partitions under {url}{hint}")]
    Empty {
        /// The dataset URL.
        url: String,
        /// What to do instead, when the folder holds something else (CSV files: `ingest`);
        /// starts with `: ` when not empty.
        hint: String,
    },
    /// This node does not see the files the sweep's manifest recorded for a shard (another
    /// copy of the data at the same path, a missing mount, a file changed since the sweep was
    /// planned), or cannot list them: a fault of the node's view of the data, found before
    /// any row is read. Nothing of the shard is read.
    #[error("shard {shard} is not as the sweep recorded it here: {reason}")]
    NotAsRecorded {
        /// The shard.
        shard: String,
        /// What differs (or why the listing failed).
        reason: String,
        /// The shard's files as this node lists them (empty when the listing failed).
        listing: Vec<super::layout::ListedFile>,
    },
    /// A requested symbol is not in the dataset.
    #[error("symbol `{symbol}` is not in {url} (symbols there: {known})")]
    UnknownSymbol {
        /// The symbol.
        symbol: String,
        /// The dataset URL.
        url: String,
        /// Symbols present (first few).
        known: String,
    },
    /// A shard's date range holds no files.
    #[error("shard {shard} has no Parquet files{}", .covers.as_ref().map(|c| format!(" (the data of this symbol cover {c})")).unwrap_or_default())]
    NoFiles {
        /// The shard.
        shard: String,
        /// The dates the symbol's data do cover, `FIRST..LAST`, when it has any.
        covers: Option<String>,
    },
    /// A file is not readable Parquet.
    #[error("unreadable Parquet file {file}: {reason}")]
    Unreadable {
        /// The file.
        file: String,
        /// The reader's message.
        reason: String,
    },
    /// A required column is absent.
    #[error("{file}: missing column `{column}` (columns present: {present})")]
    MissingColumn {
        /// The file.
        file: String,
        /// The column.
        column: String,
        /// The file's columns.
        present: String,
    },
    /// A column has a type that cannot be read as required.
    #[error("{file}: column `{column}` has type {found}, expected {expected}")]
    WrongType {
        /// The file.
        file: String,
        /// The column.
        column: String,
        /// What the reader needs.
        expected: String,
        /// What the file has.
        found: String,
    },
    /// A value is null.
    #[error("{file}: column `{column}` is null at row {row}")]
    Null {
        /// The file.
        file: String,
        /// The column.
        column: String,
        /// Row within the file.
        row: u64,
    },
    /// A price or size breaks its rule (NaN, infinite, not positive, negative size, high < low).
    #[error("{file}: column `{column}` = {value} at row {row} is invalid ({rule})")]
    BadValue {
        /// The file.
        file: String,
        /// The column.
        column: String,
        /// Row within the file.
        row: u64,
        /// The value.
        value: f64,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// Timestamps go backwards within a shard.
    #[error("{file}: timestamp goes backwards at row {row}: {} after {}{}", timestamp(*.ts), timestamp(*.previous),
        .previous_file.as_ref().map(|f| format!(" (last row of {f})")).unwrap_or_default())]
    Backwards {
        /// The file.
        file: String,
        /// Row within the file.
        row: u64,
        /// The offending timestamp (ns).
        ts: i64,
        /// The timestamp before it (ns).
        previous: i64,
        /// The file holding the previous row, when it is another file.
        previous_file: Option<String>,
    },
    /// A timestamp lies outside its `date=` partition's day (UTC).
    #[error("{file}: timestamp {} at row {row} is not on the partition's date {date}", timestamp(*.ts))]
    OutsidePartition {
        /// The file.
        file: String,
        /// Row within the file.
        row: u64,
        /// The timestamp (ns).
        ts: i64,
        /// The partition date.
        date: String,
    },
    /// DataFusion failed while reading a shard.
    #[error("reading shard {shard} (at {file}): {source}")]
    Query {
        /// The shard.
        shard: String,
        /// The file being read when it failed (best knowledge).
        file: String,
        /// DataFusion's error.
        #[source]
        source: Box<datafusion::error::DataFusionError>,
    },
    /// The scan read another number of rows than the listed files' footers hold (the files
    /// changed while being read).
    #[error(
        "shard {shard}: read {read} rows but its listed files hold {listed}; did the data change during the read?"
    )]
    RowCount {
        /// The shard.
        shard: String,
        /// Rows the scan returned.
        read: u64,
        /// Rows the footers of the listed files hold.
        listed: u64,
    },
    /// Writing a file failed.
    #[error("cannot write {file}: {reason}")]
    Write {
        /// The file.
        file: String,
        /// Why.
        reason: String,
    },
}

/// A timestamp in ns as RFC 3339 (UTC) with the raw value: `2024-01-03T15:00:00Z (1704294000000000000 ns)`.
#[must_use]
pub(crate) fn timestamp(ns: i64) -> String {
    let time = chrono::DateTime::from_timestamp_nanos(ns);
    format!(
        "{} ({ns} ns)",
        time.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
    )
}

/// Lists items one per line, the first 20 and a count of the rest.
fn list<T: std::fmt::Display>(items: &[T]) -> String {
    let mut text: String = items
        .iter()
        .take(20)
        .map(|p| format!("\n  - {p}"))
        .collect();
    if items.len() > 20 {
        text.push_str(&format!("\n  - … and {} more", items.len() - 20));
    }
    text
}

/// `Result` with [`DataError`].
pub type Result<T, E = DataError> = std::result::Result<T, E>;
