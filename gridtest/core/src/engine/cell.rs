//! Cells: the result of one parameter set on one shard, keyed by `(ParamSetId, ShardId)`.

use serde::{Deserialize, Serialize};

use crate::data::ShardId;
use crate::metrics::Metrics;
use crate::params::ParamSetId;

/// The key of a cell. Results are stored and deduplicated by key, never by position.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CellKey {
    /// The shard.
    pub shard: ShardId,
    /// The parameter set.
    pub param_set: ParamSetId,
}

impl std::fmt::Display for CellKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {})", self.param_set, self.shard)
    }
}

/// Why a cell failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The parameter set does not fit the strategy's parameters.
    Params,
    /// The strategy panicked.
    Panic,
    /// The strategy returned a NaN target.
    BadTarget,
    /// The shard's data could not be read or failed a check.
    Data,
    /// The scorer running it died.
    Crash,
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Params => "params",
            Self::Panic => "panic",
            Self::BadTarget => "bad_target",
            Self::Data => "data",
            Self::Crash => "crash",
        })
    }
}

/// A failed cell: what kind of failure, the message, and how many attempts were made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct CellFailure {
    /// Kind.
    pub kind: FailureKind,
    /// Message (names the parameter set, shard or file where it applies).
    pub message: String,
    /// Attempts made.
    pub attempts: u32,
}

impl CellFailure {
    /// A failure after one attempt.
    #[must_use]
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            attempts: 1,
        }
    }
}

/// What running a cell produced.
pub type CellOutcome = Result<Metrics, CellFailure>;
