//! Strategies used by gridtest's examples and tests: the SMA crossover of the W1 reference
//! workload (ticks, CPU and GPU), time-series momentum (ticks, CPU and GPU) and a channel
//! breakout (bars, CPU). Read them as templates for your own.

pub mod breakout;
pub mod momentum;
pub mod sma;

pub use breakout::{Breakout, BreakoutParams};
pub use momentum::{Momentum, MomentumParams};
pub use sma::{SmaCrossover, SmaParams};
