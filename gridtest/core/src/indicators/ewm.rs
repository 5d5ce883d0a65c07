//! `Ewm`: the exponentially weighted mean with pandas' arithmetic.

/// Exponentially weighted mean, equal bit for bit to pandas' `s.ewm(alpha=alpha,
/// adjust=False).mean()`: the first value as it is, then `m = ((1 − α)·m + α·x) / ((1 − α) + α)`
/// (the division is pandas' normalisation, not always by exactly 1), skipped when `x` equals
/// `m`.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::indicators::Ewm;
/// let mut ema = Ewm::span(3); // alpha = 2 / (3 + 1)
/// assert_eq!(ema.push(10.0), 10.0);
/// assert_eq!(ema.push(12.0), 11.0);
/// assert_eq!(ema.push(12.0), 11.5);
/// ```
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct Ewm {
    alpha: f64,
    keep: f64,
    value: f64,
}

impl Ewm {
    /// Smoothing factor `alpha` in (0, 1].
    ///
    /// # Panics
    /// If `alpha` is not in (0, 1].
    #[must_use]
    pub fn new(alpha: f64) -> Self {
        assert!(
            alpha > 0.0 && alpha <= 1.0,
            "alpha must be in (0, 1], not {alpha}"
        );
        Self {
            alpha,
            keep: 1.0 - alpha,
            value: f64::NAN,
        }
    }

    /// The usual EMA of `span` periods: `alpha = 2 / (span + 1)` (pandas' `span=`).
    ///
    /// # Panics
    /// If `span` is 0.
    #[must_use]
    pub fn span(span: usize) -> Self {
        assert!(span > 0, "an EMA needs a span of at least 1");
        Self::new(2.0 / (span as f64 + 1.0))
    }

    /// Wilder's smoothing of `periods` periods: `alpha = 1 / periods`.
    ///
    /// # Panics
    /// If `periods` is 0.
    #[must_use]
    pub fn wilder(periods: usize) -> Self {
        assert!(periods > 0, "Wilder's smoothing needs at least 1 period");
        Self::new(1.0 / periods as f64)
    }

    /// Adds the next value; the mean so far.
    #[inline(always)]
    pub fn push(&mut self, x: f64) -> f64 {
        if self.value.is_nan() {
            self.value = x;
        } else if self.value != x {
            self.value = (self.keep * self.value + self.alpha * x) / (self.keep + self.alpha);
        }
        self.value
    }

    /// The smoothing factor.
    #[inline(always)]
    #[must_use]
    pub(crate) fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The latest mean (NaN before the first value).
    #[inline(always)]
    #[must_use]
    pub fn value(&self) -> f64 {
        self.value
    }
}
