//! `Kernel`: the tiled inner loop (see the parent module for the design).

mod carry;

pub(super) use carry::{KernelState, restore_feed};

use super::account::Account;
use super::block::{BLOCK, Block, CHUNK, Decide, Targets};
use super::day_returns::DayReturns;
use super::exec_model::{ExecModel, RatioConvention};
use super::finish::{Conventions, Outcomes};
use super::lane_loop::{run_segment, run_watched};
use super::panic_capture;
use super::shared_pool::{SharedPool, Slots, build_lanes};
use super::simd::{self, SimdLevel};
use super::trace::CellTrace;
use super::trades::{TargetTrades, Trade};
use super::window::{Window, tile_end};
use super::{CellFailure, CellOutcome, FailureKind};
use crate::data::FeedBatch;
use crate::params::{ParamSet, Params};
use crate::strategy::{Feed, SharedSeries, Strategy};

/// Events per tile: small enough that a tile's columns and shared ratios stay in L1 while every
/// lane passes over it. Return moments are merged once per tile of the shard (events
/// `[k·TILE, (k+1)·TILE)`), whatever the batching; GPU kernels use the same boundaries.
pub const TILE: usize = 2048;

/// Largest lookback a strategy may ask for (events); beyond it the cell fails.
const MAX_LOOKBACK: usize = 1 << 24;

/// A lane's strategy, how far back it reads, and the series it shares.
pub(super) struct Built<S: Strategy> {
    pub(super) strategy: S,
    pub(super) lookback: usize,
    pub(super) shared: SharedSeries<S::Feed>,
}

/// Builds the strategy of one parameter set, reads its lookback and its shared series; a set
/// that does not fit `S::Params`, a panic in `S::new` or `S::shared` or too long a lookback
/// fails the cell.
pub(super) fn build_strategy<S: Strategy>(set: &ParamSet) -> Result<Built<S>, CellFailure> {
    let params = S::Params::from_param_set(set)
        .map_err(|e| CellFailure::new(FailureKind::Params, e.to_string()))?;
    let built = panic_capture::catch(|| {
        let strategy = S::new(&params);
        let lookback = strategy.lookback();
        let mut shared = SharedSeries::default();
        S::shared(&params, &mut shared);
        Built {
            strategy,
            lookback,
            shared,
        }
    })
    .map_err(|msg| {
        CellFailure::new(
            FailureKind::Panic,
            format!("strategy panicked in new() or shared() for [{set}]: {msg}"),
        )
    })?;
    let longest = built.lookback.max(built.shared.lookback());
    if longest > MAX_LOOKBACK {
        return Err(CellFailure::new(
            FailureKind::Params,
            format!("lookback {longest} exceeds the limit of {MAX_LOOKBACK} events"),
        ));
    }
    Ok(built)
}

#[allow(
    clippy::large_enum_variant,
    reason = "live lanes are the rule: their state stays inline in the lane vector, in cache order"
)]
enum Lane<S> {
    Live {
        strategy: S,
        account: Account,
        /// Where its shared series are in the kernel's pool.
        slots: Slots,
        /// Equity at each day's close, when recording.
        closes: Vec<f64>,
    },
    Failed(CellFailure),
}

/// K lanes of strategy `S` fed tile by tile.
pub(crate) struct Kernel<S: Strategy> {
    lanes: Vec<Lane<S>>,
    window: Window,
    /// The lanes' distinct shared series.
    pool: SharedPool<S::Feed>,
    cost: f64,
    /// The cost rate of a reversal's opening part charged to the trip it opens (0: none).
    reversal_cost: f64,
    max_leverage: f64,
    conventions: Conventions,
    seen: u64,
    /// Return periods since the last moment tile closed.
    tile_periods: u32,
    /// Whether each day's close is recorded, and the days that ended so far.
    record_days: bool,
    days: Vec<i64>,
    /// The fills and equity of the (single) lane, when tracing it.
    trace: Option<CellTrace>,
    /// Every lane's round trips, when logging them (lane by lane, like a trace).
    trades: Option<Vec<TargetTrades>>,
    /// Lanes stepped together (strategies that do not read their account), with the vector
    /// instructions of `simd`; `live` lists the live lanes of the tile.
    block: Box<Block>,
    simd: SimdLevel,
    live: Vec<usize>,
    /// The block's targets over a chunk.
    targets: Box<Targets>,
}

impl<S: Strategy> Kernel<S> {
    pub(crate) fn new(sets: &[ParamSet], exec: &ExecModel) -> Self {
        let (built, pool, lookback) = build_lanes::<S>(sets);
        let simd = SimdLevel::active();
        let reversal_cost = exec.reversal_cost();
        let lanes = built
            .into_iter()
            .map(|lane| match lane {
                Ok((strategy, slots)) => Lane::Live {
                    strategy,
                    account: Account::new().with_reversal_cost(reversal_cost),
                    slots,
                    closes: Vec::new(),
                },
                Err(failure) => Lane::Failed(failure),
            })
            .collect();
        Self {
            lanes,
            window: Window::new(lookback, <S::Feed as Feed>::COLUMNS.len()),
            pool,
            cost: exec.cost_rate(),
            reversal_cost,
            max_leverage: exec.max_leverage,
            conventions: Conventions::of(exec),
            seen: 0,
            tile_periods: 0,
            record_days: exec.ratios == RatioConvention::Geometric,
            days: Vec::new(),
            trace: None,
            trades: None,
            block: Box::default(),
            simd,
            live: Vec::new(),
            targets: Box::default(),
        }
    }

    /// Steps the lanes' blocks with `level`'s instructions (lowered to what the CPU
    /// supports) rather than the best the CPU has.
    #[cfg(test)]
    pub(crate) fn at_level(mut self, level: SimdLevel) -> Self {
        self.simd = level;
        self
    }

    /// Records the fills and the equity after every event of the first lane (see
    /// [`CellTrace`]), through a loop of its own.
    pub(crate) fn tracing(mut self) -> Self {
        self.trace = Some(CellTrace::default());
        self
    }

    /// The trace recorded (empty when not tracing).
    pub(crate) fn take_trace(&mut self) -> CellTrace {
        self.trace.take().unwrap_or_default()
    }

    /// Books every lane's round trips (see [`Kernel::take_trades`]).
    pub(crate) fn logging_trades(mut self) -> Self {
        self.trades = Some(vec![
            TargetTrades::new(self.reversal_cost);
            self.lanes.len()
        ]);
        self
    }

    /// Whether the lanes log their round trips.
    pub(crate) fn logs_trades(&self) -> bool {
        self.trades.is_some()
    }

    /// Round trips the lanes have booked so far.
    pub(crate) fn trades_held(&self) -> usize {
        self.trades.iter().flatten().map(TargetTrades::held).sum()
    }

    /// Every lane's round trips so far, the open one marked at the lane's equity now (empty
    /// lists when not logging; a failed lane's are dropped).
    pub(crate) fn take_trades(&mut self) -> Vec<Vec<Trade>> {
        let Some(books) = self.trades.take() else {
            return vec![Vec::new(); self.lanes.len()];
        };
        self.lanes
            .iter()
            .zip(books)
            .map(|(lane, book)| match lane {
                Lane::Live { account, .. } => book.finish(account.equity()),
                Lane::Failed(_) => Vec::new(),
            })
            .collect()
    }

    /// Records each lane's equity at the close of every day (see [`DayReturns`]).
    pub(crate) fn recording_days(mut self) -> Self {
        self.record_days = true;
        self
    }

    /// Feeds one batch (any length), tile by tile. Tiles are aligned on multiples of [`TILE`]
    /// events of the shard, whatever the batches, so results do not depend on how the data was
    /// batched (and a GPU kernel can reproduce the tiling).
    pub(crate) fn feed(&mut self, batch: &FeedBatch) {
        let mut start = 0;
        while start < batch.len() {
            let end = tile_end(self.seen, start, batch.len());
            self.window.load::<S::Feed>(batch, start..end);
            if self.record_days {
                self.window.mark_days(&mut self.days);
            }
            self.run_tile();
            start = end;
        }
    }

    fn run_tile(&mut self) {
        let seen = self.seen;
        let n = self.window.len;
        let periods = if seen == 0 { n - 1 } else { n };
        self.pool.fill(&self.window, seen);
        if !S::ACCOUNT && self.trace.is_none() && self.trades.is_none() {
            self.run_tile_in_blocks();
        } else {
            self.run_tile_lane_by_lane();
        }
        self.seen += n as u64;
        self.tile_periods += u32::try_from(periods).unwrap_or(u32::MAX);
        if self.seen.is_multiple_of(TILE as u64) {
            self.close_moment_tile();
        }
    }

    /// The tile in blocks of [`BLOCK`] lanes (see [`super::block`]).
    fn run_tile_in_blocks(&mut self) {
        let mut live = std::mem::take(&mut self.live);
        live.clear();
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            if let Lane::Live { slots, .. } = lane {
                match self.pool.failure(slots) {
                    Some(failure) => *lane = Lane::Failed(failure),
                    None => live.push(i),
                }
            }
        }
        for group in live.chunks(BLOCK) {
            self.run_block(group);
        }
        self.live = live;
    }

    /// The tile for the lanes `group` (live, at most [`BLOCK`]), chunk by chunk.
    fn run_block(&mut self, group: &[usize]) {
        for k in 0..BLOCK {
            match group.get(k).map(|&i| &mut self.lanes[i]) {
                Some(Lane::Live { account, .. }) => {
                    std::mem::swap(account, &mut self.block.accounts[k]);
                    self.block.load(k);
                }
                _ => {
                    self.block.pad(k);
                    self.targets.flatten(k);
                }
            }
        }
        let mut failed: [Option<String>; BLOCK] = Default::default();
        let n = self.window.len;
        let mut start = 0;
        while start < n {
            let chunk = start..(start + CHUNK).min(n);
            self.decide_chunk(group, chunk.clone(), &mut failed);
            self.step_chunk(group, chunk.clone());
            start = chunk.end;
        }
        let (seen, last) = (self.seen, self.seen + n as u64 - 1);
        for (k, &i) in group.iter().enumerate() {
            self.block.store(k);
            if let Some(msg) = failed[k].take() {
                self.lanes[i] = Lane::Failed(CellFailure::new(
                    FailureKind::Panic,
                    format!("strategy panicked between events {seen} and {last}: {msg}"),
                ));
            } else if let Lane::Live { account, .. } = &mut self.lanes[i] {
                std::mem::swap(account, &mut self.block.accounts[k]);
            }
        }
    }

    /// Every lane of `group` decides its targets over `chunk` (a panic fails the lane).
    fn decide_chunk(
        &mut self,
        group: &[usize],
        chunk: std::ops::Range<usize>,
        failed: &mut [Option<String>; BLOCK],
    ) {
        let (seen, max_leverage, simd) = (self.seen, self.max_leverage, self.simd);
        let (window, pool) = (&self.window, &self.pool);
        let targets = &mut self.targets;
        for (k, &i) in group.iter().enumerate() {
            let Lane::Live {
                strategy, slots, ..
            } = &mut self.lanes[i]
            else {
                continue;
            };
            if failed[k].is_some() {
                continue;
            }
            let account = &mut self.block.accounts[k];
            let ran = panic_capture::catch(|| {
                let cursor = window.lane_cursor(seen, pool, slots);
                let decide = Decide {
                    account,
                    cursor: &cursor,
                    range: chunk.clone(),
                    lane: targets.lane_mut(k),
                    max_leverage,
                };
                simd::run(simd, decide, strategy);
            });
            if let Err(msg) = ran {
                failed[k] = Some(msg);
                targets.flatten(k);
            }
        }
    }

    /// Steps the block through `chunk`, recording each lane's equity where a day starts.
    fn step_chunk(&mut self, group: &[usize], chunk: std::ops::Range<usize>) {
        let (cost, simd) = (self.cost, self.simd);
        let (window, targets) = (&self.window, &*self.targets);
        let step = |block: &mut Block, events: std::ops::Range<usize>| {
            let rows = (targets, events.start - chunk.start);
            let ratios = (
                &window.g_fill[events.clone()],
                &window.g_hold[events.clone()],
                &window.growth[events],
            );
            if <S::Feed as Feed>::INTRABAR {
                simd::step_events::<true>(simd, block, rows, ratios, cost);
            } else {
                simd::step_events::<false>(simd, block, rows, ratios, cost);
            }
        };
        // The shard's first event only decides.
        let mut from = chunk.start.max(usize::from(self.seen == 0));
        for &day_start in window.day_starts.iter().filter(|d| chunk.contains(d)) {
            step(&mut self.block, from..day_start);
            for (k, &i) in group.iter().enumerate() {
                if let Lane::Live { closes, .. } = &mut self.lanes[i] {
                    closes.push(self.block.equity(k));
                }
            }
            from = day_start;
        }
        step(&mut self.block, from..chunk.end);
    }

    /// The tile, lane after lane (a strategy that reads its account, or a traced lane).
    fn run_tile_lane_by_lane(&mut self) {
        let (seen, n) = (self.seen, self.window.len);
        let (cost, max_leverage) = (self.cost, self.max_leverage);
        let (window, pool) = (&self.window, &self.pool);
        let trace = &mut self.trace;
        let mut books = self.trades.as_deref_mut();
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            let Lane::Live {
                strategy,
                account,
                slots,
                closes,
            } = lane
            else {
                continue;
            };
            let mut book = books.as_deref_mut().map(|b| &mut b[i]);
            if let Some(failure) = pool.failure(slots) {
                *lane = Lane::Failed(failure);
                continue;
            }
            let ran = panic_capture::catch(|| {
                let cursor = window.lane_cursor(seen, pool, slots);
                if let Some(trace) = trace.as_mut() {
                    let costs = (cost, max_leverage);
                    return run_watched(strategy, account, window, cursor, 0..n, costs, trace);
                }
                let mut run = |account: &mut Account, range: std::ops::Range<usize>| match book {
                    Some(ref mut book) => {
                        let costs = (cost, max_leverage);
                        run_watched(strategy, account, window, cursor, range, costs, *book);
                    }
                    None => {
                        run_segment(strategy, account, window, cursor, range, cost, max_leverage)
                    }
                };
                let mut from = 0;
                for &day_start in &window.day_starts {
                    run(account, from..day_start);
                    closes.push(account.equity());
                    from = day_start;
                }
                run(account, from..n);
            });
            match ran {
                Ok(()) => {}
                Err(msg) => {
                    *lane = Lane::Failed(CellFailure::new(
                        FailureKind::Panic,
                        format!(
                            "strategy panicked between events {seen} and {}: {msg}",
                            seen + n as u64 - 1
                        ),
                    ));
                }
            }
        }
    }

    /// Folds the return moments of the current tile (events `[k·TILE, (k+1)·TILE)` of the shard)
    /// into every live lane.
    fn close_moment_tile(&mut self) {
        let periods = std::mem::take(&mut self.tile_periods);
        for lane in &mut self.lanes {
            if let Lane::Live { account, .. } = lane {
                account.end_tile(periods);
            }
        }
    }

    /// One outcome per parameter set, in order.
    pub(crate) fn finish(self, n_days: u32) -> Vec<CellOutcome> {
        self.finish_recorded(n_days).0
    }

    /// One outcome per parameter set, in order, and the days' returns if they were recorded
    /// (empty otherwise).
    pub(crate) fn finish_recorded(mut self, n_days: u32) -> (Vec<CellOutcome>, DayReturns) {
        if self.tile_periods > 0 {
            self.close_moment_tile();
        }
        let (seen, conventions) = (self.seen, self.conventions);
        let mut days = std::mem::take(&mut self.days);
        days.extend(self.window.day);
        let mut outcomes = Outcomes::new(self.record_days, self.lanes.len());
        for lane in self.lanes {
            match lane {
                Lane::Live {
                    account,
                    mut closes,
                    ..
                } => {
                    if outcomes.recording() {
                        closes.push(account.equity());
                    }
                    let outcome = conventions.outcome(&account.raw(), &closes, seen, n_days);
                    outcomes.push(outcome, || DayReturns::from_closes(&closes));
                }
                Lane::Failed(f) => outcomes.failed(f),
            }
        }
        outcomes.finish(&days)
    }
}
