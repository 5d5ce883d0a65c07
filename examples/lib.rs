//! Strategies used by gridtest's examples and tests: the SMA crossover of the W1 reference
//! workload (ticks) and a channel breakout (bars). Read them as templates for your own.

pub mod breakout;
pub mod sma;

pub use breakout::{Breakout, BreakoutParams};
pub use sma::{SmaCrossover, SmaParams};
