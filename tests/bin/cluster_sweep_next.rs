//! The cluster tests' sweep binary as a later release would build it: `paced_sma` at version
//! 2, computing something else. A worker started from it joins with the right
//! cookie, and must refuse the units of a sweep that needs version 1 instead of computing
//! other numbers under that sweep's id.

use gridtest::prelude::*;

/// Parameters (the same as version 1's).
#[derive(Params, Clone, Debug)]
struct PacedParams {
    fast: usize,
    slow: usize,
}

/// Version 2: long while `fast < slow`, short otherwise (a rule of its own).
struct PacedSma {
    long: bool,
}

#[gridtest::strategy(name = "paced_sma", version = "2")]
impl Strategy for PacedSma {
    type Params = PacedParams;
    type Feed = Ticks;

    fn new(p: &PacedParams) -> Self {
        Self {
            long: p.fast < p.slow,
        }
    }

    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        if self.long { 1.0 } else { -1.0 }
    }
}

/// Only ever a worker in the tests: a worker runs the head's sweep, so it declares no grid.
fn main() -> std::process::ExitCode {
    gridtest::exit_status(gridtest::main(Sweep::of::<PacedSma>()))
}
