//! `Decide`: one lane of a block deciding its targets over a chunk, the strategy's own loop
//! compiled for the CPU's vector level (see [`super::super::simd::run`]).

use super::super::account::Account;
use super::super::simd::{self, Inlined};
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
/// into `rows`; whether all are within `max_leverage` (never `true` for a NaN).
///
/// The loop only ORs the targets' bits together (one instruction per vector): with the sign
/// cleared, that is at least the largest `|target|` as bits, and non-negative floats order as
/// their bits do (every NaN above infinity), so an OR within the limit proves every target
/// within it. Targets such as 0 and ±1 OR to 1 exactly; where the OR says no (fractions of
/// several sizes), the largest `|target|` is found in a second pass over the rows, and only a
/// chunk with one truly beyond the limit goes through [`Account::set_target`] event by event.
#[inline(always)]
fn decide_rows<S: Strategy>(
    strategy: &mut S,
    cursor: &mut Cursor<'_, S::Feed>,
    rows: &mut [f64],
    (first, max_leverage): (u64, f64),
) -> bool {
    let (mut bits, n) = (0, rows.len());
    // Indexed by `below(n)` (not `enumerate`), so that the compiler knows `j < n`, the span,
    // and reads the shared series without a bounds check.
    for (row, j) in rows.iter_mut().zip(simd::below(n)) {
        cursor.seek(j, first + j as u64);
        let target = strategy.on_data(cursor);
        bits |= target.to_bits();
        *row = target;
    }
    at_most(magnitude(f64::from_bits(bits)), max_leverage)
        || at_most(largest_magnitude(rows), max_leverage)
}

/// The largest [`magnitude`] of `values` (0 for none).
#[inline(always)]
fn largest_magnitude(values: &[f64]) -> i64 {
    values.iter().fold(0, |m, &x| m.max(magnitude(x)))
}

/// `|x|` as an integer that orders as the values do (NaN above infinity).
#[inline(always)]
fn magnitude(x: f64) -> i64 {
    // The sign bit cleared: a non-negative `i64`.
    x.abs().to_bits().cast_signed()
}

/// Whether a [`magnitude`] is at most `limit` (never for a NaN; `false` for a limit below
/// `+0.0` or NaN, where the caller checks each value exactly).
#[inline(always)]
fn at_most(magnitude: i64, limit: f64) -> bool {
    limit >= 0.0 && magnitude <= limit.to_bits().cast_signed()
}

#[cfg(test)]
mod tests {
    use super::{at_most, largest_magnitude, magnitude};

    #[test]
    fn magnitudes_order_as_the_values_and_reject_nan() {
        let values = [
            0.0,
            -0.0,
            f64::MIN_POSITIVE / 4.0,
            1e-300,
            0.5,
            -0.999_999_999_999_999_9,
            1.0,
            -1.0,
            1.0_f64.next_up(),
            2.5,
            -2.5,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        let limits = [0.0, 0.5, 1.0, 2.5, 1e300, f64::INFINITY];
        for &limit in &limits {
            for &x in &values {
                assert_eq!(
                    at_most(magnitude(x), limit),
                    x.abs() <= limit,
                    "{x} against {limit}"
                );
            }
            // The largest of several, as the chunk keeps it.
            let largest = largest_magnitude(&values);
            assert!(!at_most(largest, limit), "a NaN among them, limit {limit}");
            // The OR of two values' bits: within the limit only where both are.
            let mut proven = 0;
            for &a in &values {
                for &b in &values {
                    let (pair, exact) = ([a, b], a.abs() <= limit && b.abs() <= limit);
                    let or = f64::from_bits(a.to_bits() | b.to_bits());
                    if at_most(magnitude(or), limit) {
                        assert!(exact, "{pair:?} against {limit}");
                        proven += 1;
                    }
                    assert_eq!(at_most(largest_magnitude(&pair), limit), exact, "{pair:?}");
                }
            }
            assert!(proven > 0, "the OR proves some pairs within {limit}");
        }
        // Limits the check leaves to the exact path: never `true`.
        for limit in [-0.0, -1.0, f64::NAN] {
            assert!(
                values.iter().all(|&x| !at_most(magnitude(x), limit)),
                "{limit}"
            );
        }
    }
}
