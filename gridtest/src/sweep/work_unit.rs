//! `WorkUnit`: a shard and a chunk of parameter sets, the unit of scheduling and retry.

use serde::{Deserialize, Serialize};

use crate::data::Shard;
use crate::params::ParamSet;

/// Identifier of a work unit within a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UnitId(pub u32);

impl std::fmt::Display for UnitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "u{}", self.0)
    }
}

/// A shard and a chunk of parameter sets: what a scorer runs in one go. Small: keys and
/// parameters only, never shard data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkUnit {
    /// Id.
    pub id: UnitId,
    /// The shard.
    pub shard: Shard,
    /// The parameter sets.
    pub sets: Vec<ParamSet>,
}

impl WorkUnit {
    /// Tick-parameter evaluations this unit costs on a shard of `rows` events.
    #[must_use]
    pub fn evaluations(&self, rows: u64) -> u64 {
        rows * self.sets.len() as u64
    }
}

/// Parameter sets per unit so that a unit runs for about `target_evals` evaluations, with at
/// least `min_units` units per shard (to keep `scorers` busy) and at least `MIN_CHUNK` sets
/// (to amortise reading the shard).
#[must_use]
pub fn chunk_size(n_sets: usize, shard_rows: u64, target_evals: u64, scorers: usize) -> usize {
    const MIN_CHUNK: usize = 4;
    let by_time = usize::try_from(target_evals / shard_rows.max(1)).unwrap_or(usize::MAX);
    let by_parallelism = n_sets.div_ceil(scorers.max(1));
    by_time
        .min(by_parallelism)
        .max(MIN_CHUNK)
        .min(n_sets.max(1))
}
