//! Writing a sweep's outputs from its spool of cells, out of core: `results.csv` and
//! `results.parquet` (one row per cell, in grid order then shard order) and `leaderboard.csv`
//! (one row per parameter set, best first). DataFusion sorts the spool (spilling to disk past
//! [`SORT_MEMORY`]); the rows are written as they stream by, and each set's figures are summed
//! while its cells pass, so memory stays flat whatever the grid's size.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, AsArray, BooleanBuilder, Float64Builder, Int64Builder, RecordBatch, StringBuilder,
    UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Schema, SchemaRef, UInt64Type};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext, col};
use futures::StreamExt;
use object_store::ObjectStore;
use object_store::buffered::BufWriter as StoreWriter;
use tokio::io::AsyncWriteExt;

use super::SweepError;
use super::leaderboard::{
    BestRows, LEADERBOARD_ROWS, LeaderCsv, LeaderRow, Leaderboard, SetTally, rank_key,
};
use super::spool::{Spool, SpoolRow, decode, write_parquet};
use crate::data::Shard;
use crate::engine::CellFailure;
use crate::metrics::{METRIC_COLUMNS, MetricValue, RankMetric};
use crate::params::{Grid, ParamKind, ParamSet, ParamSetId, ParamValue, SetExpander};
use crate::storage::Location;

/// The cells, one row each, as CSV.
pub const RESULTS_CSV: &str = "results.csv";
/// The cells, one row each, as Parquet.
pub const RESULTS_PARQUET: &str = "results.parquet";
/// Every parameter set, best first, as CSV.
pub const LEADERBOARD_CSV: &str = "leaderboard.csv";
/// The output files.
pub const OUTPUT_FILES: [&str; 3] = [RESULTS_CSV, RESULTS_PARQUET, LEADERBOARD_CSV];

/// Memory DataFusion may use to sort a spool before it spills to disk.
pub const SORT_MEMORY: usize = 256 << 20;

/// Failed cells held in memory with their parameter set (the rest are counted and in the files).
pub const FAILURES_HELD: usize = 1_000;

/// Cells per row group of `results.parquet`.
const RESULTS_ROW_GROUP: usize = 131_072;

/// Cells of output written per batch.
const OUTPUT_BATCH: usize = 8_192;

fn output_error(path: &Path, e: impl std::fmt::Display) -> SweepError {
    SweepError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// What rendering a spool produced besides the files.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The folder holding the output files.
    pub dir: PathBuf,
    /// The best parameter sets.
    pub leaderboard: Leaderboard,
    /// Cells written.
    pub cells: usize,
    /// Failed cells.
    pub failed: usize,
    /// The first failed cells in grid order (at most [`FAILURES_HELD`]).
    pub failures: Vec<(ParamSet, Shard, CellFailure)>,
}

/// The sweep a spool belongs to, as rendering needs it.
pub struct Subject<'a> {
    /// The grid.
    pub grid: &'a Grid,
    /// The shards, by ordinal.
    pub shards: &'a [Shard],
    /// The ranking metric.
    pub metric: RankMetric,
}

/// Renders the output files of `spool` into `dir` (created).
///
/// # Errors
/// [`SweepError::Output`] naming the file that could not be written or the spool that could
/// not be read.
pub async fn render(
    spool: &Spool,
    subject: &Subject<'_>,
    dir: &Path,
) -> Result<Rendered, SweepError> {
    render_within(spool, subject, dir, SORT_MEMORY).await
}

/// [`render`] with sorts that spill past `sort_memory` bytes.
async fn render_within(
    spool: &Spool,
    subject: &Subject<'_>,
    dir: &Path,
    sort_memory: usize,
) -> Result<Rendered, SweepError> {
    std::fs::create_dir_all(dir).map_err(|e| output_error(dir, e))?;
    let axes: Vec<String> = subject.grid.axes().iter().map(|a| a.name.clone()).collect();
    let expander = subject.grid.expander();
    let mut cells = CellWriter::create(dir, subject.grid)?;
    let board_dir = dir.join(".board");
    let mut board = BoardSpool::create(&board_dir, subject.metric)?;
    let mut best = BestRows::new(subject.metric, LEADERBOARD_ROWS);
    let mut rendered = Rendered {
        dir: dir.to_owned(),
        leaderboard: Leaderboard {
            metric: subject.metric,
            axes: axes.clone(),
            rows: Vec::new(),
            ranked: 0,
        },
        cells: 0,
        failed: 0,
        failures: Vec::new(),
    };
    let mut current: Option<(SpoolRow, ParamSet, SetTally)> = None;
    let mut stream = sorted(
        spool.dir(),
        spool.rows(),
        &["set_index", "shard"],
        sort_memory,
    )
    .await?;
    while let Some(batch) = next_batch(&mut stream, spool.dir()).await? {
        let rows = decode(&batch).map_err(|e| output_error(spool.dir(), e))?;
        for row in rows {
            if current
                .as_ref()
                .is_none_or(|(c, _, _)| c.place.index != row.place.index)
            {
                if let Some((first, set, tally)) = current.take() {
                    let ranked = tally.row(set);
                    board.push(&ranked, first.place.position)?;
                    best.offer(ranked);
                }
                let set = expander.set_at(row.place.position).ok_or_else(|| {
                    output_error(
                        spool.dir(),
                        format!("no parameter set at position {}", row.place.position),
                    )
                })?;
                current = Some((row.clone(), set, SetTally::default()));
            }
            let (_, set, tally) = current.as_mut().expect("set just above");
            tally.add(row.outcome.as_ref().ok(), subject.metric);
            let shard = subject
                .shards
                .get(row.shard as usize)
                .ok_or_else(|| output_error(spool.dir(), format!("no shard {}", row.shard)))?;
            if let Err(f) = &row.outcome {
                rendered.failed += 1;
                if rendered.failures.len() < FAILURES_HELD {
                    rendered
                        .failures
                        .push((set.clone(), shard.clone(), f.clone()));
                }
            }
            rendered.cells += 1;
            cells.push(set, shard, &row)?;
        }
    }
    if let Some((first, set, tally)) = current.take() {
        let ranked = tally.row(set);
        board.push(&ranked, first.place.position)?;
        best.offer(ranked);
    }
    cells.finish()?;
    let board_rows = board.finish()?;
    let board = SortedBoard {
        dir: &board_dir,
        rows: board_rows,
        memory: sort_memory,
    };
    write_leaderboard(&board, &expander, &axes, &dir.join(LEADERBOARD_CSV)).await?;
    let _ = std::fs::remove_dir_all(&board_dir);
    rendered.leaderboard = best.into_leaderboard(axes);
    Ok(rendered)
}

/// The Parquet files of `dir` sorted by `by` (ascending), through DataFusion with at most
/// `memory` bytes in memory (it spills to disk past that); `None` when there are no rows.
async fn sorted(
    dir: &Path,
    rows: u64,
    by: &[&str],
    memory: usize,
) -> Result<Option<SendableRecordBatchStream>, SweepError> {
    if rows == 0 {
        return Ok(None);
    }
    let fail = |e: &dyn std::fmt::Display| output_error(dir, e);
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(memory, 1.0)
        .build_arc()
        .map_err(|e| fail(&e))?;
    // The merge of spilled runs reserves this much up front; a quarter of the pool leaves the
    // rest to sort in.
    let config = SessionConfig::new()
        .with_target_partitions(1)
        .with_batch_size(OUTPUT_BATCH)
        .with_sort_spill_reservation_bytes(memory / 4);
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    let url = format!("{}/", dir.display());
    let frame = ctx
        .read_parquet(url, ParquetReadOptions::default())
        .await
        .map_err(|e| fail(&e))?
        .sort(by.iter().map(|c| col(*c).sort(true, false)).collect())
        .map_err(|e| fail(&e))?;
    frame.execute_stream().await.map(Some).map_err(|e| fail(&e))
}

async fn next_batch(
    stream: &mut Option<SendableRecordBatchStream>,
    dir: &Path,
) -> Result<Option<RecordBatch>, SweepError> {
    let Some(s) = stream.as_mut() else {
        return Ok(None);
    };
    s.next().await.transpose().map_err(|e| output_error(dir, e))
}

/// Writes cells to `results.csv` and `results.parquet` as they come.
struct CellWriter {
    csv_path: PathBuf,
    parquet_path: PathBuf,
    csv: csv::Writer<BufWriter<File>>,
    parquet: ArrowWriter<File>,
    axes: Vec<String>,
    schema: SchemaRef,
    params: Vec<ParamColumn>,
    symbol: StringBuilder,
    metrics: Vec<MetricBuilder>,
    id: StringBuilder,
    shard: StringBuilder,
    error: StringBuilder,
    buffered: usize,
}

impl CellWriter {
    fn create(dir: &Path, grid: &Grid) -> Result<Self, SweepError> {
        let axes: Vec<String> = grid.axes().iter().map(|a| a.name.clone()).collect();
        let kinds: Vec<ParamKind> = grid
            .axes()
            .iter()
            .map(|a| a.values.first().map_or(ParamKind::Int, ParamValue::kind))
            .collect();
        let mut fields: Vec<Field> = axes
            .iter()
            .zip(&kinds)
            .map(|(a, k)| Field::new(a, ParamColumn::data_type(*k), true))
            .collect();
        fields.push(Field::new("symbol", DataType::Utf8, false));
        for c in &METRIC_COLUMNS {
            let dt = if c.is_count {
                DataType::UInt64
            } else {
                DataType::Float64
            };
            fields.push(Field::new(c.name, dt, true));
        }
        fields.push(Field::new("param_set_id", DataType::Utf8, false));
        fields.push(Field::new("shard", DataType::Utf8, false));
        fields.push(Field::new("error", DataType::Utf8, true));
        let schema = Arc::new(Schema::new(fields));
        let csv_path = dir.join(RESULTS_CSV);
        let parquet_path = dir.join(RESULTS_PARQUET);
        let file = File::create(&csv_path).map_err(|e| output_error(&csv_path, e))?;
        let mut csv = csv::Writer::from_writer(BufWriter::new(file));
        let mut header: Vec<&str> = axes.iter().map(String::as_str).collect();
        header.push("symbol");
        header.extend(METRIC_COLUMNS.iter().map(|c| c.name));
        header.extend(["param_set_id", "shard", "error"]);
        csv.write_record(&header)
            .map_err(|e| output_error(&csv_path, e))?;
        // Row groups of a bounded size: the writer holds the open one in memory.
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(RESULTS_ROW_GROUP))
            .build();
        let file = File::create(&parquet_path).map_err(|e| output_error(&parquet_path, e))?;
        let parquet = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props))
            .map_err(|e| output_error(&parquet_path, e))?;
        Ok(Self {
            csv_path,
            parquet_path,
            csv,
            parquet,
            schema,
            params: kinds.into_iter().map(ParamColumn::new).collect(),
            axes,
            symbol: StringBuilder::new(),
            metrics: METRIC_COLUMNS.iter().map(MetricBuilder::new).collect(),
            id: StringBuilder::new(),
            shard: StringBuilder::new(),
            error: StringBuilder::new(),
            buffered: 0,
        })
    }

    fn push(&mut self, set: &ParamSet, shard: &Shard, row: &SpoolRow) -> Result<(), SweepError> {
        let mut rec: Vec<String> = self
            .axes
            .iter()
            .map(|a| set.get(a).map(ToString::to_string).unwrap_or_default())
            .collect();
        rec.push(shard.symbol().to_owned());
        for (col, axis) in self.params.iter_mut().zip(&self.axes) {
            col.append(set.get(axis));
        }
        self.symbol.append_value(shard.symbol());
        match &row.outcome {
            Ok(m) => {
                for (b, c) in self.metrics.iter_mut().zip(&METRIC_COLUMNS) {
                    let v = (c.value)(m);
                    rec.push(v.to_string());
                    b.append(v);
                }
                self.error.append_null();
            }
            Err(f) => {
                rec.extend(std::iter::repeat_n(String::new(), METRIC_COLUMNS.len()));
                self.metrics.iter_mut().for_each(MetricBuilder::append_null);
                self.error.append_value(f.to_string());
            }
        }
        let id = row.param_set.to_string();
        rec.push(id.clone());
        rec.push(shard.to_string());
        rec.push(
            row.outcome
                .as_ref()
                .err()
                .map(ToString::to_string)
                .unwrap_or_default(),
        );
        self.csv
            .write_record(&rec)
            .map_err(|e| output_error(&self.csv_path, e))?;
        self.id.append_value(id);
        self.shard.append_value(shard.to_string());
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
        columns.extend(self.metrics.iter_mut().map(MetricBuilder::finish));
        columns.push(Arc::new(self.id.finish()));
        columns.push(Arc::new(self.shard.finish()));
        columns.push(Arc::new(self.error.finish()));
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)
            .map_err(|e| output_error(&self.parquet_path, e))?;
        self.parquet
            .write(&batch)
            .map_err(|e| output_error(&self.parquet_path, e))?;
        self.buffered = 0;
        Ok(())
    }

    fn finish(mut self) -> Result<(), SweepError> {
        self.write_batch()?;
        self.parquet
            .close()
            .map_err(|e| output_error(&self.parquet_path, e))?;
        let file = self
            .csv
            .into_inner()
            .map_err(|e| output_error(&self.csv_path, e.error()))?
            .into_inner()
            .map_err(|e| output_error(&self.csv_path, e.error()))?;
        file.sync_all().map_err(|e| output_error(&self.csv_path, e))
    }
}

/// Per-set rows written to Parquet parts as they are summed, for the leaderboard's sort.
struct BoardSpool {
    dir: PathBuf,
    metric: RankMetric,
    rows: Vec<(LeaderRow, u64)>,
    parts: u32,
    written: u64,
}

/// Board rows per part file.
const BOARD_PART_ROWS: usize = 65_536;

/// The figures of a leaderboard row, in column order (after `incomplete`, `key`, `position`,
/// `param_set_id`, `shards`, `failed`, `trades`).
const BOARD_FIGURES: [&str; 9] = [
    "score",
    "total_return",
    "sharpe",
    "sortino",
    "max_drawdown",
    "worst_drawdown",
    "win_rate",
    "profit_factor",
    "exposure",
];

fn board_figures(r: &LeaderRow) -> [f64; 9] {
    [
        r.score,
        r.total_return,
        r.sharpe,
        r.sortino,
        r.max_drawdown,
        r.worst_drawdown,
        r.win_rate,
        r.profit_factor,
        r.exposure,
    ]
}

impl BoardSpool {
    fn create(dir: &Path, metric: RankMetric) -> Result<Self, SweepError> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(|e| output_error(dir, e))?;
        Ok(Self {
            dir: dir.to_owned(),
            metric,
            rows: Vec::new(),
            parts: 0,
            written: 0,
        })
    }

    fn push(&mut self, row: &LeaderRow, position: u64) -> Result<(), SweepError> {
        self.rows.push((row.clone(), position));
        if self.rows.len() >= BOARD_PART_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SweepError> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let mut incomplete = BooleanBuilder::new();
        let (mut key, mut position, mut id) = (
            Float64Builder::new(),
            UInt64Builder::new(),
            UInt64Builder::new(),
        );
        let (mut shards, mut failed, mut trades) = (
            UInt64Builder::new(),
            UInt64Builder::new(),
            UInt64Builder::new(),
        );
        let mut figures: Vec<Float64Builder> = BOARD_FIGURES
            .iter()
            .map(|_| Float64Builder::new())
            .collect();
        for (r, p) in self.rows.drain(..) {
            let (bad, k) = rank_key(&r, self.metric);
            incomplete.append_value(bad);
            key.append_value(k);
            position.append_value(p);
            id.append_value(r.params.id().0);
            shards.append_value(r.shards as u64);
            failed.append_value(r.failed as u64);
            trades.append_value(r.trades);
            for (b, v) in figures.iter_mut().zip(board_figures(&r)) {
                b.append_value(v);
            }
        }
        let mut fields = vec![
            Field::new("incomplete", DataType::Boolean, false),
            Field::new("key", DataType::Float64, false),
            Field::new("position", DataType::UInt64, false),
            Field::new("param_set_id", DataType::UInt64, false),
            Field::new("shards", DataType::UInt64, false),
            Field::new("failed", DataType::UInt64, false),
            Field::new("trades", DataType::UInt64, false),
        ];
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(incomplete.finish()),
            Arc::new(key.finish()),
            Arc::new(position.finish()),
            Arc::new(id.finish()),
            Arc::new(shards.finish()),
            Arc::new(failed.finish()),
            Arc::new(trades.finish()),
        ];
        for (name, mut b) in BOARD_FIGURES.iter().zip(figures) {
            fields.push(Field::new(*name, DataType::Float64, false));
            columns.push(Arc::new(b.finish()));
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| output_error(&self.dir, e))?;
        let n = batch.num_rows() as u64;
        write_parquet(
            &self.dir.join(format!("part-{:06}.parquet", self.parts)),
            &batch,
        )?;
        self.parts += 1;
        self.written += n;
        Ok(())
    }

    /// Writes what is buffered; the rows written in all.
    fn finish(mut self) -> Result<u64, SweepError> {
        self.flush()?;
        Ok(self.written)
    }
}

/// The per-set rows of a sweep, in part files, to be sorted.
struct SortedBoard<'a> {
    dir: &'a Path,
    rows: u64,
    memory: usize,
}

/// Writes `leaderboard.csv` from the board parts: every set, best first.
async fn write_leaderboard(
    board: &SortedBoard<'_>,
    expander: &SetExpander,
    axes: &[String],
    path: &Path,
) -> Result<(), SweepError> {
    let dir = board.dir;
    let file = File::create(path).map_err(|e| output_error(path, e))?;
    let mut out = LeaderCsv::new(BufWriter::new(file), axes).map_err(|e| output_error(path, e))?;
    let by = ["incomplete", "key", "param_set_id"];
    let mut stream = sorted(dir, board.rows, &by, board.memory).await?;
    let mut rank = 0;
    while let Some(batch) = next_batch(&mut stream, dir).await? {
        let u64s = |name: &str| {
            batch
                .column_by_name(name)
                .and_then(|c| c.as_primitive_opt::<UInt64Type>())
                .ok_or_else(|| output_error(dir, format!("board column {name} is missing")))
        };
        let (position, id) = (u64s("position")?, u64s("param_set_id")?);
        let (shards, failed, trades) = (u64s("shards")?, u64s("failed")?, u64s("trades")?);
        let figures: Vec<_> = BOARD_FIGURES
            .iter()
            .map(|name| {
                batch
                    .column_by_name(name)
                    .and_then(|c| c.as_primitive_opt::<Float64Type>())
                    .ok_or_else(|| output_error(dir, format!("board column {name} is missing")))
            })
            .collect::<Result<_, _>>()?;
        for i in 0..batch.num_rows() {
            rank += 1;
            let params = expander
                .set_at(position.value(i))
                .filter(|s| s.id() == ParamSetId(id.value(i)))
                .ok_or_else(|| {
                    output_error(
                        dir,
                        format!("no parameter set at position {}", position.value(i)),
                    )
                })?;
            let f = |k: usize| figures[k].value(i);
            let row = LeaderRow {
                rank,
                params,
                shards: usize::try_from(shards.value(i)).unwrap_or(usize::MAX),
                failed: usize::try_from(failed.value(i)).unwrap_or(usize::MAX),
                score: f(0),
                total_return: f(1),
                sharpe: f(2),
                sortino: f(3),
                max_drawdown: f(4),
                worst_drawdown: f(5),
                trades: trades.value(i),
                win_rate: f(6),
                profit_factor: f(7),
                exposure: f(8),
            };
            out.write(&row).map_err(|e| output_error(path, e))?;
        }
    }
    out.finish().map_err(|e| output_error(path, e))
}

/// Copies the output files of `from` into `dir` (created if needed), all or nothing: each is
/// first copied in full under a temporary name beside its target, and only when all three are
/// complete are they renamed into place. A full disk or a failing write leaves the previous
/// files untouched and no temporary file behind.
///
/// # Errors
/// [`SweepError::Output`] naming the file that could not be written.
pub fn write_all(from: &Path, dir: &Path) -> Result<(), SweepError> {
    std::fs::create_dir_all(dir).map_err(|e| output_error(dir, e))?;
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let discard = |staged: &[(PathBuf, PathBuf)]| {
        for (temporary, _) in staged {
            let _ = std::fs::remove_file(temporary);
        }
    };
    for name in OUTPUT_FILES {
        let target = dir.join(name);
        let temporary = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        staged.push((temporary.clone(), target.clone()));
        let copied = std::fs::copy(from.join(name), &temporary)
            .and_then(|_| File::open(&temporary)?.sync_all());
        if let Err(e) = copied {
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

/// Uploads the output files of `from` under `location` (a results root's `sweeps/<id>/`, local
/// or S3), streamed in parts (multipart upload on S3), so a file of any size goes through a
/// bounded buffer.
///
/// # Errors
/// [`SweepError::Output`] naming the object that could not be written.
pub async fn write_to_store(from: &Path, location: &Location) -> Result<(), SweepError> {
    let (store, dir) = location.store().map_err(|e| SweepError::Output {
        path: location.to_string(),
        reason: e.to_string(),
    })?;
    for name in OUTPUT_FILES {
        let path = dir.clone().join(name);
        let fail = |e: &dyn std::fmt::Display| SweepError::Output {
            path: location.object_url(&path),
            reason: e.to_string(),
        };
        let mut file = tokio::fs::File::open(from.join(name))
            .await
            .map_err(|e| fail(&e))?;
        let mut upload = StoreWriter::new(Arc::clone(&store) as Arc<dyn ObjectStore>, path.clone());
        let copied = tokio::io::copy(&mut file, &mut upload).await;
        match copied {
            Ok(_) => upload.shutdown().await.map_err(|e| fail(&e))?,
            Err(e) => {
                let _ = upload.abort().await;
                return Err(fail(&e));
            }
        }
    }
    Ok(())
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

/// An Arrow builder for one metric column.
enum MetricBuilder {
    Count(UInt64Builder),
    Real(Float64Builder),
}

impl MetricBuilder {
    fn new(c: &crate::metrics::MetricColumn) -> Self {
        if c.is_count {
            Self::Count(UInt64Builder::new())
        } else {
            Self::Real(Float64Builder::new())
        }
    }

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

    fn data_type(kind: ParamKind) -> DataType {
        match kind {
            ParamKind::Int => DataType::Int64,
            ParamKind::Float => DataType::Float64,
            ParamKind::Bool => DataType::Boolean,
            ParamKind::Choice => DataType::Utf8,
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Int(b) => Arc::new(b.finish()),
            Self::Float(b) => Arc::new(b.finish()),
            Self::Bool(b) => Arc::new(b.finish()),
            Self::Choice(b) => Arc::new(b.finish()),
        }
    }
}

#[cfg(test)]
mod tests;
