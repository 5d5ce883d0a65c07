//! Rolling standard deviation, Bollinger bands and the z-score.

use super::Sma;
use super::ring::Ring;

/// Sample standard deviation (`ddof = 1`) of the last `window` values, as pandas'
/// `s.rolling(window).std()` computes it: Welford's running mean and sum of squared deviations,
/// the mean's updates compensated, values added before the leaving one is removed; 0 for a
/// window of one repeated value. NaN before the window is full.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::indicators::RollingStd;
/// let mut sd = RollingStd::new(3);
/// sd.push(1.0);
/// sd.push(2.0);
/// assert!((sd.push(3.0) - 1.0).abs() < 1e-15);
/// assert!((sd.push(3.0) - (1.0f64 / 3.0).sqrt()).abs() < 1e-15);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RollingStd {
    ring: Ring,
    nobs: usize,
    mean: f64,
    squares: f64,
    compensation: f64,
    same: usize,
    previous: f64,
    value: f64,
}

impl RollingStd {
    /// Over `window` values (at least 2 for a finite value).
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn new(window: usize) -> Self {
        Self {
            ring: Ring::new(window),
            nobs: 0,
            mean: 0.0,
            squares: 0.0,
            compensation: 0.0,
            same: 0,
            previous: f64::NAN,
            value: f64::NAN,
        }
    }

    /// Adds the next value; the window's standard deviation.
    #[inline]
    pub fn push(&mut self, x: f64) -> f64 {
        let leaving = self.ring.push(x);
        self.add(x);
        if let Some(leaving) = leaving {
            self.remove(leaving);
        }
        self.value = if !self.ring.is_full() || self.nobs < 2 {
            f64::NAN
        } else if self.same >= self.nobs {
            0.0
        } else {
            (self.squares / (self.nobs - 1) as f64).max(0.0).sqrt()
        };
        self.value
    }

    /// The latest standard deviation.
    #[inline(always)]
    #[must_use]
    pub fn value(&self) -> f64 {
        self.value
    }

    #[inline(always)]
    fn add(&mut self, x: f64) {
        if x == self.previous {
            self.same += 1;
        } else {
            self.same = 1;
        }
        self.previous = x;
        self.nobs += 1;
        let previous_mean = self.mean - self.compensation;
        let y = x - self.compensation;
        let t = y - self.mean;
        self.compensation = t + self.mean - y;
        self.mean += t / self.nobs as f64;
        self.squares += (x - previous_mean) * (x - self.mean);
    }

    #[inline(always)]
    fn remove(&mut self, x: f64) {
        self.nobs -= 1;
        if self.nobs == 0 {
            self.mean = 0.0;
            self.squares = 0.0;
            return;
        }
        let previous_mean = self.mean - self.compensation;
        let y = x - self.compensation;
        let t = y - self.mean;
        self.compensation = t + self.mean - y;
        self.mean -= t / self.nobs as f64;
        self.squares -= (x - previous_mean) * (x - self.mean);
    }
}

/// Bollinger bands: the [`Sma`] of the last `window` values and `k` [`RollingStd`]s either side.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::indicators::Bollinger;
/// let mut bands = Bollinger::new(20, 2.0);
/// for i in 0..20 { bands.push(100.0 + f64::from(i % 2)); }
/// let (lower, mid, upper) = bands.value();
/// assert_eq!(mid, 100.5);
/// assert!((upper - mid - (mid - lower)).abs() < 1e-12 && upper > mid);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Bollinger {
    mid: Sma,
    sd: RollingStd,
    k: f64,
}

impl Bollinger {
    /// Over `window` values, `k` standard deviations wide.
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn new(window: usize, k: f64) -> Self {
        Self {
            mid: Sma::new(window),
            sd: RollingStd::new(window),
            k,
        }
    }

    /// Adds the next value; (lower, middle, upper).
    #[inline]
    pub fn push(&mut self, x: f64) -> (f64, f64, f64) {
        self.mid.push(x);
        self.sd.push(x);
        self.value()
    }

    /// The latest bands (NaN before the window is full).
    #[inline(always)]
    #[must_use]
    pub fn value(&self) -> (f64, f64, f64) {
        let (mid, width) = (self.mid.value(), self.k * self.sd.value());
        (mid - width, mid, mid + width)
    }
}

/// How many rolling standard deviations a value lies from the rolling mean of the last
/// `window` values (itself included): `(x − Sma) / RollingStd`.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::indicators::ZScore;
/// let mut z = ZScore::new(3);
/// z.push(1.0);
/// z.push(2.0);
/// assert!((z.push(3.0) - 1.0).abs() < 1e-15);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ZScore {
    mean: Sma,
    sd: RollingStd,
    value: f64,
}

impl ZScore {
    /// Over `window` values.
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn new(window: usize) -> Self {
        Self {
            mean: Sma::new(window),
            sd: RollingStd::new(window),
            value: f64::NAN,
        }
    }

    /// Adds the next value; its z-score.
    #[inline]
    pub fn push(&mut self, x: f64) -> f64 {
        let mean = self.mean.push(x);
        let sd = self.sd.push(x);
        self.value = (x - mean) / sd;
        self.value
    }

    /// The latest z-score.
    #[inline(always)]
    #[must_use]
    pub fn value(&self) -> f64 {
        self.value
    }
}
