//! Strategies used by gridtest's examples and tests: the SMA crossover of the W1 reference
//! workload (ticks, CPU and GPU; and through orders), time-series momentum (ticks, CPU and
//! GPU), a channel breakout (bars, CPU; and through orders with a stop-loss and take-profit, the
//! README's), and a strategy with an edge planted for one parameter set (to test searches).
//! Read them as templates for your own.

pub mod breakout;
pub mod breakout_orders;
pub mod momentum;
pub mod planted;
pub mod sma;

pub use breakout::{Breakout, BreakoutParams};
pub use breakout_orders::{BreakoutOrders, Channel};
pub use momentum::{Momentum, MomentumParams};
pub use planted::{Planted, PlantedParams, planted_key, planted_prices, planted_side};
pub use sma::{SmaCrossover, SmaCrossoverOrders, SmaParams};
