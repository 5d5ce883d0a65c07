//! Indicator series shared across lanes: a strategy declares, per parameter set, the series
//! it reads ([`Strategy::shared`](super::Strategy::shared)); the engine computes each distinct
//! one once per tile of the shard, and every lane that declared an equal series reads the same
//! values ([`Cursor::shared`](super::Cursor::shared)).
//!
//! A grid's lanes grow like the product of its axes, its distinct indicator series like their
//! sum: W1's 955 sets use 20 fast and 50 slow windows, so 70 rolling means instead of 1 910.

use std::any::Any;

use super::{Feed, Indicator, MAX_COLUMNS};
use crate::indicators::RollingMean;

/// Most shared series one parameter set may declare.
pub const MAX_SHARED: usize = 8;

/// An indicator series computed once for every lane that declares an equal one.
///
/// The value it is built with is its key: two lanes share a series when their declared
/// series are equal (`PartialEq`) and of the same type. So build it from the parameters it
/// depends on only (a moving average from its window, not from the whole parameter set), and
/// derive `PartialEq` over that.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::prelude::*;
///
/// /// The highest price of the last `window` ticks, the current one included.
/// #[derive(Clone, Debug, PartialEq)]
/// pub struct HighestPrice { window: usize }
///
/// impl Series<Ticks> for HighestPrice {
///     fn lookback(&self) -> usize { self.window }
///     fn fill(&mut self, tile: &Tile<'_, Ticks>, out: &mut [f64]) {
///         let prices = tile.column(0);
///         for (j, value) in out.iter_mut().enumerate() {
///             let now = tile.lookback() + j;
///             *value = prices[now + 1 - self.window..=now].iter().copied().fold(f64::MIN, f64::max);
///         }
///     }
/// }
/// ```
pub trait Series<F: Feed>: PartialEq + Send + 'static {
    /// How many events before the current one [`Series::fill`] reads (the engine keeps at
    /// least that many in front of each tile; before the shard's start they read `0.0`).
    fn lookback(&self) -> usize;

    /// Writes the series' value at each event of `tile` into `out` (one per event, in order).
    /// Called once per tile, tiles in order: state kept in `self` carries over.
    fn fill(&mut self, tile: &Tile<'_, F>, out: &mut [f64]);
}

/// The events of one tile, with the lookback in front of them.
#[derive(Clone, Copy, Debug)]
pub struct Tile<'a, F: Feed> {
    ts: &'a [i64],
    cols: [&'a [f64]; MAX_COLUMNS],
    lookback: usize,
    first_index: u64,
    _feed: std::marker::PhantomData<F>,
}

impl<'a, F: Feed> Tile<'a, F> {
    pub(crate) fn new(
        ts: &'a [i64],
        cols: [&'a [f64]; MAX_COLUMNS],
        lookback: usize,
        first_index: u64,
    ) -> Self {
        Self {
            ts,
            cols,
            lookback,
            first_index,
            _feed: std::marker::PhantomData,
        }
    }

    /// Events in the tile.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ts.len() - self.lookback
    }

    /// Whether the tile has no event.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Positions in front of the tile's first event (the tile's events are
    /// `lookback()..lookback() + len()` of [`Tile::column`] and [`Tile::ts`]).
    #[must_use]
    pub fn lookback(&self) -> usize {
        self.lookback
    }

    /// Events of the shard before the tile's first.
    #[must_use]
    pub fn first_index(&self) -> u64 {
        self.first_index
    }

    /// Timestamps, the lookback first.
    #[must_use]
    pub fn ts(&self) -> &'a [i64] {
        self.ts
    }

    /// Value column `c` of the feed ([`Feed::COLUMNS`] order: ticks `price`, `size`; bars
    /// `open` … `volume`), the lookback first (`0.0` before the shard's start).
    ///
    /// # Panics
    /// If the feed has no column `c`.
    #[must_use]
    pub fn column(&self, c: usize) -> &'a [f64] {
        assert!(c < F::COLUMNS.len(), "the feed has no column {c}");
        self.cols[c]
    }
}

/// The series one parameter set declares, in the order [`Cursor::shared`](super::Cursor::shared)
/// reads them.
pub struct SharedSeries<F: Feed> {
    declared: Vec<Box<dyn AnySeries<F>>>,
}

impl<F: Feed> Default for SharedSeries<F> {
    fn default() -> Self {
        Self {
            declared: Vec::new(),
        }
    }
}

impl<F: Feed> SharedSeries<F> {
    /// Declares `series`; returns its slot, the number [`Cursor::shared`](super::Cursor::shared)
    /// reads it by (0 for the first declared, then 1, …).
    pub fn add(&mut self, series: impl Series<F>) -> usize {
        self.declared.push(Box::new(series));
        self.declared.len() - 1
    }

    /// Series declared.
    #[must_use]
    pub fn len(&self) -> usize {
        self.declared.len()
    }

    /// Whether none is declared.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.declared.is_empty()
    }

    /// The most events a declared series reads back.
    pub(crate) fn lookback(&self) -> usize {
        self.declared
            .iter()
            .map(|s| s.lookback())
            .max()
            .unwrap_or(0)
    }

    pub(crate) fn into_series(self) -> Vec<Box<dyn AnySeries<F>>> {
        self.declared
    }

    /// The type name of the first declared series whose state cannot be carried from one slice
    /// of a history to the next (neither a [`SharedMean`] nor an [`Indicator`]).
    pub(crate) fn uncarried(&self) -> Option<&'static str> {
        self.declared
            .iter()
            .find(|s| !(s.as_any().is::<SharedMean>() || s.as_any().is::<Indicator>()))
            .map(|s| s.type_name())
    }

    /// The declared series as [`MeanKey`]s, slot by slot; `Err` with the type name of the
    /// first that is not a [`SharedMean`].
    pub(crate) fn mean_keys(&self) -> Result<Vec<MeanKey>, &'static str> {
        self.declared
            .iter()
            .map(|s| {
                s.as_any()
                    .downcast_ref::<SharedMean>()
                    .map(SharedMean::key_in::<F>)
                    .ok_or_else(|| s.type_name())
            })
            .collect()
    }
}

/// A [`Series`] behind a pointer: what the engine holds, one per distinct series (called once
/// per tile, never per event).
pub(crate) trait AnySeries<F: Feed>: Send {
    fn lookback(&self) -> usize;
    fn fill(&mut self, tile: &Tile<'_, F>, out: &mut [f64]);
    /// Whether `other` is a series of the same type, equal to this one.
    fn same(&self, other: &dyn AnySeries<F>) -> bool;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn type_name(&self) -> &'static str;
}

impl<F: Feed, S: Series<F>> AnySeries<F> for S {
    fn lookback(&self) -> usize {
        Series::lookback(self)
    }

    fn fill(&mut self, tile: &Tile<'_, F>, out: &mut [f64]) {
        Series::fill(self, tile, out);
    }

    fn same(&self, other: &dyn AnySeries<F>) -> bool {
        other.as_any().downcast_ref::<S>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<S>()
    }
}

/// The rolling mean of one column over `window` events, shared: the window sum updated as
/// [`RollingMean`] does (add the entering value less the leaving one), then divided by the
/// window (IEEE, correctly rounded). So a lane reading it decides exactly as a lane keeping
/// its own `RollingMean` and comparing [`RollingMean::mean`]s.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::prelude::*;
///
/// #[derive(Params, Clone, Debug)]
/// pub struct CrossParams { pub fast: usize, pub slow: usize }
///
/// /// Long while the fast mean is above the slow one.
/// pub struct Cross { warm_up: u64 }
///
/// #[gridtest::strategy(name = "doc_shared_cross")]
/// impl Strategy for Cross {
///     type Params = CrossParams;
///     type Feed = Ticks;
///     fn new(p: &CrossParams) -> Self { Self { warm_up: p.fast.max(p.slow) as u64 } }
///     fn shared(p: &CrossParams, series: &mut SharedSeries<Ticks>) {
///         series.add(SharedMean::price(p.fast)); // slot 0
///         series.add(SharedMean::price(p.slow)); // slot 1
///     }
///     fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
///         let ready = now.index() + 1 >= self.warm_up;
///         // `&`, not `&&`: both series read for every event, so the loop needs no mask.
///         if ready & (now.shared(0) > now.shared(1)) { 1.0 } else { 0.0 }
///     }
/// }
/// # let _ = Cross { warm_up: 0 };
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SharedMean {
    column: usize,
    mean: RollingMean,
}

impl SharedMean {
    /// The mean of the last `window` prices (ticks: `price`; bars: `close`).
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn price(window: usize) -> Self {
        Self::of_column(usize::MAX, window)
    }

    /// The mean of the last `window` values of column `column` ([`Feed::COLUMNS`] order).
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn of_column(column: usize, window: usize) -> Self {
        Self {
            column,
            mean: RollingMean::new(window),
        }
    }

    /// The column of feed `F` it averages.
    pub(crate) fn column_in<F: Feed>(&self) -> usize {
        if self.column == usize::MAX {
            F::MARK
        } else {
            self.column
        }
    }

    /// Its running mean (the state a fill carries to the next tile).
    pub(crate) fn rolling(&self) -> &RollingMean {
        &self.mean
    }

    /// What identifies it on feed `F`: the column it averages and its window.
    pub(crate) fn key_in<F: Feed>(&self) -> MeanKey {
        MeanKey {
            column: self.column_in::<F>(),
            window: self.mean.window(),
        }
    }
}

/// A [`SharedMean`] as a device computes it: the feed column it averages ([`Feed::COLUMNS`]
/// order, `price` resolved to the feed's mark column) and its window. Two lanes declaring equal
/// keys read the same series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MeanKey {
    /// The column averaged.
    pub column: usize,
    /// Events in the window.
    pub window: usize,
}

impl<F: Feed> Series<F> for SharedMean {
    fn lookback(&self) -> usize {
        self.mean.window()
    }

    fn fill(&mut self, tile: &Tile<'_, F>, out: &mut [f64]) {
        let values = tile.column(self.column_in::<F>());
        let (l, w) = (tile.lookback(), self.mean.window());
        let entering = &values[l..l + out.len()];
        let leaving = &values[l - w..l - w + out.len()];
        let mut mean = self.mean;
        for ((value, &x), &gone) in out.iter_mut().zip(entering).zip(leaving) {
            mean.push(x, gone);
            *value = mean.mean();
        }
        self.mean = mean;
    }
}
