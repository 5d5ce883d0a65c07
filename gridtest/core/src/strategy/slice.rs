//! `Slice`: a portfolio strategy's view of its universe at one timestamp.

use std::marker::PhantomData;

use super::{Bars, Feed, MAX_COLUMNS, Ticks};

/// Marks "this member has had no event yet" in [`Quotes`].
const NEVER: u64 = u64::MAX;

/// The latest event of each member of a universe (as-of values), shared by every lane.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Quotes {
    /// Each member's latest value columns.
    last: Vec<[f64; MAX_COLUMNS]>,
    /// The slice at which each member's latest event happened.
    at: Vec<u64>,
}

impl Quotes {
    pub(crate) fn new(members: usize) -> Self {
        Self {
            last: vec![[0.0; MAX_COLUMNS]; members],
            at: vec![NEVER; members],
        }
    }

    /// Records member `m`'s event (its value columns `row`) in slice `slice`.
    #[inline(always)]
    pub(crate) fn set(&mut self, m: usize, row: [f64; MAX_COLUMNS], slice: u64) {
        self.last[m] = row;
        self.at[m] = slice;
    }

    /// Member `m`'s latest value of column `c` (0.0 before its first event).
    #[inline(always)]
    pub(crate) fn value(&self, m: usize, c: usize) -> f64 {
        self.last[m][c]
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        self.last.len()
    }
}

/// A universe at one timestamp: every member's latest event at or before it (as-of values), for
/// [`crate::Strategy::on_universe`]. The strategy is called once per distinct timestamp, after
/// every event with that timestamp; [`Slice::updated`] tells which members had one.
///
/// Values of a member before its first event read `0.0`; check [`Slice::has`].
#[derive(Clone, Copy, Debug)]
pub struct Slice<'a, F: Feed> {
    symbols: &'a [String],
    quotes: &'a Quotes,
    ts: i64,
    index: u64,
    _feed: PhantomData<F>,
}

impl<'a, F: Feed> Slice<'a, F> {
    pub(crate) fn new(symbols: &'a [String], quotes: &'a Quotes, ts: i64, index: u64) -> Self {
        Self {
            symbols,
            quotes,
            ts,
            index,
            _feed: PhantomData,
        }
    }

    /// Number of members.
    #[must_use]
    pub fn len(&self) -> usize {
        self.quotes.len()
    }

    /// Whether the universe has no members (never, for a planned universe).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.quotes.len() == 0
    }

    /// The members' symbols, in the universe's order (the order of the targets).
    #[must_use]
    pub fn symbols(&self) -> &'a [String] {
        self.symbols
    }

    /// The timestamp, ns since the Unix epoch (UTC).
    #[inline(always)]
    #[must_use]
    pub fn ts(&self) -> i64 {
        self.ts
    }

    /// Number of slices (distinct timestamps) before this one.
    #[inline(always)]
    #[must_use]
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Whether member `m` had an event at this timestamp.
    #[inline(always)]
    #[must_use]
    pub fn updated(&self, m: usize) -> bool {
        self.quotes.at[m] == self.index
    }

    /// Whether member `m` has had an event yet.
    #[inline(always)]
    #[must_use]
    pub fn has(&self, m: usize) -> bool {
        self.quotes.at[m] != NEVER
    }

    /// Member `m`'s latest mark: the price of its last tick, the close of its last bar.
    #[inline(always)]
    #[must_use]
    pub fn mark(&self, m: usize) -> f64 {
        self.quotes.value(m, F::MARK)
    }
}

impl Slice<'_, Ticks> {
    /// Member `m`'s latest trade price.
    #[inline(always)]
    #[must_use]
    pub fn price(&self, m: usize) -> f64 {
        self.quotes.value(m, 0)
    }

    /// Member `m`'s latest trade size.
    #[inline(always)]
    #[must_use]
    pub fn size(&self, m: usize) -> f64 {
        self.quotes.value(m, 1)
    }
}

macro_rules! slice_bar_fields {
    ($($name:ident, $i:expr, $doc:literal;)*) => {
        impl Slice<'_, Bars> {
            $(
                #[doc = concat!("Member `m`'s latest bar's ", $doc, ".")]
                #[inline(always)]
                #[must_use]
                pub fn $name(&self, m: usize) -> f64 {
                    self.quotes.value(m, $i)
                }
            )*
        }
    };
}

slice_bar_fields! {
    open, 0, "open";
    high, 1, "high";
    low, 2, "low";
    close, 3, "close";
    volume, 4, "volume";
}
