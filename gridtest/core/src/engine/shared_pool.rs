//! `SharedPool`: the distinct shared series of a kernel's lanes (see
//! [`Strategy::shared`](crate::strategy::Strategy::shared)), each computed once per tile into
//! a buffer every lane that declared it reads.

use super::checkpoint::CheckpointError;
use super::exact_means::{ExactMeans, ExactState};
use super::kernel::{TILE, build_strategy};
use super::panic_capture;
use super::shared_means::MeanGroups;
use super::simd::SimdLevel;
use super::window::Window;
use super::{CellFailure, FailureKind};
use crate::indicators::RollingMean;
use crate::params::ParamSet;
use crate::strategy::{AnySeries, Feed, Indicator, MAX_SHARED, SharedMean, SharedSeries, Strategy};

/// Which series of the pool a lane reads, by its slots.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Slots {
    ids: [u32; MAX_SHARED],
    len: u8,
}

impl Slots {
    fn ids(&self) -> &[u32] {
        &self.ids[..usize::from(self.len)]
    }
}

/// Each set's strategy with its slots (or why its cell fails), the pool of their shared series,
/// and the lookback a window needs.
pub(super) type BuiltLanes<S> = (
    Vec<Result<(S, Slots), CellFailure>>,
    SharedPool<<S as Strategy>::Feed>,
    usize,
);

/// Builds the strategy of each set and joins its shared series to a new pool: per set, the
/// strategy with its slots (or why the cell fails), the pool, and the lookback a window needs
/// (the strategies' and the series').
pub(super) fn build_lanes<S: Strategy>(sets: &[ParamSet]) -> BuiltLanes<S> {
    let mut pool = SharedPool::new(TILE);
    let mut lookback = 0;
    let lanes = sets
        .iter()
        .map(|set| {
            let built = build_strategy::<S>(set)?;
            let slots = pool.join(built.shared)?;
            lookback = lookback.max(built.lookback);
            Ok((built.strategy, slots))
        })
        .collect();
    let lookback = lookback.max(pool.lookback());
    (lanes, pool, lookback)
}

/// The distinct series of the lanes, and their values over the current tile.
pub(super) struct SharedPool<F: Feed> {
    series: Vec<Box<dyn AnySeries<F>>>,
    /// Series `k`'s values over the tile: `values[k * tile .. k * tile + len]`.
    values: Vec<f64>,
    tile: usize,
    /// Why series `k` stopped (it panicked), if it did.
    failed: Vec<Option<String>>,
    any_failed: bool,
    /// The series that are [`SharedMean`]s, filled by `means` (several at a time) rather than
    /// one by one.
    is_mean: Vec<bool>,
    means: MeanGroups,
    /// The [`Indicator::sma`]s, filled by `exact` (as sums while their columns' sums are
    /// exact, then several at a time).
    exact: ExactMeans,
    /// The series `means` or `exact` fill.
    grouped: Vec<bool>,
    /// The vector instructions the means' divisions run with.
    level: SimdLevel,
}

impl<F: Feed> SharedPool<F> {
    /// An empty pool for tiles of up to `tile` events.
    pub(super) fn new(tile: usize) -> Self {
        Self {
            series: Vec::new(),
            values: Vec::new(),
            tile,
            failed: Vec::new(),
            any_failed: false,
            is_mean: Vec::new(),
            means: MeanGroups::default(),
            exact: ExactMeans::default(),
            grouped: Vec::new(),
            level: SimdLevel::active(),
        }
    }

    /// Adds the series one lane declared, each only if no equal one is held already; returns
    /// where the lane's slots point. More than [`MAX_SHARED`] fails the lane's cell.
    pub(super) fn join(&mut self, declared: SharedSeries<F>) -> Result<Slots, CellFailure> {
        let declared = declared.into_series();
        if declared.len() > MAX_SHARED {
            return Err(CellFailure::new(
                FailureKind::Params,
                format!(
                    "the strategy declares {} shared series; at most {MAX_SHARED}",
                    declared.len()
                ),
            ));
        }
        if let Some(failure) = declared.iter().find_map(|s| column_outside::<F>(&**s)) {
            return Err(failure);
        }
        let mut slots = Slots::default();
        for (slot, series) in declared.into_iter().enumerate() {
            let id = match self.series.iter().position(|held| held.same(&*series)) {
                Some(id) => id,
                None => {
                    let id = self.series.len();
                    let key = u32::try_from(id).expect("fewer series than lanes");
                    let mean = series.as_any().downcast_ref::<SharedMean>();
                    if let Some(mean) = mean {
                        self.means.add::<F>(key, mean);
                    }
                    let pandas_mean = series
                        .as_any()
                        .downcast_ref::<Indicator>()
                        .and_then(Indicator::mean_window);
                    if let Some((column, window)) = pandas_mean {
                        self.exact.add::<F>(key, column.unwrap_or(F::MARK), window);
                    }
                    self.is_mean.push(mean.is_some());
                    self.grouped.push(mean.is_some() || pandas_mean.is_some());
                    self.series.push(series);
                    self.failed.push(None);
                    id
                }
            };
            slots.ids[slot] = u32::try_from(id).expect("fewer series than lanes");
            slots.len += 1;
        }
        self.values.resize(self.series.len() * self.tile, f64::NAN);
        Ok(slots)
    }

    /// Distinct series held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.series.len()
    }

    /// The most events any series reads back.
    pub(super) fn lookback(&self) -> usize {
        self.series.iter().map(|s| s.lookback()).max().unwrap_or(0)
    }

    /// Computes every series over the window's current tile (`seen` events of the shard
    /// before it). A series that panics stops; the lanes reading it fail (see
    /// [`SharedPool::failure`]).
    pub(super) fn fill(&mut self, window: &Window, seen: u64) {
        if self.series.is_empty() {
            return;
        }
        let tile = window.tile::<F>(seen);
        let n = window.len;
        self.means
            .fill(&tile, &mut self.values, self.tile, self.level);
        let values = (&mut self.values[..], self.tile);
        self.exact.fill(&tile, values, &mut self.series, self.level);
        let chunks = self.values.chunks_mut(self.tile);
        let others = self.series.iter_mut().zip(chunks).zip(&mut self.failed);
        for ((series, out), failed) in others
            .zip(&self.grouped)
            .filter_map(|(s, &grouped)| (!grouped).then_some(s))
        {
            if failed.is_some() {
                continue;
            }
            let name = series.type_name();
            if let Err(msg) = panic_capture::catch(|| series.fill(&tile, &mut out[..n])) {
                *failed = Some(format!(
                    "shared series {name} panicked between events {seen} and {}: {msg}",
                    seen + n as u64 - 1
                ));
                self.any_failed = true;
            }
        }
    }

    /// Why the lane of `slots` cannot go on: a series it reads has failed.
    pub(super) fn failure(&self, slots: &Slots) -> Option<CellFailure> {
        if !self.any_failed {
            return None;
        }
        slots
            .ids()
            .iter()
            .find_map(|&id| self.failed[id as usize].clone())
            .map(|msg| CellFailure::new(FailureKind::Panic, msg))
    }

    /// The values over the tile's `n` events of the series the lane of `slots` reads, in its
    /// slot order (empty slices for slots it did not declare).
    #[inline(always)]
    pub(super) fn slices(&self, slots: &Slots, n: usize) -> [&[f64]; MAX_SHARED] {
        let mut out: [&[f64]; MAX_SHARED] = [&[]; MAX_SHARED];
        for (slot, &id) in out.iter_mut().zip(slots.ids()) {
            let start = id as usize * self.tile;
            *slot = &self.values[start..start + n];
        }
        out
    }
}

/// Why `series` cannot be filled on feed `F`: the column it reads is not one of the feed's.
fn column_outside<F: Feed>(series: &dyn AnySeries<F>) -> Option<CellFailure> {
    let any = series.as_any();
    let column = any
        .downcast_ref::<SharedMean>()
        .map(SharedMean::column_in::<F>)
        .or_else(|| any.downcast_ref::<Indicator>()?.column_in::<F>())?;
    (column >= F::COLUMNS.len()).then(|| {
        CellFailure::new(
            FailureKind::Params,
            format!(
                "shared series {} reads column {column}; a {} feed has columns 0 to {} ({})",
                series.type_name(),
                F::KIND,
                F::COLUMNS.len() - 1,
                F::COLUMNS.join(", ")
            ),
        )
    })
}

/// What a pool carries from one slice of a history to the next: the running state of its means,
/// of its [`Indicator`]s and of the means among them filled as exact sums, and which series
/// failed.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct PoolState {
    means: Vec<RollingMean>,
    indicators: Vec<Indicator>,
    exact: Vec<ExactState>,
    failed: Vec<Option<String>>,
}

impl<F: Feed> SharedPool<F> {
    /// The series other than the means, in order.
    fn others(&self) -> impl Iterator<Item = &dyn AnySeries<F>> {
        self.series
            .iter()
            .zip(&self.is_mean)
            .filter_map(|(s, &mean)| (!mean).then_some(&**s))
    }

    /// The pool's state; [`CheckpointError::Series`] naming a series that cannot be carried
    /// (only [`SharedMean`]s and [`Indicator`]s are) otherwise.
    pub(super) fn save(&self) -> Result<PoolState, CheckpointError> {
        let indicators = self
            .others()
            .map(|series| {
                series.as_any().downcast_ref::<Indicator>().cloned().ok_or(
                    CheckpointError::Series {
                        series: series.type_name(),
                    },
                )
            })
            .collect::<Result<_, _>>()?;
        Ok(PoolState {
            means: self.means.save(),
            indicators,
            exact: self.exact.save(),
            failed: self.failed.clone(),
        })
    }

    /// Takes up `state`; `false` (nothing changed) unless it is the state of a pool of the same
    /// series.
    pub(super) fn restore(&mut self, state: PoolState) -> bool {
        let fits = state.failed.len() == self.failed.len()
            && state.indicators.len() == self.others().count()
            && self
                .others()
                .zip(&state.indicators)
                .all(|(held, saved)| held.as_any().downcast_ref::<Indicator>() == Some(saved));
        if !fits || !self.means.fits(&state.means) || !self.exact.restore(&state.exact) {
            return false;
        }
        self.means.restore(&state.means);
        let others = self
            .series
            .iter_mut()
            .zip(&self.is_mean)
            .filter_map(|(s, &mean)| (!mean).then_some(s));
        for (held, saved) in others.zip(state.indicators) {
            if let Some(indicator) = held.as_any_mut().downcast_mut::<Indicator>() {
                *indicator = saved;
            }
        }
        self.any_failed = state.failed.iter().any(Option::is_some);
        self.failed = state.failed;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::SharedPool;
    use crate::strategy::{Indicator, SharedMean, SharedSeries, Ticks};

    fn declare(windows: &[usize]) -> SharedSeries<Ticks> {
        let mut series = SharedSeries::default();
        for &w in windows {
            series.add(SharedMean::price(w));
        }
        series
    }

    #[test]
    fn equal_series_are_held_once() {
        let mut pool = SharedPool::<Ticks>::new(16);
        let a = pool.join(declare(&[5, 20])).unwrap();
        let b = pool.join(declare(&[10, 20])).unwrap();
        let c = pool.join(declare(&[5, 40])).unwrap();
        assert_eq!(pool.len(), 4, "5, 20, 10, 40");
        assert_eq!(a.ids(), [0, 1]);
        assert_eq!(b.ids(), [2, 1]);
        assert_eq!(c.ids(), [0, 3]);
        assert_eq!(pool.lookback(), 40);
    }

    #[test]
    fn a_series_of_a_column_the_feed_lacks_fails_the_lane() {
        for series in [
            Box::new(|s: &mut SharedSeries<Ticks>| s.add(SharedMean::of_column(2, 5)))
                as Box<dyn Fn(&mut SharedSeries<Ticks>) -> usize>,
            Box::new(|s: &mut SharedSeries<Ticks>| s.add(Indicator::sma(5).of_column(7))),
            Box::new(|s: &mut SharedSeries<Ticks>| s.add(Indicator::rsi(5).of_column(2))),
        ] {
            let mut pool = SharedPool::<Ticks>::new(16);
            let mut declared = SharedSeries::default();
            declared.add(SharedMean::price(3));
            series(&mut declared);
            let err = pool.join(declared).unwrap_err();
            assert!(
                err.message
                    .contains("a ticks feed has columns 0 to 1 (price, size)"),
                "{err}"
            );
            assert_eq!(pool.len(), 0, "nothing of the lane joins the pool");
        }
    }

    #[test]
    fn too_many_series_fail_the_lane() {
        let mut pool = SharedPool::<Ticks>::new(16);
        let err = pool
            .join(declare(&[1, 2, 3, 4, 5, 6, 7, 8, 9]))
            .unwrap_err();
        assert!(err.message.contains("9 shared series; at most 8"), "{err}");
    }
}
