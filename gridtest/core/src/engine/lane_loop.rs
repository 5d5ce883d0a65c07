//! The lane-by-lane loops of [`super::kernel::Kernel`]: one lane over a tile, event by event,
//! for strategies that read their account (and for a lane whose fills are watched).

use super::account::Account;
use super::trace::{self, Before, CellTrace, Fill};
use super::trades::TargetTrades;
use super::window::Window;
use crate::strategy::{Cursor, Feed, Strategy};

/// What a lane loop that watches its fills does with them: a trace keeps every fill and the
/// equity after every event; a trade book folds the fills into round trips.
pub(super) trait FillWatch {
    /// A fill that moved the target from `held` to `now`; `entry_equity` is the account's
    /// round-trip reference after it.
    fn fill(&mut self, fill: Fill, held: f64, now: f64, entry_equity: f64);

    /// The equity after the event at `ts`.
    fn after(&mut self, _ts: i64, _equity: f64) {}
}

impl FillWatch for CellTrace {
    fn fill(&mut self, fill: Fill, _held: f64, _now: f64, _entry_equity: f64) {
        self.fills.push(fill);
    }

    fn after(&mut self, ts: i64, equity: f64) {
        self.equity.push((ts, equity));
    }
}

impl FillWatch for TargetTrades {
    fn fill(&mut self, fill: Fill, held: f64, now: f64, entry_equity: f64) {
        self.on_fill(&fill, held, now, entry_equity);
    }
}

/// [`run_segment`] event by event with every fill shown to `watch`: the same steps (a traced
/// lane, or one whose round trips are kept).
pub(super) fn run_watched<S: Strategy>(
    strategy: &mut S,
    account: &mut Account,
    window: &Window,
    mut cursor: Cursor<'_, S::Feed>,
    range: std::ops::Range<usize>,
    (cost, max_leverage): (f64, f64),
    watch: &mut impl FillWatch,
) {
    let (l, n) = (window.lookback, range.end);
    let seen = cursor.index();
    let mut first = range.start;
    if seen == 0 && first == 0 {
        decide(strategy, account, &mut cursor, (l, 0), max_leverage);
        watch.after(window.ts[l], account.equity());
        first = 1;
    }
    let fill_price = &window.cols[<S::Feed as Feed>::FILL];
    for j in first..n {
        let (g_fill, g_hold) = (window.g_fill[j], window.g_hold[j]);
        let (weight, held) = account.position();
        let before = Before {
            equity: account.equity(),
            weight,
        };
        if <S::Feed as Feed>::INTRABAR {
            account.step::<true>(g_fill, g_hold, cost);
        } else {
            account.step::<false>(g_fill, 1.0, cost);
        }
        let index = seen + j as u64;
        let ts = window.ts[l + j];
        let now = account.position().1;
        if now != held {
            let fill = trace::fill(before, (index, ts, fill_price[l + j], g_fill), now, cost);
            watch.fill(fill, held, now, account.entry_equity());
        }
        watch.after(ts, account.equity());
        decide(strategy, account, &mut cursor, (l + j, index), max_leverage);
    }
}

/// Runs one lane over the events `range` of the tile (a day's part of it, when recording).
#[inline(always)]
pub(super) fn run_segment<S: Strategy>(
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
        decide(strategy, account, &mut cursor, (l, 0), max_leverage);
        first = 1;
    }
    let g_fill = &window.g_fill[first..n];
    let g_hold = &window.g_hold[first..n];
    for (j, (&gf, &gh)) in (first..n).zip(g_fill.iter().zip(g_hold)) {
        account.step::<INTRABAR>(gf, if INTRABAR { gh } else { 1.0 }, cost);
        let index = seen + j as u64;
        decide(strategy, account, &mut cursor, (l + j, index), max_leverage);
    }
}

/// The strategy decides at window row `at` (event `index` of the shard): the cursor moves
/// there (with the account, when the strategy reads it) and the target is recorded for the
/// next event.
#[inline(always)]
fn decide<S: Strategy>(
    strategy: &mut S,
    account: &mut Account,
    cursor: &mut Cursor<'_, S::Feed>,
    (at, index): (usize, u64),
    max_leverage: f64,
) {
    cursor.set(at, index);
    if S::ACCOUNT {
        cursor.set_account(account.equity(), account.position().0);
    }
    let target = strategy.on_data(cursor);
    account.set_target(target, index, max_leverage);
}
