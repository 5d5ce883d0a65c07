//! `RollingMean`: a window sum updated from the values entering and leaving, for strategies
//! that read the leaving value from the cursor (no ring of their own).

/// Mean of the last `window` values, with the window sum updated in O(1) from the value entering
/// and the value leaving (read it with `Cursor::price_back(window)`, which is `0.0` before the
/// shard's start, so no warm-up branch is needed).
///
/// The sum is exact when the values lie on a binary grid (prices in 1/256ths, say) and their
/// sums stay below 2^53 units of it; otherwise rounding drifts by O(n·ε) over n updates.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::indicators::RollingMean;
/// let mut m = RollingMean::new(3);
/// let xs = [1.0, 2.0, 3.0, 4.0];
/// for (i, &x) in xs.iter().enumerate() {
///     let leaving = if i >= 3 { xs[i - 3] } else { 0.0 };
///     m.push(x, leaving);
/// }
/// assert_eq!(m.mean(), 3.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RollingMean {
    window: usize,
    divisor: f64,
    reciprocal: f64,
    sum: f64,
}

impl RollingMean {
    /// A rolling mean over `window` values.
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn new(window: usize) -> Self {
        assert!(window > 0, "a rolling mean needs a window of at least 1");
        let divisor = window as f64;
        Self {
            window,
            divisor,
            reciprocal: 1.0 / divisor,
            sum: 0.0,
        }
    }

    /// The window length.
    #[inline(always)]
    #[must_use]
    pub fn window(&self) -> usize {
        self.window
    }

    /// Slides the window: adds `entering`, removes `leaving`.
    #[inline(always)]
    pub fn push(&mut self, entering: f64, leaving: f64) {
        self.sum += entering - leaving;
    }

    /// The window sum.
    #[inline(always)]
    #[must_use]
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// What [`RollingMean::mean`] divides the sum by: the window, as `f64`.
    #[inline(always)]
    #[must_use]
    pub(crate) fn divisor(&self) -> f64 {
        self.divisor
    }

    /// The mean: the window sum divided by the window, the division last (IEEE, correctly
    /// rounded).
    #[inline(always)]
    #[must_use]
    pub fn mean(&self) -> f64 {
        self.sum / self.divisor
    }

    /// `self.mean() > other.mean()`, exactly as with the two divisions, but usually without
    /// dividing: the means are first estimated with a multiplication by the reciprocal (within
    /// 3 ulp of the correctly rounded quotient), and only when the estimates are within 8 ε of
    /// each other are the exact quotients computed.
    #[inline(always)]
    #[must_use]
    pub fn mean_gt(&self, other: &Self) -> bool {
        let a = self.sum * self.reciprocal;
        let b = other.sum * other.reciprocal;
        let margin = 8.0 * f64::EPSILON * a.abs().max(b.abs());
        if a - b > margin {
            true
        } else if b - a > margin {
            false
        } else {
            self.mean() > other.mean()
        }
    }
}
