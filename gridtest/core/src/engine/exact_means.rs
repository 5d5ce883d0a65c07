//! `ExactMeans`: the pool's pandas rolling means ([`Indicator::sma`]) filled as plain window
//! sums for as long as every sum over their column is exact.
//!
//! pandas' mean keeps a Kahan-compensated running sum: a remove and an add per event, each a
//! chain of dependent operations, about sixteen cycles per event for each mean. But where every
//! value of the column seen so far is positive and a multiple of `2^e`, and the longest window's
//! largest sum stays below `2^(52+e)`, every addition and subtraction is exact: the
//! compensations stay 0, pandas' special rules change nothing (a mean of positive values is
//! positive; `w` equal values sum to exactly `w·x`, whose quotient is `x`), and the mean is the
//! exact window sum divided by the window — what [`MeanGroups`] computes, several means at a
//! time with vector divisions, bit for bit. Prices on a tick grid of a power of two (W1's
//! 1/256) are such a column; decimal prices (0.01) are not, and go event by event from their
//! first tile.
//!
//! At the first tile where its column is not exact, each mean takes up the state pandas would
//! have: its indicator is built afresh and fed the window's last values again (the same exact
//! sum, zero compensations, ring, counts), then goes on event by event, four means of the
//! column in lockstep so that their chains of dependent operations overlap.

use super::shared_means::{GROUP, MeanGroups};
use super::simd::SimdLevel;
use crate::indicators::RollingMean;
use crate::strategy::{AnySeries, Feed, Indicator, SharedMean, Tile};

/// The pool's [`Indicator::sma`]s, by column.
#[derive(Debug, Default)]
pub(super) struct ExactMeans {
    columns: Vec<ExactColumn>,
}

/// The means of one column.
#[derive(Debug)]
struct ExactColumn {
    column: usize,
    grid: BinaryGrid,
    /// Their window sums, while the column is exact.
    means: MeanGroups,
    /// Pool id and window of each.
    members: Vec<(u32, usize)>,
    /// The longest window.
    longest: usize,
    /// Whether every sum of the column so far was exact (its means are filled as sums).
    exact: bool,
}

impl ExactMeans {
    /// Takes series `id` of the pool, a mean of `window` values of feed column `column`.
    pub(super) fn add<F: Feed>(&mut self, id: u32, column: usize, window: usize) {
        let at = match self.columns.iter().position(|c| c.column == column) {
            Some(at) => at,
            None => {
                self.columns.push(ExactColumn {
                    column,
                    grid: BinaryGrid::default(),
                    means: MeanGroups::default(),
                    members: Vec::new(),
                    longest: 0,
                    exact: true,
                });
                self.columns.len() - 1
            }
        };
        let exact = &mut self.columns[at];
        exact
            .means
            .add::<F>(id, &SharedMean::of_column(column, window));
        exact.members.push((id, window));
        exact.longest = exact.longest.max(window);
    }

    /// Fills every mean over `tile` (series `id`'s values at `values[id * stride ..]`, NaN
    /// before its window is full, as pandas): those of a column still exact as sums; at the
    /// first tile a column is not, each of its means takes up its state in `series`
    /// ([`Indicator`]), and from then on they go event by event, [`GROUP`] in lockstep.
    pub(super) fn fill<F: Feed>(
        &mut self,
        tile: &Tile<'_, F>,
        (values, stride): (&mut [f64], usize),
        series: &mut [Box<dyn AnySeries<F>>],
        level: SimdLevel,
    ) {
        let (lookback, n, seen) = (tile.lookback(), tile.len(), tile.first_index());
        for exact in &mut self.columns {
            let column = tile.column(exact.column);
            let events = &column[lookback..lookback + n];
            if exact.exact && exact.grid.take(events, exact.longest) {
                exact.means.fill(tile, &mut *values, stride, level);
                for &(id, window) in &exact.members {
                    // NaN until the window is full: events before `window - 1 - seen`.
                    let warming = usize::try_from((window as u64 - 1).saturating_sub(seen))
                        .map_or(n, |w| w.min(n));
                    values[id as usize * stride..][..warming].fill(f64::NAN);
                }
                continue;
            }
            if exact.exact {
                exact.exact = false;
                for &(id, window) in &exact.members {
                    let known = usize::try_from(seen).map_or(window, |s| s.min(window));
                    indicator(&mut series[id as usize])
                        .take_up_mean(&column[lookback - known..lookback]);
                }
            }
            for group in exact.members.chunks(GROUP) {
                let out = (&mut *values, stride);
                match group.len() {
                    1 => lockstep::<1, F>(group, events, series, out),
                    2 => lockstep::<2, F>(group, events, series, out),
                    3 => lockstep::<3, F>(group, events, series, out),
                    _ => lockstep::<GROUP, F>(group, events, series, out),
                }
            }
        }
    }

    /// Each column's state: its grid, whether it is still exact, and its means' running sums.
    pub(super) fn save(&self) -> Vec<ExactState> {
        self.columns
            .iter()
            .map(|c| ExactState {
                column: c.column,
                grid: c.grid,
                exact: c.exact,
                means: c.means.save(),
            })
            .collect()
    }

    /// Takes up the states [`ExactMeans::save`] gave (the means' indicators are the caller's to
    /// restore); `false` (nothing changed) unless they are those of these columns and means.
    pub(super) fn restore(&mut self, saved: &[ExactState]) -> bool {
        let fits = saved.len() == self.columns.len()
            && self
                .columns
                .iter()
                .zip(saved)
                .all(|(c, s)| c.column == s.column && c.means.fits(&s.means));
        if fits {
            for (c, s) in self.columns.iter_mut().zip(saved) {
                c.grid = s.grid;
                c.exact = s.exact;
                c.means.restore(&s.means);
            }
        }
        fits
    }
}

/// The [`Indicator`] behind a pool series that is one.
fn indicator<F: Feed>(series: &mut Box<dyn AnySeries<F>>) -> &mut Indicator {
    series
        .as_any_mut()
        .downcast_mut::<Indicator>()
        .expect("the exact means are Indicators")
}

/// Fills the `K` means of `group` (exactly) over `events`, pandas' compensated sums event by
/// event, the `K` independent chains in flight together.
fn lockstep<const K: usize, F: Feed>(
    group: &[(u32, usize)],
    events: &[f64],
    series: &mut [Box<dyn AnySeries<F>>],
    (values, stride): (&mut [f64], usize),
) {
    let ids: [usize; K] = std::array::from_fn(|k| group[k].0 as usize);
    let held = series
        .get_disjoint_mut(ids)
        .expect("distinct series are distinct in the pool");
    let means = held.map(|s| indicator(s).mean_mut().expect("a rolling mean"));
    let n = events.len();
    let outs = values
        .get_disjoint_mut(ids.map(|id| id * stride..id * stride + n))
        .expect("distinct series have disjoint ranges in the pool");
    for (j, &x) in events.iter().enumerate() {
        for k in 0..K {
            outs[k][j] = means[k].push(x);
        }
    }
}

/// What a column of exact means carries from one slice of a history to the next.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct ExactState {
    column: usize,
    grid: BinaryGrid,
    exact: bool,
    means: Vec<RollingMean>,
}

/// The binary grid the values of a column seen so far lie on.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct BinaryGrid {
    /// The exponent of the lowest bit set in any value: each is a multiple of `2^finest`.
    finest: i32,
    /// The largest value.
    largest: f64,
}

impl Default for BinaryGrid {
    fn default() -> Self {
        Self {
            finest: i32::MAX,
            largest: 0.0,
        }
    }
}

impl BinaryGrid {
    /// Takes `values` in; whether every sum of up to `window` values seen so far, and every
    /// difference of two, is exact: every value positive and finite, and `window · largest`
    /// (at least `2 · largest`) below `2^(52 + finest)`.
    fn take(&mut self, values: &[f64], window: usize) -> bool {
        for &x in values {
            if !(x > 0.0 && x.is_finite()) {
                return false;
            }
            self.finest = self.finest.min(lowest_bit(x));
            self.largest = self.largest.max(x);
        }
        let bound = self.largest * window.max(2) as f64;
        self.finest == i32::MAX || bound < 2f64.powi(52_i32.saturating_add(self.finest))
    }
}

/// The exponent of the lowest bit set in positive, finite `x`: `x` is an odd multiple of
/// `2^lowest_bit(x)`.
fn lowest_bit(x: f64) -> i32 {
    let bits = x.to_bits();
    let exponent = i32::try_from((bits >> 52) & 0x7ff).expect("11 bits");
    let mantissa = bits & ((1 << 52) - 1);
    let trailing = |m: u64| i32::try_from(m.trailing_zeros()).expect("at most 64");
    if exponent == 0 {
        -1074 + trailing(mantissa)
    } else {
        exponent - 1075 + trailing(mantissa | 1 << 52)
    }
}

#[cfg(test)]
mod tests {
    use super::{BinaryGrid, ExactMeans, lowest_bit};
    use crate::engine::simd::SimdLevel;
    use crate::indicators::Sma;
    use crate::strategy::{AnySeries, Indicator, MAX_COLUMNS, Ticks, Tile};

    const WINDOWS: [usize; 5] = [1, 2, 7, 50, 300];
    const LOOKBACK: usize = 300;

    /// Prices on a grid of 1/256 with runs of equal values for 2 000 events, then decimals.
    fn prices() -> Vec<f64> {
        (0..3_000)
            .map(|i: u32| match i {
                _ if i % 400 < 60 => 101.5,
                0..2_000 => 100.0 + f64::from((i * 7919) % 1013) / 256.0,
                _ => 100.0 + f64::from((i * 7919) % 1013) / 100.0,
            })
            .collect()
    }

    fn pool() -> (ExactMeans, Vec<Box<dyn AnySeries<Ticks>>>) {
        let mut exact = ExactMeans::default();
        let mut series: Vec<Box<dyn AnySeries<Ticks>>> = Vec::new();
        for (id, &w) in WINDOWS.iter().enumerate() {
            exact.add::<Ticks>(u32::try_from(id).unwrap(), 0, w);
            series.push(Box::new(Indicator::sma(w)));
        }
        (exact, series)
    }

    /// Fills every mean over events `start..end` as the pool does.
    fn fill(
        (exact, series): &mut (ExactMeans, Vec<Box<dyn AnySeries<Ticks>>>),
        padded: &[f64],
        (start, end): (usize, usize),
        level: SimdLevel,
    ) -> Vec<Vec<f64>> {
        let ts = vec![0i64; padded.len()];
        let window = start..LOOKBACK + end;
        let mut cols: [&[f64]; MAX_COLUMNS] = [&[]; MAX_COLUMNS];
        cols[0] = &padded[window.clone()];
        cols[1] = &padded[window.clone()];
        let tile = Tile::<Ticks>::new(&ts[window], cols, LOOKBACK, start as u64);
        let (n, stride) = (end - start, 4_096);
        let mut values = vec![0.0; WINDOWS.len() * stride];
        exact.fill(&tile, (&mut values, stride), series, level);
        values.chunks(stride).map(|v| v[..n].to_vec()).collect()
    }

    /// Exact columns filled as sums, the fall-back to pandas' own fill at the first decimal
    /// price, and a save and restore between tiles: each value equals `Sma::push`'s, bit for
    /// bit, at every vector level.
    #[test]
    fn means_equal_pandas_fill_through_the_fall_back_and_a_restore() {
        let prices = prices();
        let mut padded = vec![0.0; LOOKBACK];
        padded.extend(&prices);
        let expected: Vec<Vec<f64>> = WINDOWS
            .iter()
            .map(|&w| {
                let mut sma = Sma::new(w);
                prices.iter().map(|&p| sma.push(p)).collect()
            })
            .collect();
        let tiles = [
            (0, 200),
            (200, 1_000),
            (1_000, 2_000),
            (2_000, 2_100),
            (2_100, 3_000),
        ];
        for level in SimdLevel::supported() {
            for restore_after in [1, 3, 4] {
                let mut pool = pool();
                for (k, &(start, end)) in tiles.iter().enumerate() {
                    if k == restore_after {
                        let saved = pool.0.save();
                        let indicators: Vec<Indicator> = pool
                            .1
                            .iter()
                            .map(|s| s.as_any().downcast_ref::<Indicator>().unwrap().clone())
                            .collect();
                        pool = self::pool();
                        assert!(pool.0.restore(&saved));
                        for (held, saved) in pool.1.iter_mut().zip(indicators) {
                            *held.as_any_mut().downcast_mut::<Indicator>().unwrap() = saved;
                        }
                    }
                    let got = fill(&mut pool, &padded, (start, end), level);
                    assert_eq!(pool.0.columns[0].exact, end <= 2_000);
                    for ((w, got), expected) in WINDOWS.iter().zip(&got).zip(&expected) {
                        for (j, (g, e)) in got.iter().zip(&expected[start..end]).enumerate() {
                            assert_eq!(
                                g.to_bits(),
                                e.to_bits(),
                                "{level:?}, window {w}, event {}: {g} vs {e}",
                                start + j
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_lowest_bit_of_grid_values() {
        assert_eq!(lowest_bit(1.0), 0);
        assert_eq!(lowest_bit(3.0), 0);
        assert_eq!(lowest_bit(100.0 + 5.0 / 256.0), -8);
        assert_eq!(lowest_bit(0.5), -1);
        assert_eq!(lowest_bit(f64::from_bits(1)), -1074);
        assert!(
            lowest_bit(0.1) < -50,
            "a decimal is no short binary fraction"
        );
    }

    #[test]
    fn a_column_is_exact_while_its_sums_are() {
        let mut grid = BinaryGrid::default();
        assert!(grid.take(&[], 1000), "nothing seen");
        assert!(grid.take(&[100.0 + 3.0 / 256.0, 99.5], 1000));
        // A window of 2^40 prices of about 100 (2^47) on a grid of 2^-8 passes 2^(52-8).
        let (mut long, mut decimal, mut zero) = (grid, grid, grid);
        assert!(!long.take(&[], 1 << 40));
        assert!(!decimal.take(&[0.1], 10), "decimals are not exact");
        assert!(!zero.take(&[0.0], 10), "only positive values");
        assert!(!grid.take(&[f64::NAN], 10));
    }
}
