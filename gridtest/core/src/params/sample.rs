//! `Sample`: a seeded random sample of exactly `n` of a grid's sets, for grids too large to
//! sweep exhaustively (see [`Grid::sample`](super::Grid::sample)).
//!
//! Each position of the cartesian product gets a draw, a 64-bit hash of the seed and the
//! position (a bijection of the position, so no two positions tie); the sample is the `n`
//! accepted positions with the smallest draws. It is stored as the largest draw kept, so
//! membership is decided at any position without a list, on every node alike, and the sample
//! serialises into the sweep's spec with the grid.

use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

/// A seeded sample of a grid's sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// Sets asked for.
    pub n: u64,
    /// The seed.
    pub seed: u64,
    /// Positions whose draw is at most this are in the sample.
    pub threshold: u64,
}

/// SplitMix64's finaliser: a bijection of `u64` that mixes every bit.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Sample {
    /// The draw of `position` under `seed`.
    #[must_use]
    pub fn draw(seed: u64, position: u64) -> u64 {
        mix(position ^ mix(seed.wrapping_add(0x9e37_79b9_7f4a_7c15)))
    }

    /// The sample of `n` among `positions` (the accepted positions of a grid).
    pub(super) fn choose(n: u64, seed: u64, positions: impl Iterator<Item = u64>) -> Self {
        let keep = usize::try_from(n).unwrap_or(usize::MAX);
        let mut smallest = BinaryHeap::with_capacity(keep.min(1 << 20));
        for position in positions {
            let d = Self::draw(seed, position);
            if smallest.len() < keep {
                smallest.push(d);
            } else if smallest.peek().is_some_and(|&top| d < top) {
                smallest.pop();
                smallest.push(d);
            }
        }
        let threshold = if smallest.len() < keep {
            u64::MAX
        } else {
            smallest.peek().copied().unwrap_or(0)
        };
        Self { n, seed, threshold }
    }

    /// Whether `position` is in the sample.
    #[must_use]
    pub fn contains(&self, position: u64) -> bool {
        self.n > 0 && Self::draw(self.seed, position) <= self.threshold
    }
}
