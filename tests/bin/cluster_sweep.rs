//! The sweep binary of the cluster tests: an SMA crossover with a pace (deterministic busy work
//! per event, `GRIDTEST_TEST_SPIN` iterations, the same on every node) so that a sweep lasts
//! long enough to kill nodes in the middle of it. The pace does not change any result.
//!
//! Same flags as every gridtest sweep binary (`--role`, `--seeds`, `--cookie`, …). With
//! `--universe` it sweeps a paced pairs strategy over the universes given instead.

use std::hint::black_box;

use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};

/// Parameters.
#[derive(Params, Clone, Debug)]
struct PacedParams {
    fast: usize,
    slow: usize,
}

/// SMA crossover plus busy work. Carries its state, so a history larger than a node's cache
/// is read by slices.
#[derive(Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
struct PacedSma {
    fast: RollingMean,
    slow: RollingMean,
    spin: u32,
}

#[gridtest::strategy(name = "paced_sma", version = "1", carry)]
impl Strategy for PacedSma {
    type Params = PacedParams;
    type Feed = Ticks;

    fn new(p: &PacedParams) -> Self {
        let spin = std::env::var("GRIDTEST_TEST_SPIN")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        Self {
            fast: RollingMean::new(p.fast),
            slow: RollingMean::new(p.slow),
            spin,
        }
    }

    fn lookback(&self) -> usize {
        self.slow.window().max(self.fast.window())
    }

    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        let mut x = now.price();
        for _ in 0..self.spin {
            x = black_box(x * 1.000_000_1);
        }
        black_box(x);
        self.fast
            .push(now.price(), now.price_back(self.fast.window()));
        self.slow
            .push(now.price(), now.price_back(self.slow.window()));
        let full = now.index() + 1 >= self.lookback() as u64;
        if full && self.fast.mean_gt(&self.slow) {
            1.0
        } else {
            0.0
        }
    }
}

fn main() -> std::process::ExitCode {
    if std::env::args().any(|a| a == "--universe") {
        let grid = Grid::new()
            .axis("window", (20..=200).step_by(20))
            .axis("entry", [1.0, 1.5, 2.0, 2.5]);
        return gridtest::exit_status(gridtest::main(Sweep::of::<PacedPair>().grid(grid)));
    }
    let sweep = Sweep::of::<PacedSma>().grid(
        Grid::new()
            .axis("fast", (5..=50).step_by(5))
            .axis("slow", (60..=200).step_by(20))
            .constrain("fast < slow"),
    );
    gridtest::exit_status(gridtest::main(sweep))
}

/// Parameters of the paced pair.
#[derive(Params, Clone, Debug)]
struct PairParams {
    window: usize,
    entry: f64,
}

/// A pairs strategy on a universe of two tick series (the z-score of the log spread), with the
/// same pace: swept instead of `paced_sma` when the command line sets `--universe`.
struct PacedPair {
    z: ZScore,
    entry: f64,
    spin: u32,
}

#[gridtest::strategy(name = "paced_pair", version = "1")]
impl Strategy for PacedPair {
    type Params = PairParams;
    type Feed = Ticks;

    fn new(p: &PairParams) -> Self {
        let spin = std::env::var("GRIDTEST_TEST_SPIN")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        Self {
            z: ZScore::new(p.window),
            entry: p.entry,
            spin,
        }
    }

    fn on_universe(&mut self, now: &Slice<'_, Ticks>, targets: &mut [f64]) {
        let mut x = now.price(0);
        for _ in 0..self.spin {
            x = black_box(x * 1.000_000_1);
        }
        black_box(x);
        if !(now.has(0) && now.has(1)) {
            return;
        }
        let z = self.z.push(now.price(0).ln() - now.price(1).ln());
        if z.abs() > self.entry {
            targets[0] = -0.5 * z.signum();
            targets[1] = 0.5 * z.signum();
        } else if z.abs() < 0.25 {
            targets.fill(0.0);
        }
    }
}
