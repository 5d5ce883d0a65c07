//! The sweep's private folder: the spool of final cells and the outputs rendered from it.

use super::{Plan, output_error};
use crate::error::Result;
use crate::metrics::RankMetric;
use crate::sweep::output::{OrderedRender, TradesFile};
use crate::sweep::{CellSpool, FinalCell, LeaderboardRows, output};

/// A private folder for the sweep's spool and outputs, and the spool with the cells resumed
/// from the persisted ledger already in it (kept for the returns book, which opens later).
pub(super) fn open_spool(
    plan: &Plan,
    resumed: Vec<FinalCell>,
    (metric, leaderboard_rows): (RankMetric, LeaderboardRows),
    trades: bool,
) -> Result<Spooled> {
    let workspace = tempfile::Builder::new()
        .prefix("gridtest-sweep-")
        .tempdir()
        .map_err(|e| output_error(&std::env::temp_dir(), e))?;
    let mut spool = CellSpool::create(&workspace.path().join("cells"), &plan.spec.shards)?;
    let spec_json = plan.spec.to_json();
    let subject = output::Subject {
        grid: &plan.spec.grid,
        shards: &plan.spec.shards,
        metric,
        spec_json: Some(&spec_json),
        leaderboard_rows,
    };
    let out = workspace.path().join("out");
    let mut render = OrderedRender::start(&subject, &out)?;
    let mut trades = trades
        .then(|| TradesFile::create(&out, &plan.spec.grid, &plan.spec.shards))
        .transpose()?;
    let mut untraded = 0usize;
    for cell in &resumed {
        spool.push(cell)?;
        render.offer(cell);
        if let Some(file) = &mut trades {
            file.push(cell)?;
            untraded += usize::from(cell.trades.is_empty() && cell.outcome.is_ok());
        }
    }
    if untraded > 0 {
        tracing::warn!(
            cells = untraded,
            "resumed cells recorded without their trades \
            (an earlier run without --trades, or with no trade): trades.parquet lists none for them"
        );
    }
    Ok(Spooled {
        workspace,
        outputs: Outputs {
            spool,
            render,
            resumed,
            trades,
        },
    })
}

/// The sweep's private folder and where its cells go as they become final.
pub(super) struct Spooled {
    /// A private folder for the spool and the outputs.
    pub(super) workspace: tempfile::TempDir,
    /// Where the cells go.
    pub(super) outputs: Outputs,
}

/// Where a sweep's cells go as they become final.
pub(super) struct Outputs {
    /// Every cell, as Parquet parts.
    pub(super) spool: CellSpool,
    /// The output files, written in grid order as cells become final.
    pub(super) render: OrderedRender,
    /// The cells resumed from the persisted ledger, already in the spool and the outputs.
    pub(super) resumed: Vec<FinalCell>,
    /// Where the cells' trades go (`--trades`), those resumed written already.
    pub(super) trades: Option<TradesFile>,
}
