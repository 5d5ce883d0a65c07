//! Strategies used by gridtest's examples and tests: the SMA crossover of the W1 reference
//! workload (ticks, CPU and GPU; and through orders), time-series momentum (ticks, CPU and
//! GPU), a channel breakout (bars, CPU; and through orders with a stop-loss and take-profit, the
//! README's), a strategy with an edge planted for one parameter set (to test searches), and two
//! portfolio strategies over universes: pairs trading on a spread's z-score and cross-sectional
//! momentum. `shared` holds the crossover, momentum and breakout again with their indicators
//! declared as shared series (computed once per distinct parameter value), and
//! `indicator_mix` eight of pandas' indicators in one strategy, kept per set and shared.
//! Read them as templates for your own.

pub mod bench_head;
pub mod breakout;
pub mod breakout_orders;
pub mod indicator_mix;
pub mod momentum;
pub mod pairs;
pub mod planted;
pub mod rotation;
pub mod shared;
pub mod sma;

pub use bench_head::bench_head;
pub use breakout::{Breakout, BreakoutParams};
pub use breakout_orders::{BreakoutOrders, Channel};
pub use indicator_mix::{IndicatorMix, IndicatorMixShared, MixParams};
pub use momentum::{Momentum, MomentumParams};
pub use pairs::{PairsParams, PairsZScore};
pub use planted::{Planted, PlantedParams, planted_key, planted_prices, planted_side};
pub use rotation::{Rotation, RotationParams};
pub use shared::{
    BreakoutShared, MomentumShared, PriceChange, PriorChannel, SmaCrossoverIndicators,
    SmaCrossoverShared,
};
pub use sma::{SmaCrossover, SmaCrossoverOrders, SmaParams};
