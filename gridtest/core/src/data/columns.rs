//! Columnar shard data for the engine: `FeedBatch` (typed slices over Arrow buffers), the
//! `ShardData` a loader shares by `Arc`, and the checks every batch passes once, at load.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::NaiveDate;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, TimestampNanosecondType};
use serde::{Deserialize, Serialize};

use super::error::{DataError, Result};
use super::feed_batch::FeedBatch;
use super::shard::Shard;
use crate::strategy::DataKind;

/// Nanoseconds in a (UTC) day: timestamps are nanoseconds since the epoch.
pub(crate) const NS_PER_DAY: i64 = 86_400_000_000_000;

/// One Parquet file of a shard, as listed and inspected (footer only).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    /// Full URL of the object.
    pub url: String,
    /// Size in bytes.
    pub size: u64,
    /// The store's ETag, when it gives one.
    pub e_tag: Option<String>,
    /// Its `date=` partition.
    pub date: NaiveDate,
    /// Rows, from the footer.
    pub rows: u64,
    /// Its path in the dataset's store, as listed (what the scan reads).
    #[serde(skip)]
    pub location: object_store::path::Path,
}

/// What a shard consists of: its files, in read order (by path: date, then file name).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// The shard.
    pub shard: Shard,
    /// Ticks or bars.
    pub kind: DataKind,
    /// Its files.
    pub files: Vec<FileInfo>,
}

impl ShardInfo {
    /// Total rows.
    #[must_use]
    pub fn n_rows(&self) -> u64 {
        self.files.iter().map(|f| f.rows).sum()
    }

    /// Distinct dates that hold at least one row.
    #[must_use]
    pub fn n_days(&self) -> u32 {
        let days: BTreeSet<_> = self
            .files
            .iter()
            .filter(|f| f.rows > 0)
            .map(|f| f.date)
            .collect();
        u32::try_from(days.len()).unwrap_or(u32::MAX)
    }

    /// Bytes the shard takes in memory once loaded.
    #[must_use]
    pub fn bytes_in_memory(&self) -> u64 {
        let member = if self.shard.is_universe() { 4 } else { 0 };
        self.n_rows() * (8 * (1 + self.kind.columns().len() as u64) + member)
    }

    /// The files of one of the shard's symbols (`symbol=…` in their path), as that symbol's
    /// own shard.
    #[must_use]
    pub fn member(&self, symbol: &str) -> Self {
        let dir = format!("/symbol={symbol}/");
        Self {
            shard: self.shard.member(symbol),
            kind: self.kind,
            files: self
                .files
                .iter()
                .filter(|f| f.url.contains(&dir))
                .cloned()
                .collect(),
        }
    }
}

/// A loaded, checked shard: its batches in time order. Shared by `Arc` between scorers.
#[derive(Clone, Debug)]
pub struct ShardData {
    info: ShardInfo,
    n_days: u32,
    batches: Vec<FeedBatch>,
}

impl ShardData {
    /// A shard's data from its description and batches already loaded (a cached slice).
    pub fn from_parts(info: ShardInfo, batches: Vec<FeedBatch>) -> Self {
        Self {
            n_days: info.n_days(),
            info,
            batches,
        }
    }

    pub(crate) fn from_parts_with_days(
        info: ShardInfo,
        n_days: u32,
        batches: Vec<FeedBatch>,
    ) -> Self {
        Self {
            info,
            n_days,
            batches,
        }
    }

    /// A tick shard from columns in memory (for tests and custom sources), checked like a file:
    /// prices finite and positive, sizes finite and non-negative, timestamps non-decreasing.
    ///
    /// # Errors
    /// [`DataError::BadValue`] or [`DataError::Backwards`] naming the row (file `memory`).
    pub fn from_ticks(
        shard: Shard,
        ts: Vec<i64>,
        price: Vec<f64>,
        size: Vec<f64>,
        n_days: u32,
    ) -> Result<Self> {
        Self::from_columns(shard, DataKind::Ticks, ts, vec![price, size], n_days)
    }

    /// A bar shard from columns in memory; see [`ShardData::from_ticks`].
    ///
    /// # Errors
    /// As [`ShardData::from_ticks`].
    pub fn from_columns(
        shard: Shard,
        kind: DataKind,
        ts: Vec<i64>,
        cols: Vec<Vec<f64>>,
        n_days: u32,
    ) -> Result<Self> {
        let rows = ts.len() as u64;
        let info = ShardInfo {
            files: vec![FileInfo {
                url: "memory".to_owned(),
                size: 0,
                e_tag: None,
                date: shard.first(),
                rows,
                location: object_store::path::Path::default(),
            }],
            shard,
            kind,
        };
        let batch = FeedBatch::new(ts, cols);
        let info = Arc::new(info);
        let mut check = Checker::new(Arc::clone(&info));
        check.skip_partition_dates = true;
        check.batch(&batch)?;
        let info = Arc::unwrap_or_clone(info);
        Ok(Self {
            info,
            n_days,
            batches: vec![batch],
        })
    }

    /// The shard.
    #[must_use]
    pub fn shard(&self) -> &Shard {
        &self.info.shard
    }

    /// Its files.
    #[must_use]
    pub fn info(&self) -> &ShardInfo {
        &self.info
    }

    /// Ticks or bars.
    #[must_use]
    pub fn kind(&self) -> DataKind {
        self.info.kind
    }

    /// Distinct dates with data.
    #[must_use]
    pub fn n_days(&self) -> u32 {
        self.n_days
    }

    /// Events.
    #[must_use]
    pub fn n_rows(&self) -> u64 {
        self.batches.iter().map(|b| b.len() as u64).sum()
    }

    /// The batches, in time order.
    #[must_use]
    pub fn batches(&self) -> &[FeedBatch] {
        &self.batches
    }

    /// Bytes held.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.n_rows() * 8 * (1 + self.info.kind.columns().len() as u64)
    }
}

/// Checks batches in read order, attributing each row to its file by the footers' row counts.
pub(crate) struct Checker {
    info: Arc<ShardInfo>,
    file: usize,
    row_in_file: u64,
    previous: Option<(i64, usize)>,
    rows: u64,
    pub(crate) skip_partition_dates: bool,
}

impl Checker {
    pub(crate) fn new(info: Arc<ShardInfo>) -> Self {
        Self {
            info,
            file: 0,
            row_in_file: 0,
            previous: None,
            rows: 0,
            skip_partition_dates: false,
        }
    }

    /// Rows checked so far.
    pub(crate) fn rows_checked(&self) -> u64 {
        self.rows
    }

    /// The file the next row belongs to (for error messages).
    pub(crate) fn current_file(&self) -> &str {
        self.info
            .files
            .get(self.file)
            .map_or("(past the last file)", |f| f.url.as_str())
    }

    /// Converts a record batch (table schema: `ts`, then the value columns) and checks it.
    pub(crate) fn record_batch(&mut self, rb: &RecordBatch) -> Result<FeedBatch> {
        let names = self.info.kind.columns();
        let ts = rb.column(0);
        if ts.null_count() > 0 {
            return Err(self.null_error(ts.as_ref(), "ts"));
        }
        let ts = ts
            .as_primitive::<TimestampNanosecondType>()
            .values()
            .clone();
        let mut cols = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let col = rb.column(i + 1);
            if col.null_count() > 0 {
                return Err(self.null_error(col.as_ref(), name));
            }
            cols.push(col.as_primitive::<Float64Type>().values().clone());
        }
        let batch = FeedBatch::from_buffers(ts, cols);
        self.batch(&batch)?;
        Ok(batch)
    }

    fn null_error(&self, col: &dyn Array, name: &str) -> DataError {
        let first = (0..col.len()).find(|&i| col.is_null(i)).unwrap_or(0) as u64;
        let (file, row) = self.locate(first);
        DataError::Null {
            file,
            column: name.to_owned(),
            row,
        }
    }

    /// File and row-in-file of row `offset` of the batch being checked.
    fn locate(&self, offset: u64) -> (String, u64) {
        let (mut file, mut row) = (self.file, self.row_in_file + offset);
        while let Some(f) = self.info.files.get(file) {
            if row < f.rows || file + 1 == self.info.files.len() {
                return (f.url.clone(), row);
            }
            row -= f.rows;
            file += 1;
        }
        ("(unknown file)".to_owned(), row)
    }

    /// Checks a batch, splitting it at file boundaries.
    pub(crate) fn batch(&mut self, batch: &FeedBatch) -> Result<()> {
        self.rows += batch.len() as u64;
        let mut offset = 0;
        while offset < batch.len() {
            while self.info.files.get(self.file).is_some_and(|f| {
                self.row_in_file >= f.rows && self.file + 1 < self.info.files.len()
            }) {
                self.file += 1;
                self.row_in_file = 0;
            }
            let left_in_file = self
                .info
                .files
                .get(self.file)
                .map_or(u64::MAX, |f| f.rows.saturating_sub(self.row_in_file).max(1));
            let n = (batch.len() - offset).min(usize::try_from(left_in_file).unwrap_or(usize::MAX));
            self.segment(&batch.slice(offset, n))?;
            self.row_in_file += n as u64;
            offset += n;
        }
        Ok(())
    }

    /// Checks rows that all belong to the current file.
    fn segment(&mut self, seg: &FeedBatch) -> Result<()> {
        self.check_times(seg.ts())?;
        self.check_values(seg)?;
        if let Some(&last) = seg.ts().last() {
            self.previous = Some((last, self.file));
        }
        Ok(())
    }

    /// The URL of the current file.
    fn file_url(&self) -> String {
        self.info
            .files
            .get(self.file)
            .map_or_else(|| "(unknown file)".to_owned(), |f| f.url.clone())
    }

    /// Timestamps: on the partition's day, and non-decreasing across the whole shard. A row off
    /// its day is reported as such even where it also goes backwards (it is the cause).
    fn check_times(&self, ts: &[i64]) -> Result<()> {
        let file_info = self.info.files.get(self.file);
        let base = self.row_in_file;
        let outside = match (file_info, self.skip_partition_dates) {
            (Some(info), false) => {
                let day = info
                    .date
                    .signed_duration_since(chrono::DateTime::UNIX_EPOCH.date_naive())
                    .num_days();
                let (lo, hi) = (day * NS_PER_DAY, (day + 1) * NS_PER_DAY);
                ts.iter().position(|t| !(lo..hi).contains(t))
            }
            _ => None,
        };
        let mut prev = self.previous.map_or(i64::MIN, |p| p.0);
        let backwards = ts.iter().position(|&t| {
            let back = t < prev;
            prev = t;
            back
        });
        match (outside, backwards) {
            (Some(i), b) if b.is_none_or(|b| i <= b) => Err(DataError::OutsidePartition {
                file: self.file_url(),
                row: base + i as u64,
                ts: ts[i],
                date: file_info.map(|f| f.date.to_string()).unwrap_or_default(),
            }),
            (_, Some(i)) => {
                let (previous, previous_file) = if i == 0 {
                    let (p, f) = self.previous.expect("a first row cannot go backwards");
                    let other = (f != self.file).then(|| self.info.files[f].url.clone());
                    (p, other)
                } else {
                    (ts[i - 1], None)
                };
                Err(DataError::Backwards {
                    file: self.file_url(),
                    row: base + i as u64,
                    ts: ts[i],
                    previous,
                    previous_file,
                })
            }
            _ => Ok(()),
        }
    }

    /// Values: prices finite and positive, sizes finite and not negative, high not below low.
    fn check_values(&self, seg: &FeedBatch) -> Result<()> {
        let base = self.row_in_file;
        let kind = self.info.kind;
        for (name, col) in kind.columns().iter().zip(seg.columns()) {
            let is_price = kind.price_columns().contains(name);
            let bad = if is_price {
                col.iter().position(|&x| !(x > 0.0 && x.is_finite()))
            } else {
                col.iter().position(|&x| !(x >= 0.0 && x.is_finite()))
            };
            if let Some(i) = bad {
                let value = col[i];
                let rule = if value.is_nan() {
                    "NaN"
                } else if value.is_infinite() {
                    "infinite"
                } else if is_price {
                    "prices must be positive"
                } else {
                    "must not be negative"
                };
                return Err(DataError::BadValue {
                    file: self.file_url(),
                    column: (*name).to_owned(),
                    row: base + i as u64,
                    value,
                    rule,
                });
            }
        }
        if kind == DataKind::Bars {
            let (high, low) = (&seg.columns()[1], &seg.columns()[2]);
            if let Some(i) = high.iter().zip(low.iter()).position(|(h, l)| h < l) {
                return Err(DataError::BadValue {
                    file: self.file_url(),
                    column: "high".to_owned(),
                    row: base + i as u64,
                    value: high[i],
                    rule: "high is below low",
                });
            }
        }
        Ok(())
    }
}
