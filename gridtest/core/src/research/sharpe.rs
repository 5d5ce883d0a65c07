//! The probabilistic and deflated Sharpe ratios (Bailey and López de Prado, 2014).
//!
//! For a series of `T` per-period returns with Sharpe ratio `SR` (mean over standard deviation,
//! ddof 1), skewness `γ3` and kurtosis `γ4` (not excess; both from the population moments), the
//! probability that the true Sharpe ratio exceeds a benchmark `SR*` is
//!
//! ```text
//! PSR(SR*) = Φ( (SR − SR*) · √(T − 1) / √(1 − γ3·SR + (γ4 − 1)/4 · SR²) )
//! ```
//!
//! After `N` trials whose Sharpe ratios have variance `V` (ddof 1), the benchmark the best of
//! them must beat is the expected maximum of `N` draws under the null of no skill,
//!
//! ```text
//! SR0 = √V · ( (1 − γ)·Φ⁻¹(1 − 1/N) + γ·Φ⁻¹(1 − 1/(N·e)) ),   γ = 0.5772… (Euler–Mascheroni)
//! ```
//!
//! and the deflated Sharpe ratio of a set is `DSR = PSR(SR0)`.

use statrs::distribution::{ContinuousCDF, Normal};

/// The Euler–Mascheroni constant.
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// The figures of one return series that the Sharpe statistics need.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeriesStats {
    /// Number of returns `T`.
    pub periods: u64,
    /// Mean return.
    pub mean: f64,
    /// Standard deviation (ddof 1).
    pub std: f64,
    /// Skewness `m3 / m2^1.5` (population moments); 0 for a constant series.
    pub skew: f64,
    /// Kurtosis `m4 / m2²`, not excess (3 for a normal); 3 for a constant series.
    pub kurtosis: f64,
}

impl SeriesStats {
    /// The statistics of `series` (two passes: mean, then centred moments).
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::research::SeriesStats;
    /// let s = SeriesStats::of(&[0.01, -0.01, 0.02, 0.0]);
    /// assert_eq!(s.periods, 4);
    /// assert!((s.mean - 0.005).abs() < 1e-15);
    /// assert!((s.sharpe() - 0.005 / s.std).abs() < 1e-15);
    /// ```
    #[must_use]
    pub fn of(series: &[f64]) -> Self {
        let n = series.len() as f64;
        let mean = series.iter().sum::<f64>() / n;
        let (mut m2, mut m3, mut m4) = (0.0, 0.0, 0.0);
        for &r in series {
            let d = r - mean;
            let d2 = d * d;
            m2 += d2;
            m3 += d2 * d;
            m4 += d2 * d2;
        }
        let std = if series.len() > 1 {
            (m2 / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        let (skew, kurtosis) = if m2 > 0.0 {
            let (m2, m3, m4) = (m2 / n, m3 / n, m4 / n);
            (m3 / m2.powf(1.5), m4 / (m2 * m2))
        } else {
            (0.0, 3.0)
        };
        Self {
            periods: series.len() as u64,
            mean,
            std,
            skew,
            kurtosis,
        }
    }

    /// Per-period Sharpe ratio `mean / std`; 0 when `std` is 0.
    #[must_use]
    pub fn sharpe(&self) -> f64 {
        if self.std > 0.0 {
            self.mean / self.std
        } else {
            0.0
        }
    }
}

/// Probability that the true per-period Sharpe ratio of the series exceeds `benchmark` (PSR).
/// `NaN` when the series is too short (`T < 2`) or its skew and kurtosis make the standard error
/// undefined (`1 − γ3·SR + (γ4 − 1)/4·SR² ≤ 0`).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::research::{SeriesStats, probabilistic_sharpe};
/// // The DSR paper's example: annual Sharpe 2.5 over 5 years of daily returns, γ3 = −3, γ4 = 10,
/// // against SR0 = 0.1132 per day: PSR ≈ 0.90.
/// let s = SeriesStats { periods: 1250, mean: 2.5 / 250f64.sqrt(), std: 1.0, skew: -3.0, kurtosis: 10.0 };
/// assert!((probabilistic_sharpe(&s, 0.1132) - 0.9004).abs() < 1e-3);
/// ```
#[must_use]
pub fn probabilistic_sharpe(stats: &SeriesStats, benchmark: f64) -> f64 {
    let sr = stats.sharpe();
    let variance = 1.0 - stats.skew * sr + (stats.kurtosis - 1.0) / 4.0 * sr * sr;
    if stats.periods < 2 || variance <= 0.0 {
        return f64::NAN;
    }
    let z = (sr - benchmark) * ((stats.periods - 1) as f64).sqrt() / variance.sqrt();
    Normal::standard().cdf(z)
}

/// Expected maximum of the Sharpe ratios of `n_trials` independent trials with true Sharpe 0
/// whose estimates have variance `variance` (`SR0`); 0 for fewer than two trials. `n_trials` may
/// be fractional (an effective number of trials).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::research::expected_max_sharpe;
/// // 100 trials, annualised variance 1/2 over 250 days a year: SR0 ≈ 0.1132 per day.
/// assert!((expected_max_sharpe(100.0, 0.5 / 250.0) - 0.1132).abs() < 1e-4);
/// assert_eq!(expected_max_sharpe(1.0, 0.3), 0.0);
/// ```
#[must_use]
pub fn expected_max_sharpe(n_trials: f64, variance: f64) -> f64 {
    if n_trials.partial_cmp(&1.0) != Some(std::cmp::Ordering::Greater) {
        return 0.0;
    }
    let normal = Normal::standard();
    let a = normal.inverse_cdf(1.0 - 1.0 / n_trials);
    let b = normal.inverse_cdf(1.0 - 1.0 / (n_trials * std::f64::consts::E));
    variance.max(0.0).sqrt() * ((1.0 - EULER_GAMMA) * a + EULER_GAMMA * b)
}

/// The deflated Sharpe ratios of a sweep's sets and what went into them.
#[derive(Clone, Debug, PartialEq)]
pub struct Deflation {
    /// Trials counted (`N`: every set tried).
    pub n_trials: u64,
    /// Variance (ddof 1) of the trials' per-period Sharpe ratios.
    pub sharpe_variance: f64,
    /// The benchmark `SR0` (per period), expected maximum Sharpe of `N` trials without skill.
    pub benchmark: f64,
    /// `DSR = PSR(SR0)` of each set, in the order given.
    pub dsr: Vec<f64>,
}

/// Deflates every set's Sharpe ratio for the `n_trials` trials of the search that produced them
/// (at least `stats.len()`; a search may have tried more sets than it kept returns of).
/// The variance of the Sharpe ratios is taken over `stats`.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::research::{SeriesStats, deflate};
/// let series = [[0.01, 0.02, -0.01, 0.0], [0.0, -0.01, 0.01, 0.0], [0.02, 0.01, 0.0, 0.01]];
/// let stats: Vec<_> = series.iter().map(|s| SeriesStats::of(s)).collect();
/// let d = deflate(&stats, 3);
/// assert_eq!(d.dsr.len(), 3);
/// assert!(d.benchmark > 0.0);
/// assert!(d.dsr[2] > d.dsr[1]);
/// ```
#[must_use]
pub fn deflate(stats: &[SeriesStats], n_trials: u64) -> Deflation {
    let sharpes: Vec<f64> = stats.iter().map(SeriesStats::sharpe).collect();
    let sharpe_variance = sample_variance(&sharpes);
    let n_trials = n_trials.max(stats.len() as u64);
    let benchmark = expected_max_sharpe(n_trials as f64, sharpe_variance);
    Deflation {
        n_trials,
        sharpe_variance,
        benchmark,
        dsr: stats
            .iter()
            .map(|s| probabilistic_sharpe(s, benchmark))
            .collect(),
    }
}

/// Sample variance (ddof 1) of `x`; 0 for fewer than two values.
pub(crate) fn sample_variance(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
}
