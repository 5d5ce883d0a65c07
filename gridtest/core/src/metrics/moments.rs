//! `Moments`: count, mean and centred second moment of a series, mergeable (Welford / Chan).

use serde::{Deserialize, Serialize};

/// Running count, mean and sum of squared deviations (`m2`) of a series.
///
/// `update` is Welford's step; `merge` is Chan et al.'s pairwise combination, so partial
/// accumulators (per tile, per node) combine exactly as if the series had been seen at once,
/// up to rounding.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::metrics::Moments;
/// let mut a = Moments::default();
/// for x in [1.0, 2.0, 3.0] { a.update(x); }
/// let mut b = Moments::default();
/// for x in [4.0, 5.0] { b.update(x); }
/// a.merge(&b);
/// assert_eq!(a.count(), 5);
/// assert!((a.mean() - 3.0).abs() < 1e-15);
/// assert!((a.sample_variance() - 2.5).abs() < 1e-15);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Moments {
    /// An accumulator that has seen `n` values with this mean and sum of squared deviations.
    #[must_use]
    pub fn from_parts(n: u64, mean: f64, m2: f64) -> Self {
        Self { n, mean, m2 }
    }

    /// Adds one observation.
    pub fn update(&mut self, x: f64) {
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Adds everything `other` has seen.
    pub fn merge(&mut self, other: &Self) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let (na, nb) = (self.n as f64, other.n as f64);
        let n = na + nb;
        let delta = other.mean - self.mean;
        self.mean += delta * (nb / n);
        self.m2 += other.m2 + delta * delta * (na * nb / n);
        self.n += other.n;
    }

    /// Number of observations.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean (0 with no observations).
    #[must_use]
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sum of squared deviations from the mean.
    #[must_use]
    pub fn m2(&self) -> f64 {
        self.m2
    }

    /// Sample variance (ddof = 1); 0 with fewer than two observations.
    #[must_use]
    pub fn sample_variance(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.m2 / (self.n - 1) as f64).max(0.0)
        }
    }

    /// `(mean, sample standard deviation)`.
    #[must_use]
    pub fn finish(&self) -> (f64, f64) {
        (self.mean, self.sample_variance().sqrt())
    }
}
