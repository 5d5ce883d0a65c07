//! `WorkUnit`: a shard and a span of the grid's parameter sets, the unit of scheduling and
//! retry. A unit names its sets by place in the grid (see [`SetPlace`]), never carries them:
//! the scorer expands them from the grid, so a unit is a few dozen bytes whatever its size.

use serde::{Deserialize, Serialize};

use super::slice_chain::SliceChain;
use crate::data::Shard;
use crate::params::{Grid, ParamSet, SetPlace};

/// Identifier of a work unit within a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UnitId(pub u32);

impl std::fmt::Display for UnitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "u{}", self.0)
    }
}

/// The parameter sets of a unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SetSpan {
    /// `count` consecutive sets of the grid, the first at `first`.
    Run {
        /// Place of the first set.
        first: SetPlace,
        /// How many sets.
        count: u32,
    },
    /// These sets, by ascending index (retries, resumed remainders).
    Listed(Vec<SetPlace>),
}

impl SetSpan {
    /// How many sets.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Self::Run { count, .. } => *count as usize,
            Self::Listed(places) => places.len(),
        }
    }

    /// Whether it has no set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The grid index of the `i`-th set of the span, for `i` below [`SetSpan::len`].
    #[must_use]
    pub fn index_of(&self, i: usize) -> u64 {
        match self {
            Self::Run { first, .. } => first.index + i as u64,
            Self::Listed(places) => places[i].index,
        }
    }

    /// The offset in the span of the set with grid index `index`, if the span holds it.
    #[must_use]
    pub fn offset_of(&self, index: u64) -> Option<usize> {
        match self {
            Self::Run { first, count } => index
                .checked_sub(first.index)
                .filter(|o| *o < u64::from(*count))
                .map(|o| o as usize),
            Self::Listed(places) => places.binary_search_by_key(&index, |p| p.index).ok(),
        }
    }

    /// The sets with their places, expanded from `grid` (which must be the sweep's grid).
    #[must_use]
    pub fn expand(&self, grid: &Grid) -> Vec<(SetPlace, ParamSet)> {
        match self {
            Self::Run { first, count } => grid
                .slice(first.position..grid.product_len() as u64)
                .take(*count as usize)
                .enumerate()
                .map(|(i, (position, set))| {
                    let index = first.index + i as u64;
                    (SetPlace { index, position }, set)
                })
                .collect(),
            Self::Listed(places) => places
                .iter()
                .filter_map(|p| grid.set_at(p.position).map(|s| (*p, s)))
                .collect(),
        }
    }
}

/// A shard and a span of parameter sets: what a scorer runs in one go. Small: keys and places
/// only, never shard data nor the sets themselves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkUnit {
    /// Id.
    pub id: UnitId,
    /// The shard.
    pub shard: Shard,
    /// The parameter sets.
    pub sets: SetSpan,
    /// The digest of the shard's files as the sweep's manifest records them
    /// ([`files_digest`](crate::data::files_digest)): a node that lists other files for the
    /// shard does not run the unit. `None`: not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_digest: Option<String>,
    /// Its shard is larger than a node's cache, so the unit streams the whole history: it is
    /// never cut into pieces at the sweep's tail, each of which would read it all again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streamed: bool,
    /// The history read slice after slice, its lanes carried between slices (a strategy that
    /// carries its state, on a history larger than a node's cache); `None`: read whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Box<SliceChain>>,
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
