//! `Targets`: what a block's lanes target over a chunk, one column per lane, and where each
//! lane's target changes.
//!
//! A lane's decision loop writes its column contiguously (row `r` is the target event `r` of
//! the chunk executes; row 0 the one pending before it), so that a simple strategy's loop
//! stores whole vectors. The event step reads a row of several lanes at once, which in this
//! layout is a gather; it reads one only where a lane of its group changes its target, which
//! the lane's decision marks as a bit per row ([`Targets::mark_changes`]). Between two such
//! rows the step keeps the targets in a register: a crossover changes position rarely, so
//! most events read no target at all.

use super::{BLOCK, CHUNK};

/// Rows of a column: the target pending before the chunk, then one per event.
pub(in crate::engine) const ROWS: usize = CHUNK + 1;

/// Values before row 0 of a column: row 1, the first a lane's decisions store, then starts a
/// cache line (the [`Targets`] are aligned to one), so that no vector store of the decision loop
/// straddles two lines.
const LEAD: usize = 7;

/// Values per column: [`LEAD`], the rows, and whole lines.
const STRIDE: usize = (LEAD + ROWS).next_multiple_of(8);

/// Words of a lane's change bits: bit `i` of the bits is row `i + 1`.
const WORDS: usize = CHUNK / 64;

const _: () = assert!(
    CHUNK.is_multiple_of(64),
    "a chunk is whole words of change bits"
);

/// One lane's change bits: bit `i` set where row `i + 1` of its column differs from row `i`.
pub(in crate::engine) type Changes = [u64; WORDS];

/// The targets of [`BLOCK`] lanes over a chunk.
#[repr(C, align(64))]
pub(in crate::engine) struct Targets {
    columns: [[f64; STRIDE]; BLOCK],
    changes: [Changes; BLOCK],
}

impl Default for Targets {
    fn default() -> Self {
        Self {
            columns: [[0.0; STRIDE]; BLOCK],
            changes: [[0; WORDS]; BLOCK],
        }
    }
}

impl Targets {
    /// Lane `k`'s column and change bits, for its decisions to fill.
    pub(in crate::engine) fn lane_mut(&mut self, k: usize) -> (&mut [f64; ROWS], &mut Changes) {
        let column = self.columns[k][LEAD..]
            .first_chunk_mut()
            .expect("a column holds its rows after the lead");
        (column, &mut self.changes[k])
    }

    /// Sets lane `k`'s targets to flat (a lane past the block's lanes, or a failed one).
    pub(in crate::engine) fn flatten(&mut self, k: usize) {
        self.columns[k] = [0.0; STRIDE];
        self.changes[k] = [0; WORDS];
    }

    /// Row `r` of lanes `from..from + N`.
    #[inline(always)]
    pub(super) fn row<const N: usize>(&self, from: usize, r: usize) -> [f64; N] {
        std::array::from_fn(|i| self.columns[from + i][LEAD + r])
    }

    /// The rows where any of lanes `from..from + N` changes its target (bit `i`: row `i + 1`).
    #[inline(always)]
    pub(super) fn group_changes<const N: usize>(&self, from: usize) -> Changes {
        let mut out = [0; WORDS];
        for lane in &self.changes[from..from + N] {
            for (o, &word) in out.iter_mut().zip(lane) {
                *o |= word;
            }
        }
        out
    }

    /// Marks in `changes` the rows of `column` that differ from the row before, bit for bit
    /// (so a NaN target is read again, and a `-0.0` after a `0.0` is not lost). Compiled with
    /// the lane's decisions: a comparison of whole vectors per 64 rows.
    #[inline(always)]
    pub(in crate::engine) fn mark_changes(column: &[f64; ROWS], changes: &mut Changes) {
        for (word, out) in changes.iter_mut().enumerate() {
            let before = &column[word * 64..][..64];
            let after = &column[word * 64 + 1..][..64];
            let mut bits = 0;
            for (i, (a, b)) in before.iter().zip(after).enumerate() {
                bits |= u64::from(a.to_bits() != b.to_bits()) << i;
            }
            *out = bits;
        }
    }
}

/// Whether bit `r − 1` of `changes` is set: row `r` differs from row `r − 1` (never for row 0).
#[inline(always)]
pub(super) fn changed(changes: &Changes, r: usize) -> bool {
    let Some(i) = r.checked_sub(1) else {
        return false;
    };
    changes
        .get(i / 64)
        .is_some_and(|word| word >> (i % 64) & 1 == 1)
}

/// The first row from `from` (at least 1) on where `changes` marks a change, or `end` if none
/// is before it.
#[inline(always)]
pub(super) fn next_change(changes: &Changes, from: usize, end: usize) -> usize {
    let mut bit = from - 1;
    while bit < end.min(WORDS * 64) {
        let word = changes[bit / 64] >> (bit % 64);
        if word != 0 {
            return (bit + word.trailing_zeros() as usize + 1).min(end);
        }
        bit = (bit / 64 + 1) * 64;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_mark_every_row_that_differs_bit_for_bit() {
        let mut targets = Targets::default();
        let (column, changes) = targets.lane_mut(3);
        column[1] = 1.0;
        column[2] = 1.0;
        column[65] = -0.0; // differs from 0.0 in its bits
        column[100] = f64::NAN;
        column[101] = f64::NAN; // the same NaN: no change
        column[ROWS - 1] = 0.5;
        Targets::mark_changes(column, changes);
        let rows: Vec<usize> = (0..ROWS).filter(|&r| changed(changes, r)).collect();
        assert_eq!(rows, [1, 3, 65, 66, 100, 102, ROWS - 1]);
        let next = |from| next_change(changes, from, ROWS);
        assert_eq!(
            [next(1), next(2), next(4), next(66), next(67)],
            [1, 3, 65, 66, 100]
        );
        assert_eq!([next(103), next(ROWS - 1)], [ROWS - 1, ROWS - 1]);
        assert_eq!(next_change(changes, 4, 50), 50, "none before the end");
        assert_eq!(next_change(changes, 103, 200), 200);
        let group = targets.group_changes::<4>(0);
        assert_eq!(group, targets.changes[3]);
        assert_eq!(targets.group_changes::<4>(4), [0; WORDS]);
        assert_eq!(targets.row::<4>(0, 1), [0.0, 0.0, 0.0, 1.0]);
        targets.flatten(3);
        assert!((0..ROWS).all(|r| !changed(&targets.group_changes::<4>(0), r)));
        assert_eq!(targets.row::<4>(0, 1), [0.0; 4]);
    }

    #[test]
    fn the_rows_decisions_store_start_a_cache_line() {
        let mut targets = Box::<Targets>::default();
        let marks: Vec<f64> = (1..).map(f64::from).take(BLOCK).collect();
        for (k, &mark) in marks.iter().enumerate() {
            let (column, _) = targets.lane_mut(k);
            assert_eq!(column[1..].as_ptr().addr() % 64, 0, "lane {k}");
            column[1] = mark;
        }
        assert_eq!(targets.row::<BLOCK>(0, 1).to_vec(), marks);
    }
}
