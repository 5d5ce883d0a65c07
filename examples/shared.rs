//! The SMA crossover (twice: on [`SharedMean`]s, and on pandas-exact [`Indicator`]s as the
//! README writes it), momentum and breakout strategies again, each indicator declared as a
//! shared series ([`Strategy::shared`]): computed once per distinct parameter value for all the
//! lanes of a unit, instead of once per lane. Their decisions are those of
//! [`SmaCrossover`](crate::SmaCrossover), [`Momentum`](crate::Momentum) and
//! [`Breakout`](crate::Breakout) exactly (the same operations on the same values; for the
//! crossover on `Indicator`s, on prices whose window sums are exact, as W1's), so every cell is
//! bit-identical; what changes is the work per event.

use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};

use crate::breakout::channel_position;
use crate::{BreakoutParams, MomentumParams, SmaParams};

/// The W1 crossover on shared means: long when the mean of the last `fast` prices is above
/// the mean of the last `slow` (both windows full), flat otherwise.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct SmaCrossoverShared {
    warm_up: u64,
}

#[gridtest::strategy(name = "sma_crossover_shared", version = "1", carry)]
impl Strategy for SmaCrossoverShared {
    type Params = SmaParams;
    type Feed = Ticks;

    fn new(p: &SmaParams) -> Self {
        Self {
            warm_up: p.fast.max(p.slow) as u64,
        }
    }

    fn shared(p: &SmaParams, series: &mut SharedSeries<Ticks>) {
        series.add(SharedMean::price(p.fast));
        series.add(SharedMean::price(p.slow));
    }

    #[inline(always)]
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        // `&`, not `&&`: the engine's loop over the chunk then reads both means for every
        // event, without a mask.
        if (now.index() + 1 >= self.warm_up) & (now.shared(0) > now.shared(1)) {
            1.0
        } else {
            0.0
        }
    }

    fn gpu_code() -> Option<GpuCode> {
        Some(GpuCode {
            source: SMA_SHARED_CUDA,
            state_len: 1,
            pack: pack_numeric::<SmaParams>,
        })
    }
}

/// [`SmaCrossoverShared`] as CUDA C: the block computes the means (`gt_shared` reads them),
/// the lane only compares. `params = [fast, slow]`, no state.
pub const SMA_SHARED_CUDA: &str = r#"
__device__ void gt_init(double* s, const double* p) {}

__device__ double gt_step(double* s, const double* p, const double* const* col, long long index) {
    long long fast = (long long)p[0];
    long long slow = (long long)p[1];
    long long warm_up = fast > slow ? fast : slow;
    if (index + 1 >= warm_up && gt_shared(col, 0) > gt_shared(col, 1)) return 1.0;
    return 0.0;
}
"#;

/// The W1 crossover as the README writes it first: pandas' `rolling(n).mean()` of the price
/// ([`Indicator::sma`]) for both windows, declared shared, so each distinct window is computed
/// once per unit; long while the fast mean is above the slow one. Before a window is full its
/// mean is NaN and the comparison false: no warm-up count. On W1's prices (a binary grid, every
/// window sum exact) its cells are those of [`SmaCrossover`](crate::SmaCrossover).
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct SmaCrossoverIndicators;

#[gridtest::strategy(name = "sma_crossover_indicators", version = "1", carry)]
impl Strategy for SmaCrossoverIndicators {
    type Params = SmaParams;
    type Feed = Ticks;

    fn new(_: &SmaParams) -> Self {
        Self
    }

    fn shared(p: &SmaParams, series: &mut SharedSeries<Ticks>) {
        series.add(Indicator::sma(p.fast)); // slot 0
        series.add(Indicator::sma(p.slow)); // slot 1
    }

    #[inline(always)]
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        if now.shared(0) > now.shared(1) {
            1.0
        } else {
            0.0
        }
    }
}

/// The relative change of the price over `window` ticks, `p / p₋window − 1` (shared by every
/// threshold of a window).
#[derive(Clone, Debug, PartialEq)]
pub struct PriceChange {
    window: usize,
}

impl Series<Ticks> for PriceChange {
    fn lookback(&self) -> usize {
        self.window
    }

    fn fill(&mut self, tile: &Tile<'_, Ticks>, out: &mut [f64]) {
        let prices = tile.column(0);
        let now = &prices[tile.lookback()..tile.lookback() + out.len()];
        let then = &prices[tile.lookback() - self.window..][..out.len()];
        for ((change, &p), &back) in out.iter_mut().zip(now).zip(then) {
            *change = p / back - 1.0;
        }
    }
}

/// Time-series momentum on a shared price change: long above `threshold_bps`, short below its
/// negative, flat in between.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct MomentumShared {
    window: u64,
    threshold: f64,
}

#[gridtest::strategy(name = "momentum_shared", version = "1", carry)]
impl Strategy for MomentumShared {
    type Params = MomentumParams;
    type Feed = Ticks;

    fn new(p: &MomentumParams) -> Self {
        Self {
            window: p.window as u64,
            threshold: p.threshold_bps / 10_000.0,
        }
    }

    fn shared(p: &MomentumParams, series: &mut SharedSeries<Ticks>) {
        series.add(PriceChange { window: p.window });
    }

    #[inline(always)]
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        if now.index() < self.window {
            return 0.0;
        }
        let change = now.shared(0);
        if change > self.threshold {
            1.0
        } else if change < -self.threshold {
            -1.0
        } else {
            0.0
        }
    }
}

/// The highest high (`High`) or lowest low (`Low`) of the `window` bars before the current one.
#[derive(Clone, Debug)]
pub enum PriorChannel {
    /// The highest high.
    High(usize, RollingMax),
    /// The lowest low.
    Low(usize, RollingMin),
}

impl PriorChannel {
    /// The highest high of the previous `window` bars.
    #[must_use]
    pub fn high(window: usize) -> Self {
        Self::High(window, RollingMax::new(window))
    }

    /// The lowest low of the previous `window` bars.
    #[must_use]
    pub fn low(window: usize) -> Self {
        Self::Low(window, RollingMin::new(window))
    }
}

/// Channels are equal when they compute the same series: same side, same window.
impl PartialEq for PriorChannel {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::High(a, _), Self::High(b, _)) | (Self::Low(a, _), Self::Low(b, _)) => a == b,
            _ => false,
        }
    }
}

impl Series<Bars> for PriorChannel {
    fn lookback(&self) -> usize {
        0 // it keeps its own window of bars
    }

    fn fill(&mut self, tile: &Tile<'_, Bars>, out: &mut [f64]) {
        let l = tile.lookback();
        // The channel of the bars before this one; this bar joins it after.
        match self {
            Self::High(_, max) => {
                for (value, &high) in out.iter_mut().zip(&tile.column(1)[l..]) {
                    *value = max.value();
                    max.push(high);
                }
            }
            Self::Low(_, min) => {
                for (value, &low) in out.iter_mut().zip(&tile.column(2)[l..]) {
                    *value = min.value();
                    min.push(low);
                }
            }
        }
    }
}

/// The channel breakout on shared channels: long when the close breaks above the entry
/// channel's high, out when it falls below the exit channel's low (and the mirror image short,
/// when `short`).
#[derive(Debug)]
pub struct BreakoutShared {
    warm_up: u64,
    short: bool,
    position: f64,
}

#[gridtest::strategy(name = "breakout_shared", version = "1")]
impl Strategy for BreakoutShared {
    type Params = BreakoutParams;
    type Feed = Bars;

    fn new(p: &BreakoutParams) -> Self {
        assert!(
            p.entry > 0 && p.exit > 0,
            "channel lengths must be positive"
        );
        Self {
            warm_up: p.entry.max(p.exit) as u64,
            short: p.short,
            position: 0.0,
        }
    }

    fn shared(p: &BreakoutParams, series: &mut SharedSeries<Bars>) {
        series.add(PriorChannel::high(p.entry));
        series.add(PriorChannel::low(p.entry));
        series.add(PriorChannel::high(p.exit));
        series.add(PriorChannel::low(p.exit));
    }

    #[inline(always)]
    fn on_data(&mut self, now: &Cursor<'_, Bars>) -> f64 {
        if now.index() < self.warm_up {
            return 0.0;
        }
        let channels = [now.shared(0), now.shared(1), now.shared(2), now.shared(3)];
        self.position = channel_position(self.position, now.close(), channels, self.short);
        self.position
    }
}
