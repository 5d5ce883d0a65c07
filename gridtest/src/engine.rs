//! The engine: runs K parameter sets of one strategy over one shard, tile by tile.
//!
//! # Loop order and cost
//! The shard arrives as Arrow batches. Each batch is cut into tiles of [`TILE`] events, copied
//! once into a window that keeps the strategy's lookback in front of it (so `price_back(k)`
//! reads across batch and day boundaries), and the per-event price ratios shared by every lane
//! are computed once. Then each lane (strategy state + [`account`](self) of one parameter set)
//! runs over the whole tile with its state in registers: the tile is read from memory once per
//! chunk and stays in L1 while K lanes pass over it. The inner loop is monomorphised per
//! strategy: no allocation, no dynamic dispatch, no `Result` per event. A lane that panics is
//! failed (with the message) and skipped from then on; the others continue.
//!
//! # Semantics
//! See [`ExecModel`] and `docs/execution-model.md`.

mod account;
mod cell;
mod exec_model;
mod kernel;
mod panic_capture;
mod raw;

pub use cell::{CellFailure, CellKey, CellOutcome, FailureKind};
pub use exec_model::{EXEC_MODEL_VERSION, ExecModel};
pub use kernel::TILE;
pub use raw::RawAccount;

use crate::data::{DataError, FeedBatch, ShardData};
use crate::params::ParamSet;
use crate::strategy::{DataKind, Feed, Strategy};

/// Runs each parameter set in `sets` over the whole of `data` with strategy `S`; returns one
/// outcome per set, in order. Cells fail independently: a set that does not fit `S::Params`, a
/// panic in `S::new` or `on_data`, or a NaN target fails only its own cell.
///
/// ```
/// use gridtest::prelude::*;
/// use gridtest::{ExecModel, data::{Shard, ShardData}, engine::run_chunk};
///
/// #[derive(Params, Clone, Debug)]
/// struct P { hold: bool }
/// struct AlwaysLong { hold: bool }
/// #[gridtest::strategy(name = "doc_always_long")]
/// impl Strategy for AlwaysLong {
///     type Params = P;
///     type Feed = Ticks;
///     fn new(p: &P) -> Self { Self { hold: p.hold } }
///     fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 { if self.hold { 1.0 } else { 0.0 } }
/// }
///
/// let shard = Shard::new("DEMO", "2024-01-02".parse()?, "2024-01-02".parse()?);
/// let prices = vec![100.0, 101.0, 102.0, 99.0];
/// let data = ShardData::from_ticks(shard, vec![1, 2, 3, 4], prices, vec![1.0; 4], 1)?;
/// let sets = [ParamSet::new([("hold", ParamValue::Bool(true))])];
/// let cells = run_chunk::<AlwaysLong>(&data, &sets, &ExecModel::default().with_commission_bps(0.0));
/// let m = cells[0].as_ref().unwrap();
/// // bought at 101 (the tick after the first decision), marked at 99
/// assert!((m.total_return - (99.0 / 101.0 - 1.0)).abs() < 1e-15);
/// assert_eq!(m.trades, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn run_chunk<S: Strategy>(
    data: &ShardData,
    sets: &[ParamSet],
    exec: &ExecModel,
) -> Vec<CellOutcome> {
    let mut batches = data.batches().iter().cloned().map(Ok);
    let shard = data.shard().id();
    run_source::<S>(&mut batches, data.kind(), data.n_days(), sets, exec).unwrap_or_else(|e| {
        let failure = CellFailure::new(FailureKind::Data, format!("shard {shard}: {e}"));
        sets.iter().map(|_| Err(failure.clone())).collect()
    })
}

/// Runs each parameter set over the batches `source` yields, in order, with strategy `S`: the
/// streaming form of [`run_chunk`], for shards too large to keep in memory. `n_days` is the
/// number of distinct dates, for annualisation.
///
/// # Errors
/// The first [`DataError`] the source yields (every cell of the chunk then lacks data), or a
/// kind mismatch between the data and the strategy.
pub fn run_source<S: Strategy>(
    source: &mut dyn Iterator<Item = Result<FeedBatch, DataError>>,
    kind: DataKind,
    n_days: u32,
    sets: &[ParamSet],
    exec: &ExecModel,
) -> Result<Vec<CellOutcome>, DataError> {
    if kind != <S::Feed as Feed>::KIND {
        let failure = CellFailure::new(
            FailureKind::Data,
            format!(
                "the data holds {kind} but the strategy consumes {}",
                <S::Feed as Feed>::KIND
            ),
        );
        return Ok(sets.iter().map(|_| Err(failure.clone())).collect());
    }
    let mut kernel = kernel::Kernel::<S>::new(sets, exec);
    for batch in source {
        kernel.feed(&batch?);
    }
    Ok(kernel.finish(n_days))
}
