//! `Cursor`: a strategy's view of the current event, the events before it, and its account.

use std::marker::PhantomData;

use super::shared::MAX_SHARED;
use super::{Bars, Feed, MAX_COLUMNS, Ticks};

/// A strategy's view of the current event and the `lookback` events before it.
///
/// Cheap to pass around: a few slices and an index. Reading further back than
/// [`Strategy::lookback`](super::Strategy::lookback) panics (which fails only that cell).
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a, F: Feed> {
    ts: &'a [i64],
    cols: [&'a [f64]; MAX_COLUMNS],
    at: usize,
    lookback: usize,
    index: u64,
    /// The lane's equity (1 at the start) and the fraction of it held, after this event.
    equity: f64,
    weight: f64,
    /// The lane's shared series (one value per event from `origin`, `span` of them; empty for
    /// a slot not declared), and the position of their first event in `ts` and `cols`.
    shared: [&'a [f64]; MAX_SHARED],
    origin: usize,
    span: usize,
    _feed: PhantomData<F>,
}

impl<'a, F: Feed> Cursor<'a, F> {
    /// A cursor at position `at` of buffers holding at least `lookback` events before it.
    pub(crate) fn new(
        ts: &'a [i64],
        cols: [&'a [f64]; MAX_COLUMNS],
        at: usize,
        lookback: usize,
        index: u64,
    ) -> Self {
        Self {
            ts,
            cols,
            at,
            lookback,
            index,
            equity: f64::NAN,
            weight: f64::NAN,
            shared: [&[]; MAX_SHARED],
            origin: lookback,
            span: 0,
            _feed: PhantomData,
        }
    }

    /// Gives the cursor the lane's shared series over the tile's `span` events (the engine,
    /// once per tile).
    #[inline(always)]
    pub(crate) fn with_shared(mut self, shared: [&'a [f64]; MAX_SHARED], span: usize) -> Self {
        self.shared = shared;
        self.span = span;
        self
    }

    /// Narrows the shared series to the events `range` of the tile: [`Cursor::shared`] then
    /// reads them at `at - origin < span`, which the compiler sees from a loop over the
    /// range, so that it drops the bounds check (and a simple strategy's loop vectorises).
    #[inline(always)]
    pub(crate) fn narrow(&mut self, range: std::ops::Range<usize>) {
        for series in &mut self.shared {
            *series = series.get(range.clone()).unwrap_or_default();
        }
        self.origin += range.start;
        self.span = range.len();
    }

    #[inline(always)]
    pub(crate) fn set(&mut self, at: usize, index: u64) {
        self.at = at;
        self.index = index;
    }

    /// Moves to the event `offset` after the first of the shared series' range (see
    /// [`Cursor::narrow`]), the shard's `index`-th.
    #[inline(always)]
    pub(crate) fn seek(&mut self, offset: usize, index: u64) {
        self.at = self.origin + offset;
        self.index = index;
    }

    /// Sets the lane's account as of this event (the engine, before each call).
    #[inline(always)]
    pub(crate) fn set_account(&mut self, equity: f64, weight: f64) {
        self.equity = equity;
        self.weight = weight;
    }

    /// The account's equity after this event (its fill, then its mark), in units of the
    /// starting equity (1.0 at the start). On the orders path, the broker's equity over its
    /// initial cash.
    ///
    /// # Panics
    /// On the targets path, if the strategy does not declare [`Strategy::ACCOUNT`](super::Strategy::ACCOUNT) (which
    /// `#[gridtest::strategy]` sets when the impl calls `equity`, `position` or `cash`).
    #[inline(always)]
    #[must_use]
    pub fn equity(&self) -> f64 {
        self.account().0
    }

    /// The position after this event as a signed fraction of equity (the target executed,
    /// drifted with the price since; 0.0 flat).
    ///
    /// # Panics
    /// As [`Cursor::equity`].
    #[inline(always)]
    #[must_use]
    pub fn position(&self) -> f64 {
        self.account().1
    }

    /// The cash after this event, in units of the starting equity: equity less the position's
    /// value (more than the equity when short).
    ///
    /// # Panics
    /// As [`Cursor::equity`].
    #[inline(always)]
    #[must_use]
    pub fn cash(&self) -> f64 {
        let (equity, weight) = self.account();
        equity * (1.0 - weight)
    }

    #[inline(always)]
    fn account(&self) -> (f64, f64) {
        assert!(
            !self.equity.is_nan(),
            "the cursor's account is read, but the strategy does not declare \
             `const ACCOUNT: bool = true` (the engine fills it only then)"
        );
        (self.equity, self.weight)
    }

    /// The value at the current event of the shared series declared in slot `slot` (see
    /// [`Strategy::shared`](super::Strategy::shared) and [`SharedSeries::add`](super::SharedSeries::add)).
    ///
    /// # Panics
    /// If the strategy declared no series in that slot for this parameter set.
    #[inline(always)]
    #[must_use]
    pub fn shared(&self, slot: usize) -> f64 {
        let series = self.shared.get(slot).copied().unwrap_or_default();
        // The length check first (the same for every event, so the compiler takes it out of
        // the engine's loop). The engine's loops stay within the span, so the index is always
        // in it; a select rather than a second check, so that a simple loop vectorises.
        debug_assert!(
            self.at - self.origin < self.span,
            "the engine reads a shared series outside its span"
        );
        match series.get(..self.span) {
            Some(series) => series
                .get(self.at - self.origin)
                .copied()
                .unwrap_or(f64::NAN),
            None => undeclared_series(slot),
        }
    }

    /// Number of events of this shard before the current one (0 for the first).
    #[inline(always)]
    #[must_use]
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Timestamp of the current event, ns since the Unix epoch (UTC).
    #[inline(always)]
    #[must_use]
    pub fn ts(&self) -> i64 {
        self.ts[self.at]
    }

    /// Timestamp `back` events ago (0 before the shard's start).
    ///
    /// # Panics
    /// If `back` exceeds [`Strategy::lookback`](super::Strategy::lookback).
    #[inline(always)]
    #[must_use]
    pub fn ts_back(&self, back: usize) -> i64 {
        self.ts[self.pos(back)]
    }

    #[inline(always)]
    fn pos(&self, back: usize) -> usize {
        assert!(
            back <= self.lookback,
            "read {back} events back, but the strategy's lookback() is {}",
            self.lookback
        );
        self.at - back
    }

    #[inline(always)]
    fn col(&self, c: usize, back: usize) -> f64 {
        self.cols[c][self.pos(back)]
    }
}

impl Cursor<'_, Ticks> {
    /// Trade price of the current tick.
    #[inline(always)]
    #[must_use]
    pub fn price(&self) -> f64 {
        self.cols[0][self.at]
    }

    /// Trade size of the current tick.
    #[inline(always)]
    #[must_use]
    pub fn size(&self) -> f64 {
        self.cols[1][self.at]
    }

    /// Price `back` ticks ago (`0.0` before the shard's start).
    ///
    /// # Panics
    /// If `back` exceeds [`Strategy::lookback`](super::Strategy::lookback).
    #[inline(always)]
    #[must_use]
    pub fn price_back(&self, back: usize) -> f64 {
        self.col(0, back)
    }

    /// Size `back` ticks ago (`0.0` before the shard's start).
    ///
    /// # Panics
    /// If `back` exceeds [`Strategy::lookback`](super::Strategy::lookback).
    #[inline(always)]
    #[must_use]
    pub fn size_back(&self, back: usize) -> f64 {
        self.col(1, back)
    }
}

macro_rules! bar_fields {
    ($($name:ident, $back:ident, $i:expr, $doc:literal;)*) => {
        impl Cursor<'_, Bars> {
            $(
                #[doc = concat!("The current bar's ", $doc, ".")]
                #[inline(always)]
                #[must_use]
                pub fn $name(&self) -> f64 {
                    self.cols[$i][self.at]
                }

                #[doc = concat!("The ", $doc, " `back` bars ago (`0.0` before the shard's start).")]
                ///
                /// # Panics
                /// If `back` exceeds [`Strategy::lookback`](super::Strategy::lookback).
                #[inline(always)]
                #[must_use]
                pub fn $back(&self, back: usize) -> f64 {
                    self.col($i, back)
                }
            )*
        }
    };
}

bar_fields! {
    open, open_back, 0, "open";
    high, high_back, 1, "high";
    low, low_back, 2, "low";
    close, close_back, 3, "close";
    volume, volume_back, 4, "volume";
}

/// The panic of [`Cursor::shared`] for a slot not declared: out of line, with the slot by
/// value, so that the reading loop keeps nothing in memory for it.
#[cold]
#[inline(never)]
fn undeclared_series(slot: usize) -> ! {
    panic!("shared series {slot} is read, but the strategy declared no series in that slot")
}
