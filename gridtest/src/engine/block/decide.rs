//! `Decide`: one lane of a block deciding its targets over a chunk, the strategy's own loop
//! compiled for the CPU's vector level (see [`super::super::simd::run`]).

use super::super::account::Account;
use super::super::simd::Inlined;
use super::Targets;
use super::targets::{Changes, ROWS};
use crate::strategy::{Cursor, Strategy};

/// Lane `k` of a block deciding its targets over the events `range` of the tile into its
/// column of the block's [`Targets`]: row 0 gets the target pending before the range, row
/// `j − range.start + 1` the target set at event `j` (what the event after it executes); then
/// the rows where the target changes are marked.
///
/// The strategy's loop writes its raw targets into the column and only notes whether they are
/// all within the leverage limit (the cursor narrowed to the range, so that a simple
/// strategy's loop vectorises); only a chunk holding one beyond the limit (or NaN) then goes
/// through [`Account::set_target`] event by event.
pub(in crate::engine) struct Decide<'a, S: Strategy> {
    pub(in crate::engine) account: &'a mut Account,
    /// The lane's cursor at the tile (copied inside, so that only the fields the strategy
    /// reads are loaded, rather than the whole cursor copied into each call).
    pub(in crate::engine) cursor: &'a Cursor<'a, S::Feed>,
    pub(in crate::engine) range: std::ops::Range<usize>,
    pub(in crate::engine) lane: (&'a mut [f64; ROWS], &'a mut Changes),
    pub(in crate::engine) max_leverage: f64,
}

impl<S: Strategy> Inlined for Decide<'_, S> {
    type Subject = S;
    type Output = ();

    #[inline(always)]
    fn call(self, strategy: &mut S) {
        let Self {
            account,
            cursor,
            range,
            lane: (column, changes),
            max_leverage,
        } = self;
        let mut cursor = *cursor;
        let first = cursor.index() + range.start as u64;
        let n = range.len();
        cursor.narrow(range);
        column[0] = account.pending();
        let rows = &mut column[1..];
        assert!(n <= rows.len(), "a chunk of {n} events");
        let rows = &mut rows[..n];
        let within = decide_rows(strategy, &mut cursor, rows, (first, max_leverage));
        if within {
            if let Some(&last) = rows.last() {
                account.set_target(last, first + n as u64 - 1, max_leverage);
            }
        } else {
            for (row, index) in rows.iter_mut().zip(first..) {
                account.set_target(*row, index, max_leverage);
                *row = account.pending();
            }
        }
        Targets::mark_changes(column, changes);
    }
}

/// The strategy's targets for the events of `rows` (the first at index `first`), written raw
/// into `rows`; whether all are within `max_leverage`.
///
#[inline(always)]
fn decide_rows<S: Strategy>(
    strategy: &mut S,
    cursor: &mut Cursor<'_, S::Feed>,
    rows: &mut [f64],
    (first, max_leverage): (u64, f64),
) -> bool {
    let (mut within, n) = (true, rows.len());
    // Indexed by a range (not `enumerate`), so that the compiler sees `j < n`, the span.
    for (row, j) in rows.iter_mut().zip(0..n) {
        cursor.seek(j, first + j as u64);
        let target = strategy.on_data(cursor);
        within &= target.abs() <= max_leverage;
        *row = target;
    }
    within
}
