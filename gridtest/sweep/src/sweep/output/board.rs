//! The leaderboard: each set's row as its cells pass, either kept among the best rows in
//! memory ([`TopBoard`], when `leaderboard.csv` ranks the best sets) or spooled to Parquet
//! parts that DataFusion sorts by rank out of core ([`BoardSpool`], when it ranks every set
//! or when the ranking, the deflated Sharpe ratio, is known only at the end).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, AsArray, BooleanBuilder, Float64Array, Float64Builder, RecordBatch, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Schema, UInt64Type};

use super::{next_batch, output_error, sorted};
use crate::metrics::RankMetric;
use crate::params::{ParamSetId, SetExpander};
use crate::sweep::SweepError;
use crate::sweep::leaderboard::{LeaderCsv, LeaderRow, rank_key};
use crate::sweep::research_report::Deflated;
use crate::sweep::spool::write_parquet;

/// Per-set rows written to Parquet parts as they are summed, for the leaderboard's sort.
pub(super) struct BoardSpool {
    dir: PathBuf,
    metric: RankMetric,
    rows: Vec<BoardRow>,
    parts: u32,
    written: u64,
}

/// A leaderboard row as held or spooled: its sort key, where its set sits, and its figures.
pub(super) struct BoardRow {
    incomplete: bool,
    key: f64,
    position: u64,
    id: u64,
    shards: u64,
    failed: u64,
    trades: u64,
    closed_trades: u64,
    figures: [f64; 9],
}

/// Board rows per part file.
const BOARD_PART_ROWS: usize = 65_536;

impl BoardRow {
    fn new(row: &LeaderRow, position: u64, metric: RankMetric) -> Self {
        let (incomplete, key) = rank_key(row, metric);
        Self {
            incomplete,
            key,
            position,
            id: row.param_set_id.0,
            shards: row.shards as u64,
            failed: row.failed as u64,
            trades: row.trades,
            closed_trades: row.closed_trades,
            figures: row.figures(),
        }
    }

    /// The rank order of [`rank_order`](crate::sweep::leaderboard::rank_order), on the
    /// precomputed key.
    fn order(&self, other: &Self) -> std::cmp::Ordering {
        self.incomplete
            .cmp(&other.incomplete)
            .then(self.key.total_cmp(&other.key))
            .then(self.id.cmp(&other.id))
    }

    /// The leaderboard row, ranked `rank`, of the set `params`.
    fn leader_row(
        &self,
        rank: usize,
        params: crate::params::ParamSet,
        dsr: Option<&HashMap<ParamSetId, Deflated>>,
    ) -> LeaderRow {
        let f = |k: usize| self.figures[k];
        let id = ParamSetId(self.id);
        LeaderRow {
            rank,
            params,
            param_set_id: id,
            shards: usize::try_from(self.shards).unwrap_or(usize::MAX),
            failed: usize::try_from(self.failed).unwrap_or(usize::MAX),
            score: f(0),
            total_return: f(1),
            sharpe: f(2),
            sortino: f(3),
            max_drawdown: f(4),
            worst_drawdown: f(5),
            trades: self.trades,
            closed_trades: self.closed_trades,
            win_rate: f(6),
            profit_factor: f(7),
            exposure: f(8),
            dsr: dsr.and_then(|d| d.get(&id)).map(|d| d.dsr),
        }
    }
}

/// The best `keep` sets' rows, held in memory as their cells pass: `leaderboard.csv` when it
/// ranks the best sets only, without spooling or sorting every set's row. Holds at most twice
/// `keep` rows (about 130 bytes each) between two trims.
pub(super) struct TopBoard {
    keep: usize,
    metric: RankMetric,
    rows: Vec<BoardRow>,
    seen: u64,
}

impl TopBoard {
    pub(super) fn new(keep: usize, metric: RankMetric) -> Self {
        Self {
            keep: keep.max(1),
            metric,
            rows: Vec::new(),
            seen: 0,
        }
    }

    pub(super) fn push(&mut self, row: &LeaderRow, position: u64) {
        self.seen += 1;
        self.rows.push(BoardRow::new(row, position, self.metric));
        if self.rows.len() >= 2 * self.keep {
            self.trim();
        }
    }

    fn trim(&mut self) {
        self.rows.sort_unstable_by(BoardRow::order);
        self.rows.truncate(self.keep);
    }

    /// Writes the best rows to `path`, with their DSR when `dsr` gives them; returns the sets
    /// ranked.
    pub(super) fn write(
        mut self,
        (expander, axes): (&SetExpander, &[String]),
        path: &Path,
        dsr: Option<&HashMap<ParamSetId, Deflated>>,
    ) -> Result<u64, SweepError> {
        self.trim();
        let file = File::create(path).map_err(|e| output_error(path, e))?;
        let mut out =
            LeaderCsv::new(BufWriter::new(file), axes).map_err(|e| output_error(path, e))?;
        for (rank, row) in (1..).zip(&self.rows) {
            let params = expander.set_at(row.position).ok_or_else(|| {
                output_error(
                    path,
                    format!("no parameter set at position {}", row.position),
                )
            })?;
            out.write(&row.leader_row(rank, params, dsr))
                .map_err(|e| output_error(path, e))?;
        }
        out.finish().map_err(|e| output_error(path, e))?;
        Ok(self.seen)
    }
}

impl BoardSpool {
    pub(super) fn create(dir: &Path, metric: RankMetric) -> Result<Self, SweepError> {
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

    pub(super) fn push(&mut self, row: &LeaderRow, position: u64) -> Result<(), SweepError> {
        self.rows.push(BoardRow::new(row, position, self.metric));
        if self.rows.len() >= BOARD_PART_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SweepError> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let n = self.rows.len();
        let mut incomplete = BooleanBuilder::new();
        let (mut key, mut position, mut id) = (
            Float64Builder::new(),
            UInt64Builder::new(),
            UInt64Builder::new(),
        );
        let (mut shards, mut failed, mut trades, mut closed) = (
            UInt64Builder::new(),
            UInt64Builder::new(),
            UInt64Builder::new(),
            UInt64Builder::new(),
        );
        let mut figures: Vec<Float64Builder> = LeaderRow::FIGURES
            .iter()
            .map(|_| Float64Builder::new())
            .collect();
        for r in self.rows.drain(..) {
            incomplete.append_value(r.incomplete);
            key.append_value(r.key);
            position.append_value(r.position);
            id.append_value(r.id);
            shards.append_value(r.shards);
            failed.append_value(r.failed);
            trades.append_value(r.trades);
            closed.append_value(r.closed_trades);
            for (b, v) in figures.iter_mut().zip(r.figures) {
                b.append_value(v);
            }
        }
        let mut fields = vec![
            Field::new("incomplete", DataType::Boolean, false),
            Field::new("key", DataType::Float64, false),
            // Breaks ties of `key`: 0 here; the Sharpe ratio when ranked by DSR (`by_dsr`).
            Field::new("tie", DataType::Float64, false),
            Field::new("position", DataType::UInt64, false),
            Field::new("param_set_id", DataType::UInt64, false),
            Field::new("shards", DataType::UInt64, false),
            Field::new("failed", DataType::UInt64, false),
            Field::new("trades", DataType::UInt64, false),
            Field::new("closed_trades", DataType::UInt64, false),
        ];
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(incomplete.finish()),
            Arc::new(key.finish()),
            Arc::new(Float64Array::from(vec![0.0; n])),
            Arc::new(position.finish()),
            Arc::new(id.finish()),
            Arc::new(shards.finish()),
            Arc::new(failed.finish()),
            Arc::new(trades.finish()),
            Arc::new(closed.finish()),
        ];
        for (name, mut b) in LeaderRow::FIGURES.iter().zip(figures) {
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
    pub(super) fn finish(mut self) -> Result<u64, SweepError> {
        self.flush()?;
        Ok(self.written)
    }
}

/// The per-set rows of a sweep, in part files, to be sorted.
pub(super) struct SortedBoard<'a> {
    pub(super) dir: &'a Path,
    pub(super) rows: u64,
    pub(super) memory: usize,
}

/// Writes `leaderboard.csv` from the board parts: the first `rows` sets, best first, with
/// their DSR when `dsr` gives them; returns the first `keep` rows.
pub(super) async fn write_leaderboard(
    board: &SortedBoard<'_>,
    (expander, axes): (&SetExpander, &[String]),
    path: &Path,
    rows: usize,
    (dsr, keep): (Option<&HashMap<ParamSetId, Deflated>>, usize),
) -> Result<Vec<LeaderRow>, SweepError> {
    let mut top = Vec::new();
    let dir = board.dir;
    let file = File::create(path).map_err(|e| output_error(path, e))?;
    let mut out = LeaderCsv::new(BufWriter::new(file), axes).map_err(|e| output_error(path, e))?;
    let by = ["incomplete", "key", "tie", "param_set_id"];
    let mut stream = sorted(dir, board.rows, &by, board.memory, None).await?;
    let mut rank = 0;
    while rank < rows
        && let Some(batch) = next_batch(&mut stream, dir).await?
    {
        let u64s = |name: &str| {
            batch
                .column_by_name(name)
                .and_then(|c| c.as_primitive_opt::<UInt64Type>())
                .ok_or_else(|| output_error(dir, format!("board column {name} is missing")))
        };
        let (position, id) = (u64s("position")?, u64s("param_set_id")?);
        let (shards, failed, trades) = (u64s("shards")?, u64s("failed")?, u64s("trades")?);
        let closed = u64s("closed_trades")?;
        let figures: Vec<_> = LeaderRow::FIGURES
            .iter()
            .map(|name| {
                batch
                    .column_by_name(name)
                    .and_then(|c| c.as_primitive_opt::<Float64Type>())
                    .ok_or_else(|| output_error(dir, format!("board column {name} is missing")))
            })
            .collect::<Result<_, _>>()?;
        for i in 0..batch.num_rows() {
            if rank >= rows {
                break;
            }
            rank += 1;
            let row = BoardRow {
                incomplete: false,
                key: 0.0,
                position: position.value(i),
                id: id.value(i),
                shards: shards.value(i),
                failed: failed.value(i),
                trades: trades.value(i),
                closed_trades: closed.value(i),
                figures: std::array::from_fn(|k| figures[k].value(i)),
            };
            let params = expander.set_at(row.position).ok_or_else(|| {
                output_error(
                    dir,
                    format!("no parameter set at position {}", row.position),
                )
            })?;
            let row = row.leader_row(rank, params, dsr);
            out.write(&row).map_err(|e| output_error(path, e))?;
            if top.len() < keep {
                top.push(row);
            }
        }
    }
    out.finish().map_err(|e| output_error(path, e))?;
    Ok(top)
}
