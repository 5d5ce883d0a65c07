//! The effective number of independent trials of a search.
//!
//! Neighbouring parameter sets trade alike, so a grid of `N` sets is worth fewer than `N`
//! independent trials. The estimate here is the participation ratio of the sets' correlation
//! matrix `C` (an effective rank): `(Σλ)² / Σλ² = N² / Σᵢⱼ ρᵢⱼ² = N / (1 + (N − 1)·ρ̄²)`, where
//! `ρ̄²` is the mean squared correlation between two different sets, less what sampling noise
//! alone gives over `T` periods (`E[ρ̂²] = 1/(T − 1)` for independent series), rescaled so that
//! identical series still count once: `ρ̄² = max(0, (m − a) / (1 − a))`, `m` the measured mean,
//! `a = 1/(T − 1)`. It is about `N` for independent sets and 1 when all move together. `ρ̄²` is measured on at most [`SAMPLE`] sets spread evenly
//! over the sweep (set `⌊i·N/m⌋` for `i < m`), leaving out constant series (no correlation is
//! defined for them), so the cost stays `O(m²·T)` however large the grid.

use super::Returns;

/// Most sets whose pairwise correlations are measured.
pub const SAMPLE: usize = 1000;

/// Effective number of independent trials among `returns`' sets, counting `n_trials` in all
/// (at least the number of sets; a search may have tried more than it kept returns of). Without
/// two non-constant series in the sample there is nothing to measure and it is `n_trials`.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::research::{Returns, effective_trials};
/// let a = [0.01, -0.02, 0.03, 0.0];
/// let twice = Returns::from_values(4, [a, a].concat())?;
/// assert!((effective_trials(&twice, 2) - 1.0).abs() < 1e-12);
/// let apart = Returns::from_values(4, [a, [0.01, 0.03, 0.01, 0.02]].concat())?;
/// assert!(effective_trials(&apart, 2) > 1.0);
/// # Ok::<(), gridtest::research::ResearchError>(())
/// ```
#[must_use]
pub fn effective_trials(returns: &Returns, n_trials: u64) -> f64 {
    let n_sets = returns.n_sets();
    let n_trials = n_trials.max(n_sets as u64) as f64;
    let m = n_sets.min(SAMPLE);
    let standardised: Vec<Vec<f64>> = (0..m)
        .filter_map(|i| standardise(returns.set(i * n_sets / m)))
        .collect();
    let k = standardised.len();
    if k < 2 {
        return n_trials;
    }
    let mut sum_squares = 0.0;
    for (i, a) in standardised.iter().enumerate() {
        for b in &standardised[i + 1..] {
            let rho: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            sum_squares += rho * rho;
        }
    }
    let measured = sum_squares / (k * (k - 1) / 2) as f64;
    let noise = 1.0 / (returns.n_periods() as f64 - 1.0);
    let mean_square = ((measured - noise) / (1.0 - noise)).max(0.0);
    n_trials / (1.0 + (n_trials - 1.0) * mean_square)
}

/// `(x − mean) / ‖x − mean‖`, so that the dot product of two is their correlation; `None` for a
/// constant series.
fn standardise(x: &[f64]) -> Option<Vec<f64>> {
    if x.iter().all(|&v| v == x[0]) {
        return None;
    }
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    let centred: Vec<f64> = x.iter().map(|v| v - mean).collect();
    let norm = centred.iter().map(|v| v * v).sum::<f64>().sqrt();
    Some(centred.iter().map(|v| v / norm).collect())
}
