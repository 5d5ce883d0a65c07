//! `MeanGroups`: the shared pool's [`SharedMean`] series, filled several at a time.
//!
//! One rolling mean alone costs a division per event: the divider (a scalar `divsd` every
//! ~5 cycles) bounds it, behind a chain of dependent adds. Here up to [`GROUP`] means of one
//! column share a loop: their window sums are independent chains in flight together, stored as
//! they go, and the divisions follow in a second pass over each series, a vector loop compiled
//! for the engine's vector level — where that level has fused multiply-adds, a multiply and
//! two of them per value ([`Divisor`], the same quotient bit for bit, several times faster
//! than a divider). The operations and their order are those of [`RollingMean`]
//! (`sum += entering - leaving`, then `sum / window`): the values are bit-identical to
//! [`SharedMean`]'s own fill.

use super::quotient::Divisor;
use super::simd::{self, Inlined, SimdLevel};
use crate::indicators::RollingMean;
use crate::strategy::{Feed, SharedMean, Tile};

/// Most means filled in one loop: enough independent sums to keep both adders busy.
pub(super) const GROUP: usize = 4;

/// A pool series that a group fills: its id (where its values go) and its running mean.
#[derive(Clone, Copy, Debug)]
struct Member {
    id: u32,
    mean: RollingMean,
    divisor: Divisor,
}

/// Up to [`GROUP`] means of one column.
#[derive(Clone, Debug)]
struct Group {
    column: usize,
    members: Vec<Member>,
}

/// The pool's shared means, grouped by column.
#[derive(Debug, Default)]
pub(super) struct MeanGroups {
    groups: Vec<Group>,
}

impl MeanGroups {
    /// Takes series `id` of the pool, a [`SharedMean`] of feed `F`.
    pub(super) fn add<F: Feed>(&mut self, id: u32, mean: &SharedMean) {
        let column = mean.column_in::<F>();
        let mean = *mean.rolling();
        let member = Member {
            id,
            mean,
            divisor: Divisor::new(mean.divisor()),
        };
        match self
            .groups
            .iter_mut()
            .find(|g| g.column == column && g.members.len() < GROUP)
        {
            Some(group) => group.members.push(member),
            None => self.groups.push(Group {
                column,
                members: vec![member],
            }),
        }
    }

    /// Writes each mean's values over `tile` into `values` (series `id`'s at
    /// `values[id * stride ..][.. tile.len()]`).
    pub(super) fn fill<F: Feed>(
        &mut self,
        tile: &Tile<'_, F>,
        values: &mut [f64],
        stride: usize,
        level: SimdLevel,
    ) {
        let (lookback, n) = (tile.lookback(), tile.len());
        for group in &mut self.groups {
            let column = tile.column(group.column);
            let members = &mut group.members[..];
            match members.len() {
                1 => fill_group::<1>(members, column, lookback, (values, stride, n), level),
                2 => fill_group::<2>(members, column, lookback, (values, stride, n), level),
                3 => fill_group::<3>(members, column, lookback, (values, stride, n), level),
                _ => fill_group::<GROUP>(members, column, lookback, (values, stride, n), level),
            }
        }
    }
}

impl MeanGroups {
    /// Every mean's running state, group after group.
    pub(super) fn save(&self) -> Vec<RollingMean> {
        self.groups
            .iter()
            .flat_map(|g| g.members.iter().map(|m| m.mean))
            .collect()
    }

    /// Whether `saved` are the states of means of the same windows in the same order.
    pub(super) fn fits(&self, saved: &[RollingMean]) -> bool {
        let count = self.groups.iter().map(|g| g.members.len()).sum::<usize>();
        count == saved.len()
            && self
                .groups
                .iter()
                .flat_map(|g| &g.members)
                .zip(saved)
                .all(|(m, s)| m.mean.window() == s.window())
    }

    /// Takes up the states [`MeanGroups::save`] gave; `false` (nothing changed) unless they
    /// [fit](MeanGroups::fits).
    pub(super) fn restore(&mut self, saved: &[RollingMean]) -> bool {
        let fits = self.fits(saved);
        if fits {
            let members = self.groups.iter_mut().flat_map(|g| g.members.iter_mut());
            for (member, state) in members.zip(saved) {
                member.mean = *state;
            }
        }
        fits
    }
}

/// Fills the `K` members (exactly) of a group over the `n` events after `lookback` of
/// `column`, into their ranges of `values` (`stride` apart).
fn fill_group<const K: usize>(
    members: &mut [Member],
    column: &[f64],
    lookback: usize,
    (values, stride, n): (&mut [f64], usize, usize),
    level: SimdLevel,
) {
    let ranges: [std::ops::Range<usize>; K] = std::array::from_fn(|k| {
        let start = members[k].id as usize * stride;
        start..start + n
    });
    let outs = values
        .get_disjoint_mut(ranges)
        .expect("distinct series have disjoint ranges in the pool");
    let entering = &column[lookback..lookback + n];
    let leaving = std::array::from_fn(|k| {
        let back = lookback - members[k].mean.window();
        &column[back..back + n]
    });
    let mut means: [RollingMean; K] = std::array::from_fn(|k| members[k].mean);
    let work = FillMeans {
        entering,
        leaving,
        outs,
        divisors: std::array::from_fn(|k| members[k].divisor),
        fused: simd::fused_multiply_add(level),
    };
    simd::run(level, work, &mut means);
    for (member, mean) in members.iter_mut().zip(means) {
        member.mean = mean;
    }
}

/// One group's fill over a tile: the window sums, then the divisions.
struct FillMeans<'a, const K: usize> {
    entering: &'a [f64],
    leaving: [&'a [f64]; K],
    outs: [&'a mut [f64]; K],
    /// Each mean's window, as the divisions' divisor.
    divisors: [Divisor; K],
    /// Whether the level [`simd::run`] compiles this for has fused multiply-adds.
    fused: bool,
}

impl<const K: usize> Inlined for FillMeans<'_, K> {
    type Subject = [RollingMean; K];
    type Output = ();

    #[inline(always)]
    fn call(self, means: &mut [RollingMean; K]) {
        let Self {
            entering,
            leaving,
            mut outs,
            divisors,
            fused,
        } = self;
        let n = entering.len();
        for k in 0..K {
            assert!(leaving[k].len() == n && outs[k].len() == n);
        }
        // K independent chains of adds: each mean's sum, stored as it goes.
        for j in 0..n {
            let x = entering[j];
            for k in 0..K {
                means[k].push(x, leaving[k][j]);
                outs[k][j] = means[k].sum();
            }
        }
        // The divisions, across events: a vector loop.
        for (out, divisor) in outs.iter_mut().zip(&divisors) {
            divisor.divide(out, fused);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MeanGroups;
    use crate::engine::simd::SimdLevel;
    use crate::strategy::{MAX_COLUMNS, Series, SharedMean, Ticks, Tile};

    /// Every vector level and group size gives the values of `SharedMean`'s own fill, bit for
    /// bit, over tiles that carry state from one to the next.
    #[test]
    fn groups_fill_as_each_mean_alone() {
        let windows = [1, 3, 7, 2, 50, 9, 4];
        let lookback = 50;
        let prices: Vec<f64> = (0..lookback + 300)
            .map(|i| {
                if i < lookback {
                    0.0
                } else {
                    100.0 + ((i * 7919) % 1013) as f64 / 7.0
                }
            })
            .collect();
        let ts = vec![0i64; prices.len()];
        for level in SimdLevel::supported() {
            let mut groups = MeanGroups::default();
            let mut alone: Vec<SharedMean> =
                windows.iter().map(|&w| SharedMean::price(w)).collect();
            for (id, mean) in alone.iter().enumerate() {
                groups.add::<Ticks>(u32::try_from(id).unwrap(), mean);
            }
            let stride = 160;
            let mut values = vec![f64::NAN; windows.len() * stride];
            // Two tiles: events 0..150 and 150..300 (the second with its own lookback).
            for (start, len) in [(0usize, 150usize), (150, 150)] {
                let end = lookback + start + len;
                let mut cols: [&[f64]; MAX_COLUMNS] = [&[]; MAX_COLUMNS];
                cols[0] = &prices[start..end];
                cols[1] = &prices[start..end];
                let tile = Tile::<Ticks>::new(&ts[start..end], cols, lookback, start as u64);
                groups.fill(&tile, &mut values, stride, level);
                for (id, mean) in alone.iter_mut().enumerate() {
                    let mut expected = vec![0.0; len];
                    Series::<Ticks>::fill(mean, &tile, &mut expected);
                    let got = &values[id * stride..id * stride + len];
                    for (j, (g, e)) in got.iter().zip(&expected).enumerate() {
                        assert_eq!(
                            g.to_bits(),
                            e.to_bits(),
                            "{level:?}, window {}, event {}",
                            windows[id],
                            start + j
                        );
                    }
                }
            }
        }
    }
}
