//! The lane-by-lane loops of [`super::kernel::Kernel`]: one lane over a tile, event by event,
//! for strategies that read their account (and for a traced lane).

use super::account::Account;
use super::trace::{self, Before, CellTrace};
use super::window::Window;
use crate::strategy::{Cursor, Feed, Strategy};

/// [`run_lane`] for a traced lane, event by event: the same steps, and after each the fill
/// (when the position changed) and the equity.
pub(super) fn run_traced<S: Strategy>(
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
