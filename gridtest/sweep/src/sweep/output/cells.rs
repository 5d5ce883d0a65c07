//! `CellWriter`: the cells, one row each, to `results.csv` and `results.parquet` as they stream
//! by. Cells are gathered into Arrow batches; each batch is encoded as CSV and as Parquet on two
//! threads of their own, while the next batch is gathered.

use std::fmt::Write as _;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Builder, RecordBatch, StringBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Field, Float64Type, Int64Type, Schema, SchemaRef, UInt64Type,
};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::metadata::KeyValue;
use datafusion::parquet::file::properties::WriterProperties;

use super::param_column::{ParamColumn, axes_of};
use super::{OUTPUT_BATCH, RESULTS_CSV, RESULTS_PARQUET, SPEC_METADATA_KEY, output_error};
use crate::data::Shard;
use crate::metrics::METRIC_COLUMNS;
use crate::params::{Grid, ParamKind, ParamSet, ParamSetId};
use crate::sweep::SweepError;
use crate::sweep::spool::{MetricBuilder, SpoolRow, metric_fields};

/// Cells per row group of `results.parquet` (the writer holds the open one in memory).
const RESULTS_ROW_GROUP: usize = 131_072;

/// A parameter set's id as text, formatted once for all its cells.
pub(super) struct SetText {
    id: String,
}

impl SetText {
    pub(super) fn new(id: ParamSetId) -> Self {
        Self { id: id.to_string() }
    }
}

/// A shard as its cells' rows show it: its symbol, its full name, its first and last date
/// (days since 1970-01-01, Arrow's `Date32`).
pub(super) struct ShardText {
    symbol: String,
    name: String,
    first: i32,
    last: i32,
}

impl ShardText {
    pub(super) fn new(shard: &Shard) -> Self {
        let days = |d: chrono::NaiveDate| {
            i32::try_from((d - chrono::NaiveDate::default()).num_days()).unwrap_or(i32::MAX)
        };
        Self {
            symbol: shard.symbol().to_owned(),
            name: shard.to_string(),
            first: days(shard.first()),
            last: days(shard.last()),
        }
    }
}

/// A file written from batches on a thread of its own.
struct BatchThread {
    path: PathBuf,
    batches: Option<SyncSender<RecordBatch>>,
    thread: Option<JoinHandle<Result<(), String>>>,
}

/// What a [`BatchThread`] does with each batch, and at the end.
trait BatchSink: Send + 'static {
    fn write(&mut self, batch: &RecordBatch) -> Result<(), String>;
    fn finish(self) -> Result<(), String>;
}

impl BatchThread {
    fn start(path: &Path, mut sink: impl BatchSink) -> Result<Self, SweepError> {
        let (send, receive): (SyncSender<RecordBatch>, Receiver<RecordBatch>) = sync_channel(2);
        let thread = std::thread::Builder::new()
            .name("results-writer".to_owned())
            .spawn(move || {
                for batch in receive {
                    sink.write(&batch)?;
                }
                sink.finish()
            })
            .map_err(|e| output_error(path, e))?;
        Ok(Self {
            path: path.to_owned(),
            batches: Some(send),
            thread: Some(thread),
        })
    }

    fn write(&mut self, batch: RecordBatch) -> Result<(), SweepError> {
        let sent = self.batches.as_ref().map(|s| s.send(batch));
        if matches!(sent, Some(Ok(()))) {
            return Ok(());
        }
        // The thread stopped: its error says why.
        Err(self
            .join()
            .err()
            .unwrap_or_else(|| output_error(&self.path, "the writer stopped")))
    }

    fn join(&mut self) -> Result<(), SweepError> {
        self.batches = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Ok(()))) | None => Ok(()),
            Some(Ok(Err(e))) => Err(output_error(&self.path, e)),
            Some(Err(_)) => Err(output_error(&self.path, "the writer panicked")),
        }
    }
}

impl BatchSink for ArrowWriter<File> {
    fn write(&mut self, batch: &RecordBatch) -> Result<(), String> {
        ArrowWriter::write(self, batch).map_err(|e| e.to_string())
    }

    fn finish(self) -> Result<(), String> {
        self.close().map(|_| ()).map_err(|e| e.to_string())
    }
}

/// `results.csv` from the same batches: every value as Rust displays it (so a float reads
/// back bit for bit), nulls as empty fields.
struct CsvSink {
    out: csv::Writer<BufWriter<File>>,
    text: String,
}

impl BatchSink for CsvSink {
    fn write(&mut self, batch: &RecordBatch) -> Result<(), String> {
        let columns = batch.columns();
        for row in 0..batch.num_rows() {
            for column in columns {
                self.text.clear();
                display_value(column, row, &mut self.text)?;
                self.out
                    .write_field(&self.text)
                    .map_err(|e| e.to_string())?;
            }
            self.out
                .write_record(None::<&[u8]>)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn finish(self) -> Result<(), String> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| e.error().to_string())?
            .into_inner()
            .map_err(|e| e.error().to_string())?;
        file.sync_all().map_err(|e| e.to_string())
    }
}

/// Appends the value at `row` of `column` as Rust displays it (empty for a null).
fn display_value(column: &ArrayRef, row: usize, text: &mut String) -> Result<(), String> {
    if column.is_null(row) {
        return Ok(());
    }
    let written = match column.data_type() {
        DataType::Int64 => write!(text, "{}", column.as_primitive::<Int64Type>().value(row)),
        DataType::UInt64 => write!(text, "{}", column.as_primitive::<UInt64Type>().value(row)),
        // `{:?}` keeps the decimal point of a whole number (`20.0`, not `20`), so a CSV reader
        // infers the same float column as the Parquet file's, and reads the value back bit for
        // bit (`1e-7`, `NaN` and `inf` are its other forms).
        DataType::Float64 => write!(
            text,
            "{:?}",
            column.as_primitive::<Float64Type>().value(row)
        ),
        DataType::Date32 => write!(
            text,
            "{}",
            chrono::NaiveDate::default()
                + chrono::Days::new(
                    u64::try_from(column.as_primitive::<Date32Type>().value(row)).unwrap_or(0)
                )
        ),
        DataType::Boolean => write!(text, "{}", column.as_boolean().value(row)),
        DataType::Utf8 => {
            text.push_str(column.as_string::<i32>().value(row));
            Ok(())
        }
        other => return Err(format!("no CSV form for {other}")),
    };
    written.map_err(|e| e.to_string())
}

/// Writes cells to `results.csv` and `results.parquet` as they come.
pub(super) struct CellWriter {
    csv: BatchThread,
    parquet: BatchThread,
    axes: Vec<String>,
    schema: SchemaRef,
    params: Vec<ParamColumn>,
    symbol: StringBuilder,
    metrics: Vec<MetricBuilder>,
    id: StringBuilder,
    shard: StringBuilder,
    first_date: Date32Builder,
    last_date: Date32Builder,
    error_kind: StringBuilder,
    error_message: StringBuilder,
    buffered: usize,
}

impl CellWriter {
    pub(super) fn create(
        dir: &Path,
        grid: &Grid,
        spec_json: Option<&str>,
    ) -> Result<Self, SweepError> {
        let (axes, kinds) = axes_of(grid);
        let schema = results_schema(&axes, &kinds);
        let csv_path = dir.join(RESULTS_CSV);
        let file = File::create(&csv_path).map_err(|e| output_error(&csv_path, e))?;
        let mut out = csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, file));
        let header: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        out.write_record(&header)
            .map_err(|e| output_error(&csv_path, e))?;
        let csv = BatchThread::start(
            &csv_path,
            CsvSink {
                out,
                text: String::new(),
            },
        )?;
        let parquet_path = dir.join(RESULTS_PARQUET);
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(RESULTS_ROW_GROUP))
            .set_key_value_metadata(
                spec_json
                    .map(|spec| vec![KeyValue::new(SPEC_METADATA_KEY.to_owned(), spec.to_owned())]),
            )
            .build();
        let file = File::create(&parquet_path).map_err(|e| output_error(&parquet_path, e))?;
        let writer = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props))
            .map_err(|e| output_error(&parquet_path, e))?;
        let parquet = BatchThread::start(&parquet_path, writer)?;
        Ok(Self {
            csv,
            parquet,
            schema,
            params: kinds.into_iter().map(ParamColumn::new).collect(),
            axes,
            symbol: StringBuilder::new(),
            metrics: METRIC_COLUMNS.iter().map(MetricBuilder::new).collect(),
            id: StringBuilder::new(),
            shard: StringBuilder::new(),
            first_date: Date32Builder::new(),
            last_date: Date32Builder::new(),
            error_kind: StringBuilder::new(),
            error_message: StringBuilder::new(),
            buffered: 0,
        })
    }

    /// Writes one cell of `set` (whose id is `text`'s) on `shard`.
    pub(super) fn push(
        &mut self,
        set: &ParamSet,
        text: &SetText,
        shard: &ShardText,
        row: &SpoolRow,
    ) -> Result<(), SweepError> {
        for (col, axis) in self.params.iter_mut().zip(&self.axes) {
            col.append(set.get(axis));
        }
        self.symbol.append_value(&shard.symbol);
        match &row.outcome {
            Ok(m) => {
                for (b, c) in self.metrics.iter_mut().zip(&METRIC_COLUMNS) {
                    b.append((c.value)(m));
                }
                self.error_kind.append_null();
                self.error_message.append_null();
            }
            Err(f) => {
                self.metrics.iter_mut().for_each(MetricBuilder::append_null);
                self.error_kind.append_value(f.kind.to_string());
                self.error_message.append_value(&f.message);
            }
        }
        self.id.append_value(&text.id);
        self.shard.append_value(&shard.name);
        self.first_date.append_value(shard.first);
        self.last_date.append_value(shard.last);
        self.buffered += 1;
        if self.buffered >= OUTPUT_BATCH {
            self.write_batch()?;
        }
        Ok(())
    }

    fn write_batch(&mut self) -> Result<(), SweepError> {
        if self.buffered == 0 {
            return Ok(());
        }
        let mut columns: Vec<ArrayRef> = self.params.iter_mut().map(ParamColumn::finish).collect();
        columns.push(Arc::new(self.symbol.finish()));
        for metric in &mut self.metrics {
            columns.push(
                signed_counts(&metric.finish()).map_err(|e| output_error(&self.parquet.path, e))?,
            );
        }
        columns.push(Arc::new(self.id.finish()));
        columns.push(Arc::new(self.shard.finish()));
        columns.push(Arc::new(self.first_date.finish()));
        columns.push(Arc::new(self.last_date.finish()));
        columns.push(Arc::new(self.error_kind.finish()));
        columns.push(Arc::new(self.error_message.finish()));
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)
            .map_err(|e| output_error(&self.parquet.path, e))?;
        self.csv.write(batch.clone())?;
        self.parquet.write(batch)?;
        self.buffered = 0;
        Ok(())
    }

    pub(super) fn finish(mut self) -> Result<(), SweepError> {
        self.write_batch()?;
        let csv = self.csv.join();
        self.parquet.join()?;
        csv
    }
}

/// The columns of `results.parquet` (and `results.csv`): the axes (typed), `symbol`, the
/// metrics, `param_set_id`, `shard` (its name), `first_date` and `last_date` (its dates),
/// `error_kind` and `error_message` (a failed cell's, else empty).
fn results_schema(axes: &[String], kinds: &[ParamKind]) -> SchemaRef {
    let mut fields: Vec<Field> = axes
        .iter()
        .zip(kinds)
        .map(|(a, k)| Field::new(a, ParamColumn::data_type(*k), true))
        .collect();
    fields.push(Field::new("symbol", DataType::Utf8, false));
    // Counts as signed integers: CSV readers infer `Int64` for them, and no count nears 2^63.
    fields.extend(metric_fields().map(|f| match f.data_type() {
        DataType::UInt64 => f.with_data_type(DataType::Int64),
        _ => f,
    }));
    fields.push(Field::new("param_set_id", DataType::Utf8, false));
    fields.push(Field::new("shard", DataType::Utf8, false));
    fields.push(Field::new("first_date", DataType::Date32, false));
    fields.push(Field::new("last_date", DataType::Date32, false));
    fields.push(Field::new("error_kind", DataType::Utf8, true));
    fields.push(Field::new("error_message", DataType::Utf8, true));
    Arc::new(Schema::new(fields))
}

/// A count column (`UInt64`) as `Int64`; other columns as they are.
fn signed_counts(column: &ArrayRef) -> Result<ArrayRef, String> {
    match column.data_type() {
        DataType::UInt64 => cast(column, &DataType::Int64).map_err(|e| e.to_string()),
        _ => Ok(Arc::clone(column)),
    }
}
