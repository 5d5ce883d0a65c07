//! `Subset`: an explicit list of a grid's positions kept, such as the parameter sets that
//! survive a rung of successive halving (see [`Grid::keep`](super::Grid::keep)).
//!
//! Held sorted in shared memory, so a grid with a subset clones cheaply; serialised as the list
//! of positions, so the subset is part of the sweep's spec (and of its id).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The positions of a grid's cartesian product that are kept, sorted and distinct.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<u64>", into = "Vec<u64>")]
pub struct Subset {
    positions: Arc<[u64]>,
}

impl From<Vec<u64>> for Subset {
    fn from(mut positions: Vec<u64>) -> Self {
        positions.sort_unstable();
        positions.dedup();
        Self {
            positions: positions.into(),
        }
    }
}

impl From<Subset> for Vec<u64> {
    fn from(subset: Subset) -> Self {
        subset.positions.to_vec()
    }
}

impl Subset {
    /// Whether `position` is kept.
    #[must_use]
    pub fn contains(&self, position: u64) -> bool {
        self.positions.binary_search(&position).is_ok()
    }

    /// Positions kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether nothing is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// The positions, ascending.
    #[must_use]
    pub fn positions(&self) -> &[u64] {
        &self.positions
    }
}
