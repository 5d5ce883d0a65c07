//! Writing a sweep's outputs from its spool of cells, out of core: `results.csv` and
//! `results.parquet` (one row per cell, in grid order then shard order) and `leaderboard.csv`
//! (one row per parameter set, best first). DataFusion sorts the spool (spilling to disk past
//! [`SORT_MEMORY`]); the rows are written as they stream by, and each set's figures are summed
//! while its cells pass, so memory stays flat whatever the grid's size.

mod board;
mod by_dsr;
mod cells;
mod ordered;
mod param_column;
mod place;
mod trades;

pub use ordered::{ORDERED_BUFFER, OrderedRender};
pub use place::{prepare_dir, write_all, write_to_store};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext, col, lit};
use futures::StreamExt;

use self::board::{BoardSpool, SortedBoard, TopBoard, write_leaderboard};
use self::cells::{CellWriter, SetText, ShardText};
pub use self::trades::TradesFile;
use super::SweepError;
use super::leaderboard::{BestRows, LEADERBOARD_ROWS, Leaderboard, LeaderboardRows, SetTally};
use super::research_report::Deflated;
use super::spool::{Spool, SpoolRow, decode};
use crate::data::Shard;
use crate::engine::CellFailure;
use crate::metrics::{DrawdownSign, RankMetric};
use crate::params::{Grid, ParamSet, ParamSetId, SetExpander};

/// The cells, one row each, as CSV.
pub const RESULTS_CSV: &str = "results.csv";
/// The cells, one row each, as Parquet.
pub const RESULTS_PARQUET: &str = "results.parquet";
/// The best parameter sets (see [`LeaderboardRows`]), best first, as CSV.
pub const LEADERBOARD_CSV: &str = "leaderboard.csv";
/// The output files.
pub const OUTPUT_FILES: [&str; 3] = [RESULTS_CSV, RESULTS_PARQUET, LEADERBOARD_CSV];

/// The research report (when the sweep recorded daily returns).
pub const RESEARCH_JSON: &str = "research.json";
/// What the sweep used and cost.
pub const COST_JSON: &str = "cost.json";
/// Daily returns: of every set with `--write-returns`, else of the sets `report.html` draws.
pub const RETURNS_PARQUET: &str = "returns.parquet";
/// The fills of the cell `report.html` lists (the best set on the first shard).
pub const BEST_TRADES_JSON: &str = "best_trades.json";
/// Every round trip of every cell, with `--trades` (see [`TradesFile`]).
pub const TRADES_PARQUET: &str = "trades.parquet";
/// What was run: the sweep's spec (also in `results.parquet`'s key-value metadata under
/// [`SPEC_METADATA_KEY`]), so a local output folder says which data, grid, conventions and
/// code produced it.
pub const SPEC_JSON: &str = "spec.json";
/// The key of the spec in `results.parquet`'s metadata.
pub const SPEC_METADATA_KEY: &str = "gridtest.spec";
/// Output files a sweep writes only in some runs: copied when present, removed from the target
/// when not (so no stale report survives beside fresh results).
pub const OPTIONAL_FILES: [&str; 7] = [
    SPEC_JSON,
    RESEARCH_JSON,
    RETURNS_PARQUET,
    BEST_TRADES_JSON,
    super::report::REPORT_HTML,
    COST_JSON,
    TRADES_PARQUET,
];

/// Memory DataFusion may use to sort a spool before it spills to disk.
pub const SORT_MEMORY: usize = 128 << 20;

/// Failed cells held in memory with their parameter set (the rest are counted and in the files).
pub const FAILURES_HELD: usize = 1_000;

/// Cells of output written per batch.
pub(crate) const OUTPUT_BATCH: usize = 8_192;

/// [`SweepError::Output`] naming `path`.
pub fn output_error(path: &Path, e: impl std::fmt::Display) -> SweepError {
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
    /// The sweep's spec as JSON, written as `spec.json` and into `results.parquet`.
    pub spec_json: Option<&'a str>,
    /// How many sets `leaderboard.csv` ranks.
    pub leaderboard_rows: LeaderboardRows,
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
    let pass = Pass::new(subject, dir)?;
    conclude(pass, spool, (0, 0), sort_memory).await
}

/// Passes the cells of `spool` from `from` (set index, shard ordinal) on in grid order, then
/// writes the leaderboard: what [`OrderedRender`] leaves to the end, or the whole rendering.
async fn conclude(
    mut pass: Pass,
    spool: &Spool,
    from: (u64, u32),
    sort_memory: usize,
) -> Result<Rendered, SweepError> {
    if (pass.rendered.cells as u64) < spool.rows() {
        let by = ["set_index", "shard"];
        let mut stream = sorted(spool.dir(), spool.rows(), &by, sort_memory, Some(from)).await?;
        while let Some(batch) = next_batch(&mut stream, spool.dir()).await? {
            for row in decode(&batch).map_err(|e| output_error(spool.dir(), e))? {
                pass.cell(row)?;
            }
        }
    }
    pass.close_set()?;
    let Pass {
        metric,
        axes,
        expander,
        cells,
        board,
        best,
        board_dir,
        mut rendered,
        dsr,
        ..
    } = pass;
    cells.finish()?;
    let path = rendered.dir.join(LEADERBOARD_CSV);
    let by_dsr = dsr.as_deref().filter(|_| metric == RankMetric::Dsr);
    let (ranked, top) = match board {
        Board::Top(top) => (
            top.write((&expander, &axes), &path, dsr.as_deref())?,
            Vec::new(),
        ),
        Board::Spooled(spool, rows) => {
            let board = SortedBoard {
                dir: &board_dir,
                rows: spool.finish()?,
                memory: sort_memory,
            };
            if let Some(dsr) = by_dsr {
                by_dsr::rekey(&board_dir, dsr)?;
            }
            let keep = if by_dsr.is_some() {
                LEADERBOARD_ROWS
            } else {
                0
            };
            let rows = rows.of(usize::try_from(board.rows).unwrap_or(usize::MAX));
            let what = (&expander, axes.as_slice());
            let top = write_leaderboard(&board, what, &path, rows, (dsr.as_deref(), keep)).await?;
            (board.rows, top)
        }
    };
    let _ = std::fs::remove_dir_all(&board_dir);
    rendered.leaderboard = if by_dsr.is_some() {
        Leaderboard {
            metric,
            axes,
            rows: top,
            ranked: usize::try_from(ranked).unwrap_or(usize::MAX),
            drawdown_sign: DrawdownSign::default(),
        }
    } else {
        best.into_leaderboard(axes)
    };
    Ok(rendered)
}

/// The set whose cells are passing.
struct OpenSet {
    index: u64,
    position: u64,
    id: ParamSetId,
    set: ParamSet,
    text: SetText,
    tally: SetTally,
}

/// Where each set's row goes as its cells pass.
enum Board {
    /// Kept among the best, when `leaderboard.csv` ranks the best sets by a metric known as
    /// the cells pass.
    Top(TopBoard),
    /// Spooled, to be sorted at the end: every set ranked, or a ranking (DSR) known only then;
    /// with the rows to write.
    Spooled(BoardSpool, LeaderboardRows),
}

impl Board {
    fn new(subject: &Subject<'_>, board_dir: &Path) -> Result<Self, SweepError> {
        Ok(match subject.leaderboard_rows {
            LeaderboardRows::Top(keep) if subject.metric != RankMetric::Dsr => {
                Self::Top(TopBoard::new(keep, subject.metric))
            }
            rows => Self::Spooled(BoardSpool::create(board_dir, subject.metric)?, rows),
        })
    }
}

/// One pass over the cells in grid order: each is written out, and each set's figures summed.
struct Pass {
    metric: RankMetric,
    shards: Vec<Shard>,
    axes: Vec<String>,
    expander: SetExpander,
    shard_texts: Vec<ShardText>,
    cells: CellWriter,
    board: Board,
    best: BestRows,
    board_dir: PathBuf,
    rendered: Rendered,
    open: Option<OpenSet>,
    /// Each set's deflated Sharpe ratio, when known at the end (see [`OrderedRender::with_dsr`]).
    dsr: Option<Arc<HashMap<ParamSetId, Deflated>>>,
}

impl Pass {
    /// A pass writing into `dir` (created), with its per-set rows spooled in `dir/.board`.
    fn new(subject: &Subject<'_>, dir: &Path) -> Result<Self, SweepError> {
        std::fs::create_dir_all(dir).map_err(|e| output_error(dir, e))?;
        if let Some(spec) = subject.spec_json {
            let path = dir.join(SPEC_JSON);
            std::fs::write(&path, spec).map_err(|e| output_error(&path, e))?;
        }
        let board_dir = dir.join(".board");
        let axes: Vec<String> = subject.grid.axes().iter().map(|a| a.name.clone()).collect();
        Ok(Self {
            metric: subject.metric,
            shards: subject.shards.to_vec(),
            expander: subject.grid.expander(),
            shard_texts: subject.shards.iter().map(ShardText::new).collect(),
            cells: CellWriter::create(dir, subject.grid, subject.spec_json)?,
            board: Board::new(subject, &board_dir)?,
            board_dir,
            best: BestRows::new(subject.metric, LEADERBOARD_ROWS),
            rendered: Rendered {
                dir: dir.to_owned(),
                leaderboard: Leaderboard {
                    metric: subject.metric,
                    axes: axes.clone(),
                    rows: Vec::new(),
                    ranked: 0,
                    drawdown_sign: DrawdownSign::default(),
                },
                cells: 0,
                failed: 0,
                failures: Vec::new(),
            },
            axes,
            open: None,
            dsr: None,
        })
    }

    /// Takes the next cell (cells come sorted by set, then shard).
    fn cell(&mut self, row: SpoolRow) -> Result<(), SweepError> {
        let corrupt = |what: String| SweepError::Output {
            path: "the sweep's spool".to_owned(),
            reason: what,
        };
        if self
            .open
            .as_ref()
            .is_none_or(|o| o.index != row.place.index)
        {
            self.close_set()?;
            let set = self
                .expander
                .set_at(row.place.position)
                .ok_or_else(|| corrupt(format!("no parameter set at {}", row.place.position)))?;
            self.open = Some(OpenSet {
                index: row.place.index,
                position: row.place.position,
                id: row.param_set,
                text: SetText::new(row.param_set),
                set,
                tally: SetTally::default(),
            });
        }
        let open = self.open.as_mut().expect("opened just above");
        open.tally.add(row.outcome.as_ref().ok(), self.metric);
        let (Some(shard), Some(text)) = (
            self.shards.get(row.shard as usize),
            self.shard_texts.get(row.shard as usize),
        ) else {
            return Err(corrupt(format!("no shard {}", row.shard)));
        };
        if let Err(f) = &row.outcome {
            self.rendered.failed += 1;
            if self.rendered.failures.len() < FAILURES_HELD {
                let failure = (open.set.clone(), shard.clone(), f.clone());
                self.rendered.failures.push(failure);
            }
        }
        self.rendered.cells += 1;
        self.cells.push(&open.set, &open.text, text, &row)
    }

    /// Ranks the open set, if any.
    fn close_set(&mut self) -> Result<(), SweepError> {
        if let Some(open) = self.open.take() {
            let row = open.tally.row(open.set, open.id);
            match &mut self.board {
                Board::Top(top) => top.push(&row, open.position),
                Board::Spooled(spool, _) => spool.push(&row, open.position)?,
            }
            self.best.offer(row);
        }
        Ok(())
    }
}

/// The Parquet files of `dir` sorted by `by` (ascending), through DataFusion with at most
/// `memory` bytes in memory (it spills to disk past that); `None` when there are no rows. With
/// `from` (a set index and a shard ordinal), only the cells from there on.
pub(crate) async fn sorted(
    dir: &Path,
    rows: u64,
    by: &[&str],
    memory: usize,
    from: Option<(u64, u32)>,
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
    let mut frame = ctx
        .read_parquet(url, ParquetReadOptions::default())
        .await
        .map_err(|e| fail(&e))?;
    if let Some((set, shard)) = from.filter(|f| *f != (0, 0)) {
        let later = col("set_index").gt(lit(set)).or(col("set_index")
            .eq(lit(set))
            .and(col("shard").gt_eq(lit(shard))));
        frame = frame.filter(later).map_err(|e| fail(&e))?;
    }
    let frame = frame
        .sort(by.iter().map(|c| col(*c).sort(true, false)).collect())
        .map_err(|e| fail(&e))?;
    frame.execute_stream().await.map(Some).map_err(|e| fail(&e))
}

pub(crate) async fn next_batch(
    stream: &mut Option<SendableRecordBatchStream>,
    dir: &Path,
) -> Result<Option<RecordBatch>, SweepError> {
    let Some(s) = stream.as_mut() else {
        return Ok(None);
    };
    s.next().await.transpose().map_err(|e| output_error(dir, e))
}

#[cfg(test)]
mod tests;
