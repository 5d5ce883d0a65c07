//! `CellSpool`: the final cells of a sweep, streamed to Parquet files in a local folder as they
//! come (a part file per [`ROWS_PER_PART`] cells), so the head holds a bounded buffer whatever
//! the grid's size. The outputs and the leaderboard are computed from these files
//! ([`super::output`]); [`Spool::read_all`] loads them back for small sweeps and tests.
//!
//! A row is a cell: where its set sits in the grid (`set_index`, `set_position`), the set's id,
//! the shard (its ordinal in the sweep's shard list), the metrics ([`METRIC_COLUMNS`], null for
//! a failed cell) and the failure (JSON, null for a successful cell).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Builder, RecordBatch, StringBuilder, UInt32Builder,
    UInt64Builder,
};
use datafusion::arrow::datatypes::{
    DataType, Field, Float64Type, Schema, SchemaRef, UInt32Type, UInt64Type,
};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;

use super::SweepError;
use super::ledger::FinalCell;
use crate::data::{Shard, ShardId};
use crate::engine::{CellFailure, CellOutcome};
use crate::metrics::{METRIC_COLUMNS, MetricColumn, MetricValue, metrics_from};
use crate::params::{ParamSetId, SetPlace};

/// Cells per part file (about 8 MiB of buffers).
pub const ROWS_PER_PART: usize = 65_536;

/// The spool's columns.
#[must_use]
pub fn spool_schema() -> SchemaRef {
    let mut fields = vec![
        Field::new("set_index", DataType::UInt64, false),
        Field::new("set_position", DataType::UInt64, false),
        Field::new("param_set_id", DataType::UInt64, false),
        Field::new("shard", DataType::UInt32, false),
    ];
    fields.extend(metric_fields());
    fields.push(Field::new("failure", DataType::Utf8, true));
    Arc::new(Schema::new(fields))
}

fn spool_error(path: &Path, e: impl std::fmt::Display) -> SweepError {
    SweepError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// An Arrow builder for one metric column.
pub(crate) enum MetricBuilder {
    Count(UInt64Builder),
    Real(Float64Builder),
}

impl MetricBuilder {
    pub(crate) fn new(c: &MetricColumn) -> Self {
        if c.is_count {
            Self::Count(UInt64Builder::new())
        } else {
            Self::Real(Float64Builder::new())
        }
    }

    pub(crate) fn append(&mut self, v: MetricValue) {
        match (self, v) {
            (Self::Count(b), MetricValue::Count(n)) => b.append_value(n),
            (Self::Real(b), MetricValue::Real(x)) => b.append_value(x),
            (Self::Count(b), MetricValue::Real(_)) => b.append_null(),
            (Self::Real(b), MetricValue::Count(n)) => {
                b.append_value(MetricValue::Count(n).as_f64())
            }
        }
    }

    pub(crate) fn append_null(&mut self) {
        match self {
            Self::Count(b) => b.append_null(),
            Self::Real(b) => b.append_null(),
        }
    }

    pub(crate) fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Count(b) => Arc::new(b.finish()),
            Self::Real(b) => Arc::new(b.finish()),
        }
    }
}

/// The metric columns as Arrow fields (counts `UInt64`, reals `Float64`, nullable for failed
/// cells), in [`METRIC_COLUMNS`] order.
pub(crate) fn metric_fields() -> impl Iterator<Item = Field> {
    METRIC_COLUMNS.iter().map(|c| {
        let dt = if c.is_count {
            DataType::UInt64
        } else {
            DataType::Float64
        };
        Field::new(c.name, dt, true)
    })
}

/// Writes final cells to part files.
pub struct CellSpool {
    dir: PathBuf,
    shards: HashMap<ShardId, u32>,
    set_index: UInt64Builder,
    set_position: UInt64Builder,
    param_set_id: UInt64Builder,
    shard: UInt32Builder,
    metrics: Vec<MetricBuilder>,
    failure: StringBuilder,
    buffered: usize,
    parts: u32,
    rows: u64,
}

impl std::fmt::Debug for CellSpool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CellSpool")
            .field("dir", &self.dir)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl CellSpool {
    /// A spool in `dir` (created) for cells of `shards`.
    ///
    /// # Errors
    /// [`SweepError::Output`] if the folder cannot be created.
    pub fn create(dir: &Path, shards: &[Shard]) -> Result<Self, SweepError> {
        std::fs::create_dir_all(dir).map_err(|e| spool_error(dir, e))?;
        Ok(Self {
            dir: dir.to_owned(),
            shards: shards
                .iter()
                .zip(0u32..)
                .map(|(s, i)| (s.id(), i))
                .collect(),
            set_index: UInt64Builder::new(),
            set_position: UInt64Builder::new(),
            param_set_id: UInt64Builder::new(),
            shard: UInt32Builder::new(),
            metrics: METRIC_COLUMNS.iter().map(MetricBuilder::new).collect(),
            failure: StringBuilder::new(),
            buffered: 0,
            parts: 0,
            rows: 0,
        })
    }

    /// Appends a final cell; writes a part file when the buffer is full. A cell of a shard the
    /// spool does not know is ignored (the ledger accepts only the sweep's own cells).
    ///
    /// # Errors
    /// [`SweepError::Output`] if a part cannot be written.
    pub fn push(&mut self, cell: &FinalCell) -> Result<(), SweepError> {
        let Some(&shard) = self.shards.get(&cell.key.shard) else {
            return Ok(());
        };
        self.set_index.append_value(cell.place.index);
        self.set_position.append_value(cell.place.position);
        self.param_set_id.append_value(cell.key.param_set.0);
        self.shard.append_value(shard);
        match &cell.outcome {
            Ok(m) => {
                for (b, c) in self.metrics.iter_mut().zip(&METRIC_COLUMNS) {
                    b.append((c.value)(m));
                }
                self.failure.append_null();
            }
            Err(f) => {
                self.metrics.iter_mut().for_each(MetricBuilder::append_null);
                self.failure
                    .append_value(serde_json::to_string(f).expect("failures serialise"));
            }
        }
        self.buffered += 1;
        if self.buffered >= ROWS_PER_PART {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the buffered cells as a part file.
    ///
    /// # Errors
    /// [`SweepError::Output`] if the part cannot be written.
    pub fn flush(&mut self) -> Result<(), SweepError> {
        if self.buffered == 0 {
            return Ok(());
        }
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.set_index.finish()),
            Arc::new(self.set_position.finish()),
            Arc::new(self.param_set_id.finish()),
            Arc::new(self.shard.finish()),
        ];
        columns.extend(self.metrics.iter_mut().map(MetricBuilder::finish));
        columns.push(Arc::new(self.failure.finish()));
        let batch =
            RecordBatch::try_new(spool_schema(), columns).expect("spool columns match the schema");
        let path = self.dir.join(format!("part-{:06}.parquet", self.parts));
        write_parquet(&path, &batch)?;
        self.parts += 1;
        self.rows += self.buffered as u64;
        self.buffered = 0;
        Ok(())
    }

    /// Writes what is buffered and returns the spool to read.
    ///
    /// # Errors
    /// [`SweepError::Output`] if the last part cannot be written.
    pub fn finish(mut self) -> Result<Spool, SweepError> {
        self.flush()?;
        Ok(Spool {
            dir: self.dir,
            rows: self.rows,
        })
    }
}

/// Writes one batch as a Parquet file (Snappy).
pub(crate) fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<(), SweepError> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let file = File::create(path).map_err(|e| spool_error(path, e))?;
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props))
        .map_err(|e| spool_error(path, e))?;
    writer.write(batch).map_err(|e| spool_error(path, e))?;
    writer.close().map_err(|e| spool_error(path, e))?;
    Ok(())
}

/// A finished spool: its folder and row count.
#[derive(Clone, Debug)]
pub struct Spool {
    dir: PathBuf,
    rows: u64,
}

/// One cell read back from a spool.
#[derive(Clone, Debug, PartialEq)]
pub struct SpoolRow {
    /// Where its set sits in the grid.
    pub place: SetPlace,
    /// The set's id.
    pub param_set: ParamSetId,
    /// Ordinal of its shard.
    pub shard: u32,
    /// Its outcome.
    pub outcome: CellOutcome,
}

impl Spool {
    /// The folder of part files.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Cells in the spool.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The part files, in write order.
    ///
    /// # Errors
    /// [`SweepError::Output`] if the folder cannot be listed.
    pub fn parts(&self) -> Result<Vec<PathBuf>, SweepError> {
        let mut parts: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map_err(|e| spool_error(&self.dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        parts.sort();
        Ok(parts)
    }

    /// Reads every cell back into memory (for small sweeps and tests), in write order.
    ///
    /// # Errors
    /// [`SweepError::Output`] if a part cannot be read.
    pub fn read_all(&self) -> Result<Vec<SpoolRow>, SweepError> {
        let mut rows = Vec::new();
        for part in self.parts()? {
            let file = File::open(&part).map_err(|e| spool_error(&part, e))?;
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                .and_then(ParquetRecordBatchReaderBuilder::build)
                .map_err(|e| spool_error(&part, e))?;
            for batch in reader {
                let batch = batch.map_err(|e| spool_error(&part, e))?;
                rows.extend(decode(&batch).map_err(|e| spool_error(&part, e))?);
            }
        }
        Ok(rows)
    }
}

/// The cells of a batch with the spool's columns (as read back or sorted by DataFusion).
///
/// # Errors
/// A description of the column that is missing or of the wrong type, or of a corrupt failure.
pub fn decode(batch: &RecordBatch) -> Result<Vec<SpoolRow>, String> {
    let u64s = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or_else(|| format!("spool column {name} is missing"))
    };
    let (index, position, id) = (
        u64s("set_index")?,
        u64s("set_position")?,
        u64s("param_set_id")?,
    );
    let shard = batch
        .column_by_name("shard")
        .and_then(|c| c.as_primitive_opt::<UInt32Type>())
        .ok_or("spool column shard is missing")?;
    let failure = batch
        .column_by_name("failure")
        .ok_or("spool column failure is missing")?;
    let failure_at = |i: usize| -> Option<&str> {
        if failure.is_null(i) {
            None
        } else if let Some(c) = failure.as_string_opt::<i32>() {
            Some(c.value(i))
        } else {
            failure.as_string_view_opt().map(|c| c.value(i))
        }
    };
    let metrics: Vec<&ArrayRef> = METRIC_COLUMNS
        .iter()
        .map(|c| {
            batch
                .column_by_name(c.name)
                .ok_or_else(|| format!("spool column {} is missing", c.name))
        })
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let outcome = match failure_at(i) {
            None => Ok(metrics_from(|k, _| metric_at(metrics[k], i))),
            Some(json) => Err(serde_json::from_str::<CellFailure>(json)
                .map_err(|e| format!("spool failure of row {i}: {e}"))?),
        };
        rows.push(SpoolRow {
            place: SetPlace {
                index: index.value(i),
                position: position.value(i),
            },
            param_set: ParamSetId(id.value(i)),
            shard: shard.value(i),
            outcome,
        });
    }
    Ok(rows)
}

/// The metric at row `i` of a metric column.
pub(crate) fn metric_at(column: &ArrayRef, i: usize) -> MetricValue {
    if let Some(c) = column.as_primitive_opt::<UInt64Type>() {
        MetricValue::Count(c.value(i))
    } else {
        MetricValue::Real(
            column
                .as_primitive_opt::<Float64Type>()
                .map_or(f64::NAN, |c| c.value(i)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{CellKey, FailureKind};
    use crate::metrics::Metrics;

    #[test]
    fn cells_round_trip_through_part_files() {
        let dir = tempfile::tempdir().unwrap();
        let shards = [
            Shard::new(
                "A",
                "2024-01-02".parse().unwrap(),
                "2024-01-03".parse().unwrap(),
            ),
            Shard::new(
                "B",
                "2024-01-02".parse().unwrap(),
                "2024-01-03".parse().unwrap(),
            ),
        ];
        let mut spool = CellSpool::create(dir.path(), &shards).unwrap();
        let mut written = Vec::new();
        for i in 0..(ROWS_PER_PART as u64 + 10) {
            let outcome = if i % 1000 == 7 {
                Err(CellFailure {
                    attempts: 3,
                    ..CellFailure::new(FailureKind::Panic, format!("boom {i}"))
                })
            } else {
                Ok(Metrics {
                    n_ticks: i,
                    sharpe: i as f64 / 3.0,
                    total_return: f64::NAN,
                    ..Metrics::default()
                })
            };
            let cell = FinalCell {
                key: CellKey {
                    shard: shards[(i % 2) as usize].id(),
                    param_set: ParamSetId(i * 31),
                },
                place: SetPlace {
                    index: i,
                    position: 2 * i,
                },
                outcome,
                day_returns: Vec::new(),
                trades: Vec::new(),
            };
            spool.push(&cell).unwrap();
            written.push(cell);
        }
        let spool = spool.finish().unwrap();
        assert_eq!(spool.parts().unwrap().len(), 2);
        let read = spool.read_all().unwrap();
        assert_eq!(read.len(), written.len());
        for (r, w) in read.iter().zip(&written) {
            assert_eq!((r.place, r.param_set), (w.place, w.key.param_set));
            assert_eq!(shards[r.shard as usize].id(), w.key.shard);
            match (&r.outcome, &w.outcome) {
                (Ok(a), Ok(b)) => assert!(crate::metrics::bitwise_equal(a, b)),
                (a, b) => assert_eq!(a, b),
            }
        }
    }
}
