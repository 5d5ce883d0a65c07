//! Writing a sweep's outputs from its spool of cells, out of core: `results.csv` and
//! `results.parquet` (one row per cell, in grid order then shard order) and `leaderboard.csv`
//! (one row per parameter set, best first). DataFusion sorts the spool (spilling to disk past
//! [`SORT_MEMORY`]); the rows are written as they stream by, and each set's figures are summed
//! while its cells pass, so memory stays flat whatever the grid's size.

mod board;
mod by_dsr;
mod cells;
mod ordered;

pub use ordered::{ORDERED_BUFFER, OrderedRender};

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext, col, lit};
use futures::StreamExt;
use object_store::buffered::BufWriter as StoreWriter;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::io::AsyncWriteExt;

use self::board::{BoardSpool, SortedBoard, write_leaderboard};
use self::cells::{CellWriter, SetText, ShardText};
use super::SweepError;
use super::leaderboard::{BestRows, LEADERBOARD_ROWS, Leaderboard, SetTally};
use super::spool::{Spool, SpoolRow, decode};
use crate::data::Shard;
use crate::engine::CellFailure;
use crate::metrics::{DrawdownSign, RankMetric};
use crate::params::{Grid, ParamSet, ParamSetId, SetExpander};
use crate::storage::Location;

/// The cells, one row each, as CSV.
pub const RESULTS_CSV: &str = "results.csv";
/// The cells, one row each, as Parquet.
pub const RESULTS_PARQUET: &str = "results.parquet";
/// Every parameter set, best first, as CSV.
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
/// What was run: the sweep's spec (also in `results.parquet`'s key-value metadata under
/// [`SPEC_METADATA_KEY`]), so a local output folder says which data, grid, conventions and
/// code produced it.
pub const SPEC_JSON: &str = "spec.json";
/// The key of the spec in `results.parquet`'s metadata.
pub const SPEC_METADATA_KEY: &str = "gridtest.spec";
/// Output files a sweep writes only in some runs: copied when present, removed from the target
/// when not (so no stale report survives beside fresh results).
pub const OPTIONAL_FILES: [&str; 6] = [
    SPEC_JSON,
    RESEARCH_JSON,
    RETURNS_PARQUET,
    BEST_TRADES_JSON,
    super::report::REPORT_HTML,
    COST_JSON,
];

/// The output files present in `from`: [`OUTPUT_FILES`], then those of [`OPTIONAL_FILES`] it
/// holds.
fn present_files(from: &Path) -> Vec<&'static str> {
    let optional = OPTIONAL_FILES
        .into_iter()
        .filter(|n| from.join(n).is_file());
    OUTPUT_FILES.into_iter().chain(optional).collect()
}

/// The optional files a copy of `names` removes from its target: all absent ones but the spec
/// (a results root's `spec.json` is the ledger's, written before any output).
fn stale_files<'a>(names: &'a [&str]) -> impl Iterator<Item = &'static str> + 'a {
    OPTIONAL_FILES
        .into_iter()
        .filter(move |n| *n != SPEC_JSON && !names.contains(n))
}

/// Memory DataFusion may use to sort a spool before it spills to disk.
pub const SORT_MEMORY: usize = 128 << 20;

/// Failed cells held in memory with their parameter set (the rest are counted and in the files).
pub const FAILURES_HELD: usize = 1_000;

/// Cells of output written per batch.
pub(crate) const OUTPUT_BATCH: usize = 8_192;

pub(crate) fn output_error(path: &Path, e: impl std::fmt::Display) -> SweepError {
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
    let board = SortedBoard {
        dir: &board_dir,
        rows: board.finish()?,
        memory: sort_memory,
    };
    let by_dsr = dsr.as_deref().filter(|_| metric == RankMetric::Dsr);
    if let Some(dsr) = by_dsr {
        by_dsr::rekey(&board_dir, dsr)?;
    }
    let keep = if by_dsr.is_some() {
        LEADERBOARD_ROWS
    } else {
        0
    };
    let path = rendered.dir.join(LEADERBOARD_CSV);
    let top = write_leaderboard(&board, &expander, &axes, &path, (dsr.as_deref(), keep)).await?;
    let _ = std::fs::remove_dir_all(&board_dir);
    rendered.leaderboard = if by_dsr.is_some() {
        Leaderboard {
            metric,
            axes,
            rows: top,
            ranked: usize::try_from(board.rows).unwrap_or(usize::MAX),
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

/// One pass over the cells in grid order: each is written out, and each set's figures summed.
struct Pass {
    metric: RankMetric,
    shards: Vec<Shard>,
    axes: Vec<String>,
    expander: SetExpander,
    shard_texts: Vec<ShardText>,
    cells: CellWriter,
    board: BoardSpool,
    best: BestRows,
    board_dir: PathBuf,
    rendered: Rendered,
    open: Option<OpenSet>,
    /// Each set's deflated Sharpe ratio, when known at the end (see [`OrderedRender::with_dsr`]).
    dsr: Option<Arc<HashMap<ParamSetId, f64>>>,
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
            board: BoardSpool::create(&board_dir, subject.metric)?,
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
            self.board.push(&row, open.position)?;
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
    let names = present_files(from);
    for &name in &names {
        let target = dir.join(name);
        let temporary = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        staged.push((temporary.clone(), target.clone()));
        let copied = place_copy(&from.join(name), &temporary);
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
    for stale in stale_files(&names) {
        let _ = std::fs::remove_file(dir.join(stale));
    }
    Ok(())
}

/// Puts a copy of `from` at `to`: a hard link where both are on one file system and `to` is
/// free (instant, and `from` is never written again), else a full copy flushed to the disk.
fn place_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to)?;
    File::open(to)?.sync_all()
}

/// Puts the output files of `from` under `location` (a results root's `sweeps/<id>/`): on a
/// local root as [`write_all`] does; on S3 streamed in parts (multipart upload), so a file of
/// any size goes through a bounded buffer.
///
/// # Errors
/// [`SweepError::Output`] naming the object that could not be written.
pub async fn write_to_store(from: &Path, location: &Location) -> Result<(), SweepError> {
    if let Some(local) = location.local_path() {
        return write_all(from, &local);
    }
    let (store, dir) = location.store().map_err(|e| SweepError::Output {
        path: location.to_string(),
        reason: e.to_string(),
    })?;
    let names = present_files(from);
    for stale in stale_files(&names) {
        let _ = store.delete(&dir.clone().join(stale)).await;
    }
    for name in names {
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

#[cfg(test)]
mod tests;
