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
mod block;
mod book;
mod cell;
mod chain;
mod checkpoint;
mod day_returns;
mod exact_means;
mod exec_model;
mod finish;
mod kernel;
mod lane_loop;
mod order_account;
mod order_kernel;
mod panic_capture;
mod paths;
mod quotient;
mod raw;
mod recorded;
mod shared_means;
mod shared_pool;
mod simd;
mod trace;
mod trades;
mod universe_kernel;
mod window;

pub use cell::{CellFailure, CellKey, CellOutcome, FailureKind};
pub use chain::Chain;
pub use checkpoint::{Checkpoint, CheckpointError};
pub use day_returns::DayReturns;
pub use exec_model::{
    Annualisation, EXEC_MODEL_VERSION, ExecModel, ExposureBasis, FirstReturn, ProfitFactorBasis,
    RatioConvention, ReversalFee, ZeroDeviation,
};
pub use kernel::TILE;
pub use raw::RawAccount;
pub use recorded::{Keep, Recorded, run_chunk_with, run_source_with};
pub use simd::SimdLevel;
pub use trace::{CellTrace, Fill, Side};
pub use trades::{Trade, TradeEnd};

use crate::data::{DataError, FeedBatch, ShardData};
use crate::params::ParamSet;
use crate::strategy::{DataKind, Feed, Strategy};

/// Runs each parameter set in `sets` over the whole of `data` with strategy `S`; returns one
/// outcome per set, in order. Cells fail independently: a set that does not fit `S::Params`, a
/// panic in `S::new` or `on_data`, or a NaN target fails only its own cell.
///
/// ```
/// # extern crate gridtest_core as gridtest;
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

/// [`run_chunk`] that also records each cell's return per day ([`DayReturns`]). The metrics are
/// bit for bit those of [`run_chunk`]; the lanes stop at each day's end to note their equity, so
/// the cost is one call per lane per day.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::prelude::*;
/// use gridtest::{ExecModel, data::{Shard, ShardData}, engine::run_chunk_recording};
///
/// #[derive(Params, Clone, Debug)]
/// struct P { hold: bool }
/// struct Long;
/// #[gridtest::strategy(name = "doc_long_by_day")]
/// impl Strategy for Long {
///     type Params = P;
///     type Feed = Ticks;
///     fn new(_: &P) -> Self { Long }
///     fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 { 1.0 }
/// }
///
/// const DAY: i64 = 86_400_000_000_000;
/// let shard = Shard::new("DEMO", "1970-01-01".parse()?, "1970-01-02".parse()?);
/// let data = ShardData::from_ticks(
///     shard, vec![1, 2, DAY + 1, DAY + 2], vec![100.0, 101.0, 102.0, 99.0], vec![1.0; 4], 2)?;
/// let sets = [ParamSet::new([("hold", ParamValue::Bool(true))])];
/// let exec = ExecModel::default().with_commission_bps(0.0);
/// let (cells, days) = run_chunk_recording::<Long>(&data, &sets, &exec);
/// assert_eq!(days.days.len(), 2);
/// let r = &days.per_set[0];
/// // day 1: bought at 101, equity 1; day 2: 101 → 99
/// assert_eq!(r[0], 0.0);
/// assert!((r[1] - (99.0 / 101.0 - 1.0)).abs() < 1e-15);
/// let total = (1.0 + r[0]) * (1.0 + r[1]) - 1.0;
/// assert!((total - cells[0].as_ref().unwrap().total_return).abs() < 1e-15);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn run_chunk_recording<S: Strategy>(
    data: &ShardData,
    sets: &[ParamSet],
    exec: &ExecModel,
) -> (Vec<CellOutcome>, DayReturns) {
    let days = Keep {
        days: true,
        trades: false,
    };
    let recorded = run_chunk_with::<S>(data, sets, exec, days);
    (recorded.cells, recorded.days)
}

/// Runs one parameter set over `data` with every fill and the equity after every event
/// recorded ([`CellTrace`]), through a loop of its own (the sweep's loop never pays for it). The
/// outcome is bit for bit that of [`run_chunk`].
pub fn trace_cell<S: Strategy>(
    data: &ShardData,
    set: &ParamSet,
    exec: &ExecModel,
) -> (CellOutcome, CellTrace) {
    let sets = std::slice::from_ref(set);
    let Some(kernel) = kernel_for::<S>(data.kind(), sets, exec) else {
        let cells = kind_mismatch::<S>(data.kind(), sets);
        return (
            cells.into_iter().next().expect("one set"),
            CellTrace::default(),
        );
    };
    let mut kernel = kernel.tracing();
    for batch in data.batches() {
        kernel.feed(batch);
    }
    let trace = kernel.take_trace();
    let outcome = kernel
        .finish(data.n_days())
        .into_iter()
        .next()
        .expect("one set");
    (outcome, trace)
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
    let Some(mut kernel) = kernel_for::<S>(kind, sets, exec) else {
        return Ok(kind_mismatch::<S>(kind, sets));
    };
    for batch in source {
        kernel.feed(&batch?);
    }
    Ok(kernel.finish(n_days))
}

/// The kernel for `sets`, unless the data is not of the strategy's kind.
fn kernel_for<S: Strategy>(
    kind: DataKind,
    sets: &[ParamSet],
    exec: &ExecModel,
) -> Option<paths::AnyKernel<S>> {
    (kind == <S::Feed as Feed>::KIND).then(|| paths::AnyKernel::<S>::new(sets, exec))
}

/// Every cell failed because the data holds `kind`, not what `S` consumes.
fn kind_mismatch<S: Strategy>(kind: DataKind, sets: &[ParamSet]) -> Vec<CellOutcome> {
    let failure = CellFailure::new(
        FailureKind::Data,
        format!(
            "the data holds {kind} but the strategy consumes {}",
            <S::Feed as Feed>::KIND
        ),
    );
    sets.iter().map(|_| Err(failure.clone())).collect()
}
