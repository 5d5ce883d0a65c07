//! `Sma`: the simple moving average with pandas' arithmetic.

use super::ring::Ring;

/// Mean of the last `window` values, equal bit for bit to pandas' `s.rolling(window).mean()`:
/// the same Kahan-compensated running sum (one compensation for the values added, one for
/// those removed, the leaving value removed before the entering one is added), the same
/// rules after the division (a window of one repeated value gives that value; a window with no
/// negative value never gives a negative mean, nor one with only negative values a positive
/// one). So crossovers of two averages tie exactly where pandas' tie, on decimal prices too
/// (which [`super::RollingMean`]'s plain running sum does not promise).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::indicators::Sma;
/// let mut fast = Sma::new(2);
/// assert!(fast.push(1.1).is_nan(), "NaN until the window is full");
/// assert_eq!(fast.push(1.2), (1.1 + 1.2) / 2.0);
/// assert_eq!(fast.push(1.2), 1.2, "one value repeated: that value");
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Sma {
    ring: Ring,
    nobs: usize,
    sum: f64,
    compensation_add: f64,
    compensation_remove: f64,
    negatives: usize,
    same: usize,
    previous: f64,
    value: f64,
}

impl Sma {
    /// A moving average over `window` values.
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn new(window: usize) -> Self {
        Self {
            ring: Ring::new(window),
            nobs: 0,
            sum: 0.0,
            compensation_add: 0.0,
            compensation_remove: 0.0,
            negatives: 0,
            same: 0,
            previous: f64::NAN,
            value: f64::NAN,
        }
    }

    /// Adds the next value; the mean of the last `window`, NaN before there are `window`.
    #[inline]
    pub fn push(&mut self, x: f64) -> f64 {
        if self.ring.len() == 0 {
            // pandas' first window starts with the running-value tracker on the first value.
            self.previous = x;
        }
        if let Some(leaving) = self.ring.push(x) {
            self.remove(leaving);
        }
        self.add(x);
        self.value = if self.ring.is_full() {
            self.mean()
        } else {
            f64::NAN
        };
        self.value
    }

    /// The latest mean (NaN before the window is full).
    #[inline(always)]
    #[must_use]
    pub fn value(&self) -> f64 {
        self.value
    }

    /// Whether the window is full.
    #[inline(always)]
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.ring.is_full()
    }

    #[inline(always)]
    fn add(&mut self, x: f64) {
        self.nobs += 1;
        let y = x - self.compensation_add;
        let t = self.sum + y;
        self.compensation_add = t - self.sum - y;
        self.sum = t;
        if x.is_sign_negative() {
            self.negatives += 1;
        }
        if x == self.previous {
            self.same += 1;
        } else {
            self.same = 1;
        }
        self.previous = x;
    }

    #[inline(always)]
    fn remove(&mut self, x: f64) {
        self.nobs -= 1;
        let y = -x - self.compensation_remove;
        let t = self.sum + y;
        self.compensation_remove = t - self.sum - y;
        self.sum = t;
        if x.is_sign_negative() {
            self.negatives -= 1;
        }
    }

    #[inline(always)]
    fn mean(&self) -> f64 {
        let mean = self.sum / self.nobs as f64;
        if self.same >= self.nobs {
            self.previous
        } else if (self.negatives == 0 && mean < 0.0) || (self.negatives == self.nobs && mean > 0.0)
        {
            // No negative value, yet a negative mean (or the reverse): rounding, so 0.
            0.0
        } else {
            mean
        }
    }
}
