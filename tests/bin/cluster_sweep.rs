//! The sweep binary of the cluster tests: an SMA crossover with a pace (deterministic busy work
//! per event, `GRIDTEST_TEST_SPIN` iterations, the same on every node) so that a sweep lasts
//! long enough to kill nodes in the middle of it. The pace does not change any result.
//!
//! Same flags as every gridtest sweep binary (`--role`, `--seeds`, `--cookie`, …).

use std::hint::black_box;

use gridtest::prelude::*;

/// Parameters.
#[derive(Params, Clone, Debug)]
struct PacedParams {
    fast: usize,
    slow: usize,
}

/// SMA crossover plus busy work.
struct PacedSma {
    fast: RollingMean,
    slow: RollingMean,
    spin: u32,
}

#[gridtest::strategy(name = "paced_sma", version = "1")]
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
    let sweep = Sweep::of::<PacedSma>().grid(
        Grid::new()
            .axis("fast", (5..=50).step_by(5))
            .axis("slow", (60..=200).step_by(20))
            .constrain("fast < slow"),
    );
    gridtest::exit_status(gridtest::main(sweep))
}
