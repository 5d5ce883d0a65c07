//! Statistics that say how far a sweep's best result can be trusted, computed from the
//! per-period returns of its parameter sets: the probabilistic and deflated Sharpe ratios
//! ([`sharpe`]), the effective number of independent trials ([`trials`]), the probability of
//! backtest overfitting by combinatorially symmetric cross-validation ([`pbo`]) and walk-forward
//! selection ([`walk_forward()`]).
//!
//! Everything here works on a [`Returns`] matrix (one series per parameter set, all of the same
//! length, one value per period) and knows nothing of where the returns came from. Sharpe ratios
//! are per period (not annualised) unless a name says otherwise, as in the papers.
//!
//! References: D. H. Bailey and M. López de Prado, *The Deflated Sharpe Ratio: Correcting for
//! Selection Bias, Backtest Overfitting and Non-Normality*, J. Portfolio Management 40(5), 2014;
//! D. H. Bailey, J. M. Borwein, M. López de Prado and Q. J. Zhu, *The Probability of Backtest
//! Overfitting*, J. Computational Finance 20(4), 2017. `tests/reference/overfitting.py` is an
//! independent implementation (numpy/scipy) the test suite checks this module against.

pub mod pbo;
mod returns;
pub mod sharpe;
pub mod trials;
pub mod walk_forward;

pub use pbo::{Pbo, probability_of_overfitting};
pub use returns::Returns;
pub use sharpe::{Deflation, SeriesStats, deflate, expected_max_sharpe, probabilistic_sharpe};
pub use trials::effective_trials;
pub use walk_forward::{WalkForward, WalkForwardReport, walk_forward};

/// Why a statistic cannot be computed from the returns given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResearchError {
    /// A series does not have the matrix's number of periods.
    #[error("the returns of set {set} have {got} periods, the others {expected}")]
    Ragged {
        /// Index of the offending set.
        set: usize,
        /// Its length.
        got: usize,
        /// The matrix's length.
        expected: usize,
    },
    /// No parameter set to compare.
    #[error("no parameter set has returns")]
    NoSets,
    /// The block count of a cross-validation is not an even number of at least 2.
    #[error("the number of blocks must be even and at least 2, not {0}")]
    OddBlocks(usize),
    /// Too few periods for what was asked.
    #[error("{needed} periods are needed ({why}); the returns have {got}")]
    TooShort {
        /// Periods needed.
        needed: usize,
        /// Periods present.
        got: usize,
        /// What needs them.
        why: String,
    },
}
