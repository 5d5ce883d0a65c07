//! `Returns`: per-period returns of many parameter sets, one series per set.

use super::ResearchError;

/// Per-period returns of `n_sets` parameter sets over the same `n_periods` periods, stored set by
/// set (each set's series is contiguous).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::research::Returns;
/// let mut r = Returns::new(3);
/// r.push(&[0.01, -0.02, 0.0])?;
/// r.push(&[0.00, 0.01, 0.03])?;
/// assert_eq!((r.n_sets(), r.n_periods()), (2, 3));
/// assert_eq!(r.set(1)[2], 0.03);
/// assert!(r.push(&[0.1]).is_err());
/// # Ok::<(), gridtest::research::ResearchError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Returns {
    n_periods: usize,
    values: Vec<f64>,
}

impl Returns {
    /// An empty matrix whose series have `n_periods` periods.
    #[must_use]
    pub fn new(n_periods: usize) -> Self {
        Self {
            n_periods,
            values: Vec::new(),
        }
    }

    /// A matrix from `values`, set by set.
    ///
    /// # Errors
    /// [`ResearchError::Ragged`] if `values` is not a whole number of series.
    pub fn from_values(n_periods: usize, values: Vec<f64>) -> Result<Self, ResearchError> {
        let whole = if n_periods == 0 {
            values.is_empty()
        } else {
            values.len().is_multiple_of(n_periods)
        };
        if !whole {
            return Err(ResearchError::Ragged {
                set: values.len() / n_periods.max(1),
                got: values.len() % n_periods.max(1),
                expected: n_periods,
            });
        }
        Ok(Self { n_periods, values })
    }

    /// Appends one set's series.
    ///
    /// # Errors
    /// [`ResearchError::Ragged`] if it does not have `n_periods` values.
    pub fn push(&mut self, series: &[f64]) -> Result<(), ResearchError> {
        if series.len() != self.n_periods {
            return Err(ResearchError::Ragged {
                set: self.n_sets(),
                got: series.len(),
                expected: self.n_periods,
            });
        }
        self.values.extend_from_slice(series);
        Ok(())
    }

    /// Number of sets.
    #[must_use]
    pub fn n_sets(&self) -> usize {
        self.values.len().checked_div(self.n_periods).unwrap_or(0)
    }

    /// Number of periods of each series.
    #[must_use]
    pub fn n_periods(&self) -> usize {
        self.n_periods
    }

    /// The series of set `i`.
    ///
    /// # Panics
    /// If `i` is not below [`Returns::n_sets`].
    #[must_use]
    pub fn set(&self, i: usize) -> &[f64] {
        &self.values[i * self.n_periods..(i + 1) * self.n_periods]
    }

    /// Every series, in order.
    pub fn sets(&self) -> impl ExactSizeIterator<Item = &[f64]> {
        self.values.chunks_exact(self.n_periods.max(1))
    }

    /// The values, set by set.
    #[must_use]
    pub fn values(&self) -> &[f64] {
        &self.values
    }
}
