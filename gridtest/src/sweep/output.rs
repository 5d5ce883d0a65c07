//! Writing a sweep's results: `results.csv`, `results.parquet` (one row per cell) and
//! `leaderboard.csv`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, RecordBatch, StringBuilder,
    UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;

use object_store::{ObjectStoreExt, PutPayload};

use super::leaderboard::Leaderboard;
use super::{SweepError, SweepResults};
use crate::metrics::{METRIC_COLUMNS, MetricValue};
use crate::params::{ParamKind, ParamValue};
use crate::storage::Location;

fn output_error(path: &Path, e: impl std::fmt::Display) -> SweepError {
    SweepError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// The output files of a sweep, in memory: `(file name, bytes)` for `results.csv`,
/// `results.parquet` and `leaderboard.csv`.
///
/// # Errors
/// [`SweepError::Output`] if a file cannot be rendered (a bug).
pub fn render(
    results: &SweepResults,
    leaderboard: &Leaderboard,
) -> Result<Vec<(&'static str, Vec<u8>)>, SweepError> {
    let render_error = |name: &str, e: &dyn std::fmt::Display| SweepError::Output {
        path: name.to_owned(),
        reason: e.to_string(),
    };
    let mut csv = Vec::new();
    write_csv(results, &mut csv).map_err(|e| render_error("results.csv", &e))?;
    let batch = to_record_batch(results).map_err(|e| render_error("results.parquet", &e))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut parquet = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut parquet, batch.schema(), Some(props))
        .map_err(|e| render_error("results.parquet", &e))?;
    writer
        .write(&batch)
        .map_err(|e| render_error("results.parquet", &e))?;
    writer
        .close()
        .map_err(|e| render_error("results.parquet", &e))?;
    let mut board = Vec::new();
    leaderboard
        .write_csv(&mut board)
        .map_err(|e| render_error("leaderboard.csv", &e))?;
    Ok(vec![
        ("results.csv", csv),
        ("results.parquet", parquet),
        ("leaderboard.csv", board),
    ])
}

/// Makes sure `dir` can receive the output: creates it if needed and writes (then removes) a
/// probe file. Called before a sweep computes anything.
///
/// # Errors
/// [`SweepError::Output`] naming the folder: it is a file, lies under a file, or is not writable.
pub fn prepare_dir(dir: &Path) -> Result<(), SweepError> {
    let unusable = |reason: String| SweepError::Output {
        path: dir.display().to_string(),
        reason: format!("cannot be the output folder: {reason}"),
    };
    if dir.exists() && !dir.is_dir() {
        return Err(unusable("it is a file".to_owned()));
    }
    std::fs::create_dir_all(dir).map_err(|e| unusable(e.to_string()))?;
    let probe = dir.join(format!(".gridtest-probe-{}", std::process::id()));
    write_synced(&probe, b"probe").map_err(|e| unusable(format!("not writable: {e}")))?;
    std::fs::remove_file(&probe).map_err(|e| unusable(e.to_string()))?;
    Ok(())
}

/// Writes `bytes` to `path` and flushes them to the disk (so a full disk fails here, not later).
fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Writes `results.csv`, `results.parquet` and `leaderboard.csv` into `dir` (created if
/// needed), all or nothing: each is first written in full under a temporary name beside its
/// target, and only when all three are complete are they renamed into place. A full disk or a
/// failing write leaves the previous files untouched and no temporary file behind.
///
/// # Errors
/// [`SweepError::Output`] naming the file that could not be written.
pub fn write_all(
    results: &SweepResults,
    leaderboard: &Leaderboard,
    dir: &Path,
) -> Result<(), SweepError> {
    std::fs::create_dir_all(dir).map_err(|e| output_error(dir, e))?;
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let discard = |staged: &[(PathBuf, PathBuf)]| {
        for (temporary, _) in staged {
            let _ = std::fs::remove_file(temporary);
        }
    };
    for (name, bytes) in render(results, leaderboard)? {
        let target = dir.join(name);
        let temporary = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        staged.push((temporary.clone(), target.clone()));
        if let Err(e) = write_synced(&temporary, &bytes) {
            discard(&staged);
            return Err(output_error(&target, e));
        }
    }
    for (i, (temporary, target)) in staged.iter().enumerate() {
        if let Err(e) = std::fs::rename(temporary, target) {
            discard(&staged[i..]);
            return Err(output_error(target, e));
        }
    }
    Ok(())
}

/// Writes the same files under `location` (a results root's `sweeps/<id>/`, local or S3).
///
/// # Errors
/// [`SweepError::Output`] naming the object that could not be written.
pub async fn write_to_store(
    results: &SweepResults,
    leaderboard: &Leaderboard,
    location: &Location,
) -> Result<(), SweepError> {
    let (store, dir) = location.store().map_err(|e| SweepError::Output {
        path: location.to_string(),
        reason: e.to_string(),
    })?;
    for (name, bytes) in render(results, leaderboard)? {
        let path = dir.clone().join(name);
        store
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(|e| SweepError::Output {
                path: location.object_url(&path),
                reason: e.to_string(),
            })?;
    }
    Ok(())
}

/// Writes one CSV row per cell: the axes, `symbol`, the metrics, `param_set_id`, `shard` and
/// `error` (empty for a successful cell). Rows are in shard order, then grid order.
///
/// # Errors
/// A CSV or I/O error.
pub fn write_csv<W: std::io::Write>(results: &SweepResults, w: W) -> csv::Result<()> {
    let mut out = csv::Writer::from_writer(w);
    let mut header: Vec<&str> = results.axes().iter().map(String::as_str).collect();
    header.push("symbol");
    for column in &METRIC_COLUMNS {
        header.push(column.name);
    }
    header.extend(["param_set_id", "shard", "error"]);
    out.write_record(&header)?;
    for (set_index, shard, outcome) in results.rows() {
        let set = &results.sets()[set_index];
        let mut rec: Vec<String> = results
            .axes()
            .iter()
            .map(|a| set.get(a).map(ToString::to_string).unwrap_or_default())
            .collect();
        rec.push(shard.symbol().to_owned());
        match outcome {
            Ok(m) => rec.extend(METRIC_COLUMNS.iter().map(|c| (c.value)(m).to_string())),
            Err(_) => rec.extend(std::iter::repeat_n(String::new(), METRIC_COLUMNS.len())),
        }
        rec.push(set.id().to_string());
        rec.push(shard.to_string());
        rec.push(
            outcome
                .as_ref()
                .err()
                .map(ToString::to_string)
                .unwrap_or_default(),
        );
        out.write_record(&rec)?;
    }
    out.flush()?;
    Ok(())
}

/// An Arrow builder for one metric column.
enum MetricBuilder {
    Count(UInt64Builder),
    Real(Float64Builder),
}

impl MetricBuilder {
    fn append(&mut self, v: MetricValue) {
        match (self, v) {
            (Self::Count(b), MetricValue::Count(n)) => b.append_value(n),
            (Self::Real(b), MetricValue::Real(x)) => b.append_value(x),
            (Self::Count(b), MetricValue::Real(_)) => b.append_null(),
            (Self::Real(b), MetricValue::Count(n)) => {
                b.append_value(MetricValue::Count(n).as_f64())
            }
        }
    }

    fn append_null(&mut self) {
        match self {
            Self::Count(b) => b.append_null(),
            Self::Real(b) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Count(b) => Arc::new(b.finish()),
            Self::Real(b) => Arc::new(b.finish()),
        }
    }
}

enum ParamColumn {
    Int(Int64Builder),
    Float(Float64Builder),
    Bool(BooleanBuilder),
    Choice(StringBuilder),
}

impl ParamColumn {
    fn new(kind: ParamKind) -> Self {
        match kind {
            ParamKind::Int => Self::Int(Int64Builder::new()),
            ParamKind::Float => Self::Float(Float64Builder::new()),
            ParamKind::Bool => Self::Bool(BooleanBuilder::new()),
            ParamKind::Choice => Self::Choice(StringBuilder::new()),
        }
    }

    fn append(&mut self, v: Option<&ParamValue>) {
        match (self, v) {
            (Self::Int(b), Some(ParamValue::Int(i))) => b.append_value(*i),
            (Self::Float(b), Some(ParamValue::Float(x))) => b.append_value(*x),
            (Self::Bool(b), Some(ParamValue::Bool(x))) => b.append_value(*x),
            (Self::Choice(b), Some(ParamValue::Choice(s))) => b.append_value(s),
            (Self::Int(b), _) => b.append_null(),
            (Self::Float(b), _) => b.append_null(),
            (Self::Bool(b), _) => b.append_null(),
            (Self::Choice(b), _) => b.append_null(),
        }
    }

    fn finish(self) -> (DataType, ArrayRef) {
        match self {
            Self::Int(mut b) => (DataType::Int64, Arc::new(b.finish())),
            Self::Float(mut b) => (DataType::Float64, Arc::new(b.finish())),
            Self::Bool(mut b) => (DataType::Boolean, Arc::new(b.finish())),
            Self::Choice(mut b) => (DataType::Utf8, Arc::new(b.finish())),
        }
    }
}

/// The results as one Arrow record batch (same columns as the CSV, typed; metrics of failed
/// cells are null).
///
/// # Errors
/// An Arrow error if the columns do not line up (a bug).
pub fn to_record_batch(
    results: &SweepResults,
) -> Result<RecordBatch, datafusion::arrow::error::ArrowError> {
    let mut params: Vec<ParamColumn> = results
        .axes()
        .iter()
        .map(|a| {
            let kind = results
                .sets()
                .first()
                .and_then(|s| s.get(a))
                .map_or(ParamKind::Int, ParamValue::kind);
            ParamColumn::new(kind)
        })
        .collect();
    let mut symbol = StringBuilder::new();
    let mut metrics: Vec<MetricBuilder> = METRIC_COLUMNS
        .iter()
        .map(|c| {
            if c.is_count {
                MetricBuilder::Count(UInt64Builder::new())
            } else {
                MetricBuilder::Real(Float64Builder::new())
            }
        })
        .collect();
    let (mut id, mut shard_col, mut error) = (
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
    );
    for (set_index, shard, outcome) in results.rows() {
        let set = &results.sets()[set_index];
        for (col, axis) in params.iter_mut().zip(results.axes()) {
            col.append(set.get(axis));
        }
        symbol.append_value(shard.symbol());
        match outcome {
            Ok(m) => {
                for (b, c) in metrics.iter_mut().zip(&METRIC_COLUMNS) {
                    b.append((c.value)(m));
                }
                error.append_null();
            }
            Err(f) => {
                metrics.iter_mut().for_each(MetricBuilder::append_null);
                error.append_value(f.to_string());
            }
        }
        id.append_value(set.id().to_string());
        shard_col.append_value(shard.to_string());
    }
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (col, axis) in params.into_iter().zip(results.axes()) {
        let (dt, array) = col.finish();
        fields.push(Field::new(axis, dt, true));
        columns.push(array);
    }
    fields.push(Field::new("symbol", DataType::Utf8, false));
    columns.push(Arc::new(symbol.finish()));
    for (mut b, c) in metrics.into_iter().zip(&METRIC_COLUMNS) {
        let array = b.finish();
        fields.push(Field::new(c.name, array.data_type().clone(), true));
        columns.push(array);
    }
    for (name, mut b, nullable) in [
        ("param_set_id", id, false),
        ("shard", shard_col, false),
        ("error", error, true),
    ] {
        fields.push(Field::new(name, DataType::Utf8, nullable));
        columns.push(Arc::new(b.finish()));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}
