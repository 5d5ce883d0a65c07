//! `Kernel`: the tiled inner loop (see the parent module for the design).

use super::account::Account;
use super::day_returns::DayReturns;
use super::exec_model::{ExecModel, RatioConvention};
use super::finish::{Conventions, Outcomes};
use super::panic_capture;
use super::trace::{self, Before, CellTrace};
use super::{CellFailure, CellOutcome, FailureKind};
use crate::data::{FeedBatch, NS_PER_DAY};
use crate::params::{ParamSet, Params};
use crate::strategy::{Cursor, Feed, MAX_COLUMNS, Strategy};

/// Events per tile: small enough that a tile's columns and shared ratios stay in L1 while every
/// lane passes over it. Return moments are merged once per tile of the shard (events
/// `[k·TILE, (k+1)·TILE)`), whatever the batching; GPU kernels use the same boundaries.
pub const TILE: usize = 2048;

/// Largest lookback a strategy may ask for (events); beyond it the cell fails.
const MAX_LOOKBACK: usize = 1 << 24;

/// The tile being processed, with the lookback carried in front of it.
pub(super) struct Window {
    pub(super) lookback: usize,
    pub(super) ts: Vec<i64>,
    pub(super) cols: Vec<Vec<f64>>,
    /// Events in the current tile.
    pub(super) len: usize,
    /// Fill price / previous mark, per event of the tile.
    g_fill: Vec<f64>,
    /// Mark / fill (bars: close / open), per event of the tile.
    g_hold: Vec<f64>,
    last_mark: f64,
    /// When recording days: the tile positions where a new day starts (never the shard's first
    /// event), and the day of the last event loaded.
    day_starts: Vec<usize>,
    pub(super) day: Option<i64>,
}

impl Window {
    pub(super) fn new(lookback: usize, n_cols: usize) -> Self {
        Self {
            lookback,
            ts: vec![0; lookback + TILE],
            cols: vec![vec![0.0; lookback + TILE]; n_cols],
            len: 0,
            g_fill: vec![1.0; TILE],
            g_hold: vec![1.0; TILE],
            last_mark: f64::NAN,
            day_starts: Vec::new(),
            day: None,
        }
    }

    /// Finds where days start in the current tile; returns the days that ended in it.
    pub(super) fn mark_days(&mut self, ended: &mut Vec<i64>) {
        self.day_starts.clear();
        let ts = &self.ts[self.lookback..self.lookback + self.len];
        for (j, t) in ts.iter().enumerate() {
            let day = t.div_euclid(NS_PER_DAY);
            match self.day {
                Some(d) if d == day => {}
                Some(d) => {
                    ended.push(d);
                    self.day_starts.push(j);
                    self.day = Some(day);
                }
                None => self.day = Some(day),
            }
        }
    }

    /// Shifts the last `lookback` events to the front and copies events `range` of `batch` after.
    pub(super) fn load<F: Feed>(&mut self, batch: &FeedBatch, range: std::ops::Range<usize>) {
        let (l, n) = (self.lookback, range.len());
        debug_assert!(n <= TILE);
        if l > 0 {
            self.ts.copy_within(self.len..self.len + l, 0);
            for c in &mut self.cols {
                c.copy_within(self.len..self.len + l, 0);
            }
        }
        self.ts[l..l + n].copy_from_slice(&batch.ts()[range.clone()]);
        for (dst, src) in self.cols.iter_mut().zip(batch.columns()) {
            dst[l..l + n].copy_from_slice(&src[range.clone()]);
        }
        self.len = n;
        let fill = &self.cols[F::FILL][l..l + n];
        let mark = &self.cols[F::MARK][l..l + n];
        let mut prev = self.last_mark;
        for j in 0..n {
            self.g_fill[j] = fill[j] / prev;
            prev = mark[j];
        }
        if F::INTRABAR {
            for j in 0..n {
                self.g_hold[j] = mark[j] / fill[j];
            }
        }
        self.last_mark = prev;
    }

    pub(super) fn cursor<F: Feed>(&self, seen: u64) -> Cursor<'_, F> {
        let end = self.lookback + self.len;
        let mut cols: [&[f64]; MAX_COLUMNS] = [&[]; MAX_COLUMNS];
        for (slot, c) in cols.iter_mut().zip(&self.cols) {
            *slot = &c[..end];
        }
        Cursor::new(&self.ts[..end], cols, self.lookback, self.lookback, seen)
    }
}

/// Where the tile that starts at event `start` of a batch of `len` ends, after `seen` events of
/// the shard: at the shard's next multiple of [`TILE`], or the batch's end.
pub(super) fn tile_end(seen: u64, start: usize, len: usize) -> usize {
    let to_boundary = TILE - usize::try_from(seen % TILE as u64).unwrap_or(0);
    (start + to_boundary).min(len)
}

/// Builds the strategy of one parameter set and reads its lookback; a set that does not fit
/// `S::Params`, a panic in `S::new` or too long a lookback fails the cell.
pub(super) fn build_strategy<S: Strategy>(set: &ParamSet) -> Result<(S, usize), CellFailure> {
    let params = S::Params::from_param_set(set)
        .map_err(|e| CellFailure::new(FailureKind::Params, e.to_string()))?;
    match panic_capture::catch(|| {
        let s = S::new(&params);
        let l = s.lookback();
        (s, l)
    }) {
        Ok((_, l)) if l > MAX_LOOKBACK => Err(CellFailure::new(
            FailureKind::Params,
            format!("lookback {l} exceeds the limit of {MAX_LOOKBACK} events"),
        )),
        Ok(built) => Ok(built),
        Err(msg) => Err(CellFailure::new(
            FailureKind::Panic,
            format!("strategy panicked in new() for [{set}]: {msg}"),
        )),
    }
}

#[allow(
    clippy::large_enum_variant,
    reason = "live lanes are the rule: their state stays inline in the lane vector, in cache order"
)]
enum Lane<S> {
    Live {
        strategy: S,
        account: Account,
        /// Equity at each day's close, when recording.
        closes: Vec<f64>,
    },
    Failed(CellFailure),
}

/// K lanes of strategy `S` fed tile by tile.
pub(crate) struct Kernel<S: Strategy> {
    lanes: Vec<Lane<S>>,
    window: Window,
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
        let mut lookback = 0;
        let lanes = sets
            .iter()
            .map(|set| match build_strategy::<S>(set) {
                Ok((strategy, l)) => {
                    lookback = lookback.max(l);
                    Lane::Live {
                        strategy,
                        account: Account::new(),
                        closes: Vec::new(),
                    }
                }
                Err(failure) => Lane::Failed(failure),
            })
            .collect();
        Self {
            lanes,
            window: Window::new(lookback, <S::Feed as Feed>::COLUMNS.len()),
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
        let window = &self.window;
        let trace = &mut self.trace;
        for lane in &mut self.lanes {
            let Lane::Live {
                strategy,
                account,
                closes,
            } = lane
            else {
                continue;
            };
            let ran = panic_capture::catch(|| {
                if let Some(trace) = trace.as_mut() {
                    let costs = (cost, max_leverage);
                    return run_traced(strategy, account, window, seen, costs, trace);
                }
                let mut from = 0;
                for &day_start in &window.day_starts {
                    run_segment(
                        strategy,
                        account,
                        window,
                        seen,
                        from..day_start,
                        cost,
                        max_leverage,
                    );
                    closes.push(account.equity());
                    from = day_start;
                }
                run_segment(strategy, account, window, seen, from..n, cost, max_leverage);
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
    seen: u64,
    (cost, max_leverage): (f64, f64),
    trace: &mut CellTrace,
) {
    let (l, n) = (window.lookback, window.len);
    let mut cursor = window.cursor::<S::Feed>(seen);
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
    seen: u64,
    range: std::ops::Range<usize>,
    cost: f64,
    max_leverage: f64,
) {
    if <S::Feed as Feed>::INTRABAR {
        run_lane::<S, true>(strategy, account, window, seen, range, cost, max_leverage);
    } else {
        run_lane::<S, false>(strategy, account, window, seen, range, cost, max_leverage);
    }
}

/// The innermost loop: one lane over the events `range` of one tile.
#[inline(never)]
fn run_lane<S: Strategy, const INTRABAR: bool>(
    strategy: &mut S,
    account: &mut Account,
    window: &Window,
    seen: u64,
    range: std::ops::Range<usize>,
    cost: f64,
    max_leverage: f64,
) {
    let l = window.lookback;
    let n = range.end;
    let mut cursor = window.cursor::<S::Feed>(seen);
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
