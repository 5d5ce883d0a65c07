//! Wilder's RSI and ATR, smoothed as pandas users write them (`ewm(alpha=1/n, adjust=False)`).

use super::Ewm;

/// Wilder's relative strength index of `periods` periods, as
/// `100 − 100 / (1 + g / l)` where `g` and `l` are [`Ewm::wilder`] means of the gains
/// (`diff().clip(lower=0)`) and losses (`−diff().clip(upper=0)`) of the values; NaN on the first
/// value (it has no change), 100 while there has been no loss.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::indicators::Rsi;
/// let mut rsi = Rsi::new(14);
/// assert!(rsi.push(10.0).is_nan());
/// assert_eq!(rsi.push(11.0), 100.0);
/// assert!(rsi.push(10.5) < 100.0);
/// ```
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct Rsi {
    gains: Ewm,
    losses: Ewm,
    previous: f64,
    value: f64,
}

impl Rsi {
    /// Over `periods` periods.
    ///
    /// # Panics
    /// If `periods` is 0.
    #[must_use]
    pub fn new(periods: usize) -> Self {
        Self {
            gains: Ewm::wilder(periods),
            losses: Ewm::wilder(periods),
            previous: f64::NAN,
            value: f64::NAN,
        }
    }

    /// Adds the next value; the index.
    #[inline]
    pub fn push(&mut self, x: f64) -> f64 {
        let change = x - self.previous;
        self.previous = x;
        if change.is_nan() {
            return self.value;
        }
        let gain = self.gains.push(change.max(0.0));
        let loss = self.losses.push(-change.min(0.0));
        self.value = 100.0 - 100.0 / (1.0 + gain / loss);
        self.value
    }

    /// The latest index (NaN before the second value).
    #[inline(always)]
    #[must_use]
    pub fn value(&self) -> f64 {
        self.value
    }
}

/// Wilder's average true range of `periods` bars: the [`Ewm::wilder`] mean of the true range
/// `max(high − low, |high − previous close|, |low − previous close|)`, `high − low` on the
/// first bar.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::indicators::Atr;
/// let mut atr = Atr::new(14);
/// assert_eq!(atr.push(11.0, 9.0, 10.0), 2.0);
/// assert!(atr.push(13.0, 12.0, 12.5) > 2.0, "a gap widens the range");
/// ```
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct Atr {
    mean: Ewm,
    close: f64,
}

impl Atr {
    /// Over `periods` bars.
    ///
    /// # Panics
    /// If `periods` is 0.
    #[must_use]
    pub fn new(periods: usize) -> Self {
        Self {
            mean: Ewm::wilder(periods),
            close: f64::NAN,
        }
    }

    /// Adds the next bar; the average true range.
    #[inline]
    pub fn push(&mut self, high: f64, low: f64, close: f64) -> f64 {
        let mut range = high - low;
        if !self.close.is_nan() {
            range = range
                .max((high - self.close).abs())
                .max((low - self.close).abs());
        }
        self.close = close;
        self.mean.push(range)
    }

    /// The latest average true range.
    #[inline(always)]
    #[must_use]
    pub fn value(&self) -> f64 {
        self.mean.value()
    }
}
