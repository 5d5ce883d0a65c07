//! `Error`: what can go wrong running a sweep. Each variant names the file, shard, parameter
//! set or setting at fault.

use crate::data::DataError;
use crate::params::GridError;
use crate::strategy::StrategyError;

/// gridtest's error type.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A dataset, shard or file problem.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The grid does not fit the strategy.
    #[error(transparent)]
    Grid(#[from] GridError),
    /// A strategy lookup failed.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// The sweep is not runnable; every problem is listed.
    #[error("sweep of `{strategy}` is invalid:{}", .problems.iter().map(|p| format!("\n  - {p}")).collect::<String>())]
    InvalidSweep {
        /// The strategy.
        strategy: String,
        /// What is wrong.
        problems: Vec<String>,
    },
    /// Writing results failed.
    #[error("cannot write {path}: {reason}")]
    Output {
        /// The file or folder.
        path: String,
        /// Why.
        reason: String,
    },
    /// A replay did not reproduce the recorded metrics.
    #[error(
        "replay of sweep {sweep}: {differing} of {cells} cells differ from the record (first: {first})"
    )]
    ReplayMismatch {
        /// The sweep.
        sweep: String,
        /// Cells compared.
        cells: usize,
        /// Cells that differ.
        differing: usize,
        /// The first difference.
        first: String,
    },
    /// The actor system failed (a bug or an exhausted machine).
    #[error("sweep runtime: {0}")]
    Runtime(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
