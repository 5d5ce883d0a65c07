//! `Kernel`: the tiled inner loop (see the parent module for the design).

use super::account::Account;
use super::day_returns::DayReturns;
use super::exec_model::{ExecModel, RatioConvention};
use super::finish::{Conventions, Outcomes};
use super::panic_capture;
use super::shared_pool::{SharedPool, Slots, build_lanes};
use super::trace::{self, Before, CellTrace};
use super::window::{Window, tile_end};
use super::{CellFailure, CellOutcome, FailureKind};
use crate::data::FeedBatch;
use crate::params::{ParamSet, Params};
use crate::strategy::{Cursor, Feed, SharedSeries, Strategy};

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
}

impl<S: Strategy> Kernel<S> {
    pub(crate) fn new(sets: &[ParamSet], exec: &ExecModel) -> Self {
        let (built, pool, lookback) = build_lanes::<S>(sets);
        let lanes = built
            .into_iter()
            .map(|lane| match lane {
                Ok((strategy, slots)) => Lane::Live {
                    strategy,
                    account: Account::new(),
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
            max_leverage: exec.max_leverage,
            conventions: Conventions::of(exec),
            seen: 0,
            tile_periods: 0,
            record_days: exec.ratios == RatioConvention::Geometric,
            days: Vec::new(),
            trace: None,
        }
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
        let (cost, max_leverage) = (self.cost, self.max_leverage);
        self.pool.fill(&self.window, seen);
        let (window, pool) = (&self.window, &self.pool);
        let trace = &mut self.trace;
        for lane in &mut self.lanes {
            let Lane::Live {
                strategy,
                account,
                slots,
                closes,
            } = lane
            else {
                continue;
            };
            if let Some(failure) = pool.failure(slots) {
                *lane = Lane::Failed(failure);
                continue;
            }
            let ran = panic_capture::catch(|| {
                let cursor = window.lane_cursor(seen, pool, slots);
                if let Some(trace) = trace.as_mut() {
                    let costs = (cost, max_leverage);
                    return run_traced(strategy, account, window, cursor, costs, trace);
                }
                let mut from = 0;
                for &day_start in &window.day_starts {
                    let range = from..day_start;
                    run_segment(strategy, account, window, cursor, range, cost, max_leverage);
                    closes.push(account.equity());
                    from = day_start;
                }
                run_segment(
                    strategy,
                    account,
                    window,
                    cursor,
                    from..n,
                    cost,
                    max_leverage,
                );
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
        self.seen += n as u64;
        self.tile_periods += u32::try_from(periods).unwrap_or(u32::MAX);
        if self.seen.is_multiple_of(TILE as u64) {
            self.close_moment_tile();
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

/// [`run_lane`] for a traced lane, event by event: the same steps, and after each the fill
/// (when the position changed) and the equity.
fn run_traced<S: Strategy>(
    strategy: &mut S,
    account: &mut Account,
    window: &Window,
    mut cursor: Cursor<'_, S::Feed>,
    (cost, max_leverage): (f64, f64),
    trace: &mut CellTrace,
) {
    let (l, n) = (window.lookback, window.len);
    let seen = cursor.index();
    let mut first = 0;
    if seen == 0 {
        cursor.set(l, 0);
        if S::ACCOUNT {
            cursor.set_account(account.equity(), account.position().0);
        }
        let target = strategy.on_data(&cursor);
        account.set_target(target, 0, max_leverage);
        trace.equity.push((window.ts[l], account.equity()));
        first = 1;
    }
    let fill_price = &window.cols[<S::Feed as Feed>::FILL];
    for j in first..n {
        let (g_fill, g_hold) = (window.g_fill[j], window.g_hold[j]);
        let (weight, held) = account.position();
        let before = Before {
            equity: account.equity(),
            weight,
            held,
        };
        if <S::Feed as Feed>::INTRABAR {
            account.step::<true>(g_fill, g_hold, cost);
        } else {
            account.step::<false>(g_fill, 1.0, cost);
        }
        let index = seen + j as u64;
        let ts = window.ts[l + j];
        let now = account.position().1;
        if now != before.held {
            let event = (index, ts, fill_price[l + j], g_fill);
            trace.fills.push(trace::fill(before, event, now, cost));
        }
        trace.equity.push((ts, account.equity()));
        cursor.set(l + j, index);
        if S::ACCOUNT {
            cursor.set_account(account.equity(), account.position().0);
        }
        let target = strategy.on_data(&cursor);
        account.set_target(target, index, max_leverage);
    }
}

/// Runs one lane over the events `range` of the tile (a day's part of it, when recording).
#[inline(always)]
fn run_segment<S: Strategy>(
    strategy: &mut S,
    account: &mut Account,
    window: &Window,
    cursor: Cursor<'_, S::Feed>,
    range: std::ops::Range<usize>,
    cost: f64,
    max_leverage: f64,
) {
    if <S::Feed as Feed>::INTRABAR {
        run_lane::<S, true>(strategy, account, window, cursor, range, cost, max_leverage);
    } else {
        run_lane::<S, false>(strategy, account, window, cursor, range, cost, max_leverage);
    }
}

/// The innermost loop: one lane over the events `range` of one tile.
#[inline(never)]
fn run_lane<S: Strategy, const INTRABAR: bool>(
    strategy: &mut S,
    account: &mut Account,
    window: &Window,
    mut cursor: Cursor<'_, S::Feed>,
    range: std::ops::Range<usize>,
    cost: f64,
    max_leverage: f64,
) {
    let (l, n) = (window.lookback, range.end);
    // The cursor starts at the tile's first event: its index is the shard's events before it.
    let seen = cursor.index();
    let mut first = range.start;
    if seen == 0 && first == 0 {
        // The shard's first event: nothing to execute yet.
        cursor.set(l, 0);
        if S::ACCOUNT {
            cursor.set_account(account.equity(), account.position().0);
        }
        let target = strategy.on_data(&cursor);
        account.set_target(target, 0, max_leverage);
        first = 1;
    }
    let g_fill = &window.g_fill[first..n];
    let g_hold = &window.g_hold[first..n];
    for (j, (&gf, &gh)) in (first..n).zip(g_fill.iter().zip(g_hold)) {
        account.step::<INTRABAR>(gf, if INTRABAR { gh } else { 1.0 }, cost);
        let index = seen + j as u64;
        cursor.set(l + j, index);
        if S::ACCOUNT {
            cursor.set_account(account.equity(), account.position().0);
        }
        let target = strategy.on_data(&cursor);
        account.set_target(target, index, max_leverage);
    }
}
