//! `TradesFile`: every round trip of every cell (`--trades`), one row each, to
//! `trades.parquet` as the cells become final — the grid's axes, `symbol`, `param_set_id` and
//! `shard` as in `results.parquet` (to join on), `member` (the symbol traded: the shard's own,
//! or a universe's member), then the trade in the engine's one format ([`Trade`]). Rows go out a row group at a time, so memory stays bounded however many
//! trades a sweep makes.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, RecordBatch, StringBuilder,
    TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;

use super::param_column::{ParamColumn, axes_of};
use super::{TRADES_PARQUET, output_error};
use crate::data::{Shard, ShardId};
use crate::engine::Trade;
use crate::params::{Grid, SetExpander};
use crate::sweep::{FinalCell, SweepError};

/// Rows gathered before they are written (one row group each).
const TRADES_ROW_GROUP: usize = 65_536;

/// The trades of a sweep's cells, written as they come.
pub struct TradesFile {
    path: PathBuf,
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    expander: SetExpander,
    /// Each shard's symbol (a universe's name) and the symbols it trades.
    symbols: HashMap<ShardId, (String, Vec<String>)>,
    columns: Columns,
    rows: u64,
}

impl std::fmt::Debug for TradesFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TradesFile")
            .field("path", &self.path)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

/// The columns being gathered.
struct Columns {
    params: Vec<ParamColumn>,
    axes: Vec<String>,
    symbol: StringBuilder,
    member: StringBuilder,
    set_id: StringBuilder,
    shard: StringBuilder,
    trade: UInt32Builder,
    size: Float64Builder,
    entry_index: UInt64Builder,
    entry_time: TimestampNanosecondBuilder,
    entry_price: Float64Builder,
    exit_index: UInt64Builder,
    exit_time: TimestampNanosecondBuilder,
    exit_price: Float64Builder,
    pnl: Float64Builder,
    ret: Float64Builder,
    fees: Float64Builder,
    end: StringBuilder,
    open: BooleanBuilder,
    buffered: usize,
}

impl TradesFile {
    /// Creates `trades.parquet` in `dir` for a sweep of `grid` over `shards`.
    ///
    /// # Errors
    /// [`SweepError::Output`] naming the file when it cannot be created.
    pub fn create(dir: &Path, grid: &Grid, shards: &[Shard]) -> Result<Self, SweepError> {
        let path = dir.join(TRADES_PARQUET);
        let (axes, kinds) = axes_of(grid);
        let mut fields: Vec<Field> = axes
            .iter()
            .zip(&kinds)
            .map(|(a, k)| Field::new(a, ParamColumn::data_type(*k), true))
            .collect();
        let time = DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()));
        fields.extend([
            Field::new("symbol", DataType::Utf8, false),
            Field::new("member", DataType::Utf8, false),
            Field::new("param_set_id", DataType::Utf8, false),
            Field::new("shard", DataType::Utf8, false),
            Field::new("trade", DataType::UInt32, false),
            Field::new("size", DataType::Float64, false),
            Field::new("entry_index", DataType::UInt64, false),
            Field::new("entry_time", time.clone(), false),
            Field::new("entry_price", DataType::Float64, false),
            Field::new("exit_index", DataType::UInt64, true),
            Field::new("exit_time", time, true),
            Field::new("exit_price", DataType::Float64, true),
            Field::new("pnl", DataType::Float64, false),
            Field::new("return", DataType::Float64, false),
            Field::new("fees", DataType::Float64, false),
            Field::new("end", DataType::Utf8, false),
            Field::new("open", DataType::Boolean, false),
        ]);
        let schema = Arc::new(Schema::new(fields));
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(TRADES_ROW_GROUP))
            .build();
        let file = File::create(&path).map_err(|e| output_error(&path, e))?;
        let writer = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props))
            .map_err(|e| output_error(&path, e))?;
        let symbols = shards
            .iter()
            .map(|s| (s.id(), (s.symbol().to_owned(), s.symbols().to_vec())))
            .collect();
        Ok(Self {
            path,
            writer,
            schema,
            expander: grid.expander(),
            symbols,
            columns: Columns::new(axes, kinds.into_iter().map(ParamColumn::new).collect()),
            rows: 0,
        })
    }

    /// Adds `cell`'s trades.
    ///
    /// # Errors
    /// [`SweepError::Output`] when a row group cannot be written.
    pub fn push(&mut self, cell: &FinalCell) -> Result<(), SweepError> {
        if cell.trades.is_empty() {
            return Ok(());
        }
        let set = self.expander.set_at(cell.place.position);
        let (symbol, members) = self
            .symbols
            .get(&cell.key.shard)
            .cloned()
            .unwrap_or_else(|| (cell.key.shard.0.clone(), Vec::new()));
        let (set_id, shard) = (cell.key.param_set.to_string(), cell.key.shard.to_string());
        for (k, trade) in cell.trades.iter().enumerate() {
            let c = &mut self.columns;
            for (col, axis) in c.params.iter_mut().zip(&c.axes) {
                col.append(set.as_ref().and_then(|s| s.get(axis)));
            }
            c.symbol.append_value(&symbol);
            let member = members.get(trade.member as usize).unwrap_or(&symbol);
            c.member.append_value(member);
            c.set_id.append_value(&set_id);
            c.shard.append_value(&shard);
            c.trade.append_value(u32::try_from(k).unwrap_or(u32::MAX));
            c.push(trade);
            if c.buffered >= TRADES_ROW_GROUP {
                self.write_batch()?;
            }
        }
        Ok(())
    }

    fn write_batch(&mut self) -> Result<(), SweepError> {
        if self.columns.buffered == 0 {
            return Ok(());
        }
        let n = self.columns.buffered;
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), self.columns.finish())
            .map_err(|e| output_error(&self.path, e))?;
        self.writer
            .write(&batch)
            .map_err(|e| output_error(&self.path, e))?;
        self.rows += n as u64;
        Ok(())
    }

    /// Writes what is left and closes the file; the number of trades written.
    ///
    /// # Errors
    /// [`SweepError::Output`] naming the file.
    pub fn finish(mut self) -> Result<u64, SweepError> {
        self.write_batch()?;
        self.writer
            .close()
            .map_err(|e| output_error(&self.path, e))?;
        Ok(self.rows)
    }
}

impl Columns {
    fn new(axes: Vec<String>, params: Vec<ParamColumn>) -> Self {
        Self {
            params,
            axes,
            symbol: StringBuilder::new(),
            member: StringBuilder::new(),
            set_id: StringBuilder::new(),
            shard: StringBuilder::new(),
            trade: UInt32Builder::new(),
            size: Float64Builder::new(),
            entry_index: UInt64Builder::new(),
            entry_time: TimestampNanosecondBuilder::new().with_timezone("UTC"),
            entry_price: Float64Builder::new(),
            exit_index: UInt64Builder::new(),
            exit_time: TimestampNanosecondBuilder::new().with_timezone("UTC"),
            exit_price: Float64Builder::new(),
            pnl: Float64Builder::new(),
            ret: Float64Builder::new(),
            fees: Float64Builder::new(),
            end: StringBuilder::new(),
            open: BooleanBuilder::new(),
            buffered: 0,
        }
    }

    fn push(&mut self, t: &Trade) {
        self.size.append_value(t.size);
        self.entry_index.append_value(t.entry_index);
        self.entry_time.append_value(t.entry_time);
        self.entry_price.append_value(t.entry_price);
        self.exit_index.append_option(t.exit_index);
        self.exit_time.append_option(t.exit_time);
        self.exit_price.append_option(t.exit_price);
        self.pnl.append_value(t.pnl);
        self.ret.append_value(t.ret);
        self.fees.append_value(t.fees);
        self.end.append_value(t.end.as_str());
        self.open.append_value(t.is_open());
        self.buffered += 1;
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.buffered = 0;
        let mut columns: Vec<ArrayRef> = self.params.iter_mut().map(ParamColumn::finish).collect();
        columns.extend::<[ArrayRef; 17]>([
            Arc::new(self.symbol.finish()),
            Arc::new(self.member.finish()),
            Arc::new(self.set_id.finish()),
            Arc::new(self.shard.finish()),
            Arc::new(self.trade.finish()),
            Arc::new(self.size.finish()),
            Arc::new(self.entry_index.finish()),
            Arc::new(self.entry_time.finish()),
            Arc::new(self.entry_price.finish()),
            Arc::new(self.exit_index.finish()),
            Arc::new(self.exit_time.finish()),
            Arc::new(self.exit_price.finish()),
            Arc::new(self.pnl.finish()),
            Arc::new(self.ret.finish()),
            Arc::new(self.fees.finish()),
            Arc::new(self.end.finish()),
            Arc::new(self.open.finish()),
        ]);
        columns
    }
}
